"""Sampling, save and load on the live-training page: which model, the sampling widgets, and checkpoints.

Samples are memoised in session state by the model's identity and step and by the request, so that a
rerun for another reason redraws them without sampling again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import streamlit as st
import torch

from rnnviz.charlm.checkpoint import CheckpointError, checkpoint_bytes, export_script, load_checkpoint
from rnnviz.charlm.corpus import BUILTIN_CORPORA, CorpusError
from rnnviz.charlm.sample import ExposureBias, NextCharTable, exposure_bias, next_char_distribution
from rnnviz.charlm.sample_request import (
    MAX_SAMPLE_LENGTH,
    SampleRequest,
    SampleResult,
    check_sample_request,
    run_sample,
)
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.config import shape_label
from rnnviz.figures import live as figures
from rnnviz.serving.live import holds_out
from rnnviz.ui.kit.cache import value_for
from rnnviz.ui.kit.corpora import builtin_corpus, needs_download
from rnnviz.ui.kit.models import (
    UPLOADED_KEY,
    ModelSource,
    has_training_record,
    model_sources,
    settled,
    what_it_is,
)
from rnnviz.ui.kit.widgets import literal, seed
from rnnviz.ui.live_training.run import current_run
from rnnviz.ui.live_training.setup import InputRead, key

KEEP = dict(persist_state="session")
STRATEGY_LABELS = {"greedy": "Greedy", "temperature": "Temperature", "beam": "Beam search"}
SIDE_BY_SIDE = (0.5, 1.0, 1.5)
SIDE_BY_SIDE_LENGTH = 150  # characters each
TOP_NEXT = 10
PASSAGE_CHARS, PREFIX_CHARS = 240, 80  # exposure bias: a held-out passage and the prefix both runs read
PINNED = key("pinned")  # the Pinned weights the shown samples were drawn from
CHECKPOINT_RESULT = key("checkpoint_result")  # the InputRead of the last checkpoint upload
SOURCES_SEEN = key("sources_seen")  # the model sources offered last time
LABEL_SHOWN = key("model_label")  # (source key, label) the model box showed last
PRIME_DEFAULT = key("prime_default")  # {"source": source key, "prime": the prime it was given by default}


def memo(name: str, memo_key: Hashable, compute: Callable[[], Any], shared: bool = False) -> Any:
    """``compute()`` once for ``memo_key`` under ``name``: per process when ``shared`` (the weights are a shipped
    model's, the same for every session: a class that opens the page at once samples the default model once, not
    30 times), else per session."""
    return value_for(shared, compute, key=memo_key, name=f"{__name__}.{name}")


def trains(source: ModelSource) -> bool:
    """The session's live run is training: its weights change under every chunk."""
    run = current_run()
    return source.key == "live" and run is not None and run.is_active


@dataclass(frozen=True)
class Pinned:
    """The weights the shown samples come from: a model (its source and object) at a step."""

    source_key: str
    model_id: int
    step: int

    @classmethod
    def latest(cls, source: ModelSource) -> Pinned:
        return cls(source.key, id(source.model), source.step)


def _identity(source: ModelSource) -> tuple:
    """Which weights the shown samples come from: the model, and the step they were drawn at.

    While a live run trains, its samples keep the step they were drawn at until the sampling settings change
    or a resample is asked for (``resample_live``), so that a click elsewhere stays fast. Whenever it does not
    train (paused, finished, stepped by hand), they follow its current weights without a click."""
    held = st.session_state.get(PINNED)
    if held is None or (held.source_key, held.model_id) != (source.key, id(source.model)) or not trains(source):
        held = Pinned.latest(source)
        st.session_state[PINNED] = held
    return source.key, held.step, id(source.model)


def pin_latest(source: ModelSource) -> None:
    """The next samples use the current weights."""
    st.session_state[PINNED] = Pinned.latest(source)


def resample_live() -> None:
    """on_click: the next samples of the live model use its weights as they are now."""
    run = current_run()
    if run is not None:
        st.session_state[PINNED] = Pinned("live", id(run.trainer.model), run.step)


def sampled_step(source: ModelSource) -> int:
    return _identity(source)[1]


