"""The mechanics-of-recurrence pages: how fast each widget is answered, and how long the TBPTT sweep takes.

1. Widget latency. Each widget of the four pages is moved to values not seen before (every cached
   computation misses) and the script run that follows is timed through AppTest, beside a rerun of the
   same page with nothing changed, measured right after (the ratio), and beside the budget of one second.
2. The TBPTT sweep at its defaults (5 values of K, 800 steps each), timed with torch on 1 thread and on
   the configured thread count, alternating, so that the two are compared under the same load.

Usage: python -m bench.mechanics [latency|sweep]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from bench.common import print_table, timed_rerun
from rnnviz.core.runtime import configure_cpu

BUDGET_S = 1.0
SWEEP_TARGET_S = 30.0

# (page, widget kind, key, values to visit in turn; each is new to the caches).
WIDGETS = {
    "app_pages/hand_built_rnn.py": [
        ("button", "handbuilt_step_forward", [None] * 4),
        ("text_input", "handbuilt_bits", ["1,1,0,1,1,0,1", "0,0,1,1,1,1,0,1,0,1,1", "1,0,1,1,1,0,0,1"]),
        ("number_input", "handbuilt_w_hy_2", [-0.5, -0.75, -1.5]),
        ("segmented_control", "handbuilt_phi", ["tanh", "relu", "tanh"]),
    ],
    "app_pages/unrolling_bptt.py": [
        ("slider", "unroll_steps", [12, 9, 11]),
        ("slider", "unroll_hidden", [8, 6, 7]),
        ("slider", "unroll_gain", [2.0, 2.5, 0.5]),
        ("segmented_control", "unroll_attach", ["one-to-many", "many-to-one", "many-to-many"]),
    ],
    "app_pages/truncated_bptt.py": [
        ("slider", "tbptt_view_chunk", [4, 8, 3]),
        ("slider", "tbptt_position", [20, 25, 30]),
        ("slider", "tbptt_delay", [6, 8, 3]),
    ],
    "app_pages/stacked_rnns.py": [
        ("button", "stacked_step_forward", [None] * 4),
        ("segmented_control", "stacked_kind", ["gru", "rnn", "lstm"]),
        ("slider", "stacked_layers", [4, 3, 1]),
        ("number_input", "stacked_d1", [6, 5, 4]),
    ],
}


def latency() -> dict:
    from tests.apptest_helpers import open_page  # imports streamlit; keep the sweep part light

    results, rows = {}, []
    for page, widgets in WIDGETS.items():
        at = open_page(page)
        timed_rerun(at)  # warm
        for kind, key, values in widgets:
            moved, moved_cpu, idle = [], [], []
            for value in values:
                widget = getattr(at, kind)(key=key)
                widget.click() if kind == "button" else widget.set_value(value)
                wall, cpu = timed_rerun(at)
                moved.append(wall)
                moved_cpu.append(cpu)
                idle.append(timed_rerun(at)[0])
            name = f"{page.split('/')[-1][:-3]}:{key}"
            wall_ms, idle_ms = 1000 * statistics.median(moved), 1000 * statistics.median(idle)
            cpu_ms = 1000 * statistics.median(moved_cpu)
            results[name] = {"median_ms": round(wall_ms), "max_ms": round(1000 * max(moved)),
                             "median_cpu_ms": round(cpu_ms), "idle_rerun_ms": round(idle_ms),
                             "ratio_to_idle": round(wall_ms / idle_ms, 2)}
            rows.append([name, f"{wall_ms:.0f}", f"{1000 * max(moved):.0f}", f"{cpu_ms:.0f}", f"{idle_ms:.0f}",
                         f"{wall_ms / idle_ms:.2f}", "yes" if max(moved) < BUDGET_S else "NO"])
    print_table("mechanics latency: full-page script time after a widget change (AppTest)",
                ["widget", "median ms", "max ms", "CPU ms", "no-change rerun ms", "ratio", f"max < {BUDGET_S:g} s"],
                rows)
    return results


def sweep(rounds: int = 1) -> dict:
    from rnnviz.lessons.tbptt import SweepConfig
    from rnnviz.lessons.tbptt import sweep as run_sweep

    configured = configure_cpu()
    counts = sorted({1, configured})
    times: dict[int, list[float]] = {n: [] for n in counts}
    cpu: dict[int, list[float]] = {n: [] for n in counts}
    accuracy: dict[int, dict[int, float]] = {}
    for _ in range(rounds):
        for threads in counts:  # alternate, so both see the same load
            torch.set_num_threads(threads)
            wall, proc = time.perf_counter(), time.process_time()
            runs = run_sweep(SweepConfig())
            times[threads].append(time.perf_counter() - wall)
            cpu[threads].append(time.process_time() - proc)
            accuracy[threads] = {r.chunk: round(r.accuracy, 3) for r in runs}
    torch.set_num_threads(configured)
    rows, results = [], {}
    for threads in counts:
        wall = statistics.median(times[threads])
        rows.append([threads, f"{wall:.1f}", f"{statistics.median(cpu[threads]):.1f}",
                     f"{wall / statistics.median(times[counts[0]]):.2f}", "yes" if wall <= SWEEP_TARGET_S else "NO",
                     " ".join(f"K={k}:{a:.2f}" for k, a in accuracy[threads].items())])
        results[f"threads_{threads}"] = {"wall_s": round(wall, 1), "cpu_s": round(statistics.median(cpu[threads]), 1),
                                         "accuracy": accuracy[threads]}
    print_table("tbptt sweep: the page's default sweep (D = 4, L = 32, K = 2, 4, 6, 8, 16; 800 steps each)",
                ["threads", "wall s", "CPU s", "ratio to 1 thread", f"≤ {SWEEP_TARGET_S:g} s", "accuracy"], rows)
    return results


def run() -> dict:
    return {"latency": latency(), "sweep": sweep()}


if __name__ == "__main__":
    parts = sys.argv[1:] or ["latency", "sweep"]
    for part in parts:
        {"latency": latency, "sweep": sweep}[part]()
