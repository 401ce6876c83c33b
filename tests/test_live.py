"""LiveRun: schedule, samples, snapshots against a plain Trainer, budget, halts, training slots; estimates."""

import math
import threading
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from rnnviz.charlm.corpus import Corpus, english_docs_text, load_builtin
from rnnviz.charlm.sample import generate
from rnnviz.charlm.speed import (
    MATMUL_EFFICIENCY,
    STEP_OVERHEAD_S,
    TIMESTEP_OVERHEAD_S,
    count_parameters,
    estimate_chars_per_second,
)
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import CharModel
from rnnviz.figures.live import downsample
from rnnviz.serving.live import MAX_SNAPSHOTS, LiveRun, LiveSettings, Status
from rnnviz.serving.slots import TrainingSlots

TINY = TrainConfig(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu")


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


def steps(run: LiveRun, n: int) -> None:
    """advance(0) takes exactly one optimizer step (and whatever falls due after it)."""
    for _ in range(n):
        run.advance(0.0)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layers,embedding", [(1, True), (3, False)])
def test_parameter_count_matches_the_built_model(kind, layers, embedding):
    config = TrainConfig(kind=kind, layers=layers, hidden=20, embedding=embedding, embed_dim=7)
    built = CharModel(config.model_config(33)).num_parameters()
    assert count_parameters(config, 33) == built


def test_speed_estimate_follows_its_formula():
    config = TrainConfig(kind="rnn", layers=1, hidden=10, embedding=False, batch=2, seq_len=5)
    dense = 10 * (4 + 10) + 2 * 10 + 10 * 4 + 4  # W_xh, W_hh, two biases, readout (V = 4, one-hot input)
    seconds = STEP_OVERHEAD_S + 5 * TIMESTEP_OVERHEAD_S + 6 * dense * 10 / (MATMUL_EFFICIENCY * 1e9)
    assert estimate_chars_per_second(config, 4, 1e9) == pytest.approx(10 / seconds)
    bigger = replace(config, hidden=200)
    assert estimate_chars_per_second(bigger, 4, 1e9) < estimate_chars_per_second(config, 4, 1e9)


def test_samples_and_evaluations_fall_due_on_schedule(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=12, sample_every=5, sample_length=30))
    steps(run, 7)
    assert [s.step for s in run.samples] == [0, 5]
    assert [e.step for e in run.trainer.evals] == [0, 5]
    assert [s.val_loss for s in run.samples] == [e.val_loss for e in run.trainer.evals]
    assert run.samples[0].val_loss == pytest.approx(math.log(corpus.vocab.size), abs=0.15)  # untrained ≈ ln V
    assert all(len(s.text) == 30 for s in run.samples)


def test_the_sample_is_the_model_s_own_seeded_sample(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=4, sample_every=2, sample_length=25))
    steps(run, 4)
    assert run.status == Status.FINISHED and run.samples[-1].step == 4
    expected = generate(run.trainer.model, corpus.vocab, "", 25, 0.8, seed=TINY.seed)
    assert run.samples[-1].text == expected


def test_snapshots_hold_the_weights_of_their_step(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=30, sample_every=10, snapshot_every=3))
    steps(run, 30)
    assert [s for s, _ in run.snapshots] == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30]
    plain = Trainer(TINY, corpus)  # the same seed and data: the same trajectory, without samples
    weights_at = {0: {k: v.clone() for k, v in plain.model.state_dict().items()}}
    for step in range(1, 31):
        plain.run(1)
        weights_at[step] = {k: v.clone() for k, v in plain.model.state_dict().items()}
    for step, weights in run.snapshots:
        assert_close(weights, weights_at[step], rtol=0, atol=0)
    assert_close(run.snapshots[-1][1], run.trainer.model.state_dict())
    first = run.snapshots[1][1]["rnn.weight_hh_l0"]
    assert first.data_ptr() != run.trainer.model.rnn.weight_hh_l0.data_ptr(), "a copy, not the live tensor"


def test_snapshots_are_thinned_evenly_when_full(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=100, sample_every=100, snapshot_every=2))
    steps(run, 100)
    kept = [s for s, _ in run.snapshots]
    assert len(kept) <= MAX_SNAPSHOTS
    assert kept[0] == 0 and kept[-1] == 96
    assert len(set(np.diff(kept))) == 1, f"evenly spaced: {kept}"
    assert run.snapshot_every == 8


def test_the_budget_finishes_the_run_and_a_larger_one_resumes_it(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=3, sample_every=100, sample_length=10))
    run.start()
    records = run.advance(60.0)
    assert [r.step for r in records] == [1, 2, 3]
    assert run.status == Status.FINISHED and "budget of 3 steps" in run.message
    assert [s.step for s in run.samples] == [0, 3]
    assert run.advance(1.0) == [] and run.step == 3
    run.update_settings(replace(run.settings, step_budget=5))
    assert run.status == Status.PAUSED
    run.start()
    assert run.status == Status.RUNNING


def test_a_blow_up_halts_rolls_back_and_explains():
    config = replace(TINY, optimizer="sgd", lr=50.0, clip=None)
    run = LiveRun.create(config, load_builtin("hello"), LiveSettings(step_budget=50, sample_every=50))
    initial = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    run.start()
    for _ in range(10):
        run.advance(0.0)
        if run.status == Status.HALTED:
            break
    assert run.status == Status.HALTED and not run.is_active
    halt = run.trainer.halt
    assert f"weights from step {halt.restored_step}" in run.message and "put back" in run.message
    if halt.restored_step == 0:
        assert_close(run.trainer.model.state_dict(), initial, rtol=0, atol=0)
    assert all(math.isfinite(p.detach().sum().item()) for p in run.trainer.model.parameters())
    run.retune(lr=0.01, clip=1.0)
    assert run.status == Status.PAUSED and run.trainer.config.lr == 0.01
    run.start()
    records = run.advance(0.0)
    assert records[0].lr == 0.01 and math.isfinite(records[0].loss)


