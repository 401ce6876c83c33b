"""Memory experiments, delayed copy: the page's default recipe, and the sweep of budgets that chose it.

1. The default (rnnviz.experiments.delay.DEFAULT_RECIPE) as the page runs it, on 1 thread and on the
   configured thread count: every run's final held-out accuracy per seed, the page's verdict at each D, and
   wall and CPU seconds.
2. Variants, each one change from the default (learning rate, forget-gate bias, batch, steps, hidden size,
   equal hidden size against equal parameters) and the settings the page had before, on 1 thread. A variant
   that changes only one model runs only that model: the other's runs are the default's, number for number.

Step counts and seeds make every accuracy reproducible on any machine; the seconds are this machine's, under
whatever load it had (CPU far below wall means other work shared the cores).

Usage: python -m bench.memory_recipe [default|variants]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import torch

from bench.common import print_table
from rnnviz.core.runtime import configure_cpu
from rnnviz.experiments.delay import DEFAULT_RECIPE, DelaySweepConfig, run_delay_sweep

R = DEFAULT_RECIPE
LONG = (16, 32)  # the delays that decide

# name → (what changes, config)
VARIANTS: dict[str, tuple[str, DelaySweepConfig]] = {
    "before": ("the page's old default: LSTM H = 32, batch 16, 200 steps",
               DelaySweepConfig(delays=R.delays)),
    "old quick": ("the old Quick run: alphabet 4, L = 24, D = 2, 8, 40 steps, H = 32, batch 16",
                  DelaySweepConfig(alphabet=4, length=24, delays=(2, 8), steps=40)),
    "first look": ("the page's first look: alphabet 4, L = 24, D = 2, 8, 40 steps",
                   dataclasses.replace(R, alphabet=4, length=24, delays=(2, 8), steps=40)),
    "equal H": ("equal hidden size: the RNN's H = 48 (a quarter of the LSTM's parameters)",
                dataclasses.replace(R, delays=LONG, sizing="hidden", kinds=("rnn",))),
    "b_f torch": ("the LSTM's forget bias left at torch's uniform init",
                  dataclasses.replace(R, delays=LONG, forget_bias=None, kinds=("lstm",))),
    "b_f 1": ("the LSTM's forget bias 1", dataclasses.replace(R, delays=LONG, forget_bias=1.0, kinds=("lstm",))),
    "lr 3e-3": ("Adam learning rate 3e-3, both models", dataclasses.replace(R, delays=LONG, lr=3e-3)),
    "lr 3e-2": ("Adam learning rate 3e-2, both models", dataclasses.replace(R, delays=LONG, lr=3e-2)),
    "batch 64": ("batch 64 (twice the characters)", dataclasses.replace(R, delays=(32,), batch=64)),
    "H 64": ("LSTM H = 64 (the RNN's H = 134 by parameters)", dataclasses.replace(R, delays=LONG, hidden=64)),
    "800 steps": ("twice the steps", dataclasses.replace(R, delays=LONG, steps=800)),
}


def _measure(config: DelaySweepConfig) -> dict:
    """Run a sweep; per model and D the final held-out accuracy of each seed, the verdicts, wall and CPU s."""
    wall, cpu = time.perf_counter(), time.process_time()
    sweep = run_delay_sweep(config)
    out = {
        "wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1),
        "hidden": {k: config.hidden_for(k) for k in config.kinds},
        "accuracy": {k: {str(d): [round(r.final_accuracy, 4) for r in sweep.select(k, d)] for d in config.delays}
                     for k in config.kinds},
    }
    if len(config.kinds) > 1:
        verdicts = {d: sweep.verdict(d) for d in config.delays}
        out["verdict"] = {str(d): {"leader": v.leader, "at_chance": list(v.at_chance), "decisive": v.decisive}
                          for d, v in verdicts.items()}
    return out


def _rows(name: str, config: DelaySweepConfig, result: dict) -> list[list[object]]:
    rows = []
    for d in config.delays:
        seeds = {k: " ".join(f"{a:.3f}" for a in result["accuracy"][k][str(d)]) if k in config.kinds else "(default)"
                 for k in ("rnn", "lstm")}
        verdict = result.get("verdict", {}).get(str(d), {})
        said = (verdict.get("leader") or "none") + (" decisive" if verdict.get("decisive") else "") if verdict else ""
        rows.append([name, d, seeds["rnn"], seeds["lstm"], said, result["wall_s"], result["cpu_s"]])
    return rows


HEADER = ["config", "D", "RNN per seed", "LSTM per seed", "ahead", "wall s", "CPU s"]


def default() -> dict:
    """The default on 1 thread and on the configured count (the page's), one after the other."""
    configured = configure_cpu()
    results, rows = {"config": dataclasses.asdict(R)}, []
    try:
        for threads in sorted({1, configured}):
            torch.set_num_threads(threads)
            result = {"load_before": round(os.getloadavg()[0], 2), **_measure(R)}
            result["load_after"] = round(os.getloadavg()[0], 2)
            results[f"threads_{threads}"] = result
            rows += _rows(f"default, {threads} thread(s)", R, result)
    finally:
        torch.set_num_threads(configured)
    print_table(f"memory recipe: the page's default ({len(R.runs())} runs, chance {R.chance:.3f}; H = RNN "
                f"{R.hidden_for('rnn')}, LSTM {R.hidden_for('lstm')}; final held-out accuracy per seed)", HEADER, rows)
    return results


def variants() -> dict:
    configured = configure_cpu()
    torch.set_num_threads(1)  # one run at a time on one core: CPU seconds compare across variants
    results, rows = {}, []
    try:
        for name, (change, config) in VARIANTS.items():
            result = {"change": change, "load_before": round(os.getloadavg()[0], 2), **_measure(config)}
            results[name] = result
            rows += _rows(name, config, result)
            print(f"  {name}: {result['wall_s']} s wall, {result['cpu_s']} s CPU", flush=True)
    finally:
        torch.set_num_threads(configured)
    print_table("memory recipe: variants, one change each from the default (1 thread; final held-out accuracy "
                "per seed)", HEADER, rows)
    return results


def run() -> dict:
    return {"default": default(), "variants": variants()}


if __name__ == "__main__":
    parts = sys.argv[1:] or ["default", "variants"]
    for part in parts:
        {"default": default, "variants": variants}[part]()
