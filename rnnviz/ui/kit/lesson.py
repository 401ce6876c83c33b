""""Download this lesson": the page as one HTML file that works from disk with no server (issue 63).

While a page runs, the kit records what it draws (each kit.instant view with every stop, each figure that follows
one with all its frames, each other plotly figure), in page order. The page's "Download this lesson" button turns
that record into one file: plotly.js, Streamlit's KaTeX module and the kit's own instant.js inlined, so that the
views answer their controls as on the page, and a header with the settings the file was made with and the controls
that need the server.

A page run starts a new record (``lesson_button``, from page_header); a fragment's rerun replaces only what that
fragment drew, in its place. The file is made on the click, on another thread, from the record of the page's last run.
"""

from __future__ import annotations

import html
import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import plotly.offline
import streamlit as st
from plotly.utils import PlotlyJSONEncoder
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx

from rnnviz.limits import name_bidi_controls, quoted
from rnnviz.ui.app.navigation import DEFAULT_SEED, SEED_KEY, SEED_PARAM
from rnnviz.ui.app.registry import page_by_url

_RECORD = "_lesson_record"
_DECLARED = "_link_params"  # kit.links.DECLARED (links imports widgets, which imports this module)
_INSTANT_JS = Path(__file__).with_name("instant.js")
_LESSON_JS = Path(__file__).with_name("lesson.js")
_STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"

_CSS = """
body { font-family: "Source Sans Pro", "Source Sans 3", system-ui, sans-serif; max-width: 72rem; margin: 2rem auto;
  padding: 0 1.5rem; color: rgb(49, 51, 63); line-height: 1.5; }
.rnnviz-lesson-header { border-bottom: 1px solid rgba(49, 51, 63, 0.2); margin-bottom: 1.5rem; padding-bottom: 1rem; }
.rnnviz-lesson-header dt { font-weight: 600; margin-top: 0.5rem; }
.rnnviz-lesson-header dd { margin: 0; }
.rnnviz-lesson-intro { margin: 1rem 0; }
.rnnviz-lesson-item { margin: 1.5rem 0; }
.rnnviz-lesson-alt { font-size: 0.875rem; opacity: 0.7; }
math[display="block"] { overflow-x: auto; margin: 0.5rem 0; }
"""


class Record:
    """What one page's last run drew, in page order: (scope, kind, payload), scope the fragment that drew it."""

    def __init__(self, url_path: str, intro: str, equation: str | None):
        self.url_path = url_path
        self.intro = intro
        self.equation = equation
        self.items: list[tuple[str | None, str, dict]] = []
        self.settings: dict[str, str] = {}
        self.fixed: list[str] = []  # the settings' names that only the server can change
        self.css = ""  # kit.instant's styles, once a view is drawn
        self.lock = threading.Lock()
        self._run = None  # the fragment run that last recorded (its context's cursors: a new dict each run)
        self._next: dict[str | None, int] = {}  # where each fragment of that run puts its next drawing

    def add(self, kind: str, payload: dict) -> None:
        ctx = get_script_run_ctx(suppress_warning=True)
        scope = ThreadState.get().fragment_id
        with self.lock:
            if ctx is not None and ctx.fragment_ids_this_run:
                self._insert(scope, (scope, kind, payload), ctx.cursors)
            else:
                self.items.append((scope, kind, payload))
            self._note_settings()

    def _insert(self, scope: str | None, item: tuple, run) -> None:
        """A fragment's own rerun: its first drawing takes out what the fragment drew before, and what it draws
        goes in that place (fragments may rerun side by side: each keeps its own place)."""
        if self._run is not run:
            self._run, self._next = run, {}
        if scope not in self._next:
            old = [i for i, (owner, _, _) in enumerate(self.items) if owner == scope]
            at = old[0] if old else len(self.items)
            self.items = [entry for entry in self.items if entry[0] != scope]
            self._next = {other: place - len(old) if place > at else place for other, place in self._next.items()}
            self._next[scope] = at
        at = self._next[scope]
        self.items.insert(at, item)
        self._next = {other: place + 1 if place > at or other == scope else place
                      for other, place in self._next.items()}

    def _note_settings(self) -> None:
        declared = st.session_state.get(_DECLARED)
        params = declared[1] if isinstance(declared, tuple) and len(declared) == 2 else ()
        state = st.session_state
        self.settings = {p.name: p.format(state[p.key]) for p in params if p.key in state}
        seed = int(state.get(SEED_KEY, DEFAULT_SEED))
        self.settings[SEED_PARAM] = str(seed)
        moving = {payload["key"] for _, kind, payload in self.items if kind == "view"}
        self.fixed = [p.name for p in params if p.key not in moving]


