"""A picture of a figure beside its plotly JSON, for a saved notebook read where plotly.js cannot run (a repository's
web page shows such an output blank): a PNG drawn by kaleido when it is installed, else an SVG drawn here.

The SVG is a plain sketch of what the app's notebook figures hold (bars, lines, markers, with the figure's colours,
axes, ticks and titles), not plotly's rendering: its numbers stay in the JSON beside it, and in Jupyter the
interactive chart is what shows.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.io as pio
from plotly.colors import get_colorscale, sample_colorscale
from plotly.io._base_renderers import MimetypeRenderer

RENDERER = "rnnviz_picture"
DEFAULT_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880")
FONT = "font-family='Open Sans, Arial, sans-serif'"


def keep_pictures() -> str:
    """Show every plotly figure from now on as plotly's JSON and a picture beside it; returns the renderers set."""
    pio.renderers[RENDERER] = PictureRenderer()
    shown = pio.renderers.default or "plotly_mimetype"
    if RENDERER not in shown.split("+"):
        pio.renderers.default = f"{shown}+{RENDERER}"
    return pio.renderers.default


class PictureRenderer(MimetypeRenderer):
    """image/png through kaleido where it is installed (and finds a Chrome), else image/svg+xml from figure_svg."""

    def to_mimebundle(self, fig_dict):
        try:
            png = pio.to_image(fig_dict, format="png")
        except Exception:  # noqa: BLE001 - no kaleido, or no browser for it: the sketch below needs neither
            return {"image/svg+xml": figure_svg(fig_dict)}
        return {"image/png": base64.b64encode(png).decode()}


def _values(value) -> np.ndarray:
    """A trace's array: a list, a numpy array, or plotly's typed array {"dtype", "bdata"}."""
    if isinstance(value, Mapping) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value if value is not None else [])


def _text(value) -> str:
    """A title as text: plotly's {"text": ...} or a string, its markup tags dropped."""
    if isinstance(value, Mapping):
        value = value.get("text")
    if not value:
        return ""
    out, inside = [], False
    for char in str(value).replace("<br>", " "):
        inside = char == "<" or (inside and char != ">")
        if not inside and char != ">":
            out.append(char)
    return html.escape("".join(out))


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten) in [low, high]."""
    if not np.isfinite(low) or not np.isfinite(high) or high <= low:
        return [low] if np.isfinite(low) else []
    raw = (high - low) / count
    step = next(m * 10 ** np.floor(np.log10(raw)) for m in (1, 2, 5, 10) if m * 10 ** np.floor(np.log10(raw)) >= raw)
    return [float(t) + 0.0 for t in np.arange(np.ceil(low / step) * step, high + step * 1e-9, step)]  # no "-0"


def _span(values: Sequence[float], given) -> tuple[float, float]:
    if given is not None and len(given) == 2:
        return float(given[0]), float(given[1])
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    pad = (high - low) * 0.05 or 0.5
    return low - pad, high + pad


def _colours(marker: Mapping, count: int, fallback: str) -> list[str]:
    """One colour per point: the marker's colour, or its numbers through its colorscale."""
    colour = marker.get("color")
    if colour is None or isinstance(colour, str):
        return [colour or fallback] * count
    values = _values(colour)
    if values.dtype.kind not in "iuf":
        return [str(c) for c in values]
    scale = marker.get("colorscale") or "Viridis"
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    spread = np.nan_to_num((values - low) / (high - low)) if high > low else np.zeros(len(values))
    return sample_colorscale(get_colorscale(scale) if isinstance(scale, str) else scale, list(spread))


def _bar(horizontal: bool, start: float, end: float, i: int, band: float, px, py, top: float, left: float) -> str:
    """A bar's rectangle from ``start`` to ``end`` in category ``i`` (of ``band`` px each)."""
    if horizontal:
        x0, x1, y0, y1 = px(start), px(end), top + (i + 0.15) * band, top + (i + 0.85) * band
    else:
        x0, x1, y0, y1 = left + (i + 0.15) * band, left + (i + 0.85) * band, py(end), py(start)
    return f"x='{min(x0, x1):.1f}' y='{min(y0, y1):.1f}' width='{abs(x1 - x0):.1f}' height='{abs(y1 - y0):.1f}'"


