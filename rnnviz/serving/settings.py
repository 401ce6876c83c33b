"""A server's settings for a class: where runs train, where they are saved, how many train at once.

Each setting comes from an environment variable first, else from the ``[rnnviz]`` section of
``.streamlit/rnnviz.toml`` (SETTINGS_FILE), else from its default. A missing or damaged file is as good as none,
and a value that is not a number falls back to the default: a bad setting never stops a server. No streamlit here.
"""

from __future__ import annotations

import os
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from rnnviz.core.runtime import physical_cores

SETTINGS_FILE = Path(".streamlit") / "rnnviz.toml"  # [rnnviz] ray_address = "…", run_dir = "…", …

ADDRESS_ENV = "RNNVIZ_RAY_ADDRESS"  # "local", "auto" or HOST:6379; unset or "" trains in this process
CHECKPOINT_DIR_ENV = "RNNVIZ_CHECKPOINT_DIR"  # actors' checkpoints (default: ray/ in the run folder), seen by all nodes
CHECKPOINT_EVERY_ENV = "RNNVIZ_CHECKPOINT_EVERY"  # optimizer steps between an actor's checkpoints
MAX_RESTARTS_ENV = "RNNVIZ_RAY_MAX_RESTARTS"  # times Ray restarts a dead actor by itself (from its checkpoint)
DEFAULT_CHECKPOINT_EVERY = 200
DEFAULT_MAX_RESTARTS = 1

RUN_DIR_ENV = "RNNVIZ_RUN_DIR"  # where runs are saved; "off" keeps nothing
SAVE_EVERY_ENV = "RNNVIZ_SAVE_EVERY_S"  # seconds of training between saves
DEFAULT_SAVE_EVERY_S = 60.0  # a restart loses at most this much training
DEFAULT_SAVE_EVERY_STEPS = 5_000  # and at most this many steps (a tiny model takes thousands a minute)
DEFAULT_RETENTION_DAYS = 7.0  # a run not opened for this long is deleted
DEFAULT_MAX_TOTAL_MB = 5_000  # the whole folder; the oldest runs go first beyond it

TRAINING_SLOTS_ENV = "RNNVIZ_TRAINING_SLOTS"  # sessions that train at once in this process (default: physical cores)


def file_settings(path: Path = SETTINGS_FILE) -> dict:
    """The ``[rnnviz]`` section of the settings file; {} when it is missing, unreadable or not a section."""
    try:
        with path.open("rb") as handle:
            section = tomllib.load(handle).get("rnnviz", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return section if isinstance(section, dict) else {}


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


def backend_setting(environ: dict | None = None, settings_file: Path = SETTINGS_FILE) -> BackendSetting:
    """The backend chosen by the environment (first) or the settings file; nothing set → in this process."""
    environ = os.environ if environ is None else environ
    file = file_settings(settings_file)
    address, source = environ.get(ADDRESS_ENV, "").strip(), f"${ADDRESS_ENV}"
    if not address and file.get("ray_address"):
        address, source = str(file["ray_address"]).strip(), f"ray_address in {settings_file}"
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


def default_run_dir(environ: dict | None = None, platform: str = sys.platform) -> Path:
    """The platform's usual per-user place for state: $XDG_STATE_HOME or ~/.local/state on Linux and other
    Unix, ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows; runs go in ``rnnviz/runs``."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home())
    if platform == "win32":
        base = Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(environ.get("XDG_STATE_HOME") or home / ".local" / "state")
    return base / "rnnviz" / "runs"


@dataclass(frozen=True)
class StoreSetting:
    """Where and how often runs are saved; ``folder`` None keeps nothing (``RNNVIZ_RUN_DIR=off``)."""

    folder: Path | None
    save_every_s: float = DEFAULT_SAVE_EVERY_S
    save_every_steps: int = DEFAULT_SAVE_EVERY_STEPS
    retention_s: float = DEFAULT_RETENTION_DAYS * 86_400
    max_total_bytes: int = DEFAULT_MAX_TOTAL_MB * 1_000_000
    source: str = "the default"


def store_setting(environ: dict | None = None, settings_file: Path = SETTINGS_FILE) -> StoreSetting:
    """The run folder and its limits from the environment (first), ``[rnnviz]`` in the settings file, or the
    defaults."""
    environ = os.environ if environ is None else environ
    file = file_settings(settings_file)
    folder, source = environ.get(RUN_DIR_ENV, "").strip(), f"${RUN_DIR_ENV}"
    if not folder and file.get("run_dir"):
        folder, source = str(file["run_dir"]).strip(), f"run_dir in {settings_file}"
    if not folder:
        folder, source = str(default_run_dir(environ)), "the default (the per-user state folder)"

    def number(value, default: float) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return default
        return number if number > 0 else default

    every = number(environ.get(SAVE_EVERY_ENV) or file.get("save_every_s"), DEFAULT_SAVE_EVERY_S)
    days = number(file.get("run_retention_days"), DEFAULT_RETENTION_DAYS)
    megabytes = number(file.get("run_dir_max_mb"), DEFAULT_MAX_TOTAL_MB)
    return StoreSetting(None if folder.lower() == "off" else Path(folder).expanduser(), every,
                        DEFAULT_SAVE_EVERY_STEPS, days * 86_400, int(megabytes * 1_000_000), source)


def training_slot_count(environ: dict | None = None) -> int:
    """Sessions that may train at once in this process: $RNNVIZ_TRAINING_SLOTS, else the physical cores."""
    environ = os.environ if environ is None else environ
    try:
        count = int(environ.get(TRAINING_SLOTS_ENV) or 0)
    except ValueError:
        count = 0
    return count if count > 0 else physical_cores()
