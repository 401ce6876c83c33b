"""Figures of the Sequence-to-sequence page: the attention's alignment, one output step's attention row, accuracy
against input length for both joins, and the bytes each decoder reads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import PALETTE, house_style, title_clear_of_the_modebar
from rnnviz.interpret.colortext import BLUES

JOIN_NAMES = {"fixed": "fixed context", "attention": "attention"}
JOIN_COLOURS = {"fixed": PALETTE["input"], "attention": PALETTE["output"]}
ATTENTION_SCALE = [[0.0, f"rgb{BLUES[0]}"], [0.5, f"rgb{BLUES[1]}"], [1.0, f"rgb{BLUES[2]}"]]


def _ticks(chars: str) -> list[str]:
    """Axis labels for a string's positions: "3 c" (plotly merges equal category labels, so each carries its index)."""
    return [f"{i + 1} {c}" for i, c in enumerate(chars)]


def alignment_figure(attention: np.ndarray, source: str, output: str, step: int | None = None) -> go.Figure:
    """α_ij as a heatmap: output step i (rows, top to bottom) against input position j (columns), white 0 to dark
    blue 1; each row sums to 1. ``step`` (0-based) outlines the row the page is showing."""
    weights = np.asarray(attention, dtype=float)  # (T_out, T_in)
    rows = [*_ticks(output), "<END>"][: weights.shape[0]]
    fig = go.Figure(go.Heatmap(
        z=np.round(weights, 4), x=_ticks(source), y=rows, colorscale=ATTENTION_SCALE, zmin=0, zmax=1,
        colorbar=dict(title=dict(text="α"), thickness=14),
        hovertemplate="writing %{y}, reading %{x}: α = %{z:.3f}<extra></extra>",
    ))
    if step is not None and 0 <= step < weights.shape[0]:
        fig.add_shape(type="rect", x0=-0.5, x1=weights.shape[1] - 0.5, y0=step - 0.5, y1=step + 0.5,
                      line=dict(color=PALETTE["highlight"], width=3))
    fig.update_xaxes(title_text="input position j (what it reads)", type="category", tickangle=0,
                     tickmode="array", tickvals=_ticks(source), ticktext=list(source))  # the letters only: room
    fig.update_yaxes(title_text="output step i (what it writes)", type="category", autorange="reversed")
    fig.update_layout(title="Where attention looks at each step")
    house_style(fig, height=min(140 + 22 * weights.shape[0], 760))
    return title_clear_of_the_modebar(fig)


def attention_row_figure(weights: np.ndarray, source: str, step: int, written: str) -> go.Figure:
    """One output step's α_i over the input, as bars."""
    alpha = np.asarray(weights, dtype=float)
    top = int(np.argmax(alpha))
    colours = [PALETTE["highlight"] if j == top else PALETTE["output"] for j in range(len(alpha))]
    fig = go.Figure(go.Bar(x=_ticks(source), y=alpha, marker_color=colours,
                           hovertemplate="reading %{x}: α = %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="input position j", type="category", tickangle=0, tickmode="array",
                     tickvals=_ticks(source), ticktext=list(source))
    fig.update_yaxes(title_text="α", range=[0, 1.05])
    fig.update_layout(title=f"Output step {step + 1} writes {written}:<br>its attention over the input",
                      showlegend=False)
    house_style(fig, height=280)
    return title_clear_of_the_modebar(fig, lines=2)  # one line ran past a tablet's half of the page


def accuracy_figure(rows: Sequence[dict], train_max: int, metric: str = "exact") -> go.Figure:
    """Held-out accuracy against input length, one line per join; the training lengths shaded."""
    fig = go.Figure()
    lengths = sorted({r["length"] for r in rows})
    for join in JOIN_NAMES:
        mine = sorted((r for r in rows if r["model"] == join), key=lambda r: r["length"])
        if not mine:
            continue
        fig.add_trace(go.Scatter(
            x=[r["length"] for r in mine], y=[r[metric] for r in mine], mode="lines+markers", name=JOIN_NAMES[join],
            line=dict(color=JOIN_COLOURS[join], width=3), marker=dict(size=7),
            hovertemplate=f"{JOIN_NAMES[join]}, length %{{x}}: %{{y:.1%}}<extra></extra>",
        ))
    if lengths:
        fig.add_vrect(x0=min(lengths) - 0.5, x1=train_max + 0.5, fillcolor=PALETTE["muted"], opacity=0.25,
                      line_width=0, annotation_text="lengths seen in training", annotation_position="bottom left")
    what = "exact match (the whole output right)" if metric == "exact" else "characters right"
    fig.update_xaxes(title_text="input length (characters)", rangemode="tozero")
    fig.update_yaxes(title_text=what, range=[0, 1.05], tickformat=".0%")
    fig.update_layout(title="Held-out accuracy against input length",
                      legend=dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left"))
    house_style(fig, height=380)
    return fig


def bytes_figure(rows: Sequence[dict]) -> go.Figure:
    """Bytes each decoder reads about the input against its length: the fixed context flat, attention's memory
    growing."""
    fig = go.Figure()
    for join in JOIN_NAMES:
        mine = sorted((r for r in rows if r["model"] == join), key=lambda r: r["length"])
        if not mine:
            continue
        fig.add_trace(go.Scatter(
            x=[r["length"] for r in mine], y=[r["total"] for r in mine], mode="lines+markers", name=JOIN_NAMES[join],
            line=dict(color=JOIN_COLOURS[join], width=3),
            hovertemplate=f"{JOIN_NAMES[join]}, %{{x}} characters: %{{y:,}} bytes<extra></extra>",
        ))
    fig.update_xaxes(title_text="input length (characters)", rangemode="tozero")
    fig.update_yaxes(title_text="bytes the decoder reads", rangemode="tozero")
    fig.update_layout(title="What each decoder reads about the input",
                      legend=dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left"))
    house_style(fig, height=340)
    return fig
