"""Gradient decay: the lecture's figures, Jacobian products against autograd, clipping, the LSTM cell path, the page."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from rnnviz.core.cells import lstm_cell, rnn_cell
from rnnviz.figures.gradients import sci
from rnnviz.lessons import gradients
from tests.apptest_helpers import instant_control, instant_shown, move_instant, open_page, shown_numbers

SMALL = gradients.TanhRNNConfig(hidden=5, sigma=1.05, steps=7, input_size=3, seed=3)


# --- Repeated multiplication ---------------------------------------------------------------------------


@pytest.mark.parametrize(("sigma", "expected", "low", "high"), [(1.05, 1.05**150, 1.4e3, 1.6e3),
                                                                (0.95, 0.95**150, 4.0e-4, 5.0e-4)])
def test_lecture_figures_after_150_steps(sigma, expected, low, high):
    """σ₁ = 1.05 gives about ×1000 after 150 steps (1.5·10³), σ₁ = 0.95 about ÷1000 (4.6·10⁻⁴)."""
    curve = gradients.power_curve(gradients.PowerConfig(hidden=32, sigma=sigma, steps=150))
    measured = curve.measured[150]
    assert low < measured < high
    assert measured == pytest.approx(expected, rel=1e-9)
    assert curve.theory[150] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("matrix", "vector"), [("symmetric", "top"), ("gaussian", "random"), ("gaussian", "top")])
def test_power_curves_at_every_stop_are_power_curve_one_sigma_at_a_time(matrix, vector):
    stops = [0.5, 0.77, 1.0, 1.05, 1.5]
    config = gradients.PowerConfig(hidden=12, steps=30, matrix=matrix, vector=vector, seed=4)
    for sigma, curve in zip(stops, gradients.power_curves(config, stops), strict=True):
        alone = gradients.power_curve(replace(config, sigma=sigma))
        assert curve.sigma == sigma
        np.testing.assert_allclose(curve.measured, alone.measured, rtol=1e-10)
        np.testing.assert_array_equal(curve.theory, alone.theory)
        np.testing.assert_array_equal(curve.k, alone.k)
    with pytest.raises(ValueError, match="σ₁"):
        gradients.power_curves(config, [1.0, 0.0])


def test_w_hh_is_rescaled_to_sigma_and_sigma_k_bounds_every_vector():
    for matrix in gradients.MATRIX_KINDS:
        w = gradients.scaled_w_hh(16, 1.2, matrix, seed=1)
        assert torch.linalg.svdvals(w)[0].item() == pytest.approx(1.2, rel=1e-12)
        for vector in gradients.VECTOR_KINDS:
            curve = gradients.power_curve(gradients.PowerConfig(16, 1.2, 60, matrix, vector, seed=1))
            assert np.all(curve.measured <= curve.theory * (1 + 1e-9))
    # A general (non-normal) W_hh grows more slowly than its σ₁: the bound is not reached.
    general = gradients.power_curve(gradients.PowerConfig(16, 1.2, 60, "gaussian", "top", seed=1))
    assert general.measured[-1] < 0.01 * general.theory[-1]


def test_power_curve_is_repeated_multiplication():
    config = gradients.PowerConfig(hidden=6, sigma=0.9, steps=4, vector="random", seed=2)
    w = gradients.scaled_w_hh(6, 0.9, "symmetric", 2)
    v = gradients.start_vector(w, "random", 2)
    expected = [torch.linalg.vector_norm(torch.linalg.matrix_power(w, k) @ v).item() for k in range(5)]
    np.testing.assert_allclose(gradients.power_curve(config).measured, expected, rtol=1e-12)


def test_bad_settings_are_plain_errors():
    with pytest.raises(ValueError, match="σ₁"):
        gradients.PowerConfig(sigma=0)
    with pytest.raises(ValueError, match="hidden size"):
        gradients.TanhRNNConfig(hidden=1)
    with pytest.raises(ValueError, match="delay"):
        gradients.ClipConfig(delay=40, length=30)


# --- Through the nonlinearity -----------------------------------------------------------------------------


def _h_T_from_h_k(rnn, x, k):
    """h_k ↦ h_T by stepping the engine's rnn_cell through steps k+1…T (1-based) of x."""
    weights = rnn.layer_weights(0)

    def run(h_k):
        h = h_k.unsqueeze(0)
        for t in range(k, x.shape[1]):
            h = rnn_cell(x[:, t], h, weights).h_t
        return h[0]

    return run


