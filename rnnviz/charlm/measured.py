"""How far each Shakespeare preset got at 10, 30, 60, 90 and 150 s of training, measured in one race on this
project's 2-core machine (bench/anytime.py), so that a live run can be read against them: "at 30 s the quick
demo stood at 1.56, this run at 1.66".

The figures live in ``rnnviz/assets/preset_marks.json``, which ``python -m bench.anytime`` writes from the same
race that it records in bench/results.json (a test checks that the two agree). They are what the presets reached
there, under that race's load; a run on other hardware, or on a busy server, stands lower on its own clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MARKS_FILE = Path(__file__).resolve().parent.parent / "assets" / "preset_marks.json"
CORPUS = "tiny-shakespeare"  # the race's corpus: the only one whose val split the figures describe


@dataclass(frozen=True)
class PresetMarks:
    """One race's figures: ``val_at[preset][seconds]`` in nats/char over the val split's first ``eval_chars``."""

    measured: str  # when, "YYYY-MM-DD"
    machine: str  # where, in words
    row: str  # the bench/results.json row they come from
    load: tuple[float, float]  # 1-minute load average before and after the race
    eval_chars: int  # scored, as the live page scores a run, on the val split's first eval_chars characters
    val_at: Mapping[str, Mapping[int, float]]

    @property
    def marks(self) -> tuple[int, ...]:
        """Every mark some preset has a figure for, in order."""
        return tuple(sorted({m for values in self.val_at.values() for m in values}))

    def to_dict(self) -> dict:
        return {"measured": self.measured, "machine": self.machine, "row": self.row, "load": list(self.load),
                "eval_chars": self.eval_chars,
                "val_at": {name: {f"{m}s": v for m, v in values.items()} for name, values in self.val_at.items()}}

    @classmethod
    def from_dict(cls, values: Mapping) -> PresetMarks:
        return cls(values["measured"], values["machine"], values["row"], tuple(values["load"]),
                   int(values["eval_chars"]), {name: {int(m.rstrip("s")): float(v) for m, v in marks.items()}
                    for name, marks in values["val_at"].items()})


@cache
def preset_marks() -> PresetMarks | None:
    """The shipped figures; None when the file is missing or unreadable (the page then shows none)."""
    try:
        return PresetMarks.from_dict(json.loads(MARKS_FILE.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def val_by_mark(seconds: Sequence[float], val_loss: Sequence[float], clock: float,
                marks: Iterable[int]) -> dict[int, tuple[float, float]]:
    """A run's val loss at each mark its clock has passed: {mark: (seconds, val loss)} of its latest evaluation at
    or before the mark (``seconds``: the trainer's clock at each evaluation, in order; ``clock``: its clock now).
    A mark the run has not reached, or reached before its first evaluation, has none."""
    values = {}
    for mark in marks:
        before = [(s, v) for s, v in zip(seconds, val_loss) if s <= mark]
        if before and clock >= mark:
            values[mark] = before[-1]
    return values
