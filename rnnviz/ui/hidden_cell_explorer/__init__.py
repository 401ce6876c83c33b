"""The Hidden-cell explorer page: colour text by one cell, find interpretable cells, search patterns, intervene."""

import streamlit as st

from rnnviz.ui.hidden_cell_explorer import data as ex
from rnnviz.ui.hidden_cell_explorer.choices import (
    FEATURE,
    LAYER,
    LINK,
    PAGE,
    QUANTITY,
    UNIT,
    WINDOW,
    choose_model,
    choose_states_text,
    choose_text,
    ensure_cell,
    ensure_feature,
)
from rnnviz.ui.hidden_cell_explorer.imports import StatesSource
from rnnviz.ui.hidden_cell_explorer.intervene import PRIME, intervene
from rnnviz.ui.hidden_cell_explorer.readings import against_ngram, state_path, surprise
from rnnviz.ui.hidden_cell_explorer.sections import (
    SECTIONS,
    STATES_SECTIONS,
    colour_by_cell,
    contents,
    find_cells,
    pattern_search,
    watch_emerge,
)
from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.models import model_id
from rnnviz.ui.kit.widgets import page_header, seed


def page() -> None:
    page_header(
        "hidden-cell-explorer",
        "Each unit of a character model holds one number per character it reads. Colour the text by that number "
        "and some units turn out to track something with a name: being inside a string, the depth of brackets, the "
        "indentation of a line. This page finds such cells by correlation r with features computed from the text, "
        "searches for on/off patterns, and tests a cell by holding it fixed while the model writes.",
        r"c_t = f_t \odot c_{t-1} + i_t \odot g_t, \quad h_t = o_t \odot \tanh(c_t), \qquad "
        r"r = \frac{\sum_t (a_t - \bar a)(y_t - \bar y)}{T\,\sigma_a\,\sigma_y}",
    )
    restore_from_link(PAGE, LINK)
    for kept in (LAYER, UNIT, QUANTITY, WINDOW, FEATURE, PRIME):
        # A run that stops early (too short a text) draws none of these widgets, and Streamlit would then drop
        # their state or show their defaults when they come back; assigning them keeps the selection.
        if kept in st.session_state:
            st.session_state[kept] = st.session_state[kept]
    model_source = choose_model()
    if isinstance(model_source, StatesSource):  # states read from a file, without their model
        cell_trace, passage, syntax = choose_states_text(model_source)
        trace_key = (model_source.key, model_source.digest, len(passage))
        cell_trace, rankings, baseline = ex.prepare_states(trace_key, cell_trace, passage, syntax, seed())
        vocab = None
    else:
        passage, syntax = choose_text(model_source)
        trace_key = (*model_id(model_source), passage)
        vocab = model_source.vocab
        cell_trace, rankings, baseline = ex.prepare(trace_key, model_source.model, vocab, passage, syntax, seed())
    feature_tracks = ex.tracks_for(passage, syntax)
    ensure_cell(cell_trace, rankings, ensure_feature(rankings, syntax, passage), passage, feature_tracks)
    with st.container(horizontal=True, horizontal_alignment="right"):
        share_link(LINK)
    contents(STATES_SECTIONS if vocab is None else SECTIONS)
    chosen, window_start, window_end = colour_by_cell(trace_key, cell_trace, vocab, passage, feature_tracks)
    top_cells = find_cells(trace_key, cell_trace, rankings, baseline, passage, feature_tracks)
    pattern_search(trace_key, cell_trace, passage, feature_tracks, chosen, window_start, window_end)
    if vocab is not None:
        intervene(model_source, cell_trace, chosen, passage, window_start, top_cells, st.session_state[FEATURE])
        watch_emerge(model_source, passage, chosen, window_start, window_end)
        surprise(trace_key, model_source, passage)
        against_ngram(trace_key, model_source, passage, syntax)
    else:
        st.info("Intervening on a cell, watching it emerge in training, surprisal and the n-gram comparison "
                "(sections 4–7) need the model itself: these states came without one. Upload the model (an rnnviz "
                "checkpoint or a plain PyTorch state_dict with its vocabulary) to see them.", icon=":material/info:")
    state_path(trace_key, cell_trace, passage, feature_tracks, window_start, window_end)
    mirror_to_link(LINK)
