"""Trainer: losses and gradient norms against plain torch, TBPTT state, exact resume, halting, presets, CLI."""

import copy
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.charlm.corpus import BUILTIN_CORPORA, Corpus, english_docs_text, load_builtin
from rnnviz.charlm.presets import PRESETS
from rnnviz.charlm.train import TrainConfig, Trainer, sequence_loss
from rnnviz.cli import sample_main, train_main, train_parser
from rnnviz.core.charmodel import CharModel

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu")


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


def _weights(trainer):
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


def test_a_tiny_lstm_overfits_hello():
    trainer = Trainer(TrainConfig(hidden=16, embed_dim=8, lr=0.03, batch=1, seq_len=4, device="cpu"),
                      load_builtin("hello"))
    records = trainer.run(150)
    assert records[0].loss == pytest.approx(math.log(4), abs=0.3)  # near uniform over {h, e, l, o}
    assert records[-1].loss < 0.02
    val = trainer.evaluate()
    assert val.val_loss < 0.02 and val.chars == 4
    assert val.bits_per_char == pytest.approx(val.val_loss / math.log(2))


def test_step_loss_and_grad_norm_match_plain_torch(corpus):
    trainer = Trainer(TrainConfig(optimizer="sgd", lr=0.1, clip=0.05, **TINY), corpus)
    reference = copy.deepcopy(trainer.model)
    x, y = trainer.batcher.inputs[:, :8], trainer.batcher.targets[:, :8]
    logits, _, _ = reference(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    loss.backward()
    norm = torch.sqrt(sum((p.grad**2).sum() for p in reference.parameters()))
    record = trainer.run(1)[0]
    assert record.loss == pytest.approx(loss.item(), rel=1e-6)
    assert record.grad_norm == pytest.approx(norm.item(), rel=1e-5)
    # SGD's first step with momentum is p ← p − lr·g·min(1, θ/‖g‖): clipping was applied.
    scale = min(1.0, 0.05 / norm.item())
    for (name, before), after in zip(reference.named_parameters(), trainer.model.parameters()):
        assert_close(after, before - 0.1 * before.grad * scale, msg=name)


@pytest.mark.parametrize("reset_state", [False, True])
def test_state_carries_across_chunks_unless_reset(corpus, reset_state):
    trainer = Trainer(TrainConfig(reset_state=reset_state, **TINY), corpus)
    x0 = trainer.batcher.inputs[:, :8]
    x1, y1 = trainer.batcher.inputs[:, 8:16], trainer.batcher.targets[:, 8:16]
    with torch.no_grad():
        _, _, carried = trainer.model(x0)  # the state chunk 0 ends in, under the weights before step 1
    trainer.run(1)
    with torch.no_grad():
        _, expected, _ = trainer.model(x1, y1, None if reset_state else carried)
    assert trainer.run(1)[0].loss == pytest.approx(expected.item(), rel=1e-6)


def test_sequence_loss_scores_every_character_once():
    model = CharModel(TrainConfig(**TINY).model_config(7))
    ids = torch.randint(0, 7, (1000,))
    loss, chars = sequence_loss(model, ids, streams=3, seq_len=50)
    assert chars == 999
    # By hand: three streams of 333 predictions, each read in one pass from a zero state.
    total = 0.0
    with torch.no_grad():
        for s in range(3):
            x, y = ids[s * 333 : (s + 1) * 333], ids[s * 333 + 1 : (s + 1) * 333 + 1]
            logits, _, _ = model(x.view(1, -1))
            total += F.cross_entropy(logits[0], y, reduction="sum").item()
    assert loss == pytest.approx(total / 999, rel=1e-5)


def test_resume_is_bit_identical(corpus):
    config = TrainConfig(layers=2, dropout=0.3, lr_decay_steps=10, **TINY)
    whole = Trainer(config, corpus)
    whole.run(12)
    first = Trainer(config, corpus)
    first.run(5)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(123)  # the global random state must not matter
    resumed = Trainer(config, corpus)
    resumed.load_state_dict(torch.load(buffer, weights_only=True, map_location="cpu"))
    resumed.run(7)
    for name, value in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    assert [r.loss for r in resumed.history] == [r.loss for r in whole.history]


def test_resume_refuses_another_shape(corpus):
    state = Trainer(TrainConfig(**TINY), corpus).state_dict()
    with pytest.raises(ValueError, match="hidden"):
        Trainer(TrainConfig(**{**TINY, "hidden": 10}), corpus).load_state_dict(state)


def test_non_finite_loss_restores_the_last_good_weights(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    initial = _weights(trainer)
    trainer.run(3)
    with torch.no_grad():
        trainer.model.head.bias[0] = float("nan")
    records = trainer.run(5)
    assert records == [] and trainer.step == 3
    assert trainer.halt.step == 4 and trainer.halt.restored_step == 0
    assert "not a finite number" in trainer.halt.reason
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(value, initial[name]), name
    assert len(trainer.run(2)) == 2 and trainer.halt is None  # it can go on from there


def test_exploding_loss_halts_with_advice(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    trainer.run(2)
    with torch.no_grad():
        trainer.model.head.weight.mul_(1e4)
    trainer.run(3)
    assert "loss exploded" in trainer.halt.reason and "lower learning rate" in trainer.halt.reason


def test_non_finite_gradient_skips_the_step(corpus):
    trainer = Trainer(TrainConfig(clip=None, **TINY), corpus)
    trainer.run(2)
    before = _weights(trainer)
    trainer.model.head.bias.register_hook(lambda g: g * float("inf"))
    assert trainer.run(3) == []
    assert "gradient is not finite" in trainer.halt.reason and trainer.halt.restored_step == 2
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(value, before[name]), name


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop", "sgd", "adagrad"])
def test_every_optimizer_lowers_the_loss(corpus, optimizer):
    lr = {"adam": 0.01, "rmsprop": 0.003, "sgd": 0.5, "adagrad": 0.05}[optimizer]
    trainer = Trainer(TrainConfig(optimizer=optimizer, lr=lr, **TINY), corpus)
    before = trainer.evaluate().val_loss
    trainer.run(40)
    assert trainer.evaluate().val_loss < before - 0.3


@pytest.mark.parametrize("kind", ["rnn", "gru"])
def test_other_kinds_and_one_hot_input_train(corpus, kind):
    trainer = Trainer(TrainConfig(kind=kind, embedding=False, forget_bias=None, lr=0.01, **TINY), corpus)
    trainer.run(30)
    assert trainer.history[-1].loss < trainer.history[0].loss - 0.5
    assert trainer.model.embed is None


def test_cosine_schedule_by_hand():
    config = TrainConfig(lr=0.01, lr_decay_steps=100, lr_floor=0.1)
    assert config.lr_at(0) == pytest.approx(0.01)
    assert config.lr_at(50) == pytest.approx(0.01 * (0.1 + 0.9 * 0.5))
    assert config.lr_at(100) == config.lr_at(500) == pytest.approx(0.001)
    assert TrainConfig(lr=0.01).lr_at(10_000) == 0.01


def test_records_and_page_facts(corpus):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    seen = []
    trainer.run(4, on_step=seen.append)
    assert [r.step for r in seen] == [1, 2, 3, 4] == [r.step for r in trainer.history]
    assert all(r.chars_per_s > 0 and r.grad_norm > 0 for r in seen)
    assert seen[-1].seconds == pytest.approx(trainer.seconds)
    assert trainer.num_parameters == sum(p.numel() for p in trainer.model.parameters())
    assert trainer.chars_seen == 4 * 4 * 8 and trainer.vocab is corpus.vocab
    assert len(trainer.run(1000, max_seconds=0.0)) == 1  # a time budget stops after the step in flight


def test_config_validation_and_round_trip():
    config = TrainConfig(kind="gru", clip=None, lr_decay_steps=7)
    assert TrainConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown"):
        TrainConfig.from_dict({**config.to_dict(), "colour": "red"})
    for bad in [dict(kind="cnn"), dict(optimizer="lbfgs"), dict(lr=0), dict(clip=-1), dict(dropout=1.0)]:
        with pytest.raises(ValueError):
            TrainConfig(**bad)


def test_presets_are_valid():
    assert "Shakespeare (3 min)" in PRESETS and "Quick demo (30 s)" in PRESETS
    for preset in PRESETS.values():
        assert preset.corpus in BUILTIN_CORPORA and preset.minutes > 0
        assert isinstance(preset.config, TrainConfig)


@pytest.mark.parametrize(("cli", "option"), [(train_main, "--minutes"), (sample_main, "--temperature")])
def test_cli_help(capsys, cli, option):
    with pytest.raises(SystemExit) as exit_info:
        cli(["--help"])
    assert exit_info.value.code == 0
    assert option in capsys.readouterr().out
    assert train_parser().parse_args(["--clip", "0"]).clip == 0


def _cli_env():
    return {**os.environ, "RNNVIZ_THREADS": "1", "PYTHONPATH": str(ROOT)}


def test_train_cli_tiny_run_then_sample(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text(english_docs_text()[:4000])
    out = tmp_path / "m.pt"
    run = subprocess.run(
        [sys.executable, "-m", "rnnviz", "train", "--corpus", str(text), "--hidden", "16", "--embed-dim", "8",
         "--batch", "4", "--seq-len", "16", "--steps", "6", "--eval-every", "3", "--device", "cpu", "--out", str(out)],
        capture_output=True, text=True, env=_cli_env(), timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "step 3: val" in run.stderr and "final val loss" in run.stderr and out.exists()
    assert sample_main([str(out), "--prime", "The", "--length", "40", "--temperature", "0"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("The") and len(printed.rstrip("\n")) >= 43
    assert sample_main([str(out), "--prime", "The", "--length", "5", "--beam", "3"]) == 0
    assert capsys.readouterr().out.count("--- beam") == 3
    assert sample_main([str(out), "--prime", "Ω"]) == 2
    assert "not in the model's vocabulary" in capsys.readouterr().err


def test_ctrl_c_saves_the_checkpoint(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(english_docs_text()[:4000])
    out = tmp_path / "m.pt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rnnviz", "train", "--corpus", str(text), "--hidden", "16", "--batch", "4",
         "--seq-len", "16", "--steps", "1000000", "--device", "cpu", "--out", str(out), "--quiet"],
        stderr=subprocess.PIPE, text=True, env=_cli_env(), cwd=tmp_path,
    )  # fmt: skip
    assert "parameters" in proc.stderr.readline()  # the header is printed just before training starts
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and out.exists()

    from rnnviz.charlm.checkpoint import load_checkpoint

    assert load_checkpoint(out).step > 0
