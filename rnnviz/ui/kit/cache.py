"""The caches that decide how far a value may be shared, for every page.

Where caches live: this module holds the helpers below. A page's own engine calls are cached beside the code that
calls them, in its package, with ``st.cache_data`` keyed by a frozen config (a model passed as an ``_`` argument is
keyed by its id). Read-only things made once per process sit in ``st.cache_resource`` where they are made: shared
ones in kit (``models``, ``corpora``, ``baselines``, ``runs``), a page's own (its shipped models, the text its probes
read) in its package, and the server's coordination objects in ``app/server.py``. No per-user trainable model is
ever in ``st.cache_resource``.

- **Per process** (``shared_value``, ``shared_figure``): built once per server process for each key and shared
  by every session. Only for what nobody owns: shipped models, default settings, a widget's value. Safe because
  pages only read what they get (``st.plotly_chart`` only reads a figure).
- **Per session** (``session_value``): a session's own models (a live run, an upload, the race's), whose
  figures nobody else may see and which change as they train. The newest ``SESSION_ENTRIES`` are kept.
- **Either** (``value_for``): shared when the models behind the value are all shared, else the session's.
- **Stored results** (``remember``, ``lookup``, ``is_stored``): long computations (sweeps, captioning
  trainings) kept by their config, computed outside the cache so that a progress bar can be driven from
  inside. ``st.cache_data`` replays the elements a cached function drew, so a progress bar created outside
  and updated inside breaks the replay: here a lookup raises ``NotComputed`` on a miss (an exception is never
  cached), the caller computes with its progress bar, then stores the value under the same key.
- **Big read-only objects per process** (``process_store``): a small thread-safe LRU map, for values too
  big to copy (``st.cache_data`` would pickle them on every rerun), such as the explorer's traces.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

SESSION_ENTRIES = 48  # values kept per session (figures and CPU copies of the session's models)
SESSION_STORE = "kit_cache_session"  # session key: the session's values, oldest first


# --- per process -----------------------------------------------------------------------------------------------


def _name(build: Callable[..., Any]) -> str:
    return f"{build.__module__}.{build.__qualname__}"


def shared_value(build: Callable[..., Any], *args, key: Hashable = (), name: str | None = None) -> Any:
    """``build(*args)`` once per server process for each ``key``, shared by every session.

    ``key`` names everything the value is computed from (a frozen config, a model's id, a widget's value);
    ``args`` are what ``build`` takes, and are not hashed. ``name`` tells apart values whose ``build`` is a
    lambda. A class that opens a page at once with the default settings then pays for each value once instead
    of once per student, and a student who moves a slider gets (and shares) the value of the new setting."""
    return _shared_value(name or _name(build), key, build, args)


def shared_figure(build: Callable[..., go.Figure], *args, key: Hashable = ()) -> go.Figure:
    """``shared_value`` for a figure."""
    return shared_value(build, *args, key=key)


@st.cache_resource(show_spinner=False, max_entries=512)
def _shared_value(name: str, key: Hashable, _build: Callable[..., Any], _args: tuple) -> Any:
    return _build(*_args)


# --- per session -----------------------------------------------------------------------------------------------


def session_value(build: Callable[..., Any], *args, key: Hashable, name: str | None = None) -> Any:
    """``build(*args)`` once per session for ``key`` (see ``shared_value`` for ``key`` and ``name``)."""
    store = st.session_state.setdefault(SESSION_STORE, OrderedDict())
    full = (name or _name(build), key)
    if full in store:
        store.move_to_end(full)
        return store[full]
    value = build(*args)
    store[full] = value
    while len(store) > SESSION_ENTRIES:
        store.popitem(last=False)
    return value


def value_for(shared: bool, build: Callable[..., Any], *args, key: Hashable, name: str | None = None) -> Any:
    """Shared by the process when ``shared`` (the models behind it are every session's), else the session's."""
    keep = shared_value if shared else session_value
    return keep(build, *args, key=key, name=name)


# --- stored results --------------------------------------------------------------------------------------------


class NotComputed(LookupError):
    """Nothing is stored for this key yet."""


@st.cache_data(show_spinner=False, max_entries=512)
def _stored(namespace: str, key: Hashable, _value: Any = None) -> Any:
    if _value is None:
        raise NotComputed(f"{namespace}: {key!r}")
    return _value


def lookup(namespace: str, key: Hashable) -> Any:
    """The stored value, or NotComputed."""
    return _stored(namespace, key)


def is_stored(namespace: str, key: Hashable) -> bool:
    try:
        lookup(namespace, key)
    except NotComputed:
        return False
    return True


def remember(namespace: str, key: Hashable, compute: Callable[[], Any]) -> Any:
    """The stored value for key, or compute() stored under it (compute runs outside the cache)."""
    try:
        return lookup(namespace, key)
    except NotComputed:
        value = compute()
        return _stored(namespace, key, _value=value)


# --- big read-only objects per process -------------------------------------------------------------------------


class ProcessStore:
    """A small thread-safe LRU map (Streamlit serves sessions from several threads)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def process_store(name: str, capacity: int) -> ProcessStore:
    """The process's store called ``name``, made once."""
    return ProcessStore(capacity)
