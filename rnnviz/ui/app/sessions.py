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
import weakref

from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from rnnviz.charlm.live import LiveRun

_LOGGER = logging.getLogger(__name__)


def reap_expired_sessions() -> int:
    """Drop the disconnected sessions whose ``server.disconnectedSessionTTL`` has run out, and shut down every
    session that has left Streamlit's session manager; returns how many were dropped or shut down.

    Streamlit keeps a closed tab's session (its session_state: a live model, its optimizer and weight
    snapshots) in a TTL cache that only removes expired entries when another session is written to it, so
    the last tabs closed after a lesson would hold their models until somebody else left. And an expired
    session is dropped without ``AppSession.shutdown``: its last run's download buttons stay registered with
    the media file manager, whose deferred callables (the checkpoint download closes over the run) held the
    model for good. Every script run calls this, which costs a look at the oldest entry and at the list of
    sessions, and so does the sweeper thread (``start_session_sweeper``) every few seconds, for a server where
    nobody runs a script any more. It reaches into the runtime's session manager (Streamlit 1.67 has no public
    call for it); if a later Streamlit moves it, this does nothing and the browser tests of a closed tab's
    model fail."""
    try:
        manager = Runtime.instance()._session_mgr
        expire, lock = manager._session_storage._cache.expire, manager._storage_lock
    except (AttributeError, RuntimeError):
        _LOGGER.debug("no session storage to reap", exc_info=True)
        return 0
    _note_this_session(manager)
    ended = _end_sessions_gone(manager, expire, lock)  # a call of its own: no frame holds them through the collection
    if ended:
        collect_garbage()  # their models are freed now; give the memory back to the system (at most every 5 s)
    return ended


def _end_sessions_gone(manager, expire, lock) -> int:
    with lock:  # Streamlit moves a session between its storage and its active map under this lock
        expired = [info.session for _, info in expire()]
        held = {info.session.id for info in manager.list_sessions()}
    with _collect_lock:
        gone = [ref() for sid, (ref, _) in _seen_sessions.items() if sid not in held]
    ended = {id(s): s for s in [*expired, *gone] if s is not None}
    for session in ended.values():
        try:
            session.shutdown()  # does nothing for a session shut down already (a closed tab Streamlit ended)
            _empty(session)
        except Exception:  # noqa: BLE001 (one session's shutdown never stops the others')
            _LOGGER.warning("shutting down an expired session failed", exc_info=True)
    return len(ended)


def _empty(session) -> None:
    """Let go of what an ended session holds: its session_state (a live model), its fragments (the page's
    functions, whose globals hold the run) and its unsent messages.

    Freeing the AppSession would free them, unless it cannot be freed: the first session of a server is alive
    when the warm-up calls ``gc.freeze()`` (rnnviz/ui/app/warmup.py), and a frozen cycle is never collected, so
    whatever its session_state held later lived as long as the process."""
    holders = (("_session_state", "clear"), ("_fragment_storage", "clear"),
               ("_fragment_storage", "clear_outside_wrappers"), ("_browser_queue", "clear"))
    for attribute, method in holders:
        empty = getattr(getattr(session, attribute, None), method, None)
        if empty is not None:
            empty()


SWEEP_EVERY_ENV = "RNNVIZ_SWEEP_EVERY_S"  # seconds between the sweeper's looks at the closed tabs' sessions
DEFAULT_SWEEP_EVERY_S = 5.0
_sweeper: list[threading.Thread | None] = [None]
_sweeper_lock = threading.Lock()


def start_session_sweeper() -> bool:
    """Reap the expired sessions every few seconds in a thread of its own (started once per process; True when
    this call started it).

    Reaping at every script run is not enough on a server where nobody runs a script any more: a replica whose
    last tab closed kept that tab's model in memory for good (and a run on Ray that the tab had found again by its
    address kept mirroring its actor, where going would have let an orphaned actor go). Streamlit's session
    storage is reaped from script threads already; the sweeper is one more such thread."""
    with _sweeper_lock:
        if _sweeper[0] is not None and _sweeper[0].is_alive():
            return False
        try:
            every = float(os.environ.get(SWEEP_EVERY_ENV) or DEFAULT_SWEEP_EVERY_S)
        except ValueError:
            every = DEFAULT_SWEEP_EVERY_S
        every = every if every > 0 else DEFAULT_SWEEP_EVERY_S

        def sweep() -> None:
            while True:
                time.sleep(every)
                try:
                    reap_expired_sessions()
                    if collection_owed():
                        collect_garbage()  # a session gone within 5 s of a collection is freed once they pass
                except Exception:  # a runtime shutting down; never let the sweeper die of one bad look
                    _LOGGER.debug("session sweep failed", exc_info=True)

        _sweeper[0] = threading.Thread(target=sweep, name="rnnviz-session-sweeper", daemon=True)
        _sweeper[0].start()
        return True


_collected_at = [float("-inf")]
_collect_lock = threading.Lock()
# Every session that ran a script, by id, until a collection after it left the session manager found it freed: a
# weak reference to its AppSession, and how many such collections it has outlived.
_seen_sessions: dict[str, tuple[weakref.ref, int]] = {}
GIVE_UP_AFTER_COLLECTIONS = 3  # a gone session something still holds after these is left to Python's own gc


def _note_this_session(manager) -> None:
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or ctx.session_id in _seen_sessions:
        return
    info = manager.get_session_info(ctx.session_id)
    if info is not None:
        with _collect_lock:
            _seen_sessions[ctx.session_id] = (weakref.ref(info.session), 0)


def _sessions_gone() -> list[str]:
    """Sessions that ran a script and have left the session manager (expired, by us or by Streamlit itself when
    another tab closed, or ended) and that no collection has found freed yet."""
    try:
        manager = Runtime.instance()._session_mgr
        with manager._storage_lock:
            held = {info.session.id for info in manager.list_sessions()}
    except (AttributeError, RuntimeError):
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
    as alive. A full collection holds the GIL for a tenth of a second or more, and when a class opened the page
    at once every session ran one in turn; one per few seconds keeps the count fresh for all of them. A session
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
