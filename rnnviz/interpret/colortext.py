"""Text coloured by one cell's activation, as safe HTML: one span per character.

Two kinds of colour scale, so that a colour always means the same thing:

- **diverging**, for values with a sign (h_t, c_t, and the candidates g_t and n_t): white at exactly 0,
  blue below, red above, symmetric about 0, so that red always means positive and equal depths of colour
  mean equal sizes;
- **sequential**, for the gates (i, f, o, r, z), which live in 0…1: white at 0 (closed) to dark green at 1
  (open).

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

from rnnviz.limits import BIDI_CONTROLS, name_bidi_controls
from rnnviz.style import FADED

# A blue–white–red diverging scale (ColorBrewer RdBu ends): below 0 blue, above it red.
NEGATIVE = (33, 102, 172)
CENTRE = (247, 247, 247)
POSITIVE = (178, 24, 43)
# A white–green sequential scale (ColorBrewer Greens: its lightest, middle and darkest classes).
SEQUENTIAL = ((247, 252, 245), (116, 196, 118), (0, 68, 27))
# Other one-hue ramps, for quantities that are neither a cell nor a gate (ColorBrewer Reds and Blues), so that green
# keeps meaning "a gate's openness" on every page.
REDS = ((255, 245, 240), (251, 106, 74), (103, 0, 13))
BLUES = ((247, 251, 255), (107, 174, 214), (8, 48, 107))
TEXT_DARK, TEXT_LIGHT = (34, 34, 34), (255, 255, 255)
WHITESPACE_GLYPH = (140, 140, 140)

GATES = ("i", "f", "o", "r", "z")  # values in 0…1
BOUNDED = ("h", "g", "n")  # tanh outputs (or a mix of them) in −1…1, unless a ReLU RNN goes beyond

VISIBLE = {" ": "·", "\t": "→", "\n": "↵"}
NAMED = {" ": "space", "\t": "tab", "\n": "newline"}


@dataclass(frozen=True)
class Scale:
    """A colour scale from ``low`` through ``centre`` to ``high``.

    Diverging (the default): ``low`` full blue, ``centre`` white, ``high`` full red. Sequential: ``low``
    white through ``centre`` (the middle shade) to ``high`` dark green.
    """

    low: float
    centre: float
    high: float
    sequential: bool = False  # one hue from low to high, for values that have no sign (the gates)
    ramp: tuple[tuple[int, int, int], ...] = SEQUENTIAL  # sequential only: the light, middle and dark colours

    def __post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.centre < self.high):
            raise ValueError(f"a scale needs low < centre < high, got {self.low}, {self.centre}, {self.high}")

    def position(self, value: float) -> float:
        """Diverging: −1 at low (or below), 0 at the centre, +1 at high (or above). Sequential: 0 at low (or
        below) to 1 at high (or above)."""
        if self.sequential:
            if not math.isfinite(value):
                return 0.0
            return min(max((value - self.low) / (self.high - self.low), 0.0), 1.0)
        if not math.isfinite(value):
            return 0.0
        if value >= self.centre:
            return min((value - self.centre) / (self.high - self.centre), 1.0)
        return max((value - self.centre) / (self.centre - self.low), -1.0)

    def colour(self, value: float) -> tuple[int, int, int]:
        """The colour of a value."""
        position = self.position(value)
        return sequential_rgb(position, self.ramp) if self.sequential else rgb(position)

    def plotly_colorscale(self) -> list[list]:
        """The same scale as plotly's ``colorscale`` (from zmin = low to zmax = high)."""
        if self.sequential:
            return [[0.0, f"rgb{self.ramp[0]}"], [0.5, f"rgb{self.ramp[1]}"], [1.0, f"rgb{self.ramp[2]}"]]
        middle = (self.centre - self.low) / (self.high - self.low)
        return [[0.0, f"rgb{NEGATIVE}"], [middle, f"rgb{CENTRE}"], [1.0, f"rgb{POSITIVE}"]]


