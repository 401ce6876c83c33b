"""Truncated BPTT: no gradient crosses a chunk boundary, the sweep learns only when K > D, and the page shows it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.lessons.tbptt import (
    SweepConfig,
    chunk_starts,
    example_sequence,
    gradient_reach,
    train_chunk,
)
from tests.apptest_helpers import instant_control, instant_shown, move_instant, open_page, page_text
from tests.figure_helpers import figure, numbers

LENGTH, DELAY = 12, 3


@pytest.fixture(scope="module")
def model_and_sequence():
    torch.manual_seed(0)
    model = CharModel(ModelConfig(vocab_size=4, kind="lstm", hidden=8, embed_dim=4))
    idx = torch.randint(0, 4, (2, LENGTH), generator=torch.Generator().manual_seed(1))
    return model, idx


def test_chunk_starts():
    assert chunk_starts(10, 4) == [0, 4, 8]
    assert chunk_starts(8, 8) == [0]
    with pytest.raises(ValueError, match="at least 1"):
        chunk_starts(8, 0)


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_with_k_at_most_d_the_gradient_to_the_source_is_exactly_zero(model_and_sequence, chunk):
    model, idx = model_and_sequence
    for t in range(DELAY, LENGTH):
        reach = gradient_reach(model, idx, chunk, t)
        assert reach[t - DELAY] == 0.0  # the source x_{t−D} always lies in an earlier chunk
        assert reach[t] > 0  # while the loss does reach its own input


@pytest.mark.parametrize("chunk", [4, 6, 12])
def test_with_k_above_d_the_gradient_reaches_the_source(model_and_sequence, chunk):
    model, idx = model_and_sequence
    reached = [t for t in range(DELAY, LENGTH) if gradient_reach(model, idx, chunk, t)[t - DELAY] > 0]
    # Exactly the positions whose source sits in the same chunk: the last K − D of every chunk.
    assert reached == [t for t in range(DELAY, LENGTH) if t - DELAY >= (t // chunk) * chunk]
    assert reached


def test_gradient_reach_is_zero_exactly_before_the_chunk_and_matches_full_bptt_inside(model_and_sequence):
    model, idx = model_and_sequence
    t, chunk = 10, 4  # chunk [8, 12)
    reach = gradient_reach(model, idx, chunk, t)
    assert np.all(reach[:8] == 0) and np.all(reach[8 : t + 1] > 0) and np.all(reach[t + 1 :] == 0)
    # Inside the chunk truncation changes nothing: the same numbers as full BPTT over the sequence.
    full = gradient_reach(model, idx, LENGTH, t)
    np.testing.assert_allclose(reach[8:], full[8:], rtol=1e-5)
    assert np.all(full[:8] > 0)


def test_sweep_config_validates_in_plain_words():
    with pytest.raises(ValueError, match="between 1 and L"):
        SweepConfig(chunks=(40,))
    with pytest.raises(ValueError, match="delay D"):
        SweepConfig(delay=32)
    with pytest.raises(ValueError, match="at least one"):
        SweepConfig(chunks=())


@pytest.mark.slow
def test_an_lstm_learns_delayed_copy_only_when_k_exceeds_d():
    config = SweepConfig(steps=600)  # D = 4, L = 32, 4 symbols: chance is 0.25
    short = train_chunk(config.run_config(4))
    long = train_chunk(config.run_config(8))
    assert short.accuracy < 0.4
    assert long.accuracy > 0.9


# --- The page --------------------------------------------------------------------------------------------

PAGE = "app_pages/truncated_bptt.py"


POSITION = "tbptt_position"


def full_bptt_reach(config: SweepConfig, chunk: int, t: int) -> np.ndarray:
    """‖∂L_t/∂x_u‖ (t, u 1-based) by plain autograd over the whole sequence on the page's seeded, untrained LSTM; inside
    the chunk that holds t truncation changes nothing, so there it is the page's number. L_t's label is x_t, as the
    page takes it (any label shows where the gradient reaches)."""
    torch.manual_seed(config.seed)
    model = CharModel(config.run_config(chunk).model_config())
    idx, _ = example_sequence(config)
    x = model.inputs(idx).detach().requires_grad_(True)
    out, _ = model.rnn(x)
    F.cross_entropy(model.head(out[:, t - 1]), idx[:, t - 1]).backward()
    return x.grad.norm(dim=-1).sum(dim=0).numpy()


def test_page_draws_where_the_gradient_stops():
    at = open_page(PAGE)
    assert not at.exception
    # Defaults: L = 32, K = 6, loss at t = 12 (chunk 7 … 12), D = 4: the source x_8 is inside the chunk.
    reference = full_bptt_reach(SweepConfig(), 6, 12)
    bars = figure(at)["data"]
    shown = next(trace for trace in bars if trace["type"] == "bar")
    np.testing.assert_allclose(numbers(shown["y"]), reference[6:12], rtol=1e-5)
    assert "inside the chunk" in instant_shown(at, POSITION)[1]
    at.slider(key="tbptt_view_chunk").set_value(4).run()  # K = D: chunk 9 … 12, the source x_8 is outside
    assert not at.exception
    assert "exactly 0" in instant_shown(at, POSITION)[1]
    assert "Train 5 runs" in " ".join(b.label for b in at.button)


def test_loss_at_step_t_sends_every_t_for_the_browser_to_pick():
    """"Loss at step t" answers in the browser: the page holds every t's sentence, with the engine's gradient norm
    where the source is inside the chunk, and every t's chart as a frame; a move lands in the session and the
    address."""
    at = open_page(PAGE)
    data = instant_control(at, POSITION)
    assert data["labels"] == [str(t) for t in range(1, 33)] and data["param"] == "t" and data["index"] == 11
    (twelve,) = data["views"][11]  # K = 6, D = 4: x_8 is in t = 12's chunk 7 … 12
    reference = full_bptt_reach(SweepConfig(), 6, 12)
    assert twelve["alert"] == "success"
    assert f"\\partial x_{{8}} \\rVert = {reference[7]:.3g}$" in twelve["text"]
    (ten,) = data["views"][9]  # x_6 is in chunk 1 … 6, before t = 10's chunk: the gradient never gets there
    assert ten["alert"] == "warning" and "exactly 0" in ten["text"]
    assert "caption" in data["views"][2][0]  # t = 3: x_{t−D} would be before the sequence
    frames = figure(at)["frames"]
    assert len(frames) == 32
    bars = next(trace for trace in frames[19]["data"] if trace["type"] == "bar")  # t = 20: chunk 19 … 24
    np.testing.assert_allclose(numbers(bars["y"]), full_bptt_reach(SweepConfig(), 6, 20)[18:20], rtol=1e-5)

    move_instant(at, POSITION, 20)
    assert not at.exception and at.query_params["t"] == "20"
    assert instant_control(at, POSITION)["index"] == 19 and at.session_state[POSITION] == 20
    assert "$x_{16}$ lies in an earlier chunk" in instant_shown(at, POSITION)[1]


def test_page_trains_the_sweep_behind_a_button_and_keeps_the_results():
    at = open_page(PAGE)
    at.select_slider(key="tbptt_steps").set_value(100).run()
    at.pills(key="tbptt_chunks").set_value([2, 6]).run()
    at.button(key="tbptt_run").click().run()
    assert not at.exception
    config = SweepConfig(chunks=(2, 6), steps=100)
    expected = {k: train_chunk(config.run_config(k)).accuracy for k in (2, 6)}
    shown = {m.label: m.value for m in at.metric}
    assert shown == {f"K = {k}": f"{acc:.2f}" for k, acc in expected.items()}
    assert len(at.get("plotly_chart")) == 3
    # A rerun finds both runs in the cache: no button, the same numbers.
    move_instant(at, POSITION, 20)
    assert not at.exception
    assert not [b for b in at.button if b.key == "tbptt_run"]
    assert {m.label: m.value for m in at.metric} == shown
    assert "Training time for these runs" in page_text(at)
