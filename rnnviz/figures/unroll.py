"""Figures of the Unrolling & BPTT page: the rolled and unrolled graphs, and the per-step gradient bars."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.unroll import UnrollResult

# Jacobian norms below 1 shrink the gradient (blue), above 1 they grow it (red); 1 is grey.
NORM_SCALE = [[0.0, PALETTE["output"]], [0.5, PALETTE["theory"]], [1.0, PALETTE["input"]]]
NORM_RANGE = 4.0  # the colour saturates at ‖J‖ = 1/4 and at 4
NODE_SIZE = 40
EDGE_GREY = "#555"


def norm_colour(norm: float) -> str:
    """The colour of an edge whose Jacobian has this spectral norm (log scale, grey at 1)."""
    span = math.log(NORM_RANGE)
    position = 0.5 + 0.5 * max(-1.0, min(1.0, math.log(max(norm, 1e-12)) / span))
    return sample_colorscale(NORM_SCALE, [position])[0]


def _arrow(fig, x0, y0, x1, y1, col, colour=EDGE_GREY, width=1.6, dash=None):
    axis = "" if col == 1 else str(col)
    if dash:
        fig.add_shape(type="line", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=colour, width=width, dash=dash),
                      row=1, col=col)
        return
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref=f"x{axis}", yref=f"y{axis}", axref=f"x{axis}",
                       ayref=f"y{axis}", showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=width,
                       arrowcolor=colour, text="")


def _nodes(fig, xs, ys, labels, colour, col, hover=None, symbol="square"):
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textfont=dict(color="white", size=FONT_SIZE - 3),
                   marker=dict(size=NODE_SIZE, color=colour, symbol=symbol, line=dict(color="white", width=1)),
                   hovertext=hover, hoverinfo="text" if hover else "skip", showlegend=False),
        row=1, col=col,
    )


def _sub(name: str, t: int | str) -> str:
    return f"{name}<sub>{t}</sub>"


def _draw_rolled(fig) -> None:
    """The rolled cell: x → h → y, with h's feedback loop through W_hh."""
    _arrow(fig, 0, 0.25, 0, 0.75, 1)
    _arrow(fig, 0, 1.25, 0, 1.75, 1)
    # The feedback loop leaves h on the right and comes back in from the left, above the node.
    fig.add_shape(type="path", path="M 0.25,1.05 C 0.9,1.05 0.9,1.55 0.0,1.55 C -0.9,1.55 -0.9,1.05 -0.27,1.05",
                  line=dict(color=PALETTE["weight"], width=2.2), row=1, col=1)
    _arrow(fig, -0.45, 1.05, -0.25, 1.05, 1, colour=PALETTE["weight"], width=2.2)
    fig.add_annotation(x=0.78, y=1.45, text="W<sub>hh</sub>", showarrow=False, font=dict(color=PALETTE["weight"]),
                       xref="x", yref="y")
    _nodes(fig, [0], [0], [_sub("x", "t")], PALETTE["input"], 1)
    _nodes(fig, [0], [1], [_sub("h", "t")], PALETTE["hidden"], 1)
    _nodes(fig, [0], [2], [_sub("y", "t")], PALETTE["output"], 1)


