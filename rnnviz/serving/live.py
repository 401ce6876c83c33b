"""A live training run for the browser: a Trainer with a step budget, a sample schedule, samples and snapshots.

The page drives it one short chunk at a time (``tick``/``advance``), so that a click is answered between
chunks. Every ``sample_every`` steps the run scores the val split, val loss = −(1/n) Σ log p(x_{t+1} | x_{≤t})
in nats/char, and draws a short sample from the same seed, so that the samples differ only because the
weights did. Every ``snapshot_every`` steps it keeps a light copy of the weights (at most MAX_SNAPSHOTS,
thinned evenly), which the hidden-cell explorer replays. A trainer halt (non-finite or exploding loss)
pauses the run and says in plain words which weights were put back.

A toy too short to split (the built-in "hello") has no held-out text: its val split is its train split, so
the model memorises it and the loss falls to 0. Its samples start from the text's first character, so that
the model spells the text before it leaves it (``leaves_training_text``).

``RunRegistry`` finds a run again by the unguessable token in its address, for a reload or a new tab.

A run with ``cool_down`` on (the anytime preset's, issue 37) trains at a stable learning rate; when it stops (Pause,
the budget's end) the page cools a copy of it down a chunk at a time (``cool``: rnnviz.serving.cooldown), and readers
take that copy (``cooled_copy``) while the run stands still. The run itself is not touched: Start goes on from its
own weights.

A run may train elsewhere (``remote``: rnnviz.serving.ray_backend.RayRun, one Ray actor per run): then
``tick`` only polls, the LiveRun here is a mirror of the remote run (its records, samples, snapshots and
latest weights), and whenever nothing trains remotely it holds the exact training state again.

No streamlit here: the page keeps a LiveRun in session state and calls ``tick`` from a fragment.
"""

from __future__ import annotations

import functools
import hashlib
import math
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import ClassVar, NamedTuple

import torch
from torch import Tensor

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import StepRecord, TrainConfig, Trainer, sequence_loss
from rnnviz.core.charmodel import build_model
from rnnviz.limits import MAX_CORPUS_BYTES, MAX_PARAMETERS  # noqa: F401 (re-exported: the live page reads them here)
from rnnviz.serving.cooldown import CoolingTrainer, cool_down_seconds, cool_down_steps
from rnnviz.serving.slots import TrainingSlots

MAX_SNAPSHOTS = 20  # weight copies kept for the explorer; the initial weights are one of them
MAX_STEP_BUDGET = 1_000_000


class Status(StrEnum):
    """Where a live run stands."""

    READY = "ready"  # built, not trained yet
    RUNNING = "running"  # training, one chunk per rerun
    WAITING = "waiting"  # wants to train; every training slot of the server is taken
    PAUSED = "paused"  # stopped by the user
    HALTED = "halted"  # stopped by itself: the loss or gradient blew up; the last good weights are back
    FINISHED = "finished"  # the step budget is spent
    LOST = "lost"  # the worker that trained it (a Ray actor, its node) died; Start resumes from the last checkpoint


ACTIVE = (Status.RUNNING, Status.WAITING)


@dataclass(frozen=True)
class LiveSettings:
    """How a live run is scheduled; the page may change these while the run lives."""

    step_budget: int = 1000  # stop after this many optimizer steps
    sample_every: int = 100  # steps between a val evaluation and a sample
    sample_length: int = 200  # characters per scheduled sample
    temperature: float = 0.8  # of the scheduled samples
    snapshot_every: int = 25  # steps between weight snapshots at first; doubles each time they are thinned
    eval_chars: int = 10_000  # val characters scored per evaluation, so that a chunk stays short
    cool_down: bool = False  # on Pause and at the budget's end, cool a copy down (rnnviz.serving.cooldown)

    def __post_init__(self):
        if not 1 <= self.step_budget <= MAX_STEP_BUDGET:
            raise ValueError(f"the step budget must be between 1 and {MAX_STEP_BUDGET:,}, not {self.step_budget:,}")
        if self.sample_every < 1 or self.snapshot_every < 1:
            raise ValueError("samples and snapshots must come every 1 or more steps")
        if self.sample_length < 1 or self.eval_chars < 1:
            raise ValueError("sample length and evaluation size must be at least 1")
        if not self.temperature > 0:
            raise ValueError(f"the sample temperature must be positive, not {self.temperature}")


