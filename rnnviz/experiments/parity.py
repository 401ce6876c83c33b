"""State tracking: the running parity of a bit string, trained on short strings and tested on longer ones.

At every position the target is the parity of the bits so far, y_t = x_1 ⊕ … ⊕ x_t:

    inputs   1  0  1  1  0  1
    targets  1  1  0  1  1  0

One bit of state is enough, but it must be updated by a nonlinear rule (flip, or keep, by the input). A recurrence
with a nonlinear state update (an LSTM, xLSTM's sLSTM) can learn that rule and then apply it at any length; a
diagonal linear recurrence with positive decays (the selective SSM, minGRU, the mLSTM's and linear attention's
memories) and a Transformer of fixed depth cannot represent it exactly (Merrill et al. 2024; Grazzi et al. 2024),
and what they learn on short strings fails on longer ones.

The score at length L is the share of held-out strings whose parity after L bits is predicted right (chance ½):
one pass over strings as long as the longest test length scores every length at once, since position L of a
longer string is a string of length L for a causal model.
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


def parity_batch(length: int, batch: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random bit strings (N, T) and their running parities (N, T)."""
    bits = torch.randint(0, 2, (batch, length), generator=generator)
    return bits, bits.cumsum(dim=1) % 2


def evaluation_set(length: int, size: int, seed: int) -> tuple[Tensor, Tensor]:
    """A fixed held-out set from its own generator, so that training never draws it."""
    return parity_batch(length, size, torch.Generator().manual_seed(10_000_019 + seed))


@dataclass(frozen=True)
class ParitySweepConfig:
    """Kinds × seeds on running parity at one width; frozen so that it keys a cache. The defaults are the page's."""

    kinds: tuple[str, ...] = SWEEP_KINDS
    train_length: int = 16  # T of every training string
    test_lengths: tuple[int, ...] = (16, 32, 64, 128, 256)  # the lengths L scored
    width: int = 32  # H of every kind ("width" sizing), or the LSTM's H that the others match
    sizing: str = "width"  # "width", "params" (the LSTM's parameters) or "state" (the LSTM's state bytes)
    layers: int = 1  # L, every kind
    embed_dim: int = 8  # E, the recurrent kinds
    heads: int = 4  # sLSTM, mLSTM, linear attention, Transformer
    state_size: int = 8  # S, the selective SSM
    steps: int = 300  # optimizer steps per run
    batch: int = 32  # strings per step
    lr: float = 1e-2  # Adam
    seeds: int = 1  # runs per kind: base_seed, base_seed + 1, …
    base_seed: int = 0
    eval_batch: int = 256  # strings in the held-out set

    def __post_init__(self):
        if not self.kinds:
            raise ValueError("Choose at least one kind.")
        if self.train_length < 1 or not self.test_lengths or min(self.test_lengths) < 1:
            raise ValueError("The training length and every test length must be at least 1.")
        if self.sizing not in SIZINGS:
            raise ValueError(f"sizing must be one of {', '.join(SIZINGS)}, not {self.sizing!r}")
        if min(self.steps, self.batch, self.seeds, self.eval_batch) < 1:
            raise ValueError("Steps, batch, seeds and the held-out set must all be at least 1.")
        if not self.lr > 0:
            raise ValueError(f"The learning rate must be positive (got {self.lr}).")
        for kind in self.kinds:
            self.spec(kind)  # raises a plain-words error for a bad kind or width

    @property
    def longest(self) -> int:
        """The longest string read: a Transformer's context must reach it."""
        return max(self.train_length, *self.test_lengths)

    def spec(self, kind: str) -> ModelSpec:
        """The model of ``kind`` in this sweep, sized as ``sizing`` says against the LSTM at ``width``."""
        def at_width(k: str) -> ModelSpec:
            return ModelSpec(kind=k, vocab=2, width=self.width, layers=self.layers, embed_dim=self.embed_dim,
                             heads=self.heads, state_size=self.state_size, context=self.longest)

        return sized(at_width(kind), self.sizing, at_width("lstm"), self.train_length)

    def runs(self) -> list[tuple[str, int]]:
        """(kind, seed) of every run, the kinds alternating within each seed."""
        return [(kind, self.base_seed + s) for s in range(self.seeds) for kind in self.kinds]

    def cli_command(self, kind: str, seed: int) -> str:
        """The command line that repeats one run of this sweep and prints the same accuracies."""
        args = [f"--kinds {kind}", f"--seed {seed}"]
        defaults = ParitySweepConfig()
        flags = {"train_length": "--train-length", "width": "--width", "sizing": "--sizing", "layers": "--layers",
                 "embed_dim": "--embed", "heads": "--heads", "state_size": "--state-size", "steps": "--steps",
                 "batch": "--batch", "lr": "--lr", "eval_batch": "--eval-batch"}
        args += [f"{flag} {getattr(self, name)}" for name, flag in flags.items()
                 if getattr(self, name) != getattr(defaults, name)]
        if self.test_lengths != defaults.test_lengths:
            args.append("--test-lengths " + " ".join(map(str, self.test_lengths)))
        return "rnnviz experiments parity " + " ".join(args)


