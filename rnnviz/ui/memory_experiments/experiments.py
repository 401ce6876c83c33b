"""The Memory experiments page's runners: results cached by config (shared by every user, via kit.cache),
computed on demand behind a progress bar."""

from __future__ import annotations

import streamlit as st

from rnnviz.experiments.conditioning import ConditioningConfig, ConditioningResult, run_conditioning
from rnnviz.experiments.cost import CostConfig, CostSweep, measure_cost_at, run_cost_sweep
from rnnviz.experiments.delay import (
    COPY_THREADS,
    DelaySweep,
    DelaySweepConfig,
    SweepClock,
    run_copy,
    run_delay_sweep,
    torch_threads,
)
from rnnviz.figures.experiments import (
    MODEL_NAMES,
    cost_memory_figure,
    cost_time_figure,
    delay_curves_figure,
    delay_sweep_figure,
    length_histogram_figure,
    position_gap_figure,
    state_memory_figure,
)
from rnnviz.ui.kit.cache import NotComputed, is_stored, lookup, remember

DELAY_RUNS = "memory-delay-run"
COST_POINTS = "memory-cost-point"
CONDITIONING = "memory-conditioning"


def stored_delay_sweep(config: DelaySweepConfig) -> DelaySweep | None:
    """The sweep when every one of its runs is already stored, else None."""
    try:
        return run_delay_sweep(config, run_one=lambda rc: lookup(DELAY_RUNS, rc))
    except NotComputed:
        return None


def duration_text(seconds: float) -> str:
    """45 → "45 s", 83.6 → "1 min 24 s"."""
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def sweep_progress_text(done: int, total: int, label: str, step: int, steps: int, left: float | None) -> str:
    """The bar's line: runs done of the total, the run under way, and the time left (None: not known yet). The
    estimate says whose pace it assumes: a machine that gets busier or quieter meanwhile moves it."""
    eta = ("the time left is estimated once a run of each model has finished" if left is None
           else f"about {duration_text(left)} left at the pace of the latest runs")
    return f"{done} of {total} runs done · {label}: step {step} of {steps} · {eta}"


def compute_delay_sweep(config: DelaySweepConfig) -> DelaySweep:
    """Train the runs that are missing, one after the other on COPY_THREADS torch thread(s), behind a progress bar
    that counts the runs and estimates the time left from the wall time of the runs it has trained (one update
    per percent)."""
    plan = config.runs()
    clock = SweepClock([rc for rc in plan if not is_stored(DELAY_RUNS, rc)])  # stored runs cost nothing now
    total = len(plan) * config.steps
    bar = st.progress(0.0, text=f"0 of {len(plan)} runs done")
    state = {"done": 0, "percent": -1}

    def train(run_config):
        label = f"{MODEL_NAMES[run_config.kind]}, D = {run_config.task.delay}, seed {run_config.seed}"

        def on_step(step: int, _loss: float) -> None:
            percent = int(100 * (state["done"] * config.steps + step) / total)
            if percent != state["percent"]:
                state["percent"] = percent
                bar.progress(percent / 100, text=sweep_progress_text(
                    state["done"], len(plan), label, step, config.steps, clock.seconds_left(step / config.steps)))

        run = run_copy(run_config, on_step)
        clock.trained(run)
        return run

    def count(done: int, _total: int, _run) -> None:
        state["done"] = done
        clock.passed(plan[done - 1])

    with torch_threads(COPY_THREADS):
        sweep = run_delay_sweep(config, count, run_one=lambda rc: remember(DELAY_RUNS, rc, lambda: train(rc)))
    bar.empty()
    return sweep


def _cached_point(length: int, width: int, repeats: int, seed: int):
    key = (length, width, repeats, seed)
    return remember(COST_POINTS, key, lambda: measure_cost_at(length, width, repeats, seed))


def stored_cost_sweep(config: CostConfig) -> CostSweep | None:
    """The measurement when every size it would measure is stored, else None."""
    try:
        return run_cost_sweep(config, measure=lambda *key: lookup(COST_POINTS, key))
    except NotComputed:
        return None


def compute_cost_sweep(config: CostConfig) -> CostSweep:
    """Measure each T behind a progress bar, stopping at the caps."""
    bar = st.progress(0.0, text=f"Measuring T = {config.min_length}…")

    def report(done: int, total: int, point) -> None:
        bar.progress(done / total, text=f"Measured T = {point.length} ({done} of up to {total} sizes)")

    sweep = run_cost_sweep(config, report, measure=_cached_point)
    bar.empty()
    return sweep


def stored_conditioning(config: ConditioningConfig) -> ConditioningResult | None:
    try:
        return lookup(CONDITIONING, config)
    except NotComputed:
        return None


def compute_conditioning(config: ConditioningConfig) -> ConditioningResult:
    """Train and evaluate both variants behind a progress bar (one update per percent)."""
    bar = st.progress(0.0, text="Reading the texts…")
    shown = {"percent": -1}

    def report(done: int, total: int) -> None:
        percent = int(100 * done / total)
        if percent != shown["percent"]:
            shown["percent"] = percent
            variant = "v at every step" if done <= config.steps else "v only in h₀"
            bar.progress(percent / 100, text=f"Training “{variant}”: step {done} of {total}")

    result = remember(CONDITIONING, config, lambda: run_conditioning(config, report))
    bar.empty()
    return result


# Figures of stored results, cached by the same configs, so that a rerun does not rebuild them. Call these
# only once the result is stored: each reads it back from the store.


@st.cache_data(show_spinner=False, max_entries=64)
def delay_figures(config: DelaySweepConfig) -> tuple:
    """(accuracy against D, accuracy against step) of a stored sweep."""
    sweep = stored_delay_sweep(config)
    return delay_sweep_figure(sweep), delay_curves_figure(sweep)


@st.cache_data(show_spinner=False, max_entries=64)
def cost_figures(config: CostConfig) -> tuple:
    """(forward time, peak memory, carried state) of a stored measurement."""
    sweep = stored_cost_sweep(config)
    return cost_time_figure(sweep), cost_memory_figure(sweep), state_memory_figure(sweep)


@st.cache_data(show_spinner=False, max_entries=64)
def conditioning_figures(config: ConditioningConfig) -> tuple:
    """(loss gap by position, line lengths) of a stored run."""
    result = stored_conditioning(config)
    return position_gap_figure(result), length_histogram_figure(result)
