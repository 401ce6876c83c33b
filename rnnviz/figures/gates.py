"""Figures of the LSTM gates page: one number through the gates, one full step drawn, the stacked W, saturation."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.lessons.gates import GATE_NAMES, GATES, OneNumber, SaturationStats, StepDetail, saturation_thresholds

GATE_COLOURS = {"i": "#e45756", "f": "#f58518", "g": "#b279a2", "o": "#4c78a8"}
GATE_LABELS = {"i": "input i<sub>t</sub>", "f": "forget f<sub>t</sub>", "g": "candidate g<sub>t</sub>",
               "o": "output o<sub>t</sub>"}
SATURATION_COLOURS = {"left": "#4c78a8", "middle": "#c7c7c7", "right": "#f58518"}
# Numbers in the cells are readable on this scale: pale at 0, strong at ±1, values beyond ±1 clamp.
VALUE_SCALE = "RdBu"

# --- One number through the gates ---------------------------------------------------------------------


def one_number_figure(trace: OneNumber) -> go.Figure:
    """Bars of c_{t−1}, what is kept (f·c_{t−1}), written (i·g), the new c_t and what is exposed (h_t)."""
    labels = ["c<sub>t−1</sub>", "kept<br>f·c<sub>t−1</sub>", "written<br>i·g", "c<sub>t</sub>",
              "exposed<br>h<sub>t</sub> = o·tanh(c<sub>t</sub>)"]
    values = [trace.c_prev, trace.kept, trace.written, trace.c_t, trace.h_t]
    colours = [PALETTE["muted"], GATE_COLOURS["f"], GATE_COLOURS["i"], PALETTE["hidden"], PALETTE["output"]]
    fig = go.Figure(go.Bar(
        x=labels, y=values, marker_color=colours, text=[f"{v:+.3f}" for v in values], textposition="outside",
        textfont=dict(size=FONT_SIZE + 2), cliponaxis=False, hovertemplate="%{x}: %{y:.4f}<extra></extra>",
    ))
    fig.add_hline(y=0, line=dict(color="#444", width=1))
    fig.update_yaxes(range=[-2.1, 2.1], title_text="value", zeroline=False)
    house_style(fig, height=380)
    fig.update_layout(showlegend=False, bargap=0.35)
    return fig


# --- One full LSTM step, drawn --------------------------------------------------------------------------

_CELL_H = 0.36  # height of one number in a strip
_STRIP_W = 0.95
_TOP, _GATE_ROW, _W_ROW = 10.0, 6.0, 2.1  # y of the cell-state line, the gate boxes, the W box
_BOX_W, _BOX_H = 1.5, 0.8
_OP_R = 0.32  # radius of a × or + circle
# x of each gate box, left to right as in the lecture's figure: f under its ×, i and g under i ⊙ g, then o.
_GATE_X = {"f": 3.0, "i": 5.9, "g": 8.8, "o": 11.7}
_IG_X, _IG_Y = 7.35, 8.2  # the ⊙ of i_t and g_t
_TANH_X, _TANH_Y, _OUT_Y = 14.5, 8.75, 7.4  # tanh(c_t), and the × of o_t that makes h_t
_OUT_X = 16.6  # c_t and h_t strips


class _Canvas:
    """Traces, shapes and annotations collected in lists and handed to plotly once.

    Plotly's add_shape and add_annotation re-validate the whole layout on every call; one assignment at the end
    validates it once.
    """

    def __init__(self):
        self.traces: list[go.Heatmap] = []
        self.shapes: list[dict] = []
        self.annotations: list[dict] = []

    def strip(self, values: np.ndarray, x: float, y_top: float, label: str, name: str,
              show_scale: bool = False) -> None:
        """A column of numbers (one per unit) as a heat strip, its top edge at y_top, with a label above."""
        self.traces.append(go.Heatmap(
            z=[[float(v)] for v in values], x0=x, dx=_STRIP_W, y0=y_top - _CELL_H / 2, dy=-_CELL_H,
            zmin=-1, zmax=1, zmid=0, colorscale=VALUE_SCALE, showscale=show_scale, texttemplate="%{z:.2f}",
            textfont=dict(size=14), xgap=1, ygap=1, name=name,
            hovertemplate=f"{name}<br>unit %{{customdata}}: %{{z:.4f}}<extra></extra>",
            customdata=[[k + 1] for k in range(len(values))],
            colorbar=dict(title=dict(text="value"), len=0.5, y=0.5, thickness=14) if show_scale else None,
        ))
        if label:
            self.text(x, y_top + 0.05, label, yanchor="bottom", font=dict(size=FONT_SIZE - 1))

    def text(self, x: float, y: float, text: str, **style) -> None:
        self.annotations.append(dict(x=x, y=y, text=text, showarrow=False, **style))

    def line(self, points: list[tuple[float, float]], colour: str = "#444") -> None:
        """A polyline whose last segment ends in an arrowhead."""
        for (x0, y0), (x1, y1) in zip(points[:-2], points[1:-1]):
            self.shapes.append(dict(type="line", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=colour, width=2)))
        (x0, y0), (x1, y1) = points[-2], points[-1]
        self.annotations.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                                     showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=2, arrowcolor=colour))

    def op(self, x: float, y: float, symbol: str) -> None:
        """A pointwise operation: × or + in a circle."""
        self.shapes.append(dict(type="circle", x0=x - _OP_R, x1=x + _OP_R, y0=y - _OP_R, y1=y + _OP_R,
                                fillcolor="white", line=dict(color="#444", width=2)))
        self.text(x, y, f"<b>{symbol}</b>", font=dict(size=FONT_SIZE + 4))

    def box(self, x: float, y: float, text: str, colour: str, width: float = _BOX_W, height: float = _BOX_H) -> None:
        self.shapes.append(dict(type="rect", x0=x - width / 2, x1=x + width / 2, y0=y - height / 2,
                                y1=y + height / 2, fillcolor=colour, line=dict(color="white", width=1),
                                layer="below"))
        self.text(x, y, f"<b>{text}</b>", font=dict(color="white", size=FONT_SIZE))

    def figure(self) -> go.Figure:
        return go.Figure(data=self.traces, layout=dict(shapes=self.shapes, annotations=self.annotations))


def _char_label(char: str) -> str:
    """A user's character as plotly text: quoted, escaped ('\\n' for a newline, '&lt;' for <)."""
    return html.escape(repr(char), quote=False)


