"""The hand-built AND network: the issue's states and outputs exactly, torch's own cell, the truth table, the page."""

import math

import pytest
import torch
from torch import nn

from rnnviz.lessons.handbuilt import (
    DEFAULT_BITS,
    HAND_SET,
    HandConfig,
    HandWeights,
    guess_is_right,
    parse_bits,
    run_handbuilt,
    truth_table,
)
from tests.apptest_helpers import instant_control, instant_shown, move_instant, open_page, page_text

PAGE = "app_pages/hand_built_rnn.py"

# From the issue: the default input, its AND outputs and the states h_1 … h_9.
EXPECTED_OUTPUTS = [0, 0, 0, 0, 1, 1, 0, 0, 1]
EXPECTED_STATES = [(0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1), (1, 1, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1)]


def test_default_input_gives_the_issues_states_and_outputs_exactly():
    run = run_handbuilt()
    assert run.config.bits == DEFAULT_BITS == (0, 1, 0, 1, 1, 1, 0, 1, 1)
    assert run.outputs == EXPECTED_OUTPUTS
    assert run.states == EXPECTED_STATES
    assert run.wrong_steps == []


def test_products_are_shown_apart_and_sum_to_the_cells_preactivation():
    for step in run_handbuilt().steps:
        assert step.xh == (step.x_t, 0, 0)  # W_xh x_t = (x_t, 0, 0)
        assert step.hh == (0, step.h_prev[0], step.h_prev[2])  # W_hh moves unit 1 to unit 2, keeps the constant
        assert tuple(a + b for a, b in zip(step.xh, step.hh)) == step.a_t


@pytest.mark.parametrize("nonlinearity", ["relu", "tanh"])
def test_states_equal_torchs_rnn_cell_with_the_same_weights(nonlinearity):
    ref = nn.RNNCell(1, 3, bias=False, nonlinearity=nonlinearity).double()
    with torch.no_grad():
        ref.weight_ih.copy_(torch.tensor(HAND_SET.w_xh).reshape(3, 1))
        ref.weight_hh.copy_(torch.tensor(HAND_SET.w_hh))
    run = run_handbuilt(HandConfig(nonlinearity=nonlinearity))
    h = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    for bit, step in zip(DEFAULT_BITS, run.steps):
        h = ref(torch.tensor([[float(bit)]], dtype=torch.float64), h)
        assert h[0].tolist() == pytest.approx(step.h_t, abs=1e-12)


def test_tanh_breaks_the_clean_integers_as_hand_computed():
    steps = run_handbuilt(HandConfig(bits=(1, 1), nonlinearity="tanh")).steps
    t1 = math.tanh(1.0)
    assert steps[0].h_t == pytest.approx((t1, 0.0, t1))  # a_1 = (1, 0, 1)
    assert steps[0].y_t == pytest.approx(0.0)  # ReLU(t1 + 0 − t1)
    assert steps[1].h_t == pytest.approx((t1, math.tanh(t1), math.tanh(t1)))  # a_2 = (1, t1, t1)
    assert steps[1].y_t == pytest.approx(t1)  # ReLU(t1 + tanh(t1) − tanh(t1))


def test_truth_table_of_the_hand_set_weights_is_exact():
    rows = truth_table(HAND_SET)
    assert [(r.x_prev, r.x_t, r.expected) for r in rows] == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 1)]
    assert all(r.correct and r.y_min == r.y_max == r.expected for r in rows)
    assert sum(r.total for r in rows) == 10 * 2**10  # every position of every 10-bit sequence


def test_truth_table_names_the_failing_inputs_of_edited_weights():
    # With −0.5 instead of −1 in W_hy, a single 1 gives y = 0.5, read as 1: x_t OR x_{t−1} territory.
    rows = truth_table(HandWeights(w_hy=(1.0, 1.0, -0.5)))
    failing = {(r.x_prev, r.x_t) for r in rows if not r.correct}
    assert failing == {(0, 1), (1, 0)}
    by_pair = {(r.x_prev, r.x_t): r for r in rows}
    assert by_pair[(0, 1)].wrong == by_pair[(0, 1)].total
    assert by_pair[(1, 1)].y_min == by_pair[(1, 1)].y_max == 1.5


@pytest.mark.parametrize(("text", "bits"), [("0,1,1", (0, 1, 1)), ("0 1  1", (0, 1, 1)), ("011", (0, 1, 1)),
                                            (" 1;0 ", (1, 0))])
def test_parse_bits_accepts_the_usual_spellings(text, bits):
    assert parse_bits(text) == bits


@pytest.mark.parametrize(("text", "message"), [("", "at least one"), ("01a1", "only hold the bits"),
                                               ("2,1", "only hold the bits"), ("1" * 25, "at most 24")])
def test_parse_bits_explains_bad_input(text, message):
    with pytest.raises(ValueError, match=message):
        parse_bits(text)


def test_quiz_scores_each_state_value():
    assert guess_is_right((1, 0, 1), (1.0, 0.0, 1.0)) == (True, True, True)
    assert guess_is_right((1, 1, 1), (1.0, 0.0, 1.0)) == (True, False, True)


