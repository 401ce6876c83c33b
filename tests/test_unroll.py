"""Unrolling & BPTT: per-step parts sum to autograd's gradient, Jacobians are autograd's, the page shows both."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.autograd.functional import jacobian

from rnnviz.core.cells import CellWeights, rnn_cell
from rnnviz.lessons.unroll import MAX_STEPS, UnrollConfig, build_network, forward, unroll
from rnnviz.ui.kit.instant import figure_key
from tests.apptest_helpers import instant_control, instant_shown, move_instant, open_page, page_text
from tests.figure_helpers import figure, figure_texts, numbers

PAGE = "app_pages/unrolling_bptt.py"
STEPS = "unroll_steps"
CHECK = figure_key(STEPS, "check")  # the gradient check beside the bars, which follows T

CONFIGS = [
    UnrollConfig(),
    UnrollConfig(attach="many-to-one", steps=7, hidden=4),
    UnrollConfig(attach="many-to-one", pool="mean", hidden=5, gain=2.0),
    UnrollConfig(attach="one-to-many", feed="zeros", steps=5),
    UnrollConfig(attach="one-to-many", feed="previous output", steps=9, hidden=4, gain=1.5, seed=3),
]
IDS = ["many-to-many", "many-to-one-last", "many-to-one-mean", "one-to-many-zeros", "one-to-many-feedback"]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_per_step_parts_sum_to_autograds_gradient(config):
    result = unroll(config)
    assert result.max_abs_difference < 1e-12
    np.testing.assert_allclose(result.bptt_sum, result.autograd_grad, rtol=1e-10, atol=1e-14)
    assert np.abs(result.autograd_grad).max() > 1e-3  # a real gradient, not two zeros agreeing


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_each_part_is_what_that_steps_copy_of_w_receives(config):
    """Give every step its own copy of W_hh: autograd's gradient on copy t is the hand-written part t."""
    net = build_network(config)
    copies = [net.w_hh.clone().requires_grad_(True) for _ in range(config.steps)]
    forward(config, net, copies).loss.backward()
    parts = unroll(config).step_grads
    for t, copy in enumerate(copies):
        np.testing.assert_allclose(parts[t], copy.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert np.abs(parts[0]).max() == 0  # δ_1 h_0ᵀ with h_0 = 0


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_edge_jacobians_are_autograds_and_chain_to_dh_t_dh_0(config):
    net = build_network(config)
    result = unroll(config)
    h0 = torch.zeros(1, config.hidden, dtype=torch.float64)
    hs = forward(config, net, net.w_hh).h
    for t in range(1, config.steps + 1):
        jac = jacobian(lambda h_prev, t=t: _step(config, net, t, h_prev), hs[t - 1].detach())[0, :, 0, :]  # (H, H)
        np.testing.assert_allclose(result.jacobians[t - 1], jac.numpy(), rtol=1e-10, atol=1e-14)
    chain = np.eye(config.hidden)
    for jac_t in result.jacobians:
        chain = jac_t @ chain
    whole = jacobian(lambda h: forward(config, net, net.w_hh, h0=h).h[-1], h0)[0, :, 0, :]
    np.testing.assert_allclose(chain, whole.numpy(), rtol=1e-9, atol=1e-14)
    expected_norms = np.linalg.norm(result.jacobians, ord=2, axis=(1, 2))
    np.testing.assert_allclose(result.jacobian_norms, expected_norms, rtol=1e-10)


def _step(config, net, t, h_prev):
    """h_t as a function of h_{t−1} alone, with the step's input built as the forward pass does (feedback too)."""
    if config.attach != "one-to-many" or t == 1:
        x_t = net.x[t - 1 : t]
    elif config.feeds_back:
        x_t = h_prev @ net.w_hy.t() + net.b_y  # x_t = y_{t−1} depends on h_{t−1} too
    else:
        x_t = torch.zeros(1, config.inputs, dtype=torch.float64)
    return rnn_cell(x_t, h_prev, CellWeights(net.w_xh, net.w_hh, net.b_xh, net.b_hh), "tanh").h_t


def test_jacobian_is_diag_tanh_prime_times_w_hh_without_feedback():
    config = UnrollConfig(hidden=4)
    net, result = build_network(config), unroll(config)
    for t in range(1, config.steps + 1):
        expected = np.diag(1 - result.h[t] ** 2) @ net.w_hh.numpy()
        np.testing.assert_allclose(result.jacobians[t - 1], expected, rtol=1e-12)


def test_forward_equals_torchs_nn_rnn_with_the_same_weights():
    config = UnrollConfig(steps=8, hidden=5)
    net = build_network(config)
    ref = nn.RNN(config.inputs, config.hidden, batch_first=True).double()
    with torch.no_grad():
        for name, value in (("weight_ih_l0", net.w_xh), ("weight_hh_l0", net.w_hh), ("bias_ih_l0", net.b_xh),
                            ("bias_hh_l0", net.b_hh)):
            getattr(ref, name).copy_(value)
    out, _ = ref(net.x.unsqueeze(0))
    np.testing.assert_allclose(unroll(config).h[1:], out[0].detach().numpy(), rtol=1e-12, atol=1e-14)


def test_where_the_loss_attaches_changes_the_gradient():
    many = unroll(UnrollConfig(attach="many-to-many"))
    last = unroll(UnrollConfig(attach="many-to-one"))
    # Only h_T feeds the loss: the gradient reaching h_T is W_hyᵀ(y_T − ŷ_T) alone, and earlier steps get less.
    assert last.dl_dh_norms[-1] == pytest.approx(many.dl_dh_norms[-1])
    assert np.all(last.dl_dh_norms[:-1] < many.dl_dh_norms[:-1])


def test_bad_configs_are_clear_errors():
    with pytest.raises(ValueError, match="T must be"):
        UnrollConfig(steps=1)
    with pytest.raises(ValueError, match="gain"):
        UnrollConfig(gain=0.0)


# --- The page --------------------------------------------------------------------------------------------

def test_page_shows_the_measured_norms_and_the_gradient_check():
    at = open_page(PAGE)
    assert not at.exception
    result = unroll(UnrollConfig())
    labels = figure_texts(figure(at))
    for norm in result.jacobian_norms:
        assert f"{norm:.2f}" in labels  # every recurrent edge carries its ‖∂h_t/∂h_{t−1}‖₂
    bars = figure(at, 1)["data"][0]
    np.testing.assert_allclose(numbers(bars["y"]), result.step_grad_norms, rtol=1e-12)
    metrics, text = instant_shown(at, CHECK)
    assert float(metrics["max |Σ parts − autograd|"]) < 1e-12
    assert metrics["loss L"] == f"{result.loss:.4f}"
    assert r"\text{(autograd)}" in text


def test_every_t_is_sent_with_its_figures_and_check_and_the_address_follows_a_move():
    """T answers in the browser: the stop of each T holds that T's unrolled network's numbers (each T builds its
    own network, as the engine does for UnrollConfig(steps=T)), and a move lands in the session and the address."""
    at = open_page(PAGE)
    assert instant_control(at, STEPS)["labels"] == [str(t) for t in range(2, MAX_STEPS + 1)]
    check = instant_control(at, CHECK)
    graph, bars = figure(at, 0), figure(at, 1)
    for steps in (2, 9, MAX_STEPS):
        result = unroll(UnrollConfig(steps=steps))
        frame = {f["name"]: f for f in bars["frames"]}[str(steps - 2)]
        np.testing.assert_allclose(numbers(frame["data"][0]["y"]), result.step_grad_norms, rtol=1e-12)
        labels = figure_texts({f["name"]: f for f in graph["frames"]}[str(steps - 2)])
        assert all(f"{norm:.2f}" in labels for norm in result.jacobian_norms)
        shown = {label: value for block in check["views"][steps - 2] for label, value in block.get("metrics", [])}
        assert shown["loss L"] == f"{result.loss:.4f}"
    move_instant(at, STEPS, 9)
    assert not at.exception
    assert at.query_params["T"] == "9"
    assert instant_shown(at, CHECK)[0]["loss L"] == f"{unroll(UnrollConfig(steps=9)).loss:.4f}"


def test_page_follows_the_loss_attachment_and_the_sliders():
    at = open_page(PAGE)
    at.segmented_control(key="unroll_attach").set_value("many-to-one").run()
    at.radio(key="unroll_pool").set_value("mean").run()
    move_instant(at, STEPS, 9)
    assert not at.exception
    result = unroll(UnrollConfig(steps=9, attach="many-to-one", pool="mean"))
    bars = {f["name"]: f for f in figure(at, 1)["frames"]}["7"]  # T = 9, the browser's frame
    np.testing.assert_allclose(numbers(bars["data"][0]["y"]), result.step_grad_norms, rtol=1e-12)
    at.segmented_control(key="unroll_attach").set_value("one-to-many").run()
    at.radio(key="unroll_feed").set_value("previous output").run()
    assert not at.exception
    assert "W_{xh} W_{hy}" in page_text(at)  # the second path through the fed-back output is explained
