"""Where a session's Trainer lives: in this process (the default), or in a Ray actor on a cluster.

A backend holds one Trainer and answers the same few calls wherever it runs: ``run`` N steps and return
their StepRecords, ``evaluate`` the val split, ``sample`` characters, ``weights`` (a state_dict for the
explorer and sampling), ``state_dict``/``load_state_dict`` and ``save_checkpoint``/``load_checkpoint`` for an
exact resume, and ``release``. ``InProcessBackend`` is today's behaviour; ``rnnviz.charlm.ray_backend`` has the
Ray one. Which one a server uses comes from ``backend_setting``: the environment variable RNNVIZ_RAY_ADDRESS,
else ``ray_address`` in the ``[rnnviz]`` section of ``.streamlit/rnnviz.toml``; unset, training stays in
this process.

No streamlit here.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from torch import Tensor

from rnnviz.charlm.checkpoint import load_checkpoint, save_checkpoint
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import EvalRecord, Halt, StepRecord, TrainConfig, Trainer

ADDRESS_ENV = "RNNVIZ_RAY_ADDRESS"  # "local", "auto" or HOST:6379; unset or "" trains in this process
CHECKPOINT_DIR_ENV = "RNNVIZ_CHECKPOINT_DIR"  # where actors write checkpoints; every node must see the same folder
CHECKPOINT_EVERY_ENV = "RNNVIZ_CHECKPOINT_EVERY"  # optimizer steps between an actor's checkpoints
MAX_RESTARTS_ENV = "RNNVIZ_RAY_MAX_RESTARTS"  # times Ray restarts a dead actor by itself (from its checkpoint)
SETTINGS_FILE = Path(".streamlit") / "rnnviz.toml"  # [rnnviz] ray_address = "…", checkpoint_dir = "…"
DEFAULT_CHECKPOINT_EVERY = 200
DEFAULT_MAX_RESTARTS = 1


@dataclass(frozen=True)
class BackendSetting:
    """Which backend a server asked for, and with what; ``address`` None trains in this process."""

    address: str | None  # Ray address: "local", "auto" or HOST:PORT
    checkpoint_dir: Path  # shared by every node of the cluster
    checkpoint_every: int  # steps between checkpoints
    max_restarts: int  # Ray restarts a dead actor this often before the page offers a resume
    source: str  # where the address came from, in words

    @property
    def wants_ray(self) -> bool:
        return bool(self.address)


def _file_settings(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            section = tomllib.load(handle).get("rnnviz", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return section if isinstance(section, dict) else {}


def backend_setting(environ: dict | None = None, settings_file: Path = SETTINGS_FILE) -> BackendSetting:
    """The backend chosen by the environment (first) or the settings file; nothing set → in this process."""
    environ = os.environ if environ is None else environ
    file = _file_settings(settings_file)
    address, source = environ.get(ADDRESS_ENV, "").strip(), f"${ADDRESS_ENV}"
    if not address and file.get("ray_address"):
        address, source = str(file["ray_address"]).strip(), f"ray_address in {settings_file}"
    folder = (environ.get(CHECKPOINT_DIR_ENV) or file.get("checkpoint_dir")
              or Path(tempfile.gettempdir()) / "rnnviz-runs")

    def number(env: str, key: str, default: int) -> int:
        try:
            return max(0, int(environ.get(env) or file.get(key) or default))
        except (TypeError, ValueError):
            return default

    return BackendSetting(address or None, Path(folder), max(1, number(CHECKPOINT_EVERY_ENV, "checkpoint_every",
                          DEFAULT_CHECKPOINT_EVERY)), number(MAX_RESTARTS_ENV, "max_restarts", DEFAULT_MAX_RESTARTS),
                          source if address else "nothing set")


class TrainerBackend(ABC):
    """One session's Trainer, wherever it lives; every call returns plain records, tensors and dicts."""

    kind: str  # "in-process" or "ray", for messages

    @abstractmethod
    def run(self, steps: int, max_seconds: float | None = None) -> list[StepRecord]:
        """Up to ``steps`` optimizer steps (fewer after ``max_seconds``, or on a halt); their records."""

    @abstractmethod
    def evaluate(self, max_chars: int | None = None) -> EvalRecord:
        """The val loss now, in nats/char."""

    @abstractmethod
    def sample(self, prime: str, length: int, temperature: float = 1.0, seed: int | None = None) -> str:
        """``length`` characters after ``prime`` (only characters of the model's vocabulary)."""

    @abstractmethod
    def weights(self) -> dict[str, Tensor]:
        """The model's state_dict, on the CPU, detached (a copy)."""

    @abstractmethod
    def state_dict(self) -> dict:
        """Everything for an exact resume (Trainer.state_dict)."""

    @abstractmethod
    def load_state_dict(self, state: dict) -> None:
        """Continue from what ``state_dict`` captured."""

    @abstractmethod
    def save_checkpoint(self, path: str | Path) -> Path:
        """The checkpoint file of rnnviz.charlm.checkpoint, written atomically."""

    @abstractmethod
    def load_checkpoint(self, path: str | Path) -> int:
        """Continue from a checkpoint file; returns its step."""

    @property
    @abstractmethod
    def step(self) -> int:
        """Optimizer steps taken."""

    @property
    @abstractmethod
    def halt(self) -> Halt | None:
        """Why the last ``run`` stopped by itself (the last good weights are back), else None."""

    @abstractmethod
    def release(self) -> None:
        """Give the Trainer's memory (and, on a cluster, its CPU) back; the backend is unusable after."""


