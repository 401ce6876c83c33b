"""Cache a long computation by its config while still driving a progress bar from inside it.

``st.cache_data`` replays the elements a cached function drew, so a progress bar created outside and
updated inside breaks the replay. Here the cached function only stores and returns a value: a lookup
raises ``NotComputed`` on a miss (an exception is never cached), the caller computes outside the cache with
its progress bar, then stores the value under the same key.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st


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
