"""Small reusable widgets and session helpers shared by the pages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from rnnviz.figures import describe, scale_fonts
from rnnviz.limits import name_bidi_controls
from rnnviz.ui.app.navigation import DEFAULT_SEED, SEED_KEY
from rnnviz.ui.app.presenting import ROOM_SCALE, presenting
from rnnviz.ui.app.registry import page_by_url
from rnnviz.ui.app.text import literal  # noqa: F401  (the pages and kit quote user text with it)
from rnnviz.ui.kit.lesson import lesson_button, record_plot

# Plotly's mode bar is noise on a projector, and it covers the top of a chart while the pointer is on it (and on a
# tablet once the chart is touched): keep the downloads (the PNG at twice the drawn size, for a slide) and the full
# screen. Dragging still zooms and a double click resets, without the mode buttons.
PLOTLY_CONFIG = {"displaylogo": False,
                 "modeBarButtonsToRemove": ["lasso2d", "select2d", "zoom2d", "pan2d", "zoomIn2d", "zoomOut2d",
                                            "autoScale2d", "resetScale2d"],
                 "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "rnnviz-figure"}}


def seed() -> int:
    """The global seed chosen in the sidebar."""
    return int(st.session_state.get(SEED_KEY, DEFAULT_SEED))


def page_header(url_path: str, intro: str, equation: str | None = None) -> None:
    """The page's registered title, a short plain explanation, and its equation in LaTeX."""
    spec = page_by_url(url_path)
    st.title(spec.title if spec else url_path)
    lesson_button(url_path, intro, equation)  # "Download this lesson": every lesson page has it (kit.lesson)
    st.markdown(intro)
    if equation:
        st.latex(equation)


def text_block(text: str, where=None) -> None:
    """Model output or a user's corpus as a wrapped code block (in ``where``, a column, or the page), with each
    bidirectional control shown by name (‹U+202E›): in a code block it would still turn the text back to front."""
    (st if where is None else where).code(name_bidi_controls(text), language=None, wrap_lines=True)


def for_the_room(fig):
    """``fig`` as drawn now: with every text 1.25 times larger while the session presents (app.presenting), else
    as it is (the figures of a cache are never changed: the larger copy is new). st.plotly_chart refuses a dict
    without traces (plotly's return_figure_from_figure_or_data), which Home's diagrams are (shapes and
    annotations only): such a copy goes back as a Figure."""
    if not presenting():
        return fig
    larger = scale_fonts(fig, ROOM_SCALE)
    return larger if larger.get("data") else go.Figure(larger)


def plot(fig, key: str | None = None, alt: str | None = None) -> None:
    """Render a plotly figure at the container's width with the app's chart config, and its text alternative for
    a screen reader (``alt``, or what rnnviz.figures.describe reads from the figure)."""
    st.plotly_chart(for_the_room(fig), width="stretch", config=PLOTLY_CONFIG, key=key,
                    alt=alt or describe(fig))
    record_plot(fig, alt)  # for "Download this lesson" (kit.lesson)


MISSING = "—"  # a table's cell with no value (a continuous feature has no threshold accuracy), not Streamlit's "None"


def table(rows: Iterable[Mapping] | pd.DataFrame, *, percent: Iterable[str] = (),
          decimals: Mapping[str, int] | None = None, counts: Iterable[str] = (), column_config: Mapping | None = None,
          **kwargs) -> pd.DataFrame:
    """Rows as a pandas DataFrame drawn by st.dataframe, its numbers kept as numbers at full precision (so they sort
    as numbers and the toolbar's CSV holds them exactly) and drawn with a format per column: ``percent`` for
    fractions (0.995 → 99.50%), ``decimals`` {column: digits}, ``counts`` with thousands separators. Returns the
    frame."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    config: dict = {name: st.column_config.NumberColumn(format="percent") for name in percent}
    config.update({name: st.column_config.NumberColumn(format=f"%.{digits}f")
                   for name, digits in (decimals or {}).items()})
    config.update({name: st.column_config.NumberColumn(format="localized") for name in counts})
    config.update(column_config or {})
    kwargs.setdefault("placeholder", MISSING)
    st.dataframe(frame, hide_index=True, column_config=config, **kwargs)
    return frame
