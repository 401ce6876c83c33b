"""Issue 37's levers for a preset that is good whenever it is stopped, raced on one clock on Tiny Shakespeare.

Every contender is the live page's default model (the "Shakespeare (3 min)" preset: a 1 × 448 LSTM, bfloat16
autocast where the CPU has it, the same batches, seed and gradient clipping); only the optimiser and its schedule
differ:
- the preset itself: Adam, lr 5e-3, cosine to 10% over 2,800 steps (tuned for 150 s on 2 cores);
- Adam at a constant lr 5e-3: the preset with nothing that knows when it will be stopped;
- schedule-free Adam (Defazio et al. 2024, "The Road Less Scheduled"; their AdamW without its weight decay),
  written here in a few lines: the gradient is
  taken at y = (1 − β₁) z + β₁ x, z takes Adam's step, x is the running average of the z's weighted by lr² (so
  the warm-up's small steps count less), and the model is scored with x, the weights the method offers;
- Muon (torch.optim.Muon, Newton–Schulz orthogonalised momentum, its update scaled to AdamW's RMS with
  ``adjust_lr_fn="match_rms_adamw"`` so that one lr serves both) for the LSTM's weight_ih and weight_hh, and
  Adam for the embedding, the biases and the readout, as in the modded-nanoGPT speedruns; lr 5e-3, constant;
- the preset with AdamW (rnnviz's "adamw": decoupled weight decay 0.1 on the matrices and the embedding, β₂ 0.99):
  regularisation against the overfitting that sets in after ~300 s (about 20 epochs of the text).

No test-time tricks: val loss is rnnviz's Trainer.evaluate, the mean cross-entropy over the last 10% of the text,
with the weights the run holds (schedule-free: its x). Usage: python -m bench anytime (150 s), or python -m
bench.anytime SECONDS [NAME-PREFIX ...] for a longer race of some contenders; the marks are 10, 30, 60, 90, 150 s
and, for longer races, 300 and 600 s.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from dataclasses import replace

import torch

from bench.common import print_table
from bench.time_to_loss import DATA, mean_chars_per_second
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.presets import ALL_PRESETS, DEFAULT_PRESET
from rnnviz.charlm.race import Race
from rnnviz.charlm.train import Trainer
from rnnviz.core.runtime import configure_cpu

MARKS = (10, 30, 60, 90, 150, 300, 600)
LR = 5e-3
GOALS = {10: 1.75, 30: 1.55, 150: 1.47, 600: 1.42}  # issue 37's marks for the anytime default


class MuonAdam(torch.optim.Optimizer):
    """Muon for the recurrent matrices, Adam for every other parameter; the trainer's lr schedule sets both
    (``param_groups`` are both optimisers' groups)."""

    def __init__(self, model: torch.nn.Module, lr: float):
        hidden = [p for name, p in model.named_parameters()
                  if p.dim() == 2 and ("weight_hh" in name or "weight_ih" in name)]
        others = [p for p in model.parameters() if all(p is not h for h in hidden)]
        self.muon = torch.optim.Muon(hidden, lr=lr, weight_decay=0.0, adjust_lr_fn="match_rms_adamw")
        self.adam = torch.optim.Adam(others, lr=lr)
        super().__init__([{"params": hidden + others}], {"lr": lr})
        self.param_groups = self.muon.param_groups + self.adam.param_groups

    @torch.no_grad()
    def step(self, closure=None):
        self.muon.step()
        self.adam.step()

    def zero_grad(self, set_to_none: bool = True):
        self.muon.zero_grad(set_to_none)
        self.adam.zero_grad(set_to_none)

    def state_dict(self):
        return {"muon": self.muon.state_dict(), "adam": self.adam.state_dict()}

    def load_state_dict(self, state):
        self.muon.load_state_dict(state["muon"])
        self.adam.load_state_dict(state["adam"])


class ScheduleFreeAdam(torch.optim.Optimizer):
    """Schedule-free Adam (no weight decay): parameters hold y while training; ``swap()`` puts x in their place for
    scoring, and a second ``swap()`` puts y back."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, warmup_steps: int = 100):
        super().__init__(list(params), {"lr": lr, "betas": betas, "eps": eps})
        self.warmup_steps, self.t, self.weight_sum = warmup_steps, 0, 0.0

    @torch.no_grad()
    def step(self, closure=None):
        self.t += 1
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = group["lr"] * min(1.0, self.t / self.warmup_steps)
            self.weight_sum += lr ** 2
            c = lr ** 2 / self.weight_sum
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["z"], state["x"], state["v"] = p.detach().clone(), p.detach().clone(), torch.zeros_like(p)
                z, x, v = state["z"], state["x"], state["v"]
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denominator = (v / (1 - beta2 ** self.t)).sqrt_().add_(group["eps"])
                z.addcdiv_(p.grad, denominator, value=-lr)
                x.mul_(1 - c).add_(z, alpha=c)
                p.copy_(z).mul_(1 - beta1).add_(x, alpha=beta1)  # y, where the next gradient is taken

    def state_dict(self):
        return {"state": copy.deepcopy(self.state), "t": self.t, "weight_sum": self.weight_sum}

    def load_state_dict(self, state):
        self.state.clear()
        self.state.update(state["state"])
        self.t, self.weight_sum = state["t"], state["weight_sum"]

    @torch.no_grad()
    def swap(self) -> None:
        """Swap each parameter's value with x (twice puts y back)."""
        for group in self.param_groups:
            for p in group["params"]:
                if "x" in self.state.get(p, {}):
                    held = p.detach().clone()
                    p.copy_(self.state[p]["x"])
                    self.state[p]["x"].copy_(held)


class ScheduleFreeTrainer(Trainer):
    def __init__(self, config, corpus):
        super().__init__(config, corpus)
        self.optimizer = ScheduleFreeAdam(self.model.parameters(), lr=config.lr)

    def evaluate(self, max_chars=None):
        self.optimizer.swap()  # score the averaged weights x
        try:
            return super().evaluate(max_chars)
        finally:
            self.optimizer.swap()


class MuonTrainer(Trainer):
    def __init__(self, config, corpus):
        super().__init__(config, corpus)
        self.optimizer = MuonAdam(self.model, lr=config.lr)


def contenders(corpus: Corpus) -> dict[str, Trainer]:
    preset = ALL_PRESETS[DEFAULT_PRESET].config
    constant = replace(preset, lr=LR, lr_decay_steps=0)
    return {
        f"{DEFAULT_PRESET} (Adam, cosine over {preset.lr_decay_steps:,} steps)": Trainer(preset, corpus),
        f"Adam, constant lr {LR:g}": Trainer(constant, corpus),
        f"schedule-free Adam, lr {LR:g}, 100 warm-up steps": ScheduleFreeTrainer(constant, corpus),
        f"Muon (W_ih, W_hh) + Adam (the rest), constant lr {LR:g}": MuonTrainer(constant, corpus),
        f"AdamW (weight decay {preset.weight_decay:g} on matrices), the preset's cosine":
            Trainer(replace(preset, optimizer="adamw"), corpus),
    }


def run(seconds: float = 150.0, slice_s: float = 5.0, only: tuple[str, ...] = ()) -> dict:
    """The race to ``seconds`` of training each; ``only``: the contenders whose names start with these words."""
    configure_cpu()
    if not DATA.exists():
        print(f"anytime: skipped, {DATA} is absent")
        return {"skipped": f"{DATA} is absent"}
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    trainers = {name: t for name, t in contenders(corpus).items() if not only or name.startswith(only)}
    marks = tuple(m for m in MARKS if m <= seconds)
    load_before, wall = os.getloadavg()[0], time.perf_counter()
    race = Race(trainers, marks=marks, slice_s=slice_s)
    race.run()
    wall, load_after = time.perf_counter() - wall, os.getloadavg()[0]
    rows, results = [], {}
    for name, trainer in trainers.items():
        vals = {m.mark: m.val_loss for m in race.curves[name]}
        rows.append([name, f"{trainer.step:,}", f"{mean_chars_per_second(trainer):,.0f}",
                     *(f"{vals[m]:.3f}" if m in vals else "" for m in marks)])
        results[name] = {"val_at": {f"{int(m)}s": round(v, 4) for m, v in vals.items()}, "steps": trainer.step,
                         "chars_per_s": round(mean_chars_per_second(trainer))}
    rows.append(["issue 37's goal for the default", "", "", *(f"≤ {GOALS[m]}" if m in GOALS else "" for m in marks)])
    print_table(f"anytime: val loss (nats/char) on Tiny Shakespeare by seconds of training, one clock, {slice_s:g} s "
                f"slices ({wall:.0f} s wall; 1-min load {load_before:.2f} before, {load_after:.2f} after)",
                ["contender (1 × 448 LSTM, bf16)", "steps", "chars/s", *(f"{m:g} s" for m in marks)], rows)
    return {"seconds": seconds, "contenders": results, "goals": {f"{m}s": g for m, g in GOALS.items()},
            "load": {"before": round(load_before, 2), "after": round(load_after, 2)}}


if __name__ == "__main__":  # python -m bench.anytime [seconds [name-prefix ...]]: its row is anytime_<seconds>s
    from bench.__main__ import write_row

    race_seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 150.0
    load = os.getloadavg()[0]
    write_row(f"anytime_{race_seconds:.0f}s", run(race_seconds, only=tuple(sys.argv[2:])), load)
