"""Where a page finds a character model to inspect: this session's live run, an upload, the model the server was
started with (``rnnviz app --model FILE``), or a shipped one.

``rnnviz app --model FILE [--vocab FILE]`` passes the file in the environment (``LAUNCHED_MODEL_ENV``); it is
loaded once per process, read-only and shared like a shipped model, and every model box selects it first.

The live-training page keeps its run in ``st.session_state[LIVE_RUN_KEY]`` (an object with ``.trainer``
and ``.corpus_name``) and an uploaded checkpoint in ``st.session_state[UPLOADED_KEY]``
(a ``rnnviz.charlm.checkpoint.Checkpoint``). Shipped models are read-only and shared by every session.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from rnnviz.charlm.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from rnnviz.charlm.corpus import Corpus, CorpusError, Vocab
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import shape_label
from rnnviz.ui.kit.corpora import builtin_corpus

LIVE_RUN_KEY = "live_run"
UPLOADED_KEY = "uploaded_checkpoint"
PRETRAINED_DIR = MODELS_DIR
CODE_CORPORA = ("python-stdlib",)
# Set by ``rnnviz app --model … --vocab … --nonlinearity …`` (rnnviz.launch, which cannot import this module).
LAUNCHED_MODEL_ENV, LAUNCHED_VOCAB_ENV = "RNNVIZ_MODEL", "RNNVIZ_VOCAB"
LAUNCHED_NONLINEARITY_ENV = "RNNVIZ_NONLINEARITY"
LAUNCHED_PREFIX = "file:"


@dataclass(frozen=True, eq=False)
class ModelSource:
    """One model a page can inspect."""

    key: str  # stable id: "live", "uploaded", "file:<file name>", "pretrained:<file stem>" or "race:<contender>"
    label: str  # shown in a select box
    model: CharModel
    vocab: Vocab
    corpus: str  # name of the corpus it was trained on
    step: int  # optimizer steps it has had; changes as a live run trains
    carries_state: bool = False  # trained with its state carried from chunk to chunk (TrainConfig.carries_state)

    @property
    def shared(self) -> bool:
        """A shipped model or the one the server was started with: read-only weights, the same for every session,
        so what is computed from it may be computed once per process and shared."""
        return self.key.startswith(("pretrained:", LAUNCHED_PREFIX))

    @property
    def identity(self) -> Hashable:
        """What a value computed from this model is keyed by: a shipped model's key, else the key, the model
        object and the step (a session's own model changes as it trains)."""
        return self.key if self.shared else (self.key, id(self.model), self.step)

    @property
    def origin(self) -> str:
        """"shipped", "live", "uploaded", "file" (given at launch) or "race"."""
        kind = self.key.split(":")[0]
        return "shipped" if kind == "pretrained" else kind


@st.cache_resource(show_spinner="Loading the shipped models…")
def pretrained_checkpoints() -> dict[str, Checkpoint]:
    """The checkpoints in rnnviz/assets/models/, loaded once per process through the safe loader."""
    loaded = {}
    for path in sorted(PRETRAINED_DIR.glob("*.pt")):
        try:
            loaded[path.stem] = load_checkpoint(path)
        except CheckpointError:
            continue  # a damaged shipped file must not take the pages down; the asset test catches it
    return loaded


@st.cache_resource(show_spinner="Loading the model the server was started with…")
def launched_checkpoint(path: str, vocab: str | None, nonlinearity: str = "tanh"
                        ) -> tuple[Checkpoint | None, list[str], str | None]:
    """(checkpoint, what the import reported, None) for ``rnnviz app --model PATH [--vocab VOCAB]``, or
    (None, [], the reason in words) when the file cannot be used; loaded once per process."""
    from rnnviz.charlm.foreign import load_any  # only a server started with a model needs the importer
    from rnnviz.limits import OWN_FILE_LIMITS  # the operator's own file

    try:
        checkpoint, report = load_any(path, vocab, nonlinearity=nonlinearity, limits=OWN_FILE_LIMITS)
    except CheckpointError as err:
        return None, [], str(err)
    return checkpoint, report, None


def launched_model() -> tuple[Checkpoint | None, list[str], str | None]:
    """The model the server was started with, as ``launched_checkpoint`` gives it; (None, [], None) when none."""
    path = os.environ.get(LAUNCHED_MODEL_ENV)
    if not path:
        return None, [], None
    return launched_checkpoint(path, os.environ.get(LAUNCHED_VOCAB_ENV) or None,
                               os.environ.get(LAUNCHED_NONLINEARITY_ENV) or "tanh")


def launched_key() -> str | None:
    """The model sources' key of the model the server was started with, when there is one."""
    path = os.environ.get(LAUNCHED_MODEL_ENV)
    return LAUNCHED_PREFIX + Path(path).name if path else None


def preferred(keys, fallback: str | None = None) -> str | None:
    """What a model box selects first: the model the server was started with, else ``fallback``, else the first."""
    keys = list(keys)
    for key in (launched_key(), fallback):
        if key is not None and key in keys:
            return key
    return keys[0] if keys else None


def model_sources() -> list[ModelSource]:
    """Every model this session can inspect: the session's own first, then the one the server was started with,
    then the shipped ones."""
    sources = []
    run = st.session_state.get(LIVE_RUN_KEY)
    if run is not None and run.trainer.step > 0:
        trainer, cooled = run.trainer, run.cooled_copy()
        if cooled is not None:  # the run stands still and a copy of it is cooled: readers take the copy
            sources.append(ModelSource("live", f"Live-trained ({run.corpus_name}, step {cooled.from_step}, cooled "
                                       f"over {cooled.steps} more)", cooled.model, trainer.vocab, run.corpus_name,
                                       cooled.step))
        else:
            sources.append(ModelSource("live", f"Live-trained ({run.corpus_name}, step {trainer.step})",
                                       trainer.model, trainer.vocab, run.corpus_name, trainer.step))
    uploaded = st.session_state.get(UPLOADED_KEY)
    if uploaded is not None:
        sources.append(ModelSource("uploaded", f"Uploaded checkpoint ({what_it_is(uploaded)})",
                                   uploaded.model, uploaded.vocab, uploaded.corpus, uploaded.step))
    launched, _, _ = launched_model()
    if launched is not None:
        sources.append(ModelSource(launched_key(), f"Your model: {Path(os.environ[LAUNCHED_MODEL_ENV]).name} "
                                   f"({shape_label(launched.config)})", launched.model, launched.vocab,
                                   launched.corpus, launched.step))
    for stem, ckpt in pretrained_checkpoints().items():
        sources.append(ModelSource(f"pretrained:{stem}", f"Shipped: {stem} ({ckpt.corpus})", ckpt.model,
                                   ckpt.vocab, ckpt.corpus, ckpt.step))
    return sources


def has_training_record(checkpoint: Checkpoint) -> bool:
    return bool(checkpoint.step or checkpoint.history)


def what_it_is(checkpoint: Checkpoint) -> str:
    """A loaded checkpoint in a model box: "<corpus>, step N" after training in rnnviz. A model with no training
    record has no step: a plain PyTorch state_dict (read by rnnviz.charlm.foreign, named after its file, without
    an optimizer) is "<name>, plain PyTorch"; an rnnviz run saved before its first step, "<corpus>, untrained"."""
    if has_training_record(checkpoint):
        return f"{checkpoint.corpus}, step {checkpoint.step:,}"
    plain = checkpoint.trainer_state.get("optimizer") is None
    return f"{checkpoint.corpus}, {'plain PyTorch' if plain else 'untrained'}"


# --- what a page reads from a model and its corpus -----------------------------------------------------------


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


def settled(source: ModelSource) -> ModelSource:
    """The source with a still model: for the live run, its ``frozen_model`` (a CPU copy taken under the run's
    lock, shared by every reader until the weights change), so that a page's trace, samples and fingerprint
    stay in step with each other while the run trains on in another script thread."""
    if source.key != "live":
        return source
    frozen = st.session_state[LIVE_RUN_KEY].reader_model()  # the cooled copy, or a still copy of the run
    return replace(source, model=frozen.model, step=frozen.step)


def fingerprint(source: ModelSource) -> str:
    """Identifies the weights: a shipped model by its file, anything else by a hash of its tensors."""
    if source.shared:
        return source.key
    digest = hashlib.blake2b(digest_size=12)
    for name, tensor in source.model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def model_id(source: ModelSource) -> tuple:
    return (source.key, fingerprint(source), source.step)
