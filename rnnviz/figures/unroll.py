"""Figures of the Unrolling & BPTT page: the rolled and unrolled graphs, and the per-step gradient bars."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.figures.canvas import Canvas
from rnnviz.lessons.unroll import UnrollResult

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


ROLLED = ("x", "y")  # the left panel's axes
UNROLLED = ("x2", "y2")  # the right panel's axes


def _nodes(canvas: Canvas, xs, ys, labels, colour, axes, hover=None, symbol="square") -> None:
    canvas.trace(dict(type="scatter", x=list(xs), y=list(ys), mode="markers+text", text=labels,
                      textfont=dict(color="white", size=FONT_SIZE - 3), showlegend=False,
                      marker=dict(size=NODE_SIZE, color=colour, symbol=symbol, line=dict(color="white", width=1)),
                      hovertext=hover, hoverinfo="text" if hover else "skip"), axes)


def _sub(name: str, t: int | str) -> str:
    return f"{name}<sub>{t}</sub>"


def _draw_rolled(canvas: Canvas) -> None:
    """The rolled cell: x → h → y, with h's feedback loop through W_hh."""
    canvas.arrow(0, 0.25, 0, 0.75, EDGE_GREY, 1.6, ROLLED)
    canvas.arrow(0, 1.25, 0, 1.75, EDGE_GREY, 1.6, ROLLED)
    # The feedback loop leaves h on the right and comes back in from the left, above the node.
    canvas.path("M 0.25,1.05 C 0.9,1.05 0.9,1.55 0.0,1.55 C -0.9,1.55 -0.9,1.05 -0.27,1.05", PALETTE["weight"],
                2.2, ROLLED)
    canvas.arrow(-0.45, 1.05, -0.25, 1.05, PALETTE["weight"], 2.2, ROLLED)
    canvas.text(0.78, 1.45, "W<sub>hh</sub>", FONT_SIZE, PALETTE["weight"], ROLLED)
    _nodes(canvas, [0, 0, 0], [0, 1, 2], [_sub("x", "t"), _sub("h", "t"), _sub("y", "t")],
           [PALETTE["input"], PALETTE["hidden"], PALETTE["output"]], ROLLED)


