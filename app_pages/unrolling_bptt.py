"""Unrolling & BPTT: one shared W_hh over T steps, its gradient as a sum of per-step parts, measured."""

import streamlit as st

from rnnviz.figures.unroll import gradient_sum_latex, step_contributions_figure, unrolled_figure
from rnnviz.lessons.unroll import ATTACHMENTS, MAX_HIDDEN, MAX_STEPS, UnrollConfig
from rnnviz.ui.kit.widgets import page_header, plot, seed
from rnnviz.ui.mechanics.runs import unroll_result

page_header(
    "unrolling-bptt",
    "Unrolling writes the recurrence out as a deep feed-forward graph with one layer per time step, in which "
    "every layer uses the **same** $W_{hh}$. Backpropagation through time is ordinary backpropagation on that "
    "graph: the gradient of the shared $W_{hh}$ is the sum of what each step's copy receives. Each edge "
    "$h_{t-1} \\to h_t$ below is labelled with the size of its Jacobian, measured on a small random RNN.",
    r"\frac{\partial L}{\partial W_{hh}} = \sum_{t=1}^{T} \frac{\partial L}{\partial W_{hh}}\Big|_t "
    r"= \sum_{t=1}^{T} \delta_t\, h_{t-1}^\top, \qquad "
    r"\frac{\partial h_t}{\partial h_{t-1}} = \operatorname{diag}\big(\tanh'(a_t)\big)\, W_{hh}",
)

col_t, col_h, col_gain = st.columns(3)
steps = col_t.slider("Steps T", 2, MAX_STEPS, 6, key="unroll_steps")
hidden = col_h.slider("Hidden size H", 1, MAX_HIDDEN, 3, key="unroll_hidden")
gain = col_gain.slider("Scale of $W_{hh}$", 0.25, 3.0, 1.0, 0.25, key="unroll_gain",
                       help="Multiplies the random W_hh: larger values make the Jacobians larger.")
col_attach, col_option = st.columns([2, 1])
attach = col_attach.segmented_control("Where the loss attaches", ATTACHMENTS, key="unroll_attach",
                                      default="many-to-many", required=True)
pool, feed = "last", "zeros"
if attach == "many-to-one":
    pool = col_option.radio("The loss reads", ["last", "mean"], key="unroll_pool", horizontal=True,
                            format_func={"last": "$h_T$ only", "mean": "the mean of all $h_t$"}.get)
elif attach == "one-to-many":
    feed = col_option.radio("Inputs after $x_1$", ["zeros", "previous output"], key="unroll_feed", horizontal=True)

config = UnrollConfig(steps=steps, hidden=hidden, attach=attach, pool=pool, feed=feed, gain=gain, seed=seed())
result = unroll_result(config)

plot(unrolled_figure(result))
if config.feeds_back:
    st.caption("With the previous output fed back, $x_t = y_{t-1}$ opens a second path from $h_{t-1}$ to $h_t$, "
               "so each edge's Jacobian is $\\operatorname{diag}(\\tanh'(a_t))\\,(W_{hh} + W_{xh} W_{hy})$.")

bars, check = st.columns(2, gap="large")
with bars:
    plot(step_contributions_figure(result))
    st.caption("Step 1 adds nothing: its contribution is $\\delta_1 h_0^\\top$ and $h_0 = 0$. Far from the "
               "losses, the contributions shrink when the Jacobians' norms are below 1.")
with check:
    st.markdown("**The sum of the per-step parts is the whole gradient**")
    if hidden <= 4:
        for line in gradient_sum_latex(result):
            st.latex(line)
    c1, c2 = st.columns(2)
    c1.metric("max |Σ parts − autograd|", f"{result.max_abs_difference:.1e}")
    c2.metric("loss L", f"{result.loss:.4f}")
    st.caption("The parts come from a backward pass written by hand ($\\delta_t$ recursion); the total comes "
               "from torch's autograd on the single shared parameter. In float64 they agree to rounding.")
