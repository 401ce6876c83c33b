"""The Home page's diagrams: input, hidden and output blocks of each of the five problem shapes."""

from __future__ import annotations

import plotly.graph_objects as go

from rnnviz.figures import MODEBAR_ROOM, PALETTE, house_style
from rnnviz.lessons.shapes import SHAPES, ProblemShape

_ROWS = {"input": 0.0, "hidden": 1.0, "output": 2.0}
_HALF = 0.32  # half the side of a block


def _axes(col: int) -> dict:
    """The axis references of subplot ``col`` (1-based), for shapes and annotations."""
    axis = "" if col == 1 else str(col)
    return dict(xref=f"x{axis}", yref=f"y{axis}")


def _block(x: float, role: str, col: int) -> dict:
    y = _ROWS[role]
    return dict(type="rect", x0=x - _HALF, x1=x + _HALF, y0=y - _HALF, y1=y + _HALF, fillcolor=PALETTE[role],
                line=dict(color="white", width=1), **_axes(col))


def _arrow(x0: float, y0: float, x1: float, y1: float, col: int) -> dict:
    refs = _axes(col)
    return dict(x=x1, y=y1, ax=x0, ay=y0, axref=refs["xref"], ayref=refs["yref"], showarrow=True, arrowhead=2,
                arrowsize=1.2, arrowwidth=1.6, arrowcolor="#444", text="", **refs)


def _draw_shape(shape: ProblemShape, col: int) -> tuple[list[dict], list[dict]]:
    """The blocks and arrows of one panel."""
    blocks, arrows = [], []
    for t in range(shape.steps):
        blocks.append(_block(t, "hidden", col))
        if t > 0:
            arrows.append(_arrow(t - 1 + _HALF, 1.0, t - _HALF, 1.0, col))
        if t in shape.input_steps:
            blocks.append(_block(t, "input", col))
            arrows.append(_arrow(t, _HALF, t, 1.0 - _HALF, col))
        if t in shape.output_steps:
            blocks.append(_block(t, "output", col))
            arrows.append(_arrow(t, 1.0 + _HALF, t, 2.0 - _HALF, col))
    return blocks, arrows


def shape_figure(shape: ProblemShape, height: int = 120) -> go.Figure:
    """One shape alone, x_t (red) at the bottom, h_t (green) in the middle and y_t (blue) on top: Home draws one
    beside each shape's text, so that on a phone each diagram keeps its width instead of sharing one row."""
    blocks, arrows = _draw_shape(shape, 1)
    fig = go.Figure()
    widest = max(s.steps for s in SHAPES)  # one scale for every shape: a step is as wide in each
    fig.update_xaxes(range=[-0.6, widest - 0.4], visible=False, fixedrange=True)
    fig.update_yaxes(range=[-0.6, 2.6], visible=False, fixedrange=True, scaleanchor="x")
    fig.update_layout(shapes=blocks, annotations=arrows, showlegend=False)
    house_style(fig, height=height + MODEBAR_ROOM - 4)  # the blocks keep their size under the modebar's room
    fig.update_layout(margin=dict(l=4, r=4, t=MODEBAR_ROOM, b=4))
    return fig
