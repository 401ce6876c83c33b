"""Warmup–stable–decay's cool-down, taken on a copy when a run stops (issue 37).

A run at a constant ("stable") learning rate keeps its weights bouncing across the floor of the loss valley: good
for going on, noisy to read. Letting the rate fall to 0 over a short last stretch settles them, and a run cooled
for the last 20% of its time matches one that followed a cosine tuned for that time (Hägele et al. 2024, "Scaling
Laws and Compute-Optimal Training Beyond Fixed Training Durations"). A run does not know when a class will stop it,
so the cool-down happens then, on a branch: a copy of the run (weights, optimizer state, data position, carried
state, random state) trains K more steps at

    lr_k = lr_s · (1 − k/K),   k = 0 … K − 1,

where lr_s is the run's learning rate at the step it stopped at. The run itself is not touched: Start goes on from
its own weights and optimizer state, and the next stop cools a new branch.

K is the steps of ``cool_down_seconds(t)`` at the run's recent speed, for a run that has trained t seconds: t/4
(so that the cool-down is 20% of the cooled copy's t + t/4 seconds), at most MAX_COOL_SECONDS, which a class waits
for. bench/anytime.py raced this against the presets on one clock: the cooled copy, ready at t + d, against every
other run at t + d.

No streamlit here: rnnviz.serving.live.LiveRun keeps the branch and trains it a chunk at a time.
"""

from __future__ import annotations

import math

from rnnviz.charlm.train import COOL_SHARE, StepRecord, Trainer

MAX_COOL_SECONDS = 30.0  # a cool-down a class waits for after Pause; longer runs cool a smaller share


def cool_down_seconds(trained_seconds: float) -> float:
    """How long a run that has trained ``trained_seconds`` cools down: a share COOL_SHARE of the cooled copy's
    seconds, d = t · s/(1 − s) = t/4, at most MAX_COOL_SECONDS."""
    if not trained_seconds > 0:
        return 0.0
    return min(trained_seconds * COOL_SHARE / (1 - COOL_SHARE), MAX_COOL_SECONDS)


def cool_down_steps(trainer: Trainer) -> int:
    """The steps of ``cool_down_seconds`` at the run's recent speed (its median of the last 20 steps); at least 1."""
    steps_per_s = trainer.chars_per_second / trainer.chars_per_step
    if not (steps_per_s > 0 and math.isfinite(steps_per_s)):
        return 1
    return max(1, round(cool_down_seconds(trainer.seconds) * steps_per_s))


class CoolingTrainer(Trainer):
    """A branch of ``run`` that trains ``steps`` more steps with its learning rate falling linearly from the run's
    (at the step it was taken) to 0. It never widens: a run that grows keeps the width it had when it stopped.

    ``from_step`` is the run's step when the branch was taken, ``steps`` its length, ``start_lr`` lr_s."""

    def __init__(self, run: Trainer, steps: int):
        if steps < 1:
            raise ValueError(f"a cool-down takes at least 1 step, not {steps}")
        own_vocab = run.vocab is run.corpus.vocab
        super().__init__(run.config, run.corpus, vocab=None if own_vocab else run.vocab)
        self.load_state_dict(run.state_dict())  # a deep copy: nothing of the branch is shared with the run
        self.from_step, self.steps = run.step, steps
        self.start_lr = run.lr_at(run.step)

    def lr_at(self, step: int) -> float:
        return self.start_lr * max(0.0, 1.0 - (step - self.from_step) / self.steps)

    def widens_now(self) -> bool:
        return False

    @property
    def steps_left(self) -> int:
        return max(0, self.from_step + self.steps - self.step)

    @property
    def done(self) -> bool:
        return self.steps_left == 0

    def cool(self, max_seconds: float | None = None) -> list[StepRecord]:
        """Up to the steps left, or fewer once ``max_seconds`` have passed (at least one)."""
        return self.run(self.steps_left, max_seconds=max_seconds) if self.steps_left else []