def test_jacobian_product_equals_autograd():
    rnn = gradients.tanh_rnn(SMALL)
    x = gradients.random_inputs(SMALL.steps, SMALL.input_size, SMALL.input_scale, SMALL.seed)
    with torch.no_grad():
        trace = rnn.trace(x)
    products = gradients.backward_products(gradients.rnn_step_jacobians(rnn, trace))  # (T+1, H, H)
    hs = torch.cat([trace.h0[0], trace["h"][0, :, 0]])  # (T+1, H): h_0 … h_T
    for k in (0, 2, SMALL.steps - 1, SMALL.steps):
        expected = torch.autograd.functional.jacobian(_h_T_from_h_k(rnn, x, k), hs[k].clone())
        torch.testing.assert_close(products[SMALL.steps - k], expected, rtol=1e-10, atol=1e-12)


def test_product_norms_are_the_spectral_norms_of_the_products():
    rnn = gradients.tanh_rnn(SMALL)
    with torch.no_grad():
        trace = rnn.trace(gradients.random_inputs(SMALL.steps, SMALL.input_size, 1.0, SMALL.seed))
    jacobians = gradients.rnn_step_jacobians(rnn, trace)
    exact = torch.linalg.matrix_norm(gradients.backward_products(jacobians), ord=2).numpy()
    np.testing.assert_allclose(gradients.product_norms(jacobians), exact, rtol=1e-9)
    lags = np.array([0, 3, 7])
    np.testing.assert_allclose(gradients.product_norms(jacobians, lags), exact[lags], rtol=1e-9)


def test_long_runs_and_large_hidden_sizes_measure_a_sample_of_lags():
    assert gradients.measured_lags(150, 64).tolist() == list(range(151))
    assert gradients.measured_lags(300, 64).tolist() == list(range(0, 301, 2))
    lags = gradients.measured_lags(300, 256)
    assert lags[0] == 0 and lags[-1] == 300 and len(lags) <= gradients.SAMPLED_LAGS


def test_tanh_makes_sigma_above_one_decay():
    curves = gradients.decay_curves(gradients.TanhRNNConfig(hidden=16, sigma=1.05, steps=150))
    assert curves.linear[-1] == pytest.approx(1.05**150, rel=1e-6)  # W_hh alone: symmetric, so exactly σ₁ᵏ
    assert curves.with_tanh[-1] < 1e-3  # the true Jacobian product vanishes
    assert 0 < curves.mean_tanh_prime < 1
    assert curves.tanh_prime.shape == (150 * 16,)


def test_per_step_contributions_sum_to_autograds_gradient():
    rnn = gradients.tanh_rnn(SMALL)
    x = gradients.random_inputs(SMALL.steps, SMALL.input_size, 1.0, SMALL.seed)
    target = gradients.loss_target(SMALL.hidden, SMALL.seed)
    per_step = gradients.per_step_gradients(rnn, x, target)  # (T, H, H)
    h_T = rnn.trace(x)["h"][0, -1]  # (1, H), differentiable
    (0.5 * ((h_T - target) ** 2).sum()).backward()
    torch.testing.assert_close(per_step.sum(0), rnn.weight_hh_l0.grad, rtol=1e-10, atol=1e-12)
    assert per_step[0].abs().max() == 0  # h_0 = 0, so the first step contributes nothing


