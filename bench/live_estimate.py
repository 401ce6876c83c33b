"""The live page's "estimated chars/s" beside the Trainer's measured chars/s, for the presets and a few shapes.

The estimate (rnnviz.charlm.speed.estimate_chars_per_second) is a per-step overhead plus a per-time-step overhead
plus 6·P·B·T flops at MATMUL_EFFICIENCY of the matmul rate F, which the page measures with
``measure_matmul_flops``. Here F is measured the same way just before each timed run, outside its clock, and
the median of those measurements goes into the estimate. Configurations alternate in rounds, so that load
from other jobs hits them alike; the ratio estimate / measured should stay within about 0.5–2 for the
estimate to be useful.

The table also prints the three constants fitted to this run (least relative error, none negative) and the
ratios they would give, so that a run can re-fit rnnviz.charlm.speed's constants. The fit reads each shape's
fastest round, the one least slowed by other jobs, as the matmul rate F is a best-of-a-few measurement;
on a quiet machine the fastest round and the median agree.
Usage: python -m bench.live_estimate
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import torch

from bench.common import median, print_table
from rnnviz.charlm import speed
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.presets import PRESETS
from rnnviz.charlm.speed import count_parameters, estimate_chars_per_second, measure_matmul_flops
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.runtime import configure_cpu

SHAPES = {  # the recurrent presets (the estimate's form is that of a recurrent stack), then a few more shapes
    **{name: preset.config for name, preset in PRESETS.items() if preset.config.kind in ("rnn", "lstm", "gru")},
    "1×64 LSTM, B16 T32": TrainConfig(hidden=64, batch=16, seq_len=32),
    "1×16 LSTM, B1 T4 (hello)": TrainConfig(hidden=16, embed_dim=8, batch=1, seq_len=4),
    "2×128 GRU": TrainConfig(kind="gru", layers=2, hidden=128),
    "1×512 LSTM": TrainConfig(hidden=512),
}


def _terms(config: TrainConfig, vocab_size: int, flops: float) -> np.ndarray:
    """The estimate's three terms per step, before their constants: 1, layers·T, and 6·P·B·T / F."""
    embedding = config.embed_dim * vocab_size if config.embedding else 0
    dense = count_parameters(config, vocab_size) - embedding
    return np.array([1.0, config.layers * config.seq_len, 6 * dense * config.batch * config.seq_len / flops])


def fit_constants(terms: np.ndarray, seconds: np.ndarray) -> tuple[float, float, float]:
    """(step overhead s, time-step overhead s, matmul efficiency) minimising Σ ((predicted − t)/t)², none negative.

    The model is linear in (a, b, 1/efficiency), so every subset of them is a weighted least-squares fit;
    the best fit whose coefficients are all positive wins."""
    rows = terms / seconds[:, None]  # relative error: divide each equation by its measured time
    best, best_error = None, np.inf
    for size in (3, 2, 1):
        for subset in itertools.combinations(range(3), size):
            if 2 not in subset:  # the matmul term must stay, or the estimate ignores the model's size
                continue
            coef = np.zeros(3)
            coef[list(subset)] = np.linalg.lstsq(rows[:, subset], np.ones(len(seconds)), rcond=None)[0]
            error = float(np.sum((rows @ coef - 1) ** 2))
            if (coef >= 0).all() and coef[2] > 0 and error < best_error:
                best, best_error = coef, error
    return float(best[0]), float(best[1]), float(1 / best[2])


def run(rounds: int = 5, steps: int = 5) -> dict:
    configure_cpu()
    torch.manual_seed(0)
    corpus = Corpus("english-docs", english_docs_text())
    vocab = corpus.vocab.size
    trainers = {name: Trainer(config, corpus) for name, config in SHAPES.items()}
    for trainer in trainers.values():  # warm up: first steps pay allocations and kernel selection
        trainer.run(1)
    times: dict[str, list[float]] = {name: [] for name in trainers}
    flops: list[float] = []
    for _ in range(rounds):
        for name, trainer in trainers.items():
            flops.append(measure_matmul_flops())  # as the page measures it, outside the clock
            start = time.perf_counter()
            trainer.run(steps)
            times[name].append(time.perf_counter() - start)
    rate = median(flops)
    measured = {name: steps * trainers[name].chars_per_step / median(times[name]) for name in trainers}
    terms = np.array([_terms(t.config, vocab, rate) for t in trainers.values()])
    step_seconds = np.array([min(times[name]) / steps for name in trainers])  # the fastest round of each shape
    fitted = fit_constants(terms, step_seconds)
    current = (speed.STEP_OVERHEAD_S, speed.TIMESTEP_OVERHEAD_S, speed.MATMUL_EFFICIENCY)
    results = {"matmul_gflops": round(rate / 1e9, 1), "matmul_gflops_min_max": [round(min(flops) / 1e9, 1),
                                                                                 round(max(flops) / 1e9, 1)],
               "constants": {"step_overhead_s": current[0], "timestep_overhead_s": current[1],
                             "matmul_efficiency": current[2]},
               "fitted": {"step_overhead_s": round(fitted[0], 5), "timestep_overhead_s": round(fitted[1], 7),
                          "matmul_efficiency": round(fitted[2], 3)},
               "shapes": {}}
    rows = []
    for (name, trainer), term, best in zip(trainers.items(), terms, step_seconds):
        estimate = estimate_chars_per_second(trainer.config, vocab, rate)
        fastest = trainer.chars_per_step / best
        refit = trainer.chars_per_step / (fitted[0] * term[0] + fitted[1] * term[1] + term[2] / fitted[2])
        results["shapes"][name] = {"measured": round(measured[name]), "fastest": round(fastest),
                                   "estimate": round(estimate), "ratio": round(estimate / measured[name], 2),
                                   "ratio_to_fastest": round(estimate / fastest, 2),
                                   "ratio_fitted_to_fastest": round(refit / fastest, 2)}
        rows.append([name, f"{trainer.num_parameters:,}", f"{measured[name]:,.0f}", f"{fastest:,.0f}",
                     f"{estimate:,.0f}", f"{estimate / measured[name]:.2f}", f"{estimate / fastest:.2f}",
                     f"{refit / fastest:.2f}"])
    print_table(f"live_estimate: chars/s, median and fastest of {rounds} alternating rounds of {steps} steps; "
                f"matmul {rate / 1e9:.0f} GFLOP/s (median of {len(flops)}, measured outside the clock, "
                f"{min(flops) / 1e9:.0f}–{max(flops) / 1e9:.0f})",
                ["shape", "parameters", "measured", "fastest", "estimated", "estimate ÷ measured",
                 "÷ fastest", "fitted ÷ fastest"], rows)
    print(f"constants: step overhead {current[0] * 1e3:.2f} ms, time-step overhead {current[1] * 1e6:.1f} µs, "
          f"matmul efficiency {current[2]:.2f}; fitted to this run: {fitted[0] * 1e3:.2f} ms, "
          f"{fitted[1] * 1e6:.1f} µs, {fitted[2]:.2f}")
    return results


if __name__ == "__main__":
    run()
