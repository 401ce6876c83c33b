"""The backend contract, the same for a Trainer in this process and one in a Ray actor: the same config gives
bit-identical weights after the same steps, a resume from a checkpoint is exact, a blow-up rolls back to the
last good weights, and samples use only the model's vocabulary.

Ray actors train on one thread (one CPU each); the in-process side and the reference run on one thread too,
so that both sum in the same order. The Ray side runs on the test session's local cluster."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.testing import assert_close

from rnnviz.charlm.backend import InProcessBackend, TrainerBackend
from rnnviz.charlm.corpus import Corpus, english_docs_text, load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer

TINY = TrainConfig(kind="lstm", hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu", seed=3)
BLOW_UP = replace(TINY, kind="rnn", optimizer="sgd", lr=50.0, clip=None)


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


@pytest.fixture(params=["in-process", "ray"])
def make_backend(request):
    """A factory of backends of one kind; every backend it made is released after the test."""
    made: list[TrainerBackend] = []
    if request.param == "ray":
        from tests.ray_clusters import local_cluster

        local_cluster()
        from rnnviz.charlm.ray_backend import RayBackend

        def make(config, corpus):
            made.append(RayBackend.create(config, corpus))
            return made[-1]
    else:
        def make(config, corpus):
            made.append(InProcessBackend.create(config, corpus))
            return made[-1]
    yield make
    for backend in made:
        backend.release()


def reference(config, corpus, steps: int) -> Trainer:
    trainer = Trainer(config, corpus)
    trainer.run(steps)
    return trainer


def test_the_same_config_gives_bit_identical_weights(make_backend, corpus):
    backend = make_backend(TINY, corpus)
    records = backend.run(7) + backend.run(5)
    expected = reference(TINY, corpus, 12)
    assert [r.step for r in records] == list(range(1, 13)) and backend.step == 12
    assert [r.loss for r in records] == [r.loss for r in expected.history]
    assert_close(backend.weights(), expected.model.state_dict(), rtol=0, atol=0)
    assert backend.evaluate(max_chars=500).val_loss == expected.evaluate(max_chars=500).val_loss


def test_a_resume_from_a_checkpoint_is_exact(make_backend, corpus, tmp_path):
    first = make_backend(TINY, corpus)
    first.run(6)
    path = first.save_checkpoint(tmp_path / "run.pt")
    second = make_backend(TINY, corpus)
    assert second.load_checkpoint(path) == 6
    second.run(6)
    expected = reference(TINY, corpus, 12).model.state_dict()
    assert_close(second.weights(), expected, rtol=0, atol=0)
    first.load_state_dict(reference(TINY, corpus, 6).state_dict())  # the same through state_dict, without a file
    first.run(6)
    assert_close(first.weights(), expected, rtol=0, atol=0)


def test_a_blow_up_rolls_back_to_the_last_good_weights(make_backend):
    corpus = load_builtin("hello")
    backend = make_backend(BLOW_UP, corpus)
    backend.run(40)
    halt = backend.halt
    assert halt is not None and "try clipping or a lower learning rate" in halt.reason
    assert backend.step < 40 and halt.restored_step <= backend.step
    weights = backend.weights()
    assert all(torch.isfinite(w).all() for w in weights.values())
    good = reference(BLOW_UP, corpus, halt.restored_step)  # a run stopped right at the last good step
    assert_close(weights, good.model.state_dict(), rtol=0, atol=0)


def test_samples_use_only_the_models_vocabulary(make_backend, corpus):
    backend = make_backend(TINY, corpus)
    backend.run(5)
    text = backend.sample("The ", 300, temperature=2.0, seed=1)
    assert len(text) == 300 and set(text) <= set(corpus.vocab.chars)
    in_process = InProcessBackend(reference(TINY, corpus, 5))
    assert text == in_process.sample("The ", 300, temperature=2.0, seed=1)


def test_the_backend_is_chosen_by_the_environment_then_the_settings_file(tmp_path):
    from rnnviz.charlm.backend import backend_setting

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
