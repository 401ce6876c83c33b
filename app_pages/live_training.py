"""Character model — live training: set up a run, watch it train in chunks, sample it, save and load it."""

import streamlit as st

from rnnviz.figures import live as figures
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.app.presenting import presenting
from rnnviz.ui.app.server import training_slots
from rnnviz.ui.kit.widgets import page_header, plot, text_block
from rnnviz.ui.live import corpus as live_corpus
from rnnviz.ui.live import pending as live_pending
from rnnviz.ui.live import run as live
from rnnviz.ui.live import sampling, setup, watch
from rnnviz.ui.live.hello import hello_walkthrough

URL = "char-model-training"

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

# --- Settings -------------------------------------------------------------------------------------------------

# Presenting folds the settings once, when it starts (the class watches the run; the teacher may open them again).
SETTINGS_OPEN, FOLDED_FOR_ROOM = setup.key("settings_open"), setup.key("settings_folded_for_room")
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

# --- Controls and the run ----------------------------------------------------------------------------------------

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


@fragment(run_every=live.RERUN_EVERY)
def training_panel() -> None:
    """Reruns by itself while the run trains: draws the run as it stands, then trains one chunk."""
    run = live.current_run()
    if run is None or not run.is_active:
        st.rerun()  # reset, paused, finished or halted (here or in another tab of the run): the controls change
    # Draw first, then train one chunk: everything on screen is fresh while the chunk runs (drawn after it, the
    # panel would sit greyed out as "stale" for most of the time); the next rerun shows the new step.
    watch.watch_panel(run)
    # A click may have started this script thread while the last one still trains its chunk (or another tab of the
    # run trains it now): then train on the next rerun, so that the click is answered at once.
    run.tick_unless_busy(training_slots(), live.owner(), live.CHUNK_SECONDS)
    if not run.is_active:
        st.rerun()  # finished or halted by itself: the controls change too


@fragment(run_every=live.RERUN_EVERY)
def cooling_panel() -> None:
    """Reruns by itself while a stopped run's copy cools down: draws the run and the cool-down's bar, then cools
    one chunk."""
    run = live.current_run()
    if run is None or not run.cools_down:
        st.rerun()  # cooled (here or in another tab of the run), started again, stepped or reset
    watch.watch_panel(run)
    run.cool_unless_busy(training_slots(), live.owner(), live.CHUNK_SECONDS)
    if not run.cools_down:
        st.rerun()  # the cooled copy is ready: the samples below take it


@fragment
def stopped_panel() -> None:
    watch.watch_panel(live.current_run())


@fragment(run_every=live.FOLLOW_EVERY)
def follow_other_tabs(drawn: tuple) -> None:
    """While the run stands still here, another tab of it may Start, Step or Reset it: redraw when it did."""
    if live.run_state(live.current_run()) != drawn:
        st.rerun()


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

# --- Save and load -----------------------------------------------------------------------------------------------

st.header("Save and load")
download_col, upload_col = st.columns(2, gap="large")
with download_col:
    sampling.checkpoint_download()
    st.caption("The file loads back here, in the Hidden-cell explorer, and in `rnnviz sample`.")
with upload_col:
    sampling.checkpoint_upload()

# --- Sample it ---------------------------------------------------------------------------------------------------


@fragment
def sampling_section() -> None:
    st.header("Sample it")
    source = sampling.choose_source()
    if source is None:
        return
    request = sampling.sample_request(source)
    if request is None:
        return
    result = sampling.sample(source, request)
    text = request.prime + result.text
    drawn_at = sampling.sampled_step(source)
    if sampling.trains(source):
        cols = st.columns([3, 1], vertical_alignment="center")
        cols[0].caption(f"Drawn from the weights of step {drawn_at:,}. The run trains on: this section keeps "
                        "those weights until you ask for the latest (or Pause).")
        cols[1].button("Sample the latest weights", key=setup.key("resample"), icon=":material/refresh:",
                       on_click=sampling.resample_live, width="stretch")
    elif source.key == "live":
        st.caption(sampling.drawn_from(drawn_at))
    text_block(text)
    training = sampling.memorised_text(source)
    if training is not None:
        watch.where_it_leaves(text, training, shown=watch.LEAVES_SHOWN)
    if result.beams:
        st.markdown("**The most probable continuations**, with their total log-probability Σ ln p:")
        for rank, beam in enumerate(result.beams[:5], start=1):
            st.markdown(f"{rank}. ln p = {beam.log_prob:.2f}")
            text_block(request.prime + beam.text)

    st.subheader("Same seed, different temperature")
    cols = st.columns(len(sampling.SIDE_BY_SIDE))
    for col, (tau, sample_text) in zip(cols, sampling.side_by_side(source, request)):
        col.markdown(f"**τ = {tau:g}**")
        text_block(request.prime + sample_text, col)

    st.subheader("What comes next?")
    if len(text) >= 2:
        table = sampling.next_chars(source, text)
        position = st.slider("Position in the text above", 1, len(text) - 1, min(len(request.prime) + 20,
                             len(text) - 1), key=setup.key("position"),
                             help="The bars show the model's top next characters after the highlighted one.")
        st.html(figures.context_html(text, position - 1))
        plot(figures.next_char_figure(table.chars[position - 1], table.probs[position - 1], text[position]),
             key=setup.key("next_chars"))

    st.subheader("Exposure bias")
    passage = sampling.held_out_passage(source)
    if passage is None:
        st.caption("No held-out text of this model's corpus is at hand.")
    else:
        plot(sampling.exposure_figure(source, passage), key=setup.key("exposure"))
        st.markdown(
            "Both read the same held-out prefix, then score the true continuation. Teacher-forced, the model reads "
            "the true text, as in training; free-running, it reads its own greedy guesses, and one early mistake "
            "puts it in states it never met in training, which is why long generations drift."
        )


sampling_section()
