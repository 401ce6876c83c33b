"""A class at once, bounded: one server with 2 training slots, 8 browser sessions on different pages.

Three sessions use the live-training page: two train different corpora, the third queues for a slot and
starts when one frees. The other five open the home, hand-built, gradient-decay, explorer and server-status
pages and use them meanwhile. Throughout, a process of its own asks /_stcore/health four times a second.
Every answer must be "ok"; at least 98% must come within 1 s (the issue's requirement) and none may take
3 s. Why a share and not every answer: the eight Chromium renderers and this test run on the server's own
2 cores, where the machine's other tenants also come and go, and a lone answer over 1 s then says more
about the test machine than about the server (measured: max 0.6-1.1 s over runs; before this issue's
fixes, Streamlit's gc.collect after every script run held the GIL and answers took up to 2.7 s). The
exact maximum goes into the figures. Loopback only.

What the server sends each session is read off its websocket (Streamlit's ForwardMsg protobufs): when each
script run finished, and any exception element, whether or not the browser has painted the page yet
(headless Chromium paints one window at a time, so a page is brought to the front before it is read). The
figures go to the test's output and to tests/e2e/screenshots/load-figures.json.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from rnnviz.charlm.corpus import load_builtin
from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import SCREENSHOTS, slider_thumb, streamlit_server, wait_idle
from tests.e2e.test_live_training import choose, click, number, wait_for

HEALTH_LIMIT_S = 1.0
HEALTH_WITHIN_LIMIT_SHARE = 0.98
HEALTH_STALL_S = 3.0
SESSIONS = 8
TINY_RNN = quote("Tiny vanilla RNN")
TRAINING = f"char-model-training?preset={TINY_RNN}"
OTHERS = ["home", "hand-built-rnn", "gradient-decay", "hidden-cell-explorer", "server-status"]


class HealthPoller:
    """Asks /_stcore/health every ``every`` seconds from a process of its own (tests/load/health_poll.py).

    After stop(): ``latencies`` of every answer (inf for a failure), ``times`` since the poller began, and
    ``failures`` in words."""

    def __init__(self, base_url: str, every: float = 0.25):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.load.health_poll", base_url, str(every)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
        self.began = time.perf_counter()
        self.latencies: list[float] = []
        self.times: list[float] = []
        self.failures: list[str] = []

    def stop(self) -> None:
        output, _ = self.process.communicate("", timeout=30)  # closing its stdin stops it
        for line in output.splitlines():
            answer = json.loads(line)
            self.times.append(answer["at"])
            self.latencies.append(math.inf if answer["problem"] else answer["seconds"])
            if answer["problem"]:
                self.failures.append(f"at {answer['at']:.1f} s: {answer['problem']} after {answer['seconds']:.2f} s")


class Wire:
    """What the server sent one browser session: when its script runs finished, and any exception element."""

    def __init__(self, page, name: str):
        self.name = name
        self.finished: list[float] = []
        self.exceptions: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "script_finished" and msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
            self.finished.append(time.perf_counter())
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            if element.WhichOneof("type") == "exception":
                self.exceptions.append(f"{self.name}: {element.exception.type}: {element.exception.message}")


@pytest.fixture(scope="module")
def class_server():
    with streamlit_server(env={"RNNVIZ_TRAINING_SLOTS": "2"}) as url:
        yield url


def front(page):
    """Bring a page to the front, so that headless Chromium paints what the server sent it."""
    page.bring_to_front()
    return page


def server_status(page, wire: Wire, seen: list) -> dict[str, str]:
    """Refresh the server-status page and read its metrics once the server has finished that run.

    Waiting on the wire, not on the page, matters: a click while the previous run is still going restarts
    it, so a test that clicks again too soon never sees fresh figures."""
    runs = len(wire.finished)
    front(page).get_by_role("button", name="Refresh").click()
    deadline = time.perf_counter() + 20
    while len(wire.finished) == runs and time.perf_counter() < deadline:
        page.wait_for_timeout(100)
    wait_idle(page)
    shown = dict(zip(page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                     page.locator("[data-testid='stMetricValue']").all_inner_texts()))
    seen[:] = [shown]
    return shown


def scheduled_samples(page) -> list[str]:
    """The texts under "Samples along the way" (up to the next heading): what this session's run wrote."""
    return front(page).evaluate("""() => {
        let inside = false; const texts = [];
        for (const el of document.querySelectorAll("h1, h2, h3, [data-testid='stCode'] code")) {
            if (el.matches("h1, h2, h3")) { inside = el.innerText.includes("Samples along the way"); continue; }
            if (inside && el.innerText.trim()) texts.push(el.innerText);
        }
        return texts;
    }""")


@dataclass(frozen=True)
class Backend:
    """Where the class's training runs, and what the pages say about it."""

    name: str  # in the figures
    status: dict[str, str]  # the Server status metrics while two train and one waits
    queue_text: str  # on the waiting session's page
    figures_file: str  # under tests/e2e/screenshots
    patience_s: float = 60.0  # for training to start; a Ray actor is a new process that imports torch
    status_text: str | None = None  # also on the Server status page


IN_PROCESS = Backend("in-process, 2 training slots", {"Training now": "2 of 2", "Waiting for a slot": "1",
                                                       "Live models in memory": "3"},
                     "this server trains 2 models at a time", "load-figures.json")


@pytest.mark.alone  # its health latencies would also measure whatever ran beside it
def test_eight_sessions_two_training_and_one_waiting(class_tabs, class_server):
    run_class(class_tabs, class_server, IN_PROCESS)


