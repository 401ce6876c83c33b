"""A chart that answers its slider in the browser: the server sends the engine's curves for every stop of one
slider at once (rnnviz.figures builds them), and the browser redraws from them as the slider's thumb moves, in the
same frame, before the server has heard of the move (issue 33: a server round trip and a new plotly chart per move
are too slow to follow the thumb). The server's rerun that follows the move sends the same curves again, so what
the chart shows is always the server's.

The chart follows the slider by the value of its range input (Streamlit 1.67's slider is react-aria's, around a hidden
``<input type="range">`` whose value and aria-valuetext React rewrites as the thumb moves, the value a screen reader
announces); where the slider is not on the page (a presenter hid it), the chart shows ``value``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

_JS = (Path(__file__).with_name("instant_chart.js")).read_text(encoding="utf-8")

# In the component's own shadow root: the page's font and text colour reach it by inheritance (either theme), and its
# sizes are in rem, so that they grow with the page's text while the session presents (app.presenting).
_CSS = """
.instant-chart { position: relative; }
.tools { position: absolute; top: 0; right: 0; display: flex; gap: 0.25rem; }
.tools button { font: inherit; font-size: 0.75rem; color: inherit; opacity: 0.8; background: transparent;
  border: 1px solid currentColor; border-radius: 4px; padding: 1px 6px; cursor: pointer; }
.tools button:focus-visible { outline: 2px solid currentColor; outline-offset: 2px; }
svg { display: block; }
.legend { display: flex; flex-wrap: wrap; gap: 0.25rem 1.1rem; font-size: 0.875rem; margin: 0 0 0.6rem; }
.item { display: inline-flex; align-items: center; gap: 0.4rem; }
.numbers { display: grid; grid-template-columns: repeat(auto-fit, minmax(9.5rem, 1fr)); gap: 0.75rem 1.5rem; }
.number { display: flex; flex-direction: column; justify-content: space-between; }  /* values on one line */
.number .label { font-size: 0.875rem; opacity: 0.8; }
.number .value { font-size: 2.25rem; line-height: 1.3; }
"""

_instant_chart = st.components.v2.component("rnnviz_instant_chart", js=_JS, css=_CSS)


def instant_chart(data: dict, key: str) -> None:
    """Draw ``data`` (see rnnviz.figures.gradients.power_stops for its shape): the curves of the stop nearest the
    value of the slider that ``data["follow"]`` selects, redrawn in the browser whenever that slider moves."""
    _instant_chart(data=data, key=key, height="content")
