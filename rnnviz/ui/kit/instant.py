"""Controls that answer in the browser: the engine computes what the page shows at every stop of a control (every t
of a trace, every value of a slider), the server sends it once, and the browser shows the stop the control is moved
to in the frame of the move, with no script run (issue 63).

A view is two parts, drawn from the same stops:

- ``instant_stepper`` or ``instant_slider``: the control, with the stop's numbers, equations and sentences under it
  (``Stop``'s blocks, built with ``metrics``, ``latex``, ``text``, ``note``, ``alert``, ``columns``, ``image`` and
  ``heat_table``);
- ``instant_figure``: a plotly chart that holds every stop's figure as one of plotly's own frames; the control makes
  the chart draw the stop's frame (it stays a Streamlit chart: its toolbar, its size, the room's fonts);
- ``instant_blocks``: a stop's blocks away from the control (numbers beside a figure), which show the control's stop.

The control writes the stop into the page's address at once (its ``LinkParam``'s name), and tells the server once
it has been still for a moment: the value lands in ``st.session_state[key]``, where the page's links read it. That
report reruns the page's fragment, which sends the same stops again; the figures keep the frames they were built
with, so the run changes nothing in the browser. Where a move needs the server (the hand-built page's quiz),
``in_browser=False`` makes every move wait for the server's run, as a plain Streamlit control does.

The browser only picks: every number, word and figure of every stop is the server's.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from PIL import Image

from rnnviz.figures import describe
from rnnviz.ui.app.presenting import ROOM_SCALE, presenting
from rnnviz.ui.kit.cache import shared_value
from rnnviz.ui.kit.lesson import record_frames, record_view
from rnnviz.ui.kit.links import LinkParam
from rnnviz.ui.kit.widgets import PLOTLY_CONFIG, for_the_room

_JS = Path(__file__).with_name("instant.js").read_text(encoding="utf-8")

# Not isolated in a shadow root: the page's own styles then reach the view (the KaTeX of Streamlit's equations, the
# theme's font), and every class here starts with rnnviz-instant so that none reaches the page. Colours are the
# theme's (Streamlit gives a component its --st-… properties), sizes are in rem, so that they grow with the page's
# text while the session presents (app.presenting).
_CSS = """
.rnnviz-instant { display: flex; flex-direction: column; gap: 0.75rem; }
.rnnviz-instant-row { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; }
.rnnviz-instant-button { font: inherit; font-size: 0.875rem; color: inherit; background: transparent;
  border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); border-radius: 0.5rem;
  padding: 0.25rem 0.75rem; min-height: 2.5rem; cursor: pointer; display: inline-flex; align-items: center;
  gap: 0.4rem; }
