"""A diagram drawn as plain dicts and handed to plotly once.

plotly's ``add_shape`` and ``add_annotation`` re-validate the whole list on every call, so a diagram of a hundred
arrows built one call at a time is slow; collected here, it is validated once.

Arrows and plain labels become traces, not annotations: a browser draws an annotation as its own group, measures its
text and (for an arrow) the length of its path, one at a time, and Streamlit mounts a chart anew whenever its figure
changes. As one line trace per arrow colour (heads as triangle markers turned along the line, drawn back by half
their size so that the tip ends where the arrow does) and one text trace per subplot, a diagram such as the
unrolled graph of Unrolling & BPTT draws faster. A label with any setting of its own (an anchor, a background, a
shift) stays an annotation.
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
        # (colour, width, axes) → x, y and marker sizes of its arrows, None between them
        self._arrows: dict[tuple, tuple[list, list, list]] = {}
        self._labels: dict[tuple, dict[str, list]] = {}  # axes → the plain labels' x, y, text, colour and size

    def arrow(self, x0, y0, x1, y1, colour: str, width: float = 1.5, axes=("x", "y"), size: float = 1.0) -> None:
        """An arrow from (x0, y0) to (x1, y1), head at the end (``size`` scales the head)."""
        xs, ys, heads = self._arrows.setdefault((colour, width, tuple(axes)), ([], [], []))
        xs.extend([x0, x1, None])
        ys.extend([y0, y1, None])
        heads.extend([0, round(size * (6 + 4 * width), 1), 0])

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
        """A label centred on (x, y); with ``extra`` (anchors, a background, a shift) or on the paper, an
        annotation."""
        if extra or "paper" in axes:
            self.annotations.append(dict(x=x, y=y, text=text, showarrow=False, xref=axes[0], yref=axes[1],
                                         font=dict(size=size, color=colour), **extra))
            return
        labels = self._labels.setdefault(tuple(axes), {"x": [], "y": [], "text": [], "color": [], "size": []})
        for field, value in (("x", x), ("y", y), ("text", text), ("color", colour), ("size", size)):
            labels[field].append(value)

    def trace(self, trace: dict[str, Any], axes=("x", "y")) -> None:
        """A trace given as a dict (type="scatter", …), placed on the given axes."""
        self.traces.append({**trace, "xaxis": axes[0], "yaxis": axes[1]})

    def figure(self, **layout: Any) -> go.Figure:
        """The finished figure; ``layout`` holds the axes and anything else the layout needs. Arrows are drawn
        over the traces given, as the annotations were (a head may end on a node), and labels over both."""
        arrows = [dict(type="scatter", x=xs, y=ys, mode="lines+markers", line=dict(color=colour, width=width),
                       marker=dict(symbol="triangle-up", angleref="previous", size=heads, color=colour, opacity=1,
                                   line=dict(width=0), standoff=[h / 2 for h in heads]),
                       hoverinfo="skip", showlegend=False, xaxis=axes[0], yaxis=axes[1])
                  for (colour, width, axes), (xs, ys, heads) in self._arrows.items()]
        labels = [dict(type="scatter", x=lab["x"], y=lab["y"], text=lab["text"], mode="text",
                       textfont=dict(color=lab["color"], size=lab["size"]), hoverinfo="skip", showlegend=False,
                       xaxis=axes[0], yaxis=axes[1])
                  for axes, lab in self._labels.items()]
        return go.Figure(data=self.traces + arrows + labels,
                         layout=dict(shapes=self.shapes, annotations=self.annotations, **layout))
