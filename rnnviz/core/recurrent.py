"""Stacked recurrent layers with two ways to run one set of weights.

The classes subclass torch's own ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``, so the parameter names
(``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``), their shapes and the gate
order are torch's, and a ``state_dict`` moves between rnnviz and plain PyTorch unchanged.

- The **fast path** is ``forward``: torch's fused kernels (oneDNN on CPU, cuDNN on GPU), for training.
- The **trace path** is ``trace``: the same parameters stepped through ``cells.py``, recording h, c and
  every gate for every layer and step, for inspection. It is differentiable, and runs as in eval mode
  (no dropout between layers).

Every layer is batch-first: inputs are (N, T, D) and states are (L, N, H).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from rnnviz.core.cells import CellWeights, gru_cell, lstm_cell, rnn_cell
from rnnviz.core.layer_kit import map_tensors

KINDS = ("rnn", "lstm", "gru")

# Names of the recorded quantities per kind, in the order the cell returns them.
TRACE_FIELDS = {
    "rnn": ("a", "h"),
    "lstm": ("i", "f", "g", "o", "c", "tanh_c", "h"),
    "gru": ("r", "z", "n", "h"),
}

# Number of stacked gate blocks in W_ih and W_hh.
GATE_BLOCKS = {"rnn": 1, "lstm": 4, "gru": 3}

State = Tensor | tuple[Tensor, Tensor]


@dataclass(eq=False)
class Trace:
    """Every intermediate of a stacked run; each entry of ``values`` is (L, T, N, H)."""

    kind: str
    h0: Tensor  # (L, N, H)
    c0: Tensor | None  # (L, N, H) for an LSTM, else None
    values: dict[str, Tensor] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Tensor:
        return self.values[name]

    @property
    def output(self) -> Tensor:
        """Top layer's h_t for every step, (N, T, H), the same as the fast path's output."""
        return self.values["h"][-1].transpose(0, 1)

    @property
    def final_state(self) -> State:
        """(h_T, c_T) for an LSTM, else h_T; each (L, N, H)."""
        h_n = self.values["h"][:, -1]
        return (h_n, self.values["c"][:, -1]) if self.kind == "lstm" else h_n


class _TraceMixin:
    """The trace path, shared by the three torch subclasses below."""

    kind: str

    def layer_weights(self, layer: int) -> CellWeights:
        """W_ih, W_hh, b_ih, b_hh of one layer, as torch stores them."""
        suffix = f"_l{layer}"
        return CellWeights(
            getattr(self, "weight_ih" + suffix),
            getattr(self, "weight_hh" + suffix),
            getattr(self, "bias_ih" + suffix, None),
            getattr(self, "bias_hh" + suffix, None),
        )

    def zero_state(self, batch: int, device: torch.device | str | None = None) -> State:
        """h_0 (and c_0) of zeros, (L, N, H)."""
        device = device or self.weight_hh_l0.device
        zeros = torch.zeros(self.num_layers, batch, self.hidden_size, device=device, dtype=self.weight_hh_l0.dtype)
        return (zeros, zeros.clone()) if self.kind == "lstm" else zeros

    def trace(self, x: Tensor, state: State | None = None) -> Trace:
        """Run x (N, T, D) step by step through cells.py and record every intermediate."""
        if x.dim() != 3:
            raise ValueError(f"trace expects input of shape (N, T, D), got {tuple(x.shape)}")
        n, t_len, _ = x.shape
        state = self.zero_state(n, x.device) if state is None else state
        h0, c0 = state if self.kind == "lstm" else (state, None)
        per_layer: dict[str, list[Tensor]] = {name: [] for name in TRACE_FIELDS[self.kind]}
        layer_input = x  # (N, T, D)
        for layer in range(self.num_layers):
            weights = self.layer_weights(layer)
            h, c = h0[layer], (c0[layer] if c0 is not None else None)
            steps = []
            for t in range(t_len):
                x_t = layer_input[:, t]
                if self.kind == "lstm":
                    step = lstm_cell(x_t, (h, c), weights)
                    c = step.c_t
                elif self.kind == "gru":
                    step = gru_cell(x_t, h, weights)
                else:
                    step = rnn_cell(x_t, h, weights, self.nonlinearity)
                h = step.h_t
                steps.append(step)
            for name, column in zip(TRACE_FIELDS[self.kind], zip(*steps)):
                per_layer[name].append(torch.stack(column))  # (T, N, H)
            layer_input = per_layer["h"][-1].transpose(0, 1)  # (N, T, H)
        values = {name: torch.stack(layers) for name, layers in per_layer.items()}  # (L, T, N, H)
        return Trace(kind=self.kind, h0=h0, c0=c0, values=values)


class RecurrentRNN(_TraceMixin, nn.RNN):
    """Stacked Elman RNN (tanh or ReLU): h_t = φ(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)."""

    kind = "rnn"


class RecurrentLSTM(_TraceMixin, nn.LSTM):
    """Stacked LSTM: c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t, h_t = o_t ⊙ tanh(c_t)."""

    kind = "lstm"


class RecurrentGRU(_TraceMixin, nn.GRU):
    """Stacked GRU: h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t-1}."""

    kind = "gru"


RECURRENT_CLASSES = {"rnn": RecurrentRNN, "lstm": RecurrentLSTM, "gru": RecurrentGRU}
TORCH_CLASSES = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


def make_recurrent(
    kind: str,
    input_size: int,
    hidden_size: int,
    num_layers: int = 1,
    nonlinearity: str = "tanh",
    dropout: float = 0.0,
    bias: bool = True,
) -> RecurrentRNN | RecurrentLSTM | RecurrentGRU:
    """A batch-first stacked recurrent layer of the given kind, with torch's parameter names."""
    if kind not in RECURRENT_CLASSES:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if input_size < 1 or hidden_size < 1 or num_layers < 1:
        raise ValueError("input size, hidden size and layers must all be at least 1")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), not {dropout}")
    kwargs = dict(num_layers=num_layers, bias=bias, batch_first=True, dropout=dropout if num_layers > 1 else 0.0)
    if kind == "rnn":
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}")
        kwargs["nonlinearity"] = nonlinearity
    return RECURRENT_CLASSES[kind](input_size, hidden_size, **kwargs)


def detach_state(state: State | tuple | None) -> State | tuple | None:
    """Cut the graph at a chunk boundary while keeping the values (truncated BPTT): h (and c), or a StateStack's
    tuple of layer states, nested as it came."""
    return map_tensors(Tensor.detach, state)
