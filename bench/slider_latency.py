"""How fast the Gradient decay and LSTM gates pages answer each slider, at the largest sizes (H = 64, K = 300).

Each slider is moved to values not seen before (so every cached computation misses) and the script run
that follows is timed through AppTest. AppTest reruns the whole page, fragments included, so these are
upper bounds: in a browser a slider inside a section reruns only that section. Each slider's median is
shown beside the page's rerun with nothing changed, measured in the same rounds (the ratio), and beside
the budget of one second. Usage: python -m bench.slider_latency
"""

from __future__ import annotations

import statistics

from bench.common import print_table, timed_rerun
from rnnviz.core.runtime import configure_cpu

BUDGET_S = 1.0

# (page, slider key, values to visit in turn; each is new to the caches). The first entries set K = 300.
SLIDERS = {
    "app_pages/gradient_decay.py": [
        ("gradient_decay_steps", [300]),
        ("gradient_decay_sigma", [1.01, 1.02, 1.03, 1.04]),
        ("gradient_decay_steps", [290, 280, 300]),
        ("gradient_decay_input_scale", [1.1, 1.2, 1.3]),
        ("gradient_decay_input_weight", [1.1, 1.2, 1.3]),
        ("gradient_decay_forget_bias", [1.5, 2.0, 2.5]),
        ("gradient_decay_threshold", [0.5, 2.0, 5.0]),
        ("gradient_decay_lr", [0.5, 2.0, 5.0]),
    ],
    "app_pages/lstm_gates.py": [
        ("lstm_gates_f", [0.61, 0.62, 0.63]),
        ("lstm_gates_g", [0.31, 0.32, 0.33]),
        ("lstm_gates_hidden", [6, 7, 8]),
        ("lstm_gates_step", [1, 2, 4]),
    ],
}


def _slider(at, key: str):
    """The st.slider or st.select_slider with this key."""
    try:
        return at.slider(key=key)
    except KeyError:
        return at.select_slider(key=key)


def run() -> dict:
    configure_cpu()
    from tests.apptest_helpers import open_page  # imports streamlit; keep `python -m bench` light otherwise

    results, rows = {}, []
    for page, sliders in SLIDERS.items():
        at = open_page(page)
        timed_rerun(at)  # warm: the first rerun pays imports and the shared model
        for key, values in sliders:
            moved, moved_cpu, idle = [], [], []
            for value in values:
                _slider(at, key).set_value(value)
                wall, cpu = timed_rerun(at)
                moved.append(wall)
                moved_cpu.append(cpu)
                idle.append(timed_rerun(at)[0])  # the same page with nothing changed, right after
            name = f"{page.split('/')[-1][:-3]}:{key.split('_', 2)[-1]}"
            wall_ms, cpu_ms = 1000 * statistics.median(moved), 1000 * statistics.median(moved_cpu)
            idle_ms = 1000 * statistics.median(idle)
            results[name] = {"median_ms": round(wall_ms), "max_ms": round(1000 * max(moved)),
                             "median_cpu_ms": round(cpu_ms), "idle_rerun_ms": round(idle_ms),
                             "ratio_to_idle": round(wall_ms / idle_ms, 2)}
            rows.append([name, f"{wall_ms:.0f}", f"{1000 * max(moved):.0f}", f"{cpu_ms:.0f}", f"{idle_ms:.0f}",
                         f"{wall_ms / idle_ms:.2f}", "yes" if max(moved) < BUDGET_S else "NO"])
    print_table(
        "slider_latency: full-page script time after a slider moves to a new value (AppTest, H = 64, K = 300); "
        "CPU ms is what the run would take on an idle core",
        ["slider", "median ms", "max ms", "CPU ms", "no-change rerun ms", "ratio", f"max < {BUDGET_S:g} s"],
        rows,
    )
    return results


if __name__ == "__main__":
    run()