def scale_for(quantity: str, values: np.ndarray, percentile: float = 100.0) -> Scale:
    """The colour scale of a quantity.

    Gates (i, f, o, r, z): sequential over 0…1. Everything with a sign: diverging, centred on 0 and
    symmetric, so that red means positive and blue negative. h_t and the candidates g_t, n_t span at least
    −1…1 (tanh's range); the cell state c_t is unbounded (a counter may run from −30 to 0), so its scale
    reaches ± its largest |value| in ``values`` (or that ``percentile`` of |value|, for many cells at once,
    where a few extreme ones would otherwise wash out the rest; values beyond it take the end colours).
    """
    if quantity in GATES:
        return Scale(0.0, 0.5, 1.0, sequential=True)
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    largest = float(np.percentile(np.abs(finite), percentile)) if finite.size else 0.0
    if quantity in BOUNDED:
        largest = max(largest, 1.0)
    if largest < 1e-6:
        largest = 1.0
    return Scale(-largest, 0.0, largest)


def rgb(position: float) -> tuple[int, int, int]:
    """The diverging colour at a scale position in [−1, 1]."""
    end = POSITIVE if position >= 0 else NEGATIVE
    w = min(abs(position), 1.0)
    return tuple(int(round(c + (e - c) * w)) for c, e in zip(CENTRE, end))


def sequential_rgb(position: float, ramp: tuple[tuple[int, int, int], ...] = SEQUENTIAL) -> tuple[int, int, int]:
    """The sequential colour at a scale position in [0, 1] on ``ramp`` (light, middle, dark)."""
    w = min(max(position, 0.0), 1.0)
    start, end = (ramp[0], ramp[1]) if w <= 0.5 else (ramp[1], ramp[2])
    w = 2 * w if w <= 0.5 else 2 * w - 1
    return tuple(int(round(c + (e - c) * w)) for c, e in zip(start, end))


def text_colour_on(background: tuple[int, int, int]) -> tuple[int, int, int]:
    r, g, b = background
    luminance = (0.299 * r + 0.587 * g + 0.114 * b) / 255
    return TEXT_LIGHT if luminance < 0.55 else TEXT_DARK


def visible_char(ch: str) -> str:
    """How a character is drawn: whitespace and control characters as visible symbols, and a bidirectional control
    by name (‹U+202E›), since drawn as itself it reverses the characters after it."""
    if ch in VISIBLE:
        return VISIBLE[ch]
    if BIDI_CONTROLS.fullmatch(ch):
        return name_bidi_controls(ch)
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


def char_colours(ch: str, value: float, scale: Scale) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """A character's background (its value's colour) and foreground (text readable on it; whitespace glyphs grey)."""
    background = scale.colour(value)
    foreground = text_colour_on(background)
    return background, WHITESPACE_GLYPH if ch in VISIBLE and foreground == TEXT_DARK else foreground


def hex_colour(colour: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*colour)


def coloured_chars(text: str, values: Sequence[float] | np.ndarray, scale: Scale,
                   tooltips: Sequence[str]) -> dict:
    """What ``colored_text_html`` draws, as plain data for a browser to draw: each character's glyph, the indices
    of its background and foreground in ``palette`` (#rrggbb), its tooltip, and the positions of the newlines (a
    line break after their ↵)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values) == len(tooltips) == len(text):
        raise ValueError(f"{len(text)} characters but {len(values)} values and {len(tooltips)} tooltips")
    palette: dict[str, int] = {}
    backgrounds, foregrounds = [], []
    for t, ch in enumerate(text):
        background, foreground = char_colours(ch, float(values[t]), scale)
        backgrounds.append(palette.setdefault(hex_colour(background), len(palette)))
        foregrounds.append(palette.setdefault(hex_colour(foreground), len(palette)))
    return {"glyphs": [visible_char(ch) for ch in text], "palette": list(palette), "background": backgrounds,
            "foreground": foregrounds, "tips": list(tooltips), "breaks": [t for t, ch in enumerate(text) if ch == "\n"]}


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
        background, foreground = char_colours(ch, float(values[t]), scale)
        title = f' title="{html.escape(tooltips[t], quote=True)}"' if tooltips is not None else ""
        glyph = html.escape(visible_char(ch), quote=True)
        parts.append(f'<span style="{_style(background, foreground)}"{title}>{glyph}</span>')
        if ch == "\n":
            parts.append("<br>")
    parts.append("</div>")
    return "".join(parts)


def number(value: float) -> str:
    """A value as the legend prints it: three significant digits, a true minus sign, 0 as "0"."""
    return "0" if value == 0 else f"{value:.3g}".replace("-", "−")


def legend_colours(scale: Scale, steps: int = 11) -> list[tuple[int, int, int]]:
    """The legend's swatches, from ``scale.low`` to ``scale.high``."""
    positions = np.linspace(0.0, 1.0, steps) if scale.sequential else np.linspace(-1.0, 1.0, steps)
    return [sequential_rgb(p, scale.ramp) if scale.sequential else rgb(p) for p in positions]


