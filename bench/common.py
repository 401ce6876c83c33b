"""Timing helpers for a noisy 2-core machine: alternate the contenders, report medians and ratios."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def alternate(contenders: dict[str, Callable[[], object]], rounds: int = 5, warmup: int = 1) -> dict[str, list[float]]:
    """Run each contender once per round, in turn, and return its wall times in seconds per round."""
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def timed_rerun(at) -> tuple[float, float]:
    """Wall and CPU seconds (all threads of this process) of one AppTest script run; raises if the page did."""
    wall, cpu = time.perf_counter(), time.process_time()
    at.run()
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    return time.perf_counter() - wall, time.process_time() - cpu


def new_value_moves(at, key: str, values: list, seen: dict[str, set], clear: bool = False) -> dict[str, list[float]]:
    """Move the widget ``key`` to each value in turn (None clicks a button) and time the script run that follows
    (wall and CPU), then a rerun with nothing changed right after.

    Each value must be new to the caches: ``seen[key]`` holds every value the widget has had on this page
    (its value when first met, then each move), and a value already in it raises, so a benchmark cannot
    time a cache hit by mistake. A control with too few options to keep finding new values (``clear``)
    has Streamlit's data caches cleared before each move instead: an upper bound, since every cached
    computation on the page then runs again."""
    import streamlit as st

    widget = at.get_by_key(key)
    if any(v is not None for v in values):
        visited = seen.setdefault(key, {widget.value})
        for value in values:
            if value in visited and not clear:
                raise ValueError(f"{key} = {value!r} is not new to the caches on this page")
            visited.add(value)
    times: dict[str, list[float]] = {"wall": [], "cpu": [], "unchanged": []}
    for value in values:
        if clear:
            st.cache_data.clear()
        widget = at.get_by_key(key)
        widget.click() if value is None else widget.set_value(value)
        wall, cpu = timed_rerun(at)
        times["wall"].append(wall)
        times["cpu"].append(cpu)
        times["unchanged"].append(timed_rerun(at)[0])
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def matmul_peak_gflops(n: int = 1024, repeats: int = 10) -> float:
    """Best-of dense fp32 matmul throughput on this machine right now, the ceiling for our kernels."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def print_table(title: str, header: list[str], rows: list[list[object]]) -> None:
    """A plain fixed-width table on stdout."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(f"\n{title}")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
