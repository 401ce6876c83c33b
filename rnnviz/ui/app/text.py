"""User text made safe to show in Streamlit's markdown, and a link's on/off words (no streamlit import: the app and
kit layers share them)."""

from __future__ import annotations

import re

from rnnviz.limits import name_bidi_controls

# Characters that can start markup in Streamlit's markdown: emphasis, code, links and images, HTML and
# autolinks, math, strikethrough, tables, entities, emoji and icon shortcodes, the "://" of a bare URL and
# the "@" of a bare e-mail address; a bare "www." is broken up separately.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$~|&:@])")
_BARE_WWW = re.compile(r"(?i)\b(www)\.")


_ON, _OFF = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}


def on_off(text: str) -> bool | None:
    """A link's on/off word (1/0, true/false, on/off, yes/no) as a bool; None for anything else."""
    word = text.strip().lower()
    return True if word in _ON else False if word in _OFF else None


def literal(text: str) -> str:
    """User text (a file name, a link's value, an engine message quoting them) made literal inside
    st.markdown and alerts: markup characters are backslash-escaped, so they show as typed, and invisible
    bidirectional controls are shown by name (‹U+202E›) instead of reordering the words around them."""
    return name_bidi_controls(_BARE_WWW.sub(r"\1\\.", _MARKDOWN.sub(r"\\\1", str(text))))