@dataclass(frozen=True)
class SampleRecord:
    """A scheduled sample with the val loss measured just before it."""

    step: int  # optimizer steps taken when it was drawn
    val_loss: float  # nats/char
    text: str  # as shown: the prime, then what the model wrote
    prime: str = ""  # the characters the model read first ("" starts from a newline)


@dataclass(frozen=True, eq=False)
class CooledCopy:
    """A run's copy cooled down when it stopped, ready to read, and how it compares with the run's own weights."""

    model: torch.nn.Module  # a still copy (CPU, float32, eval mode, no gradients)
    branch: Trainer  # what trained it: its checkpoint is the cooled model's
    from_step: int  # the run's step when it stopped
    steps: int  # the cool-down's steps
    start_lr: float  # lr_s, the rate it fell from
    seconds: float  # the cool-down's own training seconds
    val_loss: float  # the cooled copy's, nats/char over the val split's first eval_chars
    run_val_loss: float  # the run's own weights at from_step, on the same characters
    sample: SampleRecord  # drawn like the scheduled samples (same seed, prime, length and τ)
    origin: tuple  # the run's weights it was cooled from (_weights_version)

    @property
    def step(self) -> int:
        """Optimizer steps the cooled copy has had: the run's, then the cool-down's."""
        return self.from_step + self.steps


@dataclass(frozen=True)
class Progress:
    """What the progress bar and its numbers show."""

    step: int
    budget: int
    steps_per_s: float  # recent median, 0 before the first step
    chars_per_s: float
    elapsed_s: float  # wall time spent in advance(): training, evaluation and samples
    eta_s: float | None  # to the end of the budget at the recent speed; None when unknown

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.budget)


def holds_out(corpus: Corpus) -> bool:
    """False for a toy too short to split (the built-in "hello"): its val split is then its train split."""
    return len(corpus.split()[1]) < len(corpus.ids)


def sample_prime(corpus: Corpus) -> str:
    """What scheduled samples start from: the first character of a text with nothing held out (so the model
    spells "hello" from "h"), else "" (a newline)."""
    return "" if holds_out(corpus) else corpus.text[0]


def leaves_training_text(text: str, training: str) -> int:
    """How many leading characters of ``text`` occur together somewhere in ``training``: where a sample
    leaves the text the model was trained on (for "hello", "hellollo" leaves it after 5)."""
    low, high = 0, len(text)
    while low < high:  # the longest prefix found: a prefix that occurs has every shorter one occur too
        middle = (low + high + 1) // 2
        if text[:middle] in training:
            low = middle
        else:
            high = middle - 1
    return low


def light_copy(model: torch.nn.Module) -> dict[str, Tensor]:
    """The weights only (no optimizer state), detached and cloned to the CPU."""
    return {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}


class FrozenModel(NamedTuple):
    """A still copy of a run's model for readers, and the optimizer steps it had taken when it was copied."""

    model: torch.nn.Module  # on the CPU, float32, in eval mode, every parameter with requires_grad False
    step: int


def still_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A CPU, float32, eval-mode copy of a character model (any kind build_model makes), with no gradients."""
    with torch.random.fork_rng(devices=[]):  # building initialises weights: the global RNG must not move
        copy = build_model(model.config)
    copy.load_state_dict(model.state_dict())  # copy_ casts to the copy's float32 and moves to the CPU
    return copy.eval().requires_grad_(False)


def _weights_version(model: torch.nn.Module) -> tuple:
    """Changes whenever any weight of ``model`` is written in place: an optimizer step, a halt's rollback or a
    mirror's load_state_dict all bump torch's version counter of the tensors they write, even at the same step."""
    return id(model), tuple(t._version for t in model.state_dict(keep_vars=True).values())


def _locked(method: Callable) -> Callable:
    """Run the method holding the run's lock."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper


