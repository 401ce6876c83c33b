"""Sessions as Streamlit's runtime holds them: this script run's session, and whether a session is still held or
still connected (for a reload that finds its run, and for a training slot whose tab has closed).

Streamlit 1.67 has no public call for these: ``session_manager`` reaches into the runtime for its session manager
(rnnviz.ui.app.reaping reaches further, into its storage).
"""

from __future__ import annotations

from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx


def session_manager():
    """The runtime's session manager; None without a server runtime (AppTest) or when Streamlit moved it."""
    try:
        return Runtime.instance()._session_mgr
    except (AttributeError, RuntimeError):
        return None


def held_session_ids(manager) -> set[str]:
    """The ids of every session ``manager`` holds (open tabs, and closed ones within their TTL)."""
    with manager._storage_lock:  # Streamlit moves a session between its storage and its active map under this lock
        return {info.session.id for info in manager.list_sessions()}


def current_session_id() -> str | None:
    """The id of the session this script run belongs to (None outside a script run)."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def session_alive(session_id: str) -> bool:
    """Whether the server still holds this session: its tab is open, or was closed less than
    ``server.disconnectedSessionTTL`` ago (a reload within it may find what the session held).

    Without a server runtime (AppTest) nothing can be told, so every session counts as alive and only the
    weak references of the run registry decide."""
    get_info = getattr(session_manager(), "get_session_info", None)
    return True if get_info is None else get_info(session_id) is not None


def session_connected(session_id: str) -> bool:
    """Whether this session's tab is open right now (its websocket connected); a closed tab's session may still
    be held for the TTL (``session_alive``) but is not connected. Without a server runtime (AppTest), True."""
    is_active = getattr(session_manager(), "is_active_session", None)
    return True if is_active is None else is_active(session_id)
