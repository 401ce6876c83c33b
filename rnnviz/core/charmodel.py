"""A character-level language model: embedding (or one-hot) → recurrent stack → linear readout.

The recurrent stack is torch's RNN, LSTM or GRU (rnnviz.core.recurrent), or a minGRU stack
(``kind="mingru"``, rnnviz.core.mingru: gates that read x_t only, trained by a parallel scan).
``ModelConfig.kind`` also takes "transformer" (rnnviz.core.transformer.CharTransformer, the same interface);
``build_model(config)`` constructs the right class for any kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.mingru import MinGRU
from rnnviz.core.recurrent import KINDS, State, Trace, make_recurrent
from rnnviz.core.transformer import CharTransformer, KVCache

# KINDS are torch's recurrent cells, which the explorer, the gate pages and cell interventions read by their
# W_hh; a minGRU has no W_hh, so it is a recurrent CharModel kind but not one of KINDS.
RECURRENT_MODEL_KINDS = (*KINDS, "mingru")  # the kinds CharModel builds: each carries a fixed-size state
MODEL_KINDS = (*RECURRENT_MODEL_KINDS, "transformer")  # every kind a character model can be



def kind_label(kind: str) -> str:
    """How pages and the CLI name a kind: "RNN", "LSTM", "GRU", "minGRU", "Transformer"."""
    return {"mingru": "minGRU", "transformer": "Transformer"}.get(kind, kind.upper())

@dataclass(frozen=True)
class ModelConfig:
    """Shape of a character model; frozen so it can key caches and travel in checkpoints."""

    vocab_size: int  # V, distinct characters
    kind: str = "lstm"  # "rnn", "lstm", "gru", "mingru" or "transformer"
    layers: int = 1  # L, stacked recurrent layers (Transformer: blocks)
    hidden: int = 128  # H, units per layer (Transformer: C, the width of the residual stream)
    embedding: bool = True  # False feeds one-hot x_t, to show an embedding is a column lookup of W_xh
    embed_dim: int = 64  # E, width of the learned embedding when ``embedding`` is on (Transformer: unused, E = C)
    dropout: float = 0.0  # between stacked layers, training only (Transformer: on attention, residuals, embeddings)
    nonlinearity: str = "tanh"  # vanilla RNN only: "tanh" or "relu"
    forget_bias: float | None = None  # LSTM only: initial b_f = b_ih,f + b_hh,f; None keeps torch's uniform init
    n_head: int = 4  # Transformer only: h, attention heads per block, each d = C / h wide
    block_size: int = 64  # Transformer only: the context, how many positions have an embedding P[t]

    def __post_init__(self):
        if self.vocab_size < 2:
            raise ValueError(f"a character model needs at least 2 distinct characters, got {self.vocab_size}")
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MODEL_KINDS)}, not {self.kind!r}")
        if self.layers < 1 or self.hidden < 1 or self.embed_dim < 1:
            raise ValueError("layers, hidden size and embedding width must all be at least 1")
        if self.kind == "transformer":
            check_transformer_shape(self.hidden, self.n_head, self.block_size, self.embedding)

    @property
    def input_size(self) -> int:
        """Width of x_t fed to the first recurrent layer (a Transformer's embeddings are C = hidden wide)."""
        if self.kind == "transformer":
            return self.hidden
        return self.embed_dim if self.embedding else self.vocab_size

    @property
    def carries_state(self) -> bool:
        """Whether the model carries a state from one chunk into the next: h_t (and c_t), not a Transformer."""
        return self.kind != "transformer"


def check_transformer_shape(hidden: int, n_head: int, block_size: int, embedding: bool = True) -> None:
    """ValueError in words unless C = hidden splits into n_head heads and the context is at least 1."""
    if n_head < 1 or block_size < 1:
        raise ValueError("a Transformer needs at least 1 attention head and a context of at least 1")
    if hidden % n_head:
        raise ValueError(f"the width C = {hidden} must divide evenly into {n_head} attention heads")
    if not embedding:
        raise ValueError("a Transformer reads a learned token embedding; one-hot input is for recurrent kinds")


class CharModel(nn.Module):
    """Next-character model with ``forward(idx, targets=None, state=None) -> (logits, loss, state)``."""

    carries_state = True  # the final h_T (and c_T) is the next chunk's h_0

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.kind not in RECURRENT_MODEL_KINDS:
            raise ValueError(f"CharModel is recurrent ({', '.join(RECURRENT_MODEL_KINDS)}); build a {config.kind!r} "
                             "with build_model")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim) if config.embedding else None
        if config.kind == "mingru":
            self.rnn = MinGRU(config.input_size, config.hidden, num_layers=config.layers, dropout=config.dropout)
        else:
            self.rnn = make_recurrent(
                config.kind,
                config.input_size,
                config.hidden,
                num_layers=config.layers,
                nonlinearity=config.nonlinearity,
                dropout=config.dropout,
            )
        self.head = nn.Linear(config.hidden, config.vocab_size)
        if config.forget_bias is not None and config.kind == "lstm":
            self.init_forget_bias(config.forget_bias)

    @torch.no_grad()
    def init_forget_bias(self, value: float) -> None:
        """Set every layer's forget-gate bias so that b_ih,f + b_hh,f = value (f_t starts near σ(value)).

        torch stacks the LSTM gates as (i, f, g, o), so the forget slice of each bias is rows H…2H.
        A positive value keeps the cell path c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t open early in training.
        """
        hidden = self.config.hidden
        for layer in range(self.config.layers):
            getattr(self.rnn, f"bias_ih_l{layer}")[hidden : 2 * hidden] = value
            getattr(self.rnn, f"bias_hh_l{layer}")[hidden : 2 * hidden] = 0.0

    def inputs(self, idx: Tensor) -> Tensor:
        """x_t for every position: an embedding row, or a one-hot vector. (N, T) → (N, T, D)."""
        if self.embed is not None:
            return self.embed(idx)
        return F.one_hot(idx, self.config.vocab_size).to(self.head.weight.dtype)

    def forward(
        self, idx: Tensor, targets: Tensor | None = None, state: State | None = None
    ) -> tuple[Tensor, Tensor | None, State]:
        """Logits (N, T, V), mean cross-entropy in nats/char when targets are given, and the final state."""
        out, state = self.rnn(self.inputs(idx), state)  # (N, T, H)
        logits = self.head(out)  # (N, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss, state

    def trace(self, idx: Tensor, state: State | None = None) -> tuple[Tensor, Trace]:
        """Logits (N, T, V) and the full Trace of every gate, computed on the trace path."""
        trace = self.rnn.trace(self.inputs(idx), state)
        return self.head(trace.output), trace

    def num_parameters(self) -> int:
        """Trainable parameter count, as sum(p.numel())."""
        return sum(p.numel() for p in self.parameters())


def build_model(config: ModelConfig) -> CharModel | CharTransformer:
    """The model class for ``config.kind``: a CharTransformer for "transformer", else a recurrent CharModel."""
    if config.kind == "transformer":
        return CharTransformer(config)
    return CharModel(config)


def carried_nbytes(state: State | KVCache | None) -> int:
    """Bytes a model carries into its next step, measured from the tensors: h (and c) of a recurrent model,
    or K and V of a Transformer's cache; 0 for None."""
    if state is None:
        return 0
    if isinstance(state, KVCache):
        return state.nbytes
    tensors = state if isinstance(state, tuple) else (state,)
    return sum(t.numel() * t.element_size() for t in tensors)
