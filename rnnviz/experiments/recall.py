"""Multi-query associative recall (MQAR; Arora et al. 2023, "Zoology"): what a fixed state can hold.

A sequence of T tokens over a vocabulary of V opens with D key–value pairs, keys from one half of the vocabulary
and values from the other, and then asks for every key once, at random later positions; the model must answer
each query with the value that followed that key. Between the queries stands the blank token 0. With V = 12,
D = 2, T = 10 a sequence could read

    inputs   3  9  5  7  0  5  0  0  3  0         pairs (3 → 9), (5 → 7), then the queries 5 and 3
    targets  ·  ·  ·  ·  ·  7  ·  ·  9  ·         scored only where a value must be recalled (· is IGNORE)

Keys are 1…V/2 − 1 and values V/2…V − 1; within a sequence the keys differ, and so do the values. An
attention layer looks the key up in its cache; a recurrent model must have written every pair into its state
before the queries come, so its accuracy falls once D pairs no longer fit in its state's bytes.

``run_recall`` trains one kind on one D and scores it on a held-out set; ``run_recall_sweep`` does it for every
kind, D and seed of a ``RecallSweepConfig`` and returns plain records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from rnnviz.experiments.sequence_models import (
    SIZINGS,
    SWEEP_KINDS,
    ModelSpec,
    build_model,
    parameter_count,
    predictions,
    sized,
    state_bytes,
    train,
)
from rnnviz.experiments.tasks import IGNORE

BLANK = 0  # the token between the queries


@dataclass(frozen=True)
class Recall:
    """The task's shape; validated on construction with messages a page can show as they are."""

    pairs: int = 8  # D, key–value pairs per sequence, each asked once
    length: int = 64  # T, tokens per sequence
    vocab: int = 64  # V: 0 blank, keys 1…V/2 − 1, values V/2…V − 1

    def __post_init__(self):
        if self.vocab < 6:
            raise ValueError(f"The vocabulary needs at least 6 tokens (got {self.vocab}).")
        if self.pairs < 1:
            raise ValueError(f"Use at least one key–value pair (got {self.pairs}).")
        if self.pairs > min(self.vocab // 2 - 1, self.vocab - self.vocab // 2):
            raise ValueError(f"{self.pairs} pairs need {self.pairs} different keys, but a vocabulary of {self.vocab} "
                             f"has only {self.vocab // 2 - 1}: use at most that many pairs or a larger vocabulary.")
        if self.length < 3 * self.pairs:
            raise ValueError(f"A sequence of {self.length} tokens cannot hold {self.pairs} pairs and their "
                             f"{self.pairs} queries: it needs at least 3 × D = {3 * self.pairs}.")

    @property
    def keys(self) -> range:
        return range(1, self.vocab // 2)

    @property
    def values(self) -> range:
        return range(self.vocab // 2, self.vocab)

    @property
    def chance(self) -> float:
        """Accuracy of naming a random value."""
        return 1.0 / len(self.values)


def _distinct(batch: int, choices: int, count: int, generator: torch.Generator) -> Tensor:
    """``count`` different numbers from 0…choices − 1 in random order, per row: (N, count)."""
    return torch.rand(batch, choices, generator=generator).argsort(dim=1)[:, :count]


def recall_batch(task: Recall, batch: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random sequences (N, T) with their targets (N, T): the value at each query, IGNORE elsewhere."""
    d = task.pairs
    keys = _distinct(batch, len(task.keys), d, generator) + task.keys.start  # (N, D)
    values = _distinct(batch, len(task.values), d, generator) + task.values.start  # (N, D)
    where = _distinct(batch, task.length - 2 * d, d, generator) + 2 * d  # (N, D) query positions, after the pairs
    inputs = torch.full((batch, task.length), BLANK, dtype=torch.long)
    inputs[:, 0 : 2 * d : 2], inputs[:, 1 : 2 * d : 2] = keys, values
    inputs.scatter_(1, where, keys)  # key j is asked at where[:, j]
    targets = torch.full_like(inputs, IGNORE).scatter_(1, where, values)
    return inputs, targets


def evaluation_set(task: Recall, size: int, seed: int) -> tuple[Tensor, Tensor]:
    """A fixed held-out set from its own generator, so that training never draws it."""
    return recall_batch(task, size, torch.Generator().manual_seed(10_000_019 + seed))


def query_accuracy(predicted: Tensor, targets: Tensor) -> float:
    """Share of queries (targets ≠ IGNORE) answered with their value."""
    scored = targets != IGNORE
    return ((predicted == targets) & scored).sum().item() / max(1, scored.sum().item())


@dataclass(frozen=True)
class RecallSweepConfig:
    """Kinds × pairs D × seeds on MQAR at one width; frozen so that it keys a cache. The defaults are the page's."""

    kinds: tuple[str, ...] = SWEEP_KINDS
    pairs: tuple[int, ...] = (1, 2, 4, 8)  # the D values swept
    length: int = 32  # T
    vocab: int = 32  # V
    width: int = 64  # H of every kind ("width" sizing), or the LSTM's H that the others match
    sizing: str = "width"  # "width", "params" (the LSTM's parameters) or "state" (the LSTM's state bytes)
    layers: int = 2  # L, every kind
    embed_dim: int = 32  # E, the recurrent kinds
    heads: int = 4  # sLSTM, mLSTM, linear attention, Transformer
    state_size: int = 16  # S, the selective SSM
    steps: int = 600  # optimizer steps per run
    batch: int = 32  # sequences per step
    lr: float = 1e-2  # Adam, every kind
    seeds: int = 1  # runs per (kind, D): base_seed, base_seed + 1, …
    base_seed: int = 0
    eval_batch: int = 256  # sequences in the held-out set

    def __post_init__(self):
        if not self.kinds or not self.pairs:
            raise ValueError("Choose at least one kind and one number of pairs D.")
        for d in self.pairs:
            Recall(d, self.length, self.vocab)  # raises a plain-words error for a bad D
        if self.sizing not in SIZINGS:
            raise ValueError(f"sizing must be one of {', '.join(SIZINGS)}, not {self.sizing!r}")
        if min(self.steps, self.batch, self.seeds, self.eval_batch) < 1:
            raise ValueError("Steps, batch, seeds and the held-out set must all be at least 1.")
        if not self.lr > 0:
            raise ValueError(f"The learning rate must be positive (got {self.lr}).")
        for kind in self.kinds:
            self.spec(kind)  # raises a plain-words error for a bad kind or width

    def spec(self, kind: str) -> ModelSpec:
        """The model of ``kind`` in this sweep, sized as ``sizing`` says against the LSTM at ``width``."""
        def at_width(k: str) -> ModelSpec:
            return ModelSpec(kind=k, vocab=self.vocab, width=self.width, layers=self.layers,
                             embed_dim=self.embed_dim, heads=self.heads, state_size=self.state_size,
                             context=self.length)

        return sized(at_width(kind), self.sizing, at_width("lstm"), self.length)

    def runs(self) -> list[tuple[str, int, int]]:
        """(kind, D, seed) of every run, D by D, the kinds alternating within each seed."""
        return [(kind, d, self.base_seed + s) for d in self.pairs for s in range(self.seeds) for kind in self.kinds]

    def cli_command(self, kind: str, pairs: int, seed: int) -> str:
        """The command line that repeats one run of this sweep and prints the same accuracy."""
        args = [f"--kinds {kind}", f"--pairs {pairs}", f"--seed {seed}"]
        defaults = RecallSweepConfig()
        flags = {"length": "--length", "vocab": "--vocab", "width": "--width", "sizing": "--sizing",
                 "layers": "--layers", "embed_dim": "--embed", "heads": "--heads", "state_size": "--state-size",
                 "steps": "--steps", "batch": "--batch", "lr": "--lr", "eval_batch": "--eval-batch"}
        args += [f"{flag} {getattr(self, name)}" for name, flag in flags.items()
                 if getattr(self, name) != getattr(defaults, name)]
        return "rnnviz experiments recall " + " ".join(args)


@dataclass(frozen=True)
class RecallRecord:
    """What one run measured; plain numbers, so that a sweep is a list of these (and JSON by dataclasses.asdict)."""

    kind: str
    pairs: int  # D
    length: int  # T
    seed: int
    width: int  # H (the Transformer's C) as sized
    parameters: int
    state_bytes: int  # carried from one token to the next at the last token, float32
    accuracy: float  # share of held-out queries answered right
    chance: float
    final_loss: float  # mean training loss over the last 10% of steps
    seconds: float  # wall time of training and scoring


def run_recall(config: RecallSweepConfig, kind: str, pairs: int, seed: int,
               on_step: Callable[[int, float], None] | None = None) -> RecallRecord:
    """Train ``kind`` on MQAR with D = ``pairs`` from ``seed`` and score it on the held-out set."""
    start = time.perf_counter()
    task = Recall(pairs, config.length, config.vocab)
    spec = config.spec(kind)
    torch.manual_seed(seed)
    model = build_model(spec)
    generator = torch.Generator().manual_seed(seed)
    losses = train(model, lambda: recall_batch(task, config.batch, generator), config.steps, config.lr,
                   on_step=on_step)
    inputs, targets = evaluation_set(task, config.eval_batch, seed)
    accuracy = query_accuracy(predictions(model, inputs), targets)
    tail = losses[-max(1, len(losses) // 10):]
    return RecallRecord(kind=kind, pairs=pairs, length=config.length, seed=seed, width=spec.width,
                        parameters=parameter_count(spec), state_bytes=state_bytes(spec, config.length),
                        accuracy=accuracy, chance=task.chance, final_loss=sum(tail) / len(tail),
                        seconds=time.perf_counter() - start)


def run_recall_sweep(config: RecallSweepConfig,
                     on_run: Callable[[int, int, RecallRecord], None] | None = None) -> list[RecallRecord]:
    """Every run of the sweep in order; ``on_run(done, total, record)`` after each."""
    plan, records = config.runs(), []
    for kind, pairs, seed in plan:
        records.append(run_recall(config, kind, pairs, seed))
        if on_run is not None:
            on_run(len(records), len(plan), records[-1])
    return records
