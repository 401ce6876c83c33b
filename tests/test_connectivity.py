"""Connectivity (rnnviz.interpret.connectivity): the gradient norms ‖∂ log p(x_{t+1} | x_≤t) / ∂ x_s‖ against central
finite differences of the same log-probability in float64 (no autograd in the reference), for an embedded LSTM, a
one-hot vanilla RNN, a minGRU and a Transformer whose context is shorter than the text."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.core.charmodel import build_model
from rnnviz.core.config import ModelConfig
from rnnviz.interpret.connectivity import Connectivity, MeanConnectivity, connectivity, mean_connectivity

V = 5
IDS = torch.tensor([0, 3, 1, 4, 2, 2, 0, 1])


def tiny(kind: str, **kwargs):
    torch.manual_seed(3)
    config = ModelConfig(vocab_size=V, kind=kind, hidden=6, embed_dim=4, n_head=2, **kwargs)
    return build_model(config).double().eval()


def log_prob_of_inputs(model, x: torch.Tensor, target: int) -> float:
    """log p(target) after the last of the input vectors ``x`` (T, D), by the model's own layers, without autograd."""
    with torch.no_grad():
        if hasattr(model, "blocks"):
            hidden = x[None] + model.pos_embed(torch.arange(x.size(0)))
            for block in model.blocks:
                hidden = block(hidden)
            logits = model.readout(hidden)[0, -1]
        else:
            out, _ = model.rnn(x[None])
            logits = model.head(out[0, -1])
        return float(F.log_softmax(logits, dim=-1)[target])


def finite_difference_norms(model, window: torch.Tensor, target: int, step: float = 1e-6) -> np.ndarray:
    """‖∂ log p / ∂ x_s‖ for every input vector of ``window`` by central differences, one coordinate at a time."""
    with torch.no_grad():
        x = model.embed(window[None])[0] if hasattr(model, "blocks") else model.inputs(window[None])[0]
    norms = []
    for s in range(x.size(0)):
        partials = []
        for d in range(x.size(1)):
            up, down = x.clone(), x.clone()
            up[s, d] += step
            down[s, d] -= step
            partials.append((log_prob_of_inputs(model, up, target) - log_prob_of_inputs(model, down, target))
                            / (2 * step))
        norms.append(np.linalg.norm(partials))
    return np.array(norms)


@pytest.mark.parametrize("kind, extra", [("lstm", {}), ("rnn", {"embedding": False}), ("mingru", {}),
                                         ("gru", {"layers": 2})])
def test_recurrent_connectivity_equals_finite_differences(kind, extra):
    model = tiny(kind, **extra)
    t = 5
    result = connectivity(model, IDS, t)
    assert result.target == int(IDS[t + 1]) and result.target_is_true and result.first_read == 0
    assert result.norms.shape == (t + 1,)
    np.testing.assert_allclose(result.norms, finite_difference_norms(model, IDS[: t + 1], result.target),
                               rtol=1e-5, atol=1e-9)
    assert result.log_prob == pytest.approx(log_prob_of_inputs(model, model_inputs(model, IDS[: t + 1]),
                                                                result.target))


def model_inputs(model, window):
    with torch.no_grad():
        return model.inputs(window[None])[0]


def test_a_transformer_depends_on_nothing_before_its_context():
    model = tiny("transformer", block_size=4)
    t = 6  # reads x_3 … x_6: its context of 4
    result = connectivity(model, IDS, t)
    assert result.first_read == 3
    assert np.all(result.norms[:3] == 0) and np.all(result.norms[3:] > 0)
    np.testing.assert_allclose(result.norms[3:], finite_difference_norms(model, IDS[3:7], result.target),
                               rtol=1e-5, atol=1e-9)


def test_after_the_last_character_the_target_is_the_models_own_guess():
    model = tiny("lstm")
    t = len(IDS) - 1
    result = connectivity(model, IDS, t)
    with torch.no_grad():
        logits, _, _ = model(IDS[None])
    assert not result.target_is_true and result.target == int(logits[0, -1].argmax())
    with pytest.raises(ValueError, match="position of the text"):
        connectivity(model, IDS, len(IDS))


def test_the_model_is_left_as_it_was():
    model = tiny("lstm", dropout=0.0)
    model.train()
    connectivity(model, IDS, 4)
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def test_reach_is_the_farthest_distance_above_a_share_of_the_largest_norm():
    result = Connectivity(t=4, target=0, target_is_true=True, log_prob=-1.0,
                          norms=np.array([0.005, 0.5, 0.02, 0.3, 1.0]), first_read=0)
    assert result.reach(0.01) == 3  # s = 1 (0.5) is 3 back; s = 0 (0.005) is under 1% of 1.0
    assert result.reach(0.4) == 3 and result.reach(0.6) == 0
    np.testing.assert_allclose(result.relative(), [0.005, 0.5, 0.02, 0.3, 1.0])


