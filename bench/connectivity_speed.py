"""Connectivity of every prediction of a 500-character passage, batched against one call per prediction.

For each of the hidden-state page's four shipped english-docs models (RNN, LSTM, minGRU, Transformer), the
gradient norms ‖∂ log p(x_{t+1} | x_≤t) / ∂ x_s‖ of every prediction t = 0 … 498 of 500 held-out characters:

- **batched**: ``mean_connectivity`` (rows of ``BATCH`` prefixes, each read from position 0 and right-padded,
  one backward per group), median of ``ROUNDS`` runs;
- **per target**: ``connectivity`` called once per t (batch 1, one backward each), one run (it is the slow one).

Both compute the same numbers (the largest relative difference is reported), and the work is the same in
arithmetic: Σ_t (t + 1) steps of the model; the batched run does it as matrix products over rows. The 1-minute
load average is recorded next to the figures: above ~2 on 2 cores, other jobs shared the CPU.

``python -m bench.connectivity_speed`` prints the table.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from bench.common import print_table
from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.interpret.connectivity import connectivity, mean_connectivity
from rnnviz.ui.hidden_state.sections import SLOTS
from rnnviz.ui.kit.models import held_out_text

PASSAGE_CHARS = 500
MAX_DISTANCE = 80  # the distances compared between the two; either computes the full gradient
BATCH = 64  # rows per backward (mean_connectivity's default)
ROUNDS = 3


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def _per_target(model, ids, targets: list[int]) -> list:
    return [connectivity(model, ids, t) for t in targets]


def run() -> dict:
    load = _load()
    text = held_out_text(load_builtin("english-docs"), PASSAGE_CHARS)
    rows, out = [], {}
    for name, stem in SLOTS.items():
        checkpoint = load_checkpoint(MODELS_DIR / f"{stem}.pt")
        model, ids = checkpoint.model, checkpoint.vocab.encode(text)
        targets = list(range(len(ids) - 1))
        batched_times = []
        for _ in range(ROUNDS):
            seconds, batched = _timed(mean_connectivity, model, ids, max_distance=MAX_DISTANCE, targets=targets,
                                      batch=BATCH)
            batched_times.append(seconds)
        loop_s, singles = _timed(_per_target, model, ids, targets)
        expected = np.full_like(batched.norms, np.nan)
        for i, single in enumerate(singles):
            d = np.arange(min(MAX_DISTANCE + 1, single.t + 1))
            expected[i, d] = single.norms[single.t - d]
        scale = np.nanmax(np.abs(expected), axis=1, keepdims=True)
        difference = float(np.nanmax(np.abs(batched.norms - expected) / scale))
        batched_s = statistics.median(batched_times)
        out[name] = {"kind": model.config.kind, "predictions": len(targets), "batched_s": round(batched_s, 2),
                     "per_target_s": round(loop_s, 2), "speedup": round(loop_s / batched_s, 1),
                     "max_rel_difference": float(f"{difference:.2g}")}
        rows.append([name, model.config.kind, len(targets), f"{batched_s:.2f}", f"{loop_s:.2f}",
                     f"{loop_s / batched_s:.1f}×", f"{difference:.1g}"])
    print_table(f"Connectivity of every prediction of {PASSAGE_CHARS} held-out english-docs characters "
                f"(batched: {BATCH} rows per backward, median of {ROUNDS}; per target: one run)",
                ["model", "kind", "predictions", "batched s", "per target s", "speed-up", "max rel. diff"], rows)
    return {"passage_chars": PASSAGE_CHARS, "batch": BATCH, "models": out, "load_before": load,
            "load_after": _load()}


if __name__ == "__main__":
    run()
