"""Where a session's run trains: in this process (the default), or in a Ray actor on a cluster.

A LiveRun (rnnviz.charlm.live) trains its chunks in this process unless it has a ``remote``: a
``RemoteTraining`` that trains them elsewhere (rnnviz.charlm.ray_backend.RayRun, one Ray actor per run). Which
one a server uses comes from ``backend_setting``: the environment variable RNNVIZ_RAY_ADDRESS, else
``ray_address`` in the ``[rnnviz]`` section of ``.streamlit/rnnviz.toml``; unset, training stays in this
process. tests/test_backend_contract.py holds both to one contract: bit-identical weights, exact resumes.

No streamlit here.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rnnviz.charlm.train import StepRecord

ADDRESS_ENV = "RNNVIZ_RAY_ADDRESS"  # "local", "auto" or HOST:6379; unset or "" trains in this process
CHECKPOINT_DIR_ENV = "RNNVIZ_CHECKPOINT_DIR"  # actors' checkpoints (default: ray/ in the run folder), seen by all nodes
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
    from rnnviz.charlm.durable import store_setting  # durable imports live, which a backend must not need first

    runs = store_setting(environ, settings_file).folder  # the folder of this server's saved runs, or None (off)
    folder = (environ.get(CHECKPOINT_DIR_ENV) or file.get("checkpoint_dir")
              or (runs / "ray" if runs is not None else Path(tempfile.gettempdir()) / "rnnviz-runs"))

    def number(env: str, key: str, default: int) -> int:
        try:
            return max(0, int(environ.get(env) or file.get(key) or default))
        except (TypeError, ValueError):
            return default

    return BackendSetting(address or None, Path(folder), max(1, number(CHECKPOINT_EVERY_ENV, "checkpoint_every",
                          DEFAULT_CHECKPOINT_EVERY)), number(MAX_RESTARTS_ENV, "max_restarts", DEFAULT_MAX_RESTARTS),
                          source if address else "nothing set")


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
