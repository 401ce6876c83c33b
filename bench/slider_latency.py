"""How fast the Gradient decay and LSTM gates pages answer each slider, at the largest sizes (H = 64, K = 300).

Each slider is moved to values it has not had on the page before, so that every cached computation that
depends on it misses (bench.common.new_value_moves checks this and refuses a value already visited), and
the script run that follows is timed through AppTest. The Gradient decay page draws one section at a time:
each section is opened first (not timed), then its sliders are moved; a value counts as new per section,
since each section caches its own computations. AppTest reruns the whole page, fragments included, so these
are upper bounds: in a browser a slider inside a fragment reruns only that fragment. Each slider's median
and worst run are shown beside the page's rerun with nothing changed, measured in the same rounds (the
ratio), and beside the budget of one second. Usage: python -m bench.slider_latency
"""

from __future__ import annotations

import statistics

from bench.common import new_value_moves, print_table, timed_rerun
from rnnviz.core.runtime import configure_cpu

BUDGET_S = 1.0
SECTION = "gradient_decay_section"

# page: [(section or None, slider key, values to visit in turn)]. The first moves take K to 300.
SLIDERS = {
    "app_pages/gradient_decay.py": [
        ("tanh", "gradient_decay_steps", [280, 290, 300]),
        ("tanh", "gradient_decay_sigma", [1.01, 1.02, 1.03, 1.04]),
        ("tanh", "gradient_decay_input_scale", [1.1, 1.2, 1.3]),
        ("tanh", "gradient_decay_input_weight", [1.1, 1.2, 1.3]),
        ("powers", "gradient_decay_sigma", [1.11, 1.12, 1.13]),
        ("sum", "gradient_decay_sigma", [1.21, 1.22, 1.23]),
        ("clipping", "gradient_decay_threshold", [0.5, 2.0, 5.0]),
        ("clipping", "gradient_decay_lr", [0.5, 2.0, 5.0]),
        ("lstm", "gradient_decay_forget_bias", [1.5, 2.0, 2.5]),
    ],
    "app_pages/lstm_gates.py": [
        (None, "lstm_gates_f", [0.61, 0.62, 0.63]),
        (None, "lstm_gates_g", [0.31, 0.32, 0.33]),
        (None, "lstm_gates_hidden", [6, 7, 8]),
        (None, "lstm_gates_step", [1, 2, 4]),
    ],
}


def run() -> dict:
    configure_cpu()
    from tests.apptest_helpers import open_page  # imports streamlit; keep `python -m bench` light otherwise

    results, rows = {}, []
    for page, sliders in SLIDERS.items():
        at = open_page(page)
        timed_rerun(at)  # warm: the first rerun pays imports and the shared model
        seen: dict[str | None, dict[str, set]] = {}  # per section: the values each slider has had
        for section, key, values in sliders:
            if section is not None and at.get_by_key(SECTION).value != section:
                at.get_by_key(SECTION).set_value(section)
                timed_rerun(at)  # opening the section computes its figures at the current settings: not timed
            times = new_value_moves(at, key, values, seen.setdefault(section, {}))
            moved, idle = times["wall"], times["unchanged"]
            name = f"{page.split('/')[-1][:-3]}:{f'{section}:' if section else ''}{key.split('_', 2)[-1]}"
            wall_ms, cpu_ms = 1000 * statistics.median(moved), 1000 * statistics.median(times["cpu"])
            idle_ms = 1000 * statistics.median(idle)
            results[name] = {"median_ms": round(wall_ms), "max_ms": round(1000 * max(moved)),
                             "median_cpu_ms": round(cpu_ms), "idle_rerun_ms": round(idle_ms),
                             "ratio_to_idle": round(wall_ms / idle_ms, 2), "moves": len(moved)}
            rows.append([name, f"{wall_ms:.0f}", f"{1000 * max(moved):.0f}", f"{cpu_ms:.0f}", f"{idle_ms:.0f}",
                         f"{wall_ms / idle_ms:.2f}", "yes" if max(moved) < BUDGET_S else "NO"])
    print_table(
        "slider_latency: full-page script time after a slider moves to a value new to the caches (AppTest, H = 64, "
        "K = 300); CPU ms is what the run would take on an idle core",
        ["slider", "median ms", "max ms", "CPU ms", "no-change rerun ms", "ratio", f"max < {BUDGET_S:g} s"],
        rows,
    )
    return results


if __name__ == "__main__":
    run()
