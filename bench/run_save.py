"""What keeping a live run on disk costs (rnnviz.serving.durable): the size of a run's folder and the time of a
save and of a restore, for the live page's default preset and for a model at the per-session cap
(MAX_PARAMETERS), beside the time of one training chunk of the same run, measured in one run.

A run folder holds the state file (weights, Adam's two moments, the records and the samples) and up to
MAX_SNAPSHOTS weight snapshots; snapshots are written once each, so a periodic save writes the state file and at
most a snapshot or two. The save's share of training is its time over the save interval (60 s of training)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.common import median, print_table
from rnnviz.charlm.corpus import Corpus, python_stdlib_text
from rnnviz.charlm.presets import PRESETS, SHAKESPEARE_3_MIN
from rnnviz.serving.durable import RunStore
from rnnviz.serving.live import MAX_PARAMETERS, MAX_SNAPSHOTS, LiveRun, LiveSettings, light_copy
from rnnviz.serving.settings import DEFAULT_SAVE_EVERY_S, StoreSetting

ROUNDS = 5


def _case(name: str, config, corpus: Corpus, folder: Path) -> tuple[list, dict]:
    run = LiveRun.create(config, corpus, LiveSettings(step_budget=100_000, sample_every=100_000))
    run.token = f"bench-{name}-" + "b" * 40
    store = RunStore(StoreSetting(folder))
    keeper = store.keeper(run)
    run.keep_on(keeper)
    chunk = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run.advance(0.4)
        chunk.append(time.perf_counter() - start)
    weights = light_copy(run.trainer.model)
    run.snapshots = [(step, weights if step else run.snapshots[0][1]) for step in range(MAX_SNAPSHOTS)]
    assert keeper.save(run)  # the first save writes every snapshot
    saves, restores = [], []
    for _ in range(ROUNDS):
        run.advance(0.0)
        start = time.perf_counter()
        assert keeper.save(run)  # a periodic save: the state file only
        saves.append(time.perf_counter() - start)
        start = time.perf_counter()
        RunStore(StoreSetting(folder)).restore(run.token)
        restores.append(time.perf_counter() - start)
    state = (keeper.folder / "state").stat().st_size
    total = sum(f.stat().st_size for f in keeper.folder.iterdir())
    result = {"parameters": run.trainer.num_parameters, "state_mb": round(state / 1e6, 2),
              "folder_mb": round(total / 1e6, 1), "save_s": round(median(saves), 3),
              "restore_s": round(median(restores), 3), "chunk_s": round(median(chunk), 3),
              "share_of_training": round(median(saves) / DEFAULT_SAVE_EVERY_S, 4)}
    row = [name, f"{result['parameters']:,}", result["state_mb"], result["folder_mb"], result["save_s"],
           result["restore_s"], result["chunk_s"], f"{result['share_of_training']:.2%}"]
    return row, result


def run() -> dict:
    corpus = Corpus("python-stdlib", python_stdlib_text())
    default = PRESETS[SHAKESPEARE_3_MIN].config  # a 1 × 448 from its first step
    # The cap: the default's LSTM widened until it holds about MAX_PARAMETERS (4H(H + E + 2) + V(H + 1) + VE).
    hidden = next(h for h in range(448, 2000, 8) if 4 * h * (h + default.embed_dim + 2) + 97 * (h + 1) > MAX_PARAMETERS)
    capped = default.__class__(**{**default.to_dict(), "hidden": hidden - 8})
    result, rows = {"load_before": os.getloadavg()[0]}, []
    with tempfile.TemporaryDirectory() as folder:
        for name, config in ((SHAKESPEARE_3_MIN, default), ("at the cap", capped)):
            row, result[name] = _case(name, config, corpus, Path(folder))
            rows.append(row)
    result["load_after"] = os.getloadavg()[0]
    print_table(f"a live run on disk: {MAX_SNAPSHOTS} snapshots, medians of {ROUNDS} (load "
                f"{result['load_before']:.2f} → {result['load_after']:.2f})",
                ["run", "parameters", "state MB", "folder MB", "save s", "restore s", "chunk s",
                 f"save / {DEFAULT_SAVE_EVERY_S:g} s"], rows)
    return result


if __name__ == "__main__":
    run()
