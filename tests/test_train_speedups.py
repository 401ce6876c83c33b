"""The tools of issue 22 (faster to good text): the time-to-words score, the sweep's bench-only options, bfloat16
mixed precision and the cores' share per training.

No timing here: the figures themselves are measured in bench/time_to_words.py and bench/shakespeare_sweep.py.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest
import torch

from bench.shakespeare_sweep import BASE, SHIPPED, VARIANTS, Contender, Variant
from bench.time_to_words import tokens, word_share
from rnnviz.charlm import train as train_module
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.presets import ALL_PRESETS, SHAKESPEARE_3_MIN
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core import runtime
from rnnviz.core.runtime import share_cores
from rnnviz.serving.slots import TrainingSlots

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
        "First Citizen:\nYou are all resolved rather to die than to famish?\n") * 40


def test_tokens_strip_punctuation_at_both_ends_and_lower_case():
    assert tokens("Romeo, 'tis o'er--  ill-favour'd! -- :\nKING") == ["romeo", "tis", "o'er", "ill-favour'd", "king"]


def test_word_share_counts_tokens_found_in_the_corpus_words():
    words = set(tokens(TEXT))
    share, n = word_share("Speak, SPEAK! zqx before: -- famishh", words)
    assert n == 5 and share == pytest.approx(3 / 5)  # speak, speak, before are words; zqx, famishh are not
    assert word_share(" -- ?! ", words) == (0.0, 0)


def _contender(variant: Variant, budget: float = 60.0) -> Contender:
    small = Variant({"hidden": 16, "embed_dim": 8, "batch": 4, "seq_len": 8, **variant.changes}, variant.fit,
                    variant.beta2, variant.ema, variant.grow)
    return Contender(small, Corpus("t", TEXT), budget)


def test_the_control_is_the_preset_the_sweep_began_with_and_the_shipped_row_is_todays_preset():
    c = Contender(VARIANTS["preset"], Corpus("t", TEXT), 60.0)
    assert c.config == BASE and c.config.hidden == 256 and c.config.lr_decay_steps == 2500
    shipped = Contender(VARIANTS[SHIPPED], Corpus("t", TEXT), 60.0)
    # issue 37 moved the preset from Adam to AdamW (bench/anytime.py); the sweep's row is the rest of it
    assert shipped.config == replace(ALL_PRESETS[SHAKESPEARE_3_MIN].config, optimizer="adam")
    assert ALL_PRESETS[SHAKESPEARE_3_MIN].config.optimizer == "adamw"


def test_beta2_is_set_on_every_parameter_group():
    c = _contender(Variant(beta2=0.99))
    assert all(g["betas"] == (0.9, 0.99) for g in c.trainer.optimizer.param_groups)


def test_fit_sets_the_decay_to_the_steps_the_budget_holds_at_the_speed_so_far():
    c = _contender(Variant(fit=True), budget=60.0)
    c.run(25)
    c.trainer.seconds = 2.0  # pretend 25 steps took 2 s: 60 s hold 750
    c.run(1)
    assert c.trainer.config.lr_decay_steps == 750
    assert c.trainer.history[-1].lr == pytest.approx(c.trainer.config.lr_at(25))


def test_ema_is_the_average_of_the_weights_after_every_step_and_only_evaluation_uses_it():
    d = 0.9
    c = _contender(Variant(ema=d))
    params = list(c.trainer.model.parameters())
    expected = [p.detach().clone() for p in params]
    for _ in range(3):
        c.run(1)
        expected = [d * e + (1 - d) * p.detach() for e, p in zip(expected, params)]
    for e, a in zip(expected, c.ema):
        torch.testing.assert_close(a, e)
    trained = [p.detach().clone() for p in params]
    record = c.evaluate(200)
    for p, t in zip(params, trained):  # the trained weights are back
        assert torch.equal(p, t)
    # the val loss is that of the averaged weights
    with torch.no_grad():
        for p, e in zip(params, expected):
            p.copy_(e)
    assert math.isclose(record.val_loss, c.trainer.evaluate(200).val_loss, rel_tol=1e-6)


# --- bfloat16 mixed precision and the cores' share (issue 22) -----------------------------------------------

TINY_LSTM = dict(hidden=16, embed_dim=8, batch=4, seq_len=8, device="cpu", lr=1e-2)


def cpu_runs_a_bf16_lstm() -> bool:
    """Whether torch's oneDNN can run an LSTM under bfloat16 autocast on this CPU (it cannot without AVX-512:
    "could not create a primitive descriptor for the LSTM forward propagation primitive")."""
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.LSTM(4, 4)(torch.zeros(2, 1, 4))
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not cpu_runs_a_bf16_lstm(), reason="this CPU's oneDNN has no bfloat16 LSTM (no AVX-512)")
def test_a_bf16_step_is_torch_autocast_of_the_same_forward_with_float32_weights_and_state():
    corpus = Corpus("t", TEXT)
    trainer = Trainer(TrainConfig(precision="bf16", **TINY_LSTM), corpus)
    reference = copy.deepcopy(trainer.model)
    x, y = trainer.batcher.inputs[:, :8], trainer.batcher.targets[:, :8]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, expected, _ = reference(x, y)
    _, in_fp32, _ = reference(x, y)
    record = trainer.run(1)[0]
    assert record.loss == pytest.approx(expected.item(), rel=1e-6)
    assert record.loss != in_fp32.item()  # the forward really ran in bfloat16
    assert record.loss == pytest.approx(in_fp32.item(), abs=0.05)  # …and agrees with fp32 to bf16's precision
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert all(v.dtype == torch.float32 for s in trainer.optimizer.state.values() for v in s.values()
               if torch.is_tensor(v) and v.is_floating_point())
    assert all(s.dtype == torch.float32 for s in trainer.state)  # torch's LSTM returned h, c in bfloat16
    before = trainer.evaluate(300).val_loss
    trainer.run(60)
    assert trainer.evaluate(300).val_loss < before - 0.5  # it learns; evaluation is the float32 model's


def test_precision_auto_follows_the_hardware_and_only_torch_cells_use_bf16(monkeypatch):
    corpus = Corpus("t", TEXT)
    monkeypatch.setattr(train_module, "has_native_bf16", lambda device: True)
    assert Trainer(TrainConfig(precision="auto", **TINY_LSTM), corpus).bf16
    assert not Trainer(TrainConfig(precision="fp32", **TINY_LSTM), corpus).bf16
    assert not Trainer(TrainConfig(kind="mingru", precision="auto", **TINY_LSTM), corpus).bf16
    monkeypatch.setattr(train_module, "has_native_bf16", lambda device: False)
    assert not Trainer(TrainConfig(precision="auto", **TINY_LSTM), corpus).bf16
    assert Trainer(TrainConfig(precision="bf16", **TINY_LSTM), corpus).bf16  # asked for: emulated, but used


def test_precision_is_validated_and_older_configs_without_it_load():
    with pytest.raises(ValueError, match="precision must be one of"):
        TrainConfig(precision="fp16")
    with pytest.raises(ValueError, match="RNN, LSTM and GRU"):
        TrainConfig(kind="mingru", precision="bf16")
    saved = TrainConfig(precision="auto").to_dict()
    del saved["precision"]  # a checkpoint written before the field existed
    assert TrainConfig.from_dict(saved).precision == "fp32"


def test_share_cores_gives_each_training_its_share_of_the_threads_and_page_runs_keep_it(monkeypatch):
    monkeypatch.setenv("RNNVIZ_THREADS", "4")
    before = torch.get_num_threads()
    try:
        assert share_cores(1) == 4 and torch.get_num_threads() == 4
        assert share_cores(2) == 2 and torch.get_num_threads() == 2
        assert runtime.configure_cpu() == 2  # a page's run (app.py) keeps the share instead of undoing it
        assert share_cores(3) == 1 and share_cores(9) == 1 and torch.get_num_threads() == 1
        assert share_cores(0) == 4 and runtime.configure_cpu() == 4  # nobody trains: the whole machine again
    finally:
        share_cores(0)
        torch.set_num_threads(before)


def test_training_slots_tell_the_thread_split_whenever_the_number_of_trainings_changes():
    heard, now = [], [0.0]
    slots = TrainingSlots(2, lease_seconds=10, clock=lambda: now[0], on_change=heard.append)
    assert slots.acquire("a") and slots.acquire("a") and heard == [1]  # a renewed lease is no change
    assert slots.acquire("b") and heard == [1, 2]
    assert not slots.acquire("c") and heard == [1, 2]  # a queued owner trains nothing
    slots.release("a")
    assert heard == [1, 2, 1]
    assert slots.acquire("c") and heard == [1, 2, 1, 2]
    now[0] = 30.0  # both leases expire: their tabs are gone
    assert slots.busy == 0 and heard == [1, 2, 1, 2, 0]


def test_has_native_bf16_reads_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(runtime, "_cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    assert runtime.has_native_bf16("cpu")
    monkeypatch.setattr(runtime, "_cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert not runtime.has_native_bf16("cpu")


def test_the_live_estimate_counts_the_speed_of_bfloat16():
    from rnnviz.charlm.speed import BF16_SPEEDUP, estimate_chars_per_second

    fp32 = TrainConfig(hidden=448)
    bf16 = TrainConfig(hidden=448, precision="bf16")
    ratio = estimate_chars_per_second(bf16, 65, 1e11) / estimate_chars_per_second(fp32, 65, 1e11)
    assert 1.2 < ratio < BF16_SPEEDUP  # the matmuls speed up; the per-step and per-time-step costs do not


def test_grow_switches_to_the_larger_batch_after_its_share_of_the_budget_and_counts_every_character():
    c = _contender(Variant(grow=(0.5, 8)), budget=10.0)  # B 4 until 5 s of training, then B 8
    c.run(3)
    assert c.trainer.batcher.batch == 4 and c.chars_seen == 3 * 4 * 8
    c.trainer.seconds = 5.0  # its clock passes half the budget
    c.run(2)
    assert c.trainer.batcher.batch == 8 and c.trainer.batcher.inputs.shape[0] == 8
    assert c.chars_seen == 3 * 4 * 8 + 2 * 8 * 8
    assert c.trainer.state[0].shape[1] == 8  # the carried state restarted at the new width
