"""The app's own error boundary: an unexpected exception in a page or a fragment is said in words with a short
reference, and its traceback goes to the server's log under that reference, never to the browser.

app.py runs each page inside ``error_boundary``; pages and ui packages declare fragments with ``fragment`` instead
of ``st.fragment``. Streamlit's control flow (st.stop, st.rerun, st.switch_page, a fragment's rerun of itself)
raises BaseExceptions that are not ``Exception``: they pass through untouched.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st
from streamlit.errors import FragmentHandledException

from rnnviz.ui.app.lone_surrogates import say_repaired_text

_LOGGER = logging.getLogger(__name__)

SEEN_KEY = "_error_references"  # session key: {(where, type, file, line): [reference, times]}
MAX_SEEN = 50  # distinct failures a session remembers, so that one that repeats is logged in full once


class PageFailure(Exception):
    """What the boundary shows in place of the exception it caught: words and a reference, no traceback."""

    alternate_name = "Something went wrong"  # st.exception's heading, in place of this class's name


def failure_words(what: str, reference: str) -> str:
    """The message a user reads when ``what`` ("the page “Live training”", "this part of the page") failed."""
    return (f"{what[:1].upper()}{what[1:]} stopped with an unexpected error, so what it would have drawn from here "
            "on is missing. Your runs, models and files are untouched: nothing was reset or deleted. Change a "
            "setting or reload the page to try again; if it happens again, give your teacher the reference "
            f"{reference} (the server's log holds the details under it).")


def _signature(where: str, error: Exception) -> tuple:
    """The same failure again: the place, the exception's type, and the line it was raised on."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return where, type(error).__qualname__, None, None
    return where, type(error).__qualname__, tb.tb_frame.f_code.co_filename, tb.tb_lineno


def _reference_for(where: str, error: Exception) -> tuple[str, int]:
    """(reference, how many times this session met this failure): a failure that repeats (a fragment that reruns
    itself every second) keeps its first reference, so the log holds its traceback once, not once a second."""
    signature = _signature(where, error)
    try:
        seen = st.session_state.setdefault(SEEN_KEY, {})
        if signature in seen:
            seen[signature][1] += 1
            return tuple(seen[signature])
        if len(seen) >= MAX_SEEN:
            seen.clear()
        seen[signature] = [secrets.token_hex(4), 1]
        return tuple(seen[signature])
    except Exception:  # noqa: BLE001 (no session to remember it in: a fresh reference)
        return secrets.token_hex(4), 1


def report_failure(where: str, error: Exception) -> str:
    """Log ``error`` under its reference (with its traceback the first time this session meets it) and show the
    words; returns the reference."""
    reference, times = _reference_for(where, error)
    if times == 1:
        _LOGGER.error("rnnviz error %s: %s failed", reference, where, exc_info=error)
    else:
        _LOGGER.warning("rnnviz error %s: %s failed again (%d times in this session; traceback logged the first "
                        "time): %s", reference, where, times, type(error).__name__)
    st.exception(PageFailure(failure_words(where, reference)))
    return reference


@contextmanager
def error_boundary(where: str) -> Iterator[None]:
    """Run the block; an unexpected exception in it is shown as ``failure_words`` and logged with its traceback.

    ``where`` names what failed, for the user and the log ("the page “Live training”")."""
    try:
        yield
    except FragmentHandledException:  # a plain st.fragment inside said it already
        raise
    except Exception as error:  # noqa: BLE001 (the boundary: every unexpected exception, in words)
        report_failure(where, error)


def _part_name(func: Callable) -> str:
    return f"this part of the page ({func.__name__.strip('_').replace('_', ' ')})"


def fragment(func: Callable | None = None, **options: Any):
    """``st.fragment`` (the same arguments: run_every, ...) whose function runs inside ``error_boundary``; its
    fragment id stays the function's own (its module and qualified name)."""
    if func is None:
        return lambda f: fragment(f, **options)

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with error_boundary(_part_name(func)):
            say_repaired_text()  # a fragment's own run (a widget inside it) may bring a repaired text
            return func(*args, **kwargs)
        return None

    return st.fragment(guarded, **options)
