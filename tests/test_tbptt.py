"""Truncated BPTT: no gradient crosses a chunk boundary, the sweep learns only when K > D, and the page shows it."""

import numpy as np
import pytest
import torch

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.lessons.tbptt import SweepConfig, chunk_starts, gradient_reach, gradient_reach_example, train_chunk
from tests.apptest_helpers import open_page, page_text
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


def test_page_draws_where_the_gradient_stops():
    at = open_page(PAGE)
    assert not at.exception
    # Defaults: L = 32, K = 6, loss at t = 12 (chunk 7 … 12), D = 4: the source x_8 is inside the chunk.
    reach = gradient_reach_example(SweepConfig(chunks=(6,)), 6, 11)
    bars = figure(at)["data"]
    shown = next(trace for trace in bars if trace["type"] == "bar")
    np.testing.assert_allclose(numbers(shown["y"]), reach[6:12], rtol=1e-6)
    assert any("inside the chunk" in s.value for s in at.success)
    at.slider(key="tbptt_view_chunk").set_value(4).run()  # K = D: chunk 9 … 12, the source x_8 is outside
    assert not at.exception
    assert any("exactly 0" in w.value for w in at.warning)
    assert "Train 5 runs" in " ".join(b.label for b in at.button)


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
    at.slider(key="tbptt_position").set_value(20).run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "tbptt_run"]
    assert {m.label: m.value for m in at.metric} == shown
    assert "Training time for these runs" in page_text(at)
