"""Faults: a run interrupted mid-chunk keeps the weights of its last whole step and resumes its count; a
crash while saving leaves no half-written checkpoint where the loader looks.

The page trains a LiveRun one chunk per script run. When a click arrives mid-chunk, Streamlit starts a new
script thread while the old one finishes its chunk (fastReruns), so two threads meet the run: Pause
waits for the chunk (the run's lock), a rerun started by another widget draws without training
(``tick_unless_busy``), and a reader on another page copies the weights under the lock. The threads below
do exactly that, and every result is checked against a clean replay of the same number of steps.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import torch

from rnnviz.charlm.checkpoint import load_checkpoint, save_checkpoint
from rnnviz.charlm.corpus import corpus_from_user_text
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.live import LiveRun, LiveSettings, Status
from rnnviz.serving.slots import TrainingSlots
from tests.apptest_helpers import ROOT

TEXT = "".join(f"The {w} sat on mat number {i}, and the {w} was content.\n"
               for i, w in enumerate(["cat", "dog", "owl", "fox", "emu"] * 40))
CONFIG = TrainConfig(kind="lstm", hidden=64, embed_dim=16, batch=8, seq_len=32, lr=3e-3, device="cpu")
CHUNK_S = 0.6  # long enough that the other thread arrives mid-chunk


@pytest.fixture
def corpus():
    return corpus_from_user_text(TEXT, name="mats.txt")


def replayed(corpus, steps: int) -> dict[str, torch.Tensor]:
    """The weights a fresh trainer with the same config reaches after ``steps`` steps, in one go."""
    trainer = Trainer(CONFIG, corpus)
    trainer.run(steps)
    return trainer.model.state_dict()


def assert_weights_of_step(run: LiveRun, corpus) -> None:
    """The run's weights are those of exactly ``run.step`` whole steps: no half-applied update, none lost."""
    expected = replayed(corpus, run.step)
    for name, value in run.trainer.model.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=0, atol=0, msg=name)
    assert [r.step for r in run.trainer.history] == list(range(1, run.step + 1))


def lock_is_held(run: LiveRun) -> bool:
    if run.lock.acquire(blocking=False):
        run.lock.release()
        return False
    return True


def in_flight(run: LiveRun, slots: TrainingSlots, owner: str) -> threading.Thread:
    """A script thread training one chunk; returns once it has taken a step and still holds the run's lock."""
    start = run.step
    thread = threading.Thread(target=run.tick, args=(slots, owner, CHUNK_S), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (run.step > start and lock_is_held(run)):
        assert time.monotonic() < deadline and thread.is_alive(), "no chunk in flight"
        time.sleep(0.002)
    return thread


def running_run(corpus) -> tuple[LiveRun, TrainingSlots]:
    run = LiveRun.create(CONFIG, corpus, LiveSettings(step_budget=100_000, sample_every=50, eval_chars=500))
    run.start()
    return run, TrainingSlots(1)


def test_pause_mid_chunk_waits_for_it_keeps_its_steps_and_resume_counts_on(corpus):
    run, slots = running_run(corpus)
    chunk = in_flight(run, slots, "me")
    mid_chunk = run.step
    run.pause()  # the Pause click's thread: waits for the chunk in flight
    paused_at = run.step
    chunk.join()
    assert run.step == paused_at, "pause returned before the chunk in flight had finished"
    assert paused_at > mid_chunk and run.status == Status.PAUSED
    assert_weights_of_step(run, corpus)
    run.tick(slots, "me", CHUNK_S)
    assert run.step == paused_at, "a paused run does not train"
    run.start()
    run.tick(slots, "me", CHUNK_S)
    assert run.step > paused_at
    assert_weights_of_step(run, corpus)


def test_a_rerun_from_another_widget_draws_at_once_and_the_chunk_still_counts(corpus):
    run, slots = running_run(corpus)
    chunk = in_flight(run, slots, "me")
    assert run.tick_unless_busy(slots, "me", CHUNK_S) == []  # the new script thread: draws, trains nothing
    assert chunk.is_alive(), "it returned while the chunk was still in flight: it did not wait for it"
    chunk.join()
    after_chunk = run.step
    assert run.status == Status.RUNNING
    run.tick_unless_busy(slots, "me", CHUNK_S)  # the next rerun trains on from there
    assert run.step > after_chunk
    assert_weights_of_step(run, corpus)


def test_navigating_away_mid_chunk_keeps_the_run_and_a_reader_sees_whole_steps(corpus):
    run, slots = running_run(corpus)
    chunk = in_flight(run, slots, "me")
    with run.lock:  # another page (the explorer) copies the weights under the lock: it waits for the chunk
        seen_step = run.step
        copy = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    chunk.join()
    assert run.step == seen_step, "the reader got the lock before the chunk had finished"
    expected = replayed(corpus, seen_step)
    for name, value in copy.items():
        torch.testing.assert_close(value, expected[name], rtol=0, atol=0, msg=name)
    assert run.status == Status.RUNNING, "leaving the page does not stop or reset the run"
    run.tick(slots, "me", CHUNK_S)  # back on the page: its fragment trains the next chunk
    assert run.step > seen_step
    assert_weights_of_step(run, corpus)


def test_a_tab_that_stops_asking_gives_its_slot_to_the_next_in_line(corpus):
    """Navigation leaves a run RUNNING but no longer ticking: its lease runs out and the queue moves on."""
    now = [0.0]
    slots = TrainingSlots(1, lease_seconds=20, clock=lambda: now[0])
    away, waiting = running_run(corpus)[0], running_run(corpus)[0]
    away.tick(slots, "away", 0.05)
    waiting.tick(slots, "waiting", 0.05)
    assert waiting.status == Status.WAITING and waiting.step == 0
    now[0] += 21
    waiting.tick(slots, "waiting", 0.05)
    assert waiting.status == Status.RUNNING and waiting.step > 0


# --- saving is atomic ------------------------------------------------------------------------------------------

CRASH = """
import os, sys
from rnnviz.charlm.checkpoint import save_checkpoint
from rnnviz.charlm.corpus import corpus_from_user_text
from rnnviz.charlm.train import TrainConfig, Trainer

trainer = Trainer(TrainConfig(hidden=16, embed_dim=8, batch=4, seq_len=16, device="cpu"),
                  corpus_from_user_text({text!r}, name="mats.txt"))
trainer.run(7)

def crash(*args, **kwargs):
    os._exit(17)  # the process dies here: power cut, OOM kill

os.{call} = crash
save_checkpoint(sys.argv[1], trainer)
"""


@pytest.mark.parametrize(("call", "had_one"), [("replace", True), ("fsync", False)],
                         ids=["crash-before-the-rename-over-an-old-checkpoint", "crash-while-writing-the-first"])
def test_a_crash_while_saving_leaves_no_half_written_checkpoint(tmp_path, corpus, call, had_one):
    path = tmp_path / "model.pt"
    if had_one:
        old = Trainer(TrainConfig(hidden=16, embed_dim=8, batch=4, seq_len=16, device="cpu"), corpus)
        old.run(3)
        save_checkpoint(path, old)
    script = CRASH.format(text=TEXT, call=call)
    done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 17, done.stderr
    if had_one:
        assert load_checkpoint(path).step == 3, "the previous checkpoint is still there, whole"
    else:
        assert not path.exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p != path]
    assert len(leftovers) == 1 and leftovers[0].startswith(".model.pt.") and leftovers[0].endswith(".tmp")
    assert list(tmp_path.glob("*.pt")) == ([path] if had_one else []), "no loader that looks for *.pt sees it"
