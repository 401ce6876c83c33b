"""Per-character feature tracks computed from a text, for finding cells that track them.

Every track is aligned with the hidden state: value t describes the reader's situation just after it has
read text[t], as h_t does. So an opening quote or bracket already counts as inside, a closing one as
outside, and a newline starts a new line (position 0, indentation 0).

Two readings of a text:

- ``"code"`` (Python): strings are ', ", ''' and \"\"\" literals (backslash escapes honoured; a one-quote
  string ends at a line end), comments run from # to the line end, and brackets inside strings or
  comments are not counted.
- ``"prose"``: quotes are "…" (straight quotes toggle, curly ones open and close) and a blank line closes
  an unbalanced quote; every bracket counts; there are no comments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SYNTAXES = ("code", "prose")
OPENING, CLOSING = "([{", ")]}"
CURLY_OPEN, CURLY_CLOSE = "\u201c", "\u201d"


@dataclass(frozen=True)
class Feature:
    """One feature track's name, label and kind."""

    name: str  # short id, used in keys and links
    label: str  # shown on the page
    binary: bool  # 0/1 track (ranked by threshold accuracy too) or a count


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        Feature("string", "inside a string or quotes", True),
        Feature("bracket_depth", "bracket depth: (), [], {}", False),
        Feature("indent", "indentation of the line (leading spaces)", False),
        Feature("line_position", "position in the line", False),
        Feature("comment", "inside a # comment", True),
        Feature("word_start", "start of a word", True),
        Feature("uppercase", "uppercase letter", True),
        Feature("digit", "digit", True),
    )
}


def features_for(syntax: str) -> tuple[str, ...]:
    """The feature names that make sense for a syntax (prose has no comments)."""
    _check_syntax(syntax)
    return tuple(name for name in FEATURES if not (syntax == "prose" and name == "comment"))


def guess_syntax(text: str) -> str:
    """"code" when at least a fifth of the lines look like Python (indented by 4, or starting with def, class,
    import, from or #), else "prose": how the features read brackets, strings and comments when nobody said."""
    lines = text.splitlines() or [""]
    coded = sum(line.startswith(("    ", "def ", "class ", "import ", "from ", "#")) for line in lines)
    return "code" if coded >= 0.2 * len(lines) else "prose"


def _check_syntax(syntax: str) -> None:
    if syntax not in SYNTAXES:
        raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, not {syntax!r}")


def feature_tracks(text: str, syntax: str = "code") -> dict[str, np.ndarray]:
    """Every feature of ``features_for(syntax)`` as a (T,) float array aligned with the characters."""
    _check_syntax(syntax)
    string, comment = python_string_and_comment(text) if syntax == "code" else (prose_quotes(text), None)
    tracks = {
        "string": string,
        "bracket_depth": bracket_depth(text, ignore=(string + comment) > 0 if comment is not None else None),
        "indent": indentation(text),
        "line_position": line_position(text),
        "comment": comment,
        "word_start": word_starts(text),
        "uppercase": np.array([c.isupper() for c in text], dtype=np.float32),
        "digit": np.array([c.isdigit() for c in text], dtype=np.float32),
    }
    return {name: tracks[name].astype(np.float32) for name in features_for(syntax)}


def line_position(text: str) -> np.ndarray:
    """Characters read on the current line: 0 just after a newline, 1 after the line's first character."""
    out = np.zeros(len(text), dtype=np.float32)
    column = 0
    for t, ch in enumerate(text):
        column = 0 if ch == "\n" else column + 1
        out[t] = column
    return out


def indentation(text: str) -> np.ndarray:
    """Leading spaces and tabs of the current line read so far (a tab counts as one)."""
    out = np.zeros(len(text), dtype=np.float32)
    indent, leading = 0, True
    for t, ch in enumerate(text):
        if ch == "\n":
            indent, leading = 0, True
        elif leading and ch in " \t":
            indent += 1
        else:
            leading = False
        out[t] = indent
    return out


