"""The mechanics-of-recurrence pages: how fast each widget is answered, and how long the TBPTT sweep takes.

1. Widget latency. Each widget of the four pages is moved to values it has not had on the page before, so
   that every cached computation that depends on it misses (bench.common.new_value_moves checks this and
   refuses a value already visited). A control with too few options for that (the nonlinearity, the cell
   kind, where the loss attaches) has the data caches cleared before each move instead, marked "cleared":
   then everything cached on the page runs again, an upper bound. The script run that follows is timed
   through AppTest, beside a rerun of the same page with nothing changed, measured right after (the
   ratio); the table gives the median and the worst move, against the budget of one second.
2. The TBPTT sweep at its defaults (5 values of K, 800 steps each), timed with torch on 1 thread and on
   the configured thread count, alternating, so that the two are compared under the same load.

Usage: python -m bench.mechanics [latency|sweep]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from bench.common import new_value_moves, print_table, timed_rerun
from rnnviz.core.runtime import configure_cpu

BUDGET_S = 1.0
SWEEP_TARGET_S = 30.0
CLEAR = True  # too few options to visit new ones: clear the data caches before each move

# page: [(widget key, values to visit in turn (None clicks a button), clear the caches first?)].
WIDGETS = {
    "app_pages/hand_built_rnn.py": [
        ("handbuilt_step_forward", [None] * 4, False),
        ("handbuilt_bits", ["1,1,0,1,1,0,1", "0,0,1,1,1,1,0,1,0,1,1", "1,0,1,1,1,0,0,1"], False),
        ("handbuilt_w_hy_2", [-0.5, -0.75, -1.5], False),
        ("handbuilt_phi", ["tanh", "relu", "tanh"], CLEAR),
    ],
    "app_pages/unrolling_bptt.py": [
        ("unroll_steps", [12, 9, 11], False),
        ("unroll_hidden", [8, 6, 7], False),
        ("unroll_gain", [2.0, 2.5, 0.5], False),
        ("unroll_attach", ["one-to-many", "many-to-one", "many-to-many"], CLEAR),
    ],
    "app_pages/truncated_bptt.py": [
        ("tbptt_view_chunk", [4, 8, 3], False),
        ("tbptt_position", [20, 25, 30], False),
        ("tbptt_delay", [6, 8, 3], False),
    ],
    "app_pages/stacked_rnns.py": [
        ("stacked_step_forward", [None] * 4, False),
        ("stacked_kind", ["gru", "rnn", "lstm"], CLEAR),
        ("stacked_layers", [4, 3, 1], False),
        ("stacked_d1", [6, 5, 4], False),
    ],
}


def latency() -> dict:
    from tests.apptest_helpers import open_page  # imports streamlit; keep the sweep part light

    results, rows = {}, []
    for page, widgets in WIDGETS.items():
        at = open_page(page)
        timed_rerun(at)  # warm
        seen: dict[str, set] = {}
        for key, values, clear in widgets:
            times = new_value_moves(at, key, values, seen, clear=clear)
            moved, idle = times["wall"], times["unchanged"]
            name = f"{page.split('/')[-1][:-3]}:{key}"
            wall_ms, idle_ms = 1000 * statistics.median(moved), 1000 * statistics.median(idle)
            cpu_ms = 1000 * statistics.median(times["cpu"])
            results[name] = {"median_ms": round(wall_ms), "max_ms": round(1000 * max(moved)),
                             "median_cpu_ms": round(cpu_ms), "idle_rerun_ms": round(idle_ms),
                             "ratio_to_idle": round(wall_ms / idle_ms, 2), "caches_cleared": clear}
            rows.append([name, "cleared" if clear else "click" if values[0] is None else "new values",
                         f"{wall_ms:.0f}", f"{1000 * max(moved):.0f}", f"{cpu_ms:.0f}", f"{idle_ms:.0f}",
                         f"{wall_ms / idle_ms:.2f}", "yes" if max(moved) < BUDGET_S else "NO"])
    print_table("mechanics latency: full-page script time after a widget change (AppTest)",
                ["widget", "caches", "median ms", "max ms", "CPU ms", "no-change rerun ms", "ratio",
                 f"max < {BUDGET_S:g} s"], rows)
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
