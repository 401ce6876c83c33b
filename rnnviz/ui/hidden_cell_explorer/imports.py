"""What an engineer brings to the explorer from elsewhere: a model (an rnnviz checkpoint, or a plain PyTorch
``state_dict`` with its vocabulary as JSON) or, with no model at all, a states file and its text as LSTMVis takes
them (one vector per character, (T, H) or (layers, T, H), as .npy, .npz or HDF5).

Uploads go through the uploaders' ``on_change`` callbacks; ``rnnviz app --states FILE --text FILE`` passes the
files in the environment and they are read once per process. Nothing here trains or changes a model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from rnnviz.charlm.checkpoint import CheckpointError
from rnnviz.core.config import kind_label
from rnnviz.interpret.finder import QUANTITIES, CellTrace
from rnnviz.interpret.states import ImportedStates, StatesError, read_states
from rnnviz.limits import UPLOAD_MAX_VALUES
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.models import UPLOADED_KEY
from rnnviz.ui.kit.widgets import literal

page_key = PageKeys("explorer")
MODEL_UPLOAD, VOCAB_UPLOAD, NONLINEARITY = page_key("upload"), page_key("vocab_upload"), page_key("nonlinearity")
UPLOAD_ERROR, UPLOAD_REPORT = page_key("upload_error"), page_key("upload_report")
STATES_UPLOAD, STATES_TEXT_UPLOAD = page_key("states_upload"), page_key("states_text_upload")
STATES_ERROR, UPLOADED_STATES = page_key("states_error"), page_key("uploaded_states")
LAUNCHED_STATES_ENV, LAUNCHED_TEXT_ENV = "RNNVIZ_STATES", "RNNVIZ_TEXT"  # set by ``rnnviz app --states … --text …``
STATES_PREFIX = "states:"


@dataclass(frozen=True, eq=False)
class StatesSource:
    """States read from a file, with the text they belong to: what the explorer shows when there is no model."""

    key: str  # "states:uploaded" or "states:<file name>" (given at launch)
    label: str  # shown in the model box
    states: ImportedStates
    text: str  # the whole text, one character per state
    digest: str  # identifies the states and the text, for caches

    def trace(self, chars: int) -> tuple[CellTrace, str]:
        """The states of the text's first ``chars`` characters as a CellTrace, and those characters."""
        trace = self.states.trace()
        if trace.length <= chars:
            return trace, self.text
        return dataclasses.replace(trace, values=trace.values[:, :, :chars], next_ids=trace.next_ids[:chars],
                                   next_probs=trace.next_probs[:chars]), self.text[:chars]


def states_source(key: str, label: str, states_bytes: bytes, states_name: str, text_bytes: bytes,
                  max_values: int) -> StatesSource:
    """Read and check a states file against its text; a StatesError in words for anything unusable."""
    try:
        text = text_bytes.decode("utf-8")
    except UnicodeDecodeError as err:
        raise StatesError(f"The text file is not UTF-8 (byte {err.start} cannot be read); save it as UTF-8, with the "
                          "exact characters the states were computed over.") from None
    if not text:
        raise StatesError("The text file is empty: it must hold the characters the states were computed over.")
    states = read_states(states_bytes, states_name, len(text), max_values=max_values)
    digest = hashlib.blake2b(states_bytes, digest_size=12, key=hashlib.blake2b(text_bytes).digest()[:32]).hexdigest()
    return StatesSource(key, label, states, text, digest)


# ---------------------------------------------------------------------------------------------------------
# Uploads


def read_model_upload(select: Callable[[str], None]) -> None:
    """on_change of the model and vocabulary uploaders: an rnnviz checkpoint, or a plain PyTorch state_dict (with
    its vocabulary), loaded through the safe loader and selected; otherwise the reason is kept for the page."""
    from rnnviz.charlm.foreign import load_any  # the importer loads only when someone uploads

    state = st.session_state
    state.pop(UPLOAD_ERROR, None)
    state.pop(UPLOAD_REPORT, None)
    uploaded, vocab = state.get(MODEL_UPLOAD), state.get(VOCAB_UPLOAD)
    if uploaded is None:
        return
    try:
        checkpoint, report = load_any(uploaded.getvalue(), vocab.getvalue() if vocab is not None else None,
                                      nonlinearity=state.get(NONLINEARITY, "tanh"), name=Path(uploaded.name).stem)
    except CheckpointError as err:
        state[UPLOAD_ERROR] = str(err)
        return
    kind = checkpoint.config.kind
    if kind not in QUANTITIES:  # the model box would not offer it
        readable = ", ".join(kind_label(k) for k in QUANTITIES)
        state[UPLOAD_ERROR] = (f"This is a {kind_label(kind)} model, whose cells this page does not read: it reads "
                               f"those of {readable} models. The Hidden state page and the live-training page's "
                               "sampling take it.")
        return
    state[UPLOADED_KEY], state[UPLOAD_REPORT] = checkpoint, report
    select("uploaded")


