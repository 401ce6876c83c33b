"""Figures of the live-training page: loss and gradient-norm curves, next-character bars, exposure bias,
and the "hello" walkthrough's softmax at each position."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.charlm.hello import HelloWalkthrough
from rnnviz.charlm.sample import ExposureBias
from rnnviz.figures import FADED, FONT_SIZE, ON_LIGHT, PALETTE, RULE, house_style, ngram_lines

MAX_POINTS = 300  # per curve: a long run stays light to send and draw
LOG_TICKS = [m * 10.0**e for e in range(-4, 5) for m in (1, 2, 5)]  # 1-2-5 labels, written out in full
LN2 = math.log(2.0)


def downsample(
    x: Sequence[float], y: Sequence[float], max_points: int, how: str = "mean"
) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points: consecutive buckets of equal size, each drawn at its last x with the
    mean (or max) of its y, so that a long history stays light to draw and keeps its shape."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) <= max_points:
        return x, y
    size = math.ceil(len(x) / max_points)
    cut = len(x) // size * size
    reduce = np.max if how == "max" else np.mean
    xs = x[size - 1 : cut : size]
    ys = reduce(y[:cut].reshape(-1, size), axis=1)
    if cut < len(x):  # the last, partial bucket
        xs, ys = np.append(xs, x[-1]), np.append(ys, reduce(y[cut:]))
    return xs, ys


def _shown_char(c: str) -> str:
    """A character as a readable label: whitespace gets a name."""
    return {"\n": "⏎ newline", " ": "␣ space", "\t": "⇥ tab"}.get(c, c)


def loss_figure(
    steps: Sequence[int],
    train_loss: Sequence[float],
    eval_steps: Sequence[int],
    val_loss: Sequence[float],
    vocab_size: int,
    bits: bool = False,
    seconds: bool = False,
    baselines: Mapping[int, float] | None = None,
) -> go.Figure:
    """Train loss (bucket means) and val loss against the step, with the uniform-guess line ln V.

    With ``seconds`` the x values (``steps``, ``eval_steps``) are seconds of training, the trainer's clock: the
    axis on which models of different speeds compare fairly. ``baselines`` {n: val loss in nats/char} draws what
    an n-gram of the same training text reaches on the same val split, one dotted line each."""
    scale = 1 / LN2 if bits else 1.0
    unit = "bits/char" if bits else "nats/char"
    uniform = math.log(vocab_size) * scale
    fig = go.Figure()
    x, y = downsample(steps, np.asarray(train_loss, dtype=float) * scale, MAX_POINTS)
    where = "%{x:.1f} s" if seconds else "step %{x}"
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="train", line=dict(color=PALETTE["measured"], width=2),
                             hovertemplate=f"{where}: %{{y:.3f}} {unit}<extra>train</extra>"))
    if len(eval_steps):
        fig.add_trace(go.Scatter(x=list(eval_steps), y=np.asarray(val_loss, dtype=float) * scale,
                                 mode="lines+markers", name="val", line=dict(color=PALETTE["highlight"], width=2),
                                 marker=dict(size=7),
                                 hovertemplate=f"{where}: %{{y:.3f}} {unit}<extra>val</extra>"))
    label = f"uniform guess: log₂ V = {uniform:.2f}" if bits else f"uniform guess: ln V = {uniform:.2f}"
    fig.add_hline(y=uniform, line=dict(color=PALETTE["theory"], dash="dash", width=2),
                  annotation_text=label, annotation_position="top right",
                  annotation_font=dict(size=FONT_SIZE - 2, color=PALETTE["theory"]))
    ngram_lines(fig, baselines or {}, scale)
    top = max([uniform, *(y[:1] if len(y) else [])]) * 1.12
    fig.update_yaxes(title_text=f"loss ({unit})", range=[0, top], rangemode="tozero")
    fig.update_xaxes(title_text="seconds of training" if seconds else "step", rangemode="tozero")
    house_style(fig, height=360)
    fig.update_layout(title=dict(text="Loss", x=0.01), legend=dict(orientation="h", x=0.99, xanchor="right", y=1.12))
    return fig


def grad_norm_figure(steps: Sequence[int], grad_norms: Sequence[float], clip: float | None) -> go.Figure:
    """‖∇‖₂ before clipping (bucket maxima, so spikes stay visible) on a log scale, with θ drawn."""
    x, y = downsample(steps, grad_norms, MAX_POINTS, how="max")
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name="‖∇‖", line=dict(color=PALETTE["weight"], width=2),
                               hovertemplate="step %{x}: ‖∇‖ = %{y:.3g}<extra></extra>"))
    if clip is not None:
        fig.add_hline(y=clip, line=dict(color=PALETTE["input"], dash="dash", width=2),
                      annotation_text=f"clipping threshold θ = {clip:g}", annotation_position="top right",
                      annotation_font=dict(size=FONT_SIZE - 2, color=PALETTE["input"]))
    fig.update_yaxes(title_text="‖∇‖₂ before clipping", type="log", tickvals=LOG_TICKS,
                     ticktext=[f"{v:g}" for v in LOG_TICKS])
    fig.update_xaxes(title_text="step", rangemode="tozero")
    house_style(fig, height=360)
    fig.update_layout(title=dict(text="Gradient norm", x=0.01), showlegend=False)
    return fig


def next_char_figure(chars: Sequence[str], probs: Sequence[float], actual: str | None = None) -> go.Figure:
    """The most likely next characters as bars, the one that really came next highlighted."""
    labels = [_shown_char(c) for c in chars]
    colours = [PALETTE["highlight"] if c == actual else PALETTE["output"] for c in chars]
    fig = go.Figure(go.Bar(x=labels, y=list(probs), marker_color=colours, text=[f"{p:.2f}" for p in probs],
                           textposition="outside", cliponaxis=False,
                           hovertemplate="%{x}: p = %{y:.4f}<extra></extra>"))
    top = max(0.25, float(max(probs, default=0)) * 1.25)
    fig.update_yaxes(title_text="p(next character)", range=[0, top])
    fig.update_xaxes(type="category")
    house_style(fig, height=320)
    fig.update_layout(showlegend=False, bargap=0.3)
    return fig


def exposure_bias_figure(result: ExposureBias) -> go.Figure:
    """Loss per position after the prefix: fed the true text against fed its own output."""
    n = len(result.target)
    positions = np.arange(1, n + 1)
    fig = go.Figure()
    for values, name, colour in ((result.teacher_forced, "teacher-forced (reads the true text)", PALETTE["output"]),
                                 (result.free_running, "free-running (reads its own output)", PALETTE["input"])):
        running = np.cumsum(values) / positions
        fig.add_trace(go.Scatter(x=positions, y=running, mode="lines", name=name, line=dict(color=colour, width=3),
                                 hovertemplate="after %{x} characters: mean %{y:.3f} nats/char<extra></extra>"))
    fig.update_xaxes(title_text="characters after the prefix")
    fig.update_yaxes(title_text="mean loss so far (nats/char)", rangemode="tozero")
    house_style(fig, height=340)
    fig.update_layout(legend=dict(orientation="h", y=1.15, x=0))
    return fig


def hello_softmax_figure(walk: HelloWalkthrough) -> go.Figure:
    """One panel per position: p_t over {e, h, l, o}, the target's bar highlighted and −ln p written above."""
    steps = len(walk.inputs)
    titles = [f"x = '{x}' → target '{y}'<br>−ln p = {loss:.3f}"
              for x, y, loss in zip(walk.inputs, walk.targets, walk.losses)]
    fig = make_subplots(rows=1, cols=steps, subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.04)
    for t in range(steps):
        colours = [PALETTE["highlight"] if c == walk.targets[t] else PALETTE["muted"] for c in walk.vocab]
        fig.add_trace(go.Bar(x=list(walk.vocab), y=walk.probs[t], marker_color=colours,
                             text=[f"{p:.2f}" for p in walk.probs[t]], textposition="outside", cliponaxis=False,
                             hovertemplate="p(%{x}) = %{y:.4f}<extra></extra>"), row=1, col=t + 1)
    fig.update_yaxes(range=[0, 1.18])
    fig.update_yaxes(title_text="p_t = softmax(z_t)", row=1, col=1)
    house_style(fig, height=330)
    fig.update_layout(showlegend=False, margin=dict(t=80))
    fig.update_annotations(font=dict(size=FONT_SIZE - 1))
    return fig


