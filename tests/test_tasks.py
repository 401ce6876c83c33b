"""Delayed copy: the lecture's example exactly, validation, scoring, and a model that learns it."""

import pytest
import torch

from rnnviz.experiments.tasks import (
    IGNORE,
    CopyTrainConfig,
    DelayedCopy,
    delayed_copy_targets,
    masked_accuracy,
    train_delayed_copy,
)


def test_lecture_example():
    targets = delayed_copy_targets(torch.tensor([[3, 8, 2, 5, 1]]), delay=2)
    assert targets.tolist() == [[IGNORE, IGNORE, 3, 8, 2]]


@pytest.mark.parametrize(("length", "delay"), [(10, 0), (10, 10), (10, 12), (1, 1)])
def test_bad_delays_are_clear_errors(length, delay):
    with pytest.raises(ValueError, match="L"):
        DelayedCopy(alphabet=4, length=length, delay=delay)


def test_accuracy_ignores_unscored_positions():
    targets = torch.tensor([[IGNORE, 1, 2]])
    logits = torch.nn.functional.one_hot(torch.tensor([[0, 1, 0]]), 3).float()
    assert masked_accuracy(logits, targets) == 0.5


def test_lstm_learns_a_short_delay_well_above_chance():
    result = train_delayed_copy(CopyTrainConfig(task=DelayedCopy(4, 12, 1), steps=150, eval_every=50))
    assert result.eval_steps == [50, 100, 150]
    assert result.final_accuracy > 0.9  # chance is 0.25
