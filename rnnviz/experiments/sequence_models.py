"""Every kind as a token model for the state experiments (recall, parity): embedding → layers → readout, with
the engine's interface ``forward(idx, targets=None, state=None) -> (logits, loss, state)``, sized three ways.

- RNN, LSTM, GRU, minGRU: rnnviz.core.charmodel.CharModel.
- sLSTM, mLSTM, selective SSM, linear attention: ``StateModel``, the same shape around rnnviz.core.state_stack.
- Transformer: rnnviz.core.transformer.CharTransformer, its context the longest sequence it will read.

What a kind carries from one token to the next is counted from real tensors: a recurrent kind's zero state (fixed,
whatever the length), a Transformer's K and V for ``length`` positions (2 · L · length · C numbers, growing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import RECURRENT_MODEL_KINDS, ModelConfig, kind_label
from rnnviz.core.layer_kit import state_nbytes
from rnnviz.core.state_stack import HEADED_KINDS, STATE_KIND_LABELS, STATE_KINDS, StateStack
from rnnviz.experiments.tasks import IGNORE

SWEEP_KINDS = ("lstm", "gru", "mingru", "slstm", "mlstm", "selective", "linear_attention", "transformer")
ALL_KINDS = (*RECURRENT_MODEL_KINDS, *STATE_KINDS, "transformer")
SIZINGS = {
    "width": "equal width H",
    "params": "equal parameter count",
    "state": "equal state bytes",
}
MAX_WIDTH = 2048  # the widest a sizing search may go


def label(kind: str) -> str:
    """How pages and the CLI name a kind: "LSTM", "mLSTM", "selective SSM", …"""
    return STATE_KIND_LABELS.get(kind) or kind_label(kind)


@dataclass(frozen=True)
class ModelSpec:
    """The shape of one token model; frozen so that it keys a cache."""

    kind: str  # one of ALL_KINDS
    vocab: int  # V, token ids 0…V−1
    width: int = 64  # H (the Transformer's C)
    layers: int = 2  # L
    embed_dim: int = 32  # E, the recurrent kinds' embedding (the Transformer's is C wide)
    heads: int = 4  # sLSTM, mLSTM, linear attention and the Transformer
    state_size: int = 16  # S, the selective SSM's numbers per channel
    conv: int = 4  # K, the short convolution of mLSTM, selective SSM and linear attention (0: none)
    context: int = 64  # the Transformer's block size: the longest sequence it reads

    def __post_init__(self):
        if self.kind not in ALL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(ALL_KINDS)}, not {self.kind!r}")
        if min(self.vocab, self.width, self.layers, self.embed_dim, self.heads, self.state_size,
               self.context) < 1 or self.vocab < 2:
            raise ValueError("vocabulary (≥ 2), width, layers, embedding, heads, state size and context must be ≥ 1")
        if self.kind in (*HEADED_KINDS, "transformer") and self.width % self.heads:
            raise ValueError(f"the {label(self.kind)}'s width {self.width} must divide evenly into {self.heads} heads")

    @property
    def width_step(self) -> int:
        """Widths this kind can take are multiples of this (its heads), for the sizing searches."""
        return self.heads if self.kind in (*HEADED_KINDS, "transformer") else 1

    def shape_label(self) -> str:
        """"2 × 64 mLSTM"."""
        return f"{self.layers} × {self.width} {label(self.kind)}"


class StateModel(nn.Module):
    """Embedding → StateStack → readout, with CharModel's ``forward(idx, targets, state)``."""

    carries_state = True

    def __init__(self, spec: ModelSpec):
        super().__init__()
        if spec.kind not in STATE_KINDS:
            raise ValueError(f"StateModel builds {', '.join(STATE_KINDS)}, not {spec.kind!r}")
        self.spec = spec
        self.embed = nn.Embedding(spec.vocab, spec.embed_dim)
        self.rnn = StateStack(spec.kind, spec.embed_dim, spec.width, spec.layers, spec.heads, spec.state_size,
                              spec.conv)
        self.head = nn.Linear(spec.width, spec.vocab)

    def forward(self, idx: Tensor, targets: Tensor | None = None, state: tuple | None = None
                ) -> tuple[Tensor, Tensor | None, tuple]:
        """Logits (N, T, V), the mean cross-entropy over scored positions when targets are given, the final state."""
        out, state = self.rnn(self.embed(idx), state)  # (N, T, H)
        logits = self.head(out)  # (N, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=IGNORE)
        return logits, loss, state

    def trace(self, idx: Tensor, state: tuple | None = None):
        """Logits (N, T, V) and every layer's LayerTrace, on the trace path."""
        traces = self.rnn.trace(self.embed(idx), state)
        return self.head(traces[-1].output), traces


