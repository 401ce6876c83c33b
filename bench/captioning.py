"""Image captioning: the page's default training (both joins, same batches) and its sweep of p, timed.

1. Scene generation: 10,000 images (median of 3).
2. The default pair training (rnnviz.ui.captioning.TRAIN_BASE at 700 steps, the page's default), wall and
   CPU seconds, its held-out figures; on the configured thread count and on 1 thread.
3. The page's hallucination sweep (SWEEP_BASE at the page's four default values of p), wall and CPU seconds.
4. Every widget the class touches: the full page's script time after it (AppTest, shipped models).

The 1-minute load average is recorded before and after each: on the project's shared 2-core machine other
jobs often run, and CPU far below wall (or load above ~2) means they shared the cores.

Usage: python -m bench.captioning [generate|train|sweep|widgets]
"""

from __future__ import annotations

import os
import sys
import time

import torch

from bench.common import print_table
from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from rnnviz.core.runtime import configure_cpu

SWEEP_PS = (0.25, 0.5, 0.75, 1.0)  # the page's default selection


def _timed(fn):
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
                   "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}


def bench_generate() -> dict:
    times = [_timed(lambda seed=seed: world.generate(10_000, seed))[1] for seed in range(3)]
    return {"n": 10_000, "median_wall_s": sorted(t["wall_s"] for t in times)[1], "runs": times}


def bench_train() -> dict:
    from rnnviz.ui.captioning.sections import TRAIN_BASE  # the page's settings (importing streamlit is fine here)

    config = TRAIN_BASE
    out = {"config": {"steps": config.steps, "batch": config.batch, "n_train": config.n_train, "p": config.p}}
    configured = configure_cpu()
    for threads in sorted({configured, 1}, reverse=True):
        torch.set_num_threads(threads)
        (models, history), timing = _timed(lambda: M.train_pair(config))
        held, _ = shipped.eval_sets()
        figures = {j: {k: round(v, 3) for k, v in M.evaluate(m, held).items()} for j, m in models.items()}
        out[f"threads_{threads}"] = {**timing, "heldout": figures}
    torch.set_num_threads(configured)
    return out


def bench_sweep() -> dict:
    from rnnviz.ui.captioning.sections import SWEEP_BASE

    configure_cpu()
    points, timing = _timed(lambda: M.sweep(SWEEP_PS, SWEEP_BASE)[0])
    return {**timing, "steps_per_model": SWEEP_BASE.steps, "points": [
        {"p": p.p, "chair_i": round(p.chair_i, 3), "chair_s": round(p.chair_s, 3), "exact": round(p.exact, 3),
         "boat_on_empty_water": round(p.boat_on_empty_water, 3)} for p in points]}


def bench_widgets() -> dict:
    """Full-page script time (AppTest) after each widget the class touches, shipped models, warm caches."""
    from tests.apptest_helpers import open_page  # imports streamlit; keep the other parts light

    configure_cpu()
    at, first = _timed(lambda: open_page("app_pages/captioning.py"))  # loads the models, finds the boat example,
    steps = [  # measures the influence curves and the per-object table: once per server process
        ("rerun, nothing changed", lambda: at.run()),
        ("decoding: beam search", lambda: at.radio(key="cap_method").set_value("beam search").run()),
        ("beam width 10", lambda: at.slider(key="cap_beam").set_value(10).run()),
        ("step t = 5", lambda: at.slider(key="cap_t").set_value(5).run()),
        ("saliency of word t = 2", lambda: at.selectbox(key="cap_sal_word").set_value(2).run()),
        ("saliency by occlusion", lambda: at.radio(key="cap_sal_method").set_value("occlusion").run()),
        ("a boat at right", lambda: at.selectbox(key="cap_shape_right").set_value("boat").run()),
        ("captioner: h0 only", lambda: at.radio(key="cap_join").set_value("h0").run()),
        ("random scene", lambda: at.button(key="cap_random").click().run()),
    ]
    out = {"first open (cold caches)": first}
    for name, action in steps:
        _, timing = _timed(action)
        out[name] = timing
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    return out


PARTS = {"generate": bench_generate, "train": bench_train, "sweep": bench_sweep, "widgets": bench_widgets}


def run(parts: list[str] | None = None) -> dict:
    results = {name: PARTS[name]() for name in (parts or PARTS)}
    if "generate" in results:
        print_table("Scene generation", ["images", "median wall s"],
                    [[results["generate"]["n"], results["generate"]["median_wall_s"]]])
    if "train" in results:
        rows = [[k, v["wall_s"], v["cpu_s"], v["load_before"], v["load_after"], v["heldout"]["every"]["exact"],
                 v["heldout"]["h0"]["exact"]] for k, v in results["train"].items() if k.startswith("threads")]
        print_table("Default pair training (both joins, same batches)",
                    ["threads", "wall s", "cpu s", "load before", "load after", "exact (every)", "exact (h0)"], rows)
    if "widgets" in results:
        print_table("Captioning page: script time after each widget (AppTest)",
                    ["widget", "wall s", "cpu s", "load before"],
                    [[k, v["wall_s"], v["cpu_s"], v["load_before"]] for k, v in results["widgets"].items()])
    if "sweep" in results:
        s = results["sweep"]
        print_table("Sweep of p", ["models", "wall s", "cpu s", "load before", "load after"],
                    [[len(s["points"]), s["wall_s"], s["cpu_s"], s["load_before"], s["load_after"]]])
        print_table("Sweep of p: held-out CHAIR and boats named on water without a boat",
                    ["p", "CHAIRi", "CHAIRs", "exact", "says boat on empty water"],
                    [[p["p"], p["chair_i"], p["chair_s"], p["exact"], p["boat_on_empty_water"]] for p in s["points"]])
    return results


if __name__ == "__main__":
    unknown = sorted(set(sys.argv[1:]) - set(PARTS))
    if unknown:
        print(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}", file=sys.stderr)
        raise SystemExit(2)
    run(sys.argv[1:] or None)
