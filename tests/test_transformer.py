"""The character Transformer: trace = fast path, causality, the KV cache, parameter count, attention weights,
training with no carried state, exact resume, checkpoints, sampling and the CLI.

Expected values come from torch itself (a full forward pass over the window) or from hand arithmetic.
Tolerances: fp64 models compare to 1e-12 (the paths differ only in summation order); fp32 to 1e-5.
"""

import io
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.charlm.checkpoint import CheckpointError, export_script, load_checkpoint, resume_trainer, save_checkpoint
from rnnviz.charlm.corpus import Corpus, Vocab, english_docs_text
from rnnviz.charlm.presets import ALL_PRESETS, BABY_GPT, TRANSFORMER_PRESETS
from rnnviz.charlm.sample import Intervention, beam_search, exposure_bias, generate, next_char_distribution
from rnnviz.charlm.sample_request import check_sample_request
from rnnviz.charlm.train import TrainConfig, Trainer, make_optimizer, sequence_loss
from rnnviz.cli import config_from_args, train_main, train_parser
from rnnviz.core.charmodel import build_model, carried_nbytes
from rnnviz.core.config import ModelConfig
from rnnviz.core.recurrent import KINDS
from rnnviz.core.transformer import CharTransformer, KVCache, count_parameters

V, L, C, HEADS, BLOCK = 11, 2, 16, 4, 8
TINY = dict(kind="transformer", layers=2, hidden=16, n_head=4, block_size=16, seq_len=16, batch=4,
            optimizer="adamw", lr=3e-3, forget_bias=None, device="cpu")  # fmt: skip
ROOT = Path(__file__).resolve().parents[1]  # the checkout under test


def _model(dtype=torch.float64, dropout: float = 0.0, seed: int = 0) -> CharTransformer:
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=V, kind="transformer", layers=L, hidden=C, n_head=HEADS, block_size=BLOCK,
                         dropout=dropout)  # fmt: skip
    return build_model(config).to(dtype).eval()


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


def _uncached_next_logits(model: CharTransformer, ids: torch.Tensor) -> torch.Tensor:
    """The reference: a full forward pass over the last block_size characters, last position. (N, V)"""
    return model(ids[:, -model.block_size :])[0][:, -1]


# -- the two paths, causality, attention -----------------------------------------------------------------------


def test_the_factory_builds_the_right_class_and_the_config_is_checked():
    assert isinstance(_model(), CharTransformer) and not CharTransformer.carries_state
    assert not ModelConfig(vocab_size=V, kind="transformer", hidden=16).carries_state
    assert ModelConfig(vocab_size=V).carries_state
    with pytest.raises(ValueError, match="divide evenly into 3"):
        ModelConfig(vocab_size=V, kind="transformer", hidden=16, n_head=3)
    with pytest.raises(ValueError, match="one-hot"):
        ModelConfig(vocab_size=V, kind="transformer", hidden=16, embedding=False)
    with pytest.raises(ValueError, match="at most 8"):
        TrainConfig(**{**TINY, "block_size": 8})  # seq_len 16 > context 8
    with pytest.raises(ValueError, match="at most 8 characters"):
        _model()(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="no state"):
        _model()(torch.zeros(1, 3, dtype=torch.long), state=torch.zeros(1))


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_trace_equals_the_fast_path(dropout):
    model = _model(dropout=dropout)  # eval mode: dropout is off on both paths
    idx = torch.randint(0, V, (3, BLOCK))
    fast, _, state = model(idx)
    traced, trace = model.trace(idx)
    assert state is None
    assert_close(traced, fast, rtol=0, atol=1e-12)
    assert trace.residual.shape == (L + 1, 3, BLOCK, C) and trace.attention.shape == (L, 3, HEADS, BLOCK, BLOCK)
    assert trace.attn_out.shape == trace.mlp_out.shape == (L, 3, BLOCK, C)
    # The residual stream is the sum of what each sub-layer wrote: x⁽ℓ⁺¹⁾ = x⁽ℓ⁾ + attn_out⁽ℓ⁾ + mlp_out⁽ℓ⁾.
    assert_close(trace.residual[1:], trace.residual[:-1] + trace.attn_out + trace.mlp_out, rtol=0, atol=1e-12)
    assert_close(model.head(model.ln_f(trace.residual[-1])), fast, rtol=0, atol=1e-12)