PASSAGE = torch.randint(0, V, (23,), generator=torch.Generator().manual_seed(5))


@pytest.mark.parametrize("kind, extra", [("lstm", {}), ("rnn", {"embedding": False}), ("mingru", {"layers": 2}),
                                         ("gru", {}), ("transformer", {"block_size": 6})])
def test_the_batched_connectivity_is_connectivity_of_each_prediction(kind, extra):
    """Every prediction of a passage in groups of 4 rows (one backward each) equals ``connectivity`` called for it
    alone, the last position (the model's own guess) included; d beyond position 0 is NaN, and a Transformer is
    exactly 0 before its context of 6."""
    model = tiny(kind, **extra)
    targets = list(range(len(PASSAGE)))
    result = mean_connectivity(model, PASSAGE, max_distance=9, targets=targets, batch=4)
    assert result.norms.shape == (len(PASSAGE), 10)
    for i, t in enumerate(targets):
        single = connectivity(model, PASSAGE, t)
        d = np.arange(min(10, t + 1))
        np.testing.assert_allclose(result.norms[i, d], single.norms[t - d], rtol=1e-10, atol=1e-14)
        assert np.all(np.isnan(result.norms[i, t + 1:]))
        np.testing.assert_allclose(result.relative()[i, d], single.relative()[t - d], rtol=1e-10, atol=1e-14)
        assert result.peaks[i] == pytest.approx(single.norms.max(), rel=1e-10)
        assert result.log_probs[i] == pytest.approx(single.log_prob, rel=1e-10)
        assert result.first_read[i] == single.first_read
    if kind == "transformer":
        inside, before = result.norms[:, :6], result.norms[:, 6:]
        assert np.all(inside[~np.isnan(inside)] > 0) and np.all(before[~np.isnan(before)] == 0)


@pytest.mark.parametrize("kind", ["lstm", "mingru", "transformer"])
def test_right_padding_changes_no_prediction(kind):
    """t = 4 read alone (no padding) and beside t = 20 (padded by 16 columns on the right) gives the same norms."""
    model = tiny(kind, block_size=8) if kind == "transformer" else tiny(kind)
    alone = mean_connectivity(model, PASSAGE, max_distance=4, targets=[4], batch=1)
    padded = mean_connectivity(model, PASSAGE, max_distance=4, targets=[4, 20], batch=2)
    np.testing.assert_allclose(padded.norms[0], alone.norms[0], rtol=1e-12, atol=1e-15)
    assert padded.log_probs[0] == pytest.approx(alone.log_probs[0], rel=1e-12)


def test_the_summary_is_the_mean_and_median_of_each_predictions_relative_norms():
    result = MeanConnectivity(targets=np.array([2, 3]), norms=np.array([[2.0, 1.0, 0.5], [4.0, 0.04, 0.02]]),
                              peaks=np.array([2.0, 4.0]), log_probs=np.array([-1.0, -2.0]), first_read=np.array([0, 0]))
    np.testing.assert_allclose(result.relative(), [[1.0, 0.5, 0.25], [1.0, 0.01, 0.005]])
    np.testing.assert_allclose(result.mean(), [1.0, 0.255, 0.1275])
    np.testing.assert_allclose(result.median(), result.mean())  # two values: the median is their mean
    np.testing.assert_allclose(result.standard_error(), [0.0, 0.245, 0.1225])  # |a − b| / 2 for two values
    assert result.at(1) == pytest.approx(0.255)
    assert result.reach(0.01) == 2 and result.reach(0.2) == 1 and result.reach(2.0) == 0
    with pytest.raises(ValueError, match="max_distance measured"):
        result.at(3)


def test_the_default_targets_start_at_max_distance_and_the_model_is_left_as_it_was():
    model = tiny("lstm", dropout=0.0)
    model.train()
    result = mean_connectivity(model, PASSAGE, max_distance=5, every=3)
    assert result.targets.tolist() == list(range(5, len(PASSAGE) - 1, 3))
    assert not np.isnan(result.norms).any()
    assert model.training and all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("kwargs, message", [
    ({"max_distance": -1}, "max_distance must be 0 or more"),
    ({"max_distance": 30}, "too short for a prediction with 30 characters before it"),
    ({"targets": []}, "targets is empty"),
    ({"targets": [3, 23]}, r"every target must be a position of the text, 0 … 22; got 23"),
    ({"targets": [-1]}, "got -1"),
    ({"every": 0}, "every and batch must be at least 1"),
    ({"batch": 0}, "every and batch must be at least 1"),
])
def test_bad_arguments_are_refused_in_words(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mean_connectivity(tiny("rnn"), PASSAGE, **kwargs)
