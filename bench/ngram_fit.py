"""Interpolated Kneser-Ney n-grams (rnnviz.interpret.ngram) on Tiny Shakespeare's train split (1.0 M characters,
V = 65): the time to fit every order 1 … 6 at once, the val loss of each order in nats per character (the unit of
the char models' val loss), and the time to score the val split (111 k characters) at each order and to find the
order-6 top guesses. Medians of 3 rounds after a warm-up.

Reads /work/shared/data/tinyshakespeare.txt where it exists, else the python-stdlib corpus (1 MB), so that it runs
offline. The 1-minute load average is recorded: above ~2 on 2 cores, other jobs shared the CPU.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import alternate, median, print_table
from rnnviz.charlm.corpus import Corpus, load_builtin
from rnnviz.interpret.ngram import fit_ngrams

SHAKESPEARE = Path("/work/shared/data/tinyshakespeare.txt")
MAX_ORDER = 6
ROUNDS = 3


def run() -> dict:
    if SHAKESPEARE.is_file():
        corpus = Corpus("tiny-shakespeare", SHAKESPEARE.read_text(encoding="utf-8"))
    else:
        corpus = load_builtin("python-stdlib")
    train, val = corpus.split()
    vocab_size = corpus.vocab.size
    result = {"corpus": corpus.name, "train_chars": len(train), "val_chars": len(val), "vocab": vocab_size,
              "load_before": os.getloadavg()[0]}

    fit_s = median(alternate({"fit": lambda: fit_ngrams(train, vocab_size, MAX_ORDER)}, rounds=ROUNDS)["fit"])
    models = fit_ngrams(train, vocab_size, MAX_ORDER)
    rows, losses, score_s = [], {}, {}
    for n in range(1, MAX_ORDER + 1):
        times = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            losses[n] = models.loss(val, n)
            times.append(time.perf_counter() - start)
        score_s[n] = median(times)
        rows.append([n, f"{losses[n]:.4f}", f"{losses[n] / 0.6931471805599453:.3f}", f"{score_s[n] * 1000:.0f}"])
    guess_s = median(alternate({"top": lambda: models.top_guess(val, MAX_ORDER)}, rounds=ROUNDS, warmup=0)["top"])
    result.update({
        "fit_all_orders_s": round(fit_s, 3),
        "val_loss_nats": {n: round(loss, 4) for n, loss in losses.items()},
        "score_val_ms": {n: round(s * 1000, 1) for n, s in score_s.items()},
        "top_guess_order6_s": round(guess_s, 3),
        "load_after": os.getloadavg()[0],
    })
    print_table(f"Kneser-Ney n-grams on {corpus.name}: fit orders 1…{MAX_ORDER} on {len(train):,} characters in "
                f"{fit_s:.2f} s; order-{MAX_ORDER} top guesses for {len(val):,} val characters in {guess_s:.2f} s "
                f"(load {result['load_before']:.2f} → {result['load_after']:.2f})",
                ["n", "val loss nats/char", "bits/char", "score val ms"], rows)
    return result


if __name__ == "__main__":
    run()