def lstm_step_figure(detail: StepDetail, input_char: str) -> go.Figure:
    """The cell diagram: the cell state along the top (× f, + i⊙g), four gate blocks fed by one product
    W [h_{t−1}; x_t] + b below, h_t leaving on the right; every vector drawn as a strip of its numbers.
    ``input_char`` is the character whose one-hot vector is x_t."""
    strip = detail.hidden * _CELL_H
    canvas = _Canvas()
    # Cell state along the top: c_{t−1} → × f_t → + i_t ⊙ g_t → c_t.
    canvas.strip(detail.c_prev, 0.9, _TOP + strip / 2, "c<sub>t−1</sub>", "c_{t−1}")
    canvas.line([(0.9 + _STRIP_W / 2, _TOP), (_GATE_X["f"] - _OP_R, _TOP)])
    canvas.op(_GATE_X["f"], _TOP, "×")
    canvas.line([(_GATE_X["f"] + _OP_R, _TOP), (_IG_X - _OP_R, _TOP)])
    canvas.op(_IG_X, _TOP, "+")
    canvas.line([(_IG_X + _OP_R, _TOP), (_OUT_X - _STRIP_W / 2, _TOP)])
    canvas.strip(detail.c_t, _OUT_X, _TOP + strip / 2, "c<sub>t</sub>", "c_t")
    # Gate boxes, each with its vector to the right, fed by its rows of W (torch's order i, f, g, o).
    for gate, x in _GATE_X.items():
        canvas.box(x, _GATE_ROW, f"{gate}<sub>t</sub> = {'tanh' if gate == 'g' else 'σ'}", GATE_COLOURS[gate])
        canvas.strip(detail.gates[gate], x + _BOX_W / 2 + _STRIP_W / 2 + 0.05, _GATE_ROW + _BOX_H / 2, "",
                     GATE_NAMES[gate])
        canvas.line([(x, _W_ROW + _BOX_H / 2), (x, _GATE_ROW - _BOX_H / 2)])
        first = GATES.index(gate) * detail.hidden
        canvas.text(x - 0.1, (_W_ROW + _GATE_ROW) / 2, f"rows {first + 1}–{first + detail.hidden}",
                    xanchor="right", font=dict(size=FONT_SIZE - 4, color="#555"))
    canvas.line([(_GATE_X["f"], _GATE_ROW + _BOX_H / 2), (_GATE_X["f"], _TOP - _OP_R)])
    canvas.line([(_GATE_X["i"], _GATE_ROW + _BOX_H / 2), (_GATE_X["i"], _IG_Y), (_IG_X - _OP_R, _IG_Y)])
    canvas.line([(_GATE_X["g"], _GATE_ROW + _BOX_H / 2), (_GATE_X["g"], _IG_Y), (_IG_X + _OP_R, _IG_Y)])
    canvas.op(_IG_X, _IG_Y, "×")
    canvas.line([(_IG_X, _IG_Y + _OP_R), (_IG_X, _TOP - _OP_R)])
    # Output: h_t = o_t ⊙ tanh(c_t).
    canvas.line([(_TANH_X, _TOP), (_TANH_X, _TANH_Y + _BOX_H / 2)])
    canvas.box(_TANH_X, _TANH_Y, "tanh", PALETTE["hidden"], width=1.0)
    canvas.line([(_TANH_X, _TANH_Y - _BOX_H / 2), (_TANH_X, _OUT_Y + _OP_R)])
    canvas.op(_TANH_X, _OUT_Y, "×")
    canvas.line([(_GATE_X["o"], _GATE_ROW + _BOX_H / 2), (_GATE_X["o"], _OUT_Y), (_TANH_X - _OP_R, _OUT_Y)])
    canvas.line([(_TANH_X + _OP_R, _OUT_Y), (_OUT_X - _STRIP_W / 2, _OUT_Y)])
    canvas.strip(detail.h_t, _OUT_X, _OUT_Y + _CELL_H / 2, "", "h_t")
    canvas.text(_OUT_X + _STRIP_W / 2 + 0.1, _OUT_Y, "h<sub>t</sub>", xanchor="left")
    # The one product that computes all four gates, fed by h_{t−1} and x_t.
    w_left, w_right = 2.1, 12.8
    w_mid = (w_left + w_right) / 2
    rows, cols = detail.w.shape
    canvas.box(w_mid, _W_ROW, f"W [h<sub>t−1</sub>; x<sub>t</sub>] + b     (W is 4H × (H+D) = {rows} × {cols})",
               PALETTE["weight"],
               width=w_right - w_left)
    canvas.strip(detail.h_prev, 0.9, _W_ROW + strip / 2, "h<sub>t−1</sub>", "h_{t−1}", show_scale=True)
    canvas.line([(0.9 + _STRIP_W / 2, _W_ROW), (w_left, _W_ROW)])
    canvas.line([(w_mid, _W_ROW - 1.5), (w_mid, _W_ROW - _BOX_H / 2)])
    canvas.text(w_mid, _W_ROW - 1.5, f"x<sub>t</sub> = one-hot({_char_label(input_char)})", yanchor="top",
                font=dict(color=PALETTE["input"]))
    fig = canvas.figure()
    fig.update_xaxes(visible=False, range=[0.2, 17.8])
    fig.update_yaxes(visible=False, range=[min(_W_ROW - strip / 2, _W_ROW - 2.0) - 0.3, _TOP + strip / 2 + 0.7])
    house_style(fig, height=720)
    fig.update_layout(showlegend=False, title=f"One LSTM step at t = {detail.t}")
    return fig


