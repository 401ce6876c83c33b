"""Plotly figure builders, one module per topic; testable without a browser."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

# One colour per role, shared by every page so that a class learns them once
# (inputs red, hidden states green, outputs blue, as in the lecture's diagrams).
PALETTE = {
    "input": "#e45756",
    "hidden": "#54a24b",
    "output": "#4c78a8",
    "weight": "#b279a2",
    "measured": "#1f77b4",
    "theory": "#7f7f7f",
    "highlight": "#f58518",
    "muted": "#c7c7c7",
}

# Large enough to read from the back of a classroom.
FONT_SIZE = 16

# Every figure starts from plotly_white as the process's default template, which a new figure takes up on a
# fast path; update_layout(template="plotly_white") rebuilt and validated the whole template for each figure
# (about 12 ms each, a third of the LSTM gates page's first run).
pio.templates.default = "plotly_white"


def house_style(fig: go.Figure, height: int | None = None) -> go.Figure:
    """Apply the app's shared look: projector-sized fonts and tight margins (on the white default template)."""
    fig.update_layout(
        font=dict(size=FONT_SIZE),
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(font=dict(size=FONT_SIZE - 2)),
    )
    if height is not None:
        fig.update_layout(height=height)
    return fig


# Every font a figure can carry sits under one of these keys (layout.font, title.font, trace.textfont, …).
_FONT_KEYS = frozenset({"font", "textfont", "tickfont", "insidetextfont", "outsidetextfont"})
PLOTLY_DEFAULT_FONT_SIZE = 12


def _times(value, factor: float):
    """A font size, or a trace's per-point sizes, times ``factor``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value * factor
    if isinstance(value, np.ndarray):
        return value * factor
    if isinstance(value, (list, tuple)):
        return [_times(v, factor) for v in value]
    return value


def scale_fonts(figure: go.Figure | dict, factor: float) -> dict:
    """The figure as a dict with every font size it sets multiplied by ``factor``, and its global font (plotly's
    12 px when it sets none) too, so that text it leaves to the global size grows with it. Data arrays are
    left as they are, and so is ``figure``."""
    spec = figure.to_dict() if isinstance(figure, go.Figure) else dict(figure)

    def scaled(node, under_font: bool = False):
        if isinstance(node, dict):
            return {key: (_times(value, factor) if under_font and key == "size"
                          else scaled(value, key in _FONT_KEYS) if isinstance(value, (dict, list)) else value)
                    for key, value in node.items()}
        if isinstance(node, list) and node and isinstance(node[0], dict):
            return [scaled(item, under_font) for item in node]
        return node

    spec = scaled(spec)
    font = spec.setdefault("layout", {}).setdefault("font", {})
    if "size" not in font:
        font["size"] = PLOTLY_DEFAULT_FONT_SIZE * factor
    return spec
