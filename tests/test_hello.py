"""The "hello" walkthrough: every number against a hand-written NumPy forward pass of the same weights."""

import math

import numpy as np
import pytest

from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.hello import HelloConfig, hello_config, train_hello
from rnnviz.charlm.train import Trainer


@pytest.fixture(scope="module")
def walk():
    return train_hello(HelloConfig(steps=20))


def test_vocabulary_one_hots_and_shifted_targets(walk):
    assert (walk.vocab, walk.inputs, walk.targets) == ("ehlo", "hell", "ello")
    assert walk.one_hot.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert walk.input_ids == [1, 0, 2, 2] and walk.target_ids == [0, 2, 2, 3]


def test_w_xh_times_a_one_hot_is_a_column(walk):
    for t, column in enumerate(walk.input_ids):
        np.testing.assert_allclose(walk.w_xh_x[t], walk.w_xh[:, column], rtol=0, atol=1e-7)


def test_every_number_matches_a_numpy_forward_pass():
    config = HelloConfig(steps=20)
    walk = train_hello(config)
    trainer = Trainer(hello_config(config), load_builtin("hello"))  # the same seed: the same trajectory
    trainer.run(config.steps)
    p = {k: v.detach().numpy().astype(np.float64) for k, v in trainer.model.state_dict().items()}
    h = np.zeros(config.hidden)
    for t, x in enumerate(walk.one_hot):
        h = np.tanh(p["rnn.weight_ih_l0"] @ x + p["rnn.bias_ih_l0"] + p["rnn.weight_hh_l0"] @ h + p["rnn.bias_hh_l0"])
        z = p["head.weight"] @ h + p["head.bias"]
        probs = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        np.testing.assert_allclose(walk.h[t], h, atol=1e-5)
        np.testing.assert_allclose(walk.logits[t], z, atol=1e-5)
        np.testing.assert_allclose(walk.probs[t], probs, atol=1e-6)
        assert walk.losses[t] == pytest.approx(-math.log(probs[walk.target_ids[t]]), abs=1e-5)
    assert walk.mean_loss == pytest.approx(walk.losses.mean())
    assert len(walk.loss_curve) == config.steps


def test_training_takes_the_loss_from_near_ln4_to_near_zero():
    untrained = train_hello(HelloConfig(steps=0))
    assert untrained.mean_loss == pytest.approx(math.log(4), abs=0.4)
    assert train_hello(HelloConfig(steps=100)).mean_loss < 0.05
