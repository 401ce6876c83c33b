"""Surprisal and the top guesses (rnnviz.interpret.surprisal), checked against each model's own loss and against
probabilities worked out from its logits for every kind."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.core.charmodel import build_model
from rnnviz.core.config import MODEL_KINDS, ModelConfig
from rnnviz.interpret.surprisal import predictions

VOCAB = 11


def tiny(kind: str, seed: int = 0):
    torch.manual_seed(seed)
    extra = dict(n_head=2, block_size=16) if kind == "transformer" else {}
    return build_model(ModelConfig(VOCAB, kind=kind, layers=2, hidden=8, embed_dim=6, **extra)).eval()


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_mean_surprisal_is_the_models_own_cross_entropy(kind):
    model = tiny(kind)
    ids = torch.randint(0, VOCAB, (14,), generator=torch.Generator().manual_seed(1))
    found = predictions(model, ids)
    with torch.no_grad():
        logits, loss, _ = model(ids[None, :-1], ids[None, 1:])
    assert found.loss() == pytest.approx(float(loss), rel=1e-5)
    # Character by character: −log softmax(z_{t−1})[x_t].
    by_hand = -F.log_softmax(logits[0].double(), dim=-1).gather(1, ids[1:, None])[:, 0].numpy()
    np.testing.assert_allclose(found.surprisal[1:], by_hand, rtol=1e-5)
    assert math.isnan(found.surprisal[0]) and found.rank[0] == 0 and (found.guess_ids[0] == -1).all()


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_guesses_are_the_most_probable_characters_and_rank_places_the_true_one(kind):
    model = tiny(kind, seed=3)
    ids = torch.randint(0, VOCAB, (12,), generator=torch.Generator().manual_seed(2))
    found = predictions(model, ids, k=4)
    with torch.no_grad():
        probs = torch.softmax(model(ids[None, :-1])[0][0].double(), dim=-1).numpy()  # (T−1, V)
    for t in range(1, len(ids)):
        row = probs[t - 1]
        order = np.argsort(-row)
        assert found.guess_ids[t].tolist() == order[:4].tolist()
        np.testing.assert_allclose(found.guess_probs[t], row[order[:4]], rtol=1e-5)
        assert found.rank[t] == 1 + int((row > row[int(ids[t])]).sum())
    assert found.top1_accuracy() == pytest.approx(float(np.mean(found.rank[1:] == 1)))


def test_a_transformer_reads_a_passage_longer_than_its_context_through_its_sliding_window():
    model = tiny("transformer")
    ids = torch.randint(0, VOCAB, (40,), generator=torch.Generator().manual_seed(4))  # context 16
    found = predictions(model, ids)
    t = 30  # predicted from the 16 characters before it, alone
    with torch.no_grad():
        logits = model(ids[None, t - 16 : t])[0][0, -1]
    assert found.surprisal[t] == pytest.approx(float(-F.log_softmax(logits.double(), -1)[ids[t]]), rel=1e-5)


def test_most_surprising_orders_by_surprisal_and_a_one_character_passage_predicts_nothing():
    model = tiny("lstm")
    ids = torch.randint(0, VOCAB, (20,), generator=torch.Generator().manual_seed(5))
    found = predictions(model, ids)
    worst = found.most_surprising(5)
    assert [found.surprisal[t] for t in worst] == sorted(found.surprisal[1:], reverse=True)[:5]
    assert 0 not in found.most_surprising(19)
    single = predictions(model, ids[:1])
    assert math.isnan(single.loss()) and single.most_surprising(3) == []


def test_training_mode_is_restored_and_bad_inputs_are_refused():
    model = tiny("gru").train()
    predictions(model, torch.tensor([1, 2, 3]))
    assert model.training
    with pytest.raises(ValueError, match="empty"):
        predictions(model, torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError, match="at least 1"):
        predictions(model, torch.tensor([1, 2]), k=0)