def figure_svg(figure, width: int = 760) -> str:
    """An SVG sketch of a figure (a plotly Figure or its dict): its bars (horizontal or vertical, stacked), lines and
    markers on its first axes, with tick labels, axis titles and the title."""
    spec = figure.to_dict() if hasattr(figure, "to_dict") else figure
    layout, traces = spec.get("layout", {}), [t for t in spec.get("data", []) if t.get("visible", True) is True]
    height = int(layout.get("height") or 450)
    width = int(layout.get("width") or width)
    margin = {"l": 110, "r": 20, "t": 50, "b": 60}
    left, top, right, bottom = margin["l"], margin["t"], width - margin["r"], height - margin["b"]
    xaxis, yaxis = layout.get("xaxis", {}), layout.get("yaxis", {})

    bars = [t for t in traces if t.get("type") == "bar"]
    horizontal = bool(bars) and bars[0].get("orientation") == "h"
    categories: list[str] = []
    for bar in bars:
        for name in (bar.get("y") if horizontal else bar.get("x")) or []:
            if str(name) not in categories:
                categories.append(str(name))
    stacked = layout.get("barmode") == "stack"
    totals = np.zeros(len(categories))
    for bar in bars:
        lengths = _values(bar.get("x") if horizontal else bar.get("y")).astype(float)
        totals = totals + lengths if stacked else np.maximum(totals, lengths)
    scatters = [t for t in traces if t.get("type") == "scatter"]
    scatter_x = np.concatenate([_values(t.get("x")).astype(float) for t in scatters] or [[]])
    scatter_y = np.concatenate([_values(t.get("y")).astype(float) for t in scatters] or [[]])
    if bars:
        given = (xaxis if horizontal else yaxis).get("range")
        value_span = _span([0.0, *totals], given) if given else (0.0, float(max(totals.max(initial=0.0), 1e-12)))
        x_span, y_span = (value_span, (0.0, 1.0)) if horizontal else ((0.0, 1.0), value_span)
    else:
        x_span, y_span = _span(scatter_x, xaxis.get("range")), _span(scatter_y, yaxis.get("range"))

    def px(x: float) -> float:
        return left + (x - x_span[0]) / (x_span[1] - x_span[0]) * (right - left)

    def py(y: float) -> float:
        return bottom - (y - y_span[0]) / (y_span[1] - y_span[0]) * (bottom - top)

    parts = [f"<rect x='0' y='0' width='{width}' height='{height}' fill='white'/>",
             f"<rect x='{left}' y='{top}' width='{right - left}' height='{bottom - top}' fill='none' "
             "stroke='#ccc'/>"]
    band = (bottom - top) / max(len(categories), 1) if horizontal else (right - left) / max(len(categories), 1)
    offsets = np.zeros(len(categories))
    for k, bar in enumerate(bars):
        lengths = _values(bar.get("x") if horizontal else bar.get("y")).astype(float)
        names = [str(n) for n in (bar.get("y") if horizontal else bar.get("x")) or []]
        colours = _colours(bar.get("marker", {}), len(lengths), DEFAULT_COLOURS[k % len(DEFAULT_COLOURS)])
        for name, length, colour in zip(names, lengths, colours):
            i = categories.index(name)
            if horizontal and yaxis.get("autorange") != "reversed":  # plotly draws the first category at the bottom
                i = len(categories) - 1 - i
            start = offsets[categories.index(name)] if stacked else 0.0
            parts.append(f"<rect class='bar' {_bar(horizontal, start, start + length, i, band, px, py, top, left)} "
                         f"fill='{colour}'><title>{html.escape(name)}: {length:g}</title></rect>")
            if stacked:
                offsets[categories.index(name)] += length
    for k, trace in enumerate(scatters):
        xs, ys = _values(trace.get("x")).astype(float), _values(trace.get("y")).astype(float)
        mode = trace.get("mode") or ("lines+markers" if len(xs) < 20 else "lines")
        fallback = DEFAULT_COLOURS[k % len(DEFAULT_COLOURS)]
        if "lines" in mode and len(xs) > 1:
            line = trace.get("line", {})
            points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys) if np.isfinite(x) and np.isfinite(y))
            parts.append(f"<polyline class='line' points='{points}' fill='none' "
                         f"stroke='{line.get('color') or fallback}' stroke-width='{line.get('width') or 2}' "
                         f"opacity='{trace.get('opacity', 1)}'/>")
        if "markers" in mode:
            marker = trace.get("marker", {})
            size = marker.get("size") if isinstance(marker.get("size"), int | float) else 6
            hollow = "open" in str(marker.get("symbol", ""))  # a ring: drawn in its colour, not filled
            for x, y, colour in zip(xs, ys, _colours(marker, len(xs), fallback)):
                if np.isfinite(x) and np.isfinite(y):
                    paint = f"fill='none' stroke='{colour}' stroke-width='2.5'" if hollow else f"fill='{colour}'"
                    parts.append(f"<circle class='point' cx='{px(x):.1f}' cy='{py(y):.1f}' r='{size / 2:g}' {paint}/>")

    ticks = []
    if horizontal or not bars:
        for t in _ticks(*x_span):
            label = f"{t:.0%}" if "%" in str(xaxis.get("tickformat", "")) else f"{t:g}"
            ticks.append(f"<text x='{px(t):.1f}' y='{bottom + 18}' text-anchor='middle'>{label}</text>")
    if not horizontal or not bars:
        for t in _ticks(*y_span):
            label = f"{t:.0%}" if "%" in str(yaxis.get("tickformat", "")) else f"{t:g}"
            ticks.append(f"<text x='{left - 6}' y='{py(t) + 4:.1f}' text-anchor='end'>{label}</text>")
    for i, name in enumerate(categories):
        if horizontal and yaxis.get("autorange") != "reversed":
            i = len(categories) - 1 - i
        if horizontal:
            ticks.append(f"<text x='{left - 6}' y='{top + (i + 0.5) * band + 4:.1f}' text-anchor='end'>"
                         f"{html.escape(name)}</text>")
        else:
            ticks.append(f"<text x='{left + (i + 0.5) * band:.1f}' y='{bottom + 18}' text-anchor='middle'>"
                         f"{html.escape(name)}</text>")
    titles = [f"<text x='{left}' y='28' font-size='17' font-weight='bold'>{_text(layout.get('title'))}</text>",
              f"<text x='{(left + right) / 2:.1f}' y='{height - 16}' text-anchor='middle'>"
              f"{_text(xaxis.get('title'))}</text>",
              f"<text transform='translate(18 {(top + bottom) / 2:.1f}) rotate(-90)' text-anchor='middle'>"
              f"{_text(yaxis.get('title'))}</text>"]
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}' {FONT} font-size='13' fill='#2a3f5f'>"
            + "".join(parts) + "<g fill='#444'>" + "".join(ticks) + "</g>" + "".join(titles) + "</svg>")
