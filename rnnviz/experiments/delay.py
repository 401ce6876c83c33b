"""Experiment 1: delayed copy, vanilla RNN against LSTM, with a fair budget and several seeds.

Both models see the same batches in the same order (the data generator is seeded by the run's seed, not
by the model), train for the same number of steps on the same number of characters, and are scored on
the same fixed held-out set. "Equal parameter count" sizes the RNN's hidden width H so that its
parameters match the LSTM's as closely as an integer H allows.

Parameter count of a one-layer CharModel with G gate blocks (RNN 1, LSTM 4, GRU 3), vocabulary V,
embedding width E and hidden width H:

    P(H) = V·E  +  G·H·(E + H + 2)  +  H·V + V
           embed    W_ih, W_hh, b_ih, b_hh   readout
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.core.recurrent import GATE_BLOCKS
from rnnviz.experiments.tasks import CopyTrainConfig, DelayedCopy, train_delayed_copy

SIZINGS = {
    "params": "equal parameter count",
    "hidden": "equal hidden size",
}


def parameter_count(kind: str, vocab: int, embed_dim: int, hidden: int) -> int:
    """P(H) of a one-layer CharModel, from the formula in the module docstring."""
    gates = GATE_BLOCKS[kind]
    return vocab * embed_dim + gates * hidden * (embed_dim + hidden + 2) + hidden * vocab + vocab


def parameter_breakdown(kind: str, vocab: int, embed_dim: int, hidden: int) -> dict[str, int]:
    """Counts per part, read from a real CharModel's parameters (not from the formula)."""
    model = CharModel(ModelConfig(vocab_size=vocab, kind=kind, hidden=hidden, embed_dim=embed_dim))
    parts = {"embedding": 0, "recurrent": 0, "readout": 0}
    for name, p in model.named_parameters():
        part = {"embed": "embedding", "rnn": "recurrent", "head": "readout"}[name.split(".")[0]]
        parts[part] += p.numel()
    parts["total"] = sum(parts.values())
    return parts


def matching_hidden(target: int, kind: str, vocab: int, embed_dim: int) -> int:
    """The hidden width H ≥ 1 whose P(H) is closest to ``target`` (ties go to the smaller H).

    P(H) = G·H² + (G·(E + 2) + V)·H + V·E + V is increasing in H, so the best H is one of the two
    integers around the positive root of P(H) = target.
    """
    gates = GATE_BLOCKS[kind]
    a, b, c = gates, gates * (embed_dim + 2) + vocab, vocab * embed_dim + vocab - target
    root = (-b + math.sqrt(max(0.0, b * b - 4 * a * c))) / (2 * a)
    candidates = {max(1, math.floor(root)), max(1, math.ceil(root))}
    return min(candidates, key=lambda h: (abs(parameter_count(kind, vocab, embed_dim, h) - target), h))