.rnnviz-instant-button:hover:not(:disabled) { border-color: var(--st-primary-color, #ff4b4b);
  color: var(--st-primary-color, #ff4b4b); }
.rnnviz-instant-button.primary { background: var(--st-primary-color, #ff4b4b); color: white;
  border-color: var(--st-primary-color, #ff4b4b); }
.rnnviz-instant-button.primary:hover:not(:disabled) { color: white; filter: brightness(0.92); }
.rnnviz-instant-button:disabled { opacity: 0.4; cursor: not-allowed; }
.rnnviz-instant-button:focus-visible, .rnnviz-instant-range:focus-visible { outline: 2px solid currentColor;
  outline-offset: 2px; }
.rnnviz-instant-key { opacity: 0.6; font-size: 0.75rem; }
.rnnviz-instant-slider { display: flex; flex-direction: column; gap: 0.25rem; }
.rnnviz-instant-label { font-size: 0.875rem; display: flex; justify-content: space-between; gap: 0.5rem; }
.rnnviz-instant-shown { font-weight: 600; font-variant-numeric: tabular-nums; }
.rnnviz-instant-range { width: 100%; accent-color: var(--st-primary-color, #ff4b4b); margin: 0.4rem 0; }
.rnnviz-instant-stop { display: flex; flex-direction: column; gap: 0.75rem; }
.rnnviz-instant-metrics { display: grid; gap: 0.5rem 1.5rem; }
.rnnviz-instant-metric-label { font-size: 0.875rem; }
.rnnviz-instant-metric-value { font-size: 2.25rem; line-height: 1.3; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
/* As Streamlit's markdown draws a display equation: a wide one scrolls sideways in its own box. */
.rnnviz-instant .katex-display { overflow-x: auto; overflow-y: hidden; margin: 0.5rem 0; }
.rnnviz-instant-columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr)); gap: 1rem; }
.rnnviz-instant-alert { border-radius: 0.5rem; padding: 0.75rem 1rem; }
/* The theme's own colours for st.info, st.success and st.warning, in either theme. */
.rnnviz-instant-alert.info { background: var(--st-blue-background-color, rgba(28, 131, 225, 0.1));
  color: var(--st-blue-text-color, rgb(0, 66, 128)); }
.rnnviz-instant-alert.success { background: var(--st-green-background-color, rgba(33, 195, 84, 0.1));
  color: var(--st-green-text-color, rgb(23, 114, 51)); }
.rnnviz-instant-alert.warning { background: var(--st-yellow-background-color, rgba(255, 193, 7, 0.2));
  color: var(--st-yellow-text-color, rgb(146, 108, 5)); }
.rnnviz-instant-caption { font-size: 0.875rem; opacity: 0.8; }
/* A coloured window (coloured_window): as colortext.legend_html and colored_text_html draw it (their px in rem, so
   that it grows with the page's text while the session presents). */
.rnnviz-instant-legend { margin: 0.25rem 0 0.5rem 0; font-size: 0.8125rem; }
.rnnviz-instant-legend-row { display: flex; align-items: flex-start; gap: 0.875rem; }
.rnnviz-instant-swatches { line-height: 0; }
.rnnviz-instant-swatch { display: inline-block; width: 1.375rem; height: 0.875rem; }
.rnnviz-instant-numbers { display: flex; justify-content: space-between; font-size: 0.8125rem; }
.rnnviz-instant-meaning { font-size: 0.8125rem; opacity: 0.75; }
.rnnviz-instant-coloured { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.9375rem;
  line-height: 1.55; white-space: pre-wrap; word-break: break-all; }
/* An image (image): as st.image draws it, the column's width, its caption centred under it; a heat strip sent one
   pixel per value is drawn with sharp blocks. */
.rnnviz-instant-figure { margin: 0; }
.rnnviz-instant-image { display: block; width: 100%; height: auto; image-rendering: pixelated;
  border-radius: 0.5rem; }
/* A column of pictures is spaced as Streamlit spaces the elements of st.columns. */
.rnnviz-instant-column:has(> .rnnviz-instant-figure) { display: flex; flex-direction: column; gap: 0.75rem; }
.rnnviz-instant-figure .rnnviz-instant-caption { text-align: center; margin-top: 0.25rem; }
/* A heat table (heat_table): as figures.hidden_state.attention_table draws it. */
.rnnviz-instant-heat { overflow-x: auto; }
.rnnviz-instant-heat table { border-collapse: separate; border-spacing: 1px; font-size: 0.875rem; }
.rnnviz-instant-heat th { font-weight: normal; padding: 0 1px; text-align: center; }
.rnnviz-instant-heat th.row { text-align: right; white-space: nowrap; padding-right: 6px; }
.rnnviz-instant-heat td { padding: 0; height: 22px; }
.rnnviz-instant-heat .rnnviz-instant-caption { font-size: 0.8125rem; }
"""

_instant = st.components.v2.component("rnnviz_instant", js=_JS, css=_CSS, isolate_styles=False)

# How long a moved control stays still before the browser tells the server (ms): moves closer together than this (a
# drag, keys held down, quick clicks) are one report, and no script runs while they go on.
REPORT_QUIET_MS = 250


def _katex_module() -> str:
    """The file name of the KaTeX module Streamlit ships with its frontend, which the view's equations load from the
    same server (instant.js says which of Streamlit's two KaTeX builds, and why)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(folder.glob("katex.*.js"))
    return found[0].name if found else ""


KATEX_MODULE = _katex_module()


# ---------------------------------------------------------------------------------------------------------
# What a stop shows under its control: plain dicts of text, for the browser to draw as text (never as HTML). Text may
# hold **bold** and $inline math$; ``latex`` is one equation on its own line, as st.latex draws it.

Block = dict


def metrics(pairs: Sequence[tuple[str, str]], widths: Sequence[float] | None = None) -> Block:
    """A row of (label, value) numbers, drawn as st.metric draws them; ``widths``: the columns' shares."""
    return {"metrics": [[str(label), str(value)] for label, value in pairs],
            "widths": list(widths) if widths else None}


def latex(equation: str) -> Block:
    return {"latex": equation}


def text(markdown: str) -> Block:
    return {"text": markdown}


def note(markdown: str) -> Block:
    """Small text under the rest, as st.caption draws it."""
    return {"caption": markdown}


def alert(kind: str, markdown: str) -> Block:
    """A box as st.info, st.success or st.warning draws it (``kind`` is one of the three)."""
    if kind not in ("info", "success", "warning"):
        raise ValueError(f"an alert is info, success or warning, not {kind!r}")
    return {"alert": kind, "text": markdown}


def columns(*parts: Sequence[Block]) -> Block:
    """Blocks side by side (each part a list of blocks), wrapping under each other where the page is narrow."""
    return {"columns": [list(part) for part in parts]}


def coloured_window(shared: str, start: int, end: int, label: str) -> Block:
    """Characters ``start`` … ``end − 1`` of the coloured text ``shared`` names in the control's shared data (sent
    once for every stop: colortext.coloured_chars with its legend_data under "legend"), under the legend and
    ``label``, drawn as colortext.colored_text_html draws them."""
    return {"coloured": str(shared), "start": int(start), "end": int(end), "label": str(label)}


def image(pixels: np.ndarray, caption: str, alt: str, size: tuple[int, int] | None = None,
          palette: np.ndarray | None = None) -> Block:
    """A picture as st.image draws it, the column's width, ``caption`` under it: ``pixels`` RGB (uint8, height ×
    width × 3), or with ``palette`` (up to 256 RGB rows) each pixel's row in it (a third of the bytes); ``size``:
    the (height, width) it is drawn at, each pixel a sharp block (a heat strip sent one pixel per value)."""
    if palette is None:
        picture = Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8))
    else:
        picture = Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8), mode="P")
        picture.putpalette(np.asarray(palette, dtype=np.uint8).ravel().tolist())
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=True)
    height, width = size or pixels.shape[:2]
    return {"image": "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"),
            "caption": str(caption), "alt": str(alt), "height": int(height), "width": int(width)}


def heat_table(table: dict) -> Block:
    """A table of coloured cells (figures.hidden_state.attention_cells): ``columns`` [[header, small text under it,
    its name in a hover], …], ``rows`` [{"label", "cells": [["rgb(r,g,b)", value], …]}, …], ``hover`` a cell's
    hover text with {row}, {column} and {value} in it, ``cell_px`` a cell's width, ``key`` the words under it."""
    return {"heat_table": {"columns": [[str(a), str(b), str(c)] for a, b, c in table["columns"]],
                           "rows": [{"label": str(row["label"]), "cells": [[str(c), str(v)] for c, v in row["cells"]]}
                                    for row in table["rows"]],
                           "hover": str(table["hover"]), "cell_px": int(table["cell_px"]),
                           "key": str(table.get("key", ""))}}


@dataclass(frozen=True)
class Stop:
    """One value the control can take, and what the page shows there."""

    value: float | int | str
    blocks: Sequence[Block] = field(default_factory=tuple)
    label: str = ""  # how the control names it (the stepper's caption, the slider's shown value); str(value) if empty


# ---------------------------------------------------------------------------------------------------------
# The server's side of a control: its value lives in st.session_state[key], as a plain widget's would.


def _component_key(key: str) -> str:
    return f"{key}_instant"  # Streamlit refuses "__" in a component's key


def _seq_key(key: str) -> str:
    return f"_instant_seq_{key}"


def _base_key(key: str) -> str:
    return f"_instant_base_{key}"


def _reported_key(key: str) -> str:
    return f"_instant_reported_{key}"


def _index_key(key: str) -> str:
    return f"_instant_index_{key}"


def nearest(values: Sequence, value) -> int:
    """The index of the value in ``values`` equal to ``value``, or else nearest to it (numbers), or else 0."""
    for i, candidate in enumerate(values):
        if candidate == value:
            return i
    try:
        return min(range(len(values)), key=lambda i: abs(float(values[i]) - float(value)))
    except (TypeError, ValueError):
        return 0


def _take_report(key: str, values: Sequence) -> None:
    """on_change: the browser moved the control to a stop; the session holds its value from now on. The report's
    number is kept even when its stop is not taken, so that the browser takes the server's stop again."""
    state = st.session_state.get(_component_key(key))
    reported = state.get("move") if hasattr(state, "get") else None
    if not isinstance(reported, dict) or not isinstance(reported.get("seq"), int):
        return
    st.session_state[_seq_key(key)] = reported["seq"]
    index = reported.get("index")
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(values):
        st.session_state[key] = values[index]
        st.session_state[_reported_key(key)] = True


def _pin_base(key: str, index: int) -> int:
    """The stop the control's figures are built at: the value of this run, unless the run is the browser's report
    of a move (the figures then stay as they were, at the frame the browser shows, and no chart is drawn anew)."""
    if st.session_state.pop(_reported_key(key), False) and _base_key(key) in st.session_state:
        return st.session_state[_base_key(key)]
    st.session_state[_base_key(key)] = index
    return index


def _plain(value):
    """``value`` with numpy scalars and tuples made JSON's own (the component's data is sent as JSON)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def _mount(key: str, stops: Sequence[Stop], index: int, control: dict, link: LinkParam | None,
           in_browser: bool, shared: dict | None = None) -> None:
    values = [stop.value for stop in stops]
    data = {
        "index": index,
        "seq": int(st.session_state.get(_seq_key(key), 0)),
        "param": link.name if link else None,
        "texts": [link.format(value) for value in values] if link else None,
        "labels": [stop.label or str(stop.value) for stop in stops],
        "views": [list(stop.blocks) for stop in stops],
        "control": control,
        "figures": _figure_prefix(key),
        "browser": in_browser,
        "quiet_ms": REPORT_QUIET_MS,
        "katex": KATEX_MODULE,
    }
    _pin_base(key, index)
    st.session_state[_index_key(key)] = index
    # Inside a container named after the setting's key: ?hide=<name> hides it (app.presenting), as a plain widget.
    with st.container(key=key):
        # ``shared`` is plain already, and large: not copied through JSON on every run
        _instant(data={**_plain(data), "shared": shared or {}}, key=_component_key(key), default={"move": None},
                 on_move_change=partial(_take_report, key, values))
    record_view(key, data, shared, _CSS)  # for "Download this lesson" (kit.lesson)


def instant_stepper(key: str, stops: Sequence[Stop], *, caption: str = "", link: LinkParam | None = None,
                    out_of_range: str = "", in_browser: bool = True) -> int:
    """First, Back, Step and Play to end over ``stops``, the stop's blocks under them; returns the index of the stop
    the session is at. ``caption`` ("{step}" in it becomes the stop's label) goes beside the buttons;
    ``out_of_range`` is said when the value asked for (a link) was not a stop and was moved to the nearest ("{asked}"
    and "{step}" in it become the two). The arrow keys, Home and End press the buttons where no control that reads
    those keys has the focus (a page has one stepper)."""
    values = [stop.value for stop in stops]
    asked = st.session_state.get(key, values[0])
    index = nearest(values, asked)
    if out_of_range and asked != values[index]:
        st.warning(out_of_range.format(asked=asked, step=values[index]), icon=":material/link_off:")
    st.session_state[key] = values[index]
    _mount(key, stops, index, {"kind": "stepper", "caption": caption}, link, in_browser)
    return index


def instant_slider(label: str, key: str, stops: Sequence[Stop], *, link: LinkParam | None = None, help: str = "",
                   in_browser: bool = True, shared: dict | None = None) -> int:
    """A slider over ``stops`` with the stop's blocks under it; returns the index of the stop the session is at (the
    nearest stop to the value a link asked for). ``shared``: data every stop's blocks read (``coloured_window``'s
    text), sent once rather than once per stop; its values must be plain JSON already."""
    values = [stop.value for stop in stops]
    index = nearest(values, st.session_state.get(key, values[0]))
    st.session_state[key] = values[index]
    _mount(key, stops, index, {"kind": "slider", "label": label, "help": help}, link, in_browser, shared)
    return index


def instant_blocks(key: str, name: str, views: Sequence[Sequence[Block]]) -> None:
    """Blocks that follow the control ``key`` (drawn before it in the same run) elsewhere on the page: ``views[i]``
    is what stop i shows here (numbers beside a figure, say, rather than under the control)."""
    data = {"index": int(st.session_state.get(_index_key(key), 0)), "views": [list(view) for view in views],
            "control": {"kind": "follower", "of": key}, "katex": KATEX_MODULE}
    with st.container(key=figure_key(key, name)):
        _instant(data=_plain(data), key=_component_key(figure_key(key, name)))
    record_view(figure_key(key, name), data, None, _CSS)  # for "Download this lesson" (kit.lesson)


# ---------------------------------------------------------------------------------------------------------
# A figure at every stop, as one plotly chart with a frame per stop.


def _figure_prefix(key: str) -> str:
    return f"{key}_figure_"


def figure_key(key: str, name: str) -> str:
    """The chart key of the figure ``name`` that follows the control ``key`` (its CSS class is st-key-<that>)."""
    return f"{_figure_prefix(key)}{name}"


def frames_figure(figures: Sequence[go.Figure], base: int) -> dict:
    """One figure dict: ``figures[base]`` as drawn, and every stop's whole figure as a frame named by its index; each
    layout's meta holds the stop's index and its text alternative (the chart's alt once the stop is shown)."""
    dicts = [for_the_room(fig) for fig in figures]
    dicts = [d if isinstance(d, dict) else d.to_plotly_json() for d in dicts]
    frames = [{"name": str(i), "data": d.get("data", []),
               "layout": {**d.get("layout", {}), "meta": {"alt": describe(fig), "index": i}}}
              for i, (d, fig) in enumerate(zip(dicts, figures))]
    return {"data": frames[base]["data"], "layout": frames[base]["layout"], "frames": frames}


class _Checked(go.Figure):
    """A figure dict whose every part was a validated go.Figure (each stop's): st.plotly_chart takes it as it is,
    where a plain dict would be validated again, every frame of it, on every run (25 tables took 135 ms)."""

    def __init__(self, spec: dict):
        super().__init__()
        self._checked = spec

    def to_dict(self) -> dict:
        return self._checked


def instant_figure(key: str, name: str, figures: Callable[[], Sequence[go.Figure]], *, cache: Hashable) -> None:
    """A chart that follows the control ``key`` (drawn before it in the same run): ``figures()`` makes one figure per
    stop. Drawn at the stop the control's last server run was at, with every stop as a frame that the browser shows
    as the control moves. ``cache`` names all the figures are made from (a frozen config): they are made once per
    server process for it (kit.cache.shared_value) and shared with every session that asks for the same."""
    scale = ROOM_SCALE if presenting() else 1.0
    made = shared_value(figures, key=cache, name=f"instant figures {key} {name}")
    base = min(max(int(st.session_state.get(_base_key(key), 0)), 0), len(made) - 1)
    spec = shared_value(lambda: frames_figure(made, base), key=(cache, base, scale),
                        name=f"instant frames {key} {name}")
    st.plotly_chart(_Checked(spec), width="stretch", config=PLOTLY_CONFIG, key=figure_key(key, name),
                    alt=spec["layout"]["meta"]["alt"])
    record_frames(figure_key(key, name), spec)  # for "Download this lesson" (kit.lesson)