def test_a_full_server_queues_the_second_run_until_the_first_lets_go(corpus):
    slots = TrainingSlots(1)
    first = LiveRun.create(TINY, corpus, LiveSettings(step_budget=50, sample_every=100, sample_length=5))
    second = LiveRun.create(TINY, corpus, LiveSettings(step_budget=50, sample_every=100, sample_length=5))
    first.start()
    second.start()
    assert first.tick(slots, "first", 0.0)
    assert second.tick(slots, "second", 0.0) == []
    assert second.status == Status.WAITING and "number 1 in the queue" in second.message
    assert second.step == 0
    blocked = LiveRun.create(TINY, corpus, LiveSettings(step_budget=5, sample_every=100, sample_length=5))
    assert blocked.step_once(slots, "third", 0.0) == [] and "busy" in blocked.message
    assert slots.queue_position("third") is None, "Step does not keep a place in the queue"
    first.pause()
    slots.release("first")
    assert second.tick(slots, "second", 0.0)
    assert second.status == Status.RUNNING and second.step == 1


def test_a_finished_run_gives_its_slot_back(corpus):
    slots = TrainingSlots(1)
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=2, sample_every=100, sample_length=5))
    run.start()
    run.tick(slots, "me", 60.0)
    assert run.status == Status.FINISHED and slots.busy == 0


def test_downsample_takes_bucket_means_and_maxima():
    x = np.arange(1, 11)
    xs, ys = downsample(x, x.astype(float), 3)
    assert xs.tolist() == [4, 8, 10] and ys.tolist() == [2.5, 6.5, 9.5]
    xs, ys = downsample(x, [0, 9, 0, 0, 0, 0, 7, 0, 0, 1], 3, how="max")
    assert ys.tolist() == [9, 7, 1]
    assert downsample([1, 2], [3, 4], 10)[1].tolist() == [3, 4]


def test_a_short_chunk_still_trains_one_step(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=10, sample_every=100, sample_length=5))
    before = run.trainer.model.head.weight.detach().clone()
    assert [r.step for r in run.advance(0.0)] == [1]
    assert not torch.equal(before, run.trainer.model.head.weight)


def chunk_in_flight(run: LiveRun) -> tuple[threading.Thread, threading.Event]:
    """A script thread training a chunk under the run's lock (one that a click has told to stop, still finishing
    it); returns once it holds the lock, with its thread and an event it sets inside the lock when done (the
    thread itself may still be alive for a moment after it)."""
    started, done = threading.Event(), threading.Event()

    def chunk_in_another_thread():
        with run.lock:
            started.set()
            run.advance(0.2)
            done.set()

    worker = threading.Thread(target=chunk_in_another_thread)
    worker.start()
    started.wait()
    return worker, done


def test_a_pause_from_another_thread_waits_for_the_chunk_in_flight(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=10_000, sample_every=1000, sample_length=5))
    run.start()
    worker, done = chunk_in_flight(run)
    run.pause()
    assert done.is_set(), "pause waited for the chunk"
    worker.join()
    assert run.step > 0 and run.message.startswith(f"Paused at step {run.step}.")


def test_a_tick_skips_while_another_thread_trains(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=100, sample_every=1000, sample_length=5))
    run.start()
    slots = TrainingSlots(1)
    busy, release = threading.Event(), threading.Event()

    def hold():
        with run.lock:
            busy.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    busy.wait()
    assert run.tick_unless_busy(slots, "me", 0.0) == [] and run.step == 0
    release.set()
    holder.join()
    assert len(run.tick_unless_busy(slots, "me", 0.0)) == 1


TINY_GPT = TrainConfig(kind="transformer", layers=1, hidden=16, n_head=4, block_size=16, seq_len=8, batch=4,
                       optimizer="adamw", forget_bias=None, device="cpu")


@pytest.mark.parametrize("config", [TINY, TINY_GPT], ids=["lstm", "transformer"])
def test_a_frozen_model_is_a_still_copy_shared_until_the_weights_change(corpus, config):
    run = LiveRun.create(config, corpus, LiveSettings(step_budget=20, sample_every=100, sample_length=5))
    steps(run, 2)
    rng = torch.get_rng_state()
    frozen = run.frozen_model()
    assert torch.equal(torch.get_rng_state(), rng), "building the copy leaves the global random state alone"
    model, step = frozen
    assert step == run.step == 2 and type(model) is type(run.trainer.model)
    assert_close(model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)
    assert not model.training and all(p.device.type == "cpu" and not p.requires_grad for p in model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert run.frozen_model() is frozen, "readers at the same weights share one copy"

    kept = {k: v.clone() for k, v in model.state_dict().items()}
    steps(run, 3)  # training goes on in the run's own model
    assert_close(model.state_dict(), kept, rtol=0, atol=0)
    later = run.frozen_model()
    assert later is not frozen and later.step == 5 and later is run.frozen_model()
    assert_close(later.model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)

    with torch.no_grad():  # a rollback (a halt, a restored state) changes the weights without a step
        run.trainer.model.head.bias.add_(1.0)
    rolled_back = run.frozen_model()
    assert rolled_back is not later and rolled_back.step == 5
    assert_close(rolled_back.model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)


def test_a_frozen_model_waits_for_the_chunk_in_flight(corpus):
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=10_000, sample_every=1000, sample_length=5))
    run.start()
    worker, done = chunk_in_flight(run)
    model, step = run.frozen_model()
    assert done.is_set(), "the copy waited for the chunk"
    worker.join()
    assert step == run.step > 0
    assert_close(model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)
