"""The Home page's figure: input, hidden and output blocks for each of the five problem shapes."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.figures import PALETTE, house_style
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


def five_shapes_figure() -> go.Figure:
    """Five panels, left to right, each drawing x_t (red), h_t (green) and y_t (blue) over time.

    The blocks and arrows go into the layout as two lists at once: plotly validates the whole list on every
    ``add_shape``, so adding 90 of them one by one took 0.7 s of CPU, a list at once takes a few ms."""
    widths = [max(s.steps, 2) for s in SHAPES]
    fig = make_subplots(
        rows=1, cols=len(SHAPES), column_widths=widths, subplot_titles=[s.name for s in SHAPES],
        horizontal_spacing=0.03,
    )
    blocks, arrows = [], []
    for col, shape in enumerate(SHAPES, start=1):
        panel_blocks, panel_arrows = _draw_shape(shape, col)
        blocks += panel_blocks
        arrows += panel_arrows
        fig.update_xaxes(range=[-0.6, max(shape.steps, 2) - 0.4], visible=False, row=1, col=col)
        fig.update_yaxes(range=[-0.6, 2.6], visible=False, scaleanchor=f"x{'' if col == 1 else col}",
                         row=1, col=col)
    fig.update_layout(shapes=blocks, annotations=[*fig.layout.annotations, *arrows])
    # Invisible markers give the figure a legend naming the three roles.
    for role, label in (("input", "input x_t"), ("hidden", "hidden h_t"), ("output", "output y_t")):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                 marker=dict(size=14, symbol="square", color=PALETTE[role])), row=1, col=1)
    house_style(fig, height=300)
    fig.update_layout(legend=dict(orientation="h", y=-0.05, x=0.5, xanchor="center"))
    return fig
