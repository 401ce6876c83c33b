"""The sequence-to-sequence engine: task, both joins, attention masking, decoders, metrics, checkpoints, CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import rnnviz.__main__ as rnnviz_main
from rnnviz.core import beam as core_beam
from rnnviz.seq2seq import checkpoint as ckpt
from rnnviz.seq2seq import decode as D
from rnnviz.seq2seq import task
from rnnviz.seq2seq.__main__ import main as cli
from rnnviz.seq2seq.model import Memory, Seq2Seq, Seq2SeqConfig, init_pair
from rnnviz.seq2seq.train import batches, train_pair

SMALL = Seq2SeqConfig(alphabet_size=10, train_min=1, train_max=8, embed=16, enc_hidden=24, dec_hidden=48, attn=24,
                      steps=5, batch=16, seed=0)
TEXTS = ["abc", "hgfedcba", "j", "cafe"]


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    return init_pair(SMALL)


@pytest.fixture(scope="module")
def shipped():
    return ckpt.load_shipped()


def _step_through(model: Seq2Seq, memory: Memory, tgt_in: torch.Tensor):
    """Logits (N, T_out, V) and α of the traced decoder stepped over teacher-forced inputs."""
    state, rows, alphas = model.initial_state(memory), [], []
    for i in range(tgt_in.size(1)):
        logits, state, alpha = model.step(tgt_in[:, i], state, memory)
        rows.append(logits)
        alphas.append(alpha)
    return torch.stack(rows, 1), (None if alphas[0] is None else torch.stack(alphas, 1))


def test_task_tokens_reversal_and_held_out_sets():
    letters = task.alphabet(26)
    assert task.vocab(letters)[:4] == ("<PAD>", "<START>", "<END>", "a")
    assert task.decode([*task.encode("hello", letters), task.END_ID, 5], letters) == "hello"
    src, lengths = task.source_tensor(["ab", "c"], letters)
    assert src.tolist() == [[3, 4], [5, 0]] and lengths.tolist() == [2, 1]
    tgt_in, targets = task.target_tensors(["ab"], letters)
    assert tgt_in.tolist() == [[task.START_ID, 4, 3]] and targets.tolist() == [[4, 3, task.END_ID]]
    held = task.eval_strings(7, 50, letters)
    assert held == task.eval_strings(7, 50, letters) and all(len(s) == 7 for s in held)
    assert held != task.eval_strings(7, 50, letters, seed=1)
    first = next(batches(SMALL))
    assert first[0].shape[0] == SMALL.batch and int(first[1].max()) <= SMALL.train_max


@pytest.mark.parametrize("text, words", [("", "empty"), ("abZ!", "'!', 'Z'"), ("a" * 17, "at most 16")])
def test_bad_inputs_give_clear_errors(pair, text, words):
    with pytest.raises(ValueError, match=words):
        D.greedy(pair["attention"], text)


def test_other_bad_arguments_are_refused(pair):
    model = pair["attention"]
    with pytest.raises(ValueError, match="beam width"):
        D.beam_search(model, "abc", width=0)
    with pytest.raises(ValueError, match="temperature"):
        D.sample(model, "abc", temperature=0)
    with pytest.raises(ValueError, match="join"):
        Seq2SeqConfig(join="luong").validate()
    with pytest.raises(ValueError, match="alphabet"):
        Seq2SeqConfig(alphabet_size=27).validate()
    with pytest.raises(ValueError, match="Lengths"):
        D.accuracy_by_length(model, [17], 2)
    with pytest.raises(ValueError, match="src"):
        model.encode(torch.zeros(3, dtype=torch.long), torch.tensor([3]))


def test_both_joins_start_from_the_same_weights(pair):
    fixed, attention = pair["fixed"].state_dict(), pair["attention"].state_dict()
    assert set(attention) - set(fixed) == {"attn_query.weight", "attn_key.weight", "attn_key.bias", "attn_score.weight"}
    for name, tensor in fixed.items():
        assert torch.equal(tensor, attention[name][tuple(slice(0, n) for n in tensor.shape)]), name


def test_shapes_and_the_forward_pass_equals_the_traced_steps(pair):
    src, lengths = task.source_tensor(TEXTS, SMALL.letters)
    tgt_in, targets = task.target_tensors(TEXTS, SMALL.letters)
    for join, model in pair.items():
        out = model(src, lengths, tgt_in, targets)
        assert out.logits.shape == (4, 9, 13) and out.states.shape == (4, 9, SMALL.dec_hidden)
        assert out.loss.ndim == 0 and torch.isfinite(out.loss)
        stepped, alphas = _step_through(model, model.encode(src, lengths), tgt_in)
        torch.testing.assert_close(out.logits, stepped, atol=1e-5, rtol=1e-5)
        if join == "attention":
            assert out.attention.shape == (4, 9, 8)
            torch.testing.assert_close(out.attention, alphas)
        else:
            assert out.attention is None


def test_attention_sums_to_one_on_real_positions_and_is_zero_on_padding(pair):
    model = pair["attention"]
    src, lengths = task.source_tensor(TEXTS, SMALL.letters)
    tgt_in, _ = task.target_tensors(TEXTS, SMALL.letters)
    att = model(src, lengths, tgt_in).attention  # (N, T_out, T_in)
    for n, length in enumerate(lengths.tolist()):
        assert torch.all(att[n, :, length:] == 0)
        torch.testing.assert_close(att[n, :, :length].sum(-1), torch.ones(att.size(1)))
    for d in D.greedy(model, TEXTS) + D.beam_search(model, "cafe", 3)[0]:
        assert d.attention.shape == (len(d.ids), len(d.input))
        np.testing.assert_allclose(d.attention.sum(1), 1.0, atol=1e-5)


def test_the_fixed_context_decoder_reads_only_the_final_state(pair):
    src, lengths = task.source_tensor(TEXTS, SMALL.letters)
    tgt_in, _ = task.target_tensors(TEXTS, SMALL.letters)
    for join, model in pair.items():
        memory = model.encode(src, lengths)
        altered = Memory(torch.randn_like(memory.states), memory.mask, memory.final_h, memory.final_c,
                         None if memory.keys is None else torch.randn_like(memory.keys))
        before, _ = _step_through(model, memory, tgt_in)
        after, _ = _step_through(model, altered, tgt_in)
        if join == "fixed":
            assert torch.equal(before, after)
        else:  # the contrast: attention reads every state
            assert (before - after).abs().max() > 1e-3


def test_the_bidirectional_encoder_equals_torchs_on_copied_weights(pair):
    model = pair["attention"]
    reference = nn.LSTM(SMALL.embed, SMALL.enc_hidden, batch_first=True, bidirectional=True)
    reference.load_state_dict({k.removeprefix("encoder."): v for k, v in model.state_dict().items()
                               if k.startswith("encoder.")}, strict=True)
    memory = model.encode(*task.source_tensor(TEXTS, SMALL.letters))
    for n, text in enumerate(TEXTS):  # each string alone, no padding: torch's own bidirectional LSTM
        x = model.embed(torch.tensor([task.encode(text, SMALL.letters)]))
        out, (h_n, c_n) = reference(x)
        torch.testing.assert_close(memory.states[n, : len(text)], out[0], atol=1e-6, rtol=1e-5)
        assert torch.all(memory.states[n, len(text):] == 0)
        torch.testing.assert_close(memory.final_h[n], torch.cat([h_n[0, 0], h_n[1, 0]]), atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(memory.final_c[n], torch.cat([c_n[0, 0], c_n[1, 0]]), atol=1e-6, rtol=1e-5)


def test_beam_width_one_equals_greedy(pair, shipped):
    for model in [*pair.values(), *shipped[0].values()]:
        for text in ("abc", "hgfedcba", "jjaj"):
            (best,), tree = D.beam_search(model, text, width=1)
            (greedy,) = D.greedy(model, text)
            assert best.ids == greedy.ids
            assert len(tree) == len(best.ids) and all(len(nodes) == 1 and nodes[0].kept for nodes in tree)
            np.testing.assert_allclose(best.logprobs, greedy.logprobs, atol=1e-5)


def test_beam_search_returns_its_tree_and_best_first(shipped):
    model = shipped[0]["fixed"]
    beams, tree = D.beam_search(model, "abcdefghijklmnop", width=4)
    assert len(beams) == 4 and [b.logprob for b in beams] == sorted((b.logprob for b in beams), reverse=True)
    assert all(isinstance(n, core_beam.BeamNode) for nodes in tree for n in nodes)
    assert all(len(nodes) <= 4 for nodes in tree) and any(not n.kept for nodes in tree for n in nodes)
    assert beams[0].logprob >= D.greedy(model, "abcdefghijklmnop")[0].logprob - 1e-6


def test_sampling_is_seeded_and_cold_sampling_is_greedy(shipped):
    model = shipped[0]["fixed"]
    text = "thequickbrownfox"
    a, b = D.sample(model, text, temperature=1.5, seed=3)[0], D.sample(model, text, temperature=1.5, seed=3)[0]
    assert a.ids == b.ids
    assert D.sample(model, text, temperature=1e-4, seed=1)[0].ids == D.greedy(model, text)[0].ids


def test_bytes_read_fixed_context_is_constant_and_memory_grows(pair):
    rows = D.bytes_by_length(pair, [1, 5, 16])
    fixed = [r for r in rows if r["model"] == "fixed"]
    attention = [r for r in rows if r["model"] == "attention"]
    assert {r["total"] for r in fixed} == {2 * SMALL.dec_hidden * 4} and all(r["memory"] == 0 for r in fixed)
    per_position = (2 * SMALL.enc_hidden + SMALL.attn) * 4  # h_j and U_a h_j, fp32
    assert [r["memory"] for r in attention] == [n * per_position for n in (1, 5, 16)]


def test_metrics():
    assert D.char_accuracy("abc", "abc") == 1.0
    assert D.char_accuracy("abx", "abc") == pytest.approx(2 / 3)
    assert D.char_accuracy("ab", "abcd") == 0.5 and D.char_accuracy("abcdef", "abc") == 0.5


def test_a_short_training_run_teaches_attention_a_length_the_fixed_context_misses():
    """Same init, same batches, 200 steps on strings of 1–8 letters: some training length that the attention model
    gets right (≥ 0.8 exact) the fixed-context model gets mostly wrong (≤ half of that)."""
    config = Seq2SeqConfig(alphabet_size=26, train_min=1, train_max=8, embed=16, enc_hidden=32, dec_hidden=64,
                           attn=32, steps=200, batch=32, lr=5e-3, seed=0)
    models, history = train_pair(config, on_step=lambda *_: None)
    assert len(history.steps) == 200 and set(history.loss) == {"fixed", "attention"}
    rows = D.accuracy_by_length(models, range(4, 9), 100)
    exact = {(r["model"], r["length"]): r["exact"] for r in rows}
    assert any(exact["attention", n] >= 0.8 and exact["fixed", n] <= exact["attention", n] / 2 for n in range(4, 9))


def test_checkpoints_round_trip_and_refuse_other_files(pair, tmp_path):
    model = pair["attention"]
    data = ckpt.save_model(model, tmp_path / "a.pt", {"note": 1})
    loaded, metrics = ckpt.load_model(tmp_path / "a.pt")
    assert metrics == {"note": 1} and loaded.config == model.config
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name])
    assert D.greedy(loaded, "cafe")[0].ids == D.greedy(model, "cafe")[0].ids
    assert ckpt.load_model(data)[0].config == model.config
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    torch.save({"state": {}}, tmp_path / "other.pt")
    for bad in (tmp_path / "junk.pt", tmp_path / "other.pt", tmp_path / "missing.pt", data[:100]):
        with pytest.raises(ckpt.Seq2SeqError):
            ckpt.load_model(bad)
    paths = ckpt.save_pair(pair, tmp_path)
    assert {p.name for p in paths.values()} == set(ckpt.FILES.values())
    assert set(ckpt.load_pair(tmp_path)[0]) == {"fixed", "attention"}


def test_the_shipped_pair_is_small_and_matches_its_recorded_table(shipped):
    models, metrics = shipped
    for join, model in models.items():
        assert (ckpt.MODELS_DIR / ckpt.FILES[join]).stat().st_size <= ckpt.MAX_BYTES
        recorded = {r["length"]: r for r in metrics[join]["by_length"]}
        for row in D.accuracy_by_length(model, [12, 20], recorded[20]["n"]):
            assert row["exact"] == pytest.approx(recorded[row["length"]]["exact"], abs=0.01)
    assert metrics["attention"]["by_length"][-1]["length"] == 40


def test_cli_decodes_evaluates_and_exits_2_on_bad_input(capsys, tmp_path):
    assert cli(["decode", "stressed"]) == 0
    out = capsys.readouterr().out
    assert "target: desserts" in out and "attention" in out and "fixed" in out
    assert cli(["decode", "cafe", "--beam", "2", "--attention"]) == 0
    assert cli(["evaluate", "--n", "5", "--lengths", "3,20"]) == 0
    assert "| 20 |" in capsys.readouterr().out
    for argv in (["decode", ""], ["decode", "Hello"], ["decode", "a" * 41], ["decode", "abc", "--beam", "11"],
                 ["evaluate", "--lengths", "x"], ["evaluate", "--lengths", "99"], ["evaluate", "--bogus"],
                 ["decode", "abc", "--models", str(tmp_path)], ["train", "--steps", "0"], ["nope"]):
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert err and "Traceback" not in err
    assert rnnviz_main.main(["seq2seq", "decode", "Ab"]) == 2
    assert "outside the alphabet" in capsys.readouterr().err
