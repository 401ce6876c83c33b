"""Small reusable widgets and session helpers shared by the pages."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from rnnviz.ui.registry import page_by_url

DEFAULT_SEED = 0

# Plotly's mode bar is noise on a projector; keep the download button only.
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


# Characters that can start markup in Streamlit's markdown: emphasis, code, links and images, HTML and
# autolinks, math, strikethrough, tables, entities, emoji and icon shortcodes, the "://" of a bare URL and
# the "@" of a bare e-mail address; a bare "www." is broken up separately.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$~|&:@])")
_BARE_WWW = re.compile(r"(?i)\b(www)\.")


def literal(text: str) -> str:
    """User text (a file name, a link's value, an engine message quoting them) made literal inside
    st.markdown and alerts: markup characters are backslash-escaped, so they show as typed."""
    return _BARE_WWW.sub(r"\1\\.", _MARKDOWN.sub(r"\\\1", str(text)))


def seed() -> int:
    """The global seed chosen in the sidebar."""
    return int(st.session_state.get("seed", DEFAULT_SEED))


def page_header(url_path: str, intro: str, equation: str | None = None) -> None:
    """The page's registered title, a short plain explanation, and its equation in LaTeX."""
    spec = page_by_url(url_path)
    st.title(spec.title if spec else url_path)
    st.markdown(intro)
    if equation:
        st.latex(equation)


def shared_figure(build: Callable[..., go.Figure], *args, key: Hashable = ()) -> go.Figure:
    """``build(*args)``, built once per server process for each ``key`` and shared by every session.

    ``key`` names everything the figure is computed from (a frozen config, a model's id, a widget's value);
    ``args`` are what ``build`` takes, and are not hashed. A class that opens a page at once with the default
    settings then pays for each figure once instead of once per student, and a student who moves a slider gets
    (and shares) the figure of the new value. Safe to share: ``st.plotly_chart`` only reads a figure."""
    return shared_value(build, *args, key=key)


def shared_value(build: Callable[..., Any], *args, key: Hashable = ()) -> Any:
    """``build(*args)`` once per server process for each ``key``, shared by every session: the same contract as
    ``shared_figure``, for any read-only value (an HTML string, a table)."""
    return _shared_value(f"{build.__module__}.{build.__qualname__}", key, build, args)


@st.cache_resource(show_spinner=False, max_entries=512)
def _shared_value(name: str, key: Hashable, _build: Callable[..., Any], _args: tuple) -> Any:
    return _build(*_args)


def plot(fig, key: str | None = None) -> None:
    """Render a plotly figure at the container's width with the app's chart config."""
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key=key)
