"""Figures of the Truncated BPTT page: the chunked sequence with where the gradient reaches, and the K sweep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.figures.canvas import Canvas
from rnnviz.lessons.tbptt import ChunkRun, chunk_starts

STOP_COLOUR = PALETTE["highlight"]


TOP = ("x", "y")  # the chunked sequence
BOTTOM = ("x2", "y2")  # the gradient that reaches each input


def chunk_figure(length: int, chunk: int, delay: int, position: int, reach: np.ndarray) -> go.Figure:
    """Top: x_u and h_u for u = 1 … L cut into chunks of K, the loss L_t at ``position`` t (1-based) and its
    source x_{t−D}; solid arrows carry the state across each boundary, dashed ones mark the gradient that
    stops there. Bottom: ‖∂L_t/∂x_u‖ for every u, on a log scale, with the exact zeros marked."""
    canvas = Canvas()
    steps = np.arange(1, length + 1)
    starts = [s + 1 for s in chunk_starts(length, chunk)]  # 1-based first step of each chunk
    current_start = max(s for s in starts if s <= position)
    source = position - delay

    for i, start in enumerate(starts):
        end = min(start + chunk - 1, length)
        canvas.rect(start - 0.5, -0.55, end + 0.5, 2.55, "#f3f6fa" if i % 2 == 0 else "white", axes=TOP)
        if start > 1:
            canvas.line(start - 0.5, -0.55, start - 0.5, 2.55, PALETTE["theory"], 1.5, "dot", TOP)
            canvas.arrow(start - 1 + 0.2, 1, start - 0.2, 1, PALETTE["hidden"], 3, TOP)  # the state crosses
            # The gradient would flow back from s to s − 1, above the states; it stops at the boundary.
            canvas.line(start + 0.3, 1.45, start - 1.3, 1.45, STOP_COLOUR, 2.5, "dash", TOP)
            canvas.text(start - 0.5, 1.45, "<b>✕</b>", FONT_SIZE + 4, STOP_COLOUR, TOP, bgcolor="white")
        for u in range(start, end):
            canvas.arrow(u + 0.2, 1, u + 1 - 0.2, 1, PALETTE["muted"], 1, TOP)
        if chunk >= 3:  # narrower chunks have no room for a label
            canvas.text((start + end) / 2, 2.5, f"chunk {i + 1}", FONT_SIZE - 3, PALETTE["theory"], TOP)

    x_colours = [PALETTE["input"] if current_start <= u <= position else PALETTE["muted"] for u in steps]
    square = dict(type="scatter", mode="markers", showlegend=False, hoverinfo="skip")
    canvas.trace({**square, "x": steps.tolist(), "y": [0] * length,
                  "marker": dict(symbol="square", size=13, color=x_colours)}, TOP)
    canvas.trace({**square, "x": steps.tolist(), "y": [1] * length,
                  "marker": dict(symbol="square", size=13, color=PALETTE["hidden"])}, TOP)
    canvas.trace({**square, "x": [position], "y": [2],
                  "marker": dict(symbol="circle", size=20, color=PALETTE["output"])}, TOP)
    canvas.arrow(position, 1.15, position, 1.8, PALETTE["output"], 1.4, TOP)
    if source >= 1:
        canvas.trace({**square, "x": [source], "y": [0],
                      "marker": dict(symbol="square-open", size=22, color=PALETTE["output"], line=dict(width=3))}, TOP)
        canvas.text(source, -0.45, f"source x<sub>t−{delay}</sub>", FONT_SIZE - 2, PALETTE["output"], TOP,
                    yanchor="top")
    # Legend entries for the two kinds of boundary arrow.
    canvas.trace(dict(type="scatter", x=[None], y=[None], mode="lines", name="state crosses the boundary",
                      line=dict(color=PALETTE["hidden"], width=3)), TOP)
    canvas.trace(dict(type="scatter", x=[None], y=[None], mode="lines", name="gradient stops at the boundary",
                      line=dict(color=STOP_COLOUR, width=3, dash="dash")), TOP)

    shown = steps <= position
    nonzero = shown & (reach > 0)
    zero = shown & (reach == 0)
    canvas.trace(dict(type="bar", x=steps[nonzero].tolist(), y=reach[nonzero].tolist(), showlegend=False,
                      marker_color=PALETTE["input"], name="‖∂L_t/∂x_u‖",
                      hovertemplate="u = %{x}<br>‖∂L_t/∂x_u‖ = %{y:.3g}<extra></extra>"), BOTTOM)
    floor = float(reach[nonzero].min()) / 3 if nonzero.any() else 1e-6
    canvas.trace(dict(type="scatter", x=steps[zero].tolist(), y=[floor] * int(zero.sum()), mode="text",
                      text=["0"] * int(zero.sum()), textfont=dict(color=STOP_COLOUR, size=FONT_SIZE - 2),
                      showlegend=False, hovertemplate="u = %{x}<br>exactly 0<extra></extra>"), BOTTOM)
    fig = canvas.figure(
        xaxis=dict(range=[0.4, length + 0.6], showticklabels=False, showgrid=False, zeroline=False, anchor="y"),
        yaxis=dict(domain=[0.47, 1.0], range=[-1.1, 2.7], tickvals=[0, 1, 2], showgrid=False, zeroline=False,
                   ticktext=["x<sub>u</sub>", "h<sub>u</sub>", "L<sub>t</sub>"]),
        xaxis2=dict(matches="x", anchor="y2", title="step u"),
        yaxis2=dict(domain=[0.0, 0.41], anchor="x2", type="log", dtick=1, exponentformat="power",
                    title="‖∂L<sub>t</sub>/∂x<sub>u</sub>‖"),
    )
    house_style(fig, height=540)
    fig.update_layout(legend=dict(orientation="h", y=1.08, x=0.5, xanchor="center"), margin=dict(t=30),
                      bargap=0.25)
    return fig


LABEL_BACKGROUND = "rgba(255, 255, 255, 0.85)"


ACCURACY_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _label_shifts(ks: Sequence[int], span: float, min_gap: float = 0.09) -> list[int]:
    """How far (px) above its point each value label sits: labels closer than ``min_gap`` of the axis span to
    the previous one take turns between two heights, so that neighbours never overlap."""
    shifts, raised = [], False
    for i, k in enumerate(ks):
        raised = (not raised) if i and (k - ks[i - 1]) / span < min_gap else False
        shifts.append(30 if raised else 10)
    return shifts


def sweep_figure(runs: Sequence[ChunkRun], delay: int, chance: float) -> go.Figure:
    """Held-out accuracy against the chunk length K, with the delay D and chance marked.

    Each value is written above its point on a white ground, so that the D line passing behind it cannot
    strike it through; the D label sits low, where no accuracy falls (below chance).
    """
    runs = sorted(runs, key=lambda r: r.chunk)
    ks = [r.chunk for r in runs]
    acc = [r.accuracy for r in runs]
    colours = [PALETTE["hidden"] if k > delay else PALETTE["input"] for k in ks]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ks, y=acc, mode="lines+markers", line=dict(color=PALETTE["measured"], width=2),
                             marker=dict(size=13, color=colours), name="held-out accuracy",
                             hovertemplate="K = %{x}<br>accuracy %{y:.3f}<extra></extra>"))
    low, high = min(ks + [delay]), max(ks + [delay])
    pad = 0.08 * (high - low + 1)  # room for the first and the last label
    shifts = _label_shifts(ks, high - low + 3 * pad)
    for k, a, shift in zip(ks, acc, shifts):
        fig.add_annotation(x=k, y=a, text=f"{a:.2f}", showarrow=False, yanchor="bottom", yshift=shift,
                           bgcolor=LABEL_BACKGROUND, borderpad=1, font=dict(size=FONT_SIZE - 2))
    fig.add_vline(x=delay, line=dict(color=PALETTE["highlight"], width=2, dash="dash"))
    fig.add_annotation(x=delay, y=0.04, text=f"D = {delay}", showarrow=False, xanchor="left", xshift=4,
                       yanchor="bottom", bgcolor=LABEL_BACKGROUND, font=dict(color=PALETTE["highlight"]))
    fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], width=1.5, dash="dot"),
                  annotation_text=f"chance {chance:.2f}", annotation_position="bottom right")
    fig.update_xaxes(title="chunk length K", tickmode="array", tickvals=ks, range=[low - pad, high + 2 * pad])
    # An accuracy ends at 1: the axis does too, and the labels of points near 1 stand in the top margin
    # (annotations are not clipped to the plot area), which is made tall enough for the raised ones.
    fig.update_yaxes(title="accuracy on held-out sequences", range=[0, 1.02], tickvals=ACCURACY_TICKS)
    fig.update_layout(title="Accuracy after training, for each chunk length K", showlegend=False)
    house_style(fig, height=380)
    fig.update_layout(margin=dict(t=50 + max(shifts) + 25))
    return fig


def curves_figure(runs: Sequence[ChunkRun], delay: int, chance: float) -> go.Figure:
    """Held-out accuracy during training, one line per K."""
    fig = go.Figure()
    for run in sorted(runs, key=lambda r: r.chunk):
        learns = run.chunk > delay
        fig.add_trace(go.Scatter(x=run.eval_steps, y=run.eval_accuracy, mode="lines+markers", name=f"K = {run.chunk}",
                                 line=dict(width=2, dash=None if learns else "dot")))
    fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], width=1.5, dash="dot"))
    fig.update_xaxes(title="optimizer step")
    fig.update_yaxes(title="held-out accuracy", range=[0, 1.05])
    fig.update_layout(title="During training (dotted: K ≤ D)")
    house_style(fig, height=380)
    return fig
