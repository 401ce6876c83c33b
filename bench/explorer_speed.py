"""The hidden-cell explorer's finder: trace every cell of a 2 × 256 LSTM over 10k characters and rank them all.

Contenders, alternated in the same run so that noise from the other core hits them alike:

- ``finder``: ``trace_cells`` (fused kernels + one product for the gates) then ``rank_cells`` against every
  feature track of the text: what the page does on a new model or text. Target: ≤ 2 s on 2 cores.
- ``fused forward``: the bare ``model(ids)`` fast path over the same text, the floor for any trace.
- ``trace path``: ``model.trace`` (a Python loop over cells.py, the reference), over 2k characters only and
  scaled ×5, once: what the finder would cost without the fast trace.

The table reports the medians and the finder's ratio to the fused forward pass.
"""

from __future__ import annotations

import time

import torch

from bench.common import alternate, median, print_table
from rnnviz.charlm.corpus import python_stdlib_text
from rnnviz.core.charmodel import CharModel, ModelConfig
from rnnviz.core.runtime import configure_cpu
from rnnviz.interpret.finder import rank_cells, trace_cells
from rnnviz.interpret.textfeatures import feature_tracks

CHARS, LAYERS, HIDDEN = 10_000, 2, 256
TARGET_S = 2.0


def run(rounds: int = 5) -> dict:
    threads = configure_cpu()
    text = python_stdlib_text(200_000)[-CHARS:]
    torch.manual_seed(0)
    vocab = sorted(set(text))
    model = CharModel(ModelConfig(vocab_size=len(vocab), layers=LAYERS, hidden=HIDDEN)).eval()
    ids = torch.tensor([vocab.index(c) for c in text])

    def finder():
        rank_cells(trace_cells(model, ids), feature_tracks(text, "code"))

    def fused():
        with torch.no_grad():
            model(ids.view(1, -1))

    times = alternate({"finder": finder, "fused forward": fused}, rounds=rounds)
    start = time.perf_counter()
    with torch.no_grad():
        model.trace(ids[: CHARS // 5].view(1, -1))
    trace_path = 5 * (time.perf_counter() - start)
    finder_s, fused_s = median(times["finder"]), median(times["fused forward"])
    rows = [
        ["finder: trace + rank", f"{finder_s:.2f}", f"{finder_s / fused_s:.2f}×",
         "yes" if finder_s <= TARGET_S else "NO"],
        ["fused forward only", f"{fused_s:.2f}", "1.00×", ""],
        ["trace path (×5 of 2k)", f"{trace_path:.2f}", f"{trace_path / fused_s:.1f}×", ""],
    ]
    print_table(f"Explorer finder: {LAYERS}×{HIDDEN} LSTM over {CHARS:,} characters, {threads} threads, "
                f"median of {rounds}", ["contender", "seconds", "÷ fused forward", f"≤ {TARGET_S:g} s"], rows)
    return {
        "chars": CHARS, "layers": LAYERS, "hidden": HIDDEN, "threads": threads,
        "finder_s": round(finder_s, 3), "fused_forward_s": round(fused_s, 3), "trace_path_s": round(trace_path, 3),
        "finder_over_fused": round(finder_s / fused_s, 2), "meets_target": finder_s <= TARGET_S,
    }


if __name__ == "__main__":
    run()
