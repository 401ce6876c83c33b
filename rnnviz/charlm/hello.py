"""The lecture's "hello" example: a tiny RNN on one-hot characters learns to continue h → e → l → l → o.

The vocabulary is {e, h, l, o} (sorted, so e is id 0). The inputs are "hell" and the targets the same text
shifted by one, "ello". With one-hot x_t, the product W_xh x_t picks one column of W_xh, which is why an
embedding is only a lookup of that column. At each step

    h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h),   z_t = W_hy h_t + b_y,   p_t = softmax(z_t),
    loss_t = −ln p_t[target_t],   loss = (1/T) Σ_t loss_t (nats/char).

The model is the app's own CharModel, trained by the app's own Trainer (full BPTT over the 4 steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer

HELLO = "hello"


@dataclass(frozen=True)
class HelloConfig:
    """The tiny RNN of the walkthrough and how long it trains."""

    hidden: int = 3  # H, units of h_t
    steps: int = 300  # optimizer steps, each over the whole string
    lr: float = 0.05  # Adam
    seed: int = 0  # initial weights


@dataclass(frozen=True)
class HelloWalkthrough:
    """Every number the walkthrough shows, after training."""

    vocab: str  # "ehlo": character i has one-hot e_i
    inputs: str  # "hell"
    targets: str  # "ello": the inputs shifted by one
    one_hot: np.ndarray  # (T, V) x_t
    w_xh: np.ndarray  # (H, V) torch's weight_ih_l0
    w_xh_x: np.ndarray  # (T, H) W_xh x_t: column ids[t] of W_xh
    h: np.ndarray  # (T, H) h_t
    logits: np.ndarray  # (T, V) z_t
    probs: np.ndarray  # (T, V) p_t = softmax(z_t)
    losses: np.ndarray  # (T,) −ln p_t[target_t]
    loss_curve: np.ndarray  # (steps,) training loss after each step, nats/char

    @property
    def mean_loss(self) -> float:
        return float(self.losses.mean())

    @property
    def input_ids(self) -> list[int]:
        return [self.vocab.index(c) for c in self.inputs]

    @property
    def target_ids(self) -> list[int]:
        return [self.vocab.index(c) for c in self.targets]


def hello_config(config: HelloConfig) -> TrainConfig:
    """A one-layer tanh RNN fed one-hot characters, trained on the whole string at every step."""
    return TrainConfig(kind="rnn", layers=1, hidden=config.hidden, embedding=False, lr=config.lr, batch=1,
                       seq_len=len(HELLO) - 1, clip=None, forget_bias=None, seed=config.seed, device="cpu")


def train_hello(config: HelloConfig = HelloConfig()) -> HelloWalkthrough:
    """Train the tiny RNN on "hello", then read every intermediate of one pass over "hell"."""
    trainer = Trainer(hello_config(config), load_builtin("hello"))
    records = trainer.run(config.steps)
    model, vocab = trainer.model, trainer.vocab
    inputs, targets = HELLO[:-1], HELLO[1:]
    idx = vocab.encode(inputs).view(1, -1)  # (1, T)
    with torch.no_grad():
        logits, trace = model.trace(idx)  # (1, T, V)
        x = model.inputs(idx)[0]  # (T, V) one-hot
        w_xh = model.rnn.weight_ih_l0  # (H, V)
        probs = torch.softmax(logits[0], dim=-1)  # (T, V)
        losses = F.cross_entropy(logits[0], vocab.encode(targets), reduction="none")  # (T,)
        w_xh_x = x @ w_xh.T  # (T, H): column ids[t] of W_xh
    return HelloWalkthrough(
        vocab=vocab.chars,
        inputs=inputs,
        targets=targets,
        one_hot=x.numpy(),
        w_xh=w_xh.detach().numpy().copy(),
        w_xh_x=w_xh_x.numpy(),
        h=trace["h"][0, :, 0].numpy(),
        logits=logits[0].numpy(),
        probs=probs.numpy(),
        losses=losses.numpy(),
        loss_curve=np.array([r.loss for r in records]),
    )
