"""A character-level language model: embedding (or one-hot) → recurrent stack → linear readout.

The recurrent stack is torch's RNN, LSTM or GRU (rnnviz.core.recurrent), a minGRU stack (``kind="mingru"``,
rnnviz.core.mingru: gates that read x_t only, trained by a parallel scan), or a stack of one of the kinds whose
state is more than a vector (rnnviz.core.state_stack: "slstm", "mlstm", "selective", "linear_attention"), whose
state is a tuple of one NamedTuple per layer and whose trace is a list of LayerTrace, one per layer.
``ModelConfig.kind`` (rnnviz.core.config) also takes "transformer" (rnnviz.core.transformer.CharTransformer, the
same interface); ``build_model(config)`` constructs the right class for any kind.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.config import CHAR_MODEL_KINDS, ModelConfig, kind_label
from rnnviz.core.layer_kit import LayerTrace, map_tensors, state_nbytes
from rnnviz.core.mingru import MinGRU
from rnnviz.core.recurrent import State, Trace, make_recurrent
from rnnviz.core.state_stack import STATE_KINDS, StateStack
from rnnviz.core.transformer import CharTransformer, KVCache


class CharModel(nn.Module):
    """Next-character model with ``forward(idx, targets=None, state=None) -> (logits, loss, state)``."""

    carries_state = True  # the final state (h_T, c_T, or a StateStack's) is the next chunk's starting state

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.kind not in CHAR_MODEL_KINDS:
            raise ValueError(f"CharModel is recurrent ({', '.join(CHAR_MODEL_KINDS)}); build a {config.kind!r} "
                             "with build_model")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim) if config.embedding else None
        if config.kind == "mingru":
            self.rnn = MinGRU(config.input_size, config.hidden, num_layers=config.layers, dropout=config.dropout)
        elif config.kind in STATE_KINDS:
            self.rnn = StateStack(config.kind, config.input_size, config.hidden, config.layers,
                                  heads=config.n_head, dropout=config.dropout)
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

    def trace(self, idx: Tensor, state: State | tuple | None = None) -> tuple[Tensor, Trace | list[LayerTrace]]:
        """Logits (N, T, V) and every gate and state of every step, computed on the trace path: a Trace of (L, T, N,
        H) values for RNN, LSTM, GRU and minGRU, one LayerTrace of (T, N, …) values per layer for the state kinds."""
        trace = self.rnn.trace(self.inputs(idx), state)
        top = trace[-1] if isinstance(trace, list) else trace
        return self.head(top.output), trace

    def num_parameters(self) -> int:
        """Trainable parameter count, as sum(p.numel())."""
        return sum(p.numel() for p in self.parameters())

    def state_from_tensors(self, tensors: list[Tensor]) -> State | tuple:
        """The carried state whose tensors ``layer_kit.flat_tensors`` listed (a checkpoint's carried_state): h,
        (h, c) for an LSTM, or a StateStack's tuple of layer states; ValueError in words when they cannot be one."""
        if self.config.kind in STATE_KINDS:
            return self.rnn.state_from_tensors(list(tensors))
        wanted = 2 if self.config.kind == "lstm" else 1
        if len(tensors) != wanted:
            raise ValueError(f"the state of a {kind_label(self.config.kind)} is {wanted} tensor(s), not "
                             f"{len(tensors)}")
        return tuple(tensors) if wanted == 2 else tensors[0]

    def select_rows(self, state: State | tuple, rows: Tensor) -> State | tuple:
        """The state of the sequences ``rows`` of the batch: (L, N, H) states by their dim 1, a StateStack's
        layer states (N first) by their dim 0."""
        if self.config.kind in STATE_KINDS:
            return map_tensors(lambda t: t[rows], state)
        return map_tensors(lambda t: t[:, rows], state)


def build_model(config: ModelConfig) -> CharModel | CharTransformer:
    """The model class for ``config.kind``: a CharTransformer for "transformer", else a recurrent CharModel."""
    if config.kind == "transformer":
        return CharTransformer(config)
    return CharModel(config)


def carried_nbytes(state: State | tuple | KVCache | None) -> int:
    """Bytes a model carries into its next step, measured from the tensors: h (and c) of a recurrent model, every
    tensor of a StateStack's layer states, or K and V of a Transformer's cache; 0 for None."""
    if isinstance(state, KVCache):
        return state.nbytes
    return state_nbytes(state)