def test_no_input_means_no_gradient_to_share():
    silent = gradients.contributions(gradients.TanhRNNConfig(hidden=8, steps=20, input_scale=0.0))
    assert silent.is_zero and silent.total_norm == 0.0


def test_the_last_steps_dominate_the_sum():
    shares = gradients.contributions(gradients.TanhRNNConfig(hidden=16, steps=100))
    assert shares.share_of_last(10) > 0.9
    assert 0 < shares.share_of_first(50) < 1e-6
    assert shares.share_of_first(60) + shares.share_of_last(40) == pytest.approx(1.0)
    assert shares.norms.shape == (100,)


# --- Clipping ---------------------------------------------------------------------------------------------


def _run_and_applied_gradients(config: gradients.ClipConfig, threshold: float | None):
    """The project's clipping run, and the gradient g each of its SGD steps applied, flattened.

    Recorded by torch's global optimizer step pre-hook, so the run itself is untouched."""
    applied = []

    def record(optimizer, args, kwargs):
        params = [p for group in optimizer.param_groups for p in group["params"]]
        applied.append(torch.cat([p.grad.reshape(-1) for p in params]).clone())

    handle = register_optimizer_step_pre_hook(record)
    try:
        run = gradients.train_for_clipping(config, threshold)
    finally:
        handle.remove()
    return run, applied


def test_the_clipping_run_rescales_to_theta_and_keeps_the_direction():
    """Eq. 8.14 in train_for_clipping: g ← θ g/‖g‖ when ‖g‖ > θ, and g unchanged otherwise."""
    config, theta = gradients.ClipConfig(lr=1.0, steps=40), 1.0
    unclipped, raw = _run_and_applied_gradients(config, None)
    clipped, applied = _run_and_applied_gradients(config, theta)
    # Every step of the clipped run applied ‖g‖ ≤ θ: min(‖g‖, θ) of the raw norm it recorded.
    assert len(applied) == len(clipped.grad_norms) == config.steps
    norms = np.array([float(g.norm()) for g in applied])
    assert norms.max() <= theta * (1 + 1e-6)
    np.testing.assert_allclose(norms, np.minimum(clipped.grad_norms, theta), rtol=1e-5)
    assert clipped.clipped_steps == int((clipped.grad_norms > theta).sum()) > 0
    # The unclipped run applied the gradients whose norms it recorded, until the step that blew up.
    assert len(raw) == unclipped.blew_up_at - 1
    np.testing.assert_allclose([float(g.norm()) for g in raw], unclipped.grad_norms[: len(raw)], rtol=1e-5)
    # Both runs are one run until clipping first acts; on that step the clipped run applied θ g/‖g‖ of the
    # very g the unclipped run applied: the same direction, cos = 1.
    first = int(np.argmax(clipped.grad_norms > theta))
    assert first < len(raw) and raw[first].norm() > theta
    for before in range(first):
        assert torch.equal(applied[before], raw[before])
    torch.testing.assert_close(applied[first], theta * raw[first] / raw[first].norm())
    assert gradients.cosine(raw[first], applied[first]) == pytest.approx(1.0, abs=1e-6)
    assert clipped.cosine == pytest.approx(1.0, abs=1e-6)


def test_unclipped_run_blows_up_and_the_clipped_one_does_not():
    config = gradients.ClipConfig(lr=1.0, steps=40)
    unclipped = gradients.train_for_clipping(config)
    clipped = gradients.train_for_clipping(config, threshold=1.0)
    assert unclipped.blew_up_at is not None and unclipped.blew_up_at == len(unclipped.grad_norms)
    assert not (math.isfinite(unclipped.losses[-1]) and math.isfinite(unclipped.grad_norms[-1]))
    assert clipped.blew_up_at is None and np.isfinite(clipped.losses).all()
    assert clipped.clipped_steps > 0
    assert clipped.cosine == pytest.approx(1.0, abs=1e-6)
    # Same weights, same batches: the first step is the same gradient in both runs.
    assert clipped.grad_norms[0] == pytest.approx(unclipped.grad_norms[0], rel=1e-6)


