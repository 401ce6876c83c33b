"""Truncated BPTT: where the gradient stops, and a sweep of the chunk length K on delayed copy.

The sequence x_1 … x_L is cut into chunks of K steps. The state crosses every chunk boundary (its value is
carried forward), the gradient does not (the state is detached there). For the loss L_t at step t inside
the chunk that starts at step s,

    ∂L_t/∂x_u = 0   for every u < s,

so a target y_t = x_{t−D} is never linked to its source by a gradient when K ≤ D: the source always lies
in an earlier chunk. The sweep trains a small LSTM on delayed copy (``rnnviz.experiments.tasks``) for each K and
measures accuracy on fixed held-out sequences: high when K > D, near chance 1/alphabet when K ≤ D.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.core.charmodel import CharModel
from rnnviz.core.recurrent import detach_state
from rnnviz.experiments.tasks import CopyTrainConfig, DelayedCopy, delayed_copy_targets, train_delayed_copy


def chunk_starts(length: int, chunk: int) -> list[int]:
    """0-based first positions of the chunks that cut a sequence of ``length`` steps into pieces of ``chunk``."""
    if chunk < 1:
        raise ValueError(f"The chunk length K must be at least 1 (got {chunk}).")
    return list(range(0, length, chunk))


def gradient_reach(model: CharModel, idx: Tensor, chunk: int, position: int) -> np.ndarray:
    """‖∂L_t/∂x_u‖ for every input position u, where L_t is the cross-entropy at 0-based ``position`` t.

    The model runs over idx (N, L) chunk by chunk exactly as the TBPTT trainer does (state detached at each
    boundary); x_u are the input embeddings, made leaves so autograd can report the gradient on each.
    The target at t is taken as the input at t itself, any label will do: only where the gradient reaches
    matters here.
    """
    length = idx.shape[1]
    if not 0 <= position < length:
        raise ValueError(f"position must be within 0…{length - 1} (got {position}).")
    x = model.inputs(idx).detach().requires_grad_(True)  # (N, L, E)
    state, loss = None, None
    for start in chunk_starts(length, chunk):
        out, state = model.rnn(x[:, start : start + chunk], state)  # (N, K, H)
        if start <= position < start + chunk:
            logits = model.head(out[:, position - start])  # (N, V)
            loss = F.cross_entropy(logits, idx[:, position])
            break
        state = detach_state(state)
    loss.backward()
    return x.grad.norm(dim=-1).sum(dim=0).numpy()  # (L,)


@dataclass(frozen=True)
class SweepConfig:
    """A sweep of the TBPTT chunk length K against a fixed delay D; frozen so it keys a cache.

    The defaults are chosen so that K > D learns the copy (accuracy near 1) and K ≤ D stays at chance, in a
    sweep short enough for a class to wait for on a CPU.
    """

    delay: int = 4  # D, how far back the target lies
    length: int = 32  # L, steps per training sequence
    chunks: tuple[int, ...] = (2, 4, 6, 8, 16)  # the K values to try
    alphabet: int = 4  # symbols; chance accuracy is 1/alphabet
    hidden: int = 32  # H of the LSTM
    steps: int = 800  # optimizer steps per run (one per chunk)
    lr: float = 0.02  # Adam
    seed: int = 0

    def __post_init__(self):
        DelayedCopy(self.alphabet, self.length, self.delay)  # raises a readable error for a bad D or L
        if not self.chunks:
            raise ValueError("Choose at least one chunk length K.")
        bad = [k for k in self.chunks if not 1 <= k <= self.length]
        if bad:
            raise ValueError(f"Each chunk length K must be between 1 and L = {self.length} (got {bad}).")
        if self.steps < 1:
            raise ValueError("Train for at least one step.")

    @property
    def task(self) -> DelayedCopy:
        return DelayedCopy(self.alphabet, self.length, self.delay)

    def run_config(self, chunk: int) -> CopyTrainConfig:
        """The delayed-copy run for one K."""
        return CopyTrainConfig(task=self.task, kind="lstm", hidden=self.hidden, steps=self.steps, lr=self.lr,
                               chunk=chunk, eval_every=max(1, self.steps // 8), seed=self.seed)


@dataclass(frozen=True)
class ChunkRun:
    """One K's outcome, without the model, so it is small and can be cached."""

    chunk: int
    accuracy: float  # on the fixed held-out sequences, after training
    eval_steps: tuple[int, ...]
    eval_accuracy: tuple[float, ...]
    seconds: float


def train_chunk(config: CopyTrainConfig, on_step: Callable[[int, float], None] | None = None) -> ChunkRun:
    """Train one delayed-copy run with chunk K = config.chunk and keep what the page plots."""
    start = time.perf_counter()
    result = train_delayed_copy(config, on_step)
    return ChunkRun(config.chunk or config.task.length, result.final_accuracy, tuple(result.eval_steps),
                    tuple(result.eval_accuracy), time.perf_counter() - start)


def sweep(config: SweepConfig, on_progress: Callable[[float], None] | None = None) -> tuple[ChunkRun, ...]:
    """Train one run per K; ``on_progress(fraction done)`` after every optimizer step."""
    runs = []
    total = config.steps * len(config.chunks)
    for i, chunk in enumerate(config.chunks):
        done = i * config.steps
        report = None if on_progress is None else (lambda step, _loss, done=done: on_progress((done + step) / total))
        runs.append(train_chunk(config.run_config(chunk), report))
    return tuple(runs)


def example_sequence(config: SweepConfig) -> tuple[Tensor, Tensor]:
    """One seeded delayed-copy sequence (1, L) and its targets, for the gradient-reach picture."""
    gen = torch.Generator().manual_seed(config.seed)
    inputs = torch.randint(0, config.alphabet, (1, config.length), generator=gen)
    return inputs, delayed_copy_targets(inputs, config.delay)


def gradient_reach_example(config: SweepConfig, chunk: int, position: int) -> np.ndarray:
    """gradient_reach on the sweep's untrained LSTM (seeded) and one seeded sequence; position is 0-based."""
    with torch.random.fork_rng(devices=[]):  # seed the init without disturbing anyone else's random stream
        torch.manual_seed(config.seed)
        model = CharModel(config.run_config(chunk).model_config())
    inputs, _ = example_sequence(config)
    return gradient_reach(model, inputs, chunk, position)
