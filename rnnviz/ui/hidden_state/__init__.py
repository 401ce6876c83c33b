"""The Hidden state page: what an RNN, an LSTM, a minGRU and a Transformer (and a session's own sLSTM, mLSTM,
selective SSM or linear attention) each carry into the next step, the Transformer's attention, how far back each one
remembers (memory probes) and the loss against the context read."""

import streamlit as st

from rnnviz.core import equations
from rnnviz.ui.hidden_state import attending, connectivity, memory, models, race, sections, stepping
from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header

LINK = (*sections.LINK, connectivity.PREDICTION_LINK, *race.LINK)


def page() -> None:
    page_header(
        "hidden-state",
        "Four character models of about the same size, trained on the same text (english-docs): a vanilla **RNN**, "
        "an **LSTM**, a **minGRU** and a small **Transformer**. The RNN rewrites one vector h_t at every step; the "
        "LSTM splits its state into a slow cell c_t and an exposed h_t; the minGRU keeps one fixed-size h_t too, but "
        "its gates read only x_t, never the previous state, so it trains as a scan across the whole sequence (the "
        "recurrent idea behind Mamba and RWKV); the Transformer has no evolving state at all: at every step it keeps "
        "the keys and values of **every earlier character** in every layer, and attends over them. An **sLSTM**, "
        "**mLSTM**, **selective SSM** or **linear attention** of yours (trained on the live page, or uploaded) "
        "joins them in a slot of its own.",
    )
    for kind in ("rnn", "lstm", "mingru", "transformer"):
        st.latex(equations.labelled_update(kind))
    own_kinds = st.container()  # the updates of the state kinds shown, once the slots are known

    restore_from_link("hidden_state", LINK)
    with st.container(horizontal=True, vertical_alignment="bottom"):
        sections.choose_sentence()
        share_link(LINK)
    slots = sections.slots()
    with own_kinds:
        for kind in sections.state_kinds(slots):
            st.latex(equations.labelled_update(kind))
    with st.expander("The models: shipped, live-trained, uploaded or raced", icon=":material/info:"):
        models.choose_models()
        models.model_table(slots)
    stepping.step_through(slots)
    attending.who_attends(slots)
    connectivity.draw_connectivity(slots)
    memory.draw_probe(slots)
    memory.draw_bottleneck(slots)
    race.race_section()
    mirror_to_link(LINK)