@dataclass(frozen=True)
class DelaySweepConfig:
    """RNN against LSTM on delayed copy, over several delays D and seeds; frozen so it keys a cache."""

    alphabet: int = 8  # symbols; chance accuracy is 1/alphabet
    length: int = 96  # L, steps per sequence
    delays: tuple[int, ...] = (2, 8, 16, 32, 64)  # the D values swept, each 0 < D < L
    hidden: int = 32  # the LSTM's H (and the RNN's too under "equal hidden size")
    sizing: str = "params"  # "params": the RNN's H matches the LSTM's parameter count; "hidden": same H
    embed_dim: int = 16  # E, both models
    steps: int = 200  # optimizer steps, both models
    batch: int = 16  # N sequences per step, both models
    lr: float = 1e-2  # Adam, both models
    forget_bias: float | None = 2.0  # the LSTM's b_f at init (None: torch's uniform init); the RNN has no gate
    seeds: int = 3  # runs per (model, D), seeded base_seed, base_seed + 1, …
    base_seed: int = 0
    eval_batch: int = 256  # size of the fixed held-out set (its own generator, per seed)
    eval_every: int = 25  # steps between evaluations
    kinds: tuple[str, ...] = ("rnn", "lstm")

    def __post_init__(self):
        if not self.delays:
            raise ValueError("Choose at least one delay D.")
        for delay in self.delays:
            DelayedCopy(self.alphabet, self.length, delay)  # raises a plain-words error for a bad D
        if self.sizing not in SIZINGS:
            raise ValueError(f"sizing must be one of {', '.join(SIZINGS)}, not {self.sizing!r}")
        if self.seeds < 1:
            raise ValueError("Use at least one seed (three or more to see the spread).")
        if self.steps < 1 or self.batch < 1 or self.hidden < 1 or self.embed_dim < 1:
            raise ValueError("Steps, batch, hidden size and embedding width must all be at least 1.")
        if not self.lr > 0:
            raise ValueError(f"The learning rate must be positive (got {self.lr}).")

    def hidden_for(self, kind: str) -> int:
        """H of each model: the LSTM's is ``hidden``; the others follow ``sizing``."""
        if kind == "lstm" or self.sizing == "hidden":
            return self.hidden
        target = parameter_count("lstm", self.alphabet, self.embed_dim, self.hidden)
        return matching_hidden(target, kind, self.alphabet, self.embed_dim)

    def run_config(self, kind: str, delay: int, seed: int) -> CopyTrainConfig:
        """The trainer's config for one run; the same seed gives both models the same data."""
        return CopyTrainConfig(
            task=DelayedCopy(self.alphabet, self.length, delay),
            kind=kind,
            hidden=self.hidden_for(kind),
            embed_dim=self.embed_dim,
            steps=self.steps,
            batch=self.batch,
            lr=self.lr,
            eval_batch=self.eval_batch,
            eval_every=self.eval_every,
            seed=seed,
            forget_bias=self.forget_bias if kind == "lstm" else None,
        )

    def runs(self) -> list[CopyTrainConfig]:
        """Every run of the sweep, delay by delay, alternating the models within each seed."""
        return [
            self.run_config(kind, delay, self.base_seed + s)
            for delay in self.delays
            for s in range(self.seeds)
            for kind in self.kinds
        ]

    def cli_command(self, kind: str, delay: int, seed: int) -> str:
        """The command line that repeats one run of this sweep and prints the same numbers."""
        args = [f"--model {kind}", f"--delay {delay}", f"--length {self.length}", f"--seed {seed}"]
        defaults = DelaySweepConfig()
        flags = {
            "alphabet": "--alphabet", "hidden": "--lstm-hidden", "sizing": "--sizing", "embed_dim": "--embed",
            "steps": "--steps", "batch": "--batch", "lr": "--lr", "eval_every": "--every",
        }
        args += [f"{flag} {getattr(self, name)}" for name, flag in flags.items()
                 if getattr(self, name) != getattr(defaults, name)]
        if self.forget_bias != defaults.forget_bias and kind == "lstm":
            args.append(f"--forget-bias {-1 if self.forget_bias is None else self.forget_bias}")
        if self.eval_batch != defaults.eval_batch:
            args.append(f"--eval-batch {self.eval_batch}")
        return "rnnviz experiments delay " + " ".join(args)

    @property
    def characters_per_run(self) -> int:
        """Training characters each run sees: steps × N × L."""
        return self.steps * self.batch * self.length

    @property
    def chance(self) -> float:
        """Accuracy of guessing uniformly, 1/alphabet."""
        return 1.0 / self.alphabet


# The Memory experiments page's default: the budget at which the two models part on this machine. Chosen by
# measurement (bench/memory_recipe.py holds the sweep and the README its figures): at D = 32 the vanilla RNN
# stays at chance on every seed while the LSTM learns part of the delay on every seed; at D = 8 both copy.
# 80–100 s of CPU on one thread (COPY_THREADS; more under load). Only the fields named here differ from
# DelaySweepConfig's (and the CLI's) defaults, so ``cli_command`` repeats its runs with these flags.
DEFAULT_RECIPE = DelaySweepConfig(delays=(8, 16, 32), hidden=48, steps=400, batch=32)
# Within this many points of 1/alphabet on every seed, a model "stays at chance". The held-out set scores
# 256 × (L − D) positions (16,384 at L = 96, D = 32), so a uniform guess itself reads within about ±0.01.
AT_CHANCE_MARGIN = 0.02


@dataclass(frozen=True)
class DelayRun:
    """What one training run measured; plain numbers, small enough to cache."""

    kind: str
    delay: int
    seed: int
    hidden: int
    parameters: int
    eval_steps: tuple[int, ...]
    eval_accuracy: tuple[float, ...]  # on the fixed held-out set, after each eval_steps entry
    train_loss: tuple[float, ...]  # per step, on the training batch
    seconds: float  # wall time of the run
    cpu_seconds: float  # CPU time of this process during the run; far below ``seconds`` when the machine is busy

    @property
    def final_accuracy(self) -> float:
        return self.eval_accuracy[-1]


