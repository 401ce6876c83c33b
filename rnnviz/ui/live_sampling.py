"""Sampling, save and load on the live-training page: which model, the sampling widgets, and checkpoints.

Samples are memoised in session state by the model's identity and step and by the request, so that a
rerun for another reason redraws them without sampling again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

from rnnviz.charlm.checkpoint import CheckpointError, checkpoint_bytes, export_script, load_checkpoint
from rnnviz.charlm.corpus import BUILTIN_CORPORA, CorpusError
from rnnviz.charlm.live import holds_out
from rnnviz.charlm.sample import ExposureBias, NextCharTable, exposure_bias, next_char_distribution
from rnnviz.charlm.sample_request import (
    MAX_SAMPLE_LENGTH,
    SampleRequest,
    SampleResult,
    check_sample_request,
    run_sample,
)
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.charmodel import kind_label
from rnnviz.ui.live_corpus import builtin_corpus, needs_download
from rnnviz.ui.live_run import current_run
from rnnviz.ui.live_setup import key
from rnnviz.ui.models import UPLOADED_KEY, ModelSource, model_sources
from rnnviz.ui.widgets import literal, seed

KEEP = dict(persist_state="session")
STRATEGY_LABELS = {"greedy": "Greedy", "temperature": "Temperature", "beam": "Beam search"}
SIDE_BY_SIDE = (0.5, 1.0, 1.5)
SIDE_BY_SIDE_LENGTH = 150  # characters each
TOP_NEXT = 10
PASSAGE_CHARS, PREFIX_CHARS = 240, 80  # exposure bias: a held-out passage and the prefix both runs read
PINNED = key("pinned")  # ((source key, model id), step): the weights the shown samples were drawn from
CHECKPOINT_RESULT = key("checkpoint_result")  # (file_id, error or None) of the last checkpoint upload
SOURCES_SEEN = key("sources_seen")  # the model sources offered last time
LABEL_SHOWN = key("model_label")  # (source key, label) the model box showed last
PRIME_DEFAULT = key("prime_default")  # (source key, the prime it was given by default)


def memo(name: str, memo_key: Hashable, compute: Callable[[], Any], shared: bool = False) -> Any:
    """The last value computed under ``name``, recomputed only when ``memo_key`` changes.

    ``shared``: the weights are a shipped model's, the same for every session, so the value is computed once
    per process and shared; a class that opens the page at once samples the default model once, not 30 times."""
    if shared:
        return _shared_value(name, memo_key, compute)
    slot = f"{key('memo')}_{name}"
    held = st.session_state.get(slot)
    if held is not None and held[0] == memo_key:
        return held[1]
    value = compute()
    st.session_state[slot] = (memo_key, value)
    return value


@st.cache_resource(show_spinner=False, max_entries=256)
def _shared_value(name: str, memo_key: Hashable, _compute: Callable[[], Any]) -> Any:
    return _compute()


def _shipped(source: ModelSource) -> bool:
    """A shipped model: read-only weights shared by every session."""
    return source.key.startswith("pretrained:")


def trains(source: ModelSource) -> bool:
    """The session's live run is training: its weights change under every chunk."""
    run = current_run()
    return source.key == "live" and run is not None and run.is_active


def _identity(source: ModelSource) -> tuple:
    """Which weights the shown samples come from: the model, and the step they were drawn at.

    While a live run trains, its samples keep the step they were drawn at until the sampling settings change
    or a resample is asked for (``resample_live``), so that a click elsewhere stays fast. Whenever it does not
    train (paused, finished, stepped by hand), they follow its current weights without a click."""
    model = (source.key, id(source.model))
    held = st.session_state.get(PINNED)
    if held is None or held[0] != model or not trains(source):
        held = (model, source.step)
        st.session_state[PINNED] = held
    return source.key, held[1], id(source.model)


def pin_latest(source: ModelSource) -> None:
    """The next samples use the current weights."""
    st.session_state[PINNED] = ((source.key, id(source.model)), source.step)


def resample_live() -> None:
    """on_click: the next samples of the live model use its weights as they are now."""
    run = current_run()
    if run is not None:
        st.session_state[PINNED] = (("live", id(run.trainer.model)), run.step)


def sampled_step(source: ModelSource) -> int:
    return _identity(source)[1]


def _reading(source: ModelSource, compute: Callable[[], Any]) -> Callable[[], Any]:
    """``compute`` run under the live run's lock when it reads the live model, so that a chunk still
    finishing in another script thread never hands it half-updated weights."""
    run = current_run()
    if source.key != "live" or run is None:
        return compute

    def locked() -> Any:
        with run.lock:
            return compute()

    return locked


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
    if held is not None and held[0] == source.key:
        return
    training = memorised_text(source)
    default = training[0] if training else ""
    if state.get(key("prime"), "") in ("", held[1] if held else ""):
        state[key("prime")] = default
    state[PRIME_DEFAULT] = (source.key, default)


