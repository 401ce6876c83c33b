"""Val loss against training time on Tiny Shakespeare: the default preset beside a plain 1×256 nn.LSTM loop.

The two train in alternating slices of a few seconds each, so that load from other jobs hits both alike.
Each has its own clock that counts only its training steps; evaluation (the whole val split, the last
10% of the text, in nats/char) pauses it. Val loss is reported at 30, 60, 90, 120 and 150 s, with the first
check at or below 1.88, nanoGPT's CPU "baby GPT" figure (checks every 5 s until it is reached).

Targets: the preset reaches ≤ 1.88 within 30 s and ≤ 1.55 at 150 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from bench.common import print_table
from rnnviz.charlm.corpus import Corpus, TBPTTBatcher
from rnnviz.charlm.train import DEFAULT_PRESET, PRESETS, Trainer, sequence_loss
from rnnviz.core.recurrent import detach_state
from rnnviz.core.runtime import configure_cpu

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
MARKS = (30, 60, 90, 120, 150)  # seconds of training at which val loss is reported
TARGET = 1.88  # nanoGPT's baby-GPT val loss after about 3 minutes on a laptop CPU
CHECK_EVERY = 5  # seconds between val checks until TARGET is reached


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
    """A bare TBPTT loop (Adam 2e-3, batch 32, T 64, no clipping) with its own training clock."""

    def __init__(self, corpus: Corpus):
        torch.manual_seed(0)
        train, self.val_ids = corpus.split()
        self.batcher = TBPTTBatcher(train, 32, 64)
        self.model = PlainLSTM(corpus.vocab.size)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=2e-3)
        self.state = None
        self.seconds = 0.0

    def train_until(self, seconds: float) -> None:
        while self.seconds < seconds:
            start = time.perf_counter()
            x, y, starts_epoch = self.batcher.next_batch()
            _, loss, state = self.model(x, y, None if starts_epoch else self.state)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.state = detach_state(state)
            self.seconds += time.perf_counter() - start

    def evaluate(self) -> float:
        return sequence_loss(self.model, self.val_ids)[0]


class PresetRun:
    """Our Trainer on the default preset, with the same interface."""

    def __init__(self, corpus: Corpus):
        self.trainer = Trainer(PRESETS[DEFAULT_PRESET].config, corpus)

    @property
    def seconds(self) -> float:
        return self.trainer.seconds

    def train_until(self, seconds: float) -> None:
        while self.trainer.seconds < seconds:
            self.trainer.run(1)
            if self.trainer.halt is not None:
                raise RuntimeError(f"the preset halted: {self.trainer.halt}")

    def evaluate(self) -> float:
        return self.trainer.evaluate().val_loss


def _checkpoints(total: float) -> list[float]:
    """Times at which to evaluate: every CHECK_EVERY s up to the first mark, then the marks."""
    early = [float(t) for t in range(CHECK_EVERY, MARKS[0], CHECK_EVERY)]
    return [t for t in early + [float(m) for m in MARKS] if t <= total]


def run(seconds: float = 150.0, reference: bool = True, slice_s: float = 5.0) -> dict:
    configure_cpu()
    if not DATA.exists():
        print(f"time_to_loss: skipped, {DATA} is absent")
        return {"skipped": f"{DATA} is absent"}
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    contenders = {"preset": PresetRun(corpus)}
    if reference:
        contenders["plain 1x256"] = PlainLoop(corpus)
    checks = _checkpoints(seconds)
    curves: dict[str, dict[float, float]] = {name: {} for name in contenders}
    reached: dict[str, float | None] = {name: None for name in contenders}
    clock = 0.0
    while clock < seconds:
        clock = min(clock + slice_s, seconds)
        for name, contender in contenders.items():
            contender.train_until(clock)
            due = [t for t in checks if t <= clock and t not in curves[name]]
            for t in due:
                needed = t in MARKS or reached[name] is None
                if needed:
                    curves[name][t] = contender.evaluate()
                    if reached[name] is None and curves[name][t] <= TARGET:
                        reached[name] = t
    preset = contenders["preset"].trainer
    rows = []
    for t in sorted(set().union(*curves.values())):
        rows.append([f"{t:.0f} s", *(f"{curves[name][t]:.3f}" if t in curves[name] else "" for name in contenders)])
    rows.append([f"first ≤ {TARGET}", *(f"{reached[n]:.0f} s" if reached[n] else "not reached" for n in contenders)])
    print_table(
        f"time_to_loss: val loss (nats/char) on Tiny Shakespeare by seconds of training, interleaved in {slice_s:g} s "
        f"slices; preset {DEFAULT_PRESET!r}: {preset.config.layers}×{preset.config.hidden} {preset.config.kind}, "
        f"{preset.chars_per_second:,.0f} chars/s at the end",
        ["time", *contenders],
        rows,
    )
    return {
        "preset": DEFAULT_PRESET,
        "config": preset.config.to_dict(),
        "val_at": {f"{int(t)}s": round(v, 4) for t, v in curves["preset"].items() if t in MARKS},
        "seconds_to_1.88": reached["preset"],
        "preset_chars_per_s": round(preset.chars_per_second),
        "reference": (
            {"val_at": {f"{int(t)}s": round(v, 4) for t, v in curves["plain 1x256"].items() if t in MARKS},
             "seconds_to_1.88": reached["plain 1x256"]}
            if reference else None
        ),
        "targets_met": {
            "1.88_within_30s": reached["preset"] is not None and reached["preset"] <= 30,
            "1.55_at_150s": curves["preset"].get(150.0, float("inf")) <= 1.55,
        },
    }
