"""The Memory experiments page's runners: results cached by config (shared by every user, via ui.memo),
computed on demand behind a progress bar."""

from __future__ import annotations

import streamlit as st

from rnnviz.experiments.conditioning import ConditioningConfig, ConditioningResult, run_conditioning
from rnnviz.experiments.cost import CostConfig, CostSweep, measure_cost_at, run_cost_sweep
from rnnviz.experiments.delay import DelaySweep, DelaySweepConfig, run_copy, run_delay_sweep
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
from rnnviz.ui.memo import NotComputed, lookup, remember

DELAY_RUNS = "memory-delay-run"
COST_POINTS = "memory-cost-point"
CONDITIONING = "memory-conditioning"


def stored_delay_sweep(config: DelaySweepConfig) -> DelaySweep | None:
    """The sweep when every one of its runs is already stored, else None."""
    try:
        return run_delay_sweep(config, run_one=lambda rc: lookup(DELAY_RUNS, rc))
    except NotComputed:
        return None


def compute_delay_sweep(config: DelaySweepConfig) -> DelaySweep:
    """Train the runs that are missing, one after the other, behind a progress bar (one update per percent)."""
    plan = config.runs()
    total = len(plan) * config.steps
    bar = st.progress(0.0, text=f"Run 1 of {len(plan)}…")
    state = {"done": 0, "percent": -1}

    def train(run_config):
        label = (f"Run {state['done'] + 1} of {len(plan)}: {MODEL_NAMES[run_config.kind]}, "
                 f"D = {run_config.task.delay}, seed {run_config.seed}")

        def on_step(step: int, _loss: float) -> None:
            percent = int(100 * (state["done"] * config.steps + step) / total)
            if percent != state["percent"]:
                state["percent"] = percent
                bar.progress(percent / 100, text=f"{label}, step {step} of {config.steps}")

        return run_copy(run_config, on_step)

    def count(done: int, _total: int, _run) -> None:
        state["done"] = done

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
