"""Sampling inputs from a page: errors and corrections in words; the sample matches the engine's own call."""

import pytest

from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.sample import beam_search, generate
from rnnviz.charlm.sample_request import MAX_BEAM_LENGTH, MAX_SAMPLE_LENGTH, check_sample_request, run_sample
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig

VOCAB = Vocab("ehlo")


@pytest.fixture(scope="module")
def model():
    return CharModel(ModelConfig(vocab_size=4, hidden=8, embed_dim=4)).eval()


def test_unknown_prime_characters_are_named():
    request, errors, _ = check_sample_request(VOCAB, "help!", 10, "temperature")
    assert request is None and "'!'" in errors[0] and "'p'" in errors[0]


@pytest.mark.parametrize("length", [0, -5, None])
def test_a_length_under_one_is_an_error(length):
    request, errors, _ = check_sample_request(VOCAB, "he", length, "greedy")
    assert request is None and "at least 1" in errors[0]


def test_a_huge_length_is_capped_with_a_note():
    request, errors, notes = check_sample_request(VOCAB, "he", 10**6, "temperature")
    assert not errors and request.length == MAX_SAMPLE_LENGTH and "capped" in notes[0]
    request, _, _ = check_sample_request(VOCAB, "he", 10**6, "beam")
    assert request.length == MAX_BEAM_LENGTH


def test_temperature_zero_becomes_greedy(model):
    request, errors, notes = check_sample_request(VOCAB, "he", 12, "temperature", temperature=0.0)
    assert not errors and request.strategy == "greedy" and "greedy" in notes[0]
    assert run_sample(model, VOCAB, request).text == generate(model, VOCAB, "he", 12, temperature=0)


def test_top_k_and_beam_width_beyond_the_vocabulary_are_capped(model):
    request, _, notes = check_sample_request(VOCAB, "h", 5, "temperature", top_k=50)
    assert request.top_k is None and "4 characters" in notes[0]
    request, _, notes = check_sample_request(VOCAB, "h", 5, "beam", beam_width=10)
    assert request.beam_width == 4 and "4 beams" in notes[0]
    result = run_sample(model, VOCAB, request)
    assert result.beams == tuple(beam_search(model, VOCAB, "h", 5, 4)) and result.text == result.beams[0].text
    assert check_sample_request(VOCAB, "h", 5, "temperature", top_k=0)[1], "top-k 0 is an error"


def test_a_seeded_temperature_sample_is_the_engine_s(model):
    request, _, _ = check_sample_request(VOCAB, "he", 20, "temperature", temperature=0.7, top_k=3, seed=5)
    assert run_sample(model, VOCAB, request).text == generate(model, VOCAB, "he", 20, 0.7, 3, seed=5)
