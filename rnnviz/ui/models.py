"""Where a page finds a character model to inspect: this session's live run, an upload, or a shipped one.

The live-training page keeps its run in ``st.session_state[LIVE_RUN_KEY]`` (an object with ``.trainer``
and ``.corpus_name``) and an uploaded checkpoint in ``st.session_state[UPLOADED_KEY]``
(a ``rnnviz.charlm.checkpoint.Checkpoint``). Shipped models are read-only and shared by every session.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from rnnviz.charlm.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.charmodel import CharModel

LIVE_RUN_KEY = "live_run"
UPLOADED_KEY = "uploaded_checkpoint"
PRETRAINED_DIR = MODELS_DIR


@dataclass(frozen=True, eq=False)
class ModelSource:
    """One model a page can inspect."""

    key: str  # stable id: "live", "uploaded" or "pretrained:<file stem>"
    label: str  # shown in a select box
    model: CharModel
    vocab: Vocab
    corpus: str  # name of the corpus it was trained on
    step: int  # optimizer steps it has had; changes as a live run trains


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


def model_sources() -> list[ModelSource]:
    """Every model this session can inspect, the session's own first."""
    sources = []
    run = st.session_state.get(LIVE_RUN_KEY)
    if run is not None and run.trainer.step > 0:
        trainer = run.trainer
        sources.append(ModelSource("live", f"Live-trained ({run.corpus_name}, step {trainer.step})",
                                   trainer.model, trainer.vocab, run.corpus_name, trainer.step))
    uploaded = st.session_state.get(UPLOADED_KEY)
    if uploaded is not None:
        sources.append(ModelSource("uploaded", f"Uploaded checkpoint ({uploaded.corpus}, step {uploaded.step})",
                                   uploaded.model, uploaded.vocab, uploaded.corpus, uploaded.step))
    for stem, ckpt in pretrained_checkpoints().items():
        sources.append(ModelSource(f"pretrained:{stem}", f"Shipped: {stem} ({ckpt.corpus})", ckpt.model,
                                   ckpt.vocab, ckpt.corpus, ckpt.step))
    return sources
