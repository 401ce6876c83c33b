"""The live page's "estimated chars/s" beside the Trainer's measured chars/s, for the presets and a few shapes.

The estimate (rnnviz.charlm.live.estimate_chars_per_second) is a per-step overhead plus a per-time-step overhead
plus 6·P·B·T flops at MATMUL_EFFICIENCY of the matmul rate measured just before. Configurations alternate
in rounds, so that load from other jobs hits them alike; the ratio estimate / measured should stay within
about 0.5–2 for the estimate to be useful. Usage: python -m bench.live_estimate
"""

from __future__ import annotations

import torch

from bench.common import alternate, median, print_table
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.live import estimate_chars_per_second, measure_matmul_flops
from rnnviz.charlm.train import PRESETS, TrainConfig, Trainer
from rnnviz.core.runtime import configure_cpu

SHAPES = {
    **{name: preset.config for name, preset in PRESETS.items()},
    "1×64 LSTM, B16 T32": TrainConfig(hidden=64, batch=16, seq_len=32),
    "2×128 GRU": TrainConfig(kind="gru", layers=2, hidden=128),
    "1×512 LSTM": TrainConfig(hidden=512),
}


def run(rounds: int = 5, steps: int = 5) -> dict:
    configure_cpu()
    torch.manual_seed(0)
    corpus = Corpus("english-docs", english_docs_text())
    trainers = {name: Trainer(config, corpus) for name, config in SHAPES.items()}
    flops: list[float] = []

    def contender(trainer: Trainer):
        def train() -> None:
            flops.append(measure_matmul_flops())
            trainer.run(steps)

        return train

    times = alternate({name: contender(t) for name, t in trainers.items()}, rounds=rounds)
    rate = median(flops)
    results, rows = {"matmul_gflops": round(rate / 1e9, 1), "shapes": {}}, []
    for name, trainer in trainers.items():
        measured = steps * trainer.chars_per_step / median(times[name])
        estimate = estimate_chars_per_second(trainer.config, corpus.vocab.size, rate)
        results["shapes"][name] = {"measured": round(measured), "estimate": round(estimate),
                                   "ratio": round(estimate / measured, 2)}
        rows.append([name, f"{trainer.num_parameters:,}", f"{measured:,.0f}", f"{estimate:,.0f}",
                     f"{estimate / measured:.2f}"])
    print_table(f"live_estimate: chars/s, median of {rounds} alternating rounds of {steps} steps; matmul "
                f"{rate / 1e9:.0f} GFLOP/s", ["shape", "parameters", "measured", "estimated", "estimate ÷ measured"],
                rows)
    return results


if __name__ == "__main__":
    run()
