"""Equal-seconds sweeps of the Shakespeare preset (issue 22): variants race the preset itself on one clock.

Every race (rnnviz.serving.race) includes the preset unchanged as the control, because the machine's load changes
between races: compare a variant with the control of its own race, never across races. Each contender trains in
turn, in 5 s slices, on its own clock (only its optimizer steps count); val loss is the plain mean cross-entropy
over the val split (the last 10% of Tiny Shakespeare) with the weights trained so far, in nats/char.

What a variant may change (``Variant``):

- ``changes``: any TrainConfig fields (shape, E, B, T, lr, warm-up, clip θ, ...);
- ``fit``: decay to the budget in seconds, not in steps. The preset's cosine ends at a fixed step (2,500, about
  150 s on quiet cores); under load fewer steps fit in the budget and the learning rate never comes down. A fitted
  contender re-estimates before every call the steps it will have taken at the race's end (steps so far / its
  clock × the budget) and sets ``lr_decay_steps`` to that (``Trainer.retune``, which a run may change);
- ``beta2``: Adam's β₂ (torch's default 0.999), set on the optimizer's parameter groups;
- ``grow``: (share of the budget, B): the batch grows to B streams once the contender's clock passes that share
  of the budget (small early for many quick updates, large later); the carried state restarts there;
- ``ema``: an exponential moving average of the weights, w̄ ← d·w̄ + (1 − d)·w after every step (its cost counted
  on the contender's clock), and the val loss is that of w̄. Training itself uses w, as without it.

Usage: python -m bench.shakespeare_sweep ROUND [seconds]   (ROUND: see ROUNDS; writes bench/shakespeare_sweep.json)
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from bench.common import print_table
from rnnviz.charlm.corpus import Corpus, TBPTTBatcher
from rnnviz.charlm.train import EvalRecord, TrainConfig, Trainer
from rnnviz.core.runtime import configure_cpu
from rnnviz.serving.race import Race

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
OUT = Path(__file__).resolve().parent / "shakespeare_sweep.json"
CONTROL = "preset"
# What every variant changes: the Shakespeare preset as it was when the sweep began (1×256, E 64, B 32, T 64, Adam
# 6e-3, cosine to 10% over 2,500 steps), so that the rounds already run keep their meaning. Round "ship" raced the
# preset that replaced it (SHIPPED).
BASE = TrainConfig(hidden=256, batch=32, seq_len=64, lr=6e-3, lr_decay_steps=2500)
SHIPPED = "1x448 auto lr5e-3 d2800"


@dataclass(frozen=True)
class Variant:
    changes: dict = field(default_factory=dict)  # TrainConfig fields
    fit: bool = False  # cosine decay fitted to the budget in seconds
    beta2: float | None = None  # Adam β₂; None: torch's 0.999
    ema: float | None = None  # EMA decay d of the weights, evaluated instead of the weights; None: off
    grow: tuple[float, int] | None = None  # (share of the budget, B): from then on B streams (state restarts)


VARIANTS: dict[str, Variant] = {
    CONTROL: Variant(),
    "fit": Variant(fit=True),
    "1x384 lr5e-3 fit": Variant({"hidden": 384, "lr": 5e-3}, fit=True),
    "1x512 lr4e-3 fit": Variant({"hidden": 512, "lr": 4e-3}, fit=True),
    "2x256 fit": Variant({"layers": 2}, fit=True),
    "E128 fit": Variant({"embed_dim": 128}, fit=True),
    "E32 fit": Variant({"embed_dim": 32}, fit=True),
    "B16 fit": Variant({"batch": 16}, fit=True),
    "T32 lr8e-3 fit": Variant({"seq_len": 32, "lr": 8e-3}, fit=True),
    "T128 fit": Variant({"seq_len": 128}, fit=True),
    "B64 lr8e-3 fit": Variant({"batch": 64, "lr": 8e-3}, fit=True),
    "lr1e-2 fit": Variant({"lr": 1e-2}, fit=True),
    "lr4e-3 fit": Variant({"lr": 4e-3}, fit=True),
    "warmup50 lr1e-2 fit": Variant({"lr": 1e-2, "warmup_steps": 50}, fit=True),
    "b2 0.99 fit": Variant(fit=True, beta2=0.99),
    "b2 0.95 fit": Variant(fit=True, beta2=0.95),
    "clip0.25 fit": Variant({"clip": 0.25}, fit=True),
    "clip5 fit": Variant({"clip": 5.0}, fit=True),
    "floor0.02 fit": Variant({"lr_floor": 0.02}, fit=True),
    "ema0.995 fit": Variant(fit=True, ema=0.995),
    # round "b16": the shape round's winner (B 16) as the base
    "B16 lr4e-3 fit": Variant({"batch": 16, "lr": 4e-3}, fit=True),
    "B16 b2 0.99 fit": Variant({"batch": 16}, fit=True, beta2=0.99),
    "B16 ema0.995 fit": Variant({"batch": 16}, fit=True, ema=0.995),
    "B8 lr4e-3 fit": Variant({"batch": 8, "lr": 4e-3}, fit=True),
    "B16 T32 fit": Variant({"batch": 16, "seq_len": 32}, fit=True),
    # round "final": candidate presets as they would ship (a fixed decay in steps: B 16 takes about twice the
    # steps of B 32 in the same seconds, so the cosine spans 2 × 2,500)
    "B16 d5000": Variant({"batch": 16, "lr_decay_steps": 5000}),
    "B16 b2 0.99 d5000": Variant({"batch": 16, "lr_decay_steps": 5000}, beta2=0.99),
    "T32 lr8e-3 d5000": Variant({"seq_len": 32, "lr": 8e-3, "lr_decay_steps": 5000}),
    # round "final2": the preset's own schedule with β₂ 0.99 or an EMA, and B 16 with its decay ending at the
    # 3,900 steps it took in 150 s on quiet cores in round "final"
    "b2 0.99": Variant(beta2=0.99),
    "ema0.998": Variant(ema=0.998),
    "B16 b2 0.99 d3900": Variant({"batch": 16, "lr_decay_steps": 3900}, beta2=0.99),
    # round "bf16": with libgomp's bounded spin the preset runs ~1.8x faster and stalls near 1.51 (capacity), so
    # wider models, now affordable with bfloat16 autocast (1.7x on 1x384 with avx512_bf16)
    "bf16 fit": Variant({"precision": "bf16"}, fit=True),
    "1x384 bf16 lr5e-3 fit": Variant({"hidden": 384, "lr": 5e-3, "precision": "bf16"}, fit=True),
    "1x512 bf16 lr4e-3 fit": Variant({"hidden": 512, "lr": 4e-3, "precision": "bf16"}, fit=True),
    "2x256 bf16 fit": Variant({"layers": 2, "precision": "bf16"}, fit=True),
    # round "bf16b": around the winner of round "bf16" (1x384 bf16, 1.484); 1x512 at 4e-3 stalled near 2.0
    "1x384 bf16 lr7e-3 fit": Variant({"hidden": 384, "lr": 7e-3, "precision": "bf16"}, fit=True),
    "1x448 bf16 lr5e-3 fit": Variant({"hidden": 448, "lr": 5e-3, "precision": "bf16"}, fit=True),
    "1x512 bf16 lr2e-3 fit": Variant({"hidden": 512, "lr": 2e-3, "precision": "bf16"}, fit=True),
    # round "ship": round "bf16b"'s winner (1x448 bf16, 1.469) as it would ship, with its decay fixed at the 2,800
    # steps it took in 150 s, and precision "auto" (bf16 here)
    "1x448 auto lr5e-3 d2800": Variant({"hidden": 448, "lr": 5e-3, "precision": "auto", "lr_decay_steps": 2800}),
    "1x448 auto lr4e-3 d2800": Variant({"hidden": 448, "lr": 4e-3, "precision": "auto", "lr_decay_steps": 2800}),
    # round "quick": the Quick demo (30 s) preset, whose decay (500 steps) ended near 16 s once threads spun
    "quick demo": Variant({"lr": 1e-2, "lr_decay_steps": 500}),
    "quick auto d500": Variant({"lr": 1e-2, "lr_decay_steps": 500, "precision": "auto"}),
    "quick auto d1250": Variant({"lr": 1e-2, "lr_decay_steps": 1250, "precision": "auto"}),
    # round "grow": the shipped preset with B 16 for its first third, then B 32 (B 16 and B 32 tied at 150 s for the
    # 1×256 in round "final"; small early and large late might take the best of both)
    "1x448 auto grow B16→32": Variant({"hidden": 448, "lr": 5e-3, "precision": "auto", "lr_decay_steps": 3400,
                                       "batch": 16}, grow=(1 / 3, 32)),
    "1x448 E128 auto lr5e-3 d2800": Variant({"hidden": 448, "embed_dim": 128, "lr": 5e-3, "precision": "auto",
                                             "lr_decay_steps": 2800}),
}
ROUNDS: dict[str, tuple[str, ...]] = {
    "shape": (CONTROL, "fit", "1x384 lr5e-3 fit", "1x512 lr4e-3 fit", "2x256 fit", "E128 fit", "B16 fit",
              "T32 lr8e-3 fit"),
    "optim": (CONTROL, "fit", "lr1e-2 fit", "b2 0.99 fit", "clip0.25 fit", "floor0.02 fit", "ema0.995 fit",
              "warmup50 lr1e-2 fit"),
    "b16": (CONTROL, "B16 fit", "B16 lr4e-3 fit", "B16 b2 0.99 fit", "B16 ema0.995 fit", "B8 lr4e-3 fit",
            "B16 T32 fit"),
    "final": (CONTROL, "B16 d5000", "T32 lr8e-3 d5000"),
    "final2": (CONTROL, "b2 0.99", "ema0.998", "B16 b2 0.99 d3900"),
    "bf16": (CONTROL, "1x384 lr5e-3 fit", "bf16 fit", "1x384 bf16 lr5e-3 fit", "1x512 bf16 lr4e-3 fit"),
    "quick": ("quick demo", "quick auto d500", "quick auto d1250"),
    "grow": (SHIPPED, "1x448 auto grow B16→32"),
    "ship": (CONTROL, "1x448 auto lr5e-3 d2800", "1x448 auto lr4e-3 d2800", "1x448 E128 auto lr5e-3 d2800"),
    "bf16b": (CONTROL, "1x384 bf16 lr5e-3 fit", "1x384 bf16 lr7e-3 fit", "1x448 bf16 lr5e-3 fit",
              "1x512 bf16 lr2e-3 fit"),
}
SCREEN_MARKS = (10, 30, 60)
QUICK_MARKS = (5, 10)  # and the budget, for races of 30 s or less
# a round about another preset races that preset as its control
ROUND_CONTROLS = {"quick": "quick demo", "grow": SHIPPED}
FINAL_MARKS = (10, 30, 60, 150)


class Contender:
    """A Trainer with the bench-only options of a Variant; the members a Race reads, passed through."""

    def __init__(self, variant: Variant, corpus: Corpus, budget_s: float):
        config = replace(BASE, **variant.changes)
        self.trainer = Trainer(config, corpus)
        self.variant = variant
        self.budget_s = budget_s
        if variant.beta2 is not None:
            for group in self.trainer.optimizer.param_groups:
                group["betas"] = (group["betas"][0], variant.beta2)
        self.chars_before_growing, self.steps_before_growing = 0, 0  # chars_seen across a change of B
        self.ema = None
        if variant.ema is not None:
            self.ema = [p.detach().clone() for p in self.trainer.model.parameters()]

    # what a Race reads
    @property
    def seconds(self) -> float:
        return self.trainer.seconds

    @property
    def step(self) -> int:
        return self.trainer.step

    @property
    def halt(self):
        return self.trainer.halt

    @property
    def config(self):
        return self.trainer.config

    @property
    def num_parameters(self) -> int:
        return self.trainer.num_parameters

    @property
    def chars_seen(self) -> int:
        t = self.trainer
        return self.chars_before_growing + (t.step - self.steps_before_growing) * t.chars_per_step

    def run(self, steps: int, on_step=None, max_seconds: float | None = None) -> list:
        t = self.trainer
        if self.variant.grow is not None:
            share, batch = self.variant.grow
            if t.seconds >= share * self.budget_s and t.batcher.batch != batch:
                self.chars_before_growing += (t.step - self.steps_before_growing) * t.chars_per_step
                self.steps_before_growing = t.step
                t.batcher = TBPTTBatcher(t.train_ids, batch, t.config.seq_len).to(t.device)
                t.state = None
        if self.variant.fit:
            # steps it will have taken at the budget's end, at its speed so far (a guess before the first steps)
            rate = t.step / t.seconds if t.step >= 20 and t.seconds > 0 else 20.0
            t.retune(lr_decay_steps=max(t.config.warmup_steps + 1, round(rate * self.budget_s)))
        if self.ema is None:
            return t.run(steps, max_seconds=max_seconds)
        params = list(t.model.parameters())
        d = self.variant.ema

        def update(_record):
            start = time.perf_counter()
            with torch.no_grad():
                torch._foreach_lerp_(self.ema, [p.detach() for p in params], 1.0 - d)
            t.seconds += time.perf_counter() - start  # the average's cost is training time

        return t.run(steps, on_step=update, max_seconds=max_seconds)

    def evaluate(self, max_chars: int | None = None) -> EvalRecord:
        if self.ema is None:
            return self.trainer.evaluate(max_chars)
        params = list(self.trainer.model.parameters())
        with torch.no_grad():
            saved = [p.detach().clone() for p in params]
            for p, e in zip(params, self.ema):
                p.copy_(e)
            try:
                return self.trainer.evaluate(max_chars)
            finally:
                for p, s in zip(params, saved):
                    p.copy_(s)


def race(names: tuple[str, ...], marks: tuple[float, ...], slice_s: float = 5.0, control_name: str = CONTROL) -> dict:
    configure_cpu()
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    budget = max(marks)
    contenders = {name: Contender(VARIANTS[name], corpus, budget) for name in names}
    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    r = Race(contenders, marks=marks, slice_s=slice_s)
    r.run(on_mark=lambda m: print(f"  {m.name:>22}  {m.mark:>4g} s  val {m.val_loss:.3f}  ({m.step} steps, "
                                  f"load {os.getloadavg()[0]:.1f})", flush=True))
    wall = time.perf_counter() - wall
    load_after = os.getloadavg()[0]
    rows, out = [], {}
    control = {m.mark: m.val_loss for m in r.curves[control_name]} if control_name in names else {}
    for name, c in contenders.items():
        vals = {m.mark: m.val_loss for m in r.curves[name]}
        cps = c.chars_seen / c.seconds if c.seconds else 0.0
        out[name] = {"val_at": {f"{int(m)}s": round(v, 4) for m, v in vals.items()}, "steps": c.step,
                     "chars_per_s": round(cps), "parameters": c.num_parameters,
                     "halted": r.halted.get(name)}
        last = max(marks)
        delta = f"{vals[last] - control[last]:+.3f}" if last in vals and last in control else ""
        rows.append([name, f"{c.num_parameters:,}", f"{cps:,.0f}", f"{c.step:,}",
                     *(f"{vals[m]:.3f}" if m in vals else "—" for m in r.marks), delta])
    print_table(
        f"shakespeare_sweep: val loss (nats/char) by seconds of training, raced in {slice_s:g} s slices "
        f"({wall:.0f} s wall; 1-min load {load_before:.2f} before, {load_after:.2f} after)",
        ["variant", "params", "chars/s", "steps", *(f"{m:g} s" for m in r.marks), f"Δ vs {control_name} at {last:g} s"],
        rows,
    )
    return {"marks": list(r.marks), "load": {"before": round(load_before, 2), "after": round(load_after, 2)},
            "wall_s": round(wall), "written": time.strftime("%Y-%m-%d %H:%M:%S"), "contenders": out}


def run(round_name: str = "shape", seconds: float | None = None, names: tuple[str, ...] | None = None) -> dict:
    if not DATA.exists():
        print(f"shakespeare_sweep: skipped, {DATA} is absent")
        return {"skipped": f"{DATA} is absent"}
    names = names or ROUNDS[round_name]
    control = ROUND_CONTROLS.get(round_name, CONTROL)
    if control not in names:
        names = (control, *names)
    if not seconds or seconds <= 60:
        marks = QUICK_MARKS + (seconds,) if seconds and seconds <= 30 else SCREEN_MARKS
    else:
        marks = tuple(m for m in FINAL_MARKS if m < seconds) + (seconds,)
    result = race(names, tuple(sorted(set(marks))), control_name=control)
    saved = json.loads(OUT.read_text()) if OUT.exists() else {}
    saved[round_name] = result
    OUT.write_text(json.dumps(saved, indent=2) + "\n")
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        raise SystemExit(2)
    round_name = args[0]
    secs = float(args[1]) if len(args) > 1 else None
    extra = tuple(args[2:]) or None
    if round_name not in ROUNDS and not extra:
        print(f"unknown round {round_name!r}; choose from {', '.join(ROUNDS)}, or name variants after the seconds")
        raise SystemExit(2)
    run(round_name, secs, extra)
