"""Several Trainers race on one corpus, on one clock: val loss against seconds of training.

Each contender keeps its own clock, ``trainer.seconds``, which counts only the wall time of its own optimizer
steps: evaluation, sampling and the other contenders' turns pause it. The race moves every contender to the
same target time in turn, in slices of a few seconds (``slice_s``), so that load from other jobs on the
machine hits all of them alike. At each mark (10, 30, 60, … s of training) a contender is scored on the
val split, the last 10% of the text:

    val loss = −(1/n) Σ log p(x_{t+1} | x_{≤t})   in nats/char,

exactly ``Trainer.evaluate`` (``sequence_loss``), so the figures are those of bench/time_to_loss. A clock
overshoots its mark by at most one optimizer step; ``Mark.seconds`` records where it really stood.

``Race.advance()`` runs one slice and returns the marks it recorded, so a host can drive the race a slice at a
time (``events()`` is the same as a generator); ``RaceRunner`` drives it from a background thread for a page,
holding one training slot (``TrainingSlots``) while it trains, with Pause and Stop between optimizer steps.
No streamlit here.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.slots import TrainingSlots

MARKS = (10, 30, 60, 90, 120, 150)  # seconds of training at which val loss is recorded
SLICE_S = 5.0  # seconds of training each contender takes per turn
SAMPLE_TEMPERATURE = 0.8


class Contender(Protocol):
    """What the race needs of a contender: a Trainer, or anything with the same clock and methods."""

    seconds: float  # training wall time so far (its own steps only)
    step: int
    halt: object | None  # set when a run stops by itself

    def run(self, steps: int, on_step=None, max_seconds: float | None = None) -> list: ...

    def evaluate(self, max_chars: int | None = None): ...  # returns a record with .val_loss and .chars


@dataclass(frozen=True)
class Mark:
    """One contender's val loss at one mark."""

    name: str  # the contender
    mark: float  # the mark it was due at, seconds of training
    seconds: float  # its clock when scored: the mark plus at most one optimizer step
    step: int  # optimizer steps taken
    val_loss: float  # nats/char over the val split (or its first ``eval_chars``)
    chars: int  # characters scored
    load: float | None = None  # the machine's 1-minute load average when scored (None where the OS has none)


@dataclass(frozen=True)
class RaceSample:
    """A short sample a contender wrote at a mark (same seed every time: only the weights differ)."""

    name: str
    mark: float
    step: int
    text: str