def run_copy(config: CopyTrainConfig, on_step: Callable[[int, float], None] | None = None) -> DelayRun:
    """Train one model on delayed copy and keep its measurements (not the model); ``on_step(step, loss)``."""
    start, cpu_start = time.perf_counter(), time.process_time()
    result = train_delayed_copy(config, on_step)
    return DelayRun(
        kind=config.kind,
        delay=config.task.delay,
        seed=config.seed,
        hidden=config.hidden,
        parameters=result.model.num_parameters(),
        eval_steps=tuple(result.eval_steps),
        eval_accuracy=tuple(result.eval_accuracy),
        train_loss=tuple(result.train_loss),
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu_start,
    )


@dataclass(frozen=True)
class Band:
    """Mean and spread (min, max) over seeds, one entry per x value."""

    x: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


@dataclass
class DelaySweep:
    """All runs of a sweep, with the summaries the page and the CLI show."""

    config: DelaySweepConfig
    runs: list[DelayRun] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """Sum of the runs' measured wall times."""
        return sum(r.seconds for r in self.runs)

    @property
    def cpu_seconds(self) -> float:
        """Sum of the runs' CPU times (all threads of this process)."""
        return sum(r.cpu_seconds for r in self.runs)

    def select(self, kind: str, delay: int) -> list[DelayRun]:
        return [r for r in self.runs if r.kind == kind and r.delay == delay]

    def curve(self, kind: str, delay: int) -> Band:
        """Held-out accuracy against training step, over the seeds."""
        runs = self.select(kind, delay)
        acc = np.array([r.eval_accuracy for r in runs])  # (seeds, evals)
        return Band(runs[0].eval_steps, *_spread(acc))

    def final(self, kind: str) -> Band:
        """Final held-out accuracy against the delay D, over the seeds."""
        delays = tuple(d for d in self.config.delays if self.select(kind, d))
        acc = np.array([[r.final_accuracy for r in self.select(kind, d)] for d in delays]).T  # (seeds, delays)
        return Band(delays, *_spread(acc))

    def ahead(self, delay: int) -> str | None:
        """The model whose worst seed beats the other model's best seed at this D, or None when they overlap."""
        return self.verdict(delay).leader

    def verdict(self, delay: int) -> Verdict:
        """What the seeds say at this D: each model's mean, worst and best final accuracy, the leader, and
        which models stayed at chance on every seed."""
        finals = {k: [r.final_accuracy for r in self.select(k, delay)] for k in self.config.kinds}
        lows = {k: min(v) for k, v in finals.items()}
        highs = {k: max(v) for k, v in finals.items()}
        leader = next((k for k in self.config.kinds
                       if all(lows[k] > highs[other] for other in self.config.kinds if other != k)), None)
        chance = self.config.chance
        return Verdict(
            delay=delay, chance=chance, leader=leader, lows=lows, highs=highs,
            means={k: sum(v) / len(v) for k, v in finals.items()},
            at_chance=tuple(k for k in self.config.kinds if highs[k] <= chance + AT_CHANCE_MARGIN),
        )


@dataclass(frozen=True)
class Verdict:
    """The comparison at one delay D, over the seeds."""

    delay: int
    chance: float  # 1/alphabet
    leader: str | None  # the model whose worst seed beats every other model's best seed; None when they overlap
    means: dict[str, float]  # mean final held-out accuracy over seeds, per model
    lows: dict[str, float]  # worst seed, per model
    highs: dict[str, float]  # best seed, per model
    at_chance: tuple[str, ...]  # models whose best seed is within AT_CHANCE_MARGIN of chance

    @property
    def decisive(self) -> bool:
        """A leader, and every other model at chance on every seed: one keeps the delay, the others lose it."""
        return self.leader is not None and all(k in self.at_chance for k in self.means if k != self.leader)


