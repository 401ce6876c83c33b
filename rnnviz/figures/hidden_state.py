"""Figures of the hidden-state page: carried state as heat strips, carried bytes against t, attention of one
position, memory-probe accuracy against k, and the loss against the context read."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import PALETTE, house_style
from rnnviz.interpret.colortext import visible_char
from rnnviz.interpret.hidden_state import Carried, ProbeCurve

MODEL_COLOURS = {"rnn": PALETTE["input"], "lstm": PALETTE["hidden"], "gru": PALETTE["weight"],
                 "mingru": "#9d755d", "transformer": PALETTE["output"]}  # minGRU brown: orange marks t
STRIP_HEIGHT = 300  # the tallest heat strip (a K/V cache), px: with the t slider, all four fit on a 900 px screen


def _colour(name: str) -> str:
    return next((c for kind, c in MODEL_COLOURS.items() if name.lower().startswith(kind)), PALETTE["theory"])


def carried_figure(carried: Carried, title: str = "") -> go.Figure:
    """Each carried tensor as a heat strip: one row per vector (h, c) or per cached position (the K and V rows
    of positions s = window start…t). Each tensor is coloured relative to its own largest |value| (shown in
    its label), so a small h_t beside a large c_t stays visible; hovering gives the raw value."""
    fig = go.Figure()
    raw, scaled, ticks, tick_rows = [], [], [], []
    for tensor in carried.tensors:
        values = np.atleast_2d(tensor.values)  # (1, H) or (t, C)
        peak = float(np.abs(values).max()) or 1.0
        tick_rows.append(len(raw) + (values.shape[0] - 1) / 2)
        span = "" if values.shape[0] == 1 else f", s = {carried.window_start}…{carried.t}"
        ticks.append(f"{tensor.name}{span}<br>max |·| {peak:.2g}")
        raw.extend(values)
        scaled.extend(values / peak)
    width = max(len(r) for r in raw)
    # float32: the figure goes to the browser as binary arrays, and a K/V cache is thousands of cells
    z, custom = np.full((len(raw), width), np.nan, np.float32), np.full((len(raw), width), np.nan, np.float32)
    for i, (row, row_scaled) in enumerate(zip(raw, scaled)):
        custom[i, : len(row)] = row
        z[i, : len(row)] = row_scaled
    fig.add_trace(go.Heatmap(z=np.round(z, 4), customdata=np.round(custom, 4), colorscale="RdBu_r", zmid=0,
                             zmin=-1, zmax=1, colorbar=dict(thickness=12, title=dict(text="÷ max", side="right")),
                             hovertemplate="unit %{x}: %{customdata:.3f}<extra></extra>"))
    for edge in np.cumsum([np.atleast_2d(t.values).shape[0] for t in carried.tensors])[:-1]:
        fig.add_hline(y=edge - 0.5, line=dict(color="black", width=1.5))
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=tick_rows, ticktext=ticks,
                     tickfont=dict(size=12))
    fig.update_xaxes(title_text="unit")
    house_style(fig, height=min(110 + 10 * len(raw), STRIP_HEIGHT))
    if title:
        fig.update_layout(title=dict(text=title, font=dict(size=15)))
    else:  # named by the page right above it: no room spent on a title
        fig.update_layout(margin=dict(t=10))
    return fig



def carried_bytes_figure(curves: dict[str, np.ndarray], text: str, t: int) -> go.Figure:
    """Bytes carried into step t+1 against t, one line per model (flat for h_t and c_t, linear for K and V)."""
    fig = go.Figure()
    chars = [visible_char(c) for c in text]
    for name, curve in curves.items():
        fig.add_trace(go.Scatter(x=np.arange(len(curve)), y=curve, mode="lines+markers", name=name,
                                 line=dict(color=_colour(name), width=2.5,
                                           dash="dash" if name.lower().startswith("lstm") else "solid"),
                                 marker=dict(size=4),
                                 customdata=chars[: len(curve)],
                                 hovertemplate=f"{name}: %{{y:,}} bytes after '%{{customdata}}' (t = %{{x}})"
                                               "<extra></extra>"))
    flat = {name: int(curve[-1]) for name, curve in curves.items() if len(set(curve.tolist())) == 1}
    if flat:
        fig.add_annotation(x=len(text) - 1, y=max(flat.values()), xanchor="right", yanchor="bottom",
                           showarrow=False, font=dict(size=14),
                           text="flat: " + ", ".join(f"{n} {b:,} bytes" for n, b in flat.items()))
    fig.add_vline(x=t, line=dict(color=PALETTE["highlight"], dash="dot"))
    fig.update_xaxes(title_text="t (characters read − 1)")
    fig.update_yaxes(title_text="bytes carried into t+1", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=1.12))
    return house_style(fig, height=340)


def attention_figure(weights: np.ndarray, text: str, start: int) -> go.Figure:
    """Attention of one position: rows are (layer, head), columns the characters it may read, s = start…t."""
    layers, heads, width = weights.shape
    z = weights.reshape(layers * heads, width)
    labels = [f"layer {layer + 1} head {h + 1}" for layer in range(layers) for h in range(heads)]
    chars = [visible_char(c) for c in text[start : start + width]]
    ticks = [f"{c}<br>{start + s}" if width <= 40 or s % 4 == 0 else c for s, c in enumerate(chars)]
    fig = go.Figure(go.Heatmap(z=np.round(z, 4), x=list(range(width)), y=labels, zmin=0, zmax=1,
                               colorscale="Blues", colorbar=dict(title=dict(text="weight"), thickness=12),
                               customdata=np.broadcast_to(np.array(chars), z.shape),
                               hovertemplate="%{y} reads '%{customdata}' with weight %{z:.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(width)), ticktext=ticks, tickangle=0,
                     title_text="earlier character s (its position below it)")
    fig.update_yaxes(autorange="reversed")
    return house_style(fig, height=120 + 28 * len(labels))


def attended_figure(queries: np.ndarray, weights: np.ndarray, text: str, s: int) -> go.Figure:
    """Who attends to the character at s: rows are (layer, head), columns the later positions t ≥ s whose window
    holds s; each cell is t's weight on s (a column of the attention map, so the row need not sum to 1)."""
    layers, heads, width = weights.shape
    z = weights.reshape(layers * heads, width)
    labels = [f"layer {layer + 1} head {h + 1}" for layer in range(layers) for h in range(heads)]
    chars = [visible_char(text[t]) for t in queries]
    ticks = [f"{c}<br>{t}" if width <= 40 or i % 4 == 0 else c for i, (t, c) in enumerate(zip(queries, chars))]
    fig = go.Figure(go.Heatmap(z=np.round(z, 4), x=list(range(width)), y=labels, zmin=0, zmax=1,
                               colorscale="Oranges", colorbar=dict(title=dict(text="weight"), thickness=12),
                               customdata=np.broadcast_to(np.array(chars), z.shape),
                               hovertemplate=f"%{{y}}: '%{{customdata}}' reads '{visible_char(text[s])}' with weight "
                                             "%{z:.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(width)), ticktext=ticks, tickangle=0,
                     title_text=f"later character t that reads s = {s} (its position below it)")
    fig.update_yaxes(autorange="reversed")
    return house_style(fig, height=120 + 28 * len(labels))


def character_strip(text: str, selected: int | None = None) -> go.Figure:
    """The sentence as one row of clickable characters (a click selects s); ``selected`` is highlighted."""
    n = len(text)
    colours = [PALETTE["highlight"] if i == selected else PALETTE["muted"] for i in range(n)]
    fig = go.Figure(go.Scatter(
        x=list(range(n)), y=[0] * n, mode="markers+text", text=[visible_char(c) for c in text],
        textposition="middle center", textfont=dict(size=15, color="black"),
        marker=dict(size=22, color=colours, symbol="square", line=dict(width=0)),
        hovertemplate="s = %{x}: '%{text}' (click to see who attends to it)<extra></extra>",
    ))
    fig.update_xaxes(visible=False, range=[-0.8, n - 0.2])
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_layout(height=70, margin=dict(l=0, r=0, t=0, b=0), showlegend=False, dragmode=False)
    return fig


def probe_figure(curves: Sequence[ProbeCurve]) -> go.Figure:
    """Held-out probe accuracy against k, one line per feature (dotted: a vector computed at t that the model does
    not carry into t+1), the chance level dashed."""
    fig = go.Figure()
    for curve in curves:
        name = curve.name if curve.carried else f"{curve.name} (computed at t, not carried)"
        fig.add_trace(go.Scatter(x=curve.k, y=curve.accuracy, mode="lines+markers", name=name,
                                 line=dict(color=_colour(curve.name), width=2.5,
                                           dash="solid" if curve.carried else "dot"),
                                 hovertemplate=f"{name}: k = %{{x}}, accuracy %{{y:.2f}}<extra></extra>"))
    if curves:
        chance = np.mean([c.chance for c in curves], axis=0)
        fig.add_trace(go.Scatter(x=curves[0].k, y=chance, mode="lines", name="chance (most common character)",
                                 line=dict(color=PALETTE["theory"], dash="dash")))
    fig.update_xaxes(title_text="k: read the character k steps back", dtick=1)
    fig.update_yaxes(title_text="held-out accuracy", range=[0, 1.02])
    fig.update_layout(legend=dict(orientation="h", y=-0.2, yanchor="top"))
    return house_style(fig, height=460)


def bottleneck_figure(lengths: Sequence[int], losses: dict[str, Sequence[float]], vocab_sizes: Sequence[int],
                      reference: dict[str, float] | None = None) -> go.Figure:
    """Next-character loss against n, the characters read, one line per model; ``reference`` (dotted) is each
    model's loss on the same positions read as it ordinarily reads a text (state carried, or sliding window).
    Dashed: the uniform guess over the V characters, ln V, for each vocabulary size V of the models (one, as a
    rule): a point above it does worse than guessing blindly."""
    fig = go.Figure()
    for vocab_size in sorted(set(vocab_sizes)):
        uniform = math.log(vocab_size)
        fig.add_hline(y=uniform, line=dict(color=PALETTE["theory"], dash="dash", width=2),
                      annotation_text=f"uniform guess: ln V = ln {vocab_size} = {uniform:.3f}",
                      annotation_position="top right", annotation_font=dict(color=PALETTE["theory"]))
    for name, values in losses.items():
        fig.add_trace(go.Scatter(x=list(lengths), y=list(values), mode="lines+markers", name=name,
                                 line=dict(color=_colour(name), width=2.5),
                                 hovertemplate=f"{name}: n = %{{x}}, %{{y:.3f}} nats/char<extra></extra>"))
    for name, value in (reference or {}).items():
        fig.add_trace(go.Scatter(x=[min(lengths), max(lengths)], y=[value, value], mode="lines",
                                 name=f"{name}, ordinary reading", line=dict(color=_colour(name), dash="dot"),
                                 hovertemplate=f"{name}, ordinary reading: {value:.3f} nats/char<extra></extra>"))
    fig.update_xaxes(title_text="n: characters read (log scale)", type="log", tickmode="array",
                     tickvals=list(lengths), ticktext=[str(n) for n in lengths])
    fig.update_yaxes(title_text="next-character loss (nats/char)")
    return house_style(fig, height=380)
