"""Memory over a long day of a class: rounds of light sessions (tests/load/soak.py) against a server of its own
with a 5 s disconnected-session TTL; in each round, sessions open pages in waves of 15 and two of each wave train a
live run (two chunks of the tiny RNN) and close with it. After each round's TTL: RSS, threads and live models.

With ``--trace``, the server runs with PYTHONTRACEMALLOC=1 and writes what Python's allocations hold after each
round (rnnviz.ui.app.garbage.write_memory_report); the table then has Python's traced MB beside RSS, and the
lines whose memory grew most from the second round to the last are printed: what Python objects keep, as
against what the C heap keeps (tracing slows the server several times).

The server runs as ``make run`` starts it, with MALLOC_ARENA_MAX=2 (``--default-arenas``: glibc's default, for
the comparison). Beside it, ``arena_speed`` checks that two arenas cost training nothing: fresh processes train
the 1 × 256 LSTM for 150 steps with and without the setting, taking turns, and the chars/s are compared.

Usage: python -m bench.soak [ROUNDS] [SESSIONS] [--trace] [--default-arenas]   (default 6 rounds of 150)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import print_table
from tests.conftest import SHAKESPEARE
from tests.e2e.harness import streamlit_server
from tests.load.soak import one_round, probe, server_pid_on

TTL_S = 5.0


TRAIN_STEPS = 150
TRAINING = f"""
import time
from rnnviz.charlm.corpus import Corpus, python_stdlib_text
from rnnviz.charlm.train import TrainConfig, Trainer
trainer = Trainer(TrainConfig(hidden=256, batch=32, seq_len=64, device="cpu"), Corpus("py", python_stdlib_text()))
trainer.run(10)
start = time.perf_counter()
trainer.run({TRAIN_STEPS})
print(trainer.chars_per_step * {TRAIN_STEPS} / (time.perf_counter() - start))
"""


def arena_speed(rounds: int = 3) -> dict:
    """Training chars/s in fresh processes with MALLOC_ARENA_MAX=2 and with glibc's default, taking turns."""
    speeds = {"2 arenas": [], "default": []}
    for _ in range(rounds):
        for name in speeds:
            env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
            if name == "2 arenas":
                env["MALLOC_ARENA_MAX"] = "2"
            out = subprocess.run([sys.executable, "-c", TRAINING], env=env, capture_output=True, text=True,
                                 check=True, cwd=Path(__file__).resolve().parents[1])
            speeds[name].append(float(out.stdout.split()[-1]))
    medians = {name: round(statistics.median(values)) for name, values in speeds.items()}
    return {"chars_per_s": medians, "ratio": round(medians["2 arenas"] / medians["default"], 3)}


def run(rounds: int = 6, sessions: int = 150, trace: bool = False, default_arenas: bool = False) -> dict:
    result = {"rounds": rounds, "sessions": sessions, "arenas": "default" if default_arenas else 2,
              "load_before": os.getloadavg()[0], "curve": []}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        shutil.copy(SHAKESPEARE, folder / "tinyshakespeare.txt")
        report = folder / "memory.json"
        env = {"RNNVIZ_CACHE": str(folder), "RNNVIZ_RUN_DIR": str(folder / "runs"),
               "MALLOC_ARENA_MAX": "" if default_arenas else "2"}  # "" leaves glibc's default
        if trace:
            env |= {"PYTHONTRACEMALLOC": "1", "RNNVIZ_MEMORY_REPORT": str(report)}
        with streamlit_server(extra_args=("--server.disconnectedSessionTTL", str(int(TTL_S))), env=env) as url:
            pid = server_pid_on(int(url.rsplit(":", 1)[1]))
            probe(url)
            rows, reports = [], []
            for number in range(1, rounds + 1):
                r = one_round(url, pid, sessions, 15, 2, TTL_S)
                traced = None
                if trace:
                    reports.append(json.loads(report.read_text()))
                    traced = round(reports[-1]["traced_bytes"] / 2**20, 1)
                point = {"round": number, "rss_before_mb": round(r.before.rss_mb), "rss_peak_mb": round(r.peak.rss_mb),
                         "rss_after_mb": round(r.after.rss_mb), "threads_after": r.after.threads,
                         "live_models_after": r.live_models_after, "python_traced_mb": traced,
                         "problems": len(r.problems)}
                result["curve"].append(point)
                rows.append([number, point["rss_before_mb"], point["rss_peak_mb"], point["rss_after_mb"],
                             traced if traced is not None else "—", point["threads_after"], point["live_models_after"],
                             point["problems"]])
                print(f"round {number}: {point}", flush=True)
    result["load_after"] = os.getloadavg()[0]
    after = [p["rss_after_mb"] for p in result["curve"]]
    result["growth_after_round_1_mb_per_100_sessions"] = (
        round((after[-1] - after[0]) / (sessions * (rounds - 1)) * 100, 1) if rounds > 1 else None)
    result["arena_speed"] = speed = arena_speed()
    print(f"training chars/s, 1 x 256 LSTM, fresh processes: {speed['chars_per_s']} (ratio {speed['ratio']})")
    print_table(f"soak: {rounds} rounds of {sessions} sessions (waves of 15, 2 training each), TTL {TTL_S:g} s, "
                f"{result['arenas']} malloc arenas "
                f"(load {result['load_before']:.2f} → {result['load_after']:.2f})",
                ["round", "RSS before MB", "peak MB", "after TTL MB", "Python traced MB", "threads", "live models",
                 "failed sessions"], rows)
    if trace and len(reports) > 2:
        first = {line["where"]: line["bytes"] for line in reports[1]["top"]}
        last = {line["where"]: line["bytes"] for line in reports[-1]["top"]}
        grown = sorted(((last[w] - first.get(w, 0), w) for w in last), reverse=True)[:10]
        result["grew_most"] = [{"where": w, "kib": round(d / 1024, 1)} for d, w in grown]
        print("\nPython allocations that grew most from round 2 to the last:")
        for d, w in grown:
            print(f"  {d / 1024:10.1f} KiB  {w}")
    return result


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    run(*(int(a) for a in args[:2]), trace="--trace" in sys.argv, default_arenas="--default-arenas" in sys.argv)