def drawn_from(drawn_at: int) -> str:
    """Which weights of the live run the samples were drawn from, in words: its latest, or its cooled copy."""
    run = current_run()
    cooled = run.cooled_copy() if run is not None else None
    if cooled is not None and drawn_at == cooled.step:
        return (f"Drawn from the copy cooled down over {cooled.steps:,} steps after step {cooled.from_step:,}; the "
                f"run itself stays at step {run.step:,}, and Start goes on from there.")
    return f"Drawn from the weights of step {drawn_at:,}, the run's latest."


def _reading(source: ModelSource, compute: Callable[[torch.nn.Module], Any]) -> Callable[[], Any]:
    """``compute(model)`` on the source's model, or for the live run on its still copy (``LiveRun.frozen_model``),
    so that a chunk finishing in another script thread never hands it half-updated weights."""
    return lambda: compute(settled(source).model)


def choose_source() -> ModelSource | None:
    """A select box over the session's live model, an uploaded checkpoint and shipped models."""
    sources = {s.key: s for s in model_sources()}
    if not sources:
        st.info("Train a model above (Start or Step), or upload a checkpoint below, and sample it here.",
                icon=":material/info:")
        return None
    state = st.session_state
    appeared = [k for k in ("live", "uploaded") if k in sources and k not in state.get(SOURCES_SEEN, ())]
    state[SOURCES_SEEN] = tuple(sources)
    if appeared:  # the session's own model has just appeared (trained or uploaded): sample it
        state[key("model_source")] = appeared[0]
    current = state.get(key("model_source"))
    if current in sources and state.get(LABEL_SHOWN, (current, sources[current].label)) != (
            current, sources[current].label):
        # The live model's label names its step. The browser keeps the label it was last sent for a box
        # whose value did not change, so give it the value again: it then shows the new label.
        state[key("model_source")] = current
    chosen = st.selectbox("Model", list(sources), format_func=lambda k: sources[k].label, key=key("model_source"))
    state[LABEL_SHOWN] = (chosen, sources[chosen].label)
    return sources[chosen]


def memorised_text(source: ModelSource) -> str | None:
    """The whole training text of a model whose corpus held nothing out (the "hello" toy), else None."""
    run = current_run()
    if source.key == "live" and run is not None:
        corpus = run.trainer.corpus
    elif source.corpus in BUILTIN_CORPORA and not needs_download(source.corpus):
        corpus = builtin_corpus(source.corpus)
    else:
        return None
    return None if holds_out(corpus) else corpus.text


def _default_prime(source: ModelSource) -> None:
    """A model of "hello" is primed with its first character, "h", so that it spells the word; other models
    start empty. Applied when the model changes, unless a prime of one's own was typed."""
    state = st.session_state
    held = state.get(PRIME_DEFAULT)
    if held is not None and held["source"] == source.key:
        return
    training = memorised_text(source)
    default = training[0] if training else ""
    if state.get(key("prime"), "") in ("", held["prime"] if held else ""):
        state[key("prime")] = default
    state[PRIME_DEFAULT] = {"source": source.key, "prime": default}


