"""The training contract, on the path the app takes: a LiveRun (rnnviz.serving.live) that trains in this process,
and the same LiveRun made to train on a Ray actor by ``train_on_ray(run, connection)``, as the live page does
when a cluster is set. For both: the same config gives bit-identical weights to a plain Trainer after the same
steps; a stop at the budget, a Pause, a downloaded checkpoint and a loaded state all continue exactly; a blow-up
rolls back to the last good weights, a retune continues exactly from them, and Reset keeps the run readable;
the run's vocabulary is the corpus's, and its samples use only that.

Ray actors train on one thread (one CPU each); this process and the reference runs train on one thread too,
so that both sum in the same order. The Ray side runs on the test session's local cluster
(tests/ray_clusters.py). The runs are driven as the page drives them: Start, Pause, and ``tick`` from a loop
(the fragment); between ticks a run on Ray is waited on through its chunks in flight, never by sleeping."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import torch

from rnnviz.charlm.checkpoint import checkpoint_bytes, load_checkpoint, resume_trainer
from rnnviz.charlm.corpus import Corpus, english_docs_text, load_builtin
from rnnviz.charlm.sample import generate
from rnnviz.charlm.sample_request import SampleRequest, run_sample
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.live import LiveRun, LiveSettings, RunRegistry, Status, with_budget
from rnnviz.serving.settings import BackendSetting
from rnnviz.serving.slots import TrainingSlots

TINY = TrainConfig(kind="lstm", hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu", seed=3)
BLOW_UP = replace(TINY, kind="rnn", optimizer="sgd", lr=50.0, clip=None)
SCHEDULE = LiveSettings(step_budget=12, sample_every=5, sample_length=40, snapshot_every=4, eval_chars=500)
CHUNK_S = 0.2  # a fragment's chunk
TIMEOUT_S = 120.0  # for a run to get where a test waits for it (an actor's start included)


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


@pytest.fixture(autouse=True)
def one_thread():
    """This process on one thread while a test runs, as every actor is."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Page:
    """What the live-training page does with a run: give it a token, make it train on Ray when the server has a
    connection (``train_on_ray``), press Start and Pause, and tick it from its fragment."""

    def __init__(self, connection=None):
        self.connection = connection
        self.slots = TrainingSlots(1)  # this server's training slots (a run on Ray polls and never asks them)
        self.registry = RunRegistry()
        self.runs: list[LiveRun] = []

    def make(self, run: LiveRun) -> LiveRun:
        self.registry.register(run, "session")
        if self.connection is not None:
            from rnnviz.serving.ray_backend import train_on_ray

            train_on_ray(run, self.connection)  # its chunks train on an actor named by the token
        self.runs.append(run)
        return run

    def tick_until(self, run: LiveRun, condition, what: str, chunk: float = CHUNK_S) -> list:
        """Tick as the fragment does until ``condition()``; the records the ticks returned."""
        records = []
        deadline = time.monotonic() + TIMEOUT_S
        while not condition():
            assert time.monotonic() < deadline, f"gave up waiting for {what}: {run.message}"
            records += run.tick(self.slots, "page", chunk)
            if run.remote is not None:
                _wait_for_a_reply(run.remote, deadline)
        return records

    def train(self, run: LiveRun) -> list:
        """Start, then tick until the run stops by itself (its budget spent, or a halt)."""
        run.start()
        records = self.tick_until(run, lambda: not run.is_active, "the run to stop by itself")
        if self.connection is not None:  # the steps came back from an actor, which is freed now (and its CPU)
            assert run.remote.first_step_s is not None and run.remote.actor is None
        return records

    def pause(self, run: LiveRun) -> None:
        run.pause()
        self.slots.release("page")

    def release_all(self) -> None:
        for run in self.runs:
            run.release()


