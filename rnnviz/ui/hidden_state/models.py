"""The Hidden state page's models: which model fills each slot (shipped, live-trained, uploaded or raced), the
uploader, and the table of the models shown. Drawn in the page's "The models" expander."""

from __future__ import annotations

import streamlit as st

from rnnviz.charlm.checkpoint import CheckpointError, load_checkpoint
from rnnviz.core.config import shape_label
from rnnviz.core.state_stack import HEADED_KINDS
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.hidden_state.sections import SLOT_KINDS, SLOTS, Slot, candidates, grid, page_key, params, source_key
from rnnviz.ui.kit.models import UPLOADED_KEY
from rnnviz.ui.kit.widgets import literal, table

UPLOAD, UPLOAD_ERROR = page_key("upload"), page_key("upload_error")


def read_upload() -> None:
    """on_change of the uploader: load through the safe loader (weights only, strict) or keep the reason."""
    state = st.session_state
    state.pop(UPLOAD_ERROR, None)
    uploaded = state.get(UPLOAD)
    if uploaded is None:
        return
    try:
        checkpoint = load_checkpoint(uploaded.getvalue())
    except CheckpointError as err:
        state[UPLOAD_ERROR] = str(err)
        return
    slot = next((s for s, kinds in SLOT_KINDS.items() if checkpoint.config.kind in kinds), None)
    if slot is None:  # a kind newer than this page's slots: the models already shown stay
        state[UPLOAD_ERROR] = (f"This page has no slot for a {hs.kind_label(checkpoint.config.kind)} model; its "
                               f"slots take {', '.join(SLOT_KINDS)} models.")
        return
    state[UPLOADED_KEY] = checkpoint
    state[source_key(slot)] = "uploaded"


def _slot_help(slot: str) -> str:
    kinds = " or ".join(hs.kind_label(k) for k in SLOT_KINDS[slot])
    if slot in SLOTS:
        return (f"Takes a {kinds} model: the shipped one, this session's live-trained model, an uploaded checkpoint "
                "or a model of the race.")
    return (f"Takes a {kinds} model: this session's live-trained model or an uploaded checkpoint (none is shipped, "
            "so this slot shows only once there is one).")


def choose_models() -> None:
    """Per slot that has a model, which model fills it; with an uploader. Drawn inside an expander by the page."""
    offered = {slot: {c.origin: c for c in candidates(slot)} for slot in SLOT_KINDS}
    offered = {slot: options for slot, options in offered.items() if options}
    for col, (slot, options) in zip(grid(len(offered), per_row=4), offered.items()):
        if st.session_state.get(source_key(slot)) not in options:
            st.session_state[source_key(slot)] = next(iter(options), None)
        col.selectbox(f"{slot} slot", list(options), key=source_key(slot),
                      format_func=lambda s, o=options: o[s].label, help=_slot_help(slot))
    st.file_uploader("Upload a checkpoint (.pt) saved by rnnviz", type=["pt"], key=UPLOAD, on_change=read_upload,
                     help="Loaded with weights only into the app's own architecture; it goes into the slot of its "
                          "kind (a GRU into the RNN's): RNN, LSTM, GRU, minGRU, sLSTM, mLSTM, selective SSM, linear "
                          "attention or Transformer.")
    if st.session_state.get(UPLOAD_ERROR):
        st.error(literal(st.session_state[UPLOAD_ERROR]), icon=":material/error:")


def model_table(slot_list: list[Slot]) -> None:
    rows = [{"slot": s.name, "model": s.candidate.label, "parameters": params(s), "architecture": _describe(s),
             "steps": s.candidate.step} for s in slot_list]
    table(rows, counts=("parameters", "steps"))


def _describe(slot: Slot) -> str:
    c = slot.model.config
    if c.kind == "transformer":
        return f"{c.layers} blocks, C = {c.hidden}, {c.n_head} heads, context {c.block_size}"
    if c.kind in HEADED_KINDS:
        return f"{shape_label(c)}, {c.n_head} heads of d = {c.hidden // c.n_head}"
    return shape_label(c)