class LiveRun:
    """One session's training run: ``trainer``, ``corpus_name``, ``settings``, ``status`` and ``message``,
    ``samples`` (SampleRecords, oldest first) and ``snapshots`` [(step, state_dict)], oldest first;
    ``token`` is the key a RunRegistry finds it by (None until registered).

    Every method that trains or changes the run holds ``lock``; read the model under it too."""

    # Every LiveRun of this process, held weakly: a run counts until nothing refers to it any more (its
    # session is gone), so a host can watch a closed tab give its model back.
    _alive: ClassVar[weakref.WeakSet[LiveRun]] = weakref.WeakSet()

    def __init__(self, trainer: Trainer, corpus_name: str, settings: LiveSettings = LiveSettings()):
        self.trainer = trainer
        self.corpus_name = corpus_name
        self.settings = settings
        self.status = Status.READY
        self.message = "Ready: press Start to train, or Step to train one short chunk."
        self.samples: list[SampleRecord] = []
        self.snapshot_every = settings.snapshot_every
        self.snapshots: list[tuple[int, dict[str, Tensor]]] = [(trainer.step, light_copy(trainer.model))]
        self.elapsed = 0.0  # wall seconds inside advance()
        self.holds_out = holds_out(trainer.corpus)  # False: val is the training text, the model memorises it
        self.sample_prime = sample_prime(trainer.corpus)  # scheduled samples start from this
        self.token: str | None = None  # set by RunRegistry.register
        self.remote = None  # a RemoteTraining (rnnviz.serving.backend) that trains this run elsewhere; None: here
        self.notice: str | None = None  # something the page must say once more than the status (a recovered worker)
        self.keeper = None  # a RunKeeper (rnnviz.serving.durable) that saves this run to disk; None: kept nowhere
        self.discarded = False  # Reset in some tab: no tab may train or show it any more
        # Held while training or changing the run. A host may run two threads on one session for a moment
        # (Streamlit starts a new script thread on a click while the old one finishes its chunk); whoever
        # reads the weights (sampling, a checkpoint) holds it too, so they never see half an update.
        self.lock = threading.RLock()
        self._frozen: tuple[tuple, FrozenModel] | None = None  # (weights version, copy) of frozen_model
        self.cooling: CoolingTrainer | None = None  # the cool-down under way (``cool``)
        self._cooling_origin: tuple | None = None  # the run's weights it cools (_weights_version)
        self.cooled: CooledCopy | None = None  # the last cool-down's result
        self._cool_failed: tuple | None = None  # the weights whose cool-down blew up: not tried again
        LiveRun._alive.add(self)

    def keep_on(self, keeper) -> None:
        """Save this run with ``keeper`` (rnnviz.serving.durable.RunKeeper) from now on: after chunks on schedule,
        and whenever it stops."""
        self.keeper = keeper

    @property
    def save_problem(self) -> str | None:
        """Why the last save to disk failed, in words; None when it did not (or the run is kept nowhere)."""
        return self.keeper.problem if self.keeper is not None else None

    def _keep(self, now: bool = False) -> None:
        """Save the run when its keeper says it is due (or ``now``); the caller holds ``lock``."""
        if self.keeper is not None and self.remote is None:
            if now:
                self.keeper.save(self)
            else:
                self.keeper.save_if_due(self)

    @_locked
    def save_if_due(self) -> None:
        """Save the run when its keeper says it is due, for a caller that trains it with ``advance`` (a Ray
        actor: ``tick`` does this itself)."""
        self._keep()

    @_locked
    def forget(self) -> None:
        """What keeps this run on disk deletes it, and nothing more is written."""
        if self.keeper is not None:
            self.keeper.forget()
            self.keeper = None

    @_locked
    def discard(self) -> None:
        """Reset: the run stops training for good, for every tab that holds it (each lets it go when it sees
        ``discarded``), and its files on disk go."""
        if self.is_active:
            self.status = Status.PAUSED
        self.discarded = True
        self.cooling = self.cooled = None
        self.message = "This run was reset and discarded."
        self.forget()

    @classmethod
    def count_alive(cls) -> int:
        """LiveRuns alive in this process; each holds a model, its optimizer state and weight snapshots."""
        return len(cls._alive)

    @classmethod
    def create(cls, config: TrainConfig, corpus: Corpus, settings: LiveSettings = LiveSettings()) -> LiveRun:
        return cls(Trainer(config, corpus), corpus.name, settings)

    # -- what the page shows ------------------------------------------------------------------------------------

    @property
    def step(self) -> int:
        return self.trainer.step

    @property
    def is_active(self) -> bool:
        """True while the run wants training chunks (running, or waiting for a slot)."""
        return self.status in ACTIVE

    @property
    def uniform_loss(self) -> float:
        """ln V: the loss of a model that gives every character the same probability 1/V."""
        return math.log(self.trainer.vocab.size)

    @_locked
    def frozen_model(self) -> FrozenModel:
        """The model as it is now, for a reader: (model, step), a CPU float32 copy in eval mode with requires_grad
        off, taken under ``lock`` so a training thread never hands over half an update.

        Readers at the same weights share one copy: calls return the same FrozenModel object until the weights
        change (a training step, a halt's rollback, a resumed or mirrored state). Training goes on in the run's
        own model; the copy never changes, so a page may read it for as long as it likes without the lock."""
        version = _weights_version(self.trainer.model)
        if self._frozen is None or self._frozen[0] != version:
            self._frozen = (version, FrozenModel(still_copy(self.trainer.model), self.trainer.step))
        return self._frozen[1]

    # -- the cool-down when it stops ----------------------------------------------------------------------------

    @property
    def cools_down(self) -> bool:
        """Whether a cool-down is due or under way: the run stopped (paused or finished) with ``cool_down`` on, and
        no copy of its weights as they are is cooled yet."""
        if not self.settings.cool_down or self.discarded or self.step == 0:
            return False
        if self.status not in (Status.PAUSED, Status.FINISHED):
            return False
        origin = _weights_version(self.trainer.model)
        return origin != self._cool_failed and (self.cooled is None or self.cooled.origin != origin)

    def cooled_copy(self) -> CooledCopy | None:
        """The cooled copy of the run's weights as they are, while the run stands still with ``cool_down`` on; None
        otherwise."""
        cooled = self.cooled
        if (cooled is None or not self.settings.cool_down or self.is_active
                or cooled.origin != _weights_version(self.trainer.model)):
            return None
        return cooled

    def reader_model(self) -> FrozenModel:
        """What a reader of this run takes: the cooled copy while the run stands still and one is ready, else the
        run's own weights (``frozen_model``)."""
        cooled = self.cooled_copy()
        return FrozenModel(cooled.model, cooled.step) if cooled is not None else self.frozen_model()

    def cool_down_progress(self) -> tuple[int, int] | None:
        """(steps done, steps) of the cool-down under way for the weights as they are; None when none is."""
        cooling = self.cooling
        if cooling is None or self._cooling_origin != _weights_version(self.trainer.model):
            return None
        return cooling.steps - cooling.steps_left, cooling.steps

    @_locked
    def cool(self, slots: TrainingSlots, owner: Hashable, max_seconds: float) -> None:
        """One chunk of the cool-down that is due (``cools_down``), in a training slot held until it is done."""
        if not self.cools_down:
            return
        if not slots.acquire(owner):
            place = slots.queue_position(owner)
            self.message = (f"Stopped at step {self.step:,}. Waiting for a free training slot to cool a copy down"
                            + (f" (number {place} in the queue)." if place else "."))
            return
        origin = _weights_version(self.trainer.model)
        if self.cooling is None or self._cooling_origin != origin:
            self.cooling, self._cooling_origin = CoolingTrainer(self.trainer, cool_down_steps(self.trainer)), origin
            seconds = cool_down_seconds(self.trainer.seconds)
            self.message = (f"Stopped at step {self.step:,}. Cooling a copy down: its learning rate falls from "
                            f"{self.cooling.start_lr:g} to 0 over {self.cooling.steps:,} steps (about "
                            f"{max(1, round(seconds))} s); samples then come from it. Start goes on training the run "
                            "from its own weights.")
        cooling = self.cooling
        cooling.cool(max_seconds)
        if cooling.halt is not None:
            self.cooling, self._cool_failed = None, origin
            self.message = (f"Stopped at step {self.step:,}. The cool-down of a copy stopped by itself "
                            f"({cooling.halt.reason}), so samples come from the run's own weights.")
            slots.release(owner)
        elif cooling.done:
            self.cooled = self._cooled(cooling, origin)
            self.cooling = None
            self.message = (f"Stopped at step {self.step:,}, and a copy cooled down over {cooling.steps:,} steps: "
                            "samples come from the cooled copy. Start goes on training the run from its own weights.")
            slots.release(owner)

    def cool_unless_busy(self, slots: TrainingSlots, owner: Hashable, max_seconds: float) -> None:
        """``cool``, or nothing when another thread holds the run right now (its chunk counts)."""
        if self.lock.acquire(blocking=False):
            try:
                self.cool(slots, owner, max_seconds)
            finally:
                self.lock.release()

    def _cooled(self, branch: CoolingTrainer, origin: tuple) -> CooledCopy:
        """The finished branch, scored and sampled as the run's own samples are, beside the run's own weights."""
        settings, ids = self.settings, self.trainer.val_ids[: self.settings.eval_chars + 1]
        with torch.random.fork_rng(devices=[]):  # the run's weights are read, never trained: no RNG of its moves
            run_val, _ = sequence_loss(self.trainer.model, ids)
        val = branch.evaluate(max_chars=settings.eval_chars).val_loss
        prime = self.sample_prime
        text = generate(branch.model, branch.vocab, prime, settings.sample_length, settings.temperature,
                        seed=branch.config.seed)
        return CooledCopy(still_copy(branch.model), branch, branch.from_step, branch.steps, branch.start_lr,
                          branch.seconds - self.trainer.seconds, val, run_val,
                          SampleRecord(branch.step, val, prime + text, prime), origin)

    def progress(self) -> Progress:
        trainer = self.trainer
        chars_per_s = trainer.chars_per_second
        steps_per_s = chars_per_s / trainer.chars_per_step
        left = max(0, self.settings.step_budget - trainer.step)
        eta = left / steps_per_s if steps_per_s > 0 else None
        return Progress(trainer.step, self.settings.step_budget, steps_per_s, chars_per_s, self.elapsed, eta)

    # -- control --------------------------------------------------------------------------------------------

    @_locked
    def start(self) -> None:
        """Ask for training chunks; a finished run must get a larger budget first, a lost one resumes from its
        last checkpoint."""
        if self.discarded:
            return
        if self.status == Status.LOST and self.remote is not None:
            self.remote.restore(self)
        self.notice = None
        self.cooling = None  # a cool-down under way is of weights that are about to change
        if self.step >= self.settings.step_budget:
            self._finish()
            return
        self.status = Status.RUNNING
        self.message = "Training. Pause stops it once the chunk in flight is done."

    @_locked
    def pause(self) -> None:
        if self.is_active:
            if self.remote is not None:
                self.remote.stop(self)  # the chunks in flight come back, then the exact state; the CPU is free
            if not self.is_active:
                return  # it finished, halted or was lost meanwhile: that status says more
            self.status = Status.PAUSED
            self.message = f"Paused at step {self.step:,}. Start continues from here."
            self._keep()

    def wait_for_slot(self, position: int | None, capacity: int, where: str = "this server") -> None:
        """Every slot is taken: say so, with the place in the queue."""
        self.status = Status.WAITING
        place = f"number {position} in the queue" if position else "in the queue"
        self.message = (
            f"Waiting for a free training slot: {where} trains {capacity} model{'s' if capacity != 1 else ''} "
            f"at a time and all are busy. You are {place}; training starts by itself when a slot frees."
        )

    @_locked
    def update_settings(self, settings: LiveSettings) -> None:
        """New budget or schedule; a finished run with a larger budget can be started again."""
        self.settings = settings
        if not settings.cool_down:  # the copy under way, and one already cooled: readers take the run itself
            self.cooling = self.cooled = None
        if self.remote is not None:
            self.remote.update_settings(settings)
        if self.status == Status.FINISHED and self.step < settings.step_budget:
            self.status = Status.PAUSED
            self.message = f"The budget is now {settings.step_budget:,} steps. Start continues from step {self.step:,}."
        elif self.step >= settings.step_budget and self.status != Status.READY:
            if self.remote is not None and self.is_active:
                self.remote.stop(self)  # the remote run ends at the new budget too: bring it back, free its CPU
            self._finish()
        if not self.is_active:
            self._keep(now=True)

    @_locked
    def retune(self, lr: float, clip: float | None) -> None:
        """New learning rate and clipping θ for the next steps (a halted run becomes paused)."""
        self.trainer.retune(lr=lr, clip=clip)
        if self.remote is not None:
            self.remote.retune(lr=lr, clip=clip)
        if self.status == Status.HALTED:
            self.status = Status.PAUSED
        clipping = f"clipping at θ = {clip:g}" if clip is not None else "no clipping"
        self.message = f"From step {self.step:,} on: learning rate {lr:g}, {clipping}. Start continues."
        if not self.is_active:
            self._keep(now=True)

    # -- training -------------------------------------------------------------------------------------------

    @_locked
    def tick(self, slots: TrainingSlots, owner: Hashable, max_seconds: float) -> list[StepRecord]:
        """One chunk for a run that wants training: hold a slot (or queue for one), train, and release the
        slot once the run stops by itself."""
        if not self.is_active:
            return []
        if self.remote is not None:  # trains elsewhere: poll, never wait (the remote has its own queue)
            return self.remote.tick(self, max_seconds)
        if not slots.acquire(owner):
            self.wait_for_slot(slots.queue_position(owner), slots.capacity)
            return []
        if self.status == Status.WAITING:
            self.status = Status.RUNNING
            self.message = f"A training slot is free: training from step {self.step:,}."
        records = self.advance(max_seconds)
        if not self.is_active:
            slots.release(owner)
        self._keep()
        return records

    def tick_unless_busy(self, slots: TrainingSlots, owner: Hashable, max_seconds: float) -> list[StepRecord]:
        """``tick``, or nothing when another thread is training this run right now (its chunk counts)."""
        if not self.lock.acquire(blocking=False):
            return []
        try:
            return self.tick(slots, owner, max_seconds)
        finally:
            self.lock.release()

    @_locked
    def step_once(self, slots: TrainingSlots, owner: Hashable, max_seconds: float) -> list[StepRecord]:
        """One chunk on demand (the Step button) for a run that is not training: it needs a free slot now,
        takes no place in the queue, and gives the slot back afterwards."""
        if self.is_active or self.discarded:
            return []
        if self.status == Status.LOST and self.remote is not None:
            self.remote.restore(self)  # a Step after a lost worker trains on from the last checkpoint
        if self.step >= self.settings.step_budget:
            self._finish()
            return []
        if not slots.acquire(owner):
            slots.release(owner)  # leave the queue: a Step is now or never
            self.message = (f"All {slots.capacity} training slots of this server are busy, so Step cannot train now. "
                            "Press Start to queue for a slot.")
            return []
        try:
            records = self.advance(max_seconds)
        finally:
            slots.release(owner)
        if self.status in (Status.READY, Status.PAUSED):
            self.status = Status.PAUSED
            steps = f"{len(records)} step{'s' if len(records) != 1 else ''}"
            self.message = f"One chunk of {steps}; now at step {self.step:,}. Step again, or Start."
        self._keep()
        return records

    @_locked
    def advance(self, max_seconds: float) -> list[StepRecord]:
        """Train for about ``max_seconds`` (at least one step), with evaluations, samples and snapshots on
        schedule; a trainer halt becomes the HALTED status, the budget's end the FINISHED one."""
        start = time.perf_counter()
        deadline = start + max_seconds
        records: list[StepRecord] = []
        try:
            if not self.samples:
                self._evaluate_and_sample()  # the untrained model: noise, and a loss near ln V
            while self.step < self.settings.step_budget:
                left = deadline - time.perf_counter()
                if records and left <= 0:
                    break
                steps = min(self._steps_to_next_event(), self.settings.step_budget - self.step)
                new = self.trainer.run(steps, max_seconds=max(left, 0.0))
                records += new
                if self.trainer.halt is not None:
                    self._halted()
                    break
                self._on_schedule()
                if not new:
                    break
            if self.step >= self.settings.step_budget and self.status != Status.HALTED:
                self._finish()
        finally:
            self.elapsed += time.perf_counter() - start
        return records

    def _steps_to_next_event(self) -> int:
        step = self.step
        return min(self.settings.sample_every - step % self.settings.sample_every,
                   self.snapshot_every - step % self.snapshot_every)

    def _on_schedule(self) -> None:
        step = self.step
        if step % self.snapshot_every == 0 and self.snapshots[-1][0] != step:
            self._snapshot()
        if step % self.settings.sample_every == 0 and self.samples[-1].step != step:
            self._evaluate_and_sample()

    def _evaluate_and_sample(self) -> None:
        trainer, settings = self.trainer, self.settings
        val = trainer.evaluate(max_chars=settings.eval_chars)
        prime = self.sample_prime
        text = generate(trainer.model, trainer.vocab, prime, settings.sample_length, settings.temperature,
                        seed=trainer.config.seed)
        self.samples.append(SampleRecord(trainer.step, val.val_loss, prime + text, prime))

    def _snapshot(self) -> None:
        """Keep the weights of this step; when more than MAX_SNAPSHOTS, drop every other one (the spacing
        doubles), so that the kept ones stay evenly spread from the first step to the last."""
        self.snapshots.append((self.step, light_copy(self.trainer.model)))
        if len(self.snapshots) > MAX_SNAPSHOTS:
            self.snapshot_every *= 2
            first = self.snapshots[0][0]  # the initial weights (or a resumed checkpoint's) always stay
            self.snapshots = [(s, w) for s, w in self.snapshots if s == first or s % self.snapshot_every == 0]

    @_locked
    def release(self) -> None:
        """Give back what trains this run elsewhere (Reset); the run itself stays readable here."""
        if self.remote is not None:
            self.remote.release()
            self.remote = None

    def _finish(self) -> None:
        if self.samples and self.samples[-1].step != self.step:
            self._evaluate_and_sample()
        self.status = Status.FINISHED
        self.message = (
            f"Finished: the budget of {self.settings.step_budget:,} steps is spent. Raise the budget to train on."
        )

    def _halted(self) -> None:
        halt = self.trainer.halt
        self.status = Status.HALTED
        self.message = (
            f"Training stopped by itself at step {halt.step:,}: {halt.reason}. The weights from step "
            f"{halt.restored_step:,}, the last ones known to be good, were put back, so the model is not lost. "
            "The steps were too large for the loss surface: lower the learning rate or turn gradient clipping "
            "on, apply that to this run, and press Start to continue."
        )


