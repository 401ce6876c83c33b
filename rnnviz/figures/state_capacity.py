"""Figures of the page "What a state can hold": recall accuracy against the number of pairs and against the state's
bytes, parity accuracy against the string's length, and one model's memory after token t of a recall sequence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.experiments.sequence_models import label
from rnnviz.experiments.state_capacity import MemoryTrace, Panel, Spread
from rnnviz.figures import FONT_SIZE, PALETTE, house_style, title_clear_of_the_modebar

KIND_COLOURS = {"lstm": "#4c78a8", "gru": "#54a24b", "mingru": "#72b7b2", "slstm": "#f58518", "mlstm": "#e45756",
                "selective": "#b279a2", "linear_attention": "#9d755d", "transformer": "#222222"}
# A second cue beside the colour, for a greyscale projector and for colour-blind eyes.
KIND_SYMBOLS = {"lstm": "circle", "gru": "square", "mingru": "diamond", "slstm": "triangle-up", "mlstm": "x",
                "selective": "star", "linear_attention": "cross", "transformer": "hexagon"}
MEMORY_SCALE = "RdBu_r"  # diverging, 0 white: a memory fills from white as it is written


def _band(spreads: Sequence[Spread]) -> dict:
    return dict(type="data", symmetric=False, array=[s.high - s.mean for s in spreads],
                arrayminus=[s.mean - s.low for s in spreads], thickness=2, width=5)


def _seeds_text(runs: int) -> str:
    return f"bars: lowest–highest of {runs} seeds" if runs > 1 else "one seed"


def recall_pairs_figure(summary: Mapping[tuple[str, int], Spread], kinds: Sequence[str], chance: float
                        ) -> go.Figure:
    """Held-out query accuracy against the number of pairs D, a line per kind (mean over seeds, min–max bars)."""
    fig = go.Figure()
    pairs = sorted({d for _, d in summary})
    runs = max(s.runs for s in summary.values())
    for kind in kinds:
        ds = [d for d in pairs if (kind, d) in summary]
        spreads = [summary[kind, d] for d in ds]
        fig.add_trace(go.Scatter(x=ds, y=[s.mean for s in spreads], name=label(kind), mode="lines+markers",
                                 line=dict(color=KIND_COLOURS[kind], width=3),
                                 marker=dict(size=11, symbol=KIND_SYMBOLS[kind]), error_y=_band(spreads)))
    fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], dash="dot"), annotation_text=f"chance {chance:.3f}",
                  annotation_position="bottom right")
    fig.update_xaxes(title_text="key–value pairs D in each sequence (log scale)", type="log", tickvals=pairs)
    fig.update_yaxes(title_text="held-out query accuracy", range=[0, 1.05])
    fig.update_layout(title=f"Recall against the number of pairs ({_seeds_text(runs)})",
                      legend=dict(orientation="h", y=-0.22))
    return house_style(fig, height=480)


def recall_bytes_figure(summary: Mapping[tuple[str, int], Spread], state_bytes: Mapping[str, int], pairs: int,
                        chance: float) -> go.Figure:
    """Accuracy at D = ``pairs`` against the bytes each kind carries from one token to the next, a marker per kind
    (its name above it, or on the other side from the name of a kind within a fifth of its bytes)."""
    fig = go.Figure()
    kinds = sorted((k for k, d in summary if d == pairs), key=lambda k: (state_bytes[k], k))
    runs = max(s.runs for s in summary.values())
    position = "bottom center"
    for index, kind in enumerate(kinds):
        spread = summary[kind, pairs]
        close = index and state_bytes[kind] < 1.2 * state_bytes[kinds[index - 1]]
        position = ("bottom center" if position == "top center" else "top center") if close else "top center"
        fig.add_trace(go.Scatter(
            x=[state_bytes[kind]], y=[spread.mean], name=label(kind), mode="markers+text", text=[label(kind)],
            textposition=position,
            textfont=dict(size=FONT_SIZE - 3, color=KIND_COLOURS[kind]),
            marker=dict(size=14, color=KIND_COLOURS[kind], symbol=KIND_SYMBOLS[kind]), error_y=_band([spread]),
            hovertemplate=f"{label(kind)}: %{{x:,}} bytes, accuracy %{{y:.3f}}<extra></extra>", showlegend=False))
    fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], dash="dot"), annotation_text=f"chance {chance:.3f}",
                  annotation_position="bottom left")
    ticks: list[int] = []
    for value in sorted({state_bytes[k] for k in kinds}):  # a label only where it has room beside the last one
        if not ticks or value >= 1.4 * ticks[-1]:
            ticks.append(value)
    fig.update_xaxes(title_text="bytes carried from one token to the next (float32, log scale)", type="log",
                     tickvals=ticks, ticktext=[f"{b:,}" for b in ticks])
    fig.update_yaxes(title_text="held-out query accuracy", range=[-0.08, 1.12])
    fig.update_layout(title=f"Recall at D = {pairs} against the state's bytes ({_seeds_text(runs)})")
    return house_style(fig, height=480)


def parity_figure(summary: Mapping[str, Mapping[int, Spread]], kinds: Sequence[str], train_length: int
                  ) -> go.Figure:
    """Share of held-out strings whose parity after L bits is right, against L, a line per kind; the lengths up to
    the training length are shaded."""
    fig = go.Figure()
    lengths = sorted({length for curve in summary.values() for length in curve})
    runs = max(s.runs for curve in summary.values() for s in curve.values())
    # a shape on a log axis is placed in log10 units
    fig.add_vline(x=np.log10(train_length), line=dict(color=PALETTE["theory"], dash="dash"),
                  annotation_text=f"trained on {train_length} bits", annotation_position="top right")
    for kind in kinds:
        curve = summary[kind]
        fig.add_trace(go.Scatter(x=list(curve), y=[s.mean for s in curve.values()], name=label(kind),
                                 mode="lines+markers", line=dict(color=KIND_COLOURS[kind], width=3),
                                 marker=dict(size=11, symbol=KIND_SYMBOLS[kind]), error_y=_band(list(curve.values()))))
    fig.add_hline(y=0.5, line=dict(color=PALETTE["theory"], dash="dot"), annotation_text="chance 0.5",
                  annotation_position="bottom right")
    fig.update_xaxes(title_text="string length L in bits (log scale)", type="log", tickvals=lengths,
                     range=[np.log10(min(lengths) / 1.25), np.log10(max(lengths) * 1.25)])
    fig.update_yaxes(title_text="parity after L bits right", range=[0.3, 1.05])
    fig.update_layout(title=f"Parity beyond the training length ({_seeds_text(runs)})",
                      legend=dict(orientation="h", y=-0.22))
    return house_style(fig, height=480)


GAP_PX = 46  # between two arrays: the lower one's name and the upper one's tick labels


def _pixels(panel: Panel) -> int:
    return max(26, 12 * panel.values.shape[0])


def memory_figure(trace: MemoryTrace, t: int) -> go.Figure:
    """What one model holds after token t (its memory, on a colour scale that holds still over t) and this step's
    writes, reads and gates below it, one heat map per array. A cache that grows (the Transformer's) is drawn on
    axes as long as the sequence, so that it is seen to grow."""
    step = trace.steps[t]
    panels = [*step.memory, *step.step]
    length = len(trace.tokens)
    heights = [_pixels(p) for p in panels]
    plot_px = sum(heights) + GAP_PX * (len(panels) - 1)
    fig = make_subplots(rows=len(panels), cols=1, row_heights=heights, vertical_spacing=GAP_PX / plot_px,
                        subplot_titles=[p.name for p in panels])
    for row, panel in enumerate(panels, start=1):
        bound = trace.scale.get(panel.name) or 1.0
        fig.add_trace(go.Heatmap(
            z=np.round(panel.values, 5), zmin=-bound, zmax=bound, zmid=0, colorscale=MEMORY_SCALE, showscale=False,
            name=panel.name, hovertemplate=f"{panel.name}<br>row %{{y}}, column %{{x}}: %{{z:.3f}}<extra></extra>"),
            row=row, col=1)
        if panel.rows == "position s":  # a growing cache: the axis holds every position the sequence has
            fig.update_yaxes(range=[length - 0.5, -0.5], autorange=False, row=row, col=1)
        elif panel.rows:
            fig.update_yaxes(autorange="reversed", row=row, col=1)
        else:
            fig.update_yaxes(showticklabels=False, row=row, col=1)
        if panel.columns == "position s":
            fig.update_xaxes(range=[-0.5, length - 0.5], row=row, col=1)
        elif panel.values.shape[1] <= 4:  # one column per head: a tick each, not plotly's halves
            fig.update_xaxes(tickvals=list(range(panel.values.shape[1])), row=row, col=1)
        fig.update_xaxes(tickfont=dict(size=FONT_SIZE - 5), row=row, col=1)
        fig.update_yaxes(tickfont=dict(size=FONT_SIZE - 5), row=row, col=1)
    fig.update_annotations(font=dict(size=FONT_SIZE - 3))
    fig.update_layout(title=f"{label(trace.kind)}: {step.nbytes:,} bytes")
    house_style(fig, height=plot_px + 40)
    title_clear_of_the_modebar(fig)
    # the first array's name sits where the title would: lift the title over it
    fig.update_layout(title=dict(pad=dict(b=34)), margin=dict(t=fig.layout.margin.t + 24),
                      height=fig.layout.height + 24)
    return fig
