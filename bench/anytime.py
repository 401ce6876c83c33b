"""Issue 37's levers for a preset that is good whenever it is stopped, raced on one clock on Tiny Shakespeare.

Most contenders are the 3-minute Shakespeare preset's model (the live page's default until this issue: a 1 × 448
LSTM, bfloat16 autocast where the CPU has it, the same batches, seed and gradient clipping) with another optimiser,
schedule or width:
- the preset itself: AdamW (rnnviz's "adamw": decoupled weight decay 0.1 on the matrices and the embedding,
  β₂ 0.99), lr 5e-3, cosine to 10% over 2,800 steps (tuned for 150 s on 2 cores); the weight decay holds off the
  overfitting that sets in after ~300 s (about 20 epochs of the text);
- the same with plain Adam (the preset until issue 37's first race);
- Adam at a constant lr 5e-3: the preset with nothing that knows when it will be stopped;
- schedule-free Adam (Defazio et al. 2024, "The Road Less Scheduled"; their AdamW without its weight decay),
  written here in a few lines: the gradient is taken at y = (1 − β₁) z + β₁ x, z takes Adam's step, x is the
  running average of the z's weighted by lr² (so the warm-up's small steps count less), and the model is scored
  with x, the weights the method offers;
- Muon (torch.optim.Muon, Newton–Schulz orthogonalised momentum, its update scaled to AdamW's RMS with
  ``adjust_lr_fn="match_rms_adamw"`` so that one lr serves both) for the LSTM's weight_ih and weight_hh, and
  Adam for the embedding, the biases and the readout, as in the modded-nanoGPT speedruns; lr 5e-3, constant;
- readout dropout (AdamW, the preset's cosine or a 600 s one): dropout on h_t before the readout while training;
- a Net2Net widening: 1 × 256 at a high lr for the first few hundred steps, then widened to 1 × 448 without
  changing what it computes, AdamW from there (the engine's TrainConfig.grow_from, Trainer.widen; the anytime
  preset, "Shakespeare (stop any time)", is one of these, and races under its preset name);
- warmup–stable–decay with the cool-down on Pause (CoolDownTrainer): the anytime preset at its stable lr, scored
  with a copy cooled down (the engine's CoolingTrainer, as the live page cools on Pause) over the last 20% of its
  seconds, or of at most 30 s as on the live page, taken from the copy it kept then, so that the scored model has
  had the same seconds of training as every other;
- and every other preset that the live page offers on Tiny Shakespeare ("preset: NAME"), as the page runs it: a
  preset that cools a copy down when it stops (``Preset.cool_down``) is scored by that copy, cooled as on the page.

No test-time tricks: val loss is rnnviz's Trainer.evaluate, the mean cross-entropy over the last 10% of the text,
with the weights the run holds (schedule-free: its x). Each contender is also scored as the live page scores a
run (the val split's first 10,000 characters); when a race holds every live preset, those figures become the live
page's table (rnnviz/assets/preset_marks.json). Usage: python -m bench anytime (150 s), or python -m bench.anytime
SECONDS [NAME-PREFIX ...] for a longer race of some contenders; the marks are 10, 30, 60, 90, 150 s and, for
longer races, 300 and 600 s.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from dataclasses import replace

import torch

from bench.common import print_table
from bench.time_to_loss import DATA, mean_chars_per_second
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.measured import MARKS_FILE, PresetMarks
from rnnviz.charlm.presets import ALL_PRESETS, ANYTIME_PRESET, BABY_GPT, SHAKESPEARE_3_MIN, STATE_PRESETS
from rnnviz.charlm.train import COOL_SHARE, TrainConfig, Trainer
from rnnviz.core.runtime import configure_cpu
from rnnviz.serving.cooldown import MAX_COOL_SECONDS, CoolingTrainer
from rnnviz.serving.live import LiveSettings
from rnnviz.serving.race import Race

MARKS = (10, 30, 60, 90, 150, 300, 600)
LR = 5e-3
# Widening: a 1 × 256 LSTM (the quick demo's width and lr) for its first 500 (or 1,000) steps, about 11 (22) s
# with bfloat16, then the preset's 1 × 448 with AdamW, its cosine stretched over the steps that fit in 150 s. The
# widening at 1,000 won the 600 s race of 2026-12-05 at 10-90 s and became the anytime preset; that preset now
# trains at a steady lr and is cooled on Pause (warmup–stable–decay won the next races), and this cosine run races
# as its predecessor. The one at 500 stays a bench contender.
NARROW, NARROW_LR, GROW_AT_STEP, WIDE_DECAY_STEPS = 256, 1e-2, 500, 3100
LATE_GROW_AT_STEP, LATE_WIDE_DECAY_STEPS = 1000, 3400
LIVE_EVAL_CHARS = LiveSettings().eval_chars  # what the live page scores: the val split's first 10,000 characters
# Regularisation for the 600 s mark, where every run overfits: dropout on h_t before the readout, with the preset's
# schedule and with one fitted to 600 s (the steps the 1 × 448 model took in the 600 s races).
DROPOUT, LONG_DECAY_STEPS = 0.2, 11_000
WIDENING = f"AdamW, 1 × {NARROW} widened to 1 × 448 at step {GROW_AT_STEP}"
COOL_CAP_S = MAX_COOL_SECONDS  # the live page's: a cool-down on Pause that a class waits for is at most this long
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


class ReadoutDropoutTrainer(Trainer):
    """Dropout on h_t before the readout while training (Zaremba et al. 2014 drop the non-recurrent connections;
    a 1-layer nn.LSTM has none of its own, its dropout acting only between layers). Scoring runs in eval mode, so
    val loss reads the whole h_t."""

    def __init__(self, config, corpus, p: float):
        super().__init__(config, corpus)
        self.model.head.register_forward_pre_hook(
            lambda head, args: (torch.nn.functional.dropout(args[0], p, head.training),))


class CoolDownTrainer(Trainer):
    """Warmup–stable–decay (Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
    Durations") with the cool-down taken when the run is paused: the run trains at its stable lr; to be scored at
    its clock m, it takes the copy of itself it kept at about (1 − share)·m seconds, cools that copy down (lr
    linearly to 0) for the seconds up to m, and is scored with the cooled copy, so the scored model has had m
    seconds of training like every other contender's. The run itself goes on from its stable weights (the issue's
    "Pause never changes the run"). Copies are kept every 2% of the clock, and only those a later mark can need."""

    KEEP_EVERY = 0.02  # of the clock

    def __init__(self, config, corpus, share: float = 0.2, cap_s: float | None = None):
        super().__init__(config, corpus)
        self.share, self.cap_s = share, cap_s
        self.kept = [(0.0, self.state_dict())]
        self.cooled: tuple[float, Trainer] | None = None

    def run(self, steps, on_step=None, max_seconds=None):
        records = super().run(steps, on_step, max_seconds)
        if self.seconds - self.kept[-1][0] >= max(0.5, self.KEEP_EVERY * self.seconds):
            self.kept.append((self.seconds, self.state_dict()))
            earliest = self.seconds - self.cool_seconds(self.seconds)  # no later mark cools from before this
            usable = [i for i, (at, _) in enumerate(self.kept) if at <= earliest]
            self.kept = self.kept[usable[-1]:] if usable else self.kept
        return records

    def cool_seconds(self, clock: float) -> float:
        """The cool-down's seconds for a run scored at ``clock``: its share, at most ``cap_s``."""
        return min(self.share * clock, self.cap_s) if self.cap_s is not None else self.share * clock

    def cooled_copy(self) -> Trainer:
        if self.cooled is not None and self.cooled[0] == self.seconds:
            return self.cooled[1]
        start = max((k for k in self.kept if k[0] <= self.seconds - self.cool_seconds(self.seconds)),
                    key=lambda k: k[0])
        stopped = Trainer(self.config, self.corpus, vocab=self.vocab)
        stopped.load_state_dict(start[1])
        cool_seconds = self.seconds - start[0]
        steps_per_s = self.chars_per_second / self.chars_per_step if self.chars_per_second else 1.0
        branch = CoolingTrainer(stopped, max(1, round(cool_seconds * steps_per_s)))  # the live page's cool-down
        spent = branch.seconds
        while not branch.done and branch.seconds - spent < cool_seconds:
            branch.cool(max_seconds=cool_seconds - (branch.seconds - spent))
        self.cooled = (self.seconds, branch)
        return branch

    def evaluate(self, max_chars=None):
        record = self.cooled_copy().evaluate(max_chars)
        self.evals.append(replace(record, step=self.step, seconds=self.seconds))
        return record


