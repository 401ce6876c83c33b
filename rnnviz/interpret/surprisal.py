"""Where a character model is sure and where it is surprised: the surprisal of every character of a passage and
the model's top guesses for it, for every kind of model (RNN, LSTM, GRU, minGRU, Transformer).

For a passage x_0 … x_{T−1}, the model reads x_0 … x_{t−1} and gives p(· | x_<t); then

    surprisal_t = −log p(x_t | x_<t)   (nats; / ln 2 for bits),   t = 1 … T−1,

whose mean over the passage is the model's loss on it (the val loss the training page plots, in nats/char).
x_0 has no prediction: the model has read nothing yet. The top-k guesses for x_t are the k most probable
characters under the same p(· | x_<t), best first, so a column of the page reads "what the model expected here,
and what came".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.charlm.sample import Model, logits_everywhere

TOP_GUESSES = 5


@dataclass(frozen=True, eq=False)
class Predictions:
    """Per character of a passage, the model's prediction of it from the characters before it.

    Index t of every array is the passage's character t; t = 0 has no prediction (NaN surprisal, no guesses: -1
    ids and 0 probabilities).
    """

    ids: np.ndarray  # (T,) the passage's character ids
    surprisal: np.ndarray  # (T,) −log p(x_t | x_<t) in nats; NaN at t = 0
    guess_ids: np.ndarray  # (T, k) the k most likely characters at t, best first
    guess_probs: np.ndarray  # (T, k) their probabilities
    rank: np.ndarray  # (T,) 1 when x_t was the top guess, 2 the second, …; 0 at t = 0

    @property
    def length(self) -> int:
        return len(self.ids)

    @property
    def true_prob(self) -> np.ndarray:
        """(T,) p(x_t | x_<t); NaN at t = 0."""
        return np.exp(-self.surprisal)

    def loss(self) -> float:
        """Mean surprisal over the predicted characters, nats/char (the cross-entropy a training run reports)."""
        return float(np.nanmean(self.surprisal)) if self.length > 1 else math.nan

    def top1_accuracy(self) -> float:
        """The share of predicted characters that were the model's top guess."""
        return float(np.mean(self.rank[1:] == 1)) if self.length > 1 else math.nan

    def most_surprising(self, count: int) -> list[int]:
        """The positions of the ``count`` most surprising characters, most surprising first (earlier first on ties)."""
        order = np.argsort(-np.nan_to_num(self.surprisal, nan=-np.inf), kind="stable")
        return [int(t) for t in order[: min(count, self.length - 1)]]


@torch.no_grad()
def predictions(model: Model, ids: Tensor, k: int = TOP_GUESSES) -> Predictions:
    """Surprisal, top-k guesses and the true character's rank for every character of ``ids`` (1-D), read in one
    pass from h_0 = 0 in eval mode (a Transformer slides its window over a passage longer than its context)."""
    ids = ids.reshape(-1)
    if len(ids) < 1:
        raise ValueError("the passage is empty: give at least one character")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        logits = logits_everywhere(model, ids.to(device).view(1, -1))[0]  # (T, V): the prediction after each x_t
    finally:
        model.train(was_training)
    log_p = F.log_softmax(logits.double(), dim=-1)  # (T, V)
    length, vocab = log_p.shape
    k = min(k, vocab)
    targets = ids[1:].to(log_p.device)  # x_1 … x_{T−1}, each predicted from the row before it
    surprisal = np.full(length, np.nan)
    rank = np.zeros(length, dtype=np.int64)
    guess_ids = np.full((length, k), -1, dtype=np.int64)
    guess_probs = np.zeros((length, k))
    if length > 1:
        before = log_p[:-1]  # (T−1, V)
        true_log_p = before.gather(1, targets[:, None])[:, 0]  # (T−1,)
        surprisal[1:] = (-true_log_p).cpu().numpy()
        # Rank 1 + the number of characters strictly more probable than the true one (ties go the true one's way).
        rank[1:] = (1 + (before > true_log_p[:, None]).sum(dim=1)).cpu().numpy()
        top = torch.topk(before.exp(), k, dim=-1)
        guess_ids[1:], guess_probs[1:] = top.indices.cpu().numpy(), top.values.cpu().numpy()
    return Predictions(ids.cpu().numpy().astype(np.int64), surprisal, guess_ids, guess_probs, rank)
