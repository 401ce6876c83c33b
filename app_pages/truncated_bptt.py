"""Truncated BPTT: the state crosses chunk boundaries, the gradient does not; a live sweep of K on delayed copy."""

import streamlit as st

from rnnviz.figures.tbptt import chunk_figure, curves_figure, sweep_figure
from rnnviz.lessons.tbptt import SweepConfig
from rnnviz.ui.kit.widgets import page_header, plot, seed
from rnnviz.ui.mechanics.runs import tbptt_reach
from rnnviz.ui.mechanics.sweep import chunk_choices, run_missing, stored_runs

page_header(
    "truncated-bptt",
    "Truncated BPTT cuts a long sequence into chunks of $K$ steps and backpropagates inside each chunk only. "
    "The hidden state still flows from one chunk into the next, but it is detached there, so no gradient "
    "crosses a boundary. A dependency that spans more than a chunk therefore gets no learning signal: below, "
    "an LSTM must output at step $t$ the input from $D$ steps back, and it learns only when $K > D$.",
    r"\frac{\partial L_t}{\partial x_u} = 0 \quad \text{for every } u \text{ before the chunk that holds } t, "
    r"\qquad y_t = x_{t-D}",
)

col_d, col_l, col_steps = st.columns(3)
delay = col_d.slider("Delay D", 1, 12, 4, key="tbptt_delay")
length = col_l.select_slider("Sequence length L", [16, 24, 32, 48], 32, key="tbptt_length")
steps = col_steps.select_slider("Training steps per run", [100, 200, 400, 800, 1200, 1600], 800, key="tbptt_steps")

st.subheader("Where the gradient reaches")
col_k, col_t = st.columns(2)
view_chunk = col_k.slider("Chunk length K", 1, length, min(6, length), key="tbptt_view_chunk")
position = col_t.slider("Loss at step t", 1, length, min(2 * view_chunk, length), key="tbptt_position")
try:
    base = SweepConfig(delay=delay, length=length, chunks=(view_chunk,), steps=steps, seed=seed())
except ValueError as err:
    st.error(str(err))
    st.stop()
reach = tbptt_reach(base, view_chunk, position - 1)
plot(chunk_figure(length, view_chunk, delay, position, reach))
source = position - delay
if source < 1:
    st.caption(f"At $t = {position}$ the target $x_{{t-D}}$ would lie before the sequence: nothing to copy yet.")
elif reach[source - 1] == 0:
    st.warning(f"The source $x_{{{source}}}$ lies in an earlier chunk: "
               f"$\\lVert \\partial L_{{{position}}} / \\partial x_{{{source}}} \\rVert$ is exactly 0, so this "
               "loss cannot teach the network to keep its input.")
else:
    st.success(f"The source $x_{{{source}}}$ is inside the chunk: "
               f"$\\lVert \\partial L_{{{position}}} / \\partial x_{{{source}}} \\rVert = {reach[source - 1]:.3g}$, "
               "so this loss can teach the network to keep its input.")

st.subheader("The experiment: sweep K against D")
chunks = st.pills("Chunk lengths K to train", chunk_choices(length), selection_mode="multi",
                  default=[k for k in (2, 4, 6, 8, 16) if k <= length], key="tbptt_chunks")
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
                 key="tbptt_run", type="primary", icon=":material/play_arrow:"):
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
