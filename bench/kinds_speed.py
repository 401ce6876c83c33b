"""The kinds whose state is more than a vector (sLSTM, mLSTM, selective SSM, linear attention) as character models on
this machine: training speed against the LSTM at equal parameters, val loss after 150 s on Tiny Shakespeare, and
the time of the recall sweep.

1. **Training speed** (row ``kinds_speed``). One Adam step (forward, cross-entropy, backward, update) of a
   character model over V = 65 characters, E = 64, B = 32, T = 64, for a 1 × 256 LSTM (``nn.LSTM``'s fused kernel,
   float32) and for each kind at its preset's depth and heads, its width H chosen so that its parameter count is
   the LSTM's (the closest multiple of its heads). The five take turns; medians of B·T / step time, the ratio to
   the LSTM, and ``rnnviz.charlm.speed``'s estimate beside each measurement.
2. **The estimate** (same row). ``rnnviz.charlm.speed``'s chars/s against one Adam step measured (medians, in
   turns) for each kind at four shapes (L 1–2, H 64–256, B 8–32, T 32–128): the shapes its constants were fitted
   on.
3. **The recall sweep** (same row). Wall time of one run of the page's default sweep (``rnnviz experiments
   recall``, rnnviz.experiments.recall.RecallSweepConfig) for each of its kinds at D = 4, on one thread as the
   command runs it, and the whole sweep's time that they add up to (each run has the same T and steps whatever D).
4. **The presets on every corpus** (same row). Each kind's preset trained for 25 steps by the Trainer on Tiny
   Shakespeare and the two offline corpora (python-stdlib, english-docs): its median chars/s, with the estimate.
5. **150 s on Tiny Shakespeare** (row ``kinds_150s``, ``python -m bench.kinds_speed race``). Each kind's preset
   and the LSTM preset "Shakespeare (3 min)" raced on one clock (``rnnviz.serving.race``, 5 s slices, each clock
   counting its own optimizer steps only); val loss (nats/char, the whole val split) at 10, 30, 60 and 150 s.
   Needs ../shared/data/tinyshakespeare.txt.

``python -m bench.kinds_speed tune`` races two shapes of each kind for 45 s (AdamW at a constant 5e-3, val on the
first 20,000 characters of the val split): how the presets' shapes were chosen.

``python -m bench kinds_speed`` writes 1 to 4; the race takes about 15 minutes. The 1-minute load average is
recorded beside each: above ~2 on 2 cores, other jobs shared the CPU.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from bench.common import alternate, print_table
from rnnviz.charlm.presets import ALL_PRESETS, KIND_PRESETS, SHAKESPEARE_3_MIN
from rnnviz.charlm.speed import count_parameters, estimate_chars_per_second, measure_matmul_flops
from rnnviz.charlm.train import TrainConfig, make_optimizer
from rnnviz.core.charmodel import build_model
from rnnviz.core.layer_kit import state_nbytes
from rnnviz.core.runtime import configure_cpu

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
VOCAB, EMBED, BATCH, SEQ_LEN = 65, 64, 32, 64
LSTM = TrainConfig(kind="lstm", hidden=256, embed_dim=EMBED, batch=BATCH, seq_len=SEQ_LEN, forget_bias=None)
RACE_MARKS = (10, 30, 60, 150)
ESTIMATE_SHAPES = ((1, 64, 32, 64), (2, 128, 32, 64), (1, 256, 16, 128), (2, 128, 8, 32))  # L, H, B, T
RECALL_PAIRS = 4


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def equal_parameters(kind: str, target: int | None = None) -> TrainConfig:
    """``kind`` at its preset's depth and heads, B = 32, T = 64, E = 64, as wide as brings its parameter count
    closest to ``target`` (default: the 1 × 256 LSTM's), a multiple of its heads."""
    target = target or count_parameters(LSTM, VOCAB)
    preset = ALL_PRESETS[KIND_PRESETS[kind]].config
    step = preset.n_head if kind != "selective" else 1

    def at(multiple: int) -> TrainConfig:
        return dataclasses.replace(preset, hidden=step * multiple, embed_dim=EMBED, batch=BATCH, seq_len=SEQ_LEN)

    low, high = 1, 2048 // step  # the parameter count grows with the width: the first multiple that reaches it
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if count_parameters(at(middle), VOCAB) >= target else (middle + 1, high)
    return min((at(m) for m in (low - 1, low) if m >= 1), key=lambda c: abs(count_parameters(c, VOCAB) - target))


def _train_step(config: TrainConfig):
    """A closure that takes one Adam step of ``config``'s model on a fixed random batch."""
    torch.manual_seed(0)
    model = build_model(config.model_config(VOCAB))
    optimizer = make_optimizer("adam", model.parameters(), 2e-3)
    x = torch.randint(0, VOCAB, (config.batch, config.seq_len))
    y = torch.randint(0, VOCAB, (config.batch, config.seq_len))

    def step():
        _, loss, _ = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def train_speed(configs: dict[str, TrainConfig] | None = None, rounds: int = 15) -> dict:
    """Characters per second of one training step of each config, in turns; the estimate beside each."""
    configs = configs or {"lstm": LSTM, **{kind: equal_parameters(kind) for kind in KIND_PRESETS}}
    load = _load()
    flops = measure_matmul_flops()
    times = alternate({name: _train_step(c) for name, c in configs.items()}, rounds=rounds, warmup=2)
    rows = {}
    for name, config in configs.items():
        chars = config.batch * config.seq_len / statistics.median(times[name])
        with torch.device("meta"):
            state = state_nbytes(build_model(config.model_config(VOCAB)).rnn.zero_state(1))
        rows[name] = {"shape": f"{config.layers} × {config.hidden}", "parameters": count_parameters(config, VOCAB),
                      "state_bytes": state, "chars_per_s": round(chars),
                      "estimate_chars_per_s": round(estimate_chars_per_second(config, VOCAB, flops))}
    lstm = rows[next(iter(rows))]["chars_per_s"]
    for row in rows.values():
        row["over_lstm"] = round(row["chars_per_s"] / lstm, 3)
    return {"batch": BATCH, "seq_len": SEQ_LEN, "vocab": VOCAB, "embed_dim": EMBED, "rounds": rounds,
            "matmul_gflops": round(flops / 1e9, 1), "kinds": rows, "load_before": load, "load_after": _load()}


def estimate_check(rounds: int = 7) -> dict:
    """Estimated ÷ measured chars/s of each kind at ESTIMATE_SHAPES (the estimate's matmul rate measured before and
    after, averaged)."""
    configs = {f"{kind} {layers} × {hidden}, B {batch}, T {length}":
               TrainConfig(kind=kind, layers=layers, hidden=hidden, batch=batch, seq_len=length, forget_bias=None)
               for kind in KIND_PRESETS for layers, hidden, batch, length in ESTIMATE_SHAPES}
    load, before = _load(), measure_matmul_flops()
    times = alternate({name: _train_step(c) for name, c in configs.items()}, rounds=rounds, warmup=1)
    flops = (before + measure_matmul_flops()) / 2
    rows = {}
    for name, config in configs.items():
        measured = config.batch * config.seq_len / statistics.median(times[name])
        estimate = estimate_chars_per_second(config, VOCAB, flops)
        rows[name] = {"chars_per_s": round(measured), "estimate": round(estimate),
                      "estimate_over_measured": round(estimate / measured, 2)}
    return {"matmul_gflops": round(flops / 1e9, 1), "shapes": rows, "load_before": load, "load_after": _load()}


def recall_time(pairs: int = RECALL_PAIRS) -> dict:
    """Seconds of one run of the default recall sweep per kind (at D = ``pairs``), on one thread, and their sum
    over the sweep's D values: the sweep's time."""
    from rnnviz.experiments.delay import torch_threads
    from rnnviz.experiments.recall import RecallSweepConfig, run_recall

    config = RecallSweepConfig()
    load = _load()
    seconds = {}
    with torch_threads(1):
        for kind in config.kinds:
            record = run_recall(config, kind, pairs, config.base_seed)
            seconds[kind] = {"seconds": round(record.seconds, 1), "accuracy": round(record.accuracy, 3)}
    run_seconds = sum(s["seconds"] for s in seconds.values())
    return {"pairs": pairs, "steps": config.steps, "runs_in_sweep": len(config.runs()), "per_kind": seconds,
            "sweep_seconds": round(run_seconds * len(config.pairs) * config.seeds),
            "load_before": load, "load_after": _load()}


def preset_speed(steps: int = 25) -> dict:
    """The Trainer's median chars/s of each kind's preset on Tiny Shakespeare and the offline corpora."""
    from rnnviz.charlm.corpus import Corpus, load_builtin
    from rnnviz.charlm.speed import estimate_for_corpus
    from rnnviz.charlm.train import Trainer

    corpora = {name: load_builtin(name) for name in ("python-stdlib", "english-docs")}
    if DATA.exists():
        corpora = {"tiny-shakespeare": Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8")), **corpora}
    load, flops = _load(), measure_matmul_flops()
    rows = {}
    for name in KIND_PRESETS.values():
        config = ALL_PRESETS[name].config
        for corpus_name, corpus in corpora.items():
            trainer = Trainer(config, corpus)
            trainer.run(steps)
            rows[f"{name} on {corpus_name}"] = {
                "vocab": trainer.vocab.size, "parameters": trainer.num_parameters,
                "chars_per_s": round(trainer.chars_per_second),
                "estimate_chars_per_s": round(estimate_for_corpus(config, corpus, flops))}
    return {"steps": steps, "presets": rows, "load_before": load, "load_after": _load()}


def race(seconds: float = 150.0, slice_s: float = 5.0) -> dict:
    """Each kind's preset and the LSTM preset on Tiny Shakespeare, on one clock: val loss at RACE_MARKS."""
    from rnnviz.charlm.corpus import Corpus
    from rnnviz.serving.race import Race

    if not DATA.exists():
        return {"skipped": f"{DATA} is absent"}
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    names = [SHAKESPEARE_3_MIN, *KIND_PRESETS.values()]
    load, wall = _load(), time.perf_counter()
    marks = tuple(m for m in RACE_MARKS if m <= seconds)
    contest = Race.from_configs(corpus, {name: ALL_PRESETS[name].config for name in names}, marks=marks,
                                slice_s=slice_s)
    contest.run(lambda m: print(f"{m.name:40s} {m.mark:5.0f} s  step {m.step:6,}  val {m.val_loss:.4f}", flush=True))
    rows = {}
    for name, trainer in contest.trainers.items():
        config = trainer.config
        rows[name] = {"kind": config.kind, "shape": f"{config.layers} × {config.hidden}",
                      "parameters": trainer.num_parameters, "steps": trainer.step,
                      "chars_per_s": round(trainer.step * trainer.chars_per_step / max(trainer.seconds, 1e-9)),
                      "val_at": {f"{m.mark:g}s": round(m.val_loss, 4) for m in contest.curves[name]},
                      "config": config.to_dict()}
    return {"seconds": seconds, "slice_s": slice_s, "contenders": rows, "halted": contest.halted,
            "wall_s": round(time.perf_counter() - wall), "load_before": load, "load_after": _load()}


TUNE_SHAPES = {"slstm": ((1, 256), (2, 128)), "mlstm": ((2, 128), (2, 256)), "selective": ((1, 128), (2, 96)),
               "linear_attention": ((2, 128), (2, 256))}  # (L, H) raced for each kind's preset


def tune(seconds: float = 45.0) -> dict:
    """Two shapes of each kind on Tiny Shakespeare, one clock: val loss at 20 s and ``seconds``."""
    from rnnviz.charlm.corpus import Corpus
    from rnnviz.serving.race import Race

    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    configs = {f"{kind} {layers} × {hidden}": TrainConfig(kind=kind, layers=layers, hidden=hidden, batch=BATCH,
                                                          seq_len=SEQ_LEN, optimizer="adamw", lr=5e-3,
                                                          forget_bias=None)
               for kind, shapes in TUNE_SHAPES.items() for layers, hidden in shapes}
    load = _load()
    contest = Race.from_configs(corpus, configs, marks=(20, seconds), slice_s=5, eval_chars=20_000)
    contest.run(lambda m: print(f"{m.name:24s} {m.mark:4.0f} s  step {m.step:5,}  val {m.val_loss:.4f}", flush=True))
    return {name: {f"{m.mark:g}s": round(m.val_loss, 4) for m in curve} for name, curve in contest.curves.items()} \
        | {"load_before": load, "load_after": _load()}


def run() -> dict:
    configure_cpu()
    speed = train_speed()
    print_table(f"Training step, B = {BATCH}, T = {SEQ_LEN}, V = {VOCAB}, E = {EMBED}, equal parameters "
                f"(load {speed['load_before']} → {speed['load_after']})",
                ["kind", "shape", "parameters", "state B", "chars/s", "× LSTM", "estimate"],
                [[k, r["shape"], f"{r['parameters']:,}", f"{r['state_bytes']:,}", f"{r['chars_per_s']:,}",
                  r["over_lstm"], f"{r['estimate_chars_per_s']:,}"] for k, r in speed["kinds"].items()])
    check = estimate_check()
    print_table(f"Estimate against measurement (matmul {check['matmul_gflops']} GFLOP/s; load {check['load_before']} → "
                f"{check['load_after']})", ["kind and shape", "chars/s", "estimate", "÷"],
                [[n, f"{r['chars_per_s']:,}", f"{r['estimate']:,}", r["estimate_over_measured"]]
                 for n, r in check["shapes"].items()])
    presets = preset_speed()
    print_table(f"The presets, {presets['steps']} steps each (load {presets['load_before']} → "
                f"{presets['load_after']})", ["preset and corpus", "parameters", "chars/s", "estimate"],
                [[n, f"{r['parameters']:,}", f"{r['chars_per_s']:,}", f"{r['estimate_chars_per_s']:,}"]
                 for n, r in presets["presets"].items()])
    recall = recall_time()
    print_table(f"Recall sweep, one run per kind at D = {recall['pairs']}, {recall['steps']} steps, 1 thread "
                f"(load {recall['load_before']} → {recall['load_after']})", ["kind", "seconds", "accuracy"],
                [[k, v["seconds"], v["accuracy"]] for k, v in recall["per_kind"].items()])
    print(f"the default sweep's {recall['runs_in_sweep']} runs: about {recall['sweep_seconds']} s")
    return {"train_speed": speed, "estimate": check, "presets": presets, "recall_sweep": recall}


if __name__ == "__main__":  # python -m bench.kinds_speed [race [SECONDS] | tune]
    from bench.__main__ import write_row

    before = os.getloadavg()[0]
    if sys.argv[1:2] == ["tune"]:
        configure_cpu()
        print(tune())
    elif sys.argv[1:2] == ["race"]:
        configure_cpu()
        result = race(float(sys.argv[2]) if len(sys.argv) > 2 else 150.0)
        print_table("150 s on Tiny Shakespeare, val nats/char", ["contender", "shape", "chars/s",
                    *(f"{m} s" for m in RACE_MARKS)],
                    [[n, r["shape"], f"{r['chars_per_s']:,}", *r["val_at"].values()]
                     for n, r in result.get("contenders", {}).items()])
        write_row("kinds_150s", result, before)
    else:
        write_row("kinds_speed", run(), before)
