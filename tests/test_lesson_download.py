""""Download this lesson" (rnnviz.ui.kit.lesson): the file holds every stop of the page's instant view and every frame
of the figure that follows it, with the engine's numbers, its other figures, plotly.js itself, and nothing to fetch."""

import json
import re
from html.parser import HTMLParser

import plotly.offline

from rnnviz.lessons.stacked import StackConfig, run_stack
from rnnviz.ui.kit.lesson import lesson_file
from tests.apptest_helpers import move_instant, open_page
from tests.figure_helpers import figure_texts, numbers

PAGE = "app_pages/stacked_rnns.py"
DATA = re.compile(r'<script type="application/json" id="rnnviz-lesson-data">(.*?)</script>', re.S)


class _Fetches(HTMLParser):
    """Every address a tag of the file would load (src, href, srcset), and each script's text."""

    def __init__(self):
        super().__init__()
        self.addresses, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.addresses += [value for name, value in attrs if name in ("src", "href", "srcset", "data")]
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def _vec(values) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")"


def _signed(value: float) -> str:
    return f"{value:+.2f}".replace("-", "−")


def test_the_stacked_lesson_file_holds_every_stop_and_frame_with_the_engines_numbers_and_fetches_nothing():
    at = open_page(PAGE)
    move_instant(at, "stacked_step", 2)  # the file starts where the page is, and still holds every stop
    assert not at.exception
    page = lesson_file(at.session_state["_lesson_record"], "Stacked RNNs")
    run = run_stack(StackConfig())  # the page's defaults: "the cat sat", an LSTM of 2 layers, d = 3

    lesson = json.loads(DATA.search(page).group(1))
    assert [item["kind"] for item in lesson["items"]] == ["view", "frames", "plot"]  # in page order
    view, grid, parameters = lesson["items"]
    assert view["data"]["index"] == 1 and view["data"]["param"] is None  # the page's stop; the file writes no address
    stops = view["data"]["views"]
    assert len(stops) == 6  # layer by layer over 2 layers × 3 words: cell 4 is layer 2, t = 1
    assert f"h_{{1}}^{{(2)}} = {_vec(run.h[1][0])}" in stops[3][0]["text"]
    assert f"h_{{1}}^{{(1)}} = {_vec(run.h[0][0])}$ from below" in stops[3][0]["text"]
    frames = grid["figure"]["frames"]
    assert grid["key"] == "stacked_step_figure_grid" and [f["name"] for f in frames] == [str(i) for i in range(6)]
    for done, frame in enumerate(frames, start=1):  # each frame draws the cells computed so far, none of the rest
        assert " ".join(figure_texts(frame)).count("<b>h</b>") == done
    assert _signed(run.h[0][2][0]) in " ".join(figure_texts(frames[3]))
    assert _signed(run.h[1][1][0]) not in " ".join(figure_texts(frames[3]))  # layer 2, t = 2 comes at cell 5
    dots = next(trace for trace in parameters["figure"]["data"] if trace.get("mode") == "markers")
    assert numbers(dots["y"])[1] == run.parameters == 192  # two layers: the torch module's own count

    assert "cell_step = 2" in page and "cell = lstm" in page and "seed = 0" in page
    assert "The settings words, cell, layers, order" in page  # what only the server can change, in words
    assert plotly.offline.get_plotlyjs() in page
    assert lesson["instant"].startswith("// A control that answers in the browser")
    assert "export{" in lesson["katex"] and not re.search(r"\bimport\s*[({*\"'`]", lesson["katex"])  # self-contained

    fetches = _Fetches()
    fetches.feed(page)
    assert fetches.addresses == []
    plotly_js = max(fetches.scripts, key=len)
    rest = page.replace(plotly_js, "")
    urls = set(re.findall(r"https?://[^\s\"'`)<>]+", rest))
    assert {url for url in urls if not url.startswith("http://www.w3.org/")} == set(), urls  # SVG/MathML names only
