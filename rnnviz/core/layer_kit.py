"""What the layers whose state is more than a vector share (rnnviz.core.xlstm, .selective, .linear_attention).

- ``ShortConv``: a short causal depthwise convolution over the last K inputs, x̃_t = SiLU(Σ_j w_j ⊙ x_{t−j} + b),
  as Mamba, xLSTM's mLSTM block and Zoology's models put before their memory. It is how one layer binds a token
  to the token before it (a value to its key): the memory itself reads one x_t at a time. Its last K − 1 inputs
  are part of the layer's state.
- ``LayerTrace``: what a layer's trace path recorded, per step.
- ``state_numel`` and ``state_nbytes``: the size of a carried state, counted from its tensors.

Every layer here is batch-first: x (N, T, D) → output (N, T, H), with a state that is a NamedTuple of tensors
whose first dimension is N.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def flat_tensors(state: Any) -> list[Tensor]:
    """Every tensor of a state however it nests (a NamedTuple, a tuple of them, a list): the ones it carries."""
    if state is None:
        return []
    if isinstance(state, Tensor):
        return [state]
    return [t for part in state for t in flat_tensors(part)]


def map_tensors(fn: Callable[[Tensor], Tensor], state: Any) -> Any:
    """The state with ``fn`` applied to each of its tensors, nested as it was (NamedTuples keep their type)."""
    if state is None:
        return None
    if isinstance(state, Tensor):
        return fn(state)
    parts = [map_tensors(fn, part) for part in state]
    return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)


def state_numel(state: Any) -> int:
    """Numbers a state holds, from its tensors."""
    return sum(t.numel() for t in flat_tensors(state))


def state_nbytes(state: Any) -> int:
    """Bytes a state holds, from its tensors (numel × bytes per number)."""
    return sum(t.numel() * t.element_size() for t in flat_tensors(state))


def check_input(x: Tensor, input_size: int) -> None:
    """ValueError in words unless x is (N, T, D) with the layer's D and at least one step."""
    if x.dim() != 3 or x.size(-1) != input_size or x.size(1) < 1:
        raise ValueError(f"expected input of shape (N, T, {input_size}) with T ≥ 1, got {tuple(x.shape)}")


def check_state(state: Any, expected: tuple, kind: str) -> tuple:
    """The state as its NamedTuple type; ValueError in words unless each part has the expected shape.

    ``expected`` is a zero state of the right type and shapes; ``kind`` names the layer with its article ("an
    mLSTM"). A plain tuple is accepted (``detach_state`` returns one)."""
    parts = tuple(state) if isinstance(state, tuple | list) else (state,)
    shapes = [tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__ for t in parts]
    wanted = [tuple(t.shape) for t in expected]
    if shapes != wanted:
        names = ", ".join(f"{name} {shape}" for name, shape in zip(expected._fields, wanted))
        raise ValueError(f"{kind} state is ({names}), got {shapes}")
    return type(expected)(*parts)


@dataclass(eq=False)
class LayerTrace:
    """Everything one layer's trace path recorded. Each entry of ``values`` is (T, N, …): the value at every step."""

    kind: str
    values: dict[str, Tensor]
    output: Tensor  # (N, T, H), equal to the fast path's output
    final_state: tuple  # the state after the last step, as the fast path returns it

    def __getitem__(self, name: str) -> Tensor:
        return self.values[name]


class ShortConv(nn.Module):
    """Causal depthwise convolution of width K, then SiLU: x̃_t = SiLU(Σ_{j<K} w_j ⊙ x_{t−j} + b).

    ``weight`` is (D, K) with column K − 1 for x_t and column 0 for x_{t−K+1}; the inputs before the first step
    come from the carried buffer (N, K − 1, D), zeros at the start. K = 0 turns it off: x̃_t = x_t, no buffer.
    """

    def __init__(self, channels: int, width: int):
        super().__init__()
        if width < 0:
            raise ValueError(f"the convolution's width K must be 0 (off) or more, not {width}")
        self.channels, self.width = channels, width
        if width:
            bound = 1.0 / math.sqrt(width)
            self.weight = nn.Parameter(torch.empty(channels, width).uniform_(-bound, bound))
            self.bias = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))

    @property
    def buffer_length(self) -> int:
        """K − 1, the inputs it carries into the next step (0 when off)."""
        return max(self.width - 1, 0)

    def zero_buffer(self, batch: int, like: Tensor) -> Tensor:
        """The buffer before any input: zeros, (N, K − 1, D)."""
        return like.new_zeros(batch, self.buffer_length, self.channels)

    def forward(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, Tensor]:
        """x (N, T, D) and the buffer (N, K − 1, D) → x̃ (N, T, D) and the buffer after the last step."""
        if not self.width:
            return x, buffer
        padded = torch.cat([buffer, x], dim=1)  # (N, K − 1 + T, D)
        windows = padded.unfold(1, self.width, 1)  # (N, T, D, K): window t ends at x_t
        mixed = (windows * self.weight).sum(-1) + self.bias  # (N, T, D)
        return F.silu(mixed), padded[:, padded.size(1) - self.buffer_length :]
