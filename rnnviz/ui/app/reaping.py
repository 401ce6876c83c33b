"""Reaping closed tabs' sessions through Streamlit's runtime: a closed tab's session, and with it its model, goes
once Streamlit's disconnected-session TTL is up, whether or not anybody runs a script any more."""

from __future__ import annotations

import logging
import os
import threading
import time

from streamlit.runtime.scriptrunner import get_script_run_ctx

from rnnviz.ui.app.garbage import collect_garbage, collection_owed, note_session, noted_sessions_outside
from rnnviz.ui.app.sessions import session_manager

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
    manager = session_manager()
    try:
        expire, lock = manager._session_storage._cache.expire, manager._storage_lock
    except AttributeError:
        _LOGGER.debug("no session storage to reap", exc_info=True)
        return 0
    _note_this_session(manager)
    ended = _end_sessions_gone(manager, expire, lock)  # a call of its own: no frame holds them through the collection
    if ended:
        collect_garbage()  # their models are freed now; give the memory back to the system (at most every 5 s)
    return ended


def _note_this_session(manager) -> None:
    ctx = get_script_run_ctx(suppress_warning=True)
    info = manager.get_session_info(ctx.session_id) if ctx is not None else None
    if info is not None:
        note_session(ctx.session_id, info.session)


def _end_sessions_gone(manager, expire, lock) -> int:
    with lock:  # Streamlit moves a session between its storage and its active map under this lock
        expired = [info.session for _, info in expire()]
        held = {info.session.id for info in manager.list_sessions()}
    gone = noted_sessions_outside(held)
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
