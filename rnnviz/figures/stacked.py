"""Figures of the Stacked RNNs page: the time × depth grid stepped in computation order, and parameter counts."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.figures.canvas import Canvas
from rnnviz.lessons.stacked import DepthRow, StackRun

HALF_W, HALF_H = 0.42, 0.40  # half the size of a grid cell, in data units (one unit between cells)
DONE_FILL = "#e6f2e3"  # a light tint of PALETTE["hidden"]
CURRENT_FILL = "#fde3c8"  # a light tint of PALETTE["highlight"]
INPUT_FILL = "#fbe3e3"  # a light tint of PALETTE["input"]
KIND_NAMES = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}


def _column(values: np.ndarray) -> str:
    return "<br>".join(f"{v:+.2f}".replace("-", "−") for v in values)


def _box(canvas: Canvas, x, y, fill, border, width=1.5, dash=None) -> None:
    canvas.rect(x - HALF_W, y - HALF_H, x + HALF_W, y + HALF_H, fill, border, width, dash)


def _state_text(run: StackRun, layer: int, t: int) -> list[tuple[float, str]]:
    """(x offset, text) pieces for one cell: h alone, or h and c side by side for an LSTM."""
    h = run.h[layer][t]
    if run.c is None:
        return [(0.0, "<b>h</b><br>" + _column(h))]
    return [(-HALF_W / 2, "<b>h</b><br>" + _column(h)), (HALF_W / 2, "<b>c</b><br>" + _column(run.c[layer][t]))]


def grid_figure(run: StackRun, order: Sequence[tuple[int, int]], done: int) -> go.Figure:
    """Time across, depth up from the words: the first ``done`` cells of ``order`` are computed, the last of them
    is current and its two incoming arrows (from the left and from below) are highlighted."""
    cfg = run.config
    layers, steps = cfg.layers, len(cfg.words)
    computed = set(order[:done])
    current = order[done - 1] if done else None
    canvas = Canvas()
    small = FONT_SIZE - 3

    for t, word in enumerate(cfg.words):
        x = t + 1
        _box(canvas, x, 0, INPUT_FILL, PALETTE["input"])
        canvas.text(x, 0.12, f"<b>{html.escape(word)}</b>", FONT_SIZE - 1)
        vector = "x = (" + ", ".join(f"{v:.2f}" for v in run.x[t]).replace("-", "−") + ")"
        canvas.text(x, -0.18, vector, FONT_SIZE - 6, "#555")
    for layer in range(layers):
        y = layer + 1
        _box(canvas, 0, y, "white", PALETTE["muted"], dash="dot")
        zero = "h<sub>0</sub> = 0" + ("<br>c<sub>0</sub> = 0" if run.c is not None else "")
        canvas.text(0, y, zero, small, PALETTE["theory"])
        for t in range(steps):
            x = t + 1
            cell = (layer, t)
            if cell == current:
                _box(canvas, x, y, CURRENT_FILL, PALETTE["highlight"], width=3.5)
            elif cell in computed:
                _box(canvas, x, y, DONE_FILL, PALETTE["hidden"])
            else:
                _box(canvas, x, y, "white", PALETTE["muted"], dash="dot")
            if cell in computed:
                for dx, text in _state_text(run, layer, t):
                    canvas.text(x + dx, y, text, small)
            # Incoming arrows: from the left (same layer, previous step) and from below (same step).
            highlighted = cell == current
            colour = PALETTE["highlight"] if highlighted else ("#888" if cell in computed else PALETTE["muted"])
            width = 3.5 if highlighted else 1.3
            canvas.arrow(x - 1 + HALF_W, y, x - HALF_W, y, colour, width)
            canvas.arrow(x, y - 1 + HALF_H, x, y - HALF_H, colour, width)

    sizes = ", ".join(f"d<sub>{i + 1}</sub> = {d}" for i, d in enumerate(cfg.sizes))
    tallest = max(max(cfg.sizes), 2)
    fig = canvas.figure(
        xaxis=dict(range=[-0.55, steps + 0.55], tickvals=list(range(steps + 1)), side="top", showgrid=False,
                   zeroline=False, ticktext=["t = 0"] + [f"t = {t}" for t in range(1, steps + 1)]),
        yaxis=dict(range=[-0.55, layers + 0.55], tickvals=list(range(layers + 1)), showgrid=False, zeroline=False,
                   ticktext=["words x<sub>t</sub>"] + [f"layer {n}" for n in range(1, layers + 1)]),
    )
    house_style(fig, height=int(80 + (layers + 1) * (40 + 17 * tallest)))
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), title=dict(
        text=f"{KIND_NAMES[cfg.kind]}, {layers} layer{'s' * (layers > 1)}: {sizes}", font=dict(size=FONT_SIZE),
        y=0.995, yanchor="top"))
    return fig


def parameters_figure(rows: Sequence[DepthRow], kind: str, hidden: int, input_size: int) -> go.Figure:
    """Parameter count against depth: the formula as a line, the real model's sum(p.numel()) as markers."""
    layers = [r.layers for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=layers, y=[r.formula for r in rows], mode="lines", name="formula",
                             line=dict(color=PALETTE["theory"], width=2, dash="dash")))
    fig.add_trace(go.Scatter(x=layers, y=[r.model for r in rows], mode="markers", name="sum(p.numel()) of the model",
                             marker=dict(color=PALETTE["measured"], size=11)))
    fig.update_xaxes(title="layers L", tickmode="linear", dtick=1)
    fig.update_yaxes(title="parameters", rangemode="tozero")
    fig.update_layout(title=f"{KIND_NAMES[kind]} with d = {hidden} per layer, input width E = {input_size}",
                      legend=dict(orientation="h", y=-0.25, x=0.5, xanchor="center"))
    house_style(fig, height=360)
    return fig


def _vec(values) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")"


def cell_sentence(run: StackRun, layer: int, t: int) -> str:
    """Markdown: what cell (layer, t) (0-based) reads from the left and from below, and what it writes."""
    here = f"^{{({layer + 1})}}"
    left = run.h[layer][t - 1] if t > 0 else np.zeros(run.config.sizes[layer])
    if layer == 0:
        below = f"x_{{{t + 1}}} = {_vec(run.x[t])}"
    else:
        below = f"h_{{{t + 1}}}^{{({layer})}} = {_vec(run.h[layer - 1][t])}"
    text = (f"**Cell (layer {layer + 1}, t = {t + 1})** reads $h_{{{t}}}{here} = {_vec(left)}$ from the left and "
            f"${below}$ from below, and writes $h_{{{t + 1}}}{here} = {_vec(run.h[layer][t])}$")
    if run.c is not None:
        text += f" and $c_{{{t + 1}}}{here} = {_vec(run.c[layer][t])}$"
    return text + "."