# --- The LSTM's cell path ------------------------------------------------------------------------------------


def test_cell_path_derivative_is_the_product_of_the_recorded_forget_gates():
    config = gradients.CellPathConfig(hidden=4, steps=6, forget_bias=1.0, input_size=3, seed=1)
    lstm = gradients.lstm_with_forget_bias(config)
    x = gradients.random_inputs(config.steps, config.input_size, config.input_scale, config.seed)
    with torch.no_grad():
        trace = lstm.trace(x)
    forget = trace["f"][0, :, 0]  # (T, H)
    h_prev = torch.cat([trace.h0[0], trace["h"][0, :-1, 0]])  # h_0 … h_{T−1}, held fixed: the cell path only
    c = torch.cat([trace.c0[0], trace["c"][0, :, 0]])  # c_0 … c_T
    weights = lstm.layer_weights(0)
    diagonals = gradients.cell_path_products(forget)  # (T+1, H)
    for k in (0, 3, config.steps):

        def c_T_from_c_k(c_k, k=k):
            state = c_k.unsqueeze(0)
            for t in range(k, config.steps):
                state = lstm_cell(x[:, t], (h_prev[t : t + 1], state), weights).c_t
            return state[0]

        expected = torch.autograd.functional.jacobian(c_T_from_c_k, c[k].clone())
        torch.testing.assert_close(torch.diag(diagonals[config.steps - k]), expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(diagonals[config.steps], forget.prod(0))


def test_a_high_forget_bias_keeps_the_cell_path_flat():
    low = gradients.cell_path(gradients.CellPathConfig(hidden=16, steps=150, forget_bias=-2.0))
    high = gradients.cell_path(gradients.CellPathConfig(hidden=16, steps=150, forget_bias=4.0))
    assert high.mean_forget > 0.95 > 0.2 > low.mean_forget
    assert high.cell_path[-1] > 1e-3 > 1e-30 > low.cell_path[-1]
    assert np.all(high.cell_path <= 1)  # f < 1 strictly: never growth, only slower decay


def test_numbers_read_as_the_lecture_writes_them():
    assert sci(1.05**150) == "1.51·10³"
    assert sci(0.95**150) == "4.56·10⁻⁴"
    assert sci(0.6037) == "0.604"
    assert sci(9.9996e5) == "1.00·10⁶"
    assert sci(math.inf) == "∞"


# --- The page --------------------------------------------------------------------------------------------------


def _metric(at, label_start):
    """A number the page shows: an st.metric's value, or one under an instant chart."""
    return next(value for label, value in shown_numbers(at).items() if label.startswith(label_start))


def test_page_shows_the_lecture_numbers_and_follows_sigma_into_the_link():
    at = open_page("app_pages/gradient_decay.py")
    assert not at.exception, [e.value for e in at.exception]
    assert _metric(at, "measured ‖W_hhᴷ v‖ after K = 150") == "1.51·10³"
    at.segmented_control(key="gradient_decay_section").set_value("clipping").run()  # one section at a time
    assert _metric(at, "cos(raw g, clipped g)") == "1.000"
    assert "Without clipping, the run blew up" in instant_shown(at, "gradient_decay_threshold")[1]
    at.segmented_control(key="gradient_decay_section").set_value("lstm").run()
    before = _metric(at, "‖∂h_T/∂h_k‖ at T − k = 150, tanh RNN")
    at.slider(key="gradient_decay_sigma").set_value(0.95).run()
    assert not at.exception
    assert _metric(at, "‖∂h_T/∂h_k‖ at T − k = 150, tanh RNN") != before
    assert at.query_params["sigma"] == "0.95"  # mirrored into the shareable link
    at.slider(key="gradient_decay_forget_bias").set_value(4.0).run()
    assert float(_metric(at, "mean forget gate f_t")) > 0.95
    at.segmented_control(key="gradient_decay_section").set_value("powers").run()
    assert _metric(at, "measured ‖W_hhᴷ v‖ after K = 150") == "4.56·10⁻⁴"


def test_the_clipping_threshold_sends_both_runs_at_every_theta_for_the_browser_to_pick():
    """Section 4's θ slider answers in the browser: the page holds, for every θ, what the engine's two runs at that
    θ say, and a move (as the browser reports it) lands in the session and the address."""
    at = open_page("app_pages/gradient_decay.py", query={"section": "clipping"})
    data = instant_control(at, "gradient_decay_threshold")
    assert data["labels"] == ["0.1", "0.25", "0.5", "1", "2", "5", "10"] and data["param"] == "theta"
    config = gradients.ClipConfig(lr=1.0)
    for threshold, blocks in zip((0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0), data["views"], strict=True):
        run = gradients.train_for_clipping(config, threshold)
        numbers = {label: value for block in blocks for label, value in block.get("metrics", [])}
        assert numbers["steps clipped"] == f"{run.clipped_steps} of {len(run.grad_norms)}", threshold
    move_instant(at, "gradient_decay_threshold", 0.25)
    assert not at.exception and at.query_params["theta"] == "0.25"
    assert "With clipping at θ = 0.25" in instant_shown(at, "gradient_decay_threshold")[1]


def _autograd_step_terms(config: gradients.TanhRNNConfig) -> np.ndarray:
    """‖∂L_T/∂W_hh from step t‖_F for t = 1…T by autograd: the RNN run by hand with its own leaf copy of W_hh at
    each step, so that each copy's gradient is that step's term (the engine's weights, inputs and target)."""
    rnn = gradients.tanh_rnn(config)
    x = gradients.random_inputs(config.steps, config.input_size, config.input_scale, config.seed)[0]
    copies = [rnn.weight_hh_l0.detach().clone().requires_grad_() for _ in range(config.steps)]
    h = torch.zeros(config.hidden, dtype=x.dtype)
    for t in range(config.steps):
        h = torch.tanh(rnn.weight_ih_l0.detach() @ x[t] + copies[t] @ h)
    (0.5 * (h - gradients.loss_target(config.hidden, config.seed)[0]).square().sum()).backward()
    return np.array([float(copy.grad.norm()) for copy in copies])


def test_the_per_step_sum_sends_every_k_for_the_browser_to_pick():
    """Section 3's K slider answers in the browser: the page holds every K's shares of the sum and bars, as autograd
    gives them, and a move (as the browser reports it) lands in the session and the address and survives a trip to
    another section."""
    from tests.figure_helpers import figure, numbers

    at = open_page("app_pages/gradient_decay.py", query={"section": "sum", "H": "8"})
    assert not at.exception, [e.value for e in at.exception]
    data = instant_control(at, "gradient_decay_steps")
    assert data["labels"] == [str(k) for k in range(10, 301, 10)] and data["param"] == "K"
    assert data["labels"][data["index"]] == "150"
    terms = _autograd_step_terms(gradients.TanhRNNConfig(hidden=8, steps=40))
    shares = {label: value for block in data["views"][3] for label, value in block.get("metrics", [])}  # K = 40
    first = terms[:20].sum() / terms.sum()  # far below 0.1 %: written in powers of ten
    assert first < 1e-3 and shares == {"share of the last 10 steps": f"{terms[-10:].sum() / terms.sum():.1%}",
                                       "share of the first 20 steps": f"{sci(100 * first)} %"}
    bars = next(trace for trace in figure(at)["frames"][3]["data"] if trace["type"] == "bar")
    heights = list(numbers(bars["y"]))
    assert terms[0] == 0 and heights[0] is None  # h_0 = 0: step 1's term is 0, which a log axis leaves out
    np.testing.assert_allclose(np.array(heights[1:], dtype=float), terms[1:], rtol=1e-9)
    move_instant(at, "gradient_decay_steps", 40)
    assert not at.exception and at.query_params["K"] == "40"
    assert instant_shown(at, "gradient_decay_steps")[0] == shares
    at.segmented_control(key="gradient_decay_section").set_value("powers").run()
    assert at.slider(key="gradient_decay_steps").value == 40  # section 1's K slider starts where section 3 left it
    at.slider(key="gradient_decay_steps").set_value(70).run()
    at.segmented_control(key="gradient_decay_section").set_value("sum").run()
    data = instant_control(at, "gradient_decay_steps")
    assert data["labels"][data["index"]] == "70" and at.query_params["K"] == "70"


def test_the_per_step_sum_opens_at_the_k_of_its_link():
    at = open_page("app_pages/gradient_decay.py", query={"section": "sum", "H": "8", "K": "60", "x_scale": "0"})
    assert not at.exception
    data = instant_control(at, "gradient_decay_steps")
    assert data["labels"][data["index"]] == "60" and at.query_params["K"] == "60"
    assert data["views"][data["index"]] == []  # no input: no shares to give, and the page says why
    assert any("Every term is exactly 0" in info.value for info in at.info)


def test_page_restores_sigma_and_k_from_a_link_and_rejects_bad_values():
    at = open_page("app_pages/gradient_decay.py", query={"sigma": "0.95", "K": "100"})
    assert not at.exception
    assert at.slider(key="gradient_decay_sigma").value == 0.95
    assert _metric(at, "measured ‖W_hhᴷ v‖ after K = 100") == sci(0.95**100)
    bad = open_page("app_pages/gradient_decay.py", query={"sigma": "7"})
    assert not bad.exception
    assert any("not valid" in w.value for w in bad.warning)
    assert bad.slider(key="gradient_decay_sigma").value == 1.05


# --- Figures ---------------------------------------------------------------------------------------------------


def test_figures_draw_measured_solid_and_theory_dashed_on_labelled_log_axes():
    """The powers chart's data for the browser (every σ₁ stop's curves and numbers), the clipping figure, and the
    LSTM cell path's data for the browser (every b_f stop's)."""
    from rnnviz.figures import gradients as figures

    config = gradients.PowerConfig(hidden=8, steps=20, matrix="gaussian", vector="random")
    stops = (0.5, 0.9, 1.05, 1.5)
    curves = gradients.power_curves(config, stops)
    data = figures.power_stops(curves, [0.9], 1.05, ".st-key-sigma")
    assert data["stops"] == list(stops) and data["value"] == 1.05 and data["x"] == list(range(21))
    assert "log scale" in data["y_title"] and data["hline"]["log_y"] == 0.0
    for sigma, shown in zip(stops, data["chosen"], strict=True):
        curve = gradients.power_curve(replace(config, sigma=sigma))  # one σ₁ at a time, as the engine's loop runs it
        measured, theory = shown["series"]
        assert "dash" not in measured and theory["dash"] and measured["legend"] == f"σ₁ = {sigma:.2f}, measured"
        assert measured["log_y"] == pytest.approx(np.log10(curve.measured), abs=6e-4)
        assert theory["log_y"] == pytest.approx(np.log10(sigma ** np.arange(21)), abs=6e-4)
        assert dict(shown["numbers"]) == {
            "measured ‖W_hhᴷ v‖ after K = 20": sci(curve.measured[-1]),
            f"theory σ₁ᴷ = {sigma:.2f}^20": sci(sigma**20),
            "measured ÷ theory": f"{curve.measured[-1] / sigma**20:.3f}",
        }
        assert shown["note"]["bold"] == sci(curve.measured[-1]) and sci(curve.measured[-1]) in shown["alt"]
    overlay = [s for s in data["fixed"] if "legend" in s]  # the overlaid σ₁ = 0.9 stays as the slider moves
    assert [s["legend"] for s in overlay] == ["σ₁ = 0.90, measured"]
    assert overlay[0]["log_y"] == data["chosen"][1]["series"][0]["log_y"]

    config = gradients.ClipConfig(lr=1.0, steps=30)
    unclipped, clipped = gradients.train_for_clipping(config), gradients.train_for_clipping(config, 1.0)
    clip = figures.clipping_figure(unclipped, clipped, 1.0, config.steps)
    marks = [t for t in clip.data if t.mode == "markers+text"]
    assert [t.text[0] for t in marks] == [f"inf/NaN at step {unclipped.blew_up_at}"]
    assert clip.layout.yaxis.type == clip.layout.yaxis2.type == "log"

    # Section 5 in the browser: the tanh RNN's curve stays, the LSTM's cell path and numbers follow b_f.
    decay = gradients.decay_curves(gradients.TanhRNNConfig(hidden=8, steps=20))
    paths = [gradients.cell_path(gradients.CellPathConfig(hidden=8, steps=20, forget_bias=b)) for b in (-2.0, 2.0)]
    data = figures.cell_path_stops(decay, paths, 2.0, ".st-key-b_f")
    assert data["stops"] == [-2.0, 2.0] and data["x"] == [0, 20] and data["hline"] is None
    (tanh_rnn,) = data["fixed"]
    assert tanh_rnn["legend"] == "measured ‖∂h_T/∂h_k‖, tanh RNN" and tanh_rnn["x"] == decay.lag.tolist()
    assert tanh_rnn["log_y"] == pytest.approx(np.log10(decay.with_tanh), abs=6e-4)
    for path, shown in zip(paths, data["chosen"], strict=True):
        (lstm,) = shown["series"]
        assert lstm["legend"] == f"measured ‖∂c_T/∂c_k‖, LSTM cell path (b_f = {path.forget_bias:+.1f})"
        assert lstm["log_y"] == pytest.approx(np.log10(path.cell_path), abs=6e-4)
        assert dict(shown["numbers"]) == {"‖∂c_T/∂c_k‖ at T − k = 20, LSTM": sci(path.cell_path[-1]),
                                          "‖∂h_T/∂h_k‖ at T − k = 20, tanh RNN": sci(decay.with_tanh[-1]),
                                          "mean forget gate f_t": f"{path.mean_forget:.3f}"}
    assert paths[1].cell_path[-1] > paths[0].cell_path[-1]  # a higher b_f keeps more of the gradient


def test_the_tanh_prime_histogram_counts_every_value_in_its_bin():
    from rnnviz.figures.gradients import TANH_PRIME_BIN, tanh_prime_figure

    curves = gradients.decay_curves(gradients.TanhRNNConfig(hidden=16, sigma=1.05, steps=150))
    values = curves.tanh_prime
    bars = tanh_prime_figure(values).data[0]
    assert sum(bars.y) == values.size  # every tanh′ of every unit at every step, in one bar
    for centre, count in zip(bars.x, bars.y):
        low, high = centre - TANH_PRIME_BIN / 2, centre + TANH_PRIME_BIN / 2
        in_bin = (values >= low - 1e-12) & ((values < high - 1e-12) | ((high > 1 - 1e-9) & (values <= 1.0)))
        assert count == int(in_bin.sum()), (centre, count)


@pytest.mark.parametrize(("section", "slider_key", "chart_key"), [
    ("powers", "gradient_decay_sigma", "gradient_decay_power"),
    ("lstm", "gradient_decay_forget_bias", "gradient_decay_cell_path"),
])
def test_an_instant_chart_holds_a_curve_for_every_value_its_slider_takes(section, slider_key, chart_key):
    """The browser shows the stop nearest the slider's value: there must be one at every value the slider can take."""
    from tests.apptest_helpers import instant_chart

    at = open_page("app_pages/gradient_decay.py", query={"section": section})
    slider, data = at.slider(key=slider_key), instant_chart(at, chart_key)
    count = round((slider.max - slider.min) / slider.step) + 1
    assert data["stops"] == pytest.approx([slider.min + i * slider.step for i in range(count)], abs=1e-9)
    assert data["value"] == slider.value and len(data["chosen"]) == count
