"""Connectivity (Madsen, "Visualizing memorization in RNNs", Distill 2019): how strongly the prediction after
position t depends on each character read before it, measured as the size of a gradient:

    connectivity_t(s) = ‖∂ log p(x_{t+1} | x_≤t) / ∂ x_s‖₂,   s = 0 … t,

where x_s is the model's input vector at s: an embedding row E[x_s] (or a one-hot vector) for a recurrent model, the
token embedding for a Transformer (to which its position embedding is added). A vanilla RNN's connectivity fades
within a few characters, as ∏ W_hhᵀ diag(tanh′) shrinks the gradient; an LSTM's cell path keeps it; a Transformer
reads every character in its context directly, and nothing before it (exactly 0 there).

The target is the true next character when the text has one; after its last character, the model's own top guess.

``mean_connectivity`` measures many predictions t of a passage at once and summarises them by distance d = t − s:
row i of a batch is the prefix x_0 … x_{t_i} (from position 0, so a recurrent state is exactly the one that read
the whole text; a Transformer's row is its own context window), right-padded to the longest row. The rows' own
log-probabilities are summed and differentiated in one backward pass: row i's input vectors reach only row i's
log-probability, so their gradient is that prediction's alone, and right padding is never read by a causal model
at t. Each prediction's norms are divided by its largest (over every s ≤ t), then averaged over the predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.core.charmodel import CharModel
from rnnviz.core.transformer import CharTransformer

Model = CharModel | CharTransformer


@dataclass(frozen=True)
class Connectivity:
    """The gradient norms of one prediction with respect to every earlier input."""

    t: int  # the position whose prediction is measured (the model has read x_0 … x_t)
    target: int  # the id of the character whose log-probability is differentiated
    target_is_true: bool  # the text's x_{t+1}; False: the model's top guess (t is the text's last character)
    log_prob: float  # log p(target | x_≤t), nats
    norms: np.ndarray  # (t + 1,) ‖∂ log p / ∂ x_s‖₂ for s = 0 … t; 0 where s is outside a Transformer's context
    first_read: int  # the first s the prediction can depend on: 0, or where a Transformer's context starts

    def relative(self) -> np.ndarray:
        """The norms divided by their largest (all zeros stay zeros)."""
        top = float(self.norms.max()) if self.norms.size else 0.0
        return self.norms / top if top > 0 else self.norms.copy()

    def reach(self, share: float = 0.01) -> int:
        """How far back the prediction still depends on its input: the largest distance t − s whose norm is at least
        ``share`` of the largest norm."""
        relative = self.relative()
        far = [self.t - s for s in range(self.t + 1) if relative[s] >= share]
        return max(far) if far else 0


def connectivity(model: Model, ids: Tensor, t: int) -> Connectivity:
    """Connectivity of the prediction after position ``t`` of ``ids`` (1-D ids of the text), in eval mode (no
    dropout; the model's mode is restored)."""
    ids = ids.reshape(-1)
    if not 0 <= t < len(ids):
        raise ValueError(f"t must be a position of the text, 0 … {len(ids) - 1}; got {t}")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            if isinstance(model, CharTransformer):
                first = max(0, t + 1 - model.block_size)
                window = ids[first : t + 1][None]  # (1, T')
                x = model.embed(window).detach().requires_grad_(True)  # the token embeddings (1, T', C)
                hidden = x + model.pos_embed(torch.arange(window.size(1), device=window.device))
                for block in model.blocks:
                    hidden = block(hidden)
                logits = model.readout(hidden)[0, -1]
            else:
                first = 0
                x = model.inputs(ids[None, : t + 1]).detach().requires_grad_(True)  # (1, t + 1, D)
                out, _ = model.rnn(x)
                logits = model.head(out[0, -1])
            log_probs = F.log_softmax(logits.double(), dim=-1)
            true = t + 1 < len(ids)
            target = int(ids[t + 1]) if true else int(log_probs.argmax())
            (grad,) = torch.autograd.grad(log_probs[target], x)
    finally:
        model.train(was_training)
    norms = np.zeros(t + 1)
    norms[first:] = grad[0].norm(dim=-1).double().cpu().numpy()
    return Connectivity(t=t, target=target, target_is_true=true, log_prob=float(log_probs[target].detach()),
                        norms=norms, first_read=first)


@dataclass(frozen=True)
class MeanConnectivity:
    """The connectivity of many predictions of one passage, by distance d = t − s, and its summary over them."""

    targets: np.ndarray  # (N,) the positions t whose predictions are measured
    norms: np.ndarray  # (N, max_distance + 1) ‖∂ log p / ∂ x_{t−d}‖₂ for d = 0 … max_distance; NaN where t − d < 0
    peaks: np.ndarray  # (N,) each prediction's largest norm over every s = 0 … t (not only d ≤ max_distance)
    log_probs: np.ndarray  # (N,) log p(target | x_≤t), nats
    first_read: np.ndarray  # (N,) the first s each prediction can depend on (0, or a Transformer's context start)

    @property
    def distances(self) -> np.ndarray:
        """d = 0 … max_distance."""
        return np.arange(self.norms.shape[1])

    def relative(self) -> np.ndarray:
        """(N, max_distance + 1): each prediction's norms divided by its own largest (a row of zeros stays zeros)."""
        peaks = np.where(self.peaks > 0, self.peaks, 1.0)
        return self.norms / peaks[:, None]

    def mean(self) -> np.ndarray:
        """(max_distance + 1,) the mean over predictions of the relative norm at each d (NaN entries left out)."""
        return _over_targets(np.nanmean, self.relative())

    def median(self) -> np.ndarray:
        """(max_distance + 1,) the median over predictions of the relative norm at each d."""
        return _over_targets(np.nanmedian, self.relative())

    def standard_error(self) -> np.ndarray:
        """(max_distance + 1,) the standard error of ``mean`` at each d: the spread over predictions / √count
        (NaN with fewer than two); neighbouring predictions share most of their text, so it is a lower bound."""
        relative = self.relative()
        count = np.sum(~np.isnan(relative), axis=0)
        out = np.full(relative.shape[1], np.nan)
        many = count > 1
        if many.any():
            out[many] = np.nanstd(relative[:, many], axis=0, ddof=1) / np.sqrt(count[many])
        return out

    def at(self, distance: int) -> float:
        """The mean relative connectivity ``distance`` characters back."""
        if not 0 <= distance < self.norms.shape[1]:
            raise ValueError(f"distance must be 0 … {self.norms.shape[1] - 1} (the max_distance measured); "
                             f"got {distance}")
        return float(self.mean()[distance])

    def reach(self, share: float = 0.01) -> int:
        """The largest d at which the mean relative connectivity is still at least ``share``; 0 if none is."""
        above = np.flatnonzero(self.mean() >= share)
        return int(above.max()) if above.size else 0


def _over_targets(reduce, values: np.ndarray) -> np.ndarray:
    """``reduce`` over axis 0 with NaN for a column that is all NaN (no warning)."""
    out = np.full(values.shape[1], np.nan)
    seen = ~np.all(np.isnan(values), axis=0)
    if seen.any():
        out[seen] = reduce(values[:, seen], axis=0)
    return out


def _rows(ids: Tensor, targets: list[int], window: int | None) -> tuple[Tensor, list[int], list[int]]:
    """The batch of one group of targets: row i is ids[first_i : t_i + 1], right-padded with id 0 to the longest
    row; (rows (B, T), each row's first, each row's last real column). ``window``: a Transformer's context."""
    firsts = [0 if window is None else max(0, t + 1 - window) for t in targets]
    lengths = [t + 1 - first for t, first in zip(targets, firsts)]
    rows = torch.zeros(len(targets), max(lengths), dtype=ids.dtype, device=ids.device)  # (B, T)
    for i, (t, first) in enumerate(zip(targets, firsts)):
        rows[i, : lengths[i]] = ids[first : t + 1]
    return rows, firsts, [n - 1 for n in lengths]


def _batch_gradients(model: Model, ids: Tensor, targets: list[int]) -> tuple[Tensor, list[int], Tensor]:
    """One forward and ONE backward for a group of predictions: (grad norms (B, T) per row's own columns, each row's
    first s, log-probs (B,)). A causal model's prediction at t never reads a later column, so the
    right padding changes neither the log-prob nor the gradient of any row."""
    transformer = isinstance(model, CharTransformer)
    rows, firsts, last = _rows(ids, targets, model.block_size if transformer else None)
    picks = torch.tensor(last, device=ids.device)
    with torch.enable_grad():
        if transformer:
            x = model.embed(rows).detach().requires_grad_(True)  # (B, T, C)
            hidden = x + model.pos_embed(torch.arange(rows.size(1), device=rows.device))
            for block in model.blocks:
                hidden = block(hidden)
            out = hidden
        else:
            x = model.inputs(rows).detach().requires_grad_(True)  # (B, T, D)
            out, _ = model.rnn(x)  # (B, T, H)
        final = out[torch.arange(len(targets)), picks]  # (B, H or C): each row at its own t
        logits = model.readout(final[:, None])[:, 0] if transformer else model.head(final)  # (B, V)
        log_probs = F.log_softmax(logits.double(), dim=-1)  # (B, V)
        true = torch.tensor([t + 1 < len(ids) for t in targets], device=ids.device)
        nexts = ids[[min(t + 1, len(ids) - 1) for t in targets]]
        chosen = torch.where(true, nexts, log_probs.argmax(dim=-1))  # (B,)
        picked = log_probs[torch.arange(len(targets)), chosen]  # (B,)
        (grad,) = torch.autograd.grad(picked.sum(), x)  # rows are independent: row i's gradient is its own
    return grad.norm(dim=-1).double(), firsts, picked.detach()


def mean_connectivity(model: Model, ids: Tensor, max_distance: int = 40, targets: list[int] | None = None,
                      every: int = 1, batch: int = 64) -> MeanConnectivity:
    """The connectivity of many predictions of the text ``ids``, batched: ``batch`` predictions per forward pass
    and one backward, each row reading its own prefix from position 0 (exact: a recurrent state depends on every
    earlier character; a Transformer row is its own context window), the same numbers as ``connectivity`` per t.

    ``targets``: the positions t to measure; by default every ``every``-th t from ``max_distance`` on whose next
    character the text has, so each prediction has max_distance characters before it. Eval mode (the model's mode
    is restored)."""
    ids = ids.reshape(-1)
    if max_distance < 0:
        raise ValueError(f"max_distance must be 0 or more characters back; got {max_distance}")
    if every < 1 or batch < 1:
        raise ValueError(f"every and batch must be at least 1; got every={every}, batch={batch}")
    if targets is None:
        targets = list(range(max_distance, len(ids) - 1, every))
        if not targets:
            raise ValueError(f"the text has {len(ids)} characters: too short for a prediction with {max_distance} "
                             "characters before it and a next character after it; pass a shorter max_distance")
    targets = sorted(int(t) for t in targets)
    if not targets:
        raise ValueError("targets is empty: give at least one position t")
    if targets[0] < 0 or targets[-1] >= len(ids):
        raise ValueError(f"every target must be a position of the text, 0 … {len(ids) - 1}; got "
                         f"{targets[0] if targets[0] < 0 else targets[-1]}")
    width = max_distance + 1
    norms = np.full((len(targets), width), np.nan)
    peaks, log_probs, first_read = (np.zeros(len(targets)) for _ in range(3))
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(targets), batch):  # sorted, so a group's rows are of about the same length
            group = targets[start : start + batch]
            grads, firsts, picked = _batch_gradients(model, ids, group)
            grads = grads.cpu().numpy()  # (B, T)
            for i, (t, first) in enumerate(zip(group, firsts)):
                row = np.zeros(t + 1)  # norms for s = 0 … t, 0 before a Transformer's context
                row[first:] = grads[i, : t + 1 - first]
                d = np.arange(min(width, t + 1))
                norms[start + i, d] = row[t - d]
                peaks[start + i], first_read[start + i] = row.max(), first
            log_probs[start : start + len(group)] = picked.cpu().numpy()
    finally:
        model.train(was_training)
    return MeanConnectivity(targets=np.array(targets), norms=norms, peaks=peaks, log_probs=log_probs,
                            first_read=first_read.astype(int))
