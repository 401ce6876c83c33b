"""A diagram drawn as plain dicts and handed to plotly once.

plotly's ``add_shape`` and ``add_annotation`` re-validate the whole list on every call, so a diagram with a
hundred arrows took half a second to build. Collecting the items here and building the figure once keeps a
diagram to a few tens of milliseconds, well inside a page's one-second budget.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go


class Canvas:
    """Shapes, annotations and traces of one figure; ``axes`` names the subplot ("x", "y") or ("x2", "y2")."""

    def __init__(self) -> None:
        self.shapes: list[dict[str, Any]] = []
        self.annotations: list[dict[str, Any]] = []
        self.traces: list[dict[str, Any]] = []

    def arrow(self, x0, y0, x1, y1, colour: str, width: float = 1.5, axes=("x", "y"), size: float = 1.0) -> None:
        """An arrow from (x0, y0) to (x1, y1), head at the end."""
        xref, yref = axes
        self.annotations.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref=xref, yref=yref, axref=xref, ayref=yref,
                                     showarrow=True, arrowhead=2, arrowsize=size, arrowwidth=width,
                                     arrowcolor=colour, text=""))

    def line(self, x0, y0, x1, y1, colour: str, width: float = 1.0, dash: str | None = None, axes=("x", "y")) -> None:
        self.shapes.append(dict(type="line", x0=x0, y0=y0, x1=x1, y1=y1, xref=axes[0], yref=axes[1],
                                line=dict(color=colour, width=width, dash=dash)))

    def rect(self, x0, y0, x1, y1, fill: str, border: str | None = None, width: float = 0.0,
             dash: str | None = None, axes=("x", "y")) -> None:
        self.shapes.append(dict(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, xref=axes[0], yref=axes[1], layer="below",
                                fillcolor=fill, line=dict(color=border or fill, width=width, dash=dash)))

    def path(self, path: str, colour: str, width: float = 2.0, axes=("x", "y")) -> None:
        self.shapes.append(dict(type="path", path=path, xref=axes[0], yref=axes[1],
                                line=dict(color=colour, width=width)))

    def text(self, x, y, text: str, size: float, colour: str = "#222", axes=("x", "y"), **extra) -> None:
        self.annotations.append(dict(x=x, y=y, text=text, showarrow=False, xref=axes[0], yref=axes[1],
                                     font=dict(size=size, color=colour), **extra))

    def trace(self, trace: dict[str, Any], axes=("x", "y")) -> None:
        """A trace given as a dict (type="scatter", …), placed on the given axes."""
        self.traces.append({**trace, "xaxis": axes[0], "yaxis": axes[1]})

    def figure(self, **layout: Any) -> go.Figure:
        """The finished figure; ``layout`` holds the axes and anything else the layout needs."""
        return go.Figure(data=self.traces, layout=dict(shapes=self.shapes, annotations=self.annotations, **layout))