def test_trace_gradients_equal_the_fast_path():
    model = _model()
    idx, targets = torch.randint(0, V, (2, BLOCK)), torch.randint(0, V, (2, BLOCK))
    _, loss, _ = model(idx, targets)
    fast = torch.autograd.grad(loss, list(model.parameters()))
    logits, _ = model.trace(idx)
    traced = torch.autograd.grad(F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)), list(model.parameters()))
    for a, b in zip(fast, traced):
        assert_close(b, a, rtol=0, atol=1e-12)


def test_changing_token_t_changes_no_output_before_t():
    model = _model()
    idx = torch.randint(0, V, (1, BLOCK))
    base, trace = model.trace(idx)
    for t in range(BLOCK):
        changed = idx.clone()
        changed[0, t] = (idx[0, t] + 1) % V
        logits, changed_trace = model.trace(changed)
        assert_close(logits[:, :t], base[:, :t], rtol=0, atol=1e-12)
        assert_close(changed_trace.residual[:, :, :t], trace.residual[:, :, :t], rtol=0, atol=1e-12)
        assert (logits[:, t] - base[:, t]).abs().max() > 1e-6  # position t itself reads the new token
        fast, _, _ = model(changed)
        assert_close(fast[:, :t], model(idx)[0][:, :t], rtol=0, atol=1e-12)


def test_attention_rows_sum_to_one_over_earlier_positions_and_are_zero_above_the_diagonal():
    model = _model(torch.float32)
    _, trace = model.trace(torch.randint(0, V, (2, BLOCK)))
    weights = trace.attention  # (L, N, h, T, T)
    above = torch.ones(BLOCK, BLOCK, dtype=torch.bool).triu(diagonal=1)
    assert torch.all(weights[..., above] == 0)
    assert_close(weights.sum(-1), torch.ones(L, 2, HEADS, BLOCK), rtol=0, atol=1e-6)
    assert torch.all(weights[..., 0, 0] == 1)  # the first character can only attend to itself
    # One weight by hand: softmax over s ≤ t of q_t·k_s/√d, layer 0, head 0, t = 3.
    block = model.blocks[0]
    x0 = trace.residual[0]
    q, k, _ = block.attn.qkv(block.ln_1(x0))  # (N, h, T, d)
    scores = torch.stack([q[0, 0, 3] @ k[0, 0, s] for s in range(4)]) / math.sqrt(C // HEADS)
    assert_close(weights[0, 0, 0, 3, :4], torch.softmax(scores, dim=0), rtol=0, atol=1e-6)


# -- parameter count -----------------------------------------------------------------------------------------


def test_parameter_count_equals_the_tensors_and_the_hand_formula():
    model = _model()
    # E (V·C) + P (block·C) + per block [LN₁ 2C, W_QKV 3C²+3C, W_O C²+C, LN₂ 2C, W₁ 4C²+4C, W₂ 4C²+C]
    # + LN_f 2C + readout C·V + V.
    by_hand = V * C + BLOCK * C + L * (12 * C * C + 13 * C) + 2 * C + C * V + V
    assert model.num_parameters() == sum(p.numel() for p in model.parameters()) == by_hand == 7083
    assert count_parameters(V, L, C, BLOCK) == by_hand


def test_the_baby_gpt_preset_is_nanogpts_cpu_setting():
    preset = TRANSFORMER_PRESETS[BABY_GPT]
    assert ALL_PRESETS[BABY_GPT] is preset and preset.corpus == "tiny-shakespeare"
    c = preset.config
    assert (c.kind, c.layers, c.n_head, c.hidden, c.block_size, c.seq_len, c.batch, c.dropout) == (
        "transformer", 4, 4, 128, 64, 64, 12, 0.0)
    assert (c.optimizer, c.lr, c.lr_decay_steps, c.lr_floor, c.warmup_steps) == ("adamw", 1e-3, 2000, 0.1, 100)
    assert c.lr_at(2000) == pytest.approx(1e-4) and c.lr_at(0) == pytest.approx(1e-3 / 101)
    model = build_model(c.model_config(65))  # Tiny Shakespeare's 65 characters
    assert model.num_parameters() == 65 * 128 + 64 * 128 + 4 * (12 * 128**2 + 13 * 128) + 2 * 128 + 128 * 65 + 65
    assert model.num_parameters() == 818_241


def test_warm_up_then_cosine_by_hand_and_old_schedules_unchanged():
    config = TrainConfig(lr=0.01, warmup_steps=9, lr_decay_steps=109, lr_floor=0.1)
    assert config.lr_at(0) == pytest.approx(0.001) and config.lr_at(8) == pytest.approx(0.009)
    assert config.lr_at(9) == pytest.approx(0.01)
    assert config.lr_at(59) == pytest.approx(0.01 * (0.1 + 0.9 * 0.5))  # halfway through the 100 decay steps
    assert config.lr_at(109) == config.lr_at(5000) == pytest.approx(0.001)
    plain = TrainConfig(lr=0.01, lr_decay_steps=100)
    assert [plain.lr_at(s) for s in (0, 50, 100)] == pytest.approx([0.01, 0.0055, 0.001])
    with pytest.raises(ValueError, match="warmup"):
        TrainConfig(warmup_steps=100, lr_decay_steps=100)


def test_adamw_decays_matrices_and_embeddings_only():
    model = _model(torch.float32)
    optimizer = make_optimizer("adamw", model.parameters(), 1e-3, weight_decay=0.1)
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["betas"] == (0.9, 0.99)
    decayed, plain = optimizer.param_groups
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decayed["params"]) and all(p.dim() == 1 for p in plain["params"])
    assert len(decayed["params"]) + len(plain["params"]) == len(list(model.parameters()))


