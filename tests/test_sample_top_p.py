"""Top-p (nucleus) sampling: the kept set and its renormalised distribution by hand, seeded draws, top-k then
top-p, bad values, and the page's request check."""

import math

import pytest
import torch
from torch.testing import assert_close

from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.sample import _choose, generate, sampling_probs
from rnnviz.charlm.sample_request import check_sample_request, run_sample
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig

VOCAB = Vocab.from_text("abcdefgh \n")
PROBS = [0.5, 0.3, 0.15, 0.05]
LOGITS = torch.tensor([math.log(p) for p in PROBS])  # softmax(LOGITS) = PROBS


@pytest.fixture
def model():
    torch.manual_seed(1)
    return CharModel(ModelConfig(vocab_size=VOCAB.size, kind="lstm", layers=1, hidden=10, embed_dim=6)).eval()


def _dist(*probs: float) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float32)


@pytest.mark.parametrize(
    ("top_p", "expected"),
    [
        (0.3, (1.0, 0, 0, 0)),  # the top one alone already passes p
        (0.5, (1.0, 0, 0, 0)),  # 0.5 reaches p = 0.5 exactly: nothing more is needed
        (0.51, (0.5 / 0.8, 0.3 / 0.8, 0, 0)),
        (0.8, (0.5 / 0.8, 0.3 / 0.8, 0, 0)),  # 0.5 + 0.3 = 0.8 exactly: the third is not kept
        (0.81, (0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0)),
        (0.95, (0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0)),  # exact again
        (0.96, tuple(PROBS)),
        (1.0, tuple(PROBS)),
    ],
)
def test_the_nucleus_and_its_renormalised_probabilities_by_hand(top_p, expected):
    assert_close(sampling_probs(LOGITS, 1.0, top_p=top_p), _dist(*expected), atol=1e-6, rtol=0)


def test_temperature_scales_before_the_nucleus_is_cut():
    # τ = 0.5 squares the probabilities: 0.25, 0.09, 0.0225, 0.0025 (sum 0.365), so p = 0.9 is reached by two
    # (0.25 + 0.09 = 0.34 of 0.365 = 0.93) where at τ = 1 it takes three.
    assert_close(sampling_probs(LOGITS, 0.5, top_p=0.9), _dist(0.25 / 0.34, 0.09 / 0.34, 0, 0), atol=1e-6, rtol=0)
    assert_close(sampling_probs(LOGITS, 1.0, top_p=0.9), _dist(0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0),
                 atol=1e-6, rtol=0)


def test_top_k_applies_first_then_top_p_to_what_it_kept():
    # Top-3 renormalised: 0.5/0.95 = 0.526, 0.3/0.95 = 0.316, 0.158; their cumulative 0.842 passes p = 0.82 after
    # two. The other order would keep three (0.5 + 0.3 = 0.8 < 0.82 of the full distribution).
    assert_close(sampling_probs(LOGITS, 1.0, top_k=3, top_p=0.82), _dist(0.625, 0.375, 0, 0), atol=1e-6, rtol=0)
    assert_close(sampling_probs(LOGITS, 1.0, top_k=3), _dist(0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0),
                 atol=1e-6, rtol=0)
    assert_close(sampling_probs(LOGITS, 1.0, top_k=1, top_p=0.99), _dist(1, 0, 0, 0))


def test_seeded_draws_stay_in_the_nucleus_at_its_renormalised_frequencies():
    # The probabilities 0.15, 0.5, 0.05, 0.3 out of order: p = 0.9 keeps 0.5, 0.3 and 0.15 (0.5 + 0.3 = 0.8 < 0.9),
    # renormalised over 0.95; the 0.05 is never drawn.
    logits = torch.tensor([math.log(0.15), math.log(0.5), math.log(0.05), math.log(0.3)])
    generator = torch.Generator().manual_seed(0)
    draws = torch.tensor([_choose(logits, 1.0, None, generator, top_p=0.9) for _ in range(6000)])
    counts = torch.bincount(draws, minlength=4).double() / len(draws)
    assert counts[2] == 0  # outside the nucleus, never
    expected = torch.tensor([0.15, 0.5, 0.0, 0.3], dtype=torch.float64) / 0.95
    assert_close(counts, expected, atol=0.02, rtol=0)


def test_top_p_1_is_draw_for_draw_the_same_as_none(model):
    plain = generate(model, VOCAB, "ab", 80, temperature=1.3, seed=7)
    assert generate(model, VOCAB, "ab", 80, temperature=1.3, seed=7, top_p=1.0) == plain
    assert generate(model, VOCAB, "ab", 80, temperature=1.3, top_k=4, seed=7, top_p=1.0) == generate(
        model, VOCAB, "ab", 80, temperature=1.3, top_k=4, seed=7)


def test_a_tiny_nucleus_is_greedy_and_greedy_ignores_top_p(model):
    greedy = generate(model, VOCAB, "ab", 40, temperature=0)
    assert generate(model, VOCAB, "ab", 40, temperature=1.5, seed=2, top_p=1e-9) == greedy
    assert generate(model, VOCAB, "ab", 40, temperature=0, top_k=3, seed=2, top_p=0.3) == greedy
    assert generate(model, VOCAB, "ab", 40, temperature=1.5, seed=2, top_p=0.5) != generate(
        model, VOCAB, "ab", 40, temperature=1.5, seed=2), "a nucleus of 0.5 changes a hot sample"


@pytest.mark.parametrize("bad", [0.0, -0.2, 1.01, 2.0, float("nan")])
def test_bad_top_p_raises_in_words(model, bad):
    with pytest.raises(ValueError, match="top_p must be more than 0 and at most 1"):
        generate(model, VOCAB, "ab", 5, top_p=bad)


def test_the_request_check_keeps_top_p_refuses_bad_ones_and_turns_1_off(model):
    request, errors, _ = check_sample_request(VOCAB, "ab", 20, "temperature", 0.9, top_k=5, seed=4, top_p=0.7)
    assert not errors and (request.top_k, request.top_p) == (5, 0.7)
    assert run_sample(model, VOCAB, request).text == generate(model, VOCAB, "ab", 20, 0.9, 5, seed=4, top_p=0.7)
    assert check_sample_request(VOCAB, "ab", 20, "temperature", top_p=1.0)[0].top_p is None
    for bad in (0.0, -1.0, 1.5):
        request, errors, _ = check_sample_request(VOCAB, "ab", 20, "temperature", top_p=bad)
        assert request is None and "Top-p must be more than 0 and at most 1" in errors[0]
    greedy, _, _ = check_sample_request(VOCAB, "ab", 20, "greedy", top_p=0.3)
    assert run_sample(model, VOCAB, greedy).text == generate(model, VOCAB, "ab", 20, temperature=0)