def sample_request(source: ModelSource) -> SampleRequest | None:
    """The sampling widgets, checked; errors and corrections are shown in words."""
    _default_prime(source)
    st.session_state.setdefault(key("length"), 200)
    st.session_state.setdefault(key("strategy"), "temperature")
    st.session_state.setdefault(key("temperature"), 0.8)
    st.session_state.setdefault(key("top_k"), 0)
    st.session_state.setdefault(key("top_p"), 1.0)
    st.session_state.setdefault(key("beam_width"), 5)
    cols = st.columns([3, 1])
    cols[0].text_input("Prime text", key=key("prime"), max_chars=500, **KEEP,
                       help="The model reads this first, then continues it. Empty starts from a new line (a model of "
                       "\"hello\" starts from \"h\").")
    cols[1].number_input("Length", key=key("length"), step=50, **KEEP,
                         help=f"Characters to generate, 1 to {MAX_SAMPLE_LENGTH:,}.")
    strategy = st.radio("Strategy", list(STRATEGY_LABELS), format_func=STRATEGY_LABELS.get, horizontal=True,
                        key=key("strategy"), **KEEP)
    state = st.session_state
    if strategy == "temperature":
        cols = st.columns([2, 1, 1])  # the slider as wide as before; stacked on a phone
        cols[0].slider("Temperature τ", 0.1, 2.0, step=0.05, key=key("temperature"), **KEEP,
                       help="p = softmax(z / τ): below 1 sharpens the distribution, above 1 flattens it.")
        cols[1].number_input("Top-k (0 keeps all)", key=key("top_k"), step=1, **KEEP,
                             help="Sample among the k most likely characters only.")
        cols[2].number_input("Top-p (1 keeps all)", key=key("top_p"), step=0.05, format="%.2f", **KEEP,
                             help="Nucleus sampling: keep the most likely characters until their probabilities add "
                             "up to p, then sample among them; 1 = off. Applied after top-k.")
    elif strategy == "beam":
        st.slider("Beam width", 1, 10, key=key("beam_width"), **KEEP,
                  help="Keeps the width most probable continuations at every step; width 1 is greedy.")
    top_k, top_p = state.get(key("top_k")), state.get(key("top_p"))
    request, errors, notes = check_sample_request(
        source.vocab, state.get(key("prime"), ""), state.get(key("length")), strategy, state.get(key("temperature")),
        None if not top_k else int(top_k), state.get(key("beam_width")), seed(),
        top_p=None if top_p is None else float(top_p),
    )
    for note in notes:
        st.warning(literal(note), icon=":material/info:")
    for error in errors:
        st.error(literal(error), icon=":material/error:")
    return request


def sample(source: ModelSource, request: SampleRequest) -> SampleResult:
    last = st.session_state.get(key("last_request"))
    if last is not None and last != request:
        pin_latest(source)  # new settings: sample the current weights
    st.session_state[key("last_request")] = request
    return memo("sample", (_identity(source), request),
                _reading(source, lambda model: run_sample(model, source.vocab, request)), shared=source.shared)


def side_by_side(source: ModelSource, request: SampleRequest) -> list[tuple[float, str]]:
    """Three samples from the same seed and prime at τ = 0.5, 1.0 and 1.5."""
    length = min(request.length, SIDE_BY_SIDE_LENGTH)

    def draw(model: torch.nn.Module) -> list[tuple[float, str]]:
        return [(tau, run_sample(model, source.vocab, SampleRequest(
            request.prime, length, "temperature", tau, beam_width=1, seed=request.seed)).text) for tau in SIDE_BY_SIDE]

    return memo("side_by_side", (_identity(source), request.prime, length, request.seed), _reading(source, draw),
                shared=source.shared)


def next_chars(source: ModelSource, text: str) -> NextCharTable:
    return memo("next_chars", (_identity(source), text), _reading(source, lambda model: next_char_distribution(
        model, source.vocab, text, k=min(TOP_NEXT, source.vocab.size))), shared=source.shared)


def held_out_passage(source: ModelSource) -> str | None:
    """A stretch of held-out text the model's vocabulary covers: the live run's val split, or the val split
    of the built-in corpus an uploaded model was trained on."""
    run = current_run()
    if source.key == "live" and run is not None:
        val = run.trainer.val_ids
        return source.vocab.decode(val[: PASSAGE_CHARS + 1])
    if needs_download(source.corpus):
        return None
    try:
        corpus = builtin_corpus(source.corpus)
    except CorpusError:
        return None
    passage = corpus.vocab.decode(corpus.split()[1][: PASSAGE_CHARS + 1])
    try:
        source.vocab.encode(passage)
    except CorpusError:
        return None
    return passage