def _wait_for_a_reply(remote, deadline: float) -> None:
    """Until the actor answers something the next tick merges (its start, a chunk), or the deadline."""
    import ray

    pending = [ref for ref in (remote.ready_ref, remote.recover_ref, *remote.chunks) if ref is not None]
    if pending:
        ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))


@pytest.fixture(params=["in-process", pytest.param("ray", marks=pytest.mark.ray)])
def page(request, tmp_path):
    """The page of a server that trains in this process, or of one with a Ray connection (the local cluster)."""
    connection = None
    if request.param == "ray":
        from tests.ray_clusters import local_cluster

        local_cluster()
        from rnnviz.serving.ray_backend import connect

        connection = connect(BackendSetting("local", tmp_path, 5, 0, "the contract"))
        assert connection.ok, connection.message
    made = Page(connection)
    yield made
    made.release_all()


def reference(config, corpus, steps: int) -> Trainer:
    trainer = Trainer(config, corpus)
    trainer.run(steps)
    return trainer


def assert_same_weights(weights: dict, expected: dict) -> None:
    """Bit for bit: the same tensors under the same names."""
    assert weights.keys() == expected.keys()
    for name, tensor in expected.items():
        assert torch.equal(weights[name], tensor), f"{name} differs"


def test_the_same_config_gives_bit_identical_weights(page, corpus):
    run = page.make(LiveRun.create(TINY, corpus, with_budget(SCHEDULE, 7)))
    records = page.train(run)
    assert run.status == Status.FINISHED and run.step == 7
    run.update_settings(SCHEDULE)  # a larger budget: the finished run can be started again
    assert run.status == Status.PAUSED
    records += page.train(run)
    expected = reference(TINY, corpus, 12)
    assert [r.step for r in records] == list(range(1, 13)) and run.step == 12
    assert run.status == Status.FINISHED and [r.step for r in run.trainer.history] == list(range(1, 13))
    assert [r.loss for r in records] == [r.loss for r in expected.history]
    assert [r.loss for r in run.trainer.history] == [r.loss for r in expected.history]
    assert_same_weights(run.trainer.model.state_dict(), expected.model.state_dict())
    val_loss = expected.evaluate(max_chars=500).val_loss
    assert [s.step for s in run.samples] == [0, 5, 7, 10, 12] and run.samples[-1].val_loss == val_loss
    assert run.trainer.evaluate(max_chars=500).val_loss == val_loss


def test_a_pause_and_a_resume_from_a_checkpoint_are_exact(page, corpus):
    first = page.make(LiveRun.create(TINY, corpus, SCHEDULE))
    first.start()
    page.tick_until(first, lambda: first.step >= 3, "3 steps", chunk=0.0)  # one step a chunk
    with first.lock:  # the download button, while the run trains
        downloaded = checkpoint_bytes(first.trainer, first.corpus_name)
    page.pause(first)
    paused_at = first.step
    assert first.status == Status.PAUSED and 3 <= paused_at < 12
    page.train(first)  # Start continues from the pause
    expected = reference(TINY, corpus, 12).model.state_dict()
    assert first.status == Status.FINISHED and first.step == 12
    assert_same_weights(first.trainer.model.state_dict(), expected)
    checkpoint = load_checkpoint(downloaded)
    second = page.make(LiveRun(resume_trainer(checkpoint, corpus), corpus.name, SCHEDULE))
    assert second.step == checkpoint.step and 3 <= checkpoint.step < 12
    page.train(second)
    assert_same_weights(second.trainer.model.state_dict(), expected)
    third = LiveRun.create(TINY, corpus, SCHEDULE)
    third.trainer.load_state_dict(reference(TINY, corpus, 6).state_dict())  # the same through a state, without a file
    page.train(page.make(third))
    assert third.step == 12
    assert_same_weights(third.trainer.model.state_dict(), expected)