def word_starts(text: str) -> np.ndarray:
    """1 at a letter, digit or underscore whose previous character is none of those."""
    out = np.zeros(len(text), dtype=np.float32)
    previous_in_word = False
    for t, ch in enumerate(text):
        in_word = ch.isalnum() or ch == "_"
        out[t] = in_word and not previous_in_word
        previous_in_word = in_word
    return out


def bracket_depth(text: str, ignore: np.ndarray | None = None) -> np.ndarray:
    """Open (), [] and {} after each character, never below 0; characters where ``ignore`` is set don't count.

    A passage cut from the middle of a file may close brackets it never opened: the depth stays at 0.
    """
    out = np.zeros(len(text), dtype=np.float32)
    depth = 0
    for t, ch in enumerate(text):
        if ignore is None or not ignore[t]:
            if ch in OPENING:
                depth += 1
            elif ch in CLOSING:
                depth = max(depth - 1, 0)
        out[t] = depth
    return out


def python_string_and_comment(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(inside a string literal, inside a comment) per character, reading the text as Python.

    A string runs from its opening quote (1) to its closing delimiter (0); for a triple quote all three
    closing characters are 0. A comment runs from # (1) to the end of the line; the newline is 0.
    """
    n = len(text)
    string = np.zeros(n, dtype=np.float32)
    comment = np.zeros(n, dtype=np.float32)
    t = 0
    while t < n:
        ch = text[t]
        if ch == "#":
            end = text.find("\n", t)
            end = n if end < 0 else end
            comment[t:end] = 1
            t = end
        elif ch in "'\"":
            delimiter = ch * 3 if text.startswith(ch * 3, t) else ch
            t = _mark_string(text, t, delimiter, string)
        else:
            t += 1
    return string, comment


def _mark_string(text: str, start: int, delimiter: str, string: np.ndarray) -> int:
    """Mark one literal opening at ``start``; returns the index just past its closing delimiter."""
    n = len(text)
    t = start + len(delimiter)
    string[start:t] = 1
    while t < n:
        ch = text[t]
        if ch == "\\" and t + 1 < n:
            string[t : t + 2] = 1
            t += 2
        elif text.startswith(delimiter, t):
            return t + len(delimiter)  # the closing delimiter stays 0
        elif ch == "\n" and len(delimiter) == 1:
            return t  # an unterminated one-quote string ends at the line end
        else:
            string[t] = 1
            t += 1
    return n


def prose_quotes(text: str) -> np.ndarray:
    """Inside "…" in prose: straight quotes toggle, “ opens, ” closes, a blank line closes an open quote."""
    out = np.zeros(len(text), dtype=np.float32)
    inside = False
    for t, ch in enumerate(text):
        if ch == '"':
            inside = not inside
        elif ch == CURLY_OPEN:
            inside = True
        elif ch == CURLY_CLOSE:
            inside = False
        elif ch == "\n" and t > 0 and text[t - 1] == "\n":
            inside = False
        out[t] = inside
    return out


def showcase_window(track: np.ndarray, width: int) -> int:
    """Start of the ``width``-character window where ``track`` varies most: a good place to show a cell."""
    n = len(track)
    if n <= width:
        return 0
    x = track.astype(np.float64)
    sums = np.concatenate([[0.0], np.cumsum(x)])
    squares = np.concatenate([[0.0], np.cumsum(x * x)])
    window_sum = sums[width:] - sums[:-width]
    variance = (squares[width:] - squares[:-width]) / width - (window_sum / width) ** 2  # (n − width + 1,)
    return int(np.argmax(variance))


def first_run(track: np.ndarray, start: int, end: int, min_length: int = 3, max_length: int = 40
              ) -> tuple[int, int] | None:
    """The first [s, e) within [start, end) where a 0/1 track is 1 throughout, of a length in the bounds."""
    on = np.concatenate([[0], np.asarray(track[start:end]) > 0, [0]]).astype(np.int8)
    edges = np.diff(on)
    for s, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
        if min_length <= e - s <= max_length:
            return start + int(s), start + int(e)
    return None