def latex_matrix(
    values: np.ndarray, highlight_column: int | None = None, digits: int = 2, highlight_row: int | None = None
) -> str:
    """A bmatrix of numbers (a 1-D array is a column), one column or row drawn in the highlight colour."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    colour = PALETTE["highlight"]
    rows = []
    for i, row in enumerate(values):
        cells = []
        for j, v in enumerate(row):
            cell = f"{v:.{digits}f}"
            lit = j == highlight_column or i == highlight_row
            cells.append(rf"\color{{{colour}}}{{{cell}}}" if lit else cell)
        rows.append(" & ".join(cells))
    return r"\begin{bmatrix}" + r" \\ ".join(rows) + r"\end{bmatrix}"


def context_html(text: str, position: int, before: int = 80, after: int = 30) -> str:
    """The text around ``position`` as HTML: that character highlighted (near-black on orange: white on it was
    2.5:1), what follows faded in the theme's own text colour.

    Every piece of text is escaped with html.escape, and the colours are constants, so user text can never
    become markup."""
    start = max(0, position - before)
    shown = _shown_char(text[position]).split(" ")[0] if text[position] in "\n \t" else text[position]
    return (
        '<div style="font-family: monospace; font-size: 1.05rem; white-space: pre-wrap; line-height: 1.5; '
        f'border: 1px solid {RULE}; border-radius: 6px; padding: 0.5rem 0.75rem;">'
        f'{"…" if start > 0 else ""}{html.escape(text[start:position])}'
        f'<span style="background: {PALETTE["highlight"]}; color: {ON_LIGHT}; border-radius: 3px; '
        f'padding: 0 2px;">{html.escape(shown)}</span>'
        f'<span style="{FADED};">{html.escape(text[position + 1 : position + 1 + after])}</span>'
        "</div>"
    )


def training_text_html(text: str, inside: int, training: str) -> str:
    """A sample as HTML, split where it leaves the training text: the first ``inside`` characters (found in
    ``training``) on green, the rest on red with a marker at the boundary, and a legend in words.

    Every piece of text is escaped with html.escape and the colours are constants, so user text can never
    become markup."""
    def tinted(part: str, colour: str) -> str:
        return (f'<span style="background: {colour}22; border-bottom: 3px solid {colour}; padding: 1px 0;">'
                f"{html.escape(part)}</span>") if part else ""

    left = text[inside:]
    marker = (f'<span style="color: {PALETTE["input"]}; font-weight: bold;" title="leaves the training text">'
              "▏</span>") if left else ""
    legend = (f'in the training text “{html.escape(training)}”' if len(training) <= 40
              else "in the training text")
    return (
        '<div style="font-family: monospace; font-size: 1.05rem; white-space: pre-wrap; word-break: break-all; '
        'line-height: 1.7;">'
        f'{tinted(text[:inside], PALETTE["hidden"])}{marker}{tinted(left, PALETTE["input"])}</div>'
        f'<div style="font-size: 0.85rem; {FADED}; margin-top: 2px;">'
        f'<span style="border-bottom: 3px solid {PALETTE["hidden"]};">{legend}</span> · '
        f'<span style="border-bottom: 3px solid {PALETTE["input"]};">past it: never seen in training</span></div>'
    )
