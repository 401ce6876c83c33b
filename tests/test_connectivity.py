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
from rnnviz.interpret.connectivity import Connectivity, connectivity

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
