"""minGRU: the parallel scan equals the recurrence (outputs and gradients), stepping equals the forward pass,
and the model plugs into the Trainer, sampling, checkpoints and the CLI like the other kinds."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.charlm.checkpoint import export_script, load_checkpoint, resume_trainer, save_checkpoint
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.sample import beam_search, generate
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import CharModel, build_model, carried_nbytes
from rnnviz.core.config import MODEL_KINDS, ModelConfig
from rnnviz.core.mingru import (
    LogSpaceScan,
    MinGRU,
    adjoint_log_space,
    adjoint_loop,
    count_parameters,
    critical_path_scan,
    g,
    log_g,
    mingru_cell,
    scan_log_space,
    scan_sequential,
)
from rnnviz.core.recurrent import KINDS, detach_state

ROOT = Path(__file__).resolve().parents[1]  # the checkout under test

TINY = dict(kind="mingru", hidden=16, embed_dim=8, batch=4, seq_len=16, lr=1e-2, device="cpu", forget_bias=None)


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:6000])


def _loop(x, h0, layer: MinGRU):
    """The recurrence written out from the equations, one layer: z_t = σ(W_z x_t + b_z), h̃_t = g(W_h x_t + b_h)."""
    w, b = layer.layer_params(0)
    hidden = layer.hidden_size
    h, out = h0, []
    for t in range(x.size(1)):
        z = torch.sigmoid(x[:, t] @ w[:hidden].T + b[:hidden])
        a = x[:, t] @ w[hidden:].T + b[hidden:]
        h_tilde = torch.where(a >= 0, a + 0.5, torch.sigmoid(a))
        h = (1 - z) * h + z * h_tilde
        out.append(h)
    return torch.stack(out, dim=1)


# -- the scan ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 2, 5, 33, 200])
@pytest.mark.parametrize("carried", [False, True])
def test_parallel_scan_equals_the_recurrence_on_outputs_and_gradients(length, carried):
    torch.manual_seed(length)
    layer = MinGRU(4, 6).double()
    with torch.no_grad():
        layer.weight_ih_l0.mul_(4.0)  # gates from near 0 to near 1, candidates on both branches of g
    x = torch.randn(3, length, 4, dtype=torch.float64, requires_grad=True)
    h0 = (torch.randn(1, 3, 6, dtype=torch.float64) if carried else torch.zeros(1, 3, 6, dtype=torch.float64))
    h0.requires_grad_()
    weights = torch.randn(3, length, 6, dtype=torch.float64)  # a loss that weighs every h_t differently
    params = [x, h0, layer.weight_ih_l0, layer.bias_ih_l0]

    out, h_n = layer(x, h0)
    reference = _loop(x, h0[0], layer)
    assert_close(out, reference, rtol=1e-12, atol=1e-12)
    assert_close(h_n[0], reference[:, -1], rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad((out * weights).sum() + h_n.sum(), params)
    expected = torch.autograd.grad((reference * weights).sum() + reference[:, -1].sum(), params)
    for got, want in zip(grads, expected):
        assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_scan_functions_agree_and_never_take_log_of_zero():
    k = torch.tensor([[[-60.0, 0.0, 60.0]] * 4], dtype=torch.float64)  # z ≈ 0, ½, 1
    a = torch.tensor([[[-50.0, 0.0, 7.0]] * 4], dtype=torch.float64)
    h0 = torch.tensor([[-2.0, 0.0, 3.0]], dtype=torch.float64)
    assert_close(scan_log_space(k, a, h0), scan_sequential(k, a, h0), rtol=1e-12, atol=1e-15)
    assert torch.isfinite(scan_log_space(k.float(), a.float(), h0.float())).all()
    values = torch.tensor([-80.0, -1.0, 0.0, 1e-9, 2.0], dtype=torch.float64)
    assert_close(g(values), torch.tensor([torch.sigmoid(torch.tensor(-80.0)).item(), 0.2689414213699951,
                                          0.5, 0.5 + 1e-9, 2.5], dtype=torch.float64))
    assert_close(log_g(values), torch.log(g(values)))


@pytest.mark.parametrize("length", [1, 3, 40])
def test_hand_written_backward_equals_autograd_through_the_scan(length):
    torch.manual_seed(10 + length)
    k = (3 * torch.randn(2, length, 5, dtype=torch.float64)).requires_grad_()
    a = (3 * torch.randn(2, length, 5, dtype=torch.float64)).requires_grad_()
    h0 = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(LogSpaceScan.apply, (k, a, h0))
    # a loss on h_T alone: ∂L/∂h_t = 0 for t < T, whose log is −inf inside the backward scan
    for weights in (torch.randn(2, length, 5, dtype=torch.float64), torch.zeros(2, length, 5, dtype=torch.float64)):
        weights[:, -1] = 1.0
        ours = torch.autograd.grad((LogSpaceScan.apply(k, a, h0) * weights).sum(), (k, a, h0))
        ref = torch.autograd.grad((scan_log_space(k, a, h0) * weights).sum(), (k, a, h0))
        for got, want in zip(ours, ref):
            assert torch.isfinite(got).all()
            assert_close(got, want, rtol=1e-9, atol=1e-11)  # λ = λ⁺ − λ⁻ cancels to ~1e-16 · |λ⁺|


def test_the_two_adjoints_agree_and_expanded_gradients_work():
    """λ by the log-space scan (used on an accelerator) equals λ by the loop (used on a CPU)."""
    torch.manual_seed(5)
    k = 3 * torch.randn(3, 30, 4, dtype=torch.float64)
    keep, a_star = torch.sigmoid(-k), torch.cumsum(-F.softplus(k), dim=1)
    for grad in (torch.randn(3, 30, 4, dtype=torch.float64), torch.zeros(3, 30, 4, dtype=torch.float64)):
        grad[:, -1] = 1.0
        assert_close(adjoint_log_space(grad.clone(), keep, a_star), adjoint_loop(grad, keep, a_star),
                     rtol=1e-9, atol=1e-12)
    k, a = k.requires_grad_(), torch.randn(3, 30, 4, dtype=torch.float64, requires_grad=True)
    h0 = torch.zeros(3, 4, dtype=torch.float64)
    ours = torch.autograd.grad(LogSpaceScan.apply(k, a, h0).sum(), (k, a))  # ∂L/∂h arrives expanded (stride 0)
    ref = torch.autograd.grad(scan_sequential(k, a, h0).sum(), (k, a))
    for got, want in zip(ours, ref):
        assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_multi_layer_scan_equals_the_sequential_path_in_float32():
    torch.manual_seed(1)
    stack = MinGRU(5, 8, num_layers=3)
    x, h0 = torch.randn(2, 64, 5), torch.rand(3, 2, 8)
    fast, fast_n = stack(x, h0)
    slow, slow_n = stack(x, h0, parallel=False)
    assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    assert_close(fast_n, slow_n, rtol=1e-5, atol=1e-6)


def test_critical_path_of_the_scan_is_log2_t():
    assert [critical_path_scan(t) for t in (1, 2, 3, 64, 65, 8192)] == [0, 1, 2, 6, 7, 13]


# -- step and trace paths ------------------------------------------------------------------------------------


def test_stepping_one_character_at_a_time_equals_the_forward_pass():
    torch.manual_seed(2)
    model = CharModel(ModelConfig(vocab_size=9, kind="mingru", layers=2, hidden=10, embed_dim=4)).eval()
    idx = torch.randint(0, 9, (3, 12))
    logits, _, state = model(idx)
    stepped, h = [], None
    for t in range(idx.size(1)):
        top, h = model.rnn.step(model.inputs(idx[:, t : t + 1])[:, 0], h)
        stepped.append(model.head(top))
        one, _, _ = model(idx[:, : t + 1])
    assert_close(torch.stack(stepped, dim=1), logits, rtol=1e-5, atol=1e-6)
    assert_close(h, state, rtol=1e-5, atol=1e-6)
    # and through the model's own forward, one character per call with the state carried (as sampling does)
    carried, pieces = None, []
    for t in range(idx.size(1)):
        piece, _, carried = model(idx[:, t : t + 1], state=carried)
        pieces.append(piece)
    assert_close(torch.cat(pieces, dim=1), logits, rtol=1e-5, atol=1e-6)


def test_trace_records_z_and_h_per_layer_and_matches_the_cell():
    torch.manual_seed(3)
    model = CharModel(ModelConfig(vocab_size=7, kind="mingru", layers=2, hidden=6, embed_dim=5))
    idx = torch.randint(0, 7, (2, 9))
    logits, _, state = model(idx)
    trace_logits, trace = model.trace(idx)
    assert trace.kind == "mingru" and set(trace.values) == {"z", "h_tilde", "h"}
    assert trace["z"].shape == trace["h"].shape == (2, 9, 2, 6)  # (L, T, N, H)
    assert_close(trace_logits, logits, rtol=1e-5, atol=1e-6)
    assert_close(trace.final_state, state, rtol=1e-5, atol=1e-6)
    # step t = 4 of layer 1, recomputed from the recorded layer-0 output and h_3 by the cell function
    x_t = trace["h"][0, 4]  # (N, H): layer 0's h_4 is layer 1's input
    step = mingru_cell(x_t, trace["h"][1, 3], *model.rnn.layer_params(1))
    assert_close(step.z_t, trace["z"][1, 4])
    assert_close(step.h_t, trace["h"][1, 4])
    assert ((trace["z"] > 0) & (trace["z"] < 1)).all() and (trace["h_tilde"] > 0).all()


def test_state_is_fixed_size_and_carries_across_chunks():
    model = CharModel(ModelConfig(vocab_size=5, kind="mingru", layers=2, hidden=6))
    idx = torch.randint(0, 5, (2, 20))
    whole, _, _ = model(idx)
    _, _, state = model(idx[:, :7])
    second, _, state = model(idx[:, 7:], state=detach_state(state))
    assert_close(second, whole[:, 7:], rtol=1e-5, atol=1e-6)
    assert state.shape == (2, 2, 6) and carried_nbytes(state) == 2 * 2 * 6 * 4


def chunk_losses_from_the_carried_and_a_zero_state(trainer: Trainer) -> tuple[float, float]:
    """The loss of the trainer's next chunk from the state it carries now, and from h_0 = 0, with the weights as
    they are now: what its next step must report, and what it would report had it dropped the state."""
    batcher, length = trainer.batcher, trainer.batcher.seq_len
    start = batcher.position * length
    x, y = batcher.inputs[:, start : start + length], batcher.targets[:, start : start + length]
    assert trainer.state is not None, "the trainer carries no state into its next chunk"
    with torch.no_grad():
        carried = trainer.model(x, y, trainer.state)[1].item()
        fresh = trainer.model(x, y, None)[1].item()
    return carried, fresh


def test_the_trainer_feeds_chunk_1s_final_state_into_chunk_2():
    config = TrainConfig(kind="mingru", layers=2, hidden=16, embed_dim=8, batch=2, seq_len=12, lr=3e-3,
                         device="cpu", seed=0)
    trainer = Trainer(config, Corpus("docs", english_docs_text()[:3000]))
    for _ in range(3):
        trainer.run(1)
        carried, fresh = chunk_losses_from_the_carried_and_a_zero_state(trainer)
        trainer.run(1)
        assert trainer.history[-1].loss == pytest.approx(carried, abs=1e-6)
        assert abs(carried - fresh) > 1e-4, "the carried state must change the loss, or this test shows nothing"


def test_bad_state_is_a_clear_error():
    model = CharModel(ModelConfig(vocab_size=5, kind="mingru", hidden=6))
    with pytest.raises(ValueError, match="h_0 of shape"):
        model(torch.zeros(2, 3, dtype=torch.long), state=torch.zeros(1, 3, 6))
    with pytest.raises(ValueError, match="h_0 of shape"):
        model(torch.zeros(2, 3, dtype=torch.long), state=(torch.zeros(1, 2, 6), torch.zeros(1, 2, 6)))


# -- the model interface ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("embedding", [True, False])
def test_parameter_count_equals_sum_of_numel(embedding):
    config = ModelConfig(vocab_size=11, kind="mingru", layers=3, hidden=16, embed_dim=8, embedding=embedding)
    model = build_model(config)
    assert isinstance(model, CharModel) and isinstance(model.rnn, MinGRU)
    assert model.num_parameters() == sum(p.numel() for p in model.parameters())
    assert model.num_parameters() == count_parameters(11, 3, 16, 8 if embedding else None)
    names = {name for name, _ in model.named_parameters()}
    assert "rnn.weight_ih_l2" in names and not any("weight_hh" in n for n in names)  # the gates never read h


def test_kind_is_a_model_kind_but_not_a_torch_cell_kind():
    assert "mingru" in MODEL_KINDS and "mingru" not in KINDS  # the explorer and gate pages list torch's cells
    assert ModelConfig(vocab_size=4, kind="mingru").carries_state
    assert TrainConfig(kind="mingru").carries_state
    assert "1 × 256 minGRU" in TrainConfig(kind="mingru").describe()
    assert "h_t carries into the next chunk" in TrainConfig(kind="mingru").describe()


def test_trainer_loss_falls_and_the_state_carries(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    trainer.run(40)
    losses = [r.loss for r in trainer.history]
    assert trainer.halt is None and len(losses) == 40
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3
    assert trainer.state.shape == (1, 4, 16) and not trainer.state.requires_grad
    assert trainer.evaluate().val_loss < losses[0]


def test_sampling_uses_only_the_vocabulary(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    trainer.run(10)
    vocab = trainer.vocab
    text = generate(trainer.model, vocab, "The ", 200, temperature=1.0, seed=3)
    assert len(text) == 200 and set(text) <= set(vocab.chars)
    assert generate(trainer.model, vocab, "The ", 50, temperature=1.0, seed=3) == text[:50]
    beams = beam_search(trainer.model, vocab, "The", 12, beam_width=3)
    assert len(beams) == 3 and all(set(b.text) <= set(vocab.chars) for b in beams)
    # greedy sampling picks the argmax of the forward pass over prime + text, character after character
    greedy = generate(trainer.model, vocab, "The ", 20, temperature=0)
    logits = trainer.model(vocab.encode("The " + greedy).view(1, -1))[0][0]
    assert vocab.decode(logits[3:-1].argmax(-1).tolist()) == greedy


def test_checkpoint_round_trip_and_resume(corpus, tmp_path):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    trainer.run(6)
    path = save_checkpoint(tmp_path / "m.pt", trainer)
    checkpoint = load_checkpoint(path)
    assert checkpoint.config == trainer.config and checkpoint.config.kind == "mingru"
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(checkpoint.model.state_dict()[name], value), name
    resumed = resume_trainer(checkpoint, corpus)
    assert torch.equal(resumed.state, trainer.state)  # the carried h_T travels in the file
    trainer.run(3)
    resumed.run(3)
    assert [r.loss for r in resumed.history[-3:]] == [r.loss for r in trainer.history[-3:]]
    with pytest.raises(ValueError, match="minGRU"):
        export_script(trainer.config, trainer.vocab)
    with pytest.raises(Exception, match="minGRU; only RNN, LSTM, GRU"):
        load_checkpoint(path, kinds=KINDS)


def test_dropout_applies_between_layers_in_training_only():
    torch.manual_seed(4)
    model = CharModel(ModelConfig(vocab_size=6, kind="mingru", layers=2, hidden=8, dropout=0.5))
    idx = torch.randint(0, 6, (2, 10))
    model.train()
    assert not torch.equal(model(idx)[0], model(idx)[0])
    model.eval()
    assert torch.equal(model(idx)[0], model(idx)[0])
    assert_close(model(idx)[0], model.trace(idx)[0], rtol=1e-5, atol=1e-6)
    assert F.softmax(model(idx)[0], -1).sum(-1).allclose(torch.ones(2, 10))


def test_the_preset_reaches_the_cli_and_the_live_menu():
    from rnnviz.charlm.presets import ALL_PRESETS, MINGRU_PRESET, PRESETS
    from rnnviz.cli import config_from_args, train_parser
    from rnnviz.ui.live_training.setup import LIVE_PRESETS

    assert MINGRU_PRESET in ALL_PRESETS and MINGRU_PRESET not in PRESETS  # PRESETS: the recurrent kinds of torch
    assert LIVE_PRESETS[MINGRU_PRESET] is ALL_PRESETS[MINGRU_PRESET]
    config, corpus = config_from_args(train_parser().parse_args(["--preset", MINGRU_PRESET]))
    assert config == ALL_PRESETS[MINGRU_PRESET].config and config.kind == "mingru" and corpus == "tiny-shakespeare"


def test_cli_train_then_sample(tmp_path):
    (tmp_path / "notes.txt").write_text(english_docs_text()[:4000], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RNNVIZ_THREADS": "1"}  # the checkout under test, from tmp_path
    run = subprocess.run(
        [sys.executable, "-m", "rnnviz", "train", "--corpus", "notes.txt", "--kind", "mingru", "--hidden", "16",
         "--embed-dim", "8", "--batch", "4", "--seq-len", "16", "--steps", "6", "--eval-every", "3", "--device",
         "cpu", "--quiet", "--out", "m.pt"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "1×16 minGRU" in run.stderr and "saved m.pt" in run.stderr
    assert load_checkpoint(tmp_path / "m.pt").config.kind == "mingru"
    sample = subprocess.run([sys.executable, "-m", "rnnviz", "sample", "m.pt", "--prime", "The", "--length", "30",
                             "--temperature", "0"], cwd=tmp_path, capture_output=True, text=True, env=env,
                            timeout=120)
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.startswith("The") and len(sample.stdout.rstrip("\n")) == 33


def test_an_intervention_clamps_the_mingru_state_as_a_hand_written_loop_does():
    from rnnviz.charlm.corpus import Vocab
    from rnnviz.charlm.sample import Intervention

    vocab = Vocab.from_text("abcdefgh ")
    torch.manual_seed(3)
    model = CharModel(ModelConfig(vocab_size=vocab.size, kind="mingru", layers=2, hidden=8, embed_dim=4)).eval()
    held = generate(model, vocab, "abc", 12, temperature=0, interventions=[Intervention(layer=1, unit=2, value=0.7)])
    # the reference: every layer through mingru_cell, h_t[layer 1, unit 2] ← 0.7 after every step, greedy
    h = [torch.zeros(1, 8), torch.zeros(1, 8)]
    ids = vocab.encode("abc").tolist()
    with torch.no_grad():
        for t in range(3 + 12 - 1):
            x = model.inputs(torch.tensor([[ids[t]]]))[:, 0]
            for layer in range(2):
                h[layer] = mingru_cell(x, h[layer], *model.rnn.layer_params(layer)).h_t.clone()
                if layer == 1:
                    h[layer][:, 2] = 0.7
                x = h[layer]
            if t >= 2:
                ids.append(int(model.head(x).argmax()))
    assert held == vocab.decode(ids[3:])