def exposure(source: ModelSource, passage: str) -> ExposureBias:
    prefix = min(PREFIX_CHARS, max(1, len(passage) // 3))
    return memo("exposure", (_identity(source), passage),
                _reading(source, lambda model: exposure_bias(model, source.vocab, passage, prefix)),
                shared=source.shared)


def exposure_figure(source: ModelSource, passage: str) -> go.Figure:
    """The figure of ``exposure``, built once for the same weights: moving the position slider above it reruns the
    section, which would otherwise build it again in plotly."""
    return memo("exposure_figure", (_identity(source), passage),
                lambda: figures.exposure_bias_figure(exposure(source, passage)), shared=source.shared)


# --- Save and load ----------------------------------------------------------------------------------------


def checkpoint_download() -> None:
    """The live run's checkpoint as a .pt file (weights, optimizer, history), written only when clicked.

    Streamlit runs the data function in a thread of its own; it holds the run's lock, so the file holds
    one whole step even while the model trains."""
    run = current_run()
    if run is None or run.step == 0:
        st.button("Download the checkpoint", key=key("no_checkpoint"), icon=":material/download:", disabled=True,
                  help="Train a model first.")
        return

    def save() -> bytes:
        with run.lock:
            return checkpoint_bytes(run.trainer, run.corpus_name)

    name = f"rnnviz-{run.corpus_name}" + ("" if run.is_active else f"-step{run.step}") + ".pt"
    st.download_button("Download the checkpoint", save, file_name=name, mime="application/octet-stream",
                       key=key("checkpoint_download"), icon=":material/download:", on_click="ignore",
                       help="Weights, optimizer state and history, as they are when you click; "
                       "rnnviz sample reads it too.")
    cooled = run.cooled_copy()
    if cooled is not None:  # a finished branch never changes: no lock needed
        st.download_button("Download the cooled copy", lambda: checkpoint_bytes(cooled.branch, run.corpus_name),
                           file_name=f"rnnviz-{run.corpus_name}-step{cooled.from_step}-cooled.pt",
                           mime="application/octet-stream", key=key("cooled_download"), icon=":material/ac_unit:",
                           on_click="ignore",
                           help=f"The copy the samples come from: step {cooled.from_step:,} cooled down over "
                           f"{cooled.steps:,} more steps. Loaded to train on, it continues at the run's rate.")


def checkpoint_upload() -> None:
    """A checkpoint read through the engine's safe loader becomes the uploaded model of this session."""
    upload = st.file_uploader("Upload a checkpoint (.pt)", type=["pt"], key=key("checkpoint"))
    if upload is not None:
        result = st.session_state.get(CHECKPOINT_RESULT)
        if result is None or result.file_id != upload.file_id:
            try:
                st.session_state[UPLOADED_KEY] = load_checkpoint(upload.getvalue())
                result = InputRead(upload.file_id)
            except CheckpointError as err:
                result = InputRead(upload.file_id, str(err))
            st.session_state[CHECKPOINT_RESULT] = result
        if result.error:
            st.error(f"This checkpoint was not loaded: {literal(result.error)}", icon=":material/error:")
    loaded = st.session_state.get(UPLOADED_KEY)
    if loaded is not None:
        config = loaded.config
        trained = (f"trained on {literal(loaded.corpus)} for {loaded.step:,} steps" if has_training_record(loaded)
                   else f"with no training record ({literal(what_it_is(loaded))})")
        st.success(f"Uploaded checkpoint: a {shape_label(config)} {trained} (V = {loaded.vocab.size}). Sample it "
                   "above, or inspect it in the Hidden-cell explorer.", icon=":material/check_circle:")


def script_download(config: TrainConfig | None, vocab, cool_down: bool = False) -> None:
    """The standalone PyTorch script of a config and vocabulary (with the cool-down at its end when the run would
    cool a copy down when it stops)."""
    if config is None or vocab is None:
        st.button("Export as PyTorch script", key=key("no_script"), icon=":material/code:", disabled=True,
                  help="Choose valid settings and a corpus first.")
        return
    try:
        script = export_script(config, vocab, cool_down=cool_down)
    except ValueError as err:  # a kind the exporter does not cover (a Transformer): say so on the button
        st.button("Export as PyTorch script", key=key("no_script"), icon=":material/code:", disabled=True,
                  help=str(err))
        return
    st.download_button("Export as PyTorch script", script, file_name="train_char_rnn.py",
                       mime="text/x-python", key=key("script_download"), icon=":material/code:", on_click="ignore",
                       help="A standalone training script that needs only torch, with these settings and vocabulary.")
