"""The "hello" walkthrough of the live-training page: one-hot inputs, W_xh x_t as a column, shifted targets,
and the softmax and cross-entropy at each position of a tiny RNN trained on the spot."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from rnnviz.charlm.hello import HelloConfig, HelloWalkthrough, train_hello
from rnnviz.figures import live as figures
from rnnviz.ui.kit.cache import shared_figure
from rnnviz.ui.kit.widgets import plot, seed

PREFIX = "live_training_hello"
STEP_OPTIONS = (0, 10, 30, 100, 300)
RESEED = f"{PREFIX}_reseed"  # added to the global seed by "Train again from a new seed"


@st.cache_data(show_spinner="Training the tiny RNN on \"hello\"…", max_entries=64)
def walkthrough(config: HelloConfig) -> HelloWalkthrough:
    return train_hello(config)


def softmax_figure(config: HelloConfig):
    """Shared, not copied: ``st.cache_data`` would unpickle the figure on every rerun of the page, and plotly
    validates every property of a figure it unpickles."""
    return shared_figure(figures.hello_softmax_figure, walkthrough(config), key=config)


def _new_seed() -> None:
    st.session_state[RESEED] = st.session_state.get(RESEED, 0) + 1


def hello_walkthrough() -> None:
    st.session_state.setdefault(f"{PREFIX}_steps", 100)
    cols = st.columns([2.6, 1.4], vertical_alignment="bottom")
    steps = cols[0].select_slider("Training steps of the tiny RNN (H = 3, one-hot inputs, Adam)", STEP_OPTIONS,
                                  key=f"{PREFIX}_steps", persist_state="session")
    cols[1].button("Train again from a new seed", key=f"{PREFIX}_train_again", icon=":material/casino:",
                   on_click=_new_seed, width="stretch")
    config = HelloConfig(steps=steps, seed=seed() + st.session_state.get(RESEED, 0))
    walk = walkthrough(config)
    letters = ", ".join(walk.vocab)
    st.markdown(
        f"**1. One-hot inputs.** The vocabulary holds V = {len(walk.vocab)} characters, sorted: {letters}. "
        "Each character is a vector of V zeros with a single 1 at its position:"
    )
    identity = np.eye(len(walk.vocab))
    one_hots = r",\quad ".join(rf"x_{{\text{{{c}}}}} = {figures.latex_matrix(identity[i], digits=0)}"
                                for i, c in enumerate(walk.vocab))
    st.latex(one_hots)
    st.markdown(
        "**2. Targets are the inputs shifted by one.** The model reads \"hell\" and at each step must predict the "
        "next character of \"hello\":"
    )
    st.markdown("| t | " + " | ".join(str(t + 1) for t in range(len(walk.inputs))) + " |\n"
                "|---|" + "---|" * len(walk.inputs) + "\n"
                "| input x_t | " + " | ".join(f"`{c}`" for c in walk.inputs) + " |\n"
                "| target | " + " | ".join(f"`{c}`" for c in walk.targets) + " |")
    t = st.segmented_control("Step t", list(range(1, len(walk.inputs) + 1)), default=1, required=True,
                             key=f"{PREFIX}_t", format_func=lambda k: f"t = {k}: '{walk.inputs[k - 1]}'")
    column = walk.input_ids[t - 1]
    st.markdown(
        f"**3. W_xh x_t selects one column.** Multiplying W_xh (H × V = {walk.w_xh.shape[0]} × {walk.w_xh.shape[1]}) "
        f"by the one-hot x_t of '{walk.inputs[t - 1]}' returns its column {column + 1}, and nothing else. "
        "That is why an embedding layer is only a table lookup."
    )
    st.latex(
        rf"W_{{xh}}\,x_{t} = {figures.latex_matrix(walk.w_xh, highlight_column=column)}"
        rf"{figures.latex_matrix(walk.one_hot[t - 1], highlight_row=column, digits=0)}"
        rf" = {figures.latex_matrix(walk.w_xh_x[t - 1], highlight_column=0)}"
    )
    uniform = math.log(len(walk.vocab))
    st.markdown(
        f"**4. Softmax and cross-entropy at each position**, after {steps} training steps. The readout gives "
        "scores z_t; the softmax turns them into probabilities p_t; the loss at a position is −ln of the "
        f"probability given to the right next character. Before training every p is near 1/V, a loss of "
        f"ln {len(walk.vocab)} = {uniform:.3f}."
    )
    plot(softmax_figure(config), key=f"{PREFIX}_softmax")
    st.caption("Steps 3 and 4 read the same input 'l' yet must predict 'l' and then 'o': only the hidden state "
               "$h_{t-1}$, which remembers how many l's came before, tells them apart.")
    terms = " + ".join(f"{loss:.3f}" for loss in walk.losses)
    st.latex(
        rf"\mathcal{{L}} = \frac{{1}}{{{len(walk.losses)}}}\left({terms}\right) = {walk.mean_loss:.3f}"
        r"\ \text{nats/char}"
    )

