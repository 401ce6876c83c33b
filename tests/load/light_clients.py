"""Light clients: many sessions on Streamlit's own websocket protocol, no browser, so the clients cost nothing.

Each client opens ``/_stcore/stream`` like a browser tab, sends one ``BackMsg.rerun_script`` for a page, and
reads the server's ``ForwardMsg`` protobufs until ``script_finished``. ``class_opens_page`` connects N of them,
releases them at one moment, and records each session's time from its request to its ``script_finished``,
with any exception element the page drew. Loopback only; every wait is bounded.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

from rnnviz.ui.app.registry import PAGES


@dataclass
class FirstRun:
    """What one session saw of its page's first script run."""

    page: str
    seconds: float = float("nan")  # from sending rerun_script to receiving script_finished
    status: str = ""  # script_finished's status name, or what went wrong
    elements: int = 0  # deltas received
    exceptions: list[str] = field(default_factory=list)  # messages of exception elements


def page_name(url_path: str) -> str:
    """What a browser sends as ``page_name`` for a page's address: "" for the default page."""
    spec = next(p for p in PAGES if p.url_path == url_path)
    return spec.address


def stream_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://", 1) + "/_stcore/stream"


def first_run(ws, url_path: str, query_string: str = "", timeout: float = 120.0) -> FirstRun:
    """Ask for one run of the page on an open session and read until it finishes (or ``timeout``)."""
    msg = BackMsg()
    msg.rerun_script.query_string = query_string
    msg.rerun_script.page_name = page_name(url_path)
    record = FirstRun(url_path)
    start = time.perf_counter()
    ws.send(msg.SerializeToString())
    deadline = start + timeout
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            record.status = f"no script_finished within {timeout:.0f} s"
            return record
        forward = ForwardMsg()
        forward.ParseFromString(ws.recv(timeout=left))
        kind = forward.WhichOneof("type")
        if kind == "delta":
            record.elements += 1
            if forward.delta.new_element.WhichOneof("type") == "exception":
                record.exceptions.append(forward.delta.new_element.exception.message)
        elif kind == "page_not_found":
            record.status = "page_not_found"
        elif kind == "script_finished":
            record.seconds = time.perf_counter() - start
            record.status = record.status or ForwardMsg.ScriptFinishedStatus.Name(forward.script_finished)
            return record


def visit(base_url: str, url_path: str, timeout: float = 120.0) -> FirstRun:
    """One session's first visit of a page, alone."""
    with connect(stream_url(base_url), subprotocols=["streamlit"], max_size=None, open_timeout=30) as ws:
        return first_run(ws, url_path, timeout=timeout)


def class_opens_page(base_url: str, url_path: str, sessions: int, timeout: float = 120.0) -> list[FirstRun]:
    """``sessions`` new sessions connect, then all ask for the page at the same moment; one record each."""
    ready = threading.Barrier(sessions + 1, timeout=60)
    records: list[FirstRun | None] = [None] * sessions

    def one(i: int) -> None:
        try:
            with connect(stream_url(base_url), subprotocols=["streamlit"], max_size=None, open_timeout=60) as ws:
                ready.wait()
                records[i] = first_run(ws, url_path, timeout=timeout)
        except Exception as err:  # noqa: BLE001  (a failed session is a result, reported in words)
            records[i] = FirstRun(url_path, status=f"{type(err).__name__}: {err}")
            if not ready.broken:
                ready.abort()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(sessions)]
    for thread in threads:
        thread.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    for thread in threads:
        thread.join(timeout + 90)
    return [r if r is not None else FirstRun(url_path, status="the session never reported") for r in records]


def summary(records: list[FirstRun]) -> dict:
    """Median and max first-run seconds, and what failed, for one page."""
    times = [r.seconds for r in records if r.status in ("FINISHED_SUCCESSFULLY",)]
    return {
        "sessions": len(records),
        "finished": len(times),
        "median_s": round(statistics.median(times), 3) if times else None,
        "max_s": round(max(times), 3) if times else None,
        "exceptions": sorted({e for r in records for e in r.exceptions}),
        "problems": sorted({r.status for r in records if r.status != "FINISHED_SUCCESSFULLY"}),
    }