def test_a_blow_up_rolls_back_to_the_last_good_weights_and_a_retune_continues_exactly(page):
    corpus = load_builtin("hello")
    settings = LiveSettings(step_budget=40, sample_every=10, sample_length=20, eval_chars=500)
    run = page.make(LiveRun.create(BLOW_UP, corpus, settings))
    page.train(run)
    halt = run.trainer.halt
    assert run.status == Status.HALTED and halt is not None
    assert "try clipping or a lower learning rate" in halt.reason
    assert run.step < 40 and halt.restored_step <= run.step
    assert f"The weights from step {halt.restored_step:,}" in run.message
    weights = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    assert all(torch.isfinite(w).all() for w in weights.values())
    good = reference(BLOW_UP, corpus, halt.restored_step)  # a run stopped right at the last good step
    assert_same_weights(weights, good.model.state_dict())

    run.retune(lr=0.05, clip=0.5)  # what the page offers after a halt
    assert run.status == Status.PAUSED and "learning rate 0.05, clipping at θ = 0.5" in run.message
    page.train(run)
    assert run.status == Status.FINISHED and run.step == 40
    expected = reference(BLOW_UP, corpus, 40)  # halts at the same step, the same weights put back
    assert expected.halt == halt
    expected.retune(lr=0.05, clip=0.5)
    expected.run(40 - expected.step)
    assert_same_weights(run.trainer.model.state_dict(), expected.model.state_dict())

    trained = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    run.release()  # Reset: whatever trained it elsewhere is let go; the run stays readable
    assert run.remote is None
    assert_same_weights(run.trainer.model.state_dict(), trained)


def test_the_vocabulary_is_the_corpus_and_samples_use_only_it(page, corpus):
    settings = LiveSettings(step_budget=5, sample_every=5, sample_length=300, temperature=2.0, eval_chars=500)
    run = page.make(LiveRun.create(TINY, corpus, settings))
    page.train(run)
    chars = "".join(sorted(set(corpus.text)))
    assert run.trainer.vocab.chars == corpus.vocab.chars == chars
    assert run.trainer.state_dict()["vocab"] == chars
    assert [s.step for s in run.samples] == [0, 5]
    for scheduled in run.samples:  # drawn where the run trained, from the seed of its config
        assert len(scheduled.text) == 300 and set(scheduled.text) <= set(chars)
        model = reference(TINY, corpus, scheduled.step).model
        assert scheduled.text == generate(model, corpus.vocab, "", 300, 2.0, seed=TINY.seed)
    with run.lock:  # the sampling panel reads the live model under the run's lock
        text = run_sample(run.trainer.model, run.trainer.vocab,
                          SampleRequest("The ", 300, "temperature", 2.0, seed=1)).text
    assert len(text) == 300 and set(text) <= set(corpus.vocab.chars)
    in_process = reference(TINY, corpus, 5)
    assert text == generate(in_process.model, in_process.vocab, "The ", 300, 2.0, seed=1)


def test_the_backend_is_chosen_by_the_environment_then_the_settings_file(tmp_path):
    from rnnviz.serving.settings import backend_setting

    nothing = backend_setting({}, tmp_path / "missing.toml")
    assert not nothing.wants_ray and nothing.address is None and nothing.source == "nothing set"
    file = tmp_path / "rnnviz.toml"
    file.write_text('[rnnviz]\nray_address = "head:6379"\ncheckpoint_dir = "/shared/runs"\ncheckpoint_every = 50\n')
    from_file = backend_setting({}, file)
    assert from_file.address == "head:6379" and from_file.checkpoint_every == 50
    assert str(from_file.checkpoint_dir) == "/shared/runs" and "rnnviz.toml" in from_file.source
    env = backend_setting({"RNNVIZ_RAY_ADDRESS": "local", "RNNVIZ_RAY_MAX_RESTARTS": "3"}, file)
    assert env.address == "local" and env.source == "$RNNVIZ_RAY_ADDRESS" and env.max_restarts == 3
    file.write_text("[rnnviz\nbroken")
    assert not backend_setting({}, file).wants_ray  # a damaged file is as good as none
