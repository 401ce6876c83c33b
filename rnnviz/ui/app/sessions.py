"""Sessions as the server holds them: give a closed tab's session, and with it its model, back once Streamlit's
disconnected-session TTL is up, and tell whether a session is still held (for a reload that finds its run)."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import logging
import os
import threading
import time
import tracemalloc

from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

_LOGGER = logging.getLogger(__name__)


def reap_expired_sessions() -> int:
    """Drop the disconnected sessions whose ``server.disconnectedSessionTTL`` has run out; returns how many.

    Streamlit keeps a closed tab's session (its session_state: a live model, its optimizer and weight
    snapshots) in a TTL cache that only removes expired entries when another session is written to it, so
    the last tabs closed after a lesson would hold their models until somebody else left. Every script run
    calls this, which costs a look at the oldest entry. It reaches into the runtime's session storage
    (Streamlit 1.67 has no public call for it); if a later Streamlit moves it, this does nothing and the
    browser test of a closed tab's model fails."""
    try:
        cache = Runtime.instance()._session_mgr._session_storage._cache
        expire = cache.expire
    except (AttributeError, RuntimeError):
        _LOGGER.debug("no session storage to reap", exc_info=True)
        return 0
    reaped = len(expire())
    if reaped:
        collect_garbage()  # their models are freed now; give the memory back to the system (at most every 5 s)
    return reaped


_collected_at = [float("-inf")]
_collect_lock = threading.Lock()


def collect_garbage(at_most_every: float = 5.0) -> bool:
    """``gc.collect()``, unless this process ran one in the last ``at_most_every`` seconds; True when it ran.

    The Server status page collects so that a closed tab's run that nothing refers to any more is not counted
    as alive. A full collection holds the GIL for a tenth of a second or more, and when a class opened the page
    at once every session ran one in turn; one per few seconds keeps the count fresh for all of them."""
    with _collect_lock:
        now = time.monotonic()
        if now - _collected_at[0] < at_most_every:
            return False
        _collected_at[0] = now
    gc.collect()
    give_back_free_memory()
    write_memory_report()
    return True


MEMORY_REPORT_ENV = "RNNVIZ_MEMORY_REPORT"  # a file: each collection writes where Python's memory is (diagnosis)


def write_memory_report(top: int = 30) -> None:
    """With ``$RNNVIZ_MEMORY_REPORT`` set and Python tracing allocations (``PYTHONTRACEMALLOC=1``), write the
    traced total and the lines holding the most memory to that file as JSON: ``python -m bench soak`` compares
    them round by round, to tell memory that Python objects hold from memory the C heap keeps."""
    path = os.environ.get(MEMORY_REPORT_ENV)
    if not path or not tracemalloc.is_tracing():
        return
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    lines = [{"where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}", "bytes": s.size, "blocks": s.count}
             for s in snapshot.statistics("lineno")[:top]]
    report = {"traced_bytes": tracemalloc.get_traced_memory()[0], "objects": len(gc.get_objects()), "top": lines}
    with open(path, "w") as out:
        json.dump(report, out)


def _glibc():
    """glibc, for malloc_trim and mallopt; None on another C library (musl, macOS, Windows)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_GLIBC = _glibc()
M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let glibc's malloc keep at most ``arenas`` arenas. By default it makes one per thread up to 8 × the cores,
    and Streamlit runs each session's scripts on threads of their own: memory that one arena freed (a closed
    tab's model, its optimizer state, its figures) is not reused by the others, and a server's resident size grew
    by about 0.15 MB per session, never returned (measured with ``python -m bench soak``: Python's own traced
    memory stayed flat meanwhile). With two arenas it stays level. ``make run`` sets MALLOC_ARENA_MAX=2 before
    the process starts, which also covers the arenas made before this runs; an operator's MALLOC_ARENA_MAX (even
    empty: glibc's default) is left as it is. True when glibc took the setting here."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return _GLIBC is not None and _GLIBC.mallopt(M_ARENA_MAX, arenas) == 1


def give_back_free_memory() -> None:
    """Return the C heap's free pages to the system (``malloc_trim(0)``, a few ms): a closed tab's model is freed
    by Python, but glibc keeps the pages mapped until told."""
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def current_session_id() -> str | None:
    """The id of the session this script run belongs to (None outside a script run)."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def session_alive(session_id: str) -> bool:
    """Whether the server still holds this session: its tab is open, or was closed less than
    ``server.disconnectedSessionTTL`` ago (a reload within it may find what the session held).

    Without a server runtime (AppTest) nothing can be told, so every session counts as alive and only the
    weak references of the run registry decide."""
    try:
        manager = Runtime.instance()._session_mgr
        get_info = manager.get_session_info
    except (AttributeError, RuntimeError):
        return True
    return get_info(session_id) is not None


def session_connected(session_id: str) -> bool:
    """Whether this session's tab is open right now (its websocket connected); a closed tab's session may still
    be held for the TTL (``session_alive``) but is not connected. Without a server runtime (AppTest), True."""
    try:
        is_active = Runtime.instance()._session_mgr.is_active_session
    except (AttributeError, RuntimeError):
        return True
    return is_active(session_id)