# --- The page --------------------------------------------------------------------------------------------

STEP = "handbuilt_step"


def _metrics(at):
    """The step's numbers under the stepper (kit.instant draws them in the browser from what the server sent)."""
    return instant_shown(at, STEP)[0]


def _text(at):
    return page_text(at) + "\n" + instant_shown(at, STEP)[1]


def test_page_steps_to_y_equal_one_after_five_steps():
    at = open_page(PAGE)
    assert not at.exception
    assert _metrics(at)["$h_0$"] == "(0, 0, 1)"
    for t in range(1, 6):
        move_instant(at, STEP, t)
    assert not at.exception
    shown = _metrics(at)
    assert shown["$x_{5}$"] == "1"
    assert shown["$h_{4}$"] == "(1, 0, 1)"
    assert shown["$h_{5}$"] == "(1, 1, 1)"
    assert shown["$y_{5}$"] == "1"
    text = _text(at)
    assert r"\operatorname{ReLU}(1) = 1" in text  # the readout, written out
    assert "t = 5** of 9" in text
    assert at.query_params["t"] == "5" and at.query_params["bits"] == "010111011"  # the shareable link

    move_instant(at, STEP, 4)
    assert _metrics(at)["$y_{4}$"] == "0"
    move_instant(at, STEP, 9)
    assert _metrics(at)["$h_{9}$"] == "(1, 1, 1)"
    move_instant(at, STEP, 0)
    assert _metrics(at) == {"$t$": "0", "$h_0$": "(0, 0, 1)"}  # t = 0: only the initial state, nothing read yet
    assert "t = 0** of 9" in _text(at) and at.query_params["t"] == "0"


def test_every_step_is_sent_with_the_page_for_the_browser_to_pick():
    """The stepper answers in the browser: the page holds every step's numbers, each as worked out by hand for the
    bits 0110 (unit 1 holds x_t, unit 2 x_{t−1}, unit 3 the constant 1; y_t = x_t AND x_{t−1})."""
    at = open_page(PAGE, query={"bits": "0110", "t": "1"})
    data = instant_control(at, STEP)
    assert data["labels"] == ["0", "1", "2", "3", "4"] and data["param"] == "t" and data["index"] == 1
    by_hand = {1: ("(0, 0, 1)", "0"), 2: ("(1, 0, 1)", "0"), 3: ("(1, 1, 1)", "1"), 4: ("(0, 1, 1)", "0")}
    for t, (h_t, y_t) in by_hand.items():
        shown = {label: value for block in data["views"][t] for label, value in block.get("metrics", [])}
        assert (shown[f"$h_{{{t}}}$"], shown[f"$y_{{{t}}}$"]) == (h_t, y_t), t


def test_page_restores_bits_and_step_from_a_link_and_rejects_bad_bits():
    at = open_page(PAGE, query={"bits": "0110", "t": "3"})
    assert not at.exception
    shown = _metrics(at)
    assert shown["$h_{3}$"] == "(1, 1, 1)"  # x_2 = x_3 = 1
    assert shown["$y_{3}$"] == "1"
    at.text_input(key="handbuilt_bits").set_value("0,1,x").run()
    assert not at.exception
    assert any("only hold the bits" in e.value for e in at.error)


def test_page_reports_where_edited_weights_fail_and_tanh_decimals():
    at = open_page(PAGE)
    assert len(at.number_input) >= 15  # W_xh, W_hh and W_hy, one input per weight
    at.number_input(key="handbuilt_w_hy_2").set_value(-0.5).run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "no longer compute AND" in warnings and "x_{t-1} = 0, x_t = 1" in warnings
    at.button(key="handbuilt_reset").click().run()
    assert "exactly, with clean 0s and 1s" in " ".join(s.value for s in at.success)

    at.segmented_control(key="handbuilt_phi").set_value("tanh").run()
    move_instant(at, STEP, 2)
    # h_1 = tanh((0, 0, 1)) = (0, 0, 0.762), so a_2 = (1, 0, 0.762) and h_2 = (tanh 1, 0, tanh(tanh 1)).
    assert _metrics(at)["$h_{2}$"] == "(0.76, 0, 0.64)"
    assert r"\begin{bmatrix}0.762 \\ 0 \\ 0.642\end{bmatrix}" in _text(at)  # three decimals in the equations


def test_quiz_hides_h_t_until_the_guess_is_scored():
    at = open_page(PAGE)
    at.toggle(key="handbuilt_quiz").set_value(True).run()
    assert instant_control(at, STEP)["browser"] is False  # each step waits for the server, which hides h_t
    move_instant(at, STEP, 1)
    move_instant(at, STEP, 2)
    assert _metrics(at)["$h_{2}$"] == "?"
    at.number_input(key="handbuilt_guess_0").set_value(1.0).run()
    at.number_input(key="handbuilt_guess_2").set_value(1.0).run()
    at.button(key="handbuilt_check_guess").click().run()
    assert not at.exception
    assert _metrics(at)["$h_{2}$"] == "(1, 0, 1)"
    assert "3 of 3 right" in _text(at)