def read_states_upload(select: Callable[[str], None]) -> None:
    """on_change of the states and text uploaders: once both are there, read and select them."""
    state = st.session_state
    state.pop(STATES_ERROR, None)
    states, text = state.get(STATES_UPLOAD), state.get(STATES_TEXT_UPLOAD)
    if states is None or text is None:
        return
    try:
        source = states_source(STATES_PREFIX + "uploaded", f"States from a file: {states.name} (no model)",
                               states.getvalue(), states.name, text.getvalue(), UPLOAD_MAX_VALUES)
    except StatesError as err:
        state[STATES_ERROR] = str(err)
        return
    state[UPLOADED_STATES] = source
    select(source.key)


# ---------------------------------------------------------------------------------------------------------
# Given at launch


@st.cache_resource(show_spinner="Reading the states the server was started with…")
def _launched_states(states_path: str, text_path: str) -> tuple[StatesSource | None, str | None]:
    try:
        states_bytes, text_bytes = Path(states_path).read_bytes(), Path(text_path).read_bytes()
    except OSError as err:
        return None, f"Could not read {err.filename}: {err.strerror}."
    name = Path(states_path).name
    try:
        source = states_source(STATES_PREFIX + name, f"States from a file: {name} (no model)", states_bytes, name,
                               text_bytes, max_values=1 << 31)
    except StatesError as err:
        return None, str(err)
    return source, None


def launched_states() -> tuple[StatesSource | None, str | None]:
    """The states and text the server was started with (``rnnviz app --states … --text …``), or the reason they
    cannot be shown; (None, None) when it was started without."""
    states_path, text_path = os.environ.get(LAUNCHED_STATES_ENV), os.environ.get(LAUNCHED_TEXT_ENV)
    if not states_path or not text_path:
        return None, None
    return _launched_states(states_path, text_path)


def states_sources() -> dict[str, StatesSource]:
    """Every states file this session can explore: its upload, then the one the server was started with."""
    found = [st.session_state.get(UPLOADED_STATES), launched_states()[0]]
    return {source.key: source for source in found if source is not None}


def upload_controls(select: Callable[[str], None]) -> None:
    """The expander's two ways in: a model (with its vocabulary for a plain state_dict), or states and text;
    ``select(key)`` selects what was read."""
    model_tab, states_tab = st.tabs(["A model", "States without a model"])
    with model_tab:
        weights, vocabulary = st.columns(2)
        weights.file_uploader("An rnnviz checkpoint, or a PyTorch state_dict of Embedding → RNN/LSTM/GRU → Linear",
                              type=["pt", "pth"], key=MODEL_UPLOAD, on_change=read_model_upload, args=(select,))
        vocabulary.file_uploader("Its vocabulary, for a plain state_dict: a JSON list of characters in id order",
                                 type=["json"], key=VOCAB_UPLOAD, on_change=read_model_upload, args=(select,))
        st.radio("A plain nn.RNN's nonlinearity (weights do not say)", ["tanh", "relu"], horizontal=True,
                 key=NONLINEARITY, on_change=read_model_upload, args=(select,))
        if st.session_state.get(UPLOAD_ERROR):
            st.error(literal(st.session_state[UPLOAD_ERROR]), icon=":material/error:")
        elif st.session_state.get(UPLOAD_REPORT):
            st.success("  \n".join(literal(line) for line in st.session_state[UPLOAD_REPORT]), icon=":material/check:")
    with states_tab:
        states, text = st.columns(2)
        states.file_uploader("States: one vector per character, (T, H) or (layers, T, H)", type=["npy", "npz", "h5",
                             "hdf5"], key=STATES_UPLOAD, on_change=read_states_upload, args=(select,))
        text.file_uploader("The text they were computed over (UTF-8, T characters)", type=["txt", "py", "md"],
                           key=STATES_TEXT_UPLOAD, on_change=read_states_upload, args=(select,))
        st.caption("Up to 20 MB each; for larger files start the app with "
                   "`rnnviz app --states FILE --text FILE`.")
        if st.session_state.get(STATES_ERROR):
            st.error(literal(st.session_state[STATES_ERROR]), icon=":material/error:")
