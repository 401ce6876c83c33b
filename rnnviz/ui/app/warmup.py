"""Load the whole app into the server process once, then take it out of the garbage collector's way."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import threading

import rnnviz

_done = threading.Event()
_lock = threading.Lock()


def warm_up_once() -> None:
    """Import every rnnviz module, pandas, plotly and torch._dynamo, then ``gc.freeze()`` what is alive: the
    first session to arrive pays for it and every later one finds it done.

    Why: with torch, plotly and pandas loaded the server holds hundreds of thousands of long-lived objects, and
    each automatic full collection walks all of them with the GIL held. While a class opens its tabs at once, the
    pages' own first imports would set off several in a row, and the server's thread (health checks, every tab's
    messages) would wait. Frozen objects are never walked again. torch imports torch._dynamo when the first
    optimizer is made (the live page's "hello" walkthrough, a first Start), which is slow and leaves many more
    objects for every full collection to walk; here it is frozen with the rest. Only modules and the first
    session's bookkeeping exist this early; no model is frozen with them. That bookkeeping (its session_state, its
    fragments) is frozen, though, and never collected: what the first session puts in it later is let go when the
    session ends (``reaping._empty``), not by the collector."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        import pandas  # noqa: F401
        import plotly.graph_objects  # noqa: F401
        import torch._dynamo  # noqa: F401

        for module in pkgutil.walk_packages(rnnviz.__path__, prefix="rnnviz."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
        gc.freeze()  # no collection first: one full pass over them is the very stall this avoids
        _done.set()