def unrolled_figure(result: UnrollResult) -> go.Figure:
    """Left: the rolled RNN. Right: the same graph over T steps, one shared W_hh node feeding every h_{t−1} → h_t
    edge, each edge coloured and labelled by the spectral norm of its Jacobian ∂h_t/∂h_{t−1}."""
    cfg = result.config
    steps = cfg.steps
    fig = make_subplots(rows=1, cols=2, column_widths=[1.6, steps + 1.2], horizontal_spacing=0.04,
                        subplot_titles=["rolled", f"unrolled over T = {steps} steps"])
    _draw_rolled(fig)

    w_x, w_y = steps / 2 + 0.5, 3.3
    for t in range(1, steps + 1):
        norm = float(result.jacobian_norms[t - 1])
        colour = norm_colour(norm)
        mid = t - 0.5
        # The shared W_hh enters every recurrent edge.
        fig.add_shape(type="line", x0=w_x, y0=w_y - 0.2, x1=mid, y1=1.08,
                      line=dict(color=PALETTE["weight"], width=1, dash="dot"), row=1, col=2)
        _arrow(fig, t - 1 + 0.27, 1, t - 0.27, 1, 2, colour=colour, width=3)
        fig.add_annotation(x=mid, y=0.62, text=f"{norm:.2f}", showarrow=False, xref="x2", yref="y2",
                           font=dict(size=FONT_SIZE - 2, color=colour))

    # Inputs: every step, only the first (one-to-many), or the previous output fed back.
    input_steps = list(range(1, steps + 1))
    if cfg.attach == "one-to-many":
        input_steps = [1]
        for t in range(2, steps + 1):
            if cfg.feeds_back:
                _arrow(fig, t - 1 + 0.2, 1.8, t - 0.2, 1.2, 2, colour=PALETTE["output"])
            else:
                _arrow(fig, t, 0.25, t, 0.75, 2, colour=PALETTE["muted"])
        if not cfg.feeds_back:
            _nodes(fig, list(range(2, steps + 1)), [0] * (steps - 1), ["0"] * (steps - 1), PALETTE["muted"], 2)
    for t in input_steps:
        _arrow(fig, t, 0.25, t, 0.75, 2)
    _nodes(fig, input_steps, [0] * len(input_steps), [_sub("x", t) for t in input_steps], PALETTE["input"], 2)

    # Outputs and where the loss attaches.
    if cfg.attach == "many-to-one" and cfg.pool == "mean":
        pool_x = steps + 0.9
        for t in range(1, steps + 1):
            fig.add_shape(type="line", x0=t + 0.15, y0=1.15, x1=pool_x - 0.2, y1=1.85,
                          line=dict(color=PALETTE["output"], width=1, dash="dot"), row=1, col=2)
        _nodes(fig, [pool_x], [2], ["L"], PALETTE["output"], 2,
               hover=["L = ½‖W_hy · mean(h_1 … h_T) + b_y − ŷ‖²"], symbol="circle")
    else:
        loss_steps = list(cfg.loss_steps)
        for t in loss_steps:
            _arrow(fig, t, 1.25, t, 1.75, 2)
        _nodes(fig, loss_steps, [2] * len(loss_steps), [_sub("L", t) for t in loss_steps], PALETTE["output"], 2,
               hover=[f"L_{t} = ½‖y_{t} − ŷ_{t}‖²" for t in loss_steps], symbol="circle")

    hover = [f"h_0 = {np.round(result.h[0], 3).tolist()}"] + [
        f"h_{t} = {np.round(result.h[t], 3).tolist()}<br>‖∂L/∂h_{t}‖ = {result.dl_dh_norms[t - 1]:.3g}"
        f"<br>‖∂h_{t}/∂h_{t - 1}‖₂ = {result.jacobian_norms[t - 1]:.3f}"
        for t in range(1, steps + 1)
    ]
    _nodes(fig, list(range(steps + 1)), [1] * (steps + 1), [_sub("h", t) for t in range(steps + 1)],
           [PALETTE["muted"]] + [PALETTE["hidden"]] * steps, 2, hover=hover)
    _nodes(fig, [w_x], [w_y], ["W<sub>hh</sub>"], PALETTE["weight"], 2, symbol="diamond",
           hover=["one shared W_hh, used at every step"])

    # A colour bar for the edge norms, carried by an invisible marker.
    ticks = [0.25, 0.5, 1, 2, 4]
    fig.add_trace(go.Scatter(
        x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
        marker=dict(colorscale=NORM_SCALE, cmin=-1, cmax=1, color=[0], showscale=True,
                    colorbar=dict(title=dict(text="‖∂h<sub>t</sub>/∂h<sub>t−1</sub>‖₂", side="right"),
                                  tickvals=[math.log(v) / math.log(NORM_RANGE) for v in ticks],
                                  ticktext=[f"{v:g}" for v in ticks], len=0.8, thickness=14)),
    ), row=1, col=2)

    fig.update_xaxes(visible=False, range=[-1.0, 1.0], row=1, col=1)
    fig.update_xaxes(visible=False, range=[-0.6, steps + 1.4], row=1, col=2)
    fig.update_yaxes(visible=False, range=[-0.5, 3.7])
    house_style(fig, height=400)
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10))
    return fig


def step_contributions_figure(result: UnrollResult) -> go.Figure:
    """Bars of ‖∂L/∂W_hh|_t‖_F for t = 1 … T: how much each step's use of the shared W adds to its gradient."""
    steps = np.arange(1, result.config.steps + 1)
    norms = result.step_grad_norms
    fig = go.Figure(go.Bar(
        x=steps, y=norms, marker_color=PALETTE["weight"], text=[f"{v:.3g}" for v in norms], textposition="outside",
        hovertemplate="step %{x}<br>‖∂L/∂W_hh|_t‖_F = %{y:.4g}<extra></extra>",
    ))
    fig.update_xaxes(title="step t", tickmode="linear", dtick=1)
    fig.update_yaxes(title="‖∂L/∂W<sub>hh</sub>|<sub>t</sub>‖<sub>F</sub>", rangemode="tozero")
    fig.update_layout(title="Per-step contributions to the gradient of the shared W<sub>hh</sub>")
    house_style(fig, height=340)
    return fig


def _latex_matrix(m: np.ndarray) -> str:
    rows = [" & ".join(f"{v:.3f}" for v in row) for row in m]
    return r"\begin{bmatrix}" + r" \\ ".join(rows) + r"\end{bmatrix}"


def gradient_sum_latex(result: UnrollResult) -> tuple[str, str]:
    """Σ_t ∂L/∂W_hh|_t and autograd's ∂L/∂W_hh, each written out with three decimals."""
    by_hand = (r"\sum_{t=1}^{" + str(result.config.steps) + r"} \frac{\partial L}{\partial W_{hh}}\Big|_t = "
               + _latex_matrix(result.bptt_sum))
    by_autograd = r"\frac{\partial L}{\partial W_{hh}}\ \text{(autograd)} = " + _latex_matrix(result.autograd_grad)
    return by_hand, by_autograd
