"""Figures of the hidden-state page: carried state as heat strips (images), carried bytes against t, attention of
one position, memory-probe accuracy against k, the loss against the context read, and connectivity (how much one
prediction depends on each earlier character)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from rnnviz.figures import FADED, ON_LIGHT, PALETTE, house_style
from rnnviz.interpret.colortext import visible_char
from rnnviz.interpret.connectivity import Connectivity, MeanConnectivity
from rnnviz.interpret.hidden_state import Carried, ProbeCurve

MODEL_COLOURS = {"rnn": PALETTE["input"], "lstm": PALETTE["hidden"], "gru": PALETTE["weight"],
                 "mingru": "#9d755d", "transformer": PALETTE["output"],  # minGRU brown: orange marks t
                 # the state kinds, dark enough for a thin line on white (3:1 or more)
                 "slstm": "#2f8f8a", "mlstm": "#d6337a", "selective": "#a67c00", "linear_attention": "#6b4fbb"}
# Heat strips of what each model carries: plotly's RdBu_r (blue −, white 0, red +), stops evenly spaced.
RDBU_R = np.array([[int(x) for x in c[4:-1].split(",")] for c in plotly.colors.sequential.RdBu_r], dtype=float)
BLUES = np.array([[int(x) for x in c[4:-1].split(",")] for c in plotly.colors.sequential.Blues], dtype=float)
MISSING_RGB = (225, 225, 225)
STRIP_WIDTH_PX = 480  # about a column's width when four models sit in two rows of two
STRIP_BLOCK_PX = 40  # a K or V cache keeps about this height whatever t: one row per position, thinner as t grows
VECTOR_PX = 18  # the height of a strip of one vector (h_t, c_t)
MATRIX_PX = 120  # a matrix memory (C, S, s) keeps about this height, at most VECTOR_PX a row
TABLE_PX = 800  # the columns of an attention table share about this width (each 10–36 px)


def _colour(name: str) -> str:
    """A line's colour from the kind its name starts with: "LSTM [h_t; c_t]", "Linear attention" …"""
    named = name.lower().replace(" ", "_")
    return next((c for kind, c in MODEL_COLOURS.items() if named.startswith(kind)), PALETTE["theory"])


@dataclass(frozen=True)
class Strip:
    """One carried tensor as an image: a row of pixels per vector (h, c), per cached position (K, V), or per row of
    a matrix as ``plotted`` lays it out (a matrix memory, the selective SSM's s, a convolution's inputs)."""

    label: str  # what it is and the |value| that its colours are scaled to: "h (layer 1) · max |·| 0.98"
    image: np.ndarray  # (height px, width px, 3) uint8
    cell: tuple[int, int] = (1, 1)  # (height, width) in pixels of one value's block: image[::h, ::w] has one each
    scaled: np.ndarray | None = None  # the values the colours stand for, over the peak (−1 … 1), one per block


def diverging_rgb(scaled: np.ndarray) -> np.ndarray:
    """Values in [−1, 1] to RGB (uint8) on plotly's RdBu_r: −1 dark blue, 0 near white, +1 dark red; NaN grey."""
    pos = (np.clip(np.nan_to_num(scaled), -1, 1) + 1) / 2 * (len(RDBU_R) - 1)  # 0 … 10
    low = np.minimum(pos.astype(int), len(RDBU_R) - 2)
    frac = (pos - low)[..., None]
    rgb = RDBU_R[low] * (1 - frac) + RDBU_R[low + 1] * frac
    rgb[np.isnan(scaled)] = MISSING_RGB
    return np.rint(rgb).astype(np.uint8)


