"""minGRU speed on this machine: its training step against torch's fused GRU and LSTM of the same width, and its
parallel scan against the same recurrence stepped one t at a time.

1. **Training step.** One Adam step (forward, cross-entropy, backward, update) of a 1-layer character model,
   embedding E = 64 → recurrent layer of width H → readout over V = 65 characters, batch B = 32, T = 64, for
   the minGRU (parallel scan in log space), ``nn.GRU`` and ``nn.LSTM`` (oneDNN's fused kernels). The three
   take turns; medians of B·T / step time are reported, and their ratios.
2. **Scan against loop.** One forward and backward pass of a minGRU layer (batch 8, width 128) for T = 16 …
   1024, computed by the model's fast path (``LogSpaceScan``: the log-space scan forward, and on a CPU its
   hand-written adjoint as T multiply-adds) and by the loop h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t with
   autograd through every step (both after the same single matrix product for all t). Both take turns; medians
   and the ratio loop / scan.

``python -m bench.mingru_speed`` prints both tables; ``python -m bench.mingru_speed tune`` races a few minGRU
shapes and learning rates on Tiny Shakespeare (../shared/data/tinyshakespeare.txt) at equal training seconds,
val loss at 30 and 60 s, with the LSTM preset in the same race (``rnnviz.serving.race``). The 1-minute load
average is recorded next to every figure: above ~2 on 2 cores, other jobs shared the CPU.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import torch

from bench.common import alternate, print_table
from rnnviz.charlm.train import make_optimizer
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.core.mingru import MinGRU
from rnnviz.core.runtime import configure_cpu

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
VOCAB, EMBED, BATCH, SEQ_LEN = 65, 64, 32, 64
LENGTHS = (16, 64, 256, 1024)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _train_step(kind: str, hidden: int):
    """A closure that takes one Adam step of a 1-layer ``kind`` character model on a fixed random batch."""
    torch.manual_seed(0)
    model = CharModel(ModelConfig(vocab_size=VOCAB, kind=kind, hidden=hidden, embed_dim=EMBED))
    optimizer = make_optimizer("adam", model.parameters(), 2e-3)
    x = torch.randint(0, VOCAB, (BATCH, SEQ_LEN))
    y = torch.randint(0, VOCAB, (BATCH, SEQ_LEN))

    def step():
        _, loss, _ = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def train_speed(hidden: int = 256, rounds: int = 30) -> dict:
    """Characters per second of one training step for the minGRU, GRU and LSTM at width ``hidden``."""
    load = _load()
    steps = {kind: _train_step(kind, hidden) for kind in ("mingru", "gru", "lstm")}
    times = alternate(steps, rounds=rounds, warmup=3)
    chars = {kind: BATCH * SEQ_LEN / statistics.median(t) for kind, t in times.items()}
    return {"hidden": hidden, "batch": BATCH, "seq_len": SEQ_LEN,
            "chars_per_s": {k: round(v) for k, v in chars.items()},
            "mingru_over_lstm": round(chars["mingru"] / chars["lstm"], 2),
            "mingru_over_gru": round(chars["mingru"] / chars["gru"], 2), "load_before": load, "load_after": _load()}


def scan_speed(lengths: tuple[int, ...] = LENGTHS, batch: int = 8, width: int = 128, rounds: int = 7) -> dict:
    """Forward + backward milliseconds of a minGRU layer, parallel scan against the step-by-step loop."""
    load = _load()
    torch.manual_seed(0)
    layer = MinGRU(width, width)
    rows = []
    for length in lengths:
        x = torch.randn(batch, length, width)

        def run(parallel: bool, x: torch.Tensor = x):
            def step():
                layer.zero_grad(set_to_none=True)
                layer(x, parallel=parallel)[0].sum().backward()
            return step

        times = alternate({"scan": run(True), "loop": run(False)}, rounds=rounds, warmup=1)
        scan, loop = (statistics.median(times[k]) * 1e3 for k in ("scan", "loop"))
        rows.append({"T": length, "scan_ms": round(scan, 2), "loop_ms": round(loop, 2),
                     "loop_over_scan": round(loop / scan, 2)})
    return {"batch": batch, "width": width, "rows": rows, "load_before": load, "load_after": _load()}


def run() -> dict:
    configure_cpu()
    speed = train_speed()
    print_table(f"Training step, 1 layer, H = {speed['hidden']}, B = {BATCH}, T = {SEQ_LEN}", ["model", "chars/s"],
                [[k, f"{v:,}"] for k, v in speed["chars_per_s"].items()])
    print(f"minGRU / LSTM {speed['mingru_over_lstm']}, minGRU / GRU {speed['mingru_over_gru']} "
          f"(load {speed['load_before']} → {speed['load_after']})")
    scan = scan_speed()
    print_table(f"minGRU layer forward + backward, batch {scan['batch']}, width {scan['width']}",
                ["T", "scan ms", "loop ms", "loop / scan"],
                [[r["T"], r["scan_ms"], r["loop_ms"], r["loop_over_scan"]] for r in scan["rows"]])
    print(f"(load {scan['load_before']} → {scan['load_after']})")
    return {"train_step": speed, "scan_vs_loop": scan}


# -- tuning a preset at equal seconds ---------------------------------------------------------------------------


def tune(configs: dict | None = None, marks: tuple[float, ...] = (30, 60)) -> dict:
    """Race minGRU settings (and the LSTM preset) on Tiny Shakespeare; val loss at each mark, in nats/char."""
    from dataclasses import replace

    from rnnviz.charlm.corpus import Corpus
    from rnnviz.charlm.presets import ALL_PRESETS, MINGRU_PRESET, SHAKESPEARE_3_MIN
    from rnnviz.serving.race import Race

    configure_cpu()
    corpus = Corpus("tiny-shakespeare", DATA.read_text(encoding="utf-8"))
    preset = ALL_PRESETS[MINGRU_PRESET].config
    configs = configs or {  # the preset and its nearest rivals in the races in README.md (How the presets were tuned)
        "LSTM preset": ALL_PRESETS[SHAKESPEARE_3_MIN].config,
        "minGRU preset 2x128 lr 1e-2": preset,
        "minGRU 1x256 lr 6e-3": replace(preset, layers=1, hidden=256, lr=6e-3),
        "minGRU 2x256 lr 6e-3": replace(preset, hidden=256, lr=6e-3),
    }
    load = _load()
    race = Race.from_configs(corpus, configs, marks=marks)
    race.run(lambda m: print(f"{m.name:28s} {m.mark:5.0f} s  step {m.step:5d}  val {m.val_loss:.4f}", flush=True))
    result = {name: {f"{m.mark:g}s": round(m.val_loss, 4) for m in curve} for name, curve in race.curves.items()}
    return {"val_loss": result, "steps": {n: race.curves[n][-1].step for n in race.curves if race.curves[n]},
            "halted": race.halted, "load_before": load, "load_after": _load()}


if __name__ == "__main__":
    if sys.argv[1:] == ["tune"]:
        print(tune())
    else:
        run()
