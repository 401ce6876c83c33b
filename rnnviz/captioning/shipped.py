"""The shipped captioners: their rows in rnnviz/assets/models/MODELS.md and the held-out figures they recorded.

The rows live in their own table ("Image captioners"), whose shape the character models' parser
(``rnnviz.charlm.pretrained.shipped_models``) does not match, and the other way round.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rnnviz.captioning import world
from rnnviz.captioning.checkpoint import load_captioner
from rnnviz.captioning.metrics import boat_rate, evaluate
from rnnviz.captioning.model import Captioner
from rnnviz.charlm.pretrained import MODELS_DIR

MAX_BYTES = 2_000_000  # each shipped captioner
FILES = {"every": "captioner-every.pt", "h0": "captioner-h0.pt"}
# The held-out figures are measured on these fixed sets (greedy decoding).
EVAL_N, EVAL_SEED = 1000, 12345
COUNTER_N, COUNTER_SEED = 500, 54321
_ROW = re.compile(  # | `captioner-every.pt` | every | p = 0.9, 1200 steps | 812,345 | 0.812 | 0.031 | 0.052 | 0.140 |
    r"^\| `(?P<file>captioner-[\w.-]+\.pt)` \| (?P<join>every|h0) \| p = (?P<p>[\d.]+), (?P<steps>\d+) steps \| "
    r"(?P<size>[\d,]+) \| (?P<exact>\d\.\d{3}) \| (?P<chair_i>\d\.\d{3}) \| (?P<chair_s>\d\.\d{3}) \| "
    r"(?P<boat>\d\.\d{3}) \|$"
)


@dataclass(frozen=True)
class Record:
    """One row of MODELS.md's captioner table."""

    file: str
    join: str
    p: float
    steps: int
    size: int
    exact: float  # exact-match rate on the held-out set
    chair_i: float
    chair_s: float
    boat: float  # share of captions naming a boat on water without a boat


def records() -> list[Record]:
    """The captioners recorded in MODELS.md, in its order."""
    rows = map(_ROW.match, (MODELS_DIR / "MODELS.md").read_text(encoding="utf-8").splitlines())
    return [Record(m["file"], m["join"], float(m["p"]), int(m["steps"]), int(m["size"].replace(",", "")),
                   float(m["exact"]), float(m["chair_i"]), float(m["chair_s"]), float(m["boat"])) for m in rows if m]


def eval_sets() -> tuple[world.Scenes, world.Scenes]:
    """(held-out scenes, water-without-boat scenes) the recorded figures are measured on."""
    return world.heldout(EVAL_N, EVAL_SEED), world.counterexamples(COUNTER_N, COUNTER_SEED)


def measure(model: Captioner) -> dict[str, float]:
    """The figures a MODELS.md row records: held-out exact match, attributes, CHAIR; boat rate on empty water."""
    held, counter = eval_sets()
    return {**evaluate(model, held), "boat": boat_rate(model, counter)}


def load(join: str) -> tuple[Captioner, dict]:
    """The shipped captioner of a join, with the metrics stored in its file."""
    return load_captioner(MODELS_DIR / FILES[join])


def table_row(file: str, model: Captioner, size: int, figures: dict[str, float]) -> str:
    """The MODELS.md row for a shipped captioner."""
    c = model.config
    return (f"| `{file}` | {c.join} | p = {c.p:g}, {c.steps} steps | {size:,} | {figures['exact']:.3f} | "
            f"{figures['chair_i']:.3f} | {figures['chair_s']:.3f} | {figures['boat']:.3f} |")