@dataclass(frozen=True)
class ParityRecord:
    """What one run measured; plain numbers, so that a sweep is a list of these (and JSON by dataclasses.asdict)."""

    kind: str
    seed: int
    train_length: int
    width: int  # H (the Transformer's C) as sized
    parameters: int
    state_bytes: int  # carried from one bit to the next after train_length bits, float32
    lengths: tuple[int, ...]  # the test lengths L
    accuracy: tuple[float, ...]  # per L: share of held-out strings whose parity after L bits is right
    final_loss: float  # mean training loss over the last 10% of steps
    seconds: float  # wall time of training and scoring

    def at(self, length: int) -> float:
        """Accuracy at one test length."""
        return self.accuracy[self.lengths.index(length)]


def length_accuracy(predicted: Tensor, targets: Tensor, lengths: tuple[int, ...]) -> tuple[float, ...]:
    """Per length L, the share of rows whose prediction after L bits (position L − 1) is right."""
    return tuple((predicted[:, length - 1] == targets[:, length - 1]).float().mean().item() for length in lengths)


def run_parity(config: ParitySweepConfig, kind: str, seed: int,
               on_step: Callable[[int, float], None] | None = None) -> ParityRecord:
    """Train ``kind`` on running parity of strings of ``train_length`` bits from ``seed``; score every test length."""
    start = time.perf_counter()
    spec = config.spec(kind)
    torch.manual_seed(seed)
    model = build_model(spec)
    generator = torch.Generator().manual_seed(seed)
    losses = train(model, lambda: parity_batch(config.train_length, config.batch, generator), config.steps,
                   config.lr, on_step=on_step)
    lengths = tuple(sorted(set(config.test_lengths)))
    inputs, targets = evaluation_set(max(lengths), config.eval_batch, seed)
    accuracy = length_accuracy(predictions(model, inputs), targets, lengths)
    tail = losses[-max(1, len(losses) // 10):]
    return ParityRecord(kind=kind, seed=seed, train_length=config.train_length, width=spec.width,
                        parameters=parameter_count(spec), state_bytes=state_bytes(spec, config.train_length),
                        lengths=lengths, accuracy=accuracy, final_loss=sum(tail) / len(tail),
                        seconds=time.perf_counter() - start)


def run_parity_sweep(config: ParitySweepConfig,
                     on_run: Callable[[int, int, ParityRecord], None] | None = None) -> list[ParityRecord]:
    """Every run of the sweep in order; ``on_run(done, total, record)`` after each."""
    plan, records = config.runs(), []
    for kind, seed in plan:
        records.append(run_parity(config, kind, seed))
        if on_run is not None:
            on_run(len(records), len(plan), records[-1])
    return records