# -- the key/value cache -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_each_cached_step_equals_a_full_forward_even_past_the_context(dtype, tol):
    model = _model(dtype)
    ids = torch.randint(0, V, (2, 3 * BLOCK))
    logits, cache = model.prefill(ids[:, :3])
    assert_close(logits, model(ids[:, :3])[0], rtol=0, atol=tol)
    for t in range(3, ids.size(1)):
        step_logits, cache = model.step(ids[:, t], cache)
        assert_close(step_logits, _uncached_next_logits(model, ids[:, : t + 1]), rtol=0, atol=tol)
        assert cache.length == min(t + 1, BLOCK)
        assert torch.equal(cache.ids, ids[:, max(0, t + 1 - BLOCK) : t + 1])  # the window's characters
    assert_close(model.windowed_logits(ids)[:, -1], step_logits, rtol=0, atol=tol)


def test_carried_bytes_are_the_cache_tensors_and_grow_linearly_to_the_context():
    model = _model(torch.float32)
    ids = torch.randint(0, V, (1, BLOCK + 3))
    _, cache = model.prefill(ids[:, :1])
    sizes = [cache.nbytes]
    for t in range(1, ids.size(1)):
        _, cache = model.step(ids[:, t], cache)
        sizes.append(cache.nbytes)
        assert cache.nbytes == sum(k.nelement() * k.element_size() for k in (*cache.keys, *cache.values))
        assert carried_nbytes(cache) == cache.nbytes and cache.numel == cache.nbytes // 4
    per_token = 2 * L * C * 4  # K and V, every layer, C float32 numbers each
    assert sizes == [per_token * min(t, BLOCK) for t in range(1, BLOCK + 4)]
    h = torch.zeros(2, 1, 32)
    assert carried_nbytes((h, h.clone())) == 2 * 2 * 32 * 4 and carried_nbytes(h) == 256 and carried_nbytes(None) == 0


def _vocab() -> Vocab:
    return Vocab(" abcdefghij")  # V = 11 characters, sorted by code point


def _uncached_generate(model, vocab, prime, length, temperature, seed):
    """generate() without a cache: a full forward over the last block_size characters for every draw."""
    generator = torch.Generator().manual_seed(seed)
    ids = vocab.encode(prime).view(1, -1)
    out = []
    for _ in range(length):
        logits = _uncached_next_logits(model, ids)[0].float()
        if temperature == 0:
            idx = int(logits.argmax())
        else:
            idx = int(torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator))
        out.append(idx)
        ids = torch.cat([ids, torch.tensor([[idx]])], dim=1)
    return vocab.decode(out)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_cached_generation_equals_uncached(temperature):
    model, vocab = _model(), _vocab()
    for seed in (0, 1):
        cached = generate(model, vocab, "abc", 3 * BLOCK, temperature=temperature, seed=seed)
        assert cached == _uncached_generate(model, vocab, "abc", 3 * BLOCK, temperature, seed)
        assert len(cached) == 3 * BLOCK
    long_prime = "abcdefghij" * 2  # longer than the context: the window starts at its last 8 characters
    assert generate(model, vocab, long_prime, 10, temperature=0) == _uncached_generate(model, vocab, long_prime, 10,
                                                                                       0.0, 0)


