"""The kinds whose state is more than h (and c): xLSTM's sLSTM and mLSTM, the selective SSM and linear attention,
by name, and a stack of one kind's layers with the interface of the engine's recurrent stacks.

``StateStack(kind, D, H, layers)``: ``forward(x (N, T, D), state) -> (output (N, T, H), state)``, where the state
is a tuple with one layer state per layer (each a NamedTuple of tensors, first dimension N), and ``trace`` returns
one rnnviz.core.layer_kit.LayerTrace per layer. Layers are stacked plainly, as torch stacks an LSTM: layer ℓ + 1
reads layer ℓ's output (through dropout in training, when the stack has some).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.layer_kit import LayerTrace, flat_tensors, state_nbytes, state_numel
from rnnviz.core.linear_attention import LinearAttention
from rnnviz.core.selective import Selective
from rnnviz.core.xlstm import MLSTM, SLSTM

STATE_KINDS = ("slstm", "mlstm", "selective", "linear_attention")
STATE_KIND_LABELS = {"slstm": "sLSTM", "mlstm": "mLSTM", "selective": "selective SSM",
                     "linear_attention": "linear attention"}
HEADED_KINDS = ("slstm", "mlstm", "linear_attention")  # their width H must divide into heads
SELECTIVE_STATE_SIZE = 16  # S, the selective SSM's numbers per channel (Mamba's d_state), unless said otherwise
CONV_WIDTH = 4  # K, the short convolution's width, unless said otherwise
# What each kind carries from one step into the next, in words.
CARRIED_WORDS = {"slstm": "h_t, c_t, n_t and m_t", "mlstm": "matrix memory C_t, n_t, m_t and its convolution's inputs",
                 "selective": "state s_t and its convolution's inputs",
                 "linear_attention": "matrix memory S_t, z_t and its convolution's inputs"}


def make_state_layer(kind: str, input_size: int, hidden_size: int, heads: int = 4,
                     state_size: int = SELECTIVE_STATE_SIZE, conv: int = CONV_WIDTH
                     ) -> SLSTM | MLSTM | Selective | LinearAttention:
    """One layer of ``kind``; ``heads`` for sLSTM, mLSTM and linear attention, ``state_size`` S for the selective
    SSM, ``conv`` the short convolution's width K (0 for none; the sLSTM has none)."""
    if kind == "slstm":
        return SLSTM(input_size, hidden_size, heads)
    if kind == "mlstm":
        return MLSTM(input_size, hidden_size, heads, conv)
    if kind == "selective":
        return Selective(input_size, hidden_size, state_size, conv)
    if kind == "linear_attention":
        return LinearAttention(input_size, hidden_size, heads, conv)
    raise ValueError(f"kind must be one of {', '.join(STATE_KINDS)}, not {kind!r}")


class StateStack(nn.Module):
    """``layers`` layers of one kind, batch-first: ``forward(x, state) -> (output (N, T, H), state)``."""

    def __init__(self, kind: str, input_size: int, hidden_size: int, layers: int = 1, heads: int = 4,
                 state_size: int = SELECTIVE_STATE_SIZE, conv: int = CONV_WIDTH, dropout: float = 0.0):
        super().__init__()
        if layers < 1:
            raise ValueError(f"a stack needs at least 1 layer, not {layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {dropout}")
        self.kind, self.input_size, self.hidden_size, self.num_layers = kind, input_size, hidden_size, layers
        self.dropout = dropout if layers > 1 else 0.0  # between layers, in training only, as in nn.LSTM
        self.layers = nn.ModuleList(
            make_state_layer(kind, input_size if layer == 0 else hidden_size, hidden_size, heads, state_size, conv)
            for layer in range(layers))

    def _states(self, state) -> tuple:
        if state is None:
            return (None,) * self.num_layers
        if not isinstance(state, tuple | list) or len(state) != self.num_layers:
            raise ValueError(f"the state of a {self.num_layers}-layer {STATE_KIND_LABELS[self.kind]} stack holds one "
                             f"state per layer, got {type(state).__name__}")
        return tuple(state)

    def zero_state(self, batch: int, like: Tensor | None = None) -> tuple:
        """Every layer's zero state."""
        return tuple(layer.zero_state(batch, like) for layer in self.layers)

    def forward(self, x: Tensor, state: tuple | None = None) -> tuple[Tensor, tuple]:
        """The top layer's output (N, T, H) and every layer's final state."""
        finals = []
        for index, (layer, layer_state) in enumerate(zip(self.layers, self._states(state))):
            if index and self.dropout and self.training:
                x = F.dropout(x, self.dropout, training=True)
            x, final = layer(x, layer_state)
            finals.append(final)
        return x, tuple(finals)

    def state_from_tensors(self, tensors: list[Tensor]) -> tuple:
        """The state whose tensors ``flat_tensors`` listed (as a checkpoint stores them), one NamedTuple per layer
        again; ValueError in words unless they are as many, and shaped, as a state of this stack."""
        batch = tensors[0].size(0) if tensors and isinstance(tensors[0], Tensor) and tensors[0].dim() else 1
        zero = self.zero_state(batch)
        expected = flat_tensors(zero)
        shapes = [tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__ for t in tensors]
        if shapes != [tuple(t.shape) for t in expected]:
            raise ValueError(f"the state of a {self.shape_label()} is {len(expected)} tensors shaped "
                             f"{[tuple(t.shape) for t in expected]}, not {shapes}")
        parts, start = [], 0
        for layer_state in zero:
            parts.append(type(layer_state)(*tensors[start : start + len(layer_state)]))
            start += len(layer_state)
        return tuple(parts)

    def trace(self, x: Tensor, state: tuple | None = None) -> list[LayerTrace]:
        """Every layer's trace, bottom first; the last one's ``output`` equals ``forward``'s."""
        traces = []
        for layer, layer_state in zip(self.layers, self._states(state)):
            traces.append(layer.trace(x, layer_state))
            x = traces[-1].output
        return traces

    def state_numel(self, batch: int = 1) -> int:
        """Numbers the stack carries from one step to the next, for ``batch`` sequences."""
        return state_numel(self.zero_state(batch))

    def state_nbytes(self, batch: int = 1) -> int:
        """Bytes the stack carries from one step to the next, for ``batch`` sequences, at the weights' precision."""
        return state_nbytes(self.zero_state(batch))

    def shape_label(self) -> str:
        """"L × H kind", as rnnviz.core.config.shape_label writes the other kinds: "2 × 64 mLSTM"."""
        return f"{self.num_layers} × {self.hidden_size} {STATE_KIND_LABELS[self.kind]}"