def sample_request(source: ModelSource) -> SampleRequest | None:
    """The sampling widgets, checked; errors and corrections are shown in words."""
    _default_prime(source)
    st.session_state.setdefault(key("length"), 200)
    st.session_state.setdefault(key("strategy"), "temperature")
    st.session_state.setdefault(key("temperature"), 0.8)
    st.session_state.setdefault(key("top_k"), 0)
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
        cols = st.columns(2)
        cols[0].slider("Temperature τ", 0.1, 2.0, step=0.05, key=key("temperature"), **KEEP,
                       help="p = softmax(z / τ): below 1 sharpens the distribution, above 1 flattens it.")
        cols[1].number_input("Top-k (0 keeps all)", key=key("top_k"), step=1, **KEEP,
                             help="Sample among the k most likely characters only.")
    elif strategy == "beam":
        st.slider("Beam width", 1, 10, key=key("beam_width"), **KEEP,
                  help="Keeps the width most probable continuations at every step; width 1 is greedy.")
    top_k = state.get(key("top_k"))
    request, errors, notes = check_sample_request(
        source.vocab, state.get(key("prime"), ""), state.get(key("length")), strategy, state.get(key("temperature")),
        None if not top_k else int(top_k), state.get(key("beam_width")), seed(),
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
                _reading(source, lambda: run_sample(source.model, source.vocab, request)), shared=_shipped(source))


def side_by_side(source: ModelSource, request: SampleRequest) -> list[tuple[float, str]]:
    """Three samples from the same seed and prime at τ = 0.5, 1.0 and 1.5."""
    length = min(request.length, SIDE_BY_SIDE_LENGTH)

    def draw() -> list[tuple[float, str]]:
        return [(tau, run_sample(source.model, source.vocab, SampleRequest(
            request.prime, length, "temperature", tau, None, 1, request.seed)).text) for tau in SIDE_BY_SIDE]

    return memo("side_by_side", (_identity(source), request.prime, length, request.seed), _reading(source, draw),
                shared=_shipped(source))


def next_chars(source: ModelSource, text: str) -> NextCharTable:
    return memo("next_chars", (_identity(source), text), _reading(source, lambda: next_char_distribution(
        source.model, source.vocab, text, k=min(TOP_NEXT, source.vocab.size))), shared=_shipped(source))


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
                _reading(source, lambda: exposure_bias(source.model, source.vocab, passage, prefix)),
                shared=_shipped(source))


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


def checkpoint_upload() -> None:
    """A checkpoint read through the engine's safe loader becomes the uploaded model of this session."""
    upload = st.file_uploader("Upload a checkpoint (.pt)", type=["pt"], key=key("checkpoint"))
    if upload is not None:
        result = st.session_state.get(CHECKPOINT_RESULT)
        if result is None or result[0] != upload.file_id:
            try:
                st.session_state[UPLOADED_KEY] = load_checkpoint(upload.getvalue())
                result = (upload.file_id, None)
            except CheckpointError as err:
                result = (upload.file_id, str(err))
            st.session_state[CHECKPOINT_RESULT] = result
        if result[1]:
            st.error(f"This checkpoint was not loaded: {literal(result[1])}", icon=":material/error:")
    loaded = st.session_state.get(UPLOADED_KEY)
    if loaded is not None:
        config = loaded.config
        st.success(f"Uploaded checkpoint: a {config.layers} × {config.hidden} {kind_label(config.kind)} trained on "
                   f"{literal(loaded.corpus)} for {loaded.step:,} steps (V = {loaded.vocab.size}). Sample it above, or "
                   "inspect it in the Hidden-cell explorer.", icon=":material/check_circle:")


def script_download(config: TrainConfig | None, vocab) -> None:
    """The standalone PyTorch script of a config and vocabulary."""
    if config is None or vocab is None:
        st.button("Export as PyTorch script", key=key("no_script"), icon=":material/code:", disabled=True,
                  help="Choose valid settings and a corpus first.")
        return
    try:
        script = export_script(config, vocab)
    except ValueError as err:  # a kind the exporter does not cover (a Transformer): say so on the button
        st.button("Export as PyTorch script", key=key("no_script"), icon=":material/code:", disabled=True,
                  help=str(err))
        return
    st.download_button("Export as PyTorch script", script, file_name="train_char_rnn.py",
                       mime="text/x-python", key=key("script_download"), icon=":material/code:", on_click="ignore",
                       help="A standalone training script that needs only torch, with these settings and vocabulary.")