def _record() -> Record | None:
    record = st.session_state.get(_RECORD)
    return record if isinstance(record, Record) else None


def record_view(key: str, data: dict, shared: dict | None, css: str) -> None:
    """A kit.instant control as the page sent it: every stop's blocks (kit.instant._mount), and the styles it is
    drawn with."""
    if (record := _record()) is not None:
        record.css = css
        record.add("view", {"key": key, "data": {**data, "param": None, "shared": shared or {}}})


def record_frames(figure_key: str, spec: dict) -> None:
    """A figure that follows a control, with every stop as a frame (kit.instant.instant_figure)."""
    if (record := _record()) is not None:
        record.add("frames", {"key": figure_key, "figure": spec})


def record_plot(fig, alt: str | None = None) -> None:
    """Any other plotly figure the page drew (kit.widgets.plot)."""
    if (record := _record()) is not None:
        record.add("plot", {"figure": fig, "alt": alt or ""})


def is_lesson(url_path: str) -> bool:
    """Every page of the chapter but Home (the server-status page is off the course)."""
    spec = page_by_url(url_path)
    return bool(spec and spec.on_course and not spec.default)


def lesson_button(url_path: str, intro: str, equation: str | None) -> None:
    """Start the page's record for this run, and draw "Download this lesson" (on lesson pages)."""
    if not is_lesson(url_path):
        st.session_state.pop(_RECORD, None)
        return
    record = Record(url_path, intro, equation)
    st.session_state[_RECORD] = record
    title = page_by_url(url_path).title
    st.sidebar.download_button(  # in the sidebar: under the title it pushed each page's first screen down
        "Download this lesson", data=lambda: lesson_file(record, title), file_name=f"rnnviz-{url_path}.html",
        mime="text/html", on_click="ignore", icon=":material/download:", key="lesson_download",
        help="One HTML file with this page's figures and the controls that move in the browser, as they are now. "
             "It opens from disk with no server and no network.")


def _script_json(value) -> str:
    """JSON for a <script type="application/json"> block: no "<" that could close it."""
    text = json.dumps(value, cls=PlotlyJSONEncoder, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _katex_source() -> str:
    found = sorted(_STATIC_JS.glob("katex.*.js"))
    return found[0].read_text(encoding="utf-8") if found else ""


def lesson_file(record: Record, title: str, made: datetime | None = None) -> str:
    """The page's last run as one HTML file that needs no server and no network."""
    with record.lock:
        items = list(record.items)
        settings = dict(record.settings)
        fixed = list(record.fixed)
    made = made or datetime.now(UTC)
    payload = {
        "intro": record.intro,
        "equation": record.equation or "",
        "items": [{"kind": kind, **payload} for _, kind, payload in items],
        "instant": _INSTANT_JS.read_text(encoding="utf-8"),
        "katex": _katex_source(),
    }
    views = sum(kind == "view" for _, kind, _ in items)
    esc = html.escape
    settings_text = ", ".join(f"{name} = {quoted(name_bidi_controls(value))}" for name, value in settings.items())
    if fixed:
        server = (f"The settings {', '.join(fixed)} stay as listed: changing them, and every button that runs the "
                  f"engine (a new model, new weights, training, sampling), needs the app's server.")
    else:
        server = "Every button that runs the engine (a new model, new weights, training, sampling) needs the server."
    moves = (f"{views} control{'s' if views != 1 else ''} move{'s' if views == 1 else ''} here as on the page: "
             f"every stop the engine computed is in this file." if views else
             "No control of this page moves without the server: its figures are here as they were drawn.")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)} — rnnviz lesson</title>\n"
        f"<style>{record.css}{_CSS}</style>\n"
        f"<script type=\"text/javascript\">{plotly.offline.get_plotlyjs()}</script>\n"
        "</head><body>\n"
        "<header class=\"rnnviz-lesson-header\">"
        f"<h1>{esc(title)}</h1><dl>"
        f"<dt>Made</dt><dd>{esc(made.strftime('%Y-%m-%d %H:%M UTC'))} by rnnviz, from the page "
        f"/{esc(record.url_path)}</dd>"
        f"<dt>Settings</dt><dd>{esc(settings_text)}</dd>"
        f"<dt>Controls</dt><dd>{esc(moves)} {esc(server)}</dd>"
        "</dl></header>\n<main id=\"rnnviz-lesson\"></main>\n"
        f"<script type=\"application/json\" id=\"rnnviz-lesson-data\">{_script_json(payload)}</script>\n"
        f"<script type=\"module\">{_LESSON_JS.read_text(encoding='utf-8')}</script>\n"
        "</body></html>\n"
    )