def legend_meaning(scale: Scale, observed: tuple[float, float] | None = None, meaning: str | None = None) -> str:
    """The legend's words for what the colours mean, with the range ``observed`` in the text."""
    if meaning is None:
        meaning = ("white 0 (closed) to dark green 1 (open)" if scale.sequential
                   else "white exactly 0, red positive, blue negative")
    if observed is not None and all(math.isfinite(v) for v in observed):
        meaning += f"; in this text from {number(observed[0])} to {number(observed[1])}"
    return meaning


def legend_data(scale: Scale, observed: tuple[float, float] | None = None) -> dict:
    """What ``legend_html`` draws under its label, as plain data: the swatches (#rrggbb), the three numbers and the
    words."""
    return {"swatches": [hex_colour(c) for c in legend_colours(scale)],
            "numbers": [number(scale.low), number(scale.centre), number(scale.high)],
            "meaning": legend_meaning(scale, observed)}


def legend_html(scale: Scale, label: str, steps: int = 11, observed: tuple[float, float] | None = None,
                meaning: str | None = None) -> str:
    """A colour bar from ``scale.low`` to ``scale.high`` with the three values written under it.

    ``observed`` (min, max) adds the range the values actually take, so that a scale of ±3.45 whose values
    never rise above 0.473 says so. ``meaning`` replaces the words that say what the colours mean (a cell's sign,
    or a gate's openness, by default).
    """
    colours = legend_colours(scale, steps)
    swatches = "".join(
        f'<span style="display:inline-block;width:22px;height:14px;background:rgb{c}"></span>' for c in colours
    )
    width = 22 * steps
    numbers = (
        f'<div style="display:flex;justify-content:space-between;width:{width}px;font-size:13px">'
        f"<span>{number(scale.low)}</span><span>{number(scale.centre)}</span><span>{number(scale.high)}</span></div>"
    )
    meaning = legend_meaning(scale, observed, meaning)
    return (
        f'<div style="margin:4px 0 8px 0"><div style="font-size:13px">{html.escape(label)}</div>'
        '<div style="display:flex;align-items:flex-start;gap:14px">'
        f'<div><div style="line-height:0">{swatches}</div>{numbers}</div>'
        f'<div style="font-size:13px;{FADED}">{html.escape(meaning)}</div></div></div>'
    )


def cell_tooltips(
    text: str,
    values: np.ndarray,
    quantity: str,
    next_chars: Sequence[Sequence[str]],
    next_probs: np.ndarray,
    offset: int = 0,
) -> list[str]:
    """Per character: its position, the exact value, and the top next-character predictions after it (none for
    states read from a file without their model: empty ``next_chars``)."""
    tips = []
    for t, ch in enumerate(text):
        guesses = ", ".join(f"{describe_char(c)} {p:.0%}" for c, p in zip(next_chars[t], next_probs[t]))
        tips.append(f"position {offset + t}: {describe_char(ch)}\n{quantity} = {values[t]:+.4f}"
                    + (f"\nnext: {guesses}" if guesses else ""))
    return tips