def stacked_w_figure(detail: StepDetail, input_names: list[str]) -> go.Figure:
    """W = [W_hh | W_ih] as a heatmap with its four row blocks labelled in torch's order i, f, g, o."""
    hidden, inputs = detail.hidden, detail.input_size
    row_names = [f"{gate}{k + 1}" for gate in GATES for k in range(hidden)]
    col_names = [f"h{k + 1}" for k in range(hidden)] + [f"x:{_char_label(name)}" for name in input_names]
    edge = dict(color="#222", width=3)
    shapes = [dict(type="line", xref="paper", x0=0, x1=1, y0=b * hidden - 0.5, y1=b * hidden - 0.5, line=edge)
              for b in range(1, 4)]
    shapes.append(dict(type="line", yref="paper", y0=0, y1=1, x0=hidden - 0.5, x1=hidden - 0.5, line=edge))
    annotations = [
        dict(x=-0.01, xref="paper", y=block * hidden + (hidden - 1) / 2, yref="y", text=f"<b>{gate}</b>",
             showarrow=False, xanchor="right", font=dict(size=FONT_SIZE + 6, color=GATE_COLOURS[gate]))
        for block, gate in enumerate(GATES)
    ]
    annotations += [
        dict(x=(hidden - 1) / 2, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
             text="W<sub>hh</sub>: H × H per gate, times h<sub>t−1</sub>"),
        dict(x=hidden + (inputs - 1) / 2, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
             text="W<sub>ih</sub>: H × D per gate, times x<sub>t</sub>"),
    ]
    fig = go.Figure(
        go.Heatmap(z=detail.w, x=col_names, y=row_names, colorscale=VALUE_SCALE, zmid=0, xgap=1, ygap=1,
                   colorbar=dict(title=dict(text="weight"), thickness=14),
                   hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>"),
        layout=dict(shapes=shapes, annotations=annotations),
    )
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_xaxes(tickangle=0)
    house_style(fig, height=max(360, 22 * 4 * hidden + 120))
    fig.update_layout(margin=dict(l=50, r=10, t=60, b=10))
    return fig


# --- Gate saturation ------------------------------------------------------------------------------------


def saturation_bars_figure(stats: SaturationStats) -> go.Figure:
    """Per layer and gate, the fractions left-saturated, in between and right-saturated, as stacked bars."""
    names = [f"layer {s.layer + 1} · {s.gate}" for s in stats.per_gate]
    traces = []
    for part, label in (("left", "left-saturated"), ("middle", "in between"), ("right", "right-saturated")):
        values = [getattr(s, part) for s in stats.per_gate]
        traces.append(go.Bar(
            y=names, x=values, orientation="h", name=label, marker_color=SATURATION_COLOURS[part],
            text=[f"{v:.0%}" if v >= 0.08 else "" for v in values], textposition="inside", textangle=0,
            insidetextanchor="middle", hovertemplate=f"%{{y}}: %{{x:.1%}} {label}<extra></extra>",
        ))
    fig = go.Figure(traces)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title_text="share of the gate's values over the text")
    fig.update_yaxes(autorange="reversed")
    house_style(fig, height=max(300, 46 * len(names) + 120))
    fig.update_layout(legend=dict(orientation="h", y=1.02, x=0, xanchor="left", yanchor="bottom",
                                  traceorder="normal"))  # on the left: the modebar takes the top right corner
    return fig


