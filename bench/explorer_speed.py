"""The hidden-cell explorer's first visit to a model: trace every cell of a 2 × 256 LSTM over 10k characters
and rank them all, then the same for a randomly initialised model of the same shape (the baseline the finder
shows beside each ranking).

Contenders, alternated in the same run so that noise from the other core hits them alike:

- ``first visit``: what rnnviz.ui.hidden_cell_explorer.data.prepare computes when the page meets a model and a text
  for the first time: the feature tracks of the text, ``trace_cells`` and ``rank_cells`` for the model, then a
  seeded random model of the same config, traced and ranked against the same tracks. Target: ≤ 2 s on
  2 cores, a 2 × 256 LSTM being larger than the shipped 1 × 256 models.
- ``model alone``: the tracks, trace and rank of the model only (the page's work when only the random
  baseline is cached, as on a second text length of the same shape).
- ``fused forward``: the bare ``model(ids)`` fast path over the same text, the floor for any trace.
- ``trace path``: ``model.trace`` (a Python loop over cells.py, the reference), over 2k characters only and
  scaled ×5, once: what the finder would cost without the fast trace.

The table reports the medians, the worst first visit, and the ratios to the fused forward pass.
"""

from __future__ import annotations

import time

import torch

from bench.common import alternate, median, print_table
from rnnviz.charlm.corpus import python_stdlib_text
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.core.runtime import configure_cpu
from rnnviz.interpret.finder import rank_cells, trace_cells
from rnnviz.interpret.textfeatures import feature_tracks

CHARS, LAYERS, HIDDEN = 10_000, 2, 256
TARGET_S = 2.0
SEED = 0  # the sidebar's default seed, which seeds the page's random baseline


def run(rounds: int = 5) -> dict:
    threads = configure_cpu()
    text = python_stdlib_text(200_000)[-CHARS:]
    torch.manual_seed(0)
    vocab = sorted(set(text))
    config = ModelConfig(vocab_size=len(vocab), layers=LAYERS, hidden=HIDDEN)
    model = CharModel(config).eval()
    ids = torch.tensor([vocab.index(c) for c in text])

    def model_alone():
        return rank_cells(trace_cells(model, ids), feature_tracks(text, "code"))

    def first_visit():
        tracks = feature_tracks(text, "code")
        rank_cells(trace_cells(model, ids), tracks)
        with torch.random.fork_rng(devices=[]):  # as the page's random_baseline: seeded, global RNG untouched
            torch.manual_seed(SEED)
            baseline = CharModel(config)
        rank_cells(trace_cells(baseline, ids), tracks)

    def fused():
        with torch.no_grad():
            model(ids.view(1, -1))

    times = alternate({"first visit": first_visit, "model alone": model_alone, "fused forward": fused},
                      rounds=rounds)
    start = time.perf_counter()
    with torch.no_grad():
        model.trace(ids[: CHARS // 5].view(1, -1))
    trace_path = 5 * (time.perf_counter() - start)
    visit_s, alone_s = median(times["first visit"]), median(times["model alone"])
    fused_s, worst_s = median(times["fused forward"]), max(times["first visit"])
    rows = [
        ["first visit: model + random baseline", f"{visit_s:.2f}", f"{worst_s:.2f}", f"{visit_s / fused_s:.2f}×",
         "yes" if visit_s <= TARGET_S else "NO"],
        ["model alone: tracks + trace + rank", f"{alone_s:.2f}", f"{max(times['model alone']):.2f}",
         f"{alone_s / fused_s:.2f}×", ""],
        ["fused forward only", f"{fused_s:.2f}", f"{max(times['fused forward']):.2f}", "1.00×", ""],
        ["trace path (×5 of 2k)", f"{trace_path:.2f}", "", f"{trace_path / fused_s:.1f}×", ""],
    ]
    print_table(f"Explorer finder: {LAYERS}×{HIDDEN} LSTM over {CHARS:,} characters, {threads} threads, "
                f"median of {rounds}", ["contender", "median s", "max s", "÷ fused forward",
                                        f"median ≤ {TARGET_S:g} s"], rows)
    return {
        "chars": CHARS, "layers": LAYERS, "hidden": HIDDEN, "threads": threads,
        "first_visit_s": round(visit_s, 3), "first_visit_max_s": round(worst_s, 3),
        "model_alone_s": round(alone_s, 3), "fused_forward_s": round(fused_s, 3), "trace_path_s": round(trace_path, 3),
        "first_visit_over_fused": round(visit_s / fused_s, 2), "meets_target": visit_s <= TARGET_S,
    }


if __name__ == "__main__":
    run()