def build_model(spec: ModelSpec) -> nn.Module:
    """The token model of ``spec``, freshly initialised from torch's current seed."""
    if spec.kind in STATE_KINDS:
        return StateModel(spec)
    config = ModelConfig(vocab_size=spec.vocab, kind=spec.kind, layers=spec.layers, hidden=spec.width,
                         embed_dim=spec.embed_dim, n_head=spec.heads, block_size=spec.context)
    if spec.kind == "transformer":
        from rnnviz.core.transformer import CharTransformer

        return CharTransformer(config)
    return CharModel(config)


def parameter_count(spec: ModelSpec) -> int:
    """Parameters of the model of ``spec``, counted on a model built without memory (torch's meta device)."""
    with torch.device("meta"):
        return sum(p.numel() for p in build_model(spec).parameters())


def state_bytes(spec: ModelSpec, length: int) -> int:
    """Bytes one sequence's model carries from token ``length`` to the next, in float32: a recurrent kind's whole
    state (the same at every length), or a Transformer's K and V for ``length`` positions (at most its context)."""
    with torch.device("meta"):
        model = build_model(spec)
        if spec.kind == "transformer":
            positions = min(length, spec.context)
            return 2 * spec.layers * positions * spec.width * torch.finfo(torch.float32).bits // 8
        return state_nbytes(model.rnn.zero_state(1))


def _closest_width(spec: ModelSpec, measure: Callable[[ModelSpec], int], target: int) -> ModelSpec:
    """The spec whose width (a multiple of its heads, at most MAX_WIDTH) brings ``measure`` closest to ``target``
    (ties go to the narrower); ``measure`` must grow with the width."""
    step = spec.width_step
    low, high = 1, MAX_WIDTH // step  # widths step·low … step·high

    def at(multiple: int) -> ModelSpec:
        return dataclasses.replace(spec, width=step * multiple)

    while low < high:  # the smallest multiple whose measure reaches the target
        middle = (low + high) // 2
        if measure(at(middle)) >= target:
            high = middle
        else:
            low = middle + 1
    candidates = [at(m) for m in (low - 1, low) if m >= 1]
    return min(candidates, key=lambda s: (abs(measure(s) - target), s.width))


def sized(spec: ModelSpec, sizing: str, reference: ModelSpec, length: int) -> ModelSpec:
    """``spec`` resized as ``sizing`` says against ``reference`` (the LSTM at the sweep's width): "width" keeps its
    width, "params" matches the reference's parameter count, "state" its state bytes at ``length`` tokens."""
    if sizing not in SIZINGS:
        raise ValueError(f"sizing must be one of {', '.join(SIZINGS)}, not {sizing!r}")
    if sizing == "width":
        return spec
    if sizing == "params":
        return _closest_width(spec, parameter_count, parameter_count(reference))
    return _closest_width(spec, lambda s: state_bytes(s, length), state_bytes(reference, length))


def train(model: nn.Module, next_batch: Callable[[], tuple[Tensor, Tensor]], steps: int, lr: float,
          clip: float | None = 1.0, on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Adam on ``steps`` batches from ``next_batch()`` (inputs, targets with IGNORE where unscored), each sequence
    from a fresh state; gradient norms clipped at ``clip``. Returns the loss of every step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for step in range(1, steps + 1):
        inputs, targets = next_batch()
        _, loss, _ = model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    return losses


@torch.no_grad()
def predictions(model: nn.Module, inputs: Tensor) -> Tensor:
    """The argmax token at every position (N, T), in eval mode."""
    was_training = model.training
    model.eval()
    logits = model(inputs)[0]
    model.train(was_training)
    return logits.argmax(-1)
