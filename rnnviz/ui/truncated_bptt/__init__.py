"""The Truncated BPTT page: the state crosses chunk boundaries, the gradient does not; a live sweep of K on delayed
copy."""

import numpy as np
import streamlit as st

from rnnviz.figures.tbptt import chunk_figure, curves_figure, sweep_figure
from rnnviz.lessons.tbptt import SweepConfig, gradient_reach_example
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.kit.instant import Block, Stop, alert, instant_figure, instant_slider, note
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import (
    LinkParam,
    format_choices,
    mirror_to_link,
    parse_choice,
    parse_choices,
    parse_int_in,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.widgets import page_header, plot, seed
from rnnviz.ui.truncated_bptt.sweep import chunk_choices, run_missing, stored_runs

PAGE = PageKeys("tbptt")
DELAY, LENGTH, STEPS = PAGE("delay"), PAGE("length"), PAGE("steps")
VIEW_CHUNK, POSITION, CHUNKS = PAGE("view_chunk"), PAGE("position"), PAGE("chunks")
LENGTHS = (16, 24, 32, 48)
STEP_COUNTS = (100, 200, 400, 800, 1200, 1600)
POSITION_LINK = LinkParam("t", POSITION, parse_int_in(1, max(LENGTHS)), example="30")
LINK = (
    LinkParam("D", DELAY, parse_int_in(1, 12), example="7"),
    LinkParam("L", LENGTH, parse_choice(LENGTHS), example="48"),
    LinkParam("steps", STEPS, parse_choice(STEP_COUNTS), example="400"),
    LinkParam("K", VIEW_CHUNK, parse_int_in(1, max(LENGTHS)), example="10"),
    POSITION_LINK,
    LinkParam("sweep", CHUNKS, parse_choices(chunk_choices(max(LENGTHS))), format_choices,
              example="4,8,12"),
)


@st.cache_data(show_spinner=False, max_entries=64)
def tbptt_reaches(config: SweepConfig, chunk: int) -> np.ndarray:
    """Row t − 1: ‖∂L_t/∂x_u‖ for every input u, for the loss at every step t = 1 … L."""
    return np.stack([gradient_reach_example(config, chunk, position) for position in range(config.length)])


def reach_sentence(position: int, delay: int, reach: np.ndarray) -> Block:
    """Whether the loss at step t (1-based) can teach the copy: does its gradient reach the source x_{t−D}?"""
    source = position - delay
    if source < 1:
        return note(f"At $t = {position}$ the target $x_{{t-D}}$ would lie before the sequence: nothing to copy yet.")
    if reach[source - 1] == 0:
        return alert("warning", f"The source $x_{{{source}}}$ lies in an earlier chunk: "
                     f"$\\lVert \\partial L_{{{position}}} / \\partial x_{{{source}}} \\rVert$ is exactly 0, so this "
                     "loss cannot teach the network to keep its input.")
    return alert("success", f"The source $x_{{{source}}}$ is inside the chunk: "
                 f"$\\lVert \\partial L_{{{position}}} / \\partial x_{{{source}}} \\rVert = "
                 f"{reach[source - 1]:.3g}$, so this loss can teach the network to keep its input.")


def position_stops(reaches: np.ndarray, delay: int) -> list[Stop]:
    """Every loss step t = 1 … L with its sentence."""
    return [Stop(t, (reach_sentence(t, delay, reaches[t - 1]),)) for t in range(1, len(reaches) + 1)]


def chunk_figures(reaches: np.ndarray, chunk: int, delay: int) -> list:
    """The chunked sequence with the loss at every step t = 1 … L."""
    length = len(reaches)
    return [chunk_figure(length, chunk, delay, t, reaches[t - 1]) for t in range(1, length + 1)]


# Every control below changes only what is below: one fragment, so that a move reruns it alone (not the navigation,
# the sidebar and the title's equations). Trained runs are cached, so the sweep's figures are redrawn from the cache.
@fragment
def chunks_and_sweep() -> None:
    col_d, col_l, col_steps, col_link = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
    delay = col_d.slider("Delay D", 1, 12, key=DELAY)
    length = col_l.select_slider("Sequence length L", LENGTHS, key=LENGTH)
    steps = col_steps.select_slider("Training steps per run", STEP_COUNTS, key=STEPS)
    with col_link:
        share_link(LINK)

    # K, t and the swept K depend on L: kept inside it when L shrinks (or a link names more than L has).
    st.session_state[VIEW_CHUNK] = min(st.session_state.get(VIEW_CHUNK, 6), length)
    st.session_state[POSITION] = min(st.session_state.get(POSITION, 2 * st.session_state[VIEW_CHUNK]), length)
    st.session_state[CHUNKS] = [k for k in st.session_state.get(CHUNKS, (2, 4, 6, 8, 16)) if k in chunk_choices(length)]

    st.subheader("Where the gradient reaches")
    col_k, col_t = st.columns(2)
    view_chunk = col_k.slider("Chunk length K", 1, length, key=VIEW_CHUNK)
    try:
        # Without the training steps: the reach is the untrained model's, the same for every number of steps.
        reach_config = SweepConfig(delay=delay, length=length, chunks=(view_chunk,), seed=seed())
    except ValueError as err:
        st.error(str(err))
        st.stop()
    # t answers in the browser: every t's sentence and figure for this (config, K) are sent with the page (kit.instant).
    reaches = tbptt_reaches(reach_config, view_chunk)
    with col_t:
        instant_slider("Loss at step t", POSITION, position_stops(reaches, delay), link=POSITION_LINK)
    instant_figure(POSITION, "chunks", lambda: chunk_figures(reaches, view_chunk, delay), cache=reach_config)

    st.subheader("The experiment: sweep K against D")
    chunks = st.pills("Chunk lengths K to train", chunk_choices(length), selection_mode="multi", key=CHUNKS)
    mirror_to_link(LINK)
    try:
        config = SweepConfig(delay=delay, length=length, chunks=tuple(sorted(chunks)), steps=steps, seed=seed())
    except ValueError as err:
        st.warning(str(err))
        st.stop()
    if all(k > delay for k in config.chunks) or all(k <= delay for k in config.chunks):
        st.info(f"For the comparison, choose some K ≤ {delay} and some K > {delay}.")

    runs = stored_runs(config)
    missing = [k for k in config.chunks if k not in runs]
    if missing:
        st.caption(f"A {config.hidden}-unit LSTM, {config.steps} Adam steps per run on {config.alphabet} symbols "
                   f"(chance {config.task.chance:.2f}); runs already trained with these settings are kept.")
        if st.button(f"Train {len(missing)} run{'s' * (len(missing) > 1)} (K = {', '.join(map(str, missing))})",
                     key=PAGE("run"), type="primary", icon=":material/play_arrow:"):
            run_missing(config, missing)
            st.rerun()  # redraw from the cache, without the button

    if runs:
        shown = [runs[k] for k in config.chunks if k in runs]
        cols = st.columns(len(shown))
        for col, run in zip(cols, shown):
            col.metric(f"K = {run.chunk}", f"{run.accuracy:.2f}", help=f"trained in {run.seconds:.1f} s")
        left, right = st.columns(2)
        with left:
            plot(sweep_figure(shown, delay, config.task.chance))
        with right:
            plot(curves_figure(shown, delay, config.task.chance))
        st.caption(f"Training time for these runs: {sum(r.seconds for r in shown):.1f} s in all. Just above D only "
                   "the last K − D steps of each chunk see their source, so K = D + 1 learns much more slowly.")


def page() -> None:
    page_header(
        "truncated-bptt",
        "Truncated BPTT cuts a long sequence into chunks of $K$ steps and backpropagates inside each chunk only. "
        "The hidden state still flows from one chunk into the next, but it is detached there, so no gradient "
        "crosses a boundary. A dependency that spans more than a chunk therefore gets no learning signal: below, "
        "an LSTM must output at step $t$ the input from $D$ steps back, and it learns only when $K > D$.",
        r"\frac{\partial L_t}{\partial x_u} = 0 \quad \text{for every } u \text{ before the chunk that holds } t, "
        r"\qquad y_t = x_{t-D}",
    )
    restore_from_link("tbptt", LINK)
    for key, default in ((DELAY, 4), (LENGTH, 32), (STEPS, 800)):
        st.session_state.setdefault(key, default)
    chunks_and_sweep()