class Race:
    """Contenders (name → Trainer) trained in turn toward the same clock, scored at ``marks``.

    ``curves[name]`` lists its Marks in order, ``samples[name]`` its RaceSamples, ``halted[name]`` why it left
    the race (a non-finite or exploding loss: the trainer put back its last good weights). ``clock`` is the
    time every contender still in the race has reached; the race is ``finished`` at the last mark.
    """

    def __init__(
        self,
        trainers: Mapping[str, Contender],
        marks: tuple[float, ...] = MARKS,
        slice_s: float = SLICE_S,
        eval_chars: int | None = None,
        sample_chars: int = 0,
        temperature: float = SAMPLE_TEMPERATURE,
        corpus_name: str | None = None,
    ):
        if not trainers:
            raise ValueError("a race needs at least one contender")
        if not marks or min(marks) <= 0:
            raise ValueError(f"marks must be positive seconds of training, not {marks}")
        if not slice_s > 0:
            raise ValueError(f"a slice must be a positive number of seconds, not {slice_s}")
        self.trainers = dict(trainers)
        self.marks = tuple(sorted({float(m) for m in marks}))
        self.slice_s = float(slice_s)
        self.eval_chars = eval_chars
        self.sample_chars = sample_chars
        self.temperature = temperature
        self.corpus_name = corpus_name  # for a page to show
        self.clock = 0.0
        self.curves: dict[str, list[Mark]] = {name: [] for name in self.trainers}
        self.samples: dict[str, list[RaceSample]] = {name: [] for name in self.trainers}
        self.halted: dict[str, str] = {}

    @classmethod
    def from_configs(cls, corpus: Corpus, configs: Mapping[str, TrainConfig], **kwargs) -> Race:
        """A race of fresh Trainers, one per config, all on ``corpus``."""
        kwargs.setdefault("corpus_name", corpus.name)
        return cls({name: Trainer(config, corpus) for name, config in configs.items()}, **kwargs)

    # -- where the race stands -------------------------------------------------------------------------------

    @property
    def duration(self) -> float:
        """The last mark: seconds of training each contender gets."""
        return self.marks[-1]

    @property
    def finished(self) -> bool:
        return self.clock >= self.duration or len(self.halted) == len(self.trainers)

    @property
    def fraction(self) -> float:
        """Share of the race done: the contenders' clocks (capped at the end) over the total."""
        running = [n for n in self.trainers if n not in self.halted] or list(self.trainers)
        done = sum(min(self.trainers[n].seconds, self.duration) for n in running)
        return 1.0 if self.finished else min(1.0, done / (self.duration * len(running)))

    def next_target(self) -> float:
        """The clock every contender trains to next: one slice on, but never past the next mark."""
        upcoming = [m for m in self.marks if m > self.clock]
        if not upcoming:
            return self.duration
        return min(self.clock + self.slice_s, upcoming[0])

    def latest(self, name: str) -> Mark | None:
        curve = self.curves[name]
        return curve[-1] if curve else None

    # -- running it ------------------------------------------------------------------------------------------

    def advance(self, should_stop: Callable[[], bool] | None = None) -> list[Mark]:
        """One slice: each contender in turn trains until its own clock reaches ``next_target()``, then is
        scored at every mark it has reached. Returns the new Marks. When ``should_stop`` turns True (checked
        between optimizer steps) it returns early; the next call continues where this one stopped."""
        if self.finished:
            return []
        target = self.next_target()
        new: list[Mark] = []
        for name, trainer in self.trainers.items():
            if name in self.halted:
                continue
            if not self._train_until(name, trainer, target, should_stop):
                return new
            new += self._score_due(name, trainer)
        self.clock = target
        return new

    def events(self, should_stop: Callable[[], bool] | None = None) -> Iterator[list[Mark]]:
        """A generator of slices: yields the Marks of each slice until the race is finished (or stopped)."""
        while not self.finished:
            marks = self.advance(should_stop)
            yield marks
            if should_stop is not None and should_stop():
                return

    def run(self, on_mark: Callable[[Mark], None] | None = None) -> dict[str, list[Mark]]:
        """The whole race; ``on_mark`` hears of every mark as it is recorded. Returns ``curves``."""
        for marks in self.events():
            for mark in marks:
                if on_mark is not None:
                    on_mark(mark)
        return self.curves

    def _train_until(self, name: str, trainer: Contender, target: float,
                     should_stop: Callable[[], bool] | None) -> bool:
        """Train ``trainer`` until its clock reaches ``target``; False when stopped early."""
        while trainer.seconds < target:
            if should_stop is not None and should_stop():
                return False
            # a few steps per call (the wall deadline is about the training time left), so a stop is heard soon
            trainer.run(1_000_000, max_seconds=min(target - trainer.seconds, 0.5))
            if trainer.halt is not None:
                self.halted[name] = str(getattr(trainer.halt, "reason", trainer.halt))
                return True
        return True

    def _score_due(self, name: str, trainer: Contender) -> list[Mark]:
        if name in self.halted:
            return []
        scored = {m.mark for m in self.curves[name]}
        new = []
        for due in (m for m in self.marks if m <= trainer.seconds and m not in scored):
            record = trainer.evaluate(self.eval_chars)
            mark = Mark(name, due, trainer.seconds, trainer.step, record.val_loss, record.chars, load_average())
            self.curves[name].append(mark)
            new.append(mark)
        if new and self.sample_chars > 0:
            self.samples[name].append(RaceSample(name, new[-1].mark, trainer.step, self._sample(trainer)))
        return new

    def _sample(self, trainer: Contender) -> str:
        return generate(trainer.model, trainer.vocab, "", self.sample_chars, self.temperature, seed=0)


