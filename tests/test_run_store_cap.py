"""The run store's size cap (rnnviz.serving.durable.RunStore.prune) deletes the oldest saved runs first, but never a
run this process still holds, even when that run is the oldest and the folder stays over the cap without it."""

import os
import time

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import TrainConfig
from rnnviz.serving.durable import RunStore
from rnnviz.serving.live import LiveRun, LiveSettings
from rnnviz.serving.settings import StoreSetting

TINY = TrainConfig(hidden=8, embed_dim=4, batch=2, seq_len=8, device="cpu")
CORPUS = Corpus("notes", "a store that fills up deletes the oldest runs first. " * 20)


def saved_run(store: RunStore, token: str, age_s: float, now: float) -> LiveRun:
    """A run kept by ``store`` (held while the returned run lives), trained a step, saved ``age_s`` ago."""
    run = LiveRun.create(TINY, CORPUS, LiveSettings(step_budget=10, sample_every=5, sample_length=5))
    run.token = token
    run.keep_on(store.keeper(run))
    run.advance(0.0)
    assert run.keeper.save(run), run.keeper.problem
    os.utime(run.keeper.folder / "state", (now - age_s,) * 2)
    return run


def test_the_size_cap_never_deletes_a_run_this_process_holds_even_the_oldest(tmp_path):
    now = time.time()
    elsewhere = RunStore(StoreSetting(tmp_path))  # another server on the same folder: its runs are not held here
    theirs = saved_run(elsewhere, "their-run-" + "t" * 40, age_s=60, now=now)
    ours_store = RunStore(StoreSetting(tmp_path))
    ours = saved_run(ours_store, "our-run-" + "o" * 40, age_s=3_600, now=now)  # the oldest save in the folder
    ours_store.setting = StoreSetting(tmp_path, max_total_bytes=1)  # every run is over the cap now
    removed = ours_store.prune(now)
    assert removed == [theirs.keeper.folder.name]  # within the retention period: only the cap deleted it
    assert not theirs.keeper.folder.exists()
    assert (ours.keeper.folder / "state").exists(), "the run this process holds was deleted by the size cap"
    assert ours_store.summary().runs == 1
