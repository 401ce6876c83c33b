"""Characters per second of ``generate`` on the shipped 1 × 256 LSTM (Tiny Shakespeare): one character per step
through torch's single-step cell kernels (``_cell_step``, what generate does now) against the fused
``nn.LSTM`` module called for one step (what it did before). The explorer writes 10,000 characters this way
when the server lacks a model's corpus, and every sample of the live page is drawn so.

Both take turns (5 rounds of 2,000 characters, τ 0.8, seed 0), on 1 torch thread and on 2; medians and the
ratio. The 1-minute load average is recorded: above ~2 on 2 cores, other jobs shared the CPU.
"""

from __future__ import annotations

import os
from unittest import mock

import torch

from bench.common import alternate, median, print_table
from rnnviz.charlm import pretrained, sample
from rnnviz.charlm.checkpoint import load_checkpoint

CHARS = 2000


def run() -> dict:
    checkpoint = load_checkpoint(pretrained.MODELS_DIR / "lstm-tiny-shakespeare.pt")
    model, vocab = checkpoint.model, checkpoint.vocab

    def cell_kernels():
        sample.generate(model, vocab, "", CHARS, temperature=0.8, seed=0)

    def fused_module():
        with mock.patch.object(sample, "_steps_by_cell", lambda _model: False):
            sample.generate(model, vocab, "", CHARS, temperature=0.8, seed=0)

    threads_before, rows, result = torch.get_num_threads(), [], {"chars": CHARS, "load_before": os.getloadavg()[0]}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            times = alternate({"cell kernels": cell_kernels, "fused module": fused_module})
            speed = {name: round(CHARS / median(t)) for name, t in times.items()}
            ratio = round(speed["cell kernels"] / speed["fused module"], 2)
            result[f"threads_{threads}"] = {"chars_per_s": speed, "ratio": ratio}
            rows.append([threads, f"{speed['cell kernels']:,}", f"{speed['fused module']:,}", ratio])
    finally:
        torch.set_num_threads(threads_before)
    result["load_after"] = os.getloadavg()[0]
    print_table(f"generate, shipped 1 × 256 LSTM, {CHARS:,} characters (load {result['load_before']:.2f} → "
                f"{result['load_after']:.2f})", ["threads", "cell kernels chars/s", "fused module chars/s", "ratio"],
                rows)
    return result


if __name__ == "__main__":
    run()
