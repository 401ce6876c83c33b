"""Figures of the hidden-cell explorer: units × time heatmap, pattern cells as lines, ablation importance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import PALETTE, house_style
from rnnviz.interpret import colortext
from rnnviz.interpret.colortext import Scale, visible_char
from rnnviz.interpret.finder import QUANTITY_LABELS, CellId, CellTrace


def _char_labels(text: str) -> list[str]:
    return [visible_char(c) for c in text]


def heatmap_figure(
    block: np.ndarray,
    units: Sequence[int],
    text: str,
    offset: int,
    scale: Scale,
    quantity: str,
    sorted_by: str,
) -> go.Figure:
    """Units (rows, in the given order) × characters (columns) of one quantity over a window of the text.

    ``block`` is (T_window, H) for the whole layer; ``units`` picks and orders its rows. The colours are the
    coloured text's (``scale``): diverging with white at 0 for signed values, sequential 0…1 for gates.
    """
    z = np.asarray(block)[:, list(units)].T  # (K, T_window)
    positions = np.arange(offset, offset + z.shape[1])
    chars = np.array(_char_labels(text))
    custom = np.broadcast_to(chars, z.shape)
    fig = go.Figure(go.Heatmap(
        z=np.round(z, 4), x=positions, y=[f"unit {u}" for u in units], customdata=custom,
        colorscale=scale.plotly_colorscale(), zmin=scale.low, zmax=scale.high,
        colorbar=dict(title=dict(text=quantity), thickness=14),
        hovertemplate="%{y} at position %{x} ('%{customdata}'): %{z:.4f}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", title_text=f"unit ({sorted_by})", showticklabels=len(units) <= 40)
    fig.update_xaxes(title_text="position in the text")
    house_style(fig, height=max(260, min(14 * len(units) + 120, 720)))
    return fig


def pattern_lines_figure(
    block: np.ndarray, units: Sequence[int], text: str, offset: int, selected: tuple[int, int], threshold: float,
    max_lines: int = 12,
) -> go.Figure:
    """The chosen cells' values over the window as lines, the selected range shaded, θ dashed."""
    positions = np.arange(offset, offset + len(text))
    chars = _char_labels(text)
    fig = go.Figure()
    for unit in list(units)[:max_lines]:
        fig.add_trace(go.Scatter(
            x=positions, y=np.asarray(block)[:, unit], mode="lines", name=f"unit {unit}", customdata=chars,
            line=dict(width=1.6), hovertemplate=f"unit {unit} at %{{x}} ('%{{customdata}}'): %{{y:.3f}}<extra></extra>",
        ))
    fig.add_vrect(x0=selected[0] - 0.5, x1=selected[1] - 0.5, fillcolor=PALETTE["highlight"], opacity=0.18,
                  line_width=0, annotation_text="selected", annotation_position="top left")
    fig.add_hline(y=threshold, line=dict(color=PALETTE["theory"], dash="dash", width=1.5),
                  annotation_text=f"θ = {threshold:g}", annotation_position="bottom right")
    fig.update_xaxes(title_text="position in the text")
    fig.update_yaxes(title_text="value")
    fig.update_layout(legend=dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left"))  # below: phones
    house_style(fig, height=400)
    return fig


def importance_figure(labels: Sequence[str], deltas: Sequence[float], base_loss: float) -> go.Figure:
    """Horizontal bars: how much the val loss rises when each cell's unit is ablated."""
    order = np.argsort(deltas)  # largest at the top once plotly draws the y axis upwards
    labels = [labels[i] for i in order]
    deltas = [deltas[i] for i in order]
    colours = [PALETTE["input"] if d > 0 else PALETTE["output"] for d in deltas]
    fig = go.Figure(go.Bar(
        x=deltas, y=labels, orientation="h", marker_color=colours, text=[f"{d:+.4f}" for d in deltas],
        textposition="outside", cliponaxis=False, hovertemplate="%{y}: Δ loss %{x:+.4f} nats/char<extra></extra>",
    ))
    fig.add_vline(x=0, line=dict(color="#444", width=1))
    low, high = min(0.0, min(deltas, default=0.0)), max(0.0, max(deltas, default=0.0))
    pad = 0.25 * (high - low or 1e-3)  # room for the printed numbers beside the bars
    fig.update_xaxes(title_text=f"Δ val loss, nats/char (no ablation: {base_loss:.4f})",
                     range=[low - (pad if low < 0 else 0.0), high + pad])
    house_style(fig, height=max(300, 34 * len(labels) + 110))
    fig.update_layout(showlegend=False)
    return fig


MAX_SURPRISAL_DOTS = 1500  # beyond this many characters, a band from each bucket's lowest to its highest
SURPRISAL_BUCKETS = 750
MAX_LINE_POINTS = 1500  # about the figure's width in pixels


@dataclass(frozen=True)
class SurprisalBand:
    """The lowest and highest surprisal of each bucket of ``size`` consecutive known characters: ``centre`` (x),
    ``low`` and ``high``, and ``highest_at``, the position of each bucket's most surprising character."""
    size: int
    centre: np.ndarray
    low: np.ndarray
    high: np.ndarray
    highest_at: np.ndarray


def surprisal_band(values: np.ndarray, buckets: int = SURPRISAL_BUCKETS) -> SurprisalBand:
    """The known (finite) values in at most ``buckets`` runs of equal length, each run's lowest and highest."""
    known = np.flatnonzero(np.isfinite(values))
    size = max(1, -(-len(known) // buckets))
    groups = [known[first:first + size] for first in range(0, len(known), size)]
    return SurprisalBand(size, np.array([g.mean() for g in groups]), np.array([values[g].min() for g in groups]),
                         np.array([values[g].max() for g in groups]),
                         np.array([g[np.argmax(values[g])] for g in groups]))


def surprisal_figure(surprisal: np.ndarray, window: tuple[int, int], smooth: int = 25) -> go.Figure:
    """Surprisal −log p(x_t | x_<t) over the whole passage: each character a faint dot, the mean of ``smooth``
    characters around it as a line (at no more than MAX_LINE_POINTS points), and the window the strip draws
    shaded. A passage longer than MAX_SURPRISAL_DOTS draws a band from the lowest to the highest surprisal of every
    few characters instead of the dots (surprisal_band): the spikes a reader looks for stay, and the browser draws
    two paths instead of 20,000 markers."""
    values = np.asarray(surprisal, dtype=np.float64)
    positions = np.arange(len(values))
    known = np.isfinite(values)
    fig = go.Figure()
    if known.sum() <= MAX_SURPRISAL_DOTS:
        fig.add_trace(go.Scatter(
            x=positions[known], y=values[known], mode="markers", name="one character",
            marker=dict(size=3, color=PALETTE["muted"], opacity=0.5),
            hovertemplate="position %{x}: %{y:.2f} nats<extra></extra>",
        ))
    else:
        band = surprisal_band(values)
        fig.add_trace(go.Scatter(x=band.centre, y=band.low, mode="lines", line=dict(width=0), showlegend=False,
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=band.centre, y=band.high, mode="lines", fill="tonexty", line=dict(width=0.5, color=PALETTE["muted"]),
            fillcolor="rgba(150, 150, 150, 0.35)", name=f"lowest to highest of every {band.size} characters",
            customdata=band.highest_at, hovertemplate="highest near %{x:.0f}: %{y:.2f} nats at %{customdata}"
                                                       "<extra></extra>",
        ))
    if known.sum() >= smooth:
        filled = np.where(known, values, 0.0)
        kernel = np.ones(smooth)
        mean = np.convolve(filled, kernel, "same") / np.maximum(np.convolve(known.astype(float), kernel, "same"), 1)
        step = -(-len(values) // MAX_LINE_POINTS)
        fig.add_trace(go.Scatter(
            x=positions[::step], y=mean[::step], mode="lines", name=f"mean of {smooth} characters",
            line=dict(color=PALETTE["input"], width=2.5), hovertemplate="around %{x}: %{y:.2f} nats<extra></extra>",
        ))
    fig.add_vrect(x0=window[0] - 0.5, x1=window[1] - 0.5, fillcolor=PALETTE["highlight"], opacity=0.18, line_width=0,
                  annotation_text="drawn below", annotation_position="top left")
    fig.update_xaxes(title_text="position in the text")
    fig.update_yaxes(title_text="surprisal, nats", rangemode="tozero")
    fig.update_layout(title="Surprisal over the passage",
                      legend=dict(orientation="h", y=-0.3, yanchor="top", x=0, xanchor="left"))
    house_style(fig, height=300)
    return fig


def ngram_loss_figure(losses: dict[int, float], model_loss: float, model_label: str) -> go.Figure:
    """Bars: the loss of the n-gram of each order on the passage; a line: the model's loss on the same passage."""
    orders = sorted(losses)
    values = [losses[n] for n in orders]
    colours = [PALETTE["output"] if v > model_loss else PALETTE["muted"] for v in values]
    fig = go.Figure(go.Bar(
        x=[f"{n}-gram" for n in orders], y=values, marker_color=colours, name="n-gram (Kneser-Ney)",
        text=[f"{v:.3f}" for v in values], textposition="outside", cliponaxis=False,
        hovertemplate="%{x}: %{y:.3f} nats/char<extra></extra>",
    ))
    fig.add_hline(y=model_loss, line=dict(color=PALETTE["input"], width=3))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=PALETTE["input"], width=3),
                             name=f"{model_label}: {model_loss:.3f}", hoverinfo="skip"))  # the line's legend entry
    fig.update_yaxes(title_text="loss on this passage (nats/char)", rangemode="tozero",
                     range=[0, max([*values, model_loss]) * 1.18])
    fig.update_layout(title="n-grams of the training text against the model, on the same passage",
                      legend=dict(orientation="h", y=-0.15, yanchor="top", x=0, xanchor="left"))
    house_style(fig, height=380)
    return fig


def breakdown_figure(labels: Sequence[str], counts: Sequence[int], colours: Sequence[str]) -> go.Figure:
    """Horizontal bars: how many characters fall in each bucket of the error breakdown, first bucket on top."""
    fig = go.Figure(go.Bar(
        x=list(counts)[::-1], y=list(labels)[::-1], orientation="h", marker_color=list(colours)[::-1],
        text=[f"{c:,}" for c in list(counts)[::-1]], textposition="outside", cliponaxis=False,
        hovertemplate="%{y}: %{x:,} characters<extra></extra>",
    ))
    fig.update_xaxes(title_text="characters", rangemode="tozero", range=[0, max([*counts, 1]) * 1.2])
    fig.update_layout(title="Which characters the difference comes from", showlegend=False)
    house_style(fig, height=60 + 42 * len(labels))
    return fig


def cell_colouring_html(trace: CellTrace, chars: str, text: str, cell: CellId, start: int, end: int) -> str:
    """Characters ``start`` … ``end − 1`` of ``text`` coloured by one cell, under its legend, with a tooltip per
    character: its position, the exact value and, when the trace has them, the model's top next characters
    (``chars``, the vocabulary, names their ids; states read without a model have none). The explorer's colouring
    and rnnviz.api's ``Trace.colour``."""
    values = trace.cell(cell)
    scale = colortext.scale_for(cell.quantity, values)
    next_chars = [[chars[i] for i in row] for row in trace.next_ids[start:end]]
    tips = colortext.cell_tooltips(text[start:end], values[start:end], cell.quantity, next_chars,
                                   trace.next_probs[start:end], offset=start)
    legend = colortext.legend_html(scale, colouring_label(trace, cell, start, end),
                                   observed=(float(np.nanmin(values)), float(np.nanmax(values))))
    return legend + colortext.colored_text_html(text[start:end], values[start:end], scale, tips)


def colouring_label(trace: CellTrace, cell: CellId, start: int, end: int) -> str:
    """The words over the colouring of characters ``start`` … ``end − 1``."""
    hover = "its exact value and the model's top-5 next characters" if trace.next_ids.shape[1] else "its exact value"
    return f"{QUANTITY_LABELS[cell.quantity]}, characters {start:,}–{end - 1:,} (hover a character for {hover})"


def cell_colouring_data(trace: CellTrace, chars: str, text: str, cell: CellId) -> dict:
    """``cell_colouring_html`` of the whole text as plain data, for a browser to draw any window of it: every
    character's glyph, colours and tooltip (colortext.coloured_chars) and the legend's swatches, numbers and words
    (colortext.legend_data); the words over a window are ``colouring_label``'s."""
    values = trace.cell(cell)
    scale = colortext.scale_for(cell.quantity, values)
    next_chars = [[chars[i] for i in row] for row in trace.next_ids]
    tips = colortext.cell_tooltips(text, values, cell.quantity, next_chars, trace.next_probs)
    return {**colortext.coloured_chars(text, values, scale, tips),
            "legend": colortext.legend_data(scale, observed=(float(np.nanmin(values)), float(np.nanmax(values))))}
