"""How fast the Hidden-cell explorer's readings answer their controls on the shipped Python LSTM (10,000
held-out characters): the prediction strip's window, the n-gram's order (a new error breakdown), and the state
path's chosen character, layer quantity and colour.

Each control moves to values it has not had on the page (bench.common.new_value_moves refuses a value already
visited), so everything cached on them misses, and the script run that follows is timed through AppTest, beside a
rerun with nothing changed in the same rounds. The page is opened and the n-gram baselines fitted first (not
timed: the first visit's cost is explorer_speed's). Usage: python -m bench explorer_readings
"""

from __future__ import annotations

import statistics

from bench.common import new_value_moves, print_table, timed_rerun
from rnnviz.core.runtime import configure_cpu

BUDGET_S = 1.0
PAGE = "app_pages/hidden_cell_explorer.py"


def run() -> dict:
    configure_cpu()
    from tests.apptest_helpers import open_page  # imports streamlit; keep `python -m bench` light otherwise

    at = open_page(PAGE, timeout=300)
    timed_rerun(at)
    start = int(at.session_state["explorer_window"])
    controls = [
        ("strip window", "explorer_strip_start", [1000, 2000, 3000]),
        ("n-gram order", "explorer_ngram_order", [4, 3, 2]),
        ("path: chosen character", "explorer_path_at", [start + 100, start + 400, start + 700]),
        ("path: colour", "explorer_path_colour", ["bracket_depth", "line_position"]),
    ]
    seen: dict[str, set] = {}
    results, rows = {}, []
    for name, key, values in controls:
        times = new_value_moves(at, key, values, seen)
        moved, idle = times["wall"], times["unchanged"]
        wall_ms, idle_ms = 1000 * statistics.median(moved), 1000 * statistics.median(idle)
        results[name] = {"median_ms": round(wall_ms), "max_ms": round(1000 * max(moved)),
                         "idle_rerun_ms": round(idle_ms), "moves": len(moved)}
        rows.append([name, f"{wall_ms:.0f}", f"{1000 * max(moved):.0f}", f"{idle_ms:.0f}",
                     "yes" if max(moved) < BUDGET_S else "NO"])
    print_table("explorer_readings: script time after a control moves to a value new to the caches (AppTest)",
                ["control", "median ms", "max ms", "no-change rerun ms", f"max < {BUDGET_S:g} s"], rows)
    return results


if __name__ == "__main__":
    run()
