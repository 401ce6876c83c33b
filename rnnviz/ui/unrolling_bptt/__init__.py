"""The Unrolling & BPTT page: one shared W_hh over T steps, its gradient as a sum of per-step parts, measured."""

from dataclasses import replace

import streamlit as st

from rnnviz.figures.unroll import gradient_sum_latex, step_contributions_figure, unrolled_figure
from rnnviz.lessons.unroll import ATTACHMENTS, FEEDS, MAX_HIDDEN, MAX_STEPS, POOLS, UnrollConfig, UnrollResult, unroll
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.kit.instant import Stop, instant_blocks, instant_figure, instant_slider, latex, metrics
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import (
    LinkParam,
    mirror_to_link,
    parse_choice,
    parse_float_in,
    parse_int_in,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.widgets import page_header, seed

PAGE = PageKeys("unroll")
STEPS, HIDDEN, GAIN = PAGE("steps"), PAGE("hidden"), PAGE("gain")
ATTACH, POOL, FEED = PAGE("attach"), PAGE("pool"), PAGE("feed")
LINK = (
    LinkParam("T", STEPS, parse_int_in(2, MAX_STEPS), example="9"),
    LinkParam("H", HIDDEN, parse_int_in(1, MAX_HIDDEN), example="5"),
    LinkParam("gain", GAIN, parse_float_in(0.25, 3.0), lambda v: f"{v:g}", example="1.5"),
    LinkParam("loss", ATTACH, parse_choice(ATTACHMENTS), example="many-to-one"),
    LinkParam("pool", POOL, parse_choice(POOLS), example="mean"),
    LinkParam("feed", FEED, parse_choice(FEEDS), example="previous output"),
)


@st.cache_data(show_spinner=False, max_entries=256)
def unroll_result(config: UnrollConfig) -> UnrollResult:
    return unroll(config)


def unrolled_at_every_t(config: UnrollConfig) -> list[UnrollResult]:
    """``config`` unrolled at every T the slider has (each its own network, as a move of T would build it)."""
    return [unroll_result(replace(config, steps=steps)) for steps in range(2, MAX_STEPS + 1)]


def gradient_check(result: UnrollResult, hidden: int) -> list:
    """The check beside the bars: the summed parts against autograd (written out while H ≤ 4), and the loss."""
    lines = [latex(line) for line in gradient_sum_latex(result)] if hidden <= 4 else []
    return [*lines, metrics([("max |Σ parts − autograd|", f"{result.max_abs_difference:.1e}"),
                             ("loss L", f"{result.loss:.4f}")])]


# Every control below changes every figure below and nothing above: one fragment, so that a move reruns it alone
# (not the navigation, the sidebar and the title's equations). T answers in the browser: the figures and the check
# at every T are sent with the fragment, and a move shows its T's in the frame of the move (kit.instant).
@fragment
def unrolled() -> None:
    col_t, col_h, col_gain = st.columns(3)
    with col_t:
        instant_slider("Steps T", STEPS, [Stop(steps) for steps in range(2, MAX_STEPS + 1)], link=LINK[0])
    hidden = col_h.slider("Hidden size H", 1, MAX_HIDDEN, key=HIDDEN)
    gain = col_gain.slider("Scale of $W_{hh}$", 0.25, 3.0, step=0.25, key=GAIN,
                           help="Multiplies the random W_hh: larger values make the Jacobians larger.")
    col_attach, col_option, col_link = st.columns([2, 1, 0.75], vertical_alignment="bottom")
    attach = col_attach.segmented_control("Where the loss attaches", ATTACHMENTS, key=ATTACH, required=True)
    pool, feed = "last", "zeros"
    if attach == "many-to-one":
        pool = col_option.radio("The loss reads", POOLS, key=POOL, horizontal=True,
                                format_func={"last": "$h_T$ only", "mean": "the mean of all $h_t$"}.get)
    elif attach == "one-to-many":
        feed = col_option.radio("Inputs after $x_1$", FEEDS, key=FEED, horizontal=True)
    with col_link:
        share_link(LINK)
    mirror_to_link(LINK)

    # Every T of this configuration (the figures' cache key, the same whichever T is shown)
    config = UnrollConfig(steps=MAX_STEPS, hidden=hidden, attach=attach, pool=pool, feed=feed, gain=gain, seed=seed())
    results = unrolled_at_every_t(config)

    instant_figure(STEPS, "graph", lambda: [unrolled_figure(r) for r in results], cache=(config, "graph"))
    if config.feeds_back:
        st.caption("With the previous output fed back, $x_t = y_{t-1}$ opens a second path from $h_{t-1}$ to $h_t$, "
                   "so each edge's Jacobian is $\\operatorname{diag}(\\tanh'(a_t))\\,(W_{hh} + W_{xh} W_{hy})$.")

    bars, check = st.columns(2, gap="large")
    with bars:
        instant_figure(STEPS, "bars", lambda: [step_contributions_figure(r) for r in results],
                       cache=(config, "bars"))
        st.caption("Step 1 adds nothing: its contribution is $\\delta_1 h_0^\\top$ and $h_0 = 0$. Far from the "
                   "losses, the contributions shrink when the Jacobians' norms are below 1.")
    with check:
        st.markdown("**The sum of the per-step parts is the whole gradient**")
        instant_blocks(STEPS, "check", [gradient_check(r, hidden) for r in results])
        st.caption("The parts come from a backward pass written by hand ($\\delta_t$ recursion); the total comes "
                   "from torch's autograd on the single shared parameter. In float64 they agree to rounding.")


def page() -> None:
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
    restore_from_link("unrolling", LINK)
    for key, default in ((STEPS, 6), (HIDDEN, 3), (GAIN, 1.0), (ATTACH, "many-to-many"),
                         (POOL, "last"), (FEED, "zeros")):
        st.session_state.setdefault(key, default)
    # The gain slider moves in quarters: a link's 1.3 is shown at the nearest quarter the slider has.
    st.session_state[GAIN] = round(st.session_state[GAIN] * 4) / 4
    unrolled()
