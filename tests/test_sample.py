"""Sampling: greedy by hand, temperature and top-k draws, beam scores as summed log-probs, interventions vs torch."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from rnnviz.charlm.corpus import UnknownCharactersError, Vocab
from rnnviz.charlm.sample import (
    Intervention,
    _choose,
    _step_with_interventions,
    beam_search,
    exposure_bias,
    generate,
    next_char_distribution,
)
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig

VOCAB = Vocab.from_text("abcdefgh \n")


@pytest.fixture
def model():
    torch.manual_seed(1)
    model = CharModel(ModelConfig(vocab_size=VOCAB.size, kind="lstm", layers=2, hidden=10, embed_dim=6))
    with torch.no_grad():
        model.head.weight.mul_(8)  # peaked distributions, so that near-ties between characters are unlikely
    return model.eval()


def _log_probs_of(model, text: str) -> torch.Tensor:
    """log p(text[t+1] | text[≤t]) for every t, from one teacher-forced pass."""
    ids = VOCAB.encode(text).view(1, -1)
    with torch.no_grad():
        logits, _, _ = model(ids)
    return F.log_softmax(logits[0, :-1].double(), -1).gather(1, ids[0, 1:, None])[:, 0]


def test_greedy_is_argmax_by_hand_and_deterministic(model):
    text = generate(model, VOCAB, "ab", 25, temperature=0)
    assert text == generate(model, VOCAB, "ab", 25, temperature=0, seed=99)
    so_far = "ab"
    for _ in range(25):  # recompute each step from the whole text, with no carried state
        with torch.no_grad():
            logits, _, _ = model(VOCAB.encode(so_far).view(1, -1))
        so_far += VOCAB.chars[int(logits[0, -1].argmax())]
    assert text == so_far[2:]


def test_temperature_to_zero_and_top_1_equal_greedy(model):
    greedy = generate(model, VOCAB, "ab", 30, temperature=0)
    assert generate(model, VOCAB, "ab", 30, temperature=1e-4, seed=5) == greedy
    assert generate(model, VOCAB, "ab", 30, temperature=1.0, top_k=1, seed=5) == greedy


def test_seeded_sampling_repeats_and_differs_across_seeds(model):
    first = generate(model, VOCAB, "a", 60, temperature=1.5, seed=3)
    assert first == generate(model, VOCAB, "a", 60, temperature=1.5, seed=3)
    assert first != generate(model, VOCAB, "a", 60, temperature=1.5, seed=4)


def test_draws_follow_softmax_over_the_top_k():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0, 0.0])
    generator = torch.Generator().manual_seed(0)
    draws = torch.tensor([_choose(logits, 0.7, 3, generator) for _ in range(6000)])
    counts = torch.bincount(draws, minlength=5).double() / len(draws)
    kept = logits[:3] / 0.7
    expected = torch.cat([torch.softmax(kept.double(), 0), torch.zeros(2, dtype=torch.float64)])
    assert counts[3:].sum() == 0  # outside the top 3, never
    assert_close(counts, expected, atol=0.02, rtol=0)


def test_beam_width_1_is_greedy(model):
    beams = beam_search(model, VOCAB, "ab", 20, beam_width=1)
    assert len(beams) == 1 and beams[0].text == generate(model, VOCAB, "ab", 20, temperature=0)


def test_beam_scores_are_summed_log_probs(model):
    beams = beam_search(model, VOCAB, "ab", 12, beam_width=4)
    assert len(beams) == 4 and len({b.text for b in beams}) == 4
    assert [b.log_prob for b in beams] == sorted((b.log_prob for b in beams), reverse=True)
    for beam in beams:
        by_hand = _log_probs_of(model, "ab" + beam.text)[1:].sum().item()  # the continuation's characters
        assert beam.log_prob == pytest.approx(by_hand, abs=1e-4)


def test_next_char_distribution_matches_softmax(model):
    table = next_char_distribution(model, VOCAB, "abc ab", k=3)
    with torch.no_grad():
        logits, _, _ = model(VOCAB.encode("abc ab").view(1, -1))
    probs = torch.softmax(logits[0], -1)
    assert table.probs.shape == (6, 3)
    for t in range(6):
        best = probs[t].argsort(descending=True)[:3]
        assert table.chars[t] == [VOCAB.chars[i] for i in best]
        assert_close(torch.from_numpy(table.probs[t]), probs[t, best])


def test_unknown_prime_characters_are_named(model):
    with pytest.raises(UnknownCharactersError, match="'z'"):
        generate(model, VOCAB, "abz", 5)


def test_step_path_without_clamps_equals_the_fast_path(model):
    ids = VOCAB.encode("abc d").view(1, -1)
    with torch.no_grad():
        fast, _, _ = model(ids)
        state = None
        for t in range(ids.size(1)):
            logits, state = _step_with_interventions(model, ids[:, t], state, ())
            assert_close(logits, fast[:, t])


def test_clamping_h_of_an_rnn_by_hand():
    torch.manual_seed(2)
    model = CharModel(ModelConfig(vocab_size=VOCAB.size, kind="rnn", hidden=5, embed_dim=4)).eval()
    clamp = Intervention(layer=0, unit=3, value=0.7)
    ids = VOCAB.encode("ab")
    rnn = model.rnn
    h = torch.zeros(1, 5)
    with torch.no_grad():
        state = None
        for t in range(2):
            logits, state = _step_with_interventions(model, ids[t : t + 1], state, [clamp])
            x = model.embed(ids[t : t + 1])
            h = torch.tanh(x @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0)
            h[:, 3] = 0.7  # h_t with unit 3 held, fed to the readout and to the next step
            assert_close(logits, model.head(h))


def test_clamping_c_of_an_lstm_against_torch_lstmcell(model):
    clamp = Intervention(layer=0, unit=2, value=-0.5, on="c")
    cell = nn.LSTMCell(6, 10)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(model.rnn, f"{name}_l0"))
        ids = VOCAB.encode("ba")
        _, state = _step_with_interventions(model, ids[:1], None, [clamp])
        h1, c1 = state[0][0], state[1][0]
        assert (c1[:, 2] == -0.5).all()
        _, state = _step_with_interventions(model, ids[1:], state, [clamp])
        h2_torch, c2_torch = cell(model.embed(ids[1:]), (h1, c1))
        expected_c = c2_torch.clone()
        expected_c[:, 2] = -0.5
        o2 = h2_torch / torch.tanh(c2_torch)  # torch's o_t, recovered from h_t = o_t ⊙ tanh(c_t)
        assert_close(state[1][0], expected_c)
        assert_close(state[0][0], o2 * torch.tanh(expected_c))


def test_ablating_the_whole_top_layer_leaves_the_readout_bias_and_bad_clamps_are_errors(model):
    with torch.no_grad():
        model.head.bias.copy_(torch.arange(VOCAB.size, dtype=torch.float32))  # argmax is the last id
    ablated = [Intervention(layer=1, unit=u) for u in range(10)]
    # With h_t = 0 in the top layer, logits = W h_t + b = b at every step, whatever the input.
    assert generate(model, VOCAB, "ab", 20, temperature=0, interventions=ablated) == VOCAB.chars[-1] * 20
    with pytest.raises(ValueError, match="layer"):
        generate(model, VOCAB, "ab", 5, interventions=[Intervention(layer=2, unit=0)])
    with pytest.raises(ValueError, match="unit"):
        generate(model, VOCAB, "ab", 5, interventions=[Intervention(layer=0, unit=10)])


def test_exposure_bias_teacher_forced_by_hand(model):
    passage = "abc defg abc defg"
    result = exposure_bias(model, VOCAB, passage, prefix_len=5)
    by_hand = -_log_probs_of(model, passage)[4:].numpy()
    assert result.teacher_forced.shape == result.free_running.shape == (12,)
    assert_close(torch.from_numpy(result.teacher_forced).double(), torch.from_numpy(by_hand), rtol=1e-5, atol=1e-5)
    # Both have read only the prefix at the first position, so they agree there and nowhere need to after.
    assert result.free_running[0] == pytest.approx(result.teacher_forced[0], rel=1e-5)
    assert result.continuation == generate(model, VOCAB, passage[:5], 12, temperature=0)
    # Free running scores the true text under the state of the model's own continuation, by hand:
    own = passage[:5] + result.continuation
    with torch.no_grad():
        logits, _, _ = model(VOCAB.encode(own).view(1, -1))
    targets = VOCAB.encode(passage[5:])
    by_hand_free = F.cross_entropy(logits[0, 4:-1], targets, reduction="none")
    assert_close(torch.from_numpy(result.free_running).float(), by_hand_free, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,nonlinearity", [("lstm", "tanh"), ("gru", "tanh"), ("rnn", "tanh"), ("rnn", "relu")])
def test_one_character_through_the_cell_kernels_equals_the_fused_module(kind, nonlinearity):
    """generate's one-character step (_advance with T = 1: torch's cell kernels, layer by layer) against the
    model's fused nn.LSTM / nn.GRU / nn.RNN forward, from a state the fused path carried."""
    from rnnviz.charlm.sample import _advance, _steps_by_cell

    torch.manual_seed(4)
    model = CharModel(ModelConfig(vocab_size=VOCAB.size, kind=kind, layers=2, hidden=12, embed_dim=5,
                                  nonlinearity=nonlinearity)).eval()
    assert _steps_by_cell(model)
    ids = torch.tensor([[1, 4, 2, 7, 0], [3, 3, 5, 1, 6]])
    with torch.no_grad():
        _, state = _advance(model, ids[:, :4], None)  # the fused path over the first four characters
        logits, carried = _advance(model, ids[:, 4:], state)  # the fifth through the cell kernels
        fused_logits, _, fused_state = model(ids, state=None)
    assert_close(logits, fused_logits[:, -1], rtol=1e-5, atol=1e-6)
    pairs = zip(carried, fused_state) if kind == "lstm" else [(carried, fused_state)]  # (h, c) or h
    for mine, theirs in pairs:
        assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
    model.train()
    assert _steps_by_cell(model)  # no dropout: training mode changes nothing between layers
    dropped = CharModel(ModelConfig(vocab_size=VOCAB.size, kind=kind, layers=2, hidden=12, embed_dim=5,
                                    nonlinearity=nonlinearity, dropout=0.5)).train()
    assert not _steps_by_cell(dropped)  # the fused module draws the dropout between layers
