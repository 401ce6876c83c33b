"""Val loss against training time on Tiny Shakespeare: the LSTM preset, the Transformer presets, the minGRU
preset and a plain 1×256 nn.LSTM loop, on one clock.

The contenders race with rnnviz.serving.race: they train in turn, in slices of a few seconds each, so that load
from other jobs hits all of them alike. Each has its own clock that counts only its training steps; evaluation
(the whole val split, the last 10% of the text, in nats/char) pauses it. Val loss is reported at 10, 30, 60,
90, 120 and 150 s, with the first check at or below 1.88, nanoGPT's CPU "baby GPT" figure (checks every 5 s
until 30 s).

The contenders are preset names (CONTENDERS, from ALL_PRESETS): another kind joins with one line there.

Targets: the LSTM preset reaches ≤ 1.88 within 30 s and ≤ 1.55 at 150 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from bench.common import print_table
from rnnviz.charlm.corpus import Corpus, TBPTTBatcher
from rnnviz.charlm.presets import ALL_PRESETS, BABY_GPT, MINGRU_PRESET, SHAKESPEARE_3_MIN, TUNED_GPT
from rnnviz.charlm.train import EvalRecord, Trainer, sequence_loss
from rnnviz.core.recurrent import detach_state
from rnnviz.core.runtime import configure_cpu
from rnnviz.serving.race import Race

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
MARKS = (10, 30, 60, 90, 120, 150)  # seconds of training at which val loss is reported
TARGET = 1.88  # nanoGPT's baby-GPT val loss after about 3 minutes on a laptop CPU
CHECK_EVERY = 5  # seconds between val checks until the first mark after TARGET's usual time (30 s)
# The racers, by preset name (ALL_PRESETS); the first is the one the targets are about. Add a kind here.
CONTENDERS = (SHAKESPEARE_3_MIN, TUNED_GPT, BABY_GPT, MINGRU_PRESET)
REFERENCE = "plain 1x256"  # the bare nn.LSTM loop, raced beside the presets when ``reference`` is on


class PlainLSTM(nn.Module):
    """The reference: embedding → nn.LSTM → linear, with the forward signature sequence_loss reads."""

    def __init__(self, vocab: int, hidden: int = 256, embed: int = 64):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, targets=None, state=None):
        out, state = self.lstm(self.embed(idx), state)
        logits = self.head(out)
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss, state


class PlainLoop:
    """A bare TBPTT loop (Adam 2e-3, batch 32, T 64, no clipping) with its own training clock, and the few
    members of a Trainer that a Race reads (``seconds``, ``step``, ``halt``, ``run``, ``evaluate``)."""

    halt = None

    def __init__(self, corpus: Corpus):
        torch.manual_seed(0)
        train, self.val_ids = corpus.split()
        self.batcher = TBPTTBatcher(train, 32, 64)
        self.model = PlainLSTM(corpus.vocab.size)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=2e-3)
        self.state = None
        self.seconds = 0.0
        self.step = 0

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def run(self, steps: int, on_step=None, max_seconds: float | None = None) -> list:
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        for _ in range(steps):
            start = time.perf_counter()
            x, y, starts_epoch = self.batcher.next_batch()
            _, loss, state = self.model(x, y, None if starts_epoch else self.state)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.state = detach_state(state)
            self.step += 1
            self.seconds += time.perf_counter() - start
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return []

    def evaluate(self, max_chars: int | None = None) -> EvalRecord:
        ids = self.val_ids if max_chars is None else self.val_ids[: max_chars + 1]
        loss, chars = sequence_loss(self.model, ids)
        return EvalRecord(self.step, loss, self.seconds, chars)


def mean_chars_per_second(trainer) -> float:
    """Characters trained over seconds of training, the whole run (the same measure for every contender)."""
    if not trainer.seconds:
        return 0.0
    chars = trainer.chars_seen if isinstance(trainer, Trainer) else trainer.step * 32 * 64
    return chars / trainer.seconds


def checkpoints(total: float) -> tuple[float, ...]:
    """Times at which to evaluate: every CHECK_EVERY s up to 30 s, then the marks, up to ``total``."""
    early = [float(t) for t in range(CHECK_EVERY, 30, CHECK_EVERY)]
    return tuple(sorted({t for t in early + [float(m) for m in MARKS] if t <= total}))


def _short(name: str, trainer) -> str:
    """A column-friendly label: the preset's shape."""
    if not isinstance(trainer, Trainer):
        return name
    c = trainer.config
    if c.kind == "transformer":
        return f"{c.kind} {c.layers}×{c.hidden} h{c.n_head} B{c.batch} ({name})"
    return f"{c.kind} {c.layers}×{c.hidden} B{c.batch} ({name})"


def run(seconds: float = 150.0, reference: bool = True, slice_s: float = 5.0,
        contenders: tuple[str, ...] = CONTENDERS) -> dict:
    configure_cpu()
    if not DATA.exists():
        print(f"time_to_loss: skipped, {DATA} is absent")
        return {"skipped": f"{DATA} is absent"}
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    trainers: dict[str, object] = {name: Trainer(ALL_PRESETS[name].config, corpus) for name in contenders}
    if reference:
        trainers[REFERENCE] = PlainLoop(corpus)
    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    race = Race(trainers, marks=checkpoints(seconds), slice_s=slice_s)
    race.run()
    wall = time.perf_counter() - wall
    load_after = os.getloadavg()[0]
    shown = [m for m in race.marks if m in MARKS]
    reached = {name: next((m.mark for m in curve if m.val_loss <= TARGET), None) for name, curve in race.curves.items()}
    rows = []
    for name, trainer in trainers.items():
        vals = {m.mark: m.val_loss for m in race.curves[name]}
        rows.append([_short(name, trainer), f"{trainer.num_parameters:,}", f"{mean_chars_per_second(trainer):,.0f}",
                     f"{trainer.step:,}", *(f"{vals[t]:.3f}" if t in vals else "" for t in shown),
                     f"{reached[name]:.0f} s" if reached[name] else "not reached"])
    print_table(
        f"time_to_loss: val loss (nats/char) on Tiny Shakespeare by seconds of training, raced in {slice_s:g} s "
        f"slices ({wall:.0f} s wall; 1-min load {load_before:.2f} before, {load_after:.2f} after)",
        ["contender", "params", "chars/s (mean)", "steps", *(f"{t:g} s" for t in shown), f"first ≤ {TARGET}"],
        rows,
    )

    def summary(name: str) -> dict:
        trainer = trainers[name]
        return {"val_at": {f"{int(m.mark)}s": round(m.val_loss, 4) for m in race.curves[name] if m.mark in MARKS},
                f"seconds_to_{TARGET}": reached[name], "steps": trainer.step,
                "chars_per_s": round(mean_chars_per_second(trainer)), "parameters": trainer.num_parameters,
                **({"config": trainer.config.to_dict()} if isinstance(trainer, Trainer) else {})}

    lead = contenders[0]
    preset = summary(lead)
    return {
        "preset": lead,
        "config": preset["config"],
        "val_at": preset["val_at"],
        "seconds_to_1.88": reached[lead],
        "preset_chars_per_s": preset["chars_per_s"],
        "reference": summary(REFERENCE) if reference else None,
        "contenders": {name: summary(name) for name in contenders},
        "load": {"before": round(load_before, 2), "after": round(load_after, 2)},
        "targets_met": {
            "1.88_within_30s": reached[lead] is not None and reached[lead] <= 30,
            "1.55_at_150s": next((m.val_loss for m in race.curves[lead] if m.mark == 150), float("inf")) <= 1.55,
        },
    }
