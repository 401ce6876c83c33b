"""The Hand-built RNN page: three ReLU units whose hand-set weights compute x_t AND x_{t−1}, stepped through time."""

import streamlit as st

from rnnviz.figures.handbuilt import PHI_LATEX, truth_table_markdown, truth_verdict
from rnnviz.lessons.handbuilt import DEFAULT_BITS, MAX_BITS, HandConfig, format_bits, parse_bits
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hand_built_rnn.controls import LINK_PARAMS, STEP_LINK, guess_form, quiz_scores, weight_editor
from rnnviz.ui.hand_built_rnn.runs import hand_run, hand_truth_table
from rnnviz.ui.hand_built_rnn.steps import concealed_at, step_stops, timelines
from rnnviz.ui.kit.instant import instant_figure, instant_stepper
from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import literal, page_header

STEP = "handbuilt_step"


# The stepper answers in the browser: every step's numbers, equations and timeline row are sent with the page, and a
# step shows them in the frame of the click (kit.instant). In quiz mode each step waits for the server, which hides
# h_t until the guess is scored. What changes the run (the bits, the nonlinearity, the quiz switch, the weights)
# reruns the page and hands this fragment its config.
@fragment
def stepped(config: HandConfig, quiz: bool) -> None:
    bits, weights, nonlinearity = config.bits, config.weights, config.nonlinearity
    run = hand_run(config)
    scores = quiz_scores(config)
    with st.container(horizontal=True, horizontal_alignment="right"):
        share_link(LINK_PARAMS)  # in here: the step it names moves in here
    t = instant_stepper(STEP, step_stops(config, run, quiz, scores), link=STEP_LINK, in_browser=not quiz,
                        caption=f"time step **t = {{step}}** of {len(bits)}",
                        out_of_range=f"t = {{asked}} is past the end of these {len(bits)} bits, so the page shows "
                        "t = {step}.")
    mirror_to_link(LINK_PARAMS)
    if t in concealed_at(t, quiz, scores):
        guess_form(t, run.steps[t - 1].h_t)
    if quiz and scores:
        right_total = sum(sum(r) for _, r in scores.values())
        st.caption(f"Quiz score so far: {right_total} of {3 * len(scores)} state values right.")

    timeline, check = st.columns([3, 2], gap="large")
    with timeline:
        st.markdown("**Timeline**: one row per step; the current step is tinted.")
        shown_scores = tuple(sorted(scores.items())) if quiz else ()
        instant_figure(STEP, "timeline", lambda: timelines(run, quiz, scores),
                       cache=(config, quiz, shown_scores))
    with check:
        st.markdown("**Truth-table check** over every bit sequence of length 10")
        rows = hand_truth_table(weights, nonlinearity)
        st.markdown(truth_table_markdown(rows))
        all_right, verdict = truth_verdict(rows)
        (st.success if all_right else st.warning)(verdict)
        if run.wrong_steps:
            st.warning("On your input, $y_t$ is wrong at $t$ = " + ", ".join(map(str, run.wrong_steps)) + ".")
        if nonlinearity == "tanh":
            st.caption("With tanh the states are no longer clean integers: tanh(1) ≈ 0.762, and the constant unit "
                       "fades a little at every step because tanh(tanh(1)) < tanh(1).")


def page() -> None:
    header_area = st.container()  # filled once the nonlinearity below is known: the equation names it

    restore_from_link("handbuilt", LINK_PARAMS)
    st.session_state.setdefault("handbuilt_bits", format_bits(DEFAULT_BITS))
    col_bits, col_phi, col_quiz = st.columns([2.2, 1.4, 1.4], vertical_alignment="bottom")
    bits_text = col_bits.text_input(
        "Input bits $x_1 \\dots x_T$", key="handbuilt_bits", max_chars=4 * MAX_BITS,
        help=f"Up to {MAX_BITS} bits, 0 or 1, separated by commas or spaces (or written together: 0101).",
    )
    nonlinearity = col_phi.segmented_control(
        "Nonlinearity of $h_t$", ["relu", "tanh"], format_func={"relu": "ReLU", "tanh": "tanh"}.get,
        key="handbuilt_phi", default="relu", required=True,
    )
    with header_area:
        page_header(
            "hand-built-rnn",
            "Three hidden units are enough to compute $x_t$ AND $x_{t-1}$: unit 1 copies the current bit, unit 2 "
            "receives unit 1's old value through $W_{hh}$ and so holds the previous bit, and unit 3 is a constant 1 "
            "that acts as a bias. The readout adds the two bits and subtracts 1, so $y_t$ is 1 only when both bits "
            "are 1. Step through time, edit the weights, or turn on the quiz and predict $h_t$ before it is shown.",
            rf"h_t = {PHI_LATEX[nonlinearity]}(W_{{xh}}\,x_t + W_{{hh}}\,h_{{t-1}}), \quad h_0 = (0, 0, 1), \qquad "
            r"y_t = \operatorname{ReLU}(W_{hy}\,h_t)",
        )
    quiz = col_quiz.toggle("Quiz mode", key="handbuilt_quiz", help="Predict h_t before the page reveals it.")

    with st.expander("Edit the weights", icon=":material/tune:"):
        weights = weight_editor()

    try:
        bits = parse_bits(bits_text)
    except ValueError as err:
        st.error(literal(str(err)))
        st.stop()

    config = HandConfig(bits=bits, weights=weights, nonlinearity=nonlinearity)
    stepped(config, quiz)
