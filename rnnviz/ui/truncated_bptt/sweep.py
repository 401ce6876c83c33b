"""The TBPTT page's sweep: runs cached by their config, trained on demand behind a progress bar."""

from __future__ import annotations

import streamlit as st

from rnnviz.lessons.tbptt import ChunkRun, SweepConfig, train_chunk
from rnnviz.ui.kit.cache import is_stored, lookup, remember

NAMESPACE = "tbptt-run"
CHUNK_OPTIONS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48)


def chunk_choices(length: int) -> list[int]:
    """The K values offered for a sequence of ``length`` steps."""
    return [k for k in CHUNK_OPTIONS if k <= length]


def stored_runs(config: SweepConfig) -> dict[int, ChunkRun]:
    """The runs of this sweep that are already trained (by anyone, with exactly these settings)."""
    return {k: lookup(NAMESPACE, config.run_config(k)) for k in config.chunks
            if is_stored(NAMESPACE, config.run_config(k))}


def run_missing(config: SweepConfig, chunks: list[int]) -> None:
    """Train the given K values one after the other behind one progress bar, storing each run as it ends."""
    bar = st.progress(0.0, text="Training…")
    total = config.steps * len(chunks)
    shown = {"percent": -1}

    for i, chunk in enumerate(chunks):
        def report(step: int, _loss: float, done: int = i * config.steps, chunk: int = chunk) -> None:
            percent = int(100 * (done + step) / total)
            if percent != shown["percent"]:  # one message per percent, not per step
                shown["percent"] = percent
                bar.progress(percent / 100, text=f"Training K = {chunk}: step {step} of {config.steps}")

        run_config = config.run_config(chunk)
        remember(NAMESPACE, run_config, lambda rc=run_config, cb=report: train_chunk(rc, cb))
    bar.empty()