def test_beam_search_next_chars_and_exposure_bias_work_and_interventions_are_refused():
    model, vocab = _model(), _vocab()
    greedy = generate(model, vocab, "abc", 12, temperature=0)
    assert beam_search(model, vocab, "abc", 12, beam_width=1)[0].text == greedy
    beams = beam_search(model, vocab, "abc", 12, beam_width=3)
    assert len(beams) == 3 and beams[0].log_prob >= beams[1].log_prob >= beams[2].log_prob
    # The best beam's score is its own log-probability, recomputed with full forward passes.
    ids = vocab.encode("abc" + beams[0].text).view(1, -1)
    by_hand = sum(F.log_softmax(_uncached_next_logits(model, ids[:, :t]), -1)[0, ids[0, t]].item()
                  for t in range(3, ids.size(1)))
    assert beams[0].log_prob == pytest.approx(by_hand, abs=1e-9)
    text = "abcdefghij" * 2  # past the context
    table = next_char_distribution(model, vocab, text, k=2)
    expected = torch.softmax(_uncached_next_logits(model, vocab.encode(text).view(1, -1)), -1)[0]
    assert table.probs[-1, 0] == pytest.approx(expected.max().item(), abs=1e-6)
    bias = exposure_bias(model, vocab, text, prefix_len=5)
    assert bias.teacher_forced.shape == bias.free_running.shape == (len(text) - 5,)
    assert bias.free_running[0] == pytest.approx(bias.teacher_forced[0], abs=1e-9)  # same prefix, same first step
    with pytest.raises(ValueError, match="Transformer has no such state"):
        generate(model, vocab, "abc", 5, interventions=[Intervention(0, 0)])


def test_a_prime_longer_than_the_context_gets_a_note():
    request, errors, notes = check_sample_request(_vocab(), "abcdefghij", 20, "greedy", context=BLOCK)
    assert request is not None and request.prime == "abcdefghij" and not errors
    assert any("context of 8" in n and "from character 3" in n for n in notes)
    assert not check_sample_request(_vocab(), "abc", 20, "greedy", context=BLOCK)[2]


# -- training, resume, evaluation, checkpoints -------------------------------------------------------------


