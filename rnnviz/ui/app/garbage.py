"""Garbage collection for closed tabs: a collection when a session has gone (at most every few seconds), the C
heap's free pages given back after it, and, on request, a report of what memory the process holds."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import tracemalloc
import weakref

from rnnviz.serving.live import LiveRun
from rnnviz.ui.app.heap import give_back_free_memory
from rnnviz.ui.app.sessions import held_session_ids, session_manager

_collected_at = [float("-inf")]
_collect_lock = threading.Lock()
# Every session that ran a script, by id, until a collection after it left the session manager found it freed: a
# weak reference to its AppSession, and how many such collections it has outlived.
_seen_sessions: dict[str, tuple[weakref.ref, int]] = {}
GIVE_UP_AFTER_COLLECTIONS = 3  # a gone session something still holds after these is left to Python's own gc


def note_session(session_id: str, session) -> None:
    """Remember a session that ran a script, until a collection after it has gone finds it freed."""
    with _collect_lock:
        _seen_sessions.setdefault(session_id, (weakref.ref(session), 0))


def noted_sessions_outside(held: set[str]) -> list:
    """The AppSessions noted here whose ids are not in ``held`` and that are not freed yet."""
    with _collect_lock:
        sessions = [ref() for sid, (ref, _) in _seen_sessions.items() if sid not in held]
    return [session for session in sessions if session is not None]


def _sessions_gone() -> list[str]:
    """Sessions that ran a script and have left the session manager (expired, by us or by Streamlit itself when
    another tab closed, or ended) and that no collection has found freed yet."""
    manager = session_manager()
    if manager is None:
        return []
    try:
        held = held_session_ids(manager)
    except AttributeError:  # a Streamlit that moved its session storage
        return []
    with _collect_lock:
        return [sid for sid in _seen_sessions if sid not in held]


def collection_owed() -> bool:
    """A session has gone since the last collection that found it freed: its model may sit in a reference cycle
    (a page's functions and their module globals), alive to ``LiveRun.count_alive`` until a collection runs."""
    return bool(_sessions_gone())


def collect_garbage(at_most_every: float = 5.0, when_owed: bool = False) -> bool:
    """``gc.collect()``, unless this process ran one in the last ``at_most_every`` seconds; True when it ran.
    ``when_owed``: run it anyway when a session has gone since the last one (``collection_owed``).

    The Server status page collects so that a closed tab's run that nothing refers to any more is not counted
    as alive. A full collection holds the GIL, and when a class opens the page at once every session would run
    one in turn; one per few seconds keeps the count fresh for all of them. A session
    gone within those few seconds owes a collection: the page pays it at once (``when_owed``), so that it never
    counts a closed tab's model past the TTL, and the session sweeper pays it once the few seconds have passed.
    A gone session whose AppSession something still holds (its last script still finishing) stays owed after
    the collection, to be paid by the next one."""
    gone = _sessions_gone()
    with _collect_lock:
        now = time.monotonic()
        if now - _collected_at[0] < at_most_every and not (when_owed and gone):
            return False
        _collected_at[0] = now
    gc.collect()  # holds the GIL: no thread lets go of a gone session while it runs
    with _collect_lock:
        for sid in gone:
            ref, outlived = _seen_sessions.get(sid, (None, 0))
            if ref is None:
                continue
            if ref() is None or outlived + 1 >= GIVE_UP_AFTER_COLLECTIONS:
                del _seen_sessions[sid]  # paid: it and all it held are freed now (or it is not ours to free)
            else:
                _seen_sessions[sid] = (ref, outlived + 1)
    give_back_free_memory()
    write_memory_report()
    return True


MEMORY_REPORT_ENV = "RNNVIZ_MEMORY_REPORT"  # a file: each collection writes the live runs and Python's memory


def write_memory_report(top: int = 30) -> None:
    """With ``$RNNVIZ_MEMORY_REPORT`` set, write to that file as JSON, after each garbage collection: the live
    runs in memory (what Server status shows), the time, and, with Python tracing allocations
    (``PYTHONTRACEMALLOC=1``), the traced total and the lines holding the most memory: ``python -m bench soak``
    compares them round by round, to tell memory that Python objects hold from memory the C heap keeps."""
    path = os.environ.get(MEMORY_REPORT_ENV)
    if not path:
        return
    report = {"at": time.time(), "live_runs": LiveRun.count_alive(), "objects": len(gc.get_objects())}
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        report["top"] = [{"where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}", "bytes": s.size,
                          "blocks": s.count} for s in snapshot.statistics("lineno")[:top]]
        report["traced_bytes"] = tracemalloc.get_traced_memory()[0]
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as out:
        json.dump(report, out)
    os.replace(temporary, path)  # a reader never sees half a report
