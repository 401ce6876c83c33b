"""The prediction strip (after Karpathy's "The Unreasonable Effectiveness of Recurrent Neural Networks"): a
passage with, under every character, the model's top guesses for it, as safe HTML.

Each character is a column: on top the character, its background the surprisal −log p(x_t | x_<t) (white when the
model was sure of it, dark red when it was surprised); under it the k characters the model thought most likely at
that place, before reading it, each shaded by its probability (white 0 to dark blue 1), the true one bold and
underlined when it is among them. Every character and tooltip goes through ``html.escape``; the only markup is
built here from numbers.
"""

from __future__ import annotations

import html
import math

import numpy as np

from rnnviz.interpret.colortext import (
    BLUES,
    REDS,
    Scale,
    describe_char,
    legend_html,
    text_colour_on,
    visible_char,
)
from rnnviz.interpret.surprisal import Predictions

# Surprisal of 0 nats (certain) is white; from this many nats on (p ≤ 1.8%) the darkest red.
SURPRISAL_TOP = 4.0
SURPRISAL_SCALE = Scale(0.0, SURPRISAL_TOP / 2, SURPRISAL_TOP, sequential=True, ramp=REDS)
PROBABILITY_SCALE = Scale(0.0, 0.5, 1.0, sequential=True, ramp=BLUES)
NO_PREDICTION = (238, 238, 238)  # the first character: the model has read nothing yet


def _cell(glyph: str, background: tuple[int, int, int], extra: str = "") -> str:
    foreground = text_colour_on(background)
    return (f'<span style="background:rgb{background};color:rgb{foreground};padding:0 1px;{extra}">'
            f"{html.escape(glyph, quote=True)}</span>")


def column_tooltip(predictions: Predictions, chars: str, t: int, text: str) -> str:
    """Plain text: the position, the character, its surprisal and probability, its rank, and the guesses."""
    head = f"position {t}: {describe_char(text[t])}"
    if t == 0 or math.isnan(predictions.surprisal[t]):
        return f"{head}\nno prediction: the model has read nothing yet"
    s = float(predictions.surprisal[t])
    guesses = ", ".join(f"{describe_char(chars[i])} {p:.0%}"
                        for i, p in zip(predictions.guess_ids[t], predictions.guess_probs[t]) if i >= 0)
    return (f"{head}\nsurprisal {s:.2f} nats ({s / math.log(2):.2f} bits), p = {math.exp(-s):.1%}, "
            f"rank {int(predictions.rank[t])}\nguesses: {guesses}")


def strip_html(text: str, predictions: Predictions, chars: str, start: int, end: int, font_size: int = 14) -> str:
    """Characters ``start`` … ``end − 1`` of ``text`` as columns (see the module docstring); ``chars`` is the
    model's vocabulary (id → character). A newline ends its column's line, as in the text."""
    if len(text) != predictions.length:
        raise ValueError(f"{len(text)} characters but predictions for {predictions.length}")
    if not 0 <= start < end <= len(text):
        raise ValueError(f"the window {start}…{end} is outside the text's {len(text)} characters")
    parts = [f'<div style="display:flex;flex-wrap:wrap;gap:6px 1px;align-items:flex-start;'
             f'font-family:ui-monospace,Menlo,Consolas,monospace;font-size:{int(font_size)}px;line-height:1.35">']
    for t in range(start, end):
        ch = text[t]
        predicted = t > 0 and not math.isnan(predictions.surprisal[t])
        top = SURPRISAL_SCALE.colour(float(predictions.surprisal[t])) if predicted else NO_PREDICTION
        cells = [_cell(visible_char(ch), top, "font-weight:600")]
        for i, p in zip(predictions.guess_ids[t], predictions.guess_probs[t]):
            if i < 0:
                cells.append(_cell(" ", (255, 255, 255), "opacity:0"))
                continue
            mark = "font-weight:700;text-decoration:underline" if int(i) == int(predictions.ids[t]) else ""
            cells.append(_cell(visible_char(chars[int(i)]), PROBABILITY_SCALE.colour(float(p)),
                               f"font-size:{int(font_size) - 2}px;{mark}"))
        tip = html.escape(column_tooltip(predictions, chars, t, text), quote=True)
        parts.append(f'<div title="{tip}" style="display:flex;flex-direction:column;min-width:1.25em;'
                     f'text-align:center">{"".join(cells)}</div>')
        if ch == "\n":
            parts.append('<div style="flex-basis:100%;height:0"></div>')
    parts.append("</div>")
    return "".join(parts)


def legends_html(observed: np.ndarray) -> str:
    """The two colour legends of the strip, with the surprisal range the passage really takes."""
    finite = observed[np.isfinite(observed)]
    seen = (float(finite.min()), float(finite.max())) if finite.size else None
    return ('<div style="display:flex;flex-wrap:wrap;gap:0 32px">'
            + legend_html(SURPRISAL_SCALE, "Top row: the character, coloured by surprisal −log p (nats)",
                          observed=seen, meaning=f"white: the model was sure of it; dark red: p ≤ "
                          f"{math.exp(-SURPRISAL_TOP):.1%}")
            + legend_html(PROBABILITY_SCALE, "Under it: the model's top guesses for that place, by probability",
                          meaning="underlined: the character that came")
            + "</div>")
