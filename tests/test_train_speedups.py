"""The tools of issue 22 (faster to good text): the time-to-words score and the sweep's bench-only options.

No timing here: the figures themselves are measured in bench/time_to_words.py and bench/shakespeare_sweep.py.
"""

from __future__ import annotations

import math

import pytest
import torch

from bench.shakespeare_sweep import VARIANTS, Contender, Variant
from bench.time_to_words import tokens, word_share
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import ALL_PRESETS, DEFAULT_PRESET

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
                    variant.beta2, variant.ema)
    return Contender(small, Corpus("t", TEXT), budget)


def test_the_control_is_the_preset_itself():
    c = Contender(VARIANTS["preset"], Corpus("t", TEXT), 60.0)
    assert c.config == ALL_PRESETS[DEFAULT_PRESET].config


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
