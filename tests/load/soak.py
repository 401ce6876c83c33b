"""A long day of a class, compressed: rounds of light sessions (Streamlit's own websocket protocol, no browser)
open pages in waves, some of them train a live run for a couple of chunks, then all close; after the
disconnected-session TTL a probe opens Server status (which reaps expired sessions and collects garbage) and the
server's resident memory and threads are read from /proc. Used by tests/load/test_soak.py (bounded) and
``python -m bench soak`` (longer). Loopback only; every wait is bounded.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

from tests.load.light_clients import page_name, stream_url

BROWSING = ("home", "hand-built-rnn", "gradient-decay", "unrolling-bptt", "lstm-gates")
TRAINING_PAGE, TRAINING_QUERY = "char-model-training", f"preset={quote('Tiny vanilla RNN')}"


class LightSession:
    """One session on an open websocket: runs a page, remembers its buttons and metrics, and clicks a button."""

    def __init__(self, ws, timeout: float = 120.0):
        self.ws, self.timeout = ws, timeout
        self.url_path, self.query = "", ""
        self.buttons: dict[str, str] = {}  # label → widget id, from the last run
        self.metrics: dict[str, str] = {}  # label → value, from the last run
        self.exceptions: list[str] = []

    def open(self, url_path: str, query: str = "") -> str:
        self.url_path, self.query = url_path, query
        return self._run()

    def click(self, label: str) -> str:
        """Press the button labelled ``label`` (as a browser does: a rerun with its trigger set)."""
        return self._run(trigger=self.buttons[label])

    def _run(self, trigger: str | None = None) -> str:
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = page_name(self.url_path)
        if trigger is not None:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id, state.trigger_value = trigger, True
        self.buttons, self.metrics = {}, {}
        self.ws.send(msg.SerializeToString())
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            forward = ForwardMsg()
            forward.ParseFromString(self.ws.recv(timeout=left))
            kind = forward.WhichOneof("type")
            if kind == "delta":
                element = forward.delta.new_element
                which = element.WhichOneof("type")
                if which == "button":
                    self.buttons[element.button.label] = element.button.id
                elif which == "metric":
                    self.metrics[element.metric.label] = element.metric.body
                elif which == "exception":
                    self.exceptions.append(element.exception.message)
            elif kind == "script_finished":
                return ForwardMsg.ScriptFinishedStatus.Name(forward.script_finished)
        return "timed out"


def session(base_url: str, work, timeout: float = 120.0) -> None:
    with connect(stream_url(base_url), subprotocols=["streamlit"], max_size=None, open_timeout=60) as ws:
        work(LightSession(ws, timeout))


def browse(page: str):
    def work(s: LightSession) -> None:
        s.open(page)

    return work


def train(chunks: int = 2):
    """Open the live page on the tiny RNN and press Step ``chunks`` times: a run with a model, its optimizer state,
    snapshots and a save on disk; then the tab closes with it."""

    def work(s: LightSession) -> None:
        s.open(TRAINING_PAGE, TRAINING_QUERY)
        for _ in range(chunks):
            s.click("Step")

    return work


@dataclass
class ServerNumbers:
    rss_mb: float
    threads: int


def server_numbers(pid: int) -> ServerNumbers:
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            fields[name] = value.split()
    return ServerNumbers(int(fields["VmRSS"][0]) / 1024, int(fields["Threads"][0]))


@dataclass
class Round:
    before: ServerNumbers
    peak: ServerNumbers
    after: ServerNumbers
    live_models_after: int
    sessions: int
    trained: int
    problems: list[str] = field(default_factory=list)


def probe(base_url: str) -> int:
    """Open Server status (it reaps expired sessions and collects garbage); the live models it counts."""
    counted = {}

    def work(s: LightSession) -> None:
        s.open("server-status")
        counted.update(s.metrics)

    session(base_url, work)
    return int(counted["Live models in memory"])


def one_round(base_url: str, pid: int, sessions: int, wave: int, trainers_per_wave: int, ttl_s: float) -> Round:
    """``sessions`` sessions in waves of ``wave`` at once (``trainers_per_wave`` of each wave train), then all
    closed; the numbers before, at the peak (the largest RSS read between waves) and after the TTL."""
    before = server_numbers(pid)
    peak, problems, trained = before, [], 0
    for start in range(0, sessions, wave):
        size = min(wave, sessions - start)
        works = [train() if i < trainers_per_wave else browse(BROWSING[(start + i) % len(BROWSING)])
                 for i in range(size)]
        trained += min(trainers_per_wave, size)

        def run(work) -> None:
            try:
                session(base_url, work)
            except Exception as err:  # noqa: BLE001 (a failed session is a result, said in words)
                problems.append(f"{type(err).__name__}: {err}")

        threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in works]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        now = server_numbers(pid)
        peak = now if now.rss_mb > peak.rss_mb else peak
    time.sleep(ttl_s + 1.0)  # every session of the round is past its TTL now
    live = probe(base_url)
    return Round(before, peak, server_numbers(pid), live, sessions, trained, problems)


def soak(base_url: str, pid: int, rounds: int, sessions: int, wave: int = 15, trainers_per_wave: int = 2,
         ttl_s: float = 5.0) -> list[Round]:
    probe(base_url)  # the process's first imports and caches, before the first "before"
    return [one_round(base_url, pid, sessions, wave, trainers_per_wave, ttl_s) for _ in range(rounds)]


def server_pid_on(port: int) -> int:
    """The pid of the process listening on ``port`` (the streamlit server a harness started)."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                parts = line.split()
                if int(parts[1].rsplit(":", 1)[1], 16) == port and parts[3] == "0A":  # LISTEN
                    inode = parts[9]
    if inode is None:
        raise RuntimeError(f"nothing listens on port {port}")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
        except OSError:
            continue
    raise RuntimeError(f"no process owns the socket on port {port}")
