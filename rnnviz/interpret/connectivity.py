"""Connectivity (Madsen, "Visualizing memorization in RNNs", Distill 2019): how strongly the prediction after
position t depends on each character read before it, measured as the size of a gradient:

    connectivity_t(s) = ‖∂ log p(x_{t+1} | x_≤t) / ∂ x_s‖₂,   s = 0 … t,

where x_s is the model's input vector at s: an embedding row E[x_s] (or a one-hot vector) for a recurrent model, the
token embedding for a Transformer (to which its position embedding is added). A vanilla RNN's connectivity fades
within a few characters, as ∏ W_hhᵀ diag(tanh′) shrinks the gradient; an LSTM's cell path keeps it; a Transformer
reads every character in its context directly, and nothing before it (exactly 0 there).

The target is the true next character when the text has one; after its last character, the model's own top guess.
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
