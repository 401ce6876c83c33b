"""Text coloured by one cell's activation, as safe HTML: one span per character on a diverging scale.

Safety: every character and every tooltip goes through ``html.escape``, and the only markup is built here
from numbers (the rgb() colours, positions and font sizes), so a text can never inject markup or script.
Whitespace stays visible: a space is drawn as ·, a tab as →, a newline as ↵ before the line break, and
other control characters as their Unicode control pictures.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# A blue–white–red diverging scale (ColorBrewer RdBu ends): below the centre blue, above it red.
NEGATIVE = (33, 102, 172)
CENTRE = (247, 247, 247)
POSITIVE = (178, 24, 43)
TEXT_DARK, TEXT_LIGHT = (34, 34, 34), (255, 255, 255)
WHITESPACE_GLYPH = (140, 140, 140)

VISIBLE = {" ": "·", "\t": "→", "\n": "↵"}
NAMED = {" ": "space", "\t": "tab", "\n": "newline"}


@dataclass(frozen=True)
class Scale:
    """A diverging colour scale: ``low`` is full blue, ``centre`` white, ``high`` full red."""

    low: float
    centre: float
    high: float

    def __post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.centre < self.high):
            raise ValueError(f"a scale needs low < centre < high, got {self.low}, {self.centre}, {self.high}")

    def position(self, value: float) -> float:
        """−1 at low (or below), 0 at the centre, +1 at high (or above)."""
        if not math.isfinite(value):
            return 0.0
        if value >= self.centre:
            return min((value - self.centre) / (self.high - self.centre), 1.0)
        return max((value - self.centre) / (self.centre - self.low), -1.0)


def scale_for(quantity: str, values: np.ndarray) -> Scale:
    """The colour range of a quantity: gates (0, 1) centred on 0.5, h and candidates (−1, 1) centred on 0.

    The cell state c_t is unbounded and often sits far from 0 (a counter may run from −30 to 0), so it
    is coloured over its own range in the text, from its minimum (blue) through the midpoint (white) to its
    maximum (red); the legend prints the three numbers.
    """
    if quantity in ("i", "f", "o", "r", "z"):
        return Scale(0.0, 0.5, 1.0)
    if quantity in ("h", "g", "n"):
        return Scale(-1.0, 0.0, 1.0)
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    if high - low < 1e-6:
        low, high = low - 1.0, high + 1.0
    return Scale(low, 0.5 * (low + high), high)


def rgb(position: float) -> tuple[int, int, int]:
    """The colour at a scale position in [−1, 1]."""
    end = POSITIVE if position >= 0 else NEGATIVE
    w = min(abs(position), 1.0)
    return tuple(int(round(c + (e - c) * w)) for c, e in zip(CENTRE, end))


def _text_colour(background: tuple[int, int, int]) -> tuple[int, int, int]:
    r, g, b = background
    luminance = (0.299 * r + 0.587 * g + 0.114 * b) / 255
    return TEXT_LIGHT if luminance < 0.55 else TEXT_DARK


def visible_char(ch: str) -> str:
    """How a character is drawn: whitespace and control characters as visible symbols."""
    if ch in VISIBLE:
        return VISIBLE[ch]
    code = ord(ch)
    if code < 32:
        return chr(0x2400 + code)  # ␀…␟, the Unicode control pictures
    if code == 127:
        return "\u2421"
    return ch


def describe_char(ch: str) -> str:
    """A character as a tooltip names it: 'a', space, newline, U+000C."""
    if ch in NAMED:
        return NAMED[ch]
    if ord(ch) < 32 or ord(ch) == 127:
        return f"U+{ord(ch):04X}"
    return f"'{ch}'"


def _style(background: tuple[int, int, int], foreground: tuple[int, int, int]) -> str:
    return f"background:rgb{background};color:rgb{foreground}"


def colored_text_html(
    text: str,
    values: Sequence[float] | np.ndarray,
    scale: Scale,
    tooltips: Sequence[str] | None = None,
    font_size: int = 15,
) -> str:
    """One ``<span>`` per character of ``text``, its background the colour of ``values[t]`` on ``scale``.

    ``tooltips[t]`` (plain text, escaped here) becomes the span's title. The result is a single line of
    HTML (no raw newlines), monospace, wrapping long lines, with newlines shown as ↵ and a line break.
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) != len(text):
        raise ValueError(f"{len(text)} characters but {len(values)} values")
    if tooltips is not None and len(tooltips) != len(text):
        raise ValueError(f"{len(text)} characters but {len(tooltips)} tooltips")
    parts = [
        f'<div style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:{int(font_size)}px;'
        'line-height:1.55;white-space:pre-wrap;word-break:break-all">'
    ]
    for t, ch in enumerate(text):
        background = rgb(scale.position(float(values[t])))
        foreground = WHITESPACE_GLYPH if (ch in VISIBLE and _text_colour(background) == TEXT_DARK) \
            else _text_colour(background)
        title = f' title="{html.escape(tooltips[t], quote=True)}"' if tooltips is not None else ""
        glyph = html.escape(visible_char(ch), quote=True)
        parts.append(f'<span style="{_style(background, foreground)}"{title}>{glyph}</span>')
        if ch == "\n":
            parts.append("<br>")
    parts.append("</div>")
    return "".join(parts)


def legend_html(scale: Scale, label: str, steps: int = 11) -> str:
    """A colour bar from ``scale.low`` to ``scale.high`` with the three values written under it."""
    swatches = "".join(
        f'<span style="display:inline-block;width:22px;height:14px;background:rgb{rgb(p)}"></span>'
        for p in np.linspace(-1.0, 1.0, steps)
    )
    width = 22 * steps
    numbers = (
        f'<div style="display:flex;justify-content:space-between;width:{width}px;font-size:13px">'
        f"<span>{scale.low:.3g}</span><span>{scale.centre:.3g}</span><span>{scale.high:.3g}</span></div>"
    )
    return (
        f'<div style="margin:4px 0 8px 0"><div style="font-size:13px">{html.escape(label)}</div>'
        f'<div style="line-height:0">{swatches}</div>{numbers}</div>'
    )


def cell_tooltips(
    text: str,
    values: np.ndarray,
    quantity: str,
    next_chars: Sequence[Sequence[str]],
    next_probs: np.ndarray,
    offset: int = 0,
) -> list[str]:
    """Per character: its position, the exact value, and the top next-character predictions after it."""
    tips = []
    for t, ch in enumerate(text):
        guesses = ", ".join(f"{describe_char(c)} {p:.0%}" for c, p in zip(next_chars[t], next_probs[t]))
        tips.append(f"position {offset + t}: {describe_char(ch)}\n{quantity} = {values[t]:+.4f}\nnext: {guesses}")
    return tips