class InProcessBackend(TrainerBackend):
    """The Trainer in this process: today's behaviour."""

    kind = "in-process"

    def __init__(self, trainer: Trainer, corpus_name: str | None = None):
        self.trainer = trainer
        self.corpus_name = corpus_name or trainer.corpus.name

    @classmethod
    def create(cls, config: TrainConfig, corpus: Corpus) -> InProcessBackend:
        return cls(Trainer(config, corpus), corpus.name)

    def run(self, steps, max_seconds=None):
        return self.trainer.run(steps, max_seconds=max_seconds)

    def evaluate(self, max_chars=None):
        return self.trainer.evaluate(max_chars=max_chars)

    def sample(self, prime, length, temperature=1.0, seed=None):
        return generate(self.trainer.model, self.trainer.vocab, prime, length, temperature, seed=seed)

    def weights(self):
        return {k: v.detach().to("cpu", copy=True) for k, v in self.trainer.model.state_dict().items()}

    def state_dict(self):
        return self.trainer.state_dict()

    def load_state_dict(self, state):
        self.trainer.load_state_dict(state)

    def save_checkpoint(self, path):
        return save_checkpoint(path, self.trainer, self.corpus_name)

    def load_checkpoint(self, path):
        checkpoint = load_checkpoint(path)
        self.trainer.load_state_dict(checkpoint.trainer_state)
        return checkpoint.step

    @property
    def step(self):
        return self.trainer.step

    @property
    def halt(self):
        return self.trainer.halt

    def release(self):
        self.trainer = None


class RemoteTraining(Protocol):
    """What a LiveRun (rnnviz.charlm.live) calls when its chunks train elsewhere; every call returns at once
    except ``stop``, which waits for the chunks in flight (a click waits for a chunk, as in this process)."""

    def tick(self, run, max_seconds: float) -> list[StepRecord]:
        """Poll without blocking: merge the chunks that came back into ``run``, keep the next ones in flight."""

    def stop(self, run) -> None:
        """Bring the exact training state back into ``run`` and free the remote CPU."""

    def restore(self, run) -> None:
        """After a loss: put ``run`` back to its last checkpoint, so that Start continues from there."""

    def update_settings(self, settings) -> None: ...

    def retune(self, lr: float, clip: float | None) -> None: ...

    def release(self) -> None:
        """Free everything remote for good (Reset, or the run's session ended)."""
