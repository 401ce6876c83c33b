"""How OpenMP's idle threads wait, and how many threads a training gets, against training speed on 2 cores.

Each cell trains a 1×256 LSTM in float32 (B 32, T 64: the Shakespeare preset before issue 22) in fresh processes,
whose environment sets libgomp's wait before torch loads, and reports characters per second of the Trainer:

- quiet: one training alone;
- beside a busy process: one training next to a pure-Python busy loop (another job on the machine);
- two at once: two trainings side by side (a server's two training slots), the mean of the two.

Policies: libgomp's default (spin about 3 ms), OMP_WAIT_POLICY=PASSIVE (sleep at once), GOMP_SPINCOUNT=1000
(rnnviz's default since issue 22, about 10 µs), and 1 thread per training (runtime.share_cores when two train at
once). The cells run in turn, so that load from other jobs falls on all of them alike.

Usage: python -m bench.omp_wait [seconds per cell]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import print_table

ROOT = Path(__file__).resolve().parents[1]
POLICIES = {
    "libgomp default (3 ms spin)": {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "300000"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None},
    "GOMP_SPINCOUNT=1000 (rnnviz)": {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "1000"},
    "1 thread, 1000 spins": {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "1000", "RNNVIZ_THREADS": "1"},
}
SITUATIONS = ("quiet", "beside a busy process", "two trainings at once")

# One training process: warm up, then train for the given seconds and print its chars/s.
TRAIN = """
import sys, time
import rnnviz  # the wait policy is already in the environment; rnnviz only fills in what is unset
import torch
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.runtime import configure_cpu
configure_cpu()
text = "".join(chr(97 + (i * 7919 % 26)) if i % 9 else " " for i in range(200_000))
trainer = Trainer(TrainConfig(hidden=256, batch=32, seq_len=64, lr=6e-3), Corpus("letters", text))  # float32
trainer.run(10)
start, steps = time.perf_counter(), trainer.step
trainer.run(1_000_000, max_seconds=float(sys.argv[1]))
print(f"{(trainer.step - steps) * trainer.chars_per_step / (time.perf_counter() - start):.0f}")
"""
BUSY = "import time\nend = time.time() + float(__import__('sys').argv[1])\nwhile time.time() < end: pass\n"


def _env(policy: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "RNNVIZ_THREADS")}
    env.update({k: v for k, v in policy.items() if v is not None})
    env["PYTHONPATH"] = str(ROOT)
    return env


def cell(policy: dict, situation: str, seconds: float) -> float:
    """Mean chars/s of the training process(es) in one situation."""
    trainings = 2 if situation == "two trainings at once" else 1
    procs = [subprocess.Popen([sys.executable, "-c", TRAIN, str(seconds)], env=_env(policy), cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for _ in range(trainings)]
    busy = None
    if situation == "beside a busy process":
        busy = subprocess.Popen([sys.executable, "-c", BUSY, str(seconds + 15)])
    try:
        speeds = [float(p.communicate(timeout=seconds + 120)[0].strip()) for p in procs]
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return sum(speeds) / len(speeds)


def run(seconds: float = 6.0) -> dict:
    load_before = os.getloadavg()[0]
    speeds: dict[str, dict[str, float]] = {name: {} for name in POLICIES}
    for situation in SITUATIONS:  # policies in turn within a situation, so drifting load hits each alike
        for name, policy in POLICIES.items():
            speeds[name][situation] = cell(policy, situation, seconds)
    load_after = os.getloadavg()[0]
    print_table(
        f"omp_wait: 1×256 LSTM (float32, B 32, T 64), chars/s per training ({seconds:g} s per cell; 1-min load "
        f"{load_before:.2f} before, {load_after:.2f} after)",
        ["policy", *SITUATIONS],
        [[name, *(f"{speeds[name][s]:,.0f}" for s in SITUATIONS)] for name in POLICIES],
    )
    return {"chars_per_s": {n: {s: round(v) for s, v in d.items()} for n, d in speeds.items()},
            "seconds_per_cell": seconds, "load": {"before": round(load_before, 2), "after": round(load_after, 2)},
            "written": time.strftime("%Y-%m-%d %H:%M:%S")}


if __name__ == "__main__":
    run(float(sys.argv[1]) if len(sys.argv) > 1 else 6.0)
