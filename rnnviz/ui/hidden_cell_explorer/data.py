"""The hidden-cell explorer's cached engine calls: passages, traces, rankings, baselines, samples, snapshots.

Traces are the big thing here: every cell over up to 20k characters is Q·L·T·H floats (61 MB for a
1 × 256 LSTM over 10k characters). ``st.cache_data`` would pickle and copy that on every rerun, so traces
live in a small process-wide LRU store (``kit.cache.process_store``), read-only (their arrays are not writeable)
and keyed by (model source key, weight fingerprint, step, text): a live or uploaded model's fingerprint is
a hash of its weights, so no two sessions' models can share an entry by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace

import numpy as np
import streamlit as st
import torch

from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.sample import Intervention, generate
from rnnviz.charlm.train import width_of
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.interpret.finder import CellTrace, FeatureRanking, rank_cells, trace_cells
from rnnviz.interpret.states import shifted_trace
from rnnviz.interpret.surprisal import Predictions, predictions
from rnnviz.interpret.textfeatures import feature_tracks
from rnnviz.ui.kit.cache import process_store
from rnnviz.ui.kit.models import LIVE_RUN_KEY

TRACE_STORE_ENTRIES = 4  # traces kept per process (each tens of MB)


# ---------------------------------------------------------------------------------------------------------
# Models


@st.cache_data(show_spinner=False, max_entries=64)
def continuation(model_key: Hashable, _model: CharModel, vocab_chars: str, prime: str, length: int,
                 temperature: float, seed: int, intervention: Intervention | None) -> str:
    """What the model writes after ``prime``, with one cell held fixed when ``intervention`` is given.
    Keyed by model_key (the model itself is not hashed)."""
    held = [intervention] if intervention is not None else []
    return generate(_model, Vocab(vocab_chars), prime, length, temperature=temperature, seed=seed, interventions=held)


@st.cache_data(show_spinner=False, max_entries=16)
def model_sample(model_key: Hashable, _model: CharModel, vocab_chars: str, length: int, seed: int) -> str:
    """Text the model writes itself, for models whose corpus this server does not have."""
    return generate(_model, Vocab(vocab_chars), "", length, temperature=0.8, seed=seed)


# ---------------------------------------------------------------------------------------------------------
# Traces and rankings


def stored_trace(key: tuple) -> CellTrace | None:
    return process_store("explorer traces", TRACE_STORE_ENTRIES).get(key)


def traced(key: tuple, model: CharModel, ids: torch.Tensor) -> CellTrace:
    """The trace for ``key`` from the store, computed and stored on a miss."""
    store = process_store("explorer traces", TRACE_STORE_ENTRIES)
    trace = store.get(key)
    if trace is None:
        trace = trace_cells(model, ids)
        store.put(key, trace)
    return trace


def predictions_for(key: tuple, model: CharModel, vocab: Vocab, text: str) -> Predictions:
    """Surprisal and top guesses over ``text`` (one forward pass), kept beside the trace of the same ``key``."""
    store = process_store("explorer predictions", 2 * TRACE_STORE_ENTRIES)
    found = store.get(key)
    if found is None:
        found = predictions(model, vocab.encode(text))
        store.put(key, found)
    return found


@st.cache_data(show_spinner=False, max_entries=32)
def tracks_for(text: str, syntax: str) -> dict[str, np.ndarray]:
    return feature_tracks(text, syntax)


@st.cache_data(show_spinner=False, max_entries=32)
def rankings_for(trace_key: tuple, text: str, syntax: str, _trace: CellTrace) -> dict[str, FeatureRanking]:
    """Keyed by the trace's key (the trace itself is not hashed)."""
    return rank_cells(_trace, tracks_for(text, syntax))


@st.cache_data(show_spinner=False, max_entries=16)
def random_baseline(config: ModelConfig, vocab_chars: str, seed: int, text: str, syntax: str
                    ) -> dict[str, FeatureRanking]:
    """The same ranking for a randomly initialised model of the same shape (seeded, global RNG untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CharModel(config)
    trace = trace_cells(model, Vocab(vocab_chars).encode(text))
    return rank_cells(trace, tracks_for(text, syntax))


def prepare(key: tuple, model: CharModel, vocab: Vocab, text: str, syntax: str, seed: int
            ) -> tuple[CellTrace, dict[str, FeatureRanking], dict[str, FeatureRanking]]:
    """Trace, rankings and the random baseline; a progress bar shows while anything is computed."""
    bar = None
    if stored_trace(key) is None:
        bar = st.progress(0.0, text=f"Tracing every cell over {len(text):,} characters…")
    trace = traced(key, model, vocab.encode(text))
    if bar is not None:
        bar.progress(0.4, text="Ranking every cell against every feature…")
    rankings = rankings_for(key, text, syntax, trace)
    if bar is not None:
        bar.progress(0.7, text="The same ranking for a randomly initialised model of the same shape…")
    baseline = random_baseline(model.config, vocab.chars, seed, text, syntax)
    if bar is not None:
        bar.empty()
    return trace, rankings, baseline


def prepare_states(key: tuple, trace: CellTrace, text: str, syntax: str, seed: int
                   ) -> tuple[CellTrace, dict[str, FeatureRanking], dict[str, FeatureRanking]]:
    """``prepare`` for states read from a file: there is no model to initialise at random, so the chance baseline
    ranks the same states with each unit shifted in time (rnnviz.interpret.states.shifted_trace)."""
    stored = stored_trace(key)
    if stored is None:
        process_store("explorer traces", TRACE_STORE_ENTRIES).put(key, trace)
        stored = trace
    rankings = rankings_for(key, text, syntax, stored)
    return stored, rankings, shifted_baseline(key, text, syntax, seed, stored)


@st.cache_data(show_spinner="Ranking the same states shifted in time: chance…", max_entries=16)
def shifted_baseline(trace_key: tuple, text: str, syntax: str, seed: int, _trace: CellTrace
                     ) -> dict[str, FeatureRanking]:
    """Keyed by the trace's key (the trace itself is not hashed)."""
    return rank_cells(shifted_trace(_trace, seed), tracks_for(text, syntax))


# ---------------------------------------------------------------------------------------------------------
# Snapshots of a live run


def live_snapshots() -> list[tuple[int, dict]]:
    """The live run's light weight snapshots (step, state_dict), oldest first; [] before the page keeps any."""
    run = st.session_state.get(LIVE_RUN_KEY)
    return list(getattr(run, "snapshots", []) or []) if run is not None else []


@st.cache_data(show_spinner=False, max_entries=64)
def snapshot_cell(run_key: Hashable, step: int, _weights: dict, config: ModelConfig, vocab_chars: str, text: str,
                  layer: int, unit: int, quantity: str) -> np.ndarray | None:
    """One cell's values over ``text`` for the weights of one snapshot; keyed by (run_key, step, …). None when
    the unit did not exist yet at that step (a run that grows widened after it)."""
    width = width_of(_weights)
    if unit >= width:
        return None
    model = CharModel(replace(config, hidden=width))
    model.load_state_dict({k: v.detach().to("cpu", torch.float32) for k, v in _weights.items()}, strict=True)
    trace = trace_cells(model, Vocab(vocab_chars).encode(text))
    return np.array(trace.block(layer, quantity)[:, unit])


def run_progress(total_text: str) -> Callable[[int, int], None]:
    """A progress bar and the callback that moves it: (done, total)."""
    bar = st.progress(0.0, text=total_text)

    def report(done: int, total: int) -> None:
        bar.progress(done / total, text=f"{total_text} {done} of {total}")
        if done == total:
            bar.empty()

    return report