class RunRegistry:
    """Live runs found again by the unguessable token in their address (``?run=<token>``).

    A reload or a new tab starts a new session; with the token it takes up the same LiveRun, while a
    session that holds the run is still alive (its tab open, or closed less than the host's
    disconnected-session TTL ago: ``alive`` says which). The registry holds runs weakly, so it never keeps a
    model longer than the sessions do, and it keys them by the token's SHA-256, so that a lookup compares
    digests, not the secret. Without the token there is no way to a run: nothing lists them.
    """

    TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 256 random bits, 43 characters

    @dataclass
    class _Entry:
        run: weakref.ref  # weakref.ref[LiveRun]
        holders: set  # the sessions that hold the run

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict[str, RunRegistry._Entry] = {}

    @staticmethod
    def _digest(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()

    def register(self, run: LiveRun, holder: Hashable) -> str:
        """Give ``run`` a fresh token (``run.token``), held by ``holder``; a registered run gains the holder."""
        with self._lock:
            self._purge_dead()
            entry = self._entries.get(self._digest(run.token)) if run.token else None
            if entry is None or entry.run() is not run:
                run.token = secrets.token_urlsafe(self.TOKEN_BYTES)
                entry = RunRegistry._Entry(weakref.ref(run), set())
                self._entries[self._digest(run.token)] = entry
            entry.holders.add(holder)
            return run.token

    def adopt(self, run: LiveRun, holder: Hashable) -> str:
        """Register ``run`` under the token it already has (a run found again on a Ray cluster by its token)."""
        with self._lock:
            self._purge_dead()
            self._entries[self._digest(run.token)] = RunRegistry._Entry(weakref.ref(run), {holder})
            return run.token

    def attach(self, token: str, holder: Hashable, alive: Callable[[Hashable], bool]) -> LiveRun | None:
        """The run of ``token`` for ``holder`` (who then holds it too), or None when the token is unknown, or
        its run is gone: every session that held it has ended (``alive`` is False for all of them)."""
        with self._lock:
            self._purge_dead()
            key = self._digest(token)
            entry = self._entries.get(key)
            if entry is None:
                return None
            entry.holders = {h for h in entry.holders if h == holder or alive(h)}
            run = entry.run()
            if run is None or not entry.holders:
                del self._entries[key]
                return None
            entry.holders.add(holder)
            return run

    def held_by(self, token: Hashable, connected: Callable[[Hashable], bool]) -> bool | None:
        """Whether a session that holds ``token``'s run is ``connected`` (its tab open); None for a token this
        registry does not know (then nobody can tell)."""
        if not isinstance(token, str):
            return None
        with self._lock:
            entry = self._entries.get(self._digest(token))
            holders = set(entry.holders) if entry is not None else None
        return None if holders is None else any(connected(h) for h in holders)

    def release(self, token: str | None, holder: Hashable) -> None:
        """``holder`` lets the run go (Reset); the run is forgotten once nobody holds it."""
        if not token:
            return
        with self._lock:
            key = self._digest(token)
            entry = self._entries.get(key)
            if entry is not None:
                entry.holders.discard(holder)
                if not entry.holders:
                    del self._entries[key]

    def __len__(self) -> int:
        with self._lock:
            self._purge_dead()
            return len(self._entries)

    def _purge_dead(self) -> None:
        for key in [k for k, e in self._entries.items() if e.run() is None]:
            del self._entries[key]


def with_budget(settings: LiveSettings, step_budget: int) -> LiveSettings:
    """The same schedule with another step budget."""
    return replace(settings, step_budget=step_budget)