def run_class(tabs, url: str, backend: Backend) -> None:
    """Eight sessions at once: two train, a third queues and starts when one pauses, five use other pages.

    Each session is a tab of ``tabs`` (one Chromium profile; a tab is a Streamlit session of its own). The tabs
    share the profile's compiled scripts, so Chromium, which runs on the server's own two cores here and on the
    students' machines in a class, spends less of them compiling Streamlit's and plotly's code eight times."""
    poller = HealthPoller(url)
    names = ["train-hello", "train-english", "wait-stdlib", *OTHERS]
    patience = backend.patience_s
    pages = []
    try:
        for _ in range(SESSIONS):
            pages.append(tabs.new_page())
            pages[-1].set_viewport_size({"width": 1300, "height": 900})
        wires = [Wire(page, name) for page, name in zip(pages, names)]
        started = time.perf_counter()
        for page, address in zip(pages, [TRAINING] * 3 + OTHERS):  # all eight arrive at once
            page.goto(f"{url}/{'' if address == 'home' else address}", wait_until="commit")
        while not all(wire.finished for wire in wires):  # the first script run of each, as the server sent it
            assert time.perf_counter() - started < 2 * patience, [w.name for w in wires if not w.finished]
            pages[0].wait_for_timeout(50)
        page_seconds = {wire.name: round(wire.finished[0] - started, 2) for wire in wires}
        for page in pages:
            front(page).wait_for_selector("h1")

        first, second, waiting = pages[:3]
        home, hand, decay, explorer, status = pages[3:]
        for page, corpus in ((first, "hello"), (second, "english-docs"), (waiting, "python-stdlib")):
            choose(front(page), "Built-in corpus", CORPUS_LABELS[corpus])
        for page in (first, second):
            click(front(page), "Start")
        for page in (first, second):
            wait_for(lambda p=page: (number(front(p), "Step") or 0) > 0, patience, "both sessions to train")
        click(front(waiting), "Start")
        wait_for(lambda: front(waiting).get_by_text("You are number 1 in the queue").count() > 0, 60,
                 "the third session to queue for a slot")
        assert front(waiting).get_by_text(backend.queue_text).count() > 0

        # The other sessions use their pages while two train and one waits.
        for _ in range(3):
            front(hand).get_by_role("button", name=re.compile(r"^Step\b")).click()  # named with its shortcut key
            wait_idle(hand)
        thumb = slider_thumb(front(decay), "σ₁, the largest")
        thumb.focus()
        thumb.press("ArrowLeft")
        wait_idle(decay)
        front(explorer).get_by_role("button", name="Show").nth(1).click()
        wait_idle(explorer, 120_000)
        front(home).get_by_role("link", name="Hand-built RNN").first.click()
        home.wait_for_selector("h1:has-text('Hand-built RNN')")
        seen: list = []
        try:
            wait_for(lambda: all(server_status(status, wires[names.index("server-status")], seen).get(label) == value
                                 for label, value in backend.status.items()), 30, "the server status page")
        except AssertionError as err:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            for name, shown_page in zip(names, pages):
                front(shown_page).screenshot(path=SCREENSHOTS / f"load-{name}.png", full_page=True)
            raise AssertionError(f"{err}: expected {backend.status}, shown {seen}") from None
        if backend.status_text:
            assert front(status).get_by_text(backend.status_text).count() > 0, seen

        # A slot frees: the waiting session starts by itself.
        click(front(first), "Pause")
        wait_for(lambda: (number(front(waiting), "Step") or 0) > 0, 2 * patience,
                 "the waiting session to start when a slot frees")
        assert waiting.get_by_text("Waiting for a free training slot").count() == 0

        # Each session's model is its own: the uniform guess is ln V of its own corpus, and everything it
        # writes uses only its own corpus's characters ("hello" has four).
        for page, corpus in ((first, "hello"), (second, "english-docs"), (waiting, "python-stdlib")):
            vocab = load_builtin(corpus).vocab
            samples = wait_for(lambda p=page: scheduled_samples(p), 60, f"a sample from the {corpus} model")
            assert number(page, "Uniform guess") == pytest.approx(math.log(vocab.size), abs=1e-3)
            assert set("".join(samples)) <= set(vocab.chars) | {"\n"}, corpus
        assert set("".join(scheduled_samples(second))) - set("ehlo"), "the English model writes more than h, e, l, o"
        for page in (second, waiting):
            click(front(page), "Pause")
        for page in pages:
            assert front(page).locator("[data-testid='stException']").count() == 0, page.url
        wall = time.perf_counter() - started
    finally:
        poller.stop()
        for page in pages:
            page.close()

    assert [e for wire in wires for e in wire.exceptions] == []
    latencies = poller.latencies
    figures = {
        "sessions": SESSIONS,
        "backend": backend.name,
        "first_script_run_s": page_seconds,
        "script_runs": {wire.name: len(wire.finished) for wire in wires},
        "health_checks": len(latencies),
        "health_median_s": round(statistics.median(latencies), 4),
        "health_max_s": round(max(latencies), 4),
        "health_within_1s_share": round(sum(s < HEALTH_LIMIT_S for s in latencies) / len(latencies), 4),
        "wall_s": round(wall, 1),
    }
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / backend.figures_file).write_text(json.dumps(figures, indent=2))
    print(f"load figures ({backend.name}):", json.dumps(figures))
    assert not poller.failures, f"/_stcore/health did not answer: {poller.failures}"
    slow = sorted(((round(s, 3), round(t, 1)) for s, t in zip(latencies, poller.times)), reverse=True)[:8]
    assert figures["health_within_1s_share"] >= HEALTH_WITHIN_LIMIT_SHARE, f"slowest (s, at s): {slow}"
    assert max(latencies) < HEALTH_STALL_S, f"/_stcore/health stalled: slowest (s, at s): {slow}"
