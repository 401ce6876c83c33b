"""The live-training page's panels that rerun by themselves (training, cooling down, standing still while another
tab of the run may move it) and its "Sample it" section."""

import streamlit as st

from rnnviz.figures import live as figures
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.app.server import training_slots
from rnnviz.ui.kit.widgets import plot, text_block
from rnnviz.ui.live_training import run as live
from rnnviz.ui.live_training import sampling, setup, watch


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