def carried_strips(carried: Carried, width_px: int = STRIP_WIDTH_PX, block_px: int = STRIP_BLOCK_PX) -> list[Strip]:
    """Each carried tensor as a heat strip, coloured relative to its own largest |value| (in its label), so a
    small h_t beside a large c_t stays visible: one image row per vector, or one per cached position s of a K
    or V (s = window start…t, top to bottom, each about ``block_px`` tall together), or one per row of a state
    kind's 2-D field (about MATRIX_PX together); about ``width_px`` wide.

    Images, not charts: a step of t swaps four of them, which the browser does at once where it would redraw four
    plotly charts."""
    strips = []
    for tensor in carried.tensors:
        values = np.atleast_2d(tensor.values)  # (1, H) or (t, C)
        peak = float(np.abs(values).max()) or 1.0
        rows, units = values.shape
        unit_px = max(1, -(-width_px // units))  # whole pixels per unit: the image is scaled to its column
        cache = carried.kind == "transformer"  # rows are cached positions, not the rows of a matrix
        if rows == 1:
            row_px = VECTOR_PX
        else:
            row_px = max(1, block_px // rows) if cache else max(2, min(VECTOR_PX, MATRIX_PX // rows))
        image = diverging_rgb(values / peak).repeat(row_px, axis=0).repeat(unit_px, axis=1)
        span = f", s = {carried.window_start}…{carried.t}" if cache and rows > 1 else ""
        strips.append(Strip(f"{tensor.name}{span} · max |·| {peak:.2g}", image, (row_px, unit_px), values / peak))
    return strips


def carried_bytes_figure(curves: dict[str, np.ndarray], text: str) -> go.Figure:
    """Bytes carried into step t+1 against t, one line per model (flat for h_t and c_t, linear for K and V): the
    same for every t, so drawn once per sentence."""
    fig = go.Figure()
    chars = [visible_char(c) for c in text]
    for name, curve in curves.items():
        fig.add_trace(go.Scatter(x=np.arange(len(curve)), y=curve, mode="lines+markers", name=name,
                                 line=dict(color=_colour(name), width=2.5,
                                           dash="dash" if name.lower().startswith("lstm") else "solid"),
                                 marker=dict(size=4),
                                 customdata=chars[: len(curve)],
                                 hovertemplate=f"{name}: %{{y:,}} bytes after '%{{customdata}}' (t = %{{x}})"
                                               "<extra></extra>"))
    flat = {name: int(curve[-1]) for name, curve in curves.items() if len(set(curve.tolist())) == 1}
    if flat:
        fig.add_annotation(x=len(text) - 1, y=max(flat.values()), xanchor="right", yanchor="bottom",
                           showarrow=False, font=dict(size=14),
                           text="flat: " + ", ".join(f"{n} {b:,} bytes" for n, b in flat.items()))
    fig.update_xaxes(title_text="t (characters read − 1)")
    fig.update_yaxes(title_text="bytes carried into t+1", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=1.12))
    return house_style(fig, height=340)


ATTENTION_KEY = ("earlier character s (its position below it); colour: the weight, white 0 … dark blue 1; hover a "
                 "cell for its value")


def attention_cells(weights: np.ndarray, text: str, start: int) -> dict:
    """Attention of one position as plain data: ``columns`` the characters it may read, s = start…t, each as
    [itself, its position where there is room to show it (else ""), how a cell's hover names it]; ``rows`` one per
    (layer, head), each cell as [its colour (white 0, dark blue 1: "rgb(r,g,b)"), its weight]; ``hover`` a cell's
    hover text, with {row}, {column} and {value} in it; ``cell_px`` a cell's width."""
    layers, heads, width = weights.shape
    chars = [visible_char(c) for c in text[start : start + width]]
    columns = [[c, str(start + i) if width <= 40 or i % 4 == 0 else "", f"{c!r} (s = {start + i})"]
               for i, c in enumerate(chars)]
    rows = [{"label": f"layer {layer + 1} head {h + 1}",
             "cells": [[f"rgb({r},{g},{b})", f"{w:.3f}"]
                       for w, (r, g, b) in zip(weights[layer, h], sequential_rgb(weights[layer, h]))]}
            for layer in range(layers) for h in range(heads)]
    return {"columns": columns, "rows": rows, "hover": "{row} reads {column} with weight {value}",
            "cell_px": max(10, min(36, TABLE_PX // width))}


def attention_table(weights: np.ndarray, text: str, start: int) -> str:
    """Attention of one position as an HTML heat table (``attention_cells`` drawn): rows are (layer, head), columns
    the characters it may read, s = start…t, each cell coloured by its weight (white 0, dark blue 1) with the weight
    on hover.

    A table, not a chart: a step of t redraws it, and the browser draws a table of a few hundred cells at once
    where a new plotly chart would be slower. Text is escaped piece by piece; colours are built from numbers only."""
    table = attention_cells(weights, text, start)
    cell = f"padding:0;width:{table['cell_px']}px;height:22px"
    head = "".join(f"<th style='font-weight:normal;padding:0 1px;text-align:center'>{html.escape(c)}"
                   f"{f'<br><small>{position}</small>' if position else ''}</th>"
                   for c, position, _ in table["columns"])
    rows = []
    for row in table["rows"]:
        titles = [table["hover"].format(row=row["label"], column=named, value=value)
                  for (_, _, named), (_, value) in zip(table["columns"], row["cells"])]
        cells = "".join(f"<td title='{html.escape(title)}' style='{cell};background:{rgb}'></td>"
                        for title, (rgb, _) in zip(titles, row["cells"]))
        rows.append(f"<tr><th style='font-weight:normal;text-align:right;white-space:nowrap;padding-right:6px'>"
                    f"{row['label']}</th>{cells}</tr>")
    # Cells apart by a gap (border-spacing), not a white border, so the grid reads on a light or a dark page.
    return (f"<table style='border-collapse:separate;border-spacing:1px;font-size:14px'>"
            f"<tr><th></th>{head}</tr>{''.join(rows)}</table>"
            f"<div style='font-size:13px;{FADED}'>{ATTENTION_KEY}</div>")


def sequential_rgb(values: np.ndarray) -> list[tuple[int, int, int]]:
    """Weights in [0, 1] to RGB on plotly's Blues (white 0, dark blue 1), as whole numbers."""
    pos = np.clip(np.nan_to_num(values), 0, 1) * (len(BLUES) - 1)
    low = np.minimum(pos.astype(int), len(BLUES) - 2)
    frac = (pos - low)[..., None]
    rgb = np.rint(BLUES[low] * (1 - frac) + BLUES[low + 1] * frac).astype(int)
    return [tuple(int(x) for x in row) for row in rgb]


def attended_figure(queries: np.ndarray, weights: np.ndarray, text: str, s: int) -> go.Figure:
    """Who attends to the character at s: rows are (layer, head), columns the later positions t ≥ s whose window
    holds s; each cell is t's weight on s (a column of the attention map, so the row need not sum to 1)."""
    layers, heads, width = weights.shape
    z = weights.reshape(layers * heads, width)
    labels = [f"layer {layer + 1} head {h + 1}" for layer in range(layers) for h in range(heads)]
    chars = [visible_char(text[t]) for t in queries]
    ticks = [f"{c}<br>{t}" if width <= 40 or i % 4 == 0 else c for i, (t, c) in enumerate(zip(queries, chars))]
    fig = go.Figure(go.Heatmap(z=np.round(z, 4), x=list(range(width)), y=labels, zmin=0, zmax=1,
                               colorscale="Oranges", colorbar=dict(title=dict(text="weight"), thickness=12),
                               customdata=np.broadcast_to(np.array(chars), z.shape),
                               hovertemplate=f"%{{y}}: '%{{customdata}}' reads '{visible_char(text[s])}' with weight "
                                             "%{z:.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(width)), ticktext=ticks, tickangle=0,
                     title_text=f"later character t that reads s = {s} (its position below it)")
    fig.update_yaxes(autorange="reversed")
    return house_style(fig, height=120 + 28 * len(labels))


def character_strip(text: str, selected: int | None = None) -> go.Figure:
    """The sentence as one row of clickable characters (a click selects s); ``selected`` is highlighted."""
    n = len(text)
    colours = [PALETTE["highlight"] if i == selected else PALETTE["muted"] for i in range(n)]
    fig = go.Figure(go.Scatter(
        x=list(range(n)), y=[0] * n, mode="markers+text", text=[visible_char(c) for c in text],
        textposition="middle center", textfont=dict(size=15, color="black"),
        marker=dict(size=22, color=colours, symbol="square", line=dict(width=0)),
        hovertemplate="s = %{x}: '%{text}' (click to see who attends to it)<extra></extra>",
    ))
    fig.update_xaxes(visible=False, range=[-0.8, n - 0.2])
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_layout(height=70, margin=dict(l=0, r=0, t=0, b=0), showlegend=False, dragmode=False)
    return fig


def probe_figure(curves: Sequence[ProbeCurve]) -> go.Figure:
    """Held-out probe accuracy against k, one line per feature (dotted: a vector computed at t that the model does
    not carry into t+1), the chance level dashed."""
    fig = go.Figure()
    for curve in curves:
        name = curve.name if curve.carried else f"{curve.name} (computed at t, not carried)"
        fig.add_trace(go.Scatter(x=curve.k, y=curve.accuracy, mode="lines+markers", name=name,
                                 line=dict(color=_colour(curve.name), width=2.5,
                                           dash="solid" if curve.carried else "dot"),
                                 hovertemplate=f"{name}: k = %{{x}}, accuracy %{{y:.2f}}<extra></extra>"))
    if curves:
        chance = np.mean([c.chance for c in curves], axis=0)
        fig.add_trace(go.Scatter(x=curves[0].k, y=chance, mode="lines", name="chance (most common character)",
                                 line=dict(color=PALETTE["theory"], dash="dash")))
    fig.update_xaxes(title_text="k: read the character k steps back", dtick=1)
    fig.update_yaxes(title_text="held-out accuracy", range=[0, 1.02])
    fig.update_layout(legend=dict(orientation="h", y=-0.2, yanchor="top"))
    return house_style(fig, height=460)


def bottleneck_figure(lengths: Sequence[int], losses: dict[str, Sequence[float]], vocab_sizes: Sequence[int],
                      reference: dict[str, float] | None = None) -> go.Figure:
    """Next-character loss against n, the characters read, one line per model; ``reference`` (dotted) is each
    model's loss on the same positions read as it ordinarily reads a text (state carried, or sliding window).
    Dashed: the uniform guess over the V characters, ln V, for each vocabulary size V of the models (one, as a
    rule): a point above it does worse than guessing blindly."""
    fig = go.Figure()
    for vocab_size in sorted(set(vocab_sizes)):
        uniform = math.log(vocab_size)
        fig.add_hline(y=uniform, line=dict(color=PALETTE["theory"], dash="dash", width=2),
                      annotation_text=f"uniform guess: ln V = ln {vocab_size} = {uniform:.3f}",
                      annotation_position="top right", annotation_font=dict(color=PALETTE["theory"]))
    for name, values in losses.items():
        fig.add_trace(go.Scatter(x=list(lengths), y=list(values), mode="lines+markers", name=name,
                                 line=dict(color=_colour(name), width=2.5),
                                 hovertemplate=f"{name}: n = %{{x}}, %{{y:.3f}} nats/char<extra></extra>"))
    for name, value in (reference or {}).items():
        fig.add_trace(go.Scatter(x=[min(lengths), max(lengths)], y=[value, value], mode="lines",
                                 name=f"{name}, ordinary reading", line=dict(color=_colour(name), dash="dot"),
                                 hovertemplate=f"{name}, ordinary reading: {value:.3f} nats/char<extra></extra>"))
    fig.update_xaxes(title_text="n: characters read (log scale)", type="log", tickmode="array",
                     tickvals=list(lengths), ticktext=[str(n) for n in lengths])
    fig.update_yaxes(title_text="next-character loss (nats/char)")
    # The legend below the plot: at its right it took 220 of a phone's 358 px.
    fig.update_layout(legend=dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left"))
    return house_style(fig, height=460)


def connectivity_figure(results: dict[str, Connectivity], kinds: dict[str, str], share: float = 0.01) -> go.Figure:
    """Connectivity against distance, one line per model: ‖∂ log p(x_{t+1}) / ∂ x_s‖ relative to the model's largest,
    at d = t − s characters back (log scale; a point is left out where the norm is exactly 0, before a Transformer's
    context); dashed, the ``share`` of the largest that the page's reach counts as still depending."""
    fig = go.Figure()
    for name, result in results.items():
        relative = result.relative()
        distance = [result.t - s for s in range(result.t + 1) if relative[s] > 0]
        values = [relative[s] for s in range(result.t + 1) if relative[s] > 0]
        fig.add_trace(go.Scatter(x=distance, y=values, mode="lines+markers", name=name,
                                 line=dict(color=MODEL_COLOURS.get(kinds.get(name, ""), PALETTE["theory"]), width=2.5),
                                 marker=dict(size=5),
                                 hovertemplate=f"{name}: %{{x}} characters back, %{{y:.3g}} of its largest"
                                               "<extra></extra>"))
    farthest = max((result.t for result in results.values()), default=0)
    # A line in the legend, not an hline's annotation: plotly places that annotation on a log axis at 10^0.01.
    fig.add_trace(go.Scatter(x=[0, farthest], y=[share, share], mode="lines", name=f"{share:.0%} of the largest",
                             line=dict(color=PALETTE["theory"], dash="dash", width=1.5), hoverinfo="skip"))
    fig.update_xaxes(title_text="d = t − s: characters back from the prediction")
    fig.update_yaxes(title_text="‖∂ log p / ∂ x_s‖, relative (log scale)", type="log", exponentformat="power",
                     dtick=1)
    fig.update_layout(legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0, xanchor="left"))
    return house_style(fig, height=380)


def connectivity_rows(results: dict[str, Connectivity], text: str) -> str:
    """The text read up to t, once per model, each character on a colour for its connectivity relative to the
    model's largest (white 0 … dark blue 1), with the exact norm on hover. Characters are escaped one by one;
    colours are built from numbers only."""
    rows = []
    for name, result in results.items():
        relative = result.relative()
        cells = []
        for s, (value, (r, g, b)) in enumerate(zip(relative, sequential_rgb(relative))):
            ink = "#ffffff" if value > 0.55 else ON_LIGHT
            title = (f"{name}: s = {s} ({visible_char(text[s])}), {result.t - s} back: "
                     f"‖∂ log p / ∂ x_s‖ = {result.norms[s]:.3g} ({value:.1%} of its largest)")
            cells.append(f"<span title='{html.escape(title, quote=True)}' style='background:rgb({r},{g},{b});"
                         f"color:{ink};padding:1px 0'>{html.escape(visible_char(text[s]))}</span>")
        rows.append(f"<div style='margin:2px 0'><span style='display:inline-block;width:110px'>"
                    f"{html.escape(name)}</span>{''.join(cells)}</div>")
    # Wrapped, not scrolled: on a phone the end of the sentence, next to t, is where the colour is.
    return ("<div style='font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;line-height:1.7;"
            "white-space:pre-wrap;word-break:break-all'>" + "".join(rows) + "</div>")


def mean_connectivity_figure(results: dict[str, MeanConnectivity], kinds: dict[str, str],
                             share: float = 0.01) -> go.Figure:
    """Mean relative connectivity against distance over a passage, one line per model: at each d = t − s, the
    mean over the predictions of ‖∂ log p(x_{t+1}) / ∂ x_s‖ relative to that prediction's largest (log scale; a
    point is left out where the mean is exactly 0, beyond a Transformer's context); dashed, ``share``."""
    fig = go.Figure()
    for name, result in results.items():
        mean, median = result.mean(), result.median()
        keep = mean > 0  # False for NaN too
        fig.add_trace(go.Scatter(x=result.distances[keep], y=mean[keep], mode="lines", name=name,
                                 line=dict(color=MODEL_COLOURS.get(kinds.get(name, ""), PALETTE["theory"]), width=2.5),
                                 customdata=median[keep],
                                 hovertemplate=f"{name}: %{{x}} characters back, mean %{{y:.3g}} of its largest "
                                               "(median %{customdata:.3g})<extra></extra>"))
    farthest = max((int(result.distances[-1]) for result in results.values()), default=0)
    fig.add_trace(go.Scatter(x=[0, farthest], y=[share, share], mode="lines", name=f"{share:.0%} of the largest",
                             line=dict(color=PALETTE["theory"], dash="dash", width=1.5), hoverinfo="skip"))
    fig.update_xaxes(title_text="d = t − s: characters back from the prediction")
    fig.update_yaxes(title_text="mean relative ‖∂ log p / ∂ x_s‖ (log scale)", type="log", exponentformat="power",
                     dtick=1)
    # The legend below the plot: at its right it takes most of a phone's width.
    fig.update_layout(legend=dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left"))
    return house_style(fig, height=440)
