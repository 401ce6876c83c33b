"""The C heap under the server: glibc's malloc arenas, and giving freed pages back to the system."""

from __future__ import annotations

import ctypes
import ctypes.util
import os


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
    tab's model, its optimizer state, its figures) is not reused by the others, so a server's resident size grows
    with every session while Python's own memory stays flat (``python -m bench soak``). With two arenas it stays
    level. ``make run`` sets MALLOC_ARENA_MAX=2 before
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
