"""Plotly figure builders, one module per topic; testable without a browser."""

from __future__ import annotations

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
