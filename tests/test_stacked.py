"""Stacked RNNs: the grid equals torch's own stacked modules, parameter counts equal torch's, the page steps through."""

import numpy as np
import pytest
import torch
from torch import nn

from rnnviz.core.recurrent import TORCH_CLASSES
from rnnviz.lessons.stacked import (
    StackConfig,
    build_stack,
    computation_order,
    depth_table,
    embedding,
    layer_parameters,
    parameter_count,
    parse_words,
    run_stack,
)
from tests.apptest_helpers import instant_shown, move_instant, open_page
from tests.figure_helpers import figure, figure_texts


def _inputs(config: StackConfig) -> torch.Tensor:
    table = embedding(config)
    return torch.stack([table[w] for w in config.words]).unsqueeze(0)  # (1, T, E)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_grid_equals_torchs_stacked_module_with_the_same_weights(kind):
    config = StackConfig(kind=kind, sizes=(3, 3, 3))
    ref = TORCH_CLASSES[kind](3, 3, num_layers=3, batch_first=True)
    ref.load_state_dict(build_stack(config).state_dict())
    out, state = ref(_inputs(config))
    run = run_stack(config)
    np.testing.assert_allclose(run.h[-1], out[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    h_n = state[0] if kind == "lstm" else state
    for layer in range(3):
        np.testing.assert_allclose(run.h[layer][-1], h_n[layer, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
    if kind == "lstm":
        for layer in range(3):
            np.testing.assert_allclose(run.c[layer][-1], state[1][layer, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
    else:
        assert run.c is None


def test_layers_of_different_widths_equal_chained_torch_modules():
    config = StackConfig(kind="lstm", sizes=(2, 5, 4), words=("the", "cat", "sat", "on"))
    modules = build_stack(config)
    assert isinstance(modules, nn.ModuleList)
    x = _inputs(config)
    run = run_stack(config)
    for layer, (module, width) in enumerate(zip(modules, config.sizes)):
        ref = nn.LSTM(x.shape[-1], width, batch_first=True)
        ref.load_state_dict(module.state_dict())
        x, _ = ref(x)
        assert run.h[layer].shape == (4, width)
        np.testing.assert_allclose(run.h[layer], x[0].detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_parameter_counts_equal_torchs(kind):
    for row in depth_table(kind, 3, 3, max_layers=4):
        torch_model = TORCH_CLASSES[kind](3, 3, num_layers=row.layers)
        assert row.formula == row.model == sum(p.numel() for p in torch_model.parameters())
    # Linear in depth: every extra layer adds G·d·(2d + 2).
    gates = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    counts = [row.model for row in depth_table(kind, 3, 3, max_layers=4)]
    assert np.all(np.diff(counts) == gates * 3 * (2 * 3 + 2))
    sizes = (2, 5, 4)
    singles = [TORCH_CLASSES[kind](i, o) for i, o in zip((3, *sizes), sizes)]
    expected = sum(p.numel() for m in singles for p in m.parameters())
    assert parameter_count(kind, 3, sizes) == expected == run_stack(StackConfig(kind=kind, sizes=sizes)).parameters


def test_lstm_weight_shapes_follow_the_layer_widths():
    rows = layer_parameters("lstm", 3, (2, 5))
    assert [(r.w_x, r.w_h, r.biases) for r in rows] == [((8, 3), (8, 2), 16), ((20, 2), (20, 5), 40)]
    modules = build_stack(StackConfig(sizes=(2, 5)))
    assert tuple(modules[1].weight_ih_l0.shape) == (20, 2) and tuple(modules[1].weight_hh_l0.shape) == (20, 5)


def test_the_lectures_example_by_hand():
    # 2 layers of an LSTM with d = 3 on 3-wide inputs: 4·3·(3 + 3 + 2) = 96 per layer.
    assert run_stack(StackConfig()).parameters == 192


@pytest.mark.parametrize("order", ["layer by layer", "step by step"])
def test_computation_order_visits_each_cell_after_both_of_its_inputs(order):
    cells = computation_order(3, 4, order)
    assert sorted(cells) == [(layer, t) for layer in range(3) for t in range(4)]
    seen = set()
    for layer, t in cells:
        assert t == 0 or (layer, t - 1) in seen
        assert layer == 0 or (layer - 1, t) in seen
        seen.add((layer, t))


def test_embedding_is_fixed_by_the_seed():
    a, b, c = (embedding(StackConfig(seed=s)) for s in (0, 0, 1))
    assert all(torch.equal(a[w], b[w]) for w in a)
    assert not torch.equal(a["cat"], c["cat"])


def test_parse_words():
    assert parse_words("  the cat   sat ") == ("the", "cat", "sat")
    with pytest.raises(ValueError, match="at least one word"):
        parse_words("   ")
    with pytest.raises(ValueError, match="at most 6"):
        parse_words("a b c d e f g")


# --- The page --------------------------------------------------------------------------------------------

PAGE = "app_pages/stacked_rnns.py"


def _vec(values) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")"


def _cell_text(at) -> str:
    """The stepped cell's sentence under the stepper (kit.instant draws it in the browser from what the server
    sent)."""
    return instant_shown(at, "stacked_step")[1]


def test_page_steps_through_the_grid_in_computation_order():
    at = open_page(PAGE)
    assert not at.exception
    run = run_stack(StackConfig())
    text = _cell_text(at)
    assert "Cell (layer 1, t = 1)" in text and f"h_{{1}}^{{(1)}} = {_vec(run.h[0][0])}" in text
    assert f"c_{{1}}^{{(1)}} = {_vec(run.c[0][0])}" in text
    move_instant(at, "stacked_step", 4)
    text = _cell_text(at)  # layer by layer: cell 4 is layer 2, t = 1, reading layer 1's h_1 from below
    assert "Cell (layer 2, t = 1)" in text
    assert f"h_{{1}}^{{(1)}} = {_vec(run.h[0][0])}$ from below" in text
    assert f"h_{{1}}^{{(2)}} = {_vec(run.h[1][0])}" in text
    # The grid shows every computed cell's numbers, and none of the cells still to come.
    labels = " ".join(figure_texts(figure(at)))
    assert f"{run.h[0][2][0]:+.2f}".replace("-", "−") in labels
    assert labels.count("<b>h</b>") == 4
    at.radio(key="stacked_order").set_value("step by step").run()
    assert "Cell (layer 2, t = 2)" in _cell_text(at)  # the 4th cell when every layer runs at t = 1 first


def test_page_counts_parameters_of_the_real_model_for_any_widths():
    at = open_page(PAGE)
    at.segmented_control(key="stacked_kind").set_value("gru").run()
    at.slider(key="stacked_layers").set_value(3).run()
    at.number_input(key="stacked_d2").set_value(5).run()
    assert not at.exception
    config = StackConfig(kind="gru", sizes=(3, 5, 3))
    metric = {m.label: m.value for m in at.metric}
    assert metric["This model: sum(p.numel())"] == f"{run_stack(config).parameters:,}"
    table = at.dataframe[0].value
    assert list(table["W_x (weight_ih)"]) == ["9 × 3", "15 × 3", "9 × 5"]
    assert table["parameters"].sum() == run_stack(config).parameters
    depth = at.dataframe[1].value  # the depth table: a real nn.GRU of width d_1 = 3 for each L
    torch_counts = [sum(p.numel() for p in nn.GRU(3, 3, num_layers=n).parameters()) for n in range(1, 9)]
    assert list(depth["sum(p.numel())"]) == torch_counts
    at.text_input(key="stacked_words").set_value("").run()
    assert not at.exception
    assert any("at least one word" in e.value for e in at.error)
