"""Figures of the Truncated BPTT page: the chunked sequence with where the gradient reaches, and the K sweep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.tbptt import ChunkRun, chunk_starts

STOP_COLOUR = PALETTE["highlight"]


def _arrow(fig, x0, y0, x1, y1, colour, width=1.4):
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                       arrowhead=2, arrowsize=1, arrowwidth=width, arrowcolor=colour, text="")


def chunk_figure(length: int, chunk: int, delay: int, position: int, reach: np.ndarray) -> go.Figure:
    """Top: x_u and h_u for u = 1 … L cut into chunks of K, the loss L_t at ``position`` t (1-based) and its
    source x_{t−D}; solid arrows carry the state across each boundary, dashed ones mark the gradient that
    stops there. Bottom: ‖∂L_t/∂x_u‖ for every u, on a log scale, with the exact zeros marked."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.56, 0.44], vertical_spacing=0.05)
    steps = np.arange(1, length + 1)
    starts = [s + 1 for s in chunk_starts(length, chunk)]  # 1-based first step of each chunk
    current_start = max(s for s in starts if s <= position)
    source = position - delay

    for i, start in enumerate(starts):
        end = min(start + chunk - 1, length)
        fill = "#f3f6fa" if i % 2 == 0 else "white"
        fig.add_shape(type="rect", x0=start - 0.5, x1=end + 0.5, y0=-0.55, y1=2.55, fillcolor=fill,
                      line=dict(width=0), layer="below", row=1, col=1)
        if start > 1:
            fig.add_shape(type="line", x0=start - 0.5, x1=start - 0.5, y0=-0.55, y1=2.55,
                          line=dict(color=PALETTE["theory"], width=1.5, dash="dot"), row=1, col=1)
            _arrow(fig, start - 1 + 0.2, 1, start - 0.2, 1, PALETTE["hidden"], width=3)  # the state crosses
            # The gradient would flow back from s to s − 1, above the states; it stops at the boundary.
            fig.add_shape(type="line", x0=start + 0.3, x1=start - 1.3, y0=1.45, y1=1.45,
                          line=dict(color=STOP_COLOUR, width=2.5, dash="dash"), row=1, col=1)
            fig.add_annotation(x=start - 0.5, y=1.45, text="<b>✕</b>", showarrow=False, row=1, col=1,
                               font=dict(color=STOP_COLOUR, size=FONT_SIZE + 4), bgcolor="white")
        for u in range(start, end):
            _arrow(fig, u + 0.2, 1, u + 1 - 0.2, 1, PALETTE["muted"], width=1)
        if chunk >= 3:  # narrower chunks have no room for a label
            fig.add_annotation(x=(start + end) / 2, y=2.5, text=f"chunk {i + 1}", showarrow=False, row=1, col=1,
                               font=dict(size=FONT_SIZE - 3, color=PALETTE["theory"]))

    x_colours = [PALETTE["input"] if u >= current_start and u <= position else PALETTE["muted"] for u in steps]
    fig.add_trace(go.Scatter(x=steps, y=[0] * length, mode="markers", showlegend=False, hoverinfo="skip",
                             marker=dict(symbol="square", size=13, color=x_colours)), row=1, col=1)
    fig.add_trace(go.Scatter(x=steps, y=[1] * length, mode="markers", showlegend=False, hoverinfo="skip",
                             marker=dict(symbol="square", size=13, color=PALETTE["hidden"])), row=1, col=1)
    fig.add_trace(go.Scatter(x=[position], y=[2], mode="markers", showlegend=False, hoverinfo="skip",
                             marker=dict(symbol="circle", size=20, color=PALETTE["output"])), row=1, col=1)
    _arrow(fig, position, 1.15, position, 1.8, PALETTE["output"])
    if source >= 1:
        fig.add_trace(go.Scatter(x=[source], y=[0], mode="markers", showlegend=False, hoverinfo="skip",
                                 marker=dict(symbol="square-open", size=22, color=PALETTE["output"],
                                             line=dict(width=3))), row=1, col=1)
        fig.add_annotation(x=source, y=-0.45, text=f"source x<sub>t−{delay}</sub>", showarrow=False,
                           yanchor="top", font=dict(size=FONT_SIZE - 2, color=PALETTE["output"]), row=1, col=1)
    # Legend entries for the two kinds of boundary arrow.
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="state crosses the boundary",
                             line=dict(color=PALETTE["hidden"], width=3)), row=1, col=1)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="gradient stops at the boundary",
                             line=dict(color=STOP_COLOUR, width=3, dash="dash")), row=1, col=1)

    shown = steps <= position
    nonzero = shown & (reach > 0)
    zero = shown & (reach == 0)
    fig.add_trace(go.Bar(x=steps[nonzero], y=reach[nonzero], marker_color=PALETTE["input"], name="‖∂L_t/∂x_u‖",
                         showlegend=False, hovertemplate="u = %{x}<br>‖∂L_t/∂x_u‖ = %{y:.3g}<extra></extra>"),
                  row=2, col=1)
    floor = float(reach[nonzero].min()) / 3 if nonzero.any() else 1e-6
    fig.add_trace(go.Scatter(x=steps[zero], y=[floor] * int(zero.sum()), mode="text", text=["0"] * int(zero.sum()),
                             textfont=dict(color=STOP_COLOUR, size=FONT_SIZE - 2), showlegend=False,
                             hovertemplate="u = %{x}<br>exactly 0<extra></extra>"), row=2, col=1)
    fig.update_yaxes(range=[-1.1, 2.7], tickvals=[0, 1, 2], showgrid=False, zeroline=False, row=1, col=1,
                     ticktext=["x<sub>u</sub>", "h<sub>u</sub>", "L<sub>t</sub>"])
    fig.update_yaxes(type="log", dtick=1, exponentformat="power", title="‖∂L<sub>t</sub>/∂x<sub>u</sub>‖",
                     row=2, col=1)
    fig.update_xaxes(title="step u", range=[0.4, length + 0.6], row=2, col=1)
    house_style(fig, height=540)
    fig.update_layout(legend=dict(orientation="h", y=1.08, x=0.5, xanchor="center"), margin=dict(t=30),
                      bargap=0.25)
    return fig


def sweep_figure(runs: Sequence[ChunkRun], delay: int, chance: float) -> go.Figure:
    """Held-out accuracy against the chunk length K, with the delay D and chance marked."""
    runs = sorted(runs, key=lambda r: r.chunk)
    ks = [r.chunk for r in runs]
    acc = [r.accuracy for r in runs]
    colours = [PALETTE["hidden"] if k > delay else PALETTE["input"] for k in ks]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ks, y=acc, mode="lines+markers+text", text=[f"{a:.2f}" for a in acc],
                             textposition="middle right", line=dict(color=PALETTE["measured"], width=2),
                             marker=dict(size=13, color=colours), name="held-out accuracy",
                             hovertemplate="K = %{x}<br>accuracy %{y:.3f}<extra></extra>"))
    fig.add_vline(x=delay, line=dict(color=PALETTE["highlight"], width=2, dash="dash"),
                  annotation_text=f"D = {delay}", annotation_position="top left")
    fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], width=1.5, dash="dot"),
                  annotation_text=f"chance {chance:.2f}", annotation_position="bottom right")
    fig.update_xaxes(title="chunk length K", tickmode="array", tickvals=ks)
    fig.update_yaxes(title="accuracy on held-out sequences", range=[0, 1.15])
    fig.update_layout(title="Accuracy after training, for each chunk length K", showlegend=False)
    house_style(fig, height=380)
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