def _spread(acc: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(mean, min, max) down the seed axis."""
    return tuple(acc.mean(0).tolist()), tuple(acc.min(0).tolist()), tuple(acc.max(0).tolist())


def run_delay_sweep(
    config: DelaySweepConfig,
    on_progress: Callable[[int, int, DelayRun], None] | None = None,
    run_one: Callable[[CopyTrainConfig], DelayRun] = run_copy,
) -> DelaySweep:
    """Every run of the sweep in order; ``run_one`` lets the page pass a cached ``run_copy``."""
    sweep = DelaySweep(config)
    plan = config.runs()
    for done, run_config in enumerate(plan, start=1):
        sweep.runs.append(run_one(run_config))
        if on_progress is not None:
            on_progress(done, len(plan), sweep.runs[-1])
    return sweep


# Torch threads for delayed-copy training. Its models are small (the default's RNN H = 102, LSTM H = 48, batch
# 32): a second thread has little to split, and while other work holds the other core it waits for that core at
# every step. On 2 cores beside other work, the default's D = 32 runs (seed 0) took 2.4× (RNN) and 4.1× (LSTM) as
# long on 2 threads as on 1 at 100 steps, load 6.5 (python -m bench memory_recipe, "threads"); in one measurement
# at 400 steps, load 8, 185 s and 114 s against 10.0 s and 10.7 s. The accuracies are the same to the last digit.
COPY_THREADS = 1


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` torch threads, then give back the count from before.

    The setting is not private to the block: ``torch.set_num_threads`` acts process-wide (a worker thread's call
    sets the main thread's count too; see runtime.share_cores), so other work in the process runs on ``count``
    threads meanwhile, and every page run sets the server's share again
    (rnnviz.core.runtime.configure_cpu), which can end the block's count early when other sessions use the
    page. The memory page's small models lose more to a second thread than they gain, so its sweep asks for one.
    """
    before = torch.get_num_threads()  # also makes torch settle this thread's count before it is changed
    if before != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


# How many of a model's latest finished runs the time left is estimated from. The latest follow the machine's load
# as other work starts and ends, two rather than one smooth a single slow run, and the first run of a fresh process
# (which also pays torch's start-up) drops out once two more have finished. On the measured run times of five
# sweeps of the default on this shared 2-core machine (load 2–6.5; python -m bench memory_recipe and the page in
# Chromium), estimate ÷ the time then really left at each run's start was within 20% at 59 of 80 starts with the
# latest two, 55 with the latest three, 54 with every run: nearly always while the load holds, but no past time
# foresees a load that swings two- or threefold within the sweep (one sweep, load about 6.5: 9 of 16).
RECENT_RUNS = 2


def seconds_left(finished: Sequence[tuple[str, float]], to_train: Sequence[str], fraction: float = 0.0
                 ) -> float | None:
    """Wall seconds a sweep still needs, at the pace of the runs it has trained so far, or None before it can say.

    ``finished`` holds (model kind, wall seconds) of each run trained so far, in order; ``to_train`` the kinds of
    the runs still to train, in order, the first being under way with ``fraction`` of its steps done. Each run is
    expected to take m[kind], the mean wall time of the latest RECENT_RUNS finished runs of its model (a vanilla
    RNN and an LSTM of equal parameters differ about twofold; the delay D does not change the work):

        left = (1 − fraction) · m[kind₀] + Σ_{k ≥ 1} m[kind_k]

    None while a model still to train has no finished run to go by.
    """
    if not to_train:
        return 0.0
    times: dict[str, list[float]] = {}
    for kind, seconds in finished:
        times.setdefault(kind, []).append(seconds)
    if any(kind not in times for kind in to_train):
        return None
    mean = {kind: sum(t[-RECENT_RUNS:]) / len(t[-RECENT_RUNS:]) for kind, t in times.items()}
    current, *rest = to_train
    return (1.0 - min(max(fraction, 0.0), 1.0)) * mean[current] + sum(mean[kind] for kind in rest)


@dataclass
class SweepClock:
    """What a sweep's progress bar needs to say the time left: the runs still to train, in order (the first is
    under way), and the wall time of each run trained so far. The page and bench/memory_recipe.py share it."""

    pending: list[CopyTrainConfig]  # runs still to train; a run already stored elsewhere is left out by the caller
    finished: list[tuple[str, float]] = field(default_factory=list)  # (kind, wall seconds) of each run trained

    def trained(self, run: DelayRun) -> None:
        """A run has been trained: its wall time now counts toward its model's estimate."""
        self.finished.append((run.kind, run.seconds))

    def passed(self, run_config: CopyTrainConfig) -> None:
        """The sweep has moved past this run (trained, or found stored): it is no longer to train."""
        if run_config in self.pending:
            self.pending.remove(run_config)

    def seconds_left(self, fraction: float = 0.0) -> float | None:
        """``seconds_left`` for the runs still to train, ``fraction`` of the first one done."""
        return seconds_left(self.finished, [rc.kind for rc in self.pending], fraction)
