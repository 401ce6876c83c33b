"""The hidden-cell explorer's cached engine calls: passages, traces, rankings, baselines, samples, snapshots.

Traces are the big thing here: every cell over up to 20k characters is Q·L·T·H floats (61 MB for a
1 × 256 LSTM over 10k characters). ``st.cache_data`` would pickle and copy that on every rerun, so traces
live in a small process-wide LRU store (``st.cache_resource``), read-only (their arrays are not writeable)
and keyed by (model source key, weight fingerprint, step, text): a live or uploaded model's fingerprint is
a hash of its weights, so no two sessions' models can share an entry by accident.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import replace

import numpy as np
import streamlit as st
import torch

from rnnviz.charlm.corpus import (
    Corpus,
    CorpusError,
    Vocab,
    load_builtin,
    tiny_shakespeare_cached,
    tiny_shakespeare_path,
)
from rnnviz.charlm.sample import Intervention, generate
from rnnviz.core.charmodel import CharModel, ModelConfig
from rnnviz.interpret.finder import CellTrace, FeatureRanking, rank_cells, trace_cells
from rnnviz.interpret.textfeatures import feature_tracks
from rnnviz.ui.models import LIVE_RUN_KEY, ModelSource

TRACE_STORE_ENTRIES = 4  # traces kept per process (each tens of MB)
CODE_CORPORA = ("python-stdlib",)
DOWNLOADABLE = ("tiny-shakespeare",)
_LIVE_COPY = "explorer_live_copy"  # session key: ((run id, step), the CPU copy of the live model)


# ---------------------------------------------------------------------------------------------------------
# Texts


@st.cache_resource(show_spinner=False, max_entries=4)
def builtin_corpus(name: str) -> Corpus:
    """A built-in corpus, read once per process (read-only, shared). Never downloads: see ``download``."""
    if corpus_needs_download(name):
        raise CorpusError(f"{name} is not downloaded on this server yet.")
    return load_builtin(name)


def corpus_needs_download(name: str) -> bool:
    """A downloadable corpus with no copy in the cache that passes its sha256 check."""
    return name in DOWNLOADABLE and not tiny_shakespeare_cached()


def download_tiny_shakespeare() -> str | None:
    """Download and verify Tiny Shakespeare behind a progress bar; returns an error sentence or None."""
    bar = st.progress(0.0, text="Downloading Tiny Shakespeare…")

    def report(done: int, total: int) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0, text=f"Downloading Tiny Shakespeare: {done:,} bytes")

    try:
        tiny_shakespeare_path(progress=report)
    except CorpusError as err:
        return str(err)
    finally:
        bar.empty()
    builtin_corpus.clear()
    return None


def corpus_of(source: ModelSource) -> Corpus | None:
    """The text the model was trained on, when this server has it (the live run always does) and the model's
    vocabulary covers it (see ``foreign_chars``)."""
    if source.key == "live":
        run = st.session_state.get(LIVE_RUN_KEY)
        return run.trainer.corpus if run is not None else None
    try:
        corpus = builtin_corpus(source.corpus)
    except CorpusError:
        return None
    return None if foreign_chars(corpus, source.vocab) else corpus


def named_corpus_mismatch(source: ModelSource) -> list[str]:
    """Characters of the built-in corpus a checkpoint names that its vocabulary lacks; [] when it fits or
    when this server has no such corpus."""
    if source.key == "live":
        return []
    try:
        corpus = builtin_corpus(source.corpus)
    except CorpusError:
        return []
    return foreign_chars(corpus, source.vocab)


def foreign_chars(corpus: Corpus, vocab: Vocab) -> list[str]:
    """The corpus's distinct characters that are not in ``vocab``, sorted."""
    return sorted(set(corpus.vocab.chars) - set(vocab.chars))


