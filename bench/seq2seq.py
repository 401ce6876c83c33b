"""Sequence to sequence: the page's "train both" at its default config, timed; shipped accuracy by length.

1. train: both joins from Seq2SeqConfig() (the page's default), same batches; wall and CPU seconds, and the fresh
   pair's held-out exact match at lengths 1…2L (100 strings per length).
2. shipped: the shipped pair's exact match and per-character accuracy at lengths 1…2L (200 strings per length,
   the held-out sets MODELS.md records).

The 1-minute load average is recorded before and after each: on the project's shared 2-core machine other jobs
often run, and CPU far below wall (or load above ~2) means they shared the cores.

Usage: python -m bench.seq2seq [train|shipped]
"""

from __future__ import annotations

import os
import sys
import time

from bench.common import print_table
from rnnviz.core.runtime import configure_cpu
from rnnviz.seq2seq import checkpoint as ckpt
from rnnviz.seq2seq import decode as D
from rnnviz.seq2seq.__main__ import REPORT_LENGTHS
from rnnviz.seq2seq.model import Seq2SeqConfig
from rnnviz.seq2seq.train import train_pair


def _timed(fn):
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1),
                    "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}


def _table(rows: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for r in rows:
        out.setdefault(r["model"], {})[r["length"]] = {"exact": round(r["exact"], 3), "char": round(r["char"], 3)}
    return out


def bench_train() -> dict:
    threads = configure_cpu()
    config = Seq2SeqConfig()
    (models, history), timing = _timed(lambda: train_pair(config))
    rows = D.accuracy_by_length(models, REPORT_LENGTHS, 100)
    return {**timing, "threads": threads, "steps": config.steps, "batch": config.batch,
            "final_loss": {k: round(v[-1], 4) for k, v in history.loss.items()}, "by_length": _table(rows)}


def bench_shipped() -> dict:
    configure_cpu()
    models, _ = ckpt.load_shipped()
    rows, timing = _timed(lambda: D.accuracy_by_length(models, REPORT_LENGTHS, 200))
    return {**timing, "n_per_length": 200, "by_length": _table(rows)}


PARTS = {"train": bench_train, "shipped": bench_shipped}


def _print_lengths(title: str, table: dict) -> None:
    lengths = sorted(next(iter(table.values())))
    print_table(title, ["length", *(f"{m} {k}" for m in table for k in ("exact", "char"))],
                [[n, *(table[m][n][k] for m in table for k in ("exact", "char"))] for n in lengths])


def run(parts: list[str] | None = None) -> dict:
    results = {name: PARTS[name]() for name in (parts or PARTS)}
    if "train" in results:
        t = results["train"]
        print_table("Default pair training (both joins, same batches)",
                    ["steps", "threads", "wall s", "cpu s", "load before", "load after", "loss fixed",
                     "loss attention"],
                    [[t["steps"], t["threads"], t["wall_s"], t["cpu_s"], t["load_before"], t["load_after"],
                      t["final_loss"]["fixed"], t["final_loss"]["attention"]]])
        _print_lengths("Fresh default pair: held-out accuracy by input length (100 per length)", t["by_length"])
    if "shipped" in results:
        _print_lengths("Shipped pair: held-out accuracy by input length (200 per length)",
                       results["shipped"]["by_length"])
    return results


if __name__ == "__main__":
    unknown = sorted(set(sys.argv[1:]) - set(PARTS))
    if unknown:
        print(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}", file=sys.stderr)
        raise SystemExit(2)
    run(sys.argv[1:] or None)