def load_average() -> float | None:
    """The machine's 1-minute load average (runnable processes, all cores together), or None where the OS
    has none: above the core count, other work took training time from the contenders."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


class RaceStatus(StrEnum):
    """Where a race driven by a RaceRunner stands."""

    READY = "ready"  # built, not started
    RUNNING = "running"  # the thread trains
    WAITING = "waiting"  # wants to train; every training slot of the server is taken
    PAUSED = "paused"  # stopped by the user (or by a page that stopped asking), can continue
    STOPPED = "stopped"  # ended by the user; the models are kept
    FINISHED = "finished"  # the last mark is reached


class RaceRunner:
    """Drives a Race from a background thread; a page calls ``start``, ``pause``, ``stop`` and ``poll``.

    While it trains it holds one slot of ``slots`` under ``owner`` (asking again before every slice, which keeps
    the lease), and gives it back when it pauses, stops or finishes. A page that stops polling for
    ``idle_pause_s`` (its tab was closed) pauses the race, so a forgotten race never keeps a core. The thread
    never touches the page: the page reads ``race``, ``status`` and ``message``.
    """

    def __init__(self, race: Race, slots: TrainingSlots, owner: Hashable, idle_pause_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        self.race = race
        self.slots = slots
        self.owner = owner
        self.idle_pause_s = idle_pause_s
        self._clock = clock
        self.status = RaceStatus.READY
        self.message = "Ready: press Start to race."
        self.error: str | None = None
        self.token: str | None = None  # set by a RunRegistry: the address a reload finds the race by
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None  # the thread that trains; None once it has decided to end
        self._last_thread: threading.Thread | None = None
        self._seen = clock()

    @property
    def is_active(self) -> bool:
        return self.status in (RaceStatus.RUNNING, RaceStatus.WAITING)

    @property
    def thread_alive(self) -> bool:
        return self._last_thread is not None and self._last_thread.is_alive()

    def poll(self) -> RaceStatus:
        """The page is still watching (keeps the race going); returns the status."""
        self._seen = self._clock()
        return self.status

    def start(self) -> None:
        with self.lock:
            if self.race.finished or self.status == RaceStatus.STOPPED:
                return
            self._seen = self._clock()
            self.status = RaceStatus.RUNNING
            self.message = "Racing: each model trains a few seconds in turn."
            if self._thread is None:  # decided under this lock: a thread that is ending never misses a start
                self._thread = self._last_thread = threading.Thread(target=self._loop, name="rnnviz-race",
                                                                    daemon=True)
                self._thread.start()

    def pause(self) -> None:
        with self.lock:
            if self.is_active:
                self.status = RaceStatus.PAUSED
                self.message = f"Paused at {self.race.clock:g} s of training each. Start continues."

    def stop(self) -> None:
        with self.lock:
            if self.status != RaceStatus.FINISHED:
                self.status = RaceStatus.STOPPED
                self.message = f"Stopped at {self.race.clock:g} s of training each; the models are kept."

    def join(self, timeout: float | None = None) -> None:
        """Wait for the training thread to end (after a pause, a stop or the finish)."""
        if self._last_thread is not None:
            self._last_thread.join(timeout)

    def _should_stop(self) -> bool:
        if self.status != RaceStatus.RUNNING:
            return True
        if self._clock() - self._seen > self.idle_pause_s:
            with self.lock:
                if self.status == RaceStatus.RUNNING:
                    self.status = RaceStatus.PAUSED
                    self.message = "Paused: nobody was watching the race. Start continues."
            return True
        return False

    def _loop(self) -> None:
        try:
            while True:
                with self.lock:  # the decision to end is taken under the lock that start() takes
                    if not self.is_active or self.race.finished:
                        if self.race.finished and self.status != RaceStatus.STOPPED:
                            self.status = RaceStatus.FINISHED
                            self.message = self._finished_message()
                        self._end()
                        return
                if not self.slots.acquire(self.owner):
                    with self.lock:
                        if self.status == RaceStatus.RUNNING:
                            self.status = RaceStatus.WAITING
                            self.message = ("Waiting for a free training slot: all slots of this server are busy; "
                                            "the race starts by itself when one frees.")
                    if self._clock() - self._seen > self.idle_pause_s:
                        self.pause()
                    time.sleep(0.5)
                    continue
                with self.lock:
                    if self.status == RaceStatus.WAITING:
                        self.status = RaceStatus.RUNNING
                        self.message = "Racing: each model trains a few seconds in turn."
                self.race.advance(self._should_stop)
        except Exception as err:  # the page shows it; the models stay as they were
            with self.lock:
                self.status = RaceStatus.STOPPED
                self.error = f"{type(err).__name__}: {err}"
                self.message = f"The race stopped on an error: {self.error}"
                self._end()

    def _end(self) -> None:
        """The thread gives its slot back and lets a later start() begin a new one (holding the lock)."""
        self.slots.release(self.owner)
        self._thread = None

    def _finished_message(self) -> str:
        parts = []
        for name in self.race.trainers:
            mark = self.race.latest(name)
            if name in self.race.halted:
                parts.append(f"{name} left the race ({self.race.halted[name]})")
            elif mark is not None:
                parts.append(f"{name} {mark.val_loss:.3f}")
        return f"Finished at {self.race.duration:g} s of training each: val loss " + ", ".join(parts) + " nats/char."


def val_at(curve: list[Mark], mark: float) -> float:
    """The val loss a curve recorded at ``mark`` (NaN when it did not reach it)."""
    return next((m.val_loss for m in curve if m.mark == mark), math.nan)
