"""The live-training page: set up a run, watch it train in chunks, sample it, save and load it."""

import streamlit as st

from rnnviz.charlm.corpus import Corpus
from rnnviz.ui.app.presenting import presenting
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.live_training import corpus as live_corpus
from rnnviz.ui.live_training import pending as live_pending
from rnnviz.ui.live_training import run as live
from rnnviz.ui.live_training import sampling, setup
from rnnviz.ui.live_training.hello import hello_walkthrough
from rnnviz.ui.live_training.panels import (
    cooling_panel,
    follow_other_tabs,
    sampling_section,
    stopped_panel,
    training_panel,
)

URL = "char-model-training"
# Presenting folds the settings once, when it starts (the class watches the run; the teacher may open them again).
SETTINGS_OPEN, FOLDED_FOR_ROOM = setup.key("settings_open"), setup.key("settings_folded_for_room")


def page() -> None:
    header_area = st.container()  # filled once the settings (and with them the Kind) are known
    setup.init_settings()
    with header_area:
        page_header(
            URL,
            "A character model reads text one character at a time and learns to predict the next one. Here it trains "
            "live, in short chunks: the loss falls below the uniform guess ln V, and the samples drawn along the way "
            "go from noise to letter frequencies, to words, to layout.",
            setup.kind_equation(),  # the update of the Kind chosen below
        )
    live.take_up_run_from_address()  # ?run=<token>: a reload or a new tab finds its run again

    # What the class watches comes first, settings below: the containers are filled in the order the values
    # flow (settings → controls → the run), and shown in this one.
    controls_area = st.container()
    panel_area = st.container()

    pending_download, corpus, pending = settings()

    # --- Controls and the run --------------------------------------------------------------------------------

    with controls_area:
        run = live.current_run()
        drawn_state = live.run_state(run)  # what the controls show; another tab of the run may change it
        live.controls(run, pending)
        live.keep_run_in_address(run)
        if run is not None:
            next_corpus = pending_download or (corpus.name if corpus else None)
            changed = live_pending.differences_from_run(run.trainer.config, run.corpus_name, pending, next_corpus)
            if changed:
                st.info(f"These settings differ from the run below ({'; '.join(changed)}). Reset discards that model, "
                        "and the next Start builds one from these settings.", icon=":material/info:")
            if live_pending.retunable_changes(run.trainer.config, pending):
                st.button("Apply the new learning rate and clipping to this run", key=setup.key("retune"),
                          icon=":material/tune:", on_click=live.on_retune,
                          help="Changes them for the next steps without losing the weights (also after a blow-up).")

    with panel_area:
        live.run_pending_download()
        run = live.current_run()
        if run is None:
            st.caption("Press **Start** to train with the settings below, or **Step** to train one short chunk at a "
                       "time.")
        elif run.is_active:
            training_panel()
        elif run.cools_down:
            cooling_panel()
        else:
            stopped_panel()
            follow_other_tabs(drawn_state)

    with st.expander("Walkthrough: \"hello\" with a 4-character vocabulary", icon=":material/school:"):
        hello_walkthrough()

    # --- Save and load ---------------------------------------------------------------------------------------

    st.header("Save and load")
    download_col, upload_col = st.columns(2, gap="large")
    with download_col:
        sampling.checkpoint_download()
        st.caption("The file loads back here, in the Hidden-cell explorer, and in `rnnviz sample`.")
    with upload_col:
        sampling.checkpoint_upload()

    sampling_section()


def settings() -> tuple[str | None, Corpus | None, live_pending.PendingRun]:
    """The settings' expander: (the corpus still to download or None, the chosen corpus, the pending run)."""
    if presenting() != st.session_state.get(FOLDED_FOR_ROOM, False):
        st.session_state[FOLDED_FOR_ROOM] = presenting()
        if presenting():
            st.session_state[SETTINGS_OPEN] = False
    with st.expander("Settings: preset, corpus, model and training", expanded=True, icon=":material/tune:",
                     key=SETTINGS_OPEN, on_change="rerun"):
        setup.preset_picker()
        corpus_col, model_col, training_col = st.columns(3, gap="large")
        with corpus_col:
            st.subheader("Corpus")
            pending_download = live_corpus.corpus_picker()
            corpus = setup.active_corpus()
            live_corpus.corpus_summary(corpus, pending_download)
        with model_col:
            st.subheader("Model")
            setup.model_widgets()
        with training_col:
            st.subheader("Training")
            setup.training_widgets()
        setup.schedule_widgets(on_change=live.on_budget_change)
        vocab_size = setup.SHAKESPEARE_VOCAB if pending_download else corpus.vocab.size if corpus else None
        pending = live_pending.pending_run(vocab_size, None if pending_download else corpus)
        for problem in pending.problems:
            st.error(problem, icon=":material/error:")
        size_col, speed_col, script_col = st.columns(3, vertical_alignment="center")
        size_col.metric("Parameters", f"{pending.parameters:,}" if pending.parameters else "—",
                        help="Of the model these settings describe (with the chosen corpus's vocabulary).")
        speed_col.metric("Estimated speed", f"≈ {pending.chars_per_s:,.0f} chars/s" if pending.chars_per_s else "—",
                         help=live_pending.speed_help(pending))
        with script_col:
            sampling.script_download(pending.config, corpus.vocab if corpus and not pending_download else None,
                                     cool_down=pending.settings is not None and pending.settings.cool_down)
    return pending_download, corpus, pending
