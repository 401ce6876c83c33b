"""Issue 27, what a class sees must be right: the labels, defaults and axes that told a student something wrong
(the hand-built page's equation, the LSTM cell path's default, the Truncated BPTT axis, raw subscripts, the
Transformer's "no hidden state")."""

import json
import re

import pytest

from rnnviz.lessons import gradients
from rnnviz.ui.gradient_decay.sections import COMMON_FORGET_BIAS, FORGET_BIAS, INPUT_SCALE
from tests.apptest_helpers import open_page, page_text, shown_numbers

HAND_BUILT = "app_pages/hand_built_rnn.py"
GRADIENTS = "app_pages/gradient_decay.py"
LIVE = "app_pages/live_training.py"
MATH = re.compile(r"\$[^$]*\$")


def raw_subscripts(text: str) -> list[str]:
    """Subscripts such as h_{t−1} written outside $…$, which the page prints as they are typed."""
    return re.findall(r"\w_\{[^}]*\}", MATH.sub("", text))


def prose(at) -> list[str]:
    """The text a student reads as prose (markdown, captions, alerts), not equations or code."""
    return [str(el.value) for kind in ("markdown", "caption", "info", "success", "warning", "error")
            for el in getattr(at, kind)]


def test_the_hand_built_equation_names_the_nonlinearity_chosen():
    at = open_page(HAND_BUILT)
    assert at.latex[0].value.strip("$\n").startswith(r"h_t = \operatorname{ReLU}(W_{xh}")
    at.segmented_control(key="handbuilt_phi").set_value("tanh").run()
    assert not at.exception
    equation = at.latex[0].value.strip("$\n")
    assert equation.startswith(r"h_t = \tanh(W_{xh}") and r"y_t = \operatorname{ReLU}(W_{hy}" in equation


def test_the_lstm_cell_path_by_default_keeps_its_gradient_and_says_what_b_f_1_does():
    at = open_page(GRADIENTS, query={"section": "lstm"})
    assert not at.exception
    bias = at.slider(key=FORGET_BIAS).value
    steps = 150
    config = gradients.CellPathConfig(64, steps, float(bias), 1.0, 8, 0)
    chosen, common = gradients.cell_path(config), gradients.cell_path(
        gradients.CellPathConfig(64, steps, COMMON_FORGET_BIAS, 1.0, 8, 0))
    # The lesson: along the cell path the gradient survives 150 steps (the tanh RNN's falls below 1e-20).
    assert chosen.cell_path[-1] > 0.3
    assert common.cell_path[-1] < 1e-10  # and the usual b_f = 1 does not keep it: the page says so
    shown = next(value for label, value in shown_numbers(at).items() if label.startswith("‖∂c_T/∂c_k‖"))
    assert float(shown) == pytest.approx(chosen.cell_path[-1], rel=2e-3)
    from rnnviz.figures.gradients import sci

    caption = next(c.value for c in at.caption if "At the usual $b_f = 1$" in c.value)
    assert f"$f_t$ averages {common.mean_forget:.2f}" in caption and sci(common.cell_path[-1]) in caption


def test_the_truncated_bptt_accuracy_axis_ends_at_one():
    from rnnviz.figures.tbptt import sweep_figure
    from rnnviz.lessons.tbptt import SweepConfig, sweep

    config = SweepConfig(delay=2, length=16, chunks=(1, 3, 16), steps=60)
    runs = sweep(config)
    fig = json.loads(sweep_figure(runs, config.delay, config.task.chance).to_json())
    low, high = fig["layout"]["yaxis"]["range"]
    assert low == 0 and 1 <= high <= 1.05
    assert max(fig["layout"]["yaxis"]["tickvals"]) == 1
    raised = max(a["yshift"] for a in fig["layout"]["annotations"] if re.fullmatch(r"\d\.\d\d", a["text"]))
    assert fig["layout"]["margin"]["t"] > raised + 50  # the labels of points at 1 stand in the top margin


@pytest.mark.parametrize("section", ["sum", "lstm"])
def test_gradient_decay_writes_its_subscripts_as_math(section):
    at = open_page(GRADIENTS, query={"section": section})
    if section == "sum":  # its note on h_{t-1} appears when there is no input
        at.session_state[INPUT_SCALE] = 0.0
        at.run()
    assert not at.exception
    texts = prose(at)
    assert any("c_{t-1}" in t or "h_{t-1}" in t for t in texts)
    assert [s for t in texts for s in raw_subscripts(t)] == []


def test_the_live_page_says_a_transformer_has_no_recurrent_state_and_writes_the_mingru_note_as_math():
    at = open_page(LIVE)
    at.radio(key="live_training_kind").set_value("transformer").run()
    assert not at.exception
    assert "a Transformer has no recurrent state" in page_text(at)
    assert "has no hidden state" not in page_text(at)
    at.radio(key="live_training_kind").set_value("mingru").run()
    note = next(t for t in prose(at) if t.startswith("minGRU:"))
    assert "never $h_{t-1}$" in note and raw_subscripts(note) == []


def test_the_memory_pages_forget_bias_help_writes_the_cell_path_as_math():
    at = open_page("app_pages/memory_experiments.py")
    assert not at.exception
    help_text = at.selectbox(key="memory_delay_forget").help
    assert r"$c_t = f_t \odot c_{t-1}" in help_text and raw_subscripts(help_text) == []