def _axis(n: int, letter: str) -> str:
    """Name of the n-th subplot's axis as traces and references spell it: x, x2, x3…"""
    return letter if n == 1 else f"{letter}{n}"


def _grid_domains(count: int, gap: float) -> list[tuple[float, float]]:
    """``count`` equal spans of [0, 1] separated by ``gap``."""
    size = (1 - gap * (count - 1)) / count
    return [(k * (size + gap), k * (size + gap) + size) for k in range(count)]


def saturation_histograms_figure(stats: SaturationStats) -> go.Figure:
    """A histogram of every gate's values per layer, with the saturated ends shaded and their shares written.

    The grid of subplots is laid out by hand and handed to plotly in one piece, which is much cheaper than
    make_subplots and per-subplot updates.
    """
    columns = _grid_domains(len(GATES), 0.06)
    rows = _grid_domains(stats.layers, 0.22)[::-1]  # layer 1 on top
    traces, shapes, annotations, layout = [], [], [], {}
    for s in stats.per_gate:
        n = s.layer * len(GATES) + GATES.index(s.gate) + 1
        xref, yref = _axis(n, "x"), _axis(n, "y")
        (x0, x1), (y0, y1) = columns[GATES.index(s.gate)], rows[s.layer]
        layout[f"xaxis{n if n > 1 else ''}"] = dict(domain=[x0, x1], anchor=yref, range=[s.edges[0], s.edges[-1]])
        layout[f"yaxis{n if n > 1 else ''}"] = dict(domain=[y0, y1], anchor=xref, tickformat=".0%")
        centres = (s.edges[:-1] + s.edges[1:]) / 2
        traces.append(go.Bar(x=centres, y=s.counts / max(1, s.counts.sum()), xaxis=xref, yaxis=yref,
                             marker_color=GATE_COLOURS[s.gate], width=(s.edges[1] - s.edges[0]) * 0.95,
                             hovertemplate="value ≈ %{x:.2f}<br>%{y:.1%} of values<extra></extra>"))
        left, right = saturation_thresholds(s.gate)
        for lo, hi in ((s.edges[0], left), (right, s.edges[-1])):
            shapes.append(dict(type="rect", xref=xref, yref=f"{yref} domain", x0=lo, x1=hi, y0=0, y1=1,
                               fillcolor="#999", opacity=0.18, line_width=0, layer="below"))
        annotations.append(dict(text=f"layer {s.layer + 1} · {GATE_LABELS[s.gate]}", x=(x0 + x1) / 2, y=y1 + 0.01,
                                xref="paper", yref="paper", yanchor="bottom", showarrow=False,
                                font=dict(size=FONT_SIZE - 2)))
        annotations.append(dict(text=f"left {s.left:.0%} · right {s.right:.0%}", x=0.5, y=1.0,
                                xref=f"{xref} domain", yref=f"{yref} domain", showarrow=False, yanchor="top",
                                font=dict(size=FONT_SIZE - 3)))
    fig = go.Figure(data=traces, layout=dict(shapes=shapes, annotations=annotations, showlegend=False, **layout))
    house_style(fig, height=250 * stats.layers + 70)
    fig.update_layout(margin=dict(t=60))  # the top panels' names stand below the modebar
    return fig
