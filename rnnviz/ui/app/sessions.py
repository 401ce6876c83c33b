"""Sessions as the server holds them: give a closed tab's session, and with it its model, back once Streamlit's
disconnected-session TTL is up, and tell whether a session is still held (for a reload that finds its run)."""

from __future__ import annotations

import gc
import logging
import threading
import time

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
    return len(expire())


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
    return True


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
