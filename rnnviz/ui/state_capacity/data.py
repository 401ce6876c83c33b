"""What the page reads, made once per server process and shared read-only by every session: the shipped sweeps,
the shipped memory models, and their memory stepped through a chosen recall sequence."""

from __future__ import annotations

import streamlit as st

from rnnviz.experiments.recall import RecallSweepConfig
from rnnviz.experiments.state_capacity import (
    MEMORY_FILE,
    MEMORY_KINDS,
    PARITY_FILE,
    RECALL_FILE,
    MemoryTrace,
    ShippedSweep,
    command_config,
    load_memory_models,
    load_sweep,
    memory_accuracy,
    memory_sequence,
    memory_trace,
)
from rnnviz.experiments.tasks import IGNORE
from rnnviz.ui.kit.cache import shared_value


@st.cache_resource(show_spinner=False)
def shipped_sweep(task: str) -> ShippedSweep:
    """The shipped recall or parity sweep (read-only); ValueError in words when its file is damaged."""
    return load_sweep(RECALL_FILE if task == "recall" else PARITY_FILE)


@st.cache_resource(show_spinner="Loading the memory models…")
def memory_models() -> dict:
    """The shipped memory models, in eval mode; the page only reads them (their trace, under no_grad)."""
    return load_memory_models(MEMORY_FILE)


def memory_accuracies() -> dict[str, float]:
    """Each memory model's held-out query accuracy, once per process."""
    return shared_value(lambda: {kind: memory_accuracy(model) for kind, model in memory_models().items()},
                        name="capacity-memory-accuracy")


def memory_traces(index: int) -> dict[str, MemoryTrace]:
    """Every memory model stepped through held-out sequence ``index``, once per process for each sequence."""
    def build() -> dict[str, MemoryTrace]:
        inputs, targets = memory_sequence(index)
        models = memory_models()
        return {kind: memory_trace(models[kind], inputs, targets) for kind in MEMORY_KINDS}

    return shared_value(build, key=index, name="capacity-memory-traces")


def first_query(index: int) -> int:
    """The position of sequence ``index``'s first query: every pair has been read, and a key is asked."""
    _, targets = memory_sequence(index)
    return int((targets != IGNORE).nonzero()[0, 0])


def point_config(kind: str, pairs: int) -> tuple[RecallSweepConfig, str] | None:
    """The shipped recall sweep's config for one (kind, D), and the command that ran it; None when no command of
    the sweep ran it."""
    sweep = shipped_sweep("recall")
    for command in sweep.commands:
        config = command_config(command)
        if kind in config.kinds and pairs in config.pairs:
            return config, command
    return None