def test_a_tiny_trainer_run_lowers_the_loss_with_no_carried_state(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    assert isinstance(trainer.model, CharTransformer) and not trainer.carries_state
    assert "no carried state" in trainer.describe() and f"{trainer.num_parameters:,} parameters" in trainer.describe()
    assert "h_t and c_t carry into the next chunk" in TrainConfig().describe()
    before = trainer.evaluate().val_loss
    trainer.run(40)
    assert trainer.state is None
    assert trainer.history[-1].loss < trainer.history[0].loss - 0.5
    assert trainer.evaluate().val_loss < before - 0.5


def test_resume_is_bit_identical(corpus):
    config = TrainConfig(**{**TINY, "dropout": 0.1, "warmup_steps": 2, "lr_decay_steps": 10})
    whole = Trainer(config, corpus)
    whole.run(9)
    first = Trainer(config, corpus)
    first.run(4)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(123)  # the global random state must not matter
    resumed = Trainer(config, corpus)
    resumed.load_state_dict(torch.load(buffer, weights_only=True, map_location="cpu"))
    resumed.run(5)
    for name, value in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    assert [r.loss for r in resumed.history] == [r.loss for r in whole.history]


def test_sequence_loss_reads_windows_of_the_context_each_from_nothing():
    model = _model(torch.float32)
    ids = torch.randint(0, V, (1000,))
    loss, chars = sequence_loss(model, ids, streams=3, seq_len=50)  # the context 8 caps the window
    assert chars == 999
    total = 0.0
    with torch.no_grad():
        for s in range(3):
            x, y = ids[s * 333 : (s + 1) * 333], ids[s * 333 + 1 : (s + 1) * 333 + 1]
            for start in range(0, 333, BLOCK):
                logits, _, _ = model(x[start : start + BLOCK].view(1, -1))
                total += F.cross_entropy(logits[0], y[start : start + BLOCK], reduction="sum").item()
    assert loss == pytest.approx(total / 999, rel=1e-5)


def test_a_checkpoint_round_trips_and_resumes_exactly(corpus, tmp_path):
    config = TrainConfig(**{**TINY, "lr_decay_steps": 8})
    whole = Trainer(config, corpus)
    whole.run(7)
    first = Trainer(config, corpus)
    first.run(3)
    path = save_checkpoint(tmp_path / "gpt.pt", first)
    checkpoint = load_checkpoint(path)
    assert isinstance(checkpoint.model, CharTransformer) and checkpoint.config == config
    for name, value in first.model.state_dict().items():
        assert torch.equal(checkpoint.model.state_dict()[name], value), name
    assert generate(checkpoint.model, checkpoint.vocab, "The", 20, seed=3) == generate(first.model, first.vocab,
                                                                                       "The", 20, seed=3)
    resumed = resume_trainer(checkpoint, corpus)
    resumed.run(4)
    for name, value in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    with pytest.raises(ValueError, match="Transformer cannot be exported"):
        export_script(config, first.vocab)
    with pytest.raises(CheckpointError, match="holds a Transformer; only RNN, LSTM, GRU models"):
        load_checkpoint(path, kinds=KINDS)  # what a page that reads recurrent cells asks for


def test_an_older_config_without_the_new_fields_still_loads(corpus, tmp_path):
    trainer = Trainer(TrainConfig(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu"), corpus)
    trainer.run(1)
    path = save_checkpoint(tmp_path / "old.pt", trainer)
    payload = torch.load(path, weights_only=True)
    for name in ("n_head", "block_size", "warmup_steps", "weight_decay"):  # as written before they existed
        del payload["config"][name]
    torch.save(payload, path)
    assert load_checkpoint(path).config == trainer.config


# -- the command line --------------------------------------------------------------------------------------


def test_the_cli_trains_a_tiny_transformer_and_samples_it(tmp_path):
    (tmp_path / "notes.txt").write_text(english_docs_text()[:4000], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RNNVIZ_THREADS": "1"}  # the checkout under test, from tmp_path

    def run(*args):
        return subprocess.run([sys.executable, "-m", "rnnviz", *args], cwd=tmp_path, capture_output=True, text=True,
                              env=env, timeout=120)

    trained = run("train", "--corpus", "notes.txt", "--kind", "transformer", "--layers", "1", "--hidden", "16",
                  "--n-head", "4", "--block-size", "16", "--batch", "4", "--steps", "4", "--eval-every", "2",
                  "--device", "cpu", "--quiet", "--out", "gpt.pt")
    assert trained.returncode == 0, trained.stderr
    assert "1×16 Transformer (4 heads, context 16)" in trained.stderr and "no carried state" in trained.stderr
    checkpoint = load_checkpoint(tmp_path / "gpt.pt")
    assert isinstance(checkpoint.model, CharTransformer)
    assert (checkpoint.config.block_size, checkpoint.config.seq_len, checkpoint.step) == (16, 16, 4)
    sample = run("sample", "gpt.pt", "--prime", "The", "--length", "30", "--temperature", "0")
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.startswith("The") and len(sample.stdout.rstrip("\n")) == 33


def test_the_cli_says_what_is_wrong_with_a_transformer_shape(capsys):
    assert train_main(["--kind", "transformer", "--hidden", "10", "--n-head", "4", "--steps", "1"]) == 2
    assert "divide evenly into 4" in capsys.readouterr().err
    args = train_parser().parse_args(["--preset", BABY_GPT, "--block-size", "32"])
    assert config_from_args(args)[0].seq_len == 32  # windows fill the context unless --seq-len says otherwise
    args = train_parser().parse_args(["--kind", "transformer", "--hidden", "64", "--seq-len", "128"])
    config = config_from_args(args)[0]
    assert (config.block_size, config.seq_len, config.forget_bias) == (128, 128, None)


def test_cache_select_keeps_rows():
    model = _model()
    ids = torch.randint(0, V, (3, 5))
    _, cache = model.prefill(ids)
    picked = cache.select(torch.tensor([2, 0]))
    assert isinstance(picked, KVCache) and torch.equal(picked.ids, ids[[2, 0]])
    assert all(torch.equal(a, b[[2, 0]]) for a, b in zip(picked.keys, cache.keys))