def unrolled_figure(result: UnrollResult) -> go.Figure:
    """Left: the rolled RNN. Right: the same graph over T steps, one shared W_hh node feeding every h_{t−1} → h_t
    edge, each edge coloured and labelled by the spectral norm of its Jacobian ∂h_t/∂h_{t−1}."""
    cfg = result.config
    steps = cfg.steps
    canvas = Canvas()
    _draw_rolled(canvas)

    w_x, w_y = steps / 2 + 0.5, 3.3
    for t in range(1, steps + 1):
        norm = float(result.jacobian_norms[t - 1])
        colour = norm_colour(norm)
        mid = t - 0.5
        # The shared W_hh enters every recurrent edge.
        canvas.line(w_x, w_y - 0.2, mid, 1.08, PALETTE["weight"], 1, "dot", UNROLLED)
        canvas.arrow(t - 1 + 0.27, 1, t - 0.27, 1, colour, 3, UNROLLED)
        canvas.text(mid, 0.62, f"{norm:.2f}", FONT_SIZE - 2, colour, UNROLLED)

    # Inputs: every step, only the first (one-to-many), or the previous output fed back.
    input_steps = list(range(1, steps + 1))
    if cfg.attach == "one-to-many":
        input_steps = [1]
        for t in range(2, steps + 1):
            if cfg.feeds_back:
                canvas.arrow(t - 1 + 0.2, 1.8, t - 0.2, 1.2, PALETTE["output"], 1.6, UNROLLED)
            else:
                canvas.arrow(t, 0.25, t, 0.75, PALETTE["muted"], 1.6, UNROLLED)
        if not cfg.feeds_back:
            _nodes(canvas, range(2, steps + 1), [0] * (steps - 1), ["0"] * (steps - 1), PALETTE["muted"], UNROLLED)
    for t in input_steps:
        canvas.arrow(t, 0.25, t, 0.75, EDGE_GREY, 1.6, UNROLLED)
    _nodes(canvas, input_steps, [0] * len(input_steps), [_sub("x", t) for t in input_steps], PALETTE["input"],
           UNROLLED)

    # Outputs and where the loss attaches.
    if cfg.attach == "many-to-one" and cfg.pool == "mean":
        pool_x = steps + 0.9
        for t in range(1, steps + 1):
            canvas.line(t + 0.15, 1.15, pool_x - 0.2, 1.85, PALETTE["output"], 1, "dot", UNROLLED)
        _nodes(canvas, [pool_x], [2], ["L"], PALETTE["output"], UNROLLED,
               hover=["L = ½‖W_hy · mean(h_1 … h_T) + b_y − ŷ‖²"], symbol="circle")
    else:
        loss_steps = list(cfg.loss_steps)
        for t in loss_steps:
            canvas.arrow(t, 1.25, t, 1.75, EDGE_GREY, 1.6, UNROLLED)
        _nodes(canvas, loss_steps, [2] * len(loss_steps), [_sub("L", t) for t in loss_steps], PALETTE["output"],
               UNROLLED, hover=[f"L_{t} = ½‖y_{t} − ŷ_{t}‖²" for t in loss_steps], symbol="circle")

    hover = [f"h_0 = {np.round(result.h[0], 3).tolist()}"] + [
        f"h_{t} = {np.round(result.h[t], 3).tolist()}<br>‖∂L/∂h_{t}‖ = {result.dl_dh_norms[t - 1]:.3g}"
        f"<br>‖∂h_{t}/∂h_{t - 1}‖₂ = {result.jacobian_norms[t - 1]:.3f}"
        for t in range(1, steps + 1)
    ]
    _nodes(canvas, range(steps + 1), [1] * (steps + 1), [_sub("h", t) for t in range(steps + 1)],
           [PALETTE["muted"]] + [PALETTE["hidden"]] * steps, UNROLLED, hover=hover)
    _nodes(canvas, [w_x], [w_y], ["W<sub>hh</sub>"], PALETTE["weight"], UNROLLED, symbol="diamond",
           hover=["one shared W_hh, used at every step"])

    # A colour bar for the edge norms, carried by an invisible marker.
    ticks = [0.25, 0.5, 1, 2, 4]
    canvas.trace(dict(
        type="scatter", x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
        marker=dict(colorscale=NORM_SCALE, cmin=-1, cmax=1, color=[0], showscale=True,
                    colorbar=dict(title=dict(text="‖∂h<sub>t</sub>/∂h<sub>t−1</sub>‖₂", side="right"),
                                  tickvals=[math.log(v) / math.log(NORM_RANGE) for v in ticks],
                                  ticktext=[f"{v:g}" for v in ticks], len=0.8, thickness=14)),
    ), UNROLLED)
    split = 1.6 / (steps + 2.8)  # the rolled panel's share of the width, as make_subplots would give it
    for x, title in ((split / 2, "rolled"), ((split + 0.04 + 1) / 2, f"unrolled over T = {steps} steps")):
        canvas.text(x, 1.0, title, FONT_SIZE, "#444", ("paper", "paper"), yanchor="bottom")
    hidden_axis = dict(visible=False, fixedrange=True)
    fig = canvas.figure(
        xaxis=dict(domain=[0, split], range=[-1.0, 1.0], **hidden_axis),
        yaxis=dict(range=[-0.5, 3.7], **hidden_axis),
        xaxis2=dict(domain=[split + 0.04, 1], range=[-0.6, steps + 1.4], **hidden_axis),
        yaxis2=dict(anchor="x2", range=[-0.5, 3.7], **hidden_axis),
    )
    house_style(fig, height=400)
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10))
    return fig


BAR_LABEL_SIZE = FONT_SIZE - 3
UPRIGHT_LABELS_UP_TO = 7  # steps; with more bars (on half the page's width) the labels stand on end


def step_contributions_figure(result: UnrollResult) -> go.Figure:
    """Bars of ‖∂L/∂W_hh|_t‖_F for t = 1 … T: how much each step's use of the shared W adds to its gradient.

    Every bar's value is printed above it at one size (plotly would shrink each label to its bar's width, so
    that some read smaller than others), upright for a few bars and on end for many, with the y axis raised
    to leave them room.
    """
    steps = np.arange(1, result.config.steps + 1)
    norms = result.step_grad_norms
    upright = len(steps) <= UPRIGHT_LABELS_UP_TO
    fig = go.Figure(go.Bar(
        x=steps, y=norms, marker_color=PALETTE["weight"], text=[f"{v:.3g}" for v in norms], textposition="outside",
        textangle=0 if upright else -90, textfont=dict(size=BAR_LABEL_SIZE), constraintext="none", cliponaxis=False,
        hovertemplate="step %{x}<br>‖∂L/∂W_hh|_t‖_F = %{y:.4g}<extra></extra>",
    ))
    top = float(np.max(norms)) if len(norms) and np.max(norms) > 0 else 1.0
    fig.update_xaxes(title="step t", tickmode="linear", dtick=1)
    fig.update_yaxes(title="‖∂L/∂W<sub>hh</sub>|<sub>t</sub>‖<sub>F</sub>", range=[0, top * (1.2 if upright else 1.45)])
    fig.update_layout(uniformtext=dict(minsize=BAR_LABEL_SIZE, mode="show"))
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