def held_out_text(corpus: Corpus, length: int) -> str:
    """``length`` characters of the corpus's val split (its last 10%), from its first whole file (the
    python-stdlib corpus heads each file with a "# path.py" line) or else its first line start."""
    _, val = corpus.split()
    text = corpus.text[len(corpus) - len(val):]
    file_start = re.search(r"\n# \S+\.py\n", text) if corpus.name in CODE_CORPORA else None
    if file_start is not None and file_start.start() < len(text) // 2:
        text = text[file_start.start() + 1:]
    elif 0 <= text.find("\n") < len(text) - 1:
        text = text[text.find("\n") + 1:]
    return text[:length]


def syntax_of(corpus_name: str) -> str:
    return "code" if corpus_name in CODE_CORPORA or corpus_name.endswith(".py") else "prose"


def keep_known(text: str, vocab: Vocab) -> tuple[str, list[str]]:
    """The text without characters outside the vocabulary, and those characters (sorted, once each)."""
    known = set(vocab.chars)
    unknown = sorted({c for c in text if c not in known})
    return ("".join(c for c in text if c in known) if unknown else text), unknown


# ---------------------------------------------------------------------------------------------------------
# Models


def settled(source: ModelSource) -> ModelSource:
    """The source with a still model: for the live run, a CPU copy of its weights taken under the run's lock.

    The live page may be finishing a training chunk in another script thread; reading the weights under
    the lock never sees half an update, and the copy keeps this page's trace, samples and fingerprint in
    step with each other. The copy is kept per session until the run takes another step.
    """
    if source.key != "live":
        return source
    run = st.session_state.get(LIVE_RUN_KEY)
    lock = getattr(run, "lock", None) or contextlib.nullcontext()
    with lock:
        step = run.trainer.step
        cached = st.session_state.get(_LIVE_COPY)
        if cached is None or cached[0] != (id(run), step):
            with torch.random.fork_rng(devices=[]):
                model = CharModel(run.trainer.model.config)  # its random init must not move the global RNG
            model.load_state_dict({k: v.detach().to("cpu", torch.float32)
                                   for k, v in run.trainer.model.state_dict().items()})
            cached = ((id(run), step), model.eval())
            st.session_state[_LIVE_COPY] = cached
    return replace(source, model=cached[1], step=step)


def fingerprint(source: ModelSource) -> str:
    """Identifies the weights: a shipped model by its file, anything else by a hash of its tensors."""
    if source.key.startswith("pretrained:"):
        return source.key
    digest = hashlib.blake2b(digest_size=12)
    for name, tensor in source.model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def model_id(source: ModelSource) -> tuple:
    return (source.key, fingerprint(source), source.step)


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


class _TraceStore:
    """A tiny thread-safe LRU map; Streamlit serves sessions from several threads."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _trace_store() -> _TraceStore:
    return _TraceStore(TRACE_STORE_ENTRIES)


def stored_trace(key: tuple) -> CellTrace | None:
    return _trace_store().get(key)


def traced(key: tuple, model: CharModel, ids: torch.Tensor) -> CellTrace:
    """The trace for ``key`` from the store, computed and stored on a miss."""
    store = _trace_store()
    trace = store.get(key)
    if trace is None:
        trace = trace_cells(model, ids)
        store.put(key, trace)
    return trace


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


# ---------------------------------------------------------------------------------------------------------
# Snapshots of a live run


def live_snapshots() -> list[tuple[int, dict]]:
    """The live run's light weight snapshots (step, state_dict), oldest first; [] before the page keeps any."""
    run = st.session_state.get(LIVE_RUN_KEY)
    return list(getattr(run, "snapshots", []) or []) if run is not None else []


@st.cache_data(show_spinner=False, max_entries=64)
def snapshot_cell(run_key: Hashable, step: int, _weights: dict, config: ModelConfig, vocab_chars: str, text: str,
                  layer: int, unit: int, quantity: str) -> np.ndarray:
    """One cell's values over ``text`` for the weights of one snapshot; keyed by (run_key, step, …)."""
    model = CharModel(config)
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
