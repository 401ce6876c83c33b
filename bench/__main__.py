"""Run every benchmark, print its table, and write bench/results.json.

Usage: python -m bench [name ...]   (names: see BENCHMARKS; default all)
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

# rnnviz first: it sets the OpenMP wait policy (GOMP_SPINCOUNT), which must precede torch's import.
import rnnviz  # noqa: F401

# isort: split
import torch

# Module names under bench/, each with a run() -> dict.
BENCHMARKS = [
    "train_overhead",
    "omp_wait",
    "time_to_loss",
    "explorer_speed",
    "live_estimate",
    "memory_recipe",
    "class_load",
    "captioning",
    "mingru_speed",
    "kinds_speed",
    "ray_overhead",
    "time_to_words",
    "run_save",
    "explorer_readings",
    "soak",
    "ngram_fit",
    "seq2seq",
    "browser_latency",
    "browser_latency_class",
    "anytime",
]

RESULTS = Path(__file__).resolve().parent / "results.json"


def main(argv: list[str]) -> int:
    names = argv or BENCHMARKS
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    for name in names:
        row = importlib.import_module(f"bench.{name}").run()
        write_row(name, row, load_before)  # at once, re-reading the file: a row another run wrote meanwhile stays
    print(f"\nwrote {RESULTS}")
    return 0


def write_row(name: str, row: dict, load_before: float) -> None:
    """Merge one benchmark's row into results.json, with the machine it ran on."""
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results = previous.get("benchmarks", {})
    results[name] = row
    out = {
        "machine": {"python": platform.python_version(), "torch": torch.__version__,
                    "threads": torch.get_num_threads(), "cuda": torch.cuda.is_available(),
                    # 1-minute load average before and after: above ~2 on 2 cores, other jobs shared the CPU
                    "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)},
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "benchmarks": results,
    }
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