class MuonTrainer(Trainer):
    def __init__(self, config, corpus):
        super().__init__(config, corpus)
        self.optimizer = MuonAdam(self.model, lr=config.lr)


def widening(decay_steps: int, grow_at: int) -> TrainConfig:
    """The 3-minute preset's run, starting as a 1 × NARROW LSTM at NARROW_LR that widens at step ``grow_at``."""
    return replace(ALL_PRESETS[SHAKESPEARE_3_MIN].config, lr_decay_steps=decay_steps, grow_from=NARROW,
                   grow_at=grow_at, grow_lr=NARROW_LR)


def contenders(corpus: Corpus) -> dict[str, Trainer]:
    preset = ALL_PRESETS[SHAKESPEARE_3_MIN].config
    adam = replace(preset, optimizer="adam")
    constant = replace(adam, lr=LR, lr_decay_steps=0)
    widenings = {WIDENING: widening(WIDE_DECAY_STEPS, GROW_AT_STEP),
                 f"AdamW, 1 × {NARROW} widened to 1 × 448 at step {LATE_GROW_AT_STEP:,}":
                     widening(LATE_WIDE_DECAY_STEPS, LATE_GROW_AT_STEP)}
    presets = {f"{PRESET_PREFIX}{name}": p for name, p in ALL_PRESETS.items()
               if name in live_shakespeare_presets() and name != SHAKESPEARE_3_MIN}
    return {
        f"{SHAKESPEARE_3_MIN} (AdamW, weight decay {preset.weight_decay:g} on matrices, cosine over "
        f"{preset.lr_decay_steps:,} steps)": Trainer(preset, corpus),
        f"{SHAKESPEARE_3_MIN} with Adam (no weight decay)": Trainer(adam, corpus),
        f"Adam, constant lr {LR:g}": Trainer(constant, corpus),
        f"schedule-free Adam, lr {LR:g}, 100 warm-up steps": ScheduleFreeTrainer(constant, corpus),
        f"Muon (W_ih, W_hh) + Adam (the rest), constant lr {LR:g}": MuonTrainer(constant, corpus),
        f"AdamW, dropout {DROPOUT:g} before the readout, the preset's cosine":
            ReadoutDropoutTrainer(preset, corpus, DROPOUT),
        f"AdamW, dropout {DROPOUT:g} before the readout, cosine over {LONG_DECAY_STEPS:,} steps (tuned for 600 s)":
            ReadoutDropoutTrainer(replace(preset, lr_decay_steps=LONG_DECAY_STEPS), corpus,
                                  DROPOUT),
        f"warmup–stable–decay: the anytime preset at its stable lr, scored after a cool-down over the last "
        f"{COOL_SHARE:.0%} of its seconds": CoolDownTrainer(replace(ALL_PRESETS[ANYTIME_PRESET].config,
                                                                      lr_decay_steps=0), corpus, COOL_SHARE),
        f"warmup–stable–decay: the anytime preset at its stable lr, scored after a cool-down over the last "
        f"{COOL_SHARE:.0%} of its seconds, at most {COOL_CAP_S:g} s": CoolDownTrainer(
            replace(ALL_PRESETS[ANYTIME_PRESET].config, lr_decay_steps=0), corpus, COOL_SHARE, COOL_CAP_S),
        # a widening that is a preset's run races once, under the preset's name
        **{name: Trainer(config, corpus) for name, config in widenings.items() if config not in
           [p.config for p in ALL_PRESETS.values()]},
        # a preset that cools a copy down when the run stops races as the live page runs it: scored by that copy
        **{name: CoolDownTrainer(p.config, corpus, COOL_SHARE, COOL_CAP_S) if p.cool_down else Trainer(p.config, corpus)
           for name, p in presets.items()},
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
    live_scored = {name: {} for name in trainers}  # the same weights scored as the live page scores a run

    def score_as_the_live_page(mark) -> None:  # heard after the slice, before the contender trains again
        live_scored[mark.name][mark.mark] = trainers[mark.name].evaluate(LIVE_EVAL_CHARS).val_loss

    race.run(on_mark=score_as_the_live_page)
    wall, load_after = time.perf_counter() - wall, os.getloadavg()[0]
    rows, results = [], {}
    for name, trainer in trainers.items():
        vals = {m.mark: m.val_loss for m in race.curves[name]}
        rows.append([name, f"{trainer.step:,}", f"{mean_chars_per_second(trainer):,.0f}",
                     *(f"{vals[m]:.3f}" if m in vals else "" for m in marks)])
        results[name] = {"val_at": {f"{int(m)}s": round(v, 4) for m, v in vals.items()}, "steps": trainer.step,
                         "chars_per_s": round(mean_chars_per_second(trainer)), "config": trainer.config.to_dict(),
                         f"val_first_{LIVE_EVAL_CHARS}_chars_at": {f"{int(m)}s": round(v, 4)
                                                                   for m, v in live_scored[name].items()}}
    rows.append(["issue 37's goal for the default", "", "", *(f"≤ {GOALS[m]}" if m in GOALS else "" for m in marks)])
    print_table(f"anytime: val loss (nats/char) on Tiny Shakespeare by seconds of training, one clock, {slice_s:g} s "
                f"slices ({wall:.0f} s wall; 1-min load {load_before:.2f} before, {load_after:.2f} after)",
                ["contender", "steps", "chars/s", *(f"{m:g} s" for m in marks)], rows)
    return {"seconds": seconds, "contenders": results, "goals": {f"{m}s": g for m, g in GOALS.items()},
            "load": {"before": round(load_before, 2), "after": round(load_after, 2)}}


PRESET_PREFIX = "preset: "


def live_shakespeare_presets() -> list[str]:
    """The presets of the live page's anytime race on Tiny Shakespeare (the baby GPT's 4 blocks stay on the CLI; the
    sLSTM … linear attention presets were raced apart, row kinds_150s)."""
    return [name for name, p in ALL_PRESETS.items()
            if p.corpus == "tiny-shakespeare" and name != BABY_GPT and name not in STATE_PRESETS]


def write_preset_marks(result: dict, row: str) -> bool:
    """When the race had every live Shakespeare preset, ship its figures for the live page
    (rnnviz.charlm.measured); returns whether it wrote them."""
    by_preset = {}  # a preset's figures are those of the contender with its config, whatever it was called
    for name in live_shakespeare_presets():
        config = ALL_PRESETS[name].config.to_dict()
        raced = [c for c in result.get("contenders", {}).values() if c.get("config") == config]
        if raced:
            by_preset[name] = raced[0]
    if set(by_preset) != set(live_shakespeare_presets()):
        return False
    marks = PresetMarks(time.strftime("%Y-%m-%d"), f"{torch.get_num_threads()}-core CPU", row,
                        (result["load"]["before"], result["load"]["after"]),
                        LIVE_EVAL_CHARS,
                        {name: {int(m.rstrip("s")): v
                                for m, v in by_preset[name][f"val_first_{LIVE_EVAL_CHARS}_chars_at"].items()}
                         for name in live_shakespeare_presets()})
    MARKS_FILE.write_text(json.dumps({**marks.to_dict(), "configs": {
        name: ALL_PRESETS[name].config.to_dict() for name in live_shakespeare_presets()}}, indent=2) + "\n")
    return True


if __name__ == "__main__":  # python -m bench.anytime [seconds [name-prefix ...]]: its row is anytime_<seconds>s
    from bench.__main__ import write_row

    race_seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 150.0
    load = os.getloadavg()[0]
    on_gpu = torch.cuda.is_available()
    row_name = f"anytime_{race_seconds:.0f}s" + ("_cuda" if on_gpu else "")
    result = run(race_seconds, only=tuple(sys.argv[2:]))
    if on_gpu:
        result["device"] = torch.cuda.get_device_name()
    write_row(row_name, result, load)
    # the live page's figures are a 2-core CPU's, to 150 s
    if not on_gpu and race_seconds >= 150 and write_preset_marks(result, row_name):
        print(f"wrote the presets' figures for the live page to {MARKS_FILE}")
