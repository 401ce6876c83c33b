"""Small reusable widgets and session helpers shared by the pages."""

from __future__ import annotations

import re

import streamlit as st

from rnnviz.figures import scale_fonts
from rnnviz.ui.app.navigation import SEED_KEY
from rnnviz.ui.app.presenting import ROOM_SCALE, presenting
from rnnviz.ui.app.registry import page_by_url

DEFAULT_SEED = 0

# Plotly's mode bar is noise on a projector; keep the download button only.
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


# Characters that can start markup in Streamlit's markdown: emphasis, code, links and images, HTML and
# autolinks, math, strikethrough, tables, entities, emoji and icon shortcodes, the "://" of a bare URL and
# the "@" of a bare e-mail address; a bare "www." is broken up separately.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$~|&:@])")
_BARE_WWW = re.compile(r"(?i)\b(www)\.")


# Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): in user text, one of them
# turns the rest of the sentence around it back to front ("U+202E" in a link reverses the notice quoting it).
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def literal(text: str) -> str:
    """User text (a file name, a link's value, an engine message quoting them) made literal inside
    st.markdown and alerts: markup characters are backslash-escaped, so they show as typed, and invisible
    bidirectional controls are shown by name (‹U+202E›) instead of reordering the words around them."""
    escaped = _BARE_WWW.sub(r"\1\\.", _MARKDOWN.sub(r"\\\1", str(text)))
    return _BIDI_CONTROLS.sub(lambda m: f"‹U+{ord(m.group()):04X}›", escaped)


def seed() -> int:
    """The global seed chosen in the sidebar."""
    return int(st.session_state.get(SEED_KEY, DEFAULT_SEED))


def page_header(url_path: str, intro: str, equation: str | None = None) -> None:
    """The page's registered title, a short plain explanation, and its equation in LaTeX."""
    spec = page_by_url(url_path)
    st.title(spec.title if spec else url_path)
    st.markdown(intro)
    if equation:
        st.latex(equation)


def for_the_room(fig):
    """``fig`` as drawn now: with every text 1.25 times larger while the session presents (app.presenting), else
    as it is (the figures of a cache are never changed: the larger copy is new)."""
    return scale_fonts(fig, ROOM_SCALE) if presenting() else fig


def plot(fig, key: str | None = None) -> None:
    """Render a plotly figure at the container's width with the app's chart config."""
    st.plotly_chart(for_the_room(fig), width="stretch", config=PLOTLY_CONFIG, key=key)
