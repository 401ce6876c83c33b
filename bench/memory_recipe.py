"""Memory experiments, delayed copy: the page's default recipe, and the sweep of budgets that chose it.

1. The default (rnnviz.experiments.delay.DEFAULT_RECIPE) as the page runs it, on COPY_THREADS (1) torch
   thread: every run's final held-out accuracy per seed, the page's verdict at each D, wall and CPU seconds,
   and how right the progress bar's time left was: at the start of each run and halfway through it, the
   page's estimate (delay.seconds_left) divided by the time the sweep then really took to finish.
2. Threads, side by side: the default's D = 32 runs (seed 0, a quarter of the steps), vanilla RNN and LSTM,
   alternating 1 thread and the configured count (2 on this machine), two rounds: wall and CPU seconds per
   run, with the final accuracies, which must not change.
3. Variants, each one change from the default (learning rate, forget-gate bias, batch, steps, hidden size,
   equal hidden size against equal parameters) and the settings the page had before, on 1 thread. A variant
   that changes only one model runs only that model: the other's runs are the default's, number for number.

Step counts and seeds make every accuracy reproducible on any machine; the seconds are this machine's, under
whatever load it had (CPU far below wall means other work shared the cores).

Usage: python -m bench.memory_recipe [default|threads|variants]
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time

import torch

from bench.common import print_table
from rnnviz.core.runtime import configure_cpu
from rnnviz.experiments.delay import (
    COPY_THREADS,
    DEFAULT_RECIPE,
    DelaySweepConfig,
    SweepClock,
    run_copy,
    run_delay_sweep,
    torch_threads,
)

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


def _measure(config: DelaySweepConfig, run_one=run_copy) -> dict:
    """Run a sweep; per model and D the final held-out accuracy of each seed, the verdicts, wall and CPU s."""
    wall, cpu = time.perf_counter(), time.process_time()
    sweep = run_delay_sweep(config, run_one=run_one)
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


def _measure_with_estimates(config: DelaySweepConfig) -> tuple[dict, list[dict]]:
    """``_measure`` of a sweep trained as the page trains it, with the page's estimate of the time left
    (SweepClock) recorded at the start of each run and halfway through it, beside the time the sweep then
    really took to finish."""
    clock = SweepClock(config.runs())
    marks: list[tuple[float, float | None]] = []  # (perf_counter, estimated seconds left)

    def run_one(run_config):
        marks.append((time.perf_counter(), clock.seconds_left(0.0)))

        def on_step(step: int, _loss: float) -> None:
            if step == run_config.steps // 2:
                marks.append((time.perf_counter(), clock.seconds_left(step / run_config.steps)))

        run = run_copy(run_config, on_step)
        clock.trained(run)
        clock.passed(run_config)
        return run

    result = _measure(config, run_one)
    end = time.perf_counter()
    estimates = [{"at_s": round(t - marks[0][0], 1), "estimate_s": None if e is None else round(e, 1),
                  "actual_s": round(end - t, 1), "ratio": None if e is None else round(e / (end - t), 3)}
                 for t, e in marks]
    return result, estimates


def default() -> dict:
    """The default as the page runs it (COPY_THREADS), with the bar's estimate of the time left against the truth."""
    configure_cpu()
    with torch_threads(COPY_THREADS):
        result = {"threads": COPY_THREADS, "load_before": round(os.getloadavg()[0], 2)}
        measured, estimates = _measure_with_estimates(R)
        result.update(measured, load_after=round(os.getloadavg()[0], 2))
    ratios = [e["ratio"] for e in estimates if e["ratio"] is not None]
    result["estimate"] = {
        "first_at_s": next(e["at_s"] for e in estimates if e["ratio"] is not None),
        "ratio_min": min(ratios), "ratio_median": round(statistics.median(ratios), 3), "ratio_max": max(ratios),
        "within_20_percent": f"{sum(0.8 <= r <= 1.2 for r in ratios)} of {len(ratios)}",
        "points": estimates,
    }
    print_table(f"memory recipe: the page's default ({len(R.runs())} runs on {COPY_THREADS} thread(s), chance "
                f"{R.chance:.3f}; H = RNN {R.hidden_for('rnn')}, LSTM {R.hidden_for('lstm')}; final held-out accuracy "
                "per seed)", HEADER, _rows("default", R, result))
    print_table("memory recipe: the bar's time left (estimate ÷ the time the sweep then took), at each run's start "
                "and half-way", ["from s", "estimate s", "actual s", "ratio"],
                [[e["at_s"], e["estimate_s"], e["actual_s"], e["ratio"]] for e in estimates])
    summary = result["estimate"]
    print(f"estimate ÷ actual: min {summary['ratio_min']}, median {summary['ratio_median']}, "
          f"max {summary['ratio_max']}; within 20%: {summary['within_20_percent']}")
    return {"config": dataclasses.asdict(R), "page": result}


def threads(rounds: int = 2) -> dict:
    """The default's D = 32 runs (seed 0, a quarter of the steps) on 1 thread and on the configured count, in turn."""
    configured = configure_cpu()
    config = dataclasses.replace(R, delays=(max(R.delays),), steps=R.steps // 4, seeds=1)
    counts = sorted({1, configured})
    runs: dict[str, list[dict]] = {}
    try:
        for _ in range(rounds):
            for count in counts:
                with torch_threads(count):
                    for run_config in config.runs():
                        run = run_copy(run_config)
                        runs.setdefault(f"{run.kind}, {count} thread(s)", []).append(
                            {"wall_s": round(run.seconds, 2), "cpu_s": round(run.cpu_seconds, 2),
                             "accuracy": round(run.final_accuracy, 4), "load": round(os.getloadavg()[0], 2)})
    finally:
        torch.set_num_threads(configured)
    out = {"config": f"D = {max(R.delays)}, seed 0, {config.steps} steps, the default's models", "runs": runs}
    for kind in config.kinds:
        one, many = (statistics.median(r["wall_s"] for r in runs[f"{kind}, {c} thread(s)"]) for c in (1, counts[-1]))
        out[f"{kind}: wall on {counts[-1]} threads ÷ on 1"] = round(many / one, 2)
    print_table(f"memory recipe: threads ({out['config']}; {rounds} rounds, alternating)",
                ["run", "wall s", "CPU s", "accuracy", "load"],
                [[name, " ".join(str(r["wall_s"]) for r in rs), " ".join(str(r["cpu_s"]) for r in rs),
                  " ".join(str(r["accuracy"]) for r in rs), " ".join(str(r["load"]) for r in rs)]
                 for name, rs in runs.items()])
    print({k: v for k, v in out.items() if "÷" in k})
    return out


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
    return {"default": default(), "threads": threads(), "variants": variants()}


if __name__ == "__main__":
    parts = sys.argv[1:] or ["default", "threads", "variants"]
    for part in parts:
        {"default": default, "threads": threads, "variants": variants}[part]()
