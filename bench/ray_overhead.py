"""The Ray backend against in-process training, on the 1 × 256 LSTM preset (B 32, T 64): chars/s and the time
from Start to the first step.

Both sides are driven as the page drives them: a LiveRun ticked every RERUN_EVERY s with CHUNK_SECONDS chunks.
In-process, each tick trains a chunk; on Ray, each tick polls an actor (one CPU, one torch thread) that keeps
two chunks in flight. The in-process side runs on one torch thread too, so that the ratio measures what Ray
adds (transfers, polling, idle gaps), not a second core. Rounds alternate, a fresh run each round; the Ray side
runs on a private local Ray (2 CPUs, no dashboard), started once. Target: ratio ≥ 0.9.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import torch

from bench.common import median, print_table
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.train import TrainConfig
from rnnviz.serving.live import LiveRun, LiveSettings
from rnnviz.serving.settings import BackendSetting
from rnnviz.serving.slots import TrainingSlots
from rnnviz.ui.live_training.run import CHUNK_SECONDS, RERUN_EVERY

PRESET = TrainConfig(kind="lstm", layers=1, hidden=256, batch=32, seq_len=64, device="cpu")
SETTINGS = LiveSettings(step_budget=1_000_000, sample_every=100, sample_length=200)
SHAKESPEARE = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"
WINDOW_S, ROUNDS = 6.0, 5


def _corpus() -> Corpus:
    if SHAKESPEARE.exists():
        return Corpus("tiny-shakespeare", SHAKESPEARE.read_text(encoding="utf-8"))
    return Corpus("english-docs", english_docs_text())


def _drive(run: LiveRun, slots: TrainingSlots) -> tuple[float, float]:
    """Start, then tick as the page does for WINDOW_S after the first step: (Start → first step s, chars/s)."""
    start = time.perf_counter()
    run.start()
    first = None
    while True:
        tick_at = time.perf_counter()
        run.tick(slots, "bench", CHUNK_SECONDS)
        now = time.perf_counter()
        if first is None and run.step > 0:
            first, first_step = now, run.step
        if first is not None and now - first >= WINDOW_S:
            break
        time.sleep(max(0.0, RERUN_EVERY - (now - tick_at)))  # the fragment's timer: a late rerun follows at once
    chars = (run.step - first_step) * run.trainer.chars_per_step
    return first - start, chars / (time.perf_counter() - first)


def run() -> dict:
    import ray

    from rnnviz.serving.ray_backend import connect, train_on_ray

    corpus = _corpus()
    threads = torch.get_num_threads()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=150_000_000,
             namespace="rnnviz", log_to_driver=False)
    folder = tempfile.mkdtemp(prefix="rnnviz-bench-")
    connection = connect(BackendSetting("local", Path(folder), 200, 0, "the benchmark"))
    results: dict[str, list[float]] = {"in_first": [], "in_cps": [], "ray_first": [], "ray_cps": []}
    try:
        for _ in range(ROUNDS):
            torch.set_num_threads(1)
            try:
                first, cps = _drive(LiveRun.create(PRESET, corpus, SETTINGS), TrainingSlots(1))
            finally:
                torch.set_num_threads(threads)
            results["in_first"].append(first)
            results["in_cps"].append(cps)
            remote = train_on_ray(LiveRun.create(PRESET, corpus, SETTINGS), connection)
            first, cps = _drive(remote, TrainingSlots(1))
            remote.pause()
            remote.release()
            results["ray_first"].append(first)
            results["ray_cps"].append(cps)
    finally:
        ray.shutdown()
    ratio = median([r / i for r, i in zip(results["ray_cps"], results["in_cps"])])
    rows = [["in-process (1 thread)", f"{median(results['in_cps']):,.0f}", f"{median(results['in_first']):.2f}"],
            ["Ray actor (1 CPU)", f"{median(results['ray_cps']):,.0f}", f"{median(results['ray_first']):.2f}"]]
    print_table(f"Ray backend overhead, 1 × 256 LSTM, B 32, T 64 (median of {ROUNDS} rounds of {WINDOW_S:g} s; "
                f"ratio ray/in-process {ratio:.2f}, target ≥ 0.9; load {os.getloadavg()[0]:.2f})",
                ["backend", "chars/s", "Start → first step (s)"], rows)
    return {"chars_per_s_in_process": round(median(results["in_cps"])),
            "chars_per_s_ray": round(median(results["ray_cps"])), "ratio_ray_to_in_process": round(ratio, 3),
            "start_to_first_step_s_in_process": round(median(results["in_first"]), 2),
            "start_to_first_step_s_ray": round(median(results["ray_first"]), 2),
            "ratio_per_round": [round(r / i, 3) for r, i in zip(results["ray_cps"], results["in_cps"])],
            "rounds": ROUNDS, "window_s": WINDOW_S, "load_after": round(os.getloadavg()[0], 2)}


if __name__ == "__main__":
    run()
