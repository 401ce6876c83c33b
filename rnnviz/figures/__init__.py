"""Plotly figure builders, one module per topic; testable without a browser."""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from rnnviz.style import FADED, ON_LIGHT, PALETTE, RULE  # noqa: F401 (re-exported: figure modules and pages use them)

# Large enough to read from the back of a classroom.
FONT_SIZE = 16
# Plotly's modebar (PNG, SVG, full screen) floats over a chart's top 28 px when the pointer is on it, and stays
# there on a tablet once the chart is touched: a figure leaves at least this much above its plot area, so that it
# covers no square, header or legend (house_style's 50 px does; a figure with a tighter top margin takes this).
MODEBAR_ROOM = 30

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


def title_clear_of_the_modebar(fig: go.Figure, lines: int = 1) -> go.Figure:
    """Set the title just above the plot area and MODEBAR_ROOM above it, the figure growing by the room it adds: a
    long title on a narrow chart (two side by side on a tablet) then never runs under the modebar."""
    top = MODEBAR_ROOM + 10 + round(1.4 * FONT_SIZE * 1.1 * lines)  # the title's lines at its 1.1 × font size
    grown = max(0, top - (fig.layout.margin.t if fig.layout.margin.t is not None else 0))
    fig.update_layout(title=dict(y=1, yref="paper", yanchor="bottom", pad=dict(b=10)), margin=dict(t=top))
    if fig.layout.height is not None:
        fig.update_layout(height=fig.layout.height + grown)
    return fig


def ngram_lines(fig: go.Figure, baselines: Mapping[int, float], scale: float = 1.0) -> None:
    """One dotted line per n-gram baseline {n: loss in nats/char}, labelled at its left end ("5-gram: 1.58")."""
    for n, loss in sorted(baselines.items()):
        fig.add_hline(y=loss * scale, line=dict(color=PALETTE["baseline"], dash="dot", width=2),
                      annotation_text=f"{n}-gram: {loss * scale:.2f}", annotation_position="bottom left",
                      annotation_font=dict(size=FONT_SIZE - 3, color=PALETTE["baseline"]))
    if baselines:  # an entry in the legend says what the dotted lines are
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="n-gram (same text)",
                                 line=dict(color=PALETTE["baseline"], dash="dot", width=2), hoverinfo="skip"))


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


_TAGS = re.compile(r"<[^>]+>")
MAX_DESCRIBED_TRACES = 6
_KINDS = {"scatter": "line", "scattergl": "line", "bar": "bar", "heatmap": "heat map", "image": "image"}


def _plain(text) -> str:
    """A plotly text ("<b>K</b> = 10<br>steps") as plain words ("K = 10 steps")."""
    return " ".join(_TAGS.sub(" ", str(text or "")).split())


def _title(part) -> str:
    return _plain(getattr(getattr(part, "title", None), "text", None))


def describe(fig: go.Figure) -> str:
    """A text alternative for ``fig`` (a screen reader's words for it, Streamlit's ``alt``), read from what it
    draws: its title, its axes, and for each trace its name, its number of points and the range of its values."""
    kinds = list(dict.fromkeys(_KINDS.get(trace.type, trace.type) for trace in fig.data))
    parts = [_title(fig.layout) or (f"A {' and '.join(kinds)} chart" if kinds else "A diagram")]
    axes = [f"{name} axis: {title}" for name, title in (("x", _title(fig.layout.xaxis)),
                                                        ("y", _title(fig.layout.yaxis))) if title]
    if axes:
        parts.append("; ".join(axes))
    traces = [trace for trace in fig.data if trace.visible is not False]
    for trace in traces[:MAX_DESCRIBED_TRACES]:
        values = next((v for v in (getattr(trace, name, None) for name in ("z", "y", "values")) if v is not None),
                      None)
        try:
            numbers = np.asarray(values, dtype=float) if values is not None else np.empty(0)
        except (TypeError, ValueError):  # text categories: counted, not summed up
            numbers = np.empty(0)
        finite = numbers[np.isfinite(numbers)]
        what = _plain(trace.name) or trace.type
        if not finite.size and not _plain(trace.name):
            continue  # a legend's marker or a frame: nothing to say
        if finite.size:
            low, high = float(finite.min()), float(finite.max())
            span = f"{low:.3g}" if low == high else f"{low:.3g} to {high:.3g}"
            what += f": {numbers.size} value{'s' * (numbers.size != 1)}, {span}"
        parts.append(what)
    if len(traces) > MAX_DESCRIBED_TRACES:
        parts.append(f"and {len(traces) - MAX_DESCRIBED_TRACES} more series")
    return ". ".join(parts) + "."
