"""Synthetic memory tasks: delayed copy, and a trainer for it with full or truncated BPTT.

Delayed copy: at step t the target is the input from D steps back, y_t = x_{t−D}. For input
[3, 8, 2, 5, 1] and D = 2 the scored targets are [3, 8, 2] at positions 2, 3, 4; positions before D have
nothing to copy and carry the ignore index, which ``F.cross_entropy`` skips.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.core.recurrent import detach_state

IGNORE = -100  # F.cross_entropy's default ignore_index: positions that are not scored


@dataclass(frozen=True)
class DelayedCopy:
    """The task's shape; validated on construction with messages a page can show as they are."""

    alphabet: int = 8  # symbols 0…alphabet−1; chance accuracy is 1/alphabet
    length: int = 96  # L, steps per sequence
    delay: int = 8  # D, how far back the target lies, 0 < D < L

    def __post_init__(self):
        if self.alphabet < 2:
            raise ValueError(f"The alphabet needs at least 2 symbols (got {self.alphabet}).")
        if self.length < 2:
            raise ValueError(f"The sequence length L must be at least 2 (got {self.length}).")
        if not 0 < self.delay < self.length:
            raise ValueError(
                f"The delay D must be between 1 and L − 1 = {self.length - 1} (got D = {self.delay}, "
                f"L = {self.length}): with D ≥ L there is nothing left to copy."
            )

    @property
    def chance(self) -> float:
        """Accuracy of guessing uniformly."""
        return 1.0 / self.alphabet


def delayed_copy_targets(inputs: Tensor, delay: int) -> Tensor:
    """y_t = x_{t−D} for t ≥ D, IGNORE before. (N, L) → (N, L)."""
    targets = torch.full_like(inputs, IGNORE)
    targets[:, delay:] = inputs[:, :-delay]
    return targets


def delayed_copy_batch(task: DelayedCopy, batch: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random inputs (N, L) with their delayed-copy targets (N, L)."""
    inputs = torch.randint(0, task.alphabet, (batch, task.length), generator=generator)
    return inputs, delayed_copy_targets(inputs, task.delay)


def masked_accuracy(logits: Tensor, targets: Tensor) -> float:
    """Share of scored positions (targets ≠ IGNORE) where the argmax equals the target."""
    scored = targets != IGNORE
    correct = (logits.argmax(-1) == targets) & scored
    return correct.sum().item() / max(1, scored.sum().item())


@dataclass(frozen=True)
class CopyTrainConfig:
    """One delayed-copy training run; frozen so it can key a cache."""

    task: DelayedCopy = DelayedCopy()
    kind: str = "lstm"  # "rnn", "lstm" or "gru"
    hidden: int = 32  # H
    embed_dim: int = 16  # E
    steps: int = 300  # optimizer steps (each over one batch of whole sequences)
    batch: int = 32  # N
    lr: float = 1e-2  # Adam
    chunk: int | None = None  # truncated BPTT chunk length K; None is full BPTT over L
    clip: float | None = 1.0  # gradient-norm clipping θ; None for off
    eval_batch: int = 256  # size of the fixed held-out set
    eval_every: int = 25  # steps between evaluations
    seed: int = 0
    forget_bias: float | None = None  # LSTM only: the forget gate's total bias b_f at init; None keeps torch's

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            vocab_size=self.task.alphabet, kind=self.kind, hidden=self.hidden, embed_dim=self.embed_dim,
            forget_bias=self.forget_bias if self.kind == "lstm" else None,
        )


@dataclass
class CopyResult:
    """What a run measured: evaluation accuracy over training, and the final model."""

    config: CopyTrainConfig
    eval_steps: list[int]
    eval_accuracy: list[float]
    train_loss: list[float]
    model: CharModel

    @property
    def final_accuracy(self) -> float:
        return self.eval_accuracy[-1]


def evaluation_set(task: DelayedCopy, size: int, seed: int) -> tuple[Tensor, Tensor]:
    """A fixed held-out set, drawn from its own generator so training never sees it."""
    gen = torch.Generator().manual_seed(10_000_019 + seed)
    return delayed_copy_batch(task, size, gen)


def train_delayed_copy(
    config: CopyTrainConfig, on_step: Callable[[int, float], None] | None = None
) -> CopyResult:
    """Train a CharModel on delayed copy; with ``chunk`` = K the sequence is cut into K-step chunks.

    Truncated BPTT: the state crosses each chunk boundary (detached), the gradient does not. Each chunk
    is its own optimizer step, so every run sees the same number of characters whatever K is.
    ``on_step(step, loss)`` is called after every optimizer step.
    """
    torch.manual_seed(config.seed)
    model = CharModel(config.model_config())
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    gen = torch.Generator().manual_seed(config.seed)
    eval_x, eval_y = evaluation_set(config.task, config.eval_batch, config.seed)
    chunk = config.chunk or config.task.length
    result = CopyResult(config, [], [], [], model)
    step = 0
    while step < config.steps:
        inputs, targets = delayed_copy_batch(config.task, config.batch, gen)
        state = None
        for start in range(0, config.task.length, chunk):
            if step >= config.steps:
                break
            x, y = inputs[:, start : start + chunk], targets[:, start : start + chunk]
            if (y == IGNORE).all():
                # Nothing to score in this chunk; still carry the state forward.
                with torch.no_grad():
                    _, _, state = model(x, state=state)
                continue
            _, loss, state = model(x, y, state)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if config.clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            opt.step()
            state = detach_state(state)
            step += 1
            result.train_loss.append(loss.item())
            if on_step is not None:
                on_step(step, loss.item())
            if step % config.eval_every == 0 or step == config.steps:
                result.eval_steps.append(step)
                result.eval_accuracy.append(evaluate_copy(model, eval_x, eval_y))
    return result


@torch.no_grad()
def evaluate_copy(model: CharModel, inputs: Tensor, targets: Tensor) -> float:
    """Accuracy on whole held-out sequences, run in one pass with the state carried throughout."""
    was_training = model.training
    model.eval()
    logits, _, _ = model(inputs)
    model.train(was_training)
    return masked_accuracy(logits, targets)
