"""A selective state-space layer in the manner of Mamba (Gu and Dao 2023), kept small.

Each of the H channels carries S numbers, a diagonal linear system whose step size Δ_t, input map B_t and
readout C_t depend on the input ("selective": the layer chooses, token by token, what to keep and what to let
decay). With x̃ the short convolution of x (rnnviz.core.layer_kit.ShortConv):

    u_t = W_u x̃_t + b_u                       the channels' input, (H,)
    Δ_t = softplus(W_Δ x̃_t + b_Δ)             step size per channel, (H,)
    B_t = W_B x̃_t,  C_t = W_C x̃_t              input and readout maps, (S,), shared by the channels
    A = −exp(A_log)                            a fixed diagonal, (H, S), negative: each number decays

Zero-order hold turns the continuous system ds/dτ = A s + B u into a step of length Δ_t:

    Ā_t = exp(Δ_t A)                           (H, S), in (0, 1): how much of s_{t−1} is kept
    B̄_t u_t ≈ Δ_t u_t B_tᵀ                      (H, S), Mamba's simplification of (Δ A)⁻¹(exp(Δ A) − 1) Δ B
    s_t = Ā_t ⊙ s_{t−1} + B̄_t u_t              the state, (H, S)
    y_t = s_t C_t + D ⊙ u_t                     (H,)
    h_t = y_t ⊙ SiLU(W_z x_t + b_z)             Mamba's gated output, (H,)

A large Δ_t forgets the past and writes x_t; a small Δ_t passes the token by.

- The **fast path** is ``forward``: every projection for all t in one product, then the scan s_t = Ā_t ⊙ s_{t−1} +
  B̄_t u_t over T, elementwise multiply-adds only, and y_t for all t in one product.
- The **trace path** is ``trace``: ``selective_cell`` step by step, recording s_t, Δ_t, B_t, C_t, u_t, y_t, h_t.

Included from Mamba: the selective Δ, B, C, the fixed negative A with Mamba's init (A = −[1, …, S] per channel,
Δ at init log-uniform in [0.001, 0.1]), the skip D, the SiLU gate and a short causal convolution. Left out: the
up-projection (H plays d_inner), the low-rank Δ projection, the output projection and the hardware-aware kernel.
The state is (s, conv): s (N, H, S) and the convolution's last K − 1 inputs (N, K − 1, D).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.layer_kit import LayerTrace, ShortConv, check_input, check_state

DELTA_INIT = (1e-3, 1e-1)  # Δ at init, log-uniform in this range per channel (Mamba's dt_min, dt_max)


class SelectiveState(NamedTuple):
    """What the selective layer carries into its next step."""

    s: Tensor  # (N, H, S)
    conv: Tensor  # (N, K − 1, D) the short convolution's last inputs


class SelectiveStep(NamedTuple):
    """Intermediates of one step."""

    s: Tensor  # (N, H, S)
    y: Tensor  # (N, H) s_t C_t + D ⊙ u_t
    h: Tensor  # (N, H) y_t ⊙ SiLU(W_z x_t + b_z)


def selective_cell(u: Tensor, delta: Tensor, B: Tensor, C: Tensor, gate: Tensor, s: Tensor, A: Tensor, D: Tensor
                   ) -> SelectiveStep:
    """One step: u, Δ, SiLU gate (N, H); B, C (N, S); the carried s (N, H, S); A (H, S); D (H,)."""
    decay = torch.exp(delta.unsqueeze(-1) * A)  # Ā_t = exp(Δ_t A), (N, H, S)
    s_t = decay * s + (delta * u).unsqueeze(-1) * B.unsqueeze(-2)  # Ā_t ⊙ s_{t−1} + Δ_t u_t B_tᵀ
    y = (s_t @ C.unsqueeze(-1)).squeeze(-1) + D * u  # (N, H)
    return SelectiveStep(s=s_t, y=y, h=y * gate)


def selective_scan(decay: Tensor, write: Tensor, s0: Tensor) -> Tensor:
    """s_t = decay_t ⊙ s_{t−1} + write_t for every t: decay and write (N, T, H, S), s0 (N, H, S) → (N, T, H, S)."""
    s, states = s0, []
    for decay_t, write_t in zip(decay.unbind(1), write.unbind(1)):  # unbind: one gradient copy, not one per t
        s = torch.addcmul(write_t, decay_t, s)
        states.append(s)
    return torch.stack(states, dim=1)


class Selective(nn.Module):
    """One selective SSM layer: ``forward(x, state) -> (h (N, T, H), state)``; ``trace`` records s_t and Δ_t."""

    kind = "selective"

    def __init__(self, input_size: int, hidden_size: int, state_size: int = 16, conv: int = 4):
        super().__init__()
        if input_size < 1 or hidden_size < 1 or state_size < 1:
            raise ValueError("input size, hidden size and state size must all be at least 1")
        self.input_size, self.hidden_size, self.state_size = input_size, hidden_size, state_size
        self.conv = ShortConv(input_size, conv)
        self.from_conv = nn.Linear(input_size, 2 * hidden_size + 2 * state_size)  # [W_u; W_Δ; W_B; W_C] read x̃
        self.gate = nn.Linear(input_size, hidden_size)  # W_z reads x
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state_size + 1, dtype=torch.float32))
                                  .repeat(hidden_size, 1))  # (H, S)
        self.D = nn.Parameter(torch.ones(hidden_size))
        with torch.no_grad():
            low, high = DELTA_INIT
            delta = torch.exp(torch.rand(hidden_size) * (math.log(high) - math.log(low)) + math.log(low))
            self.from_conv.bias[hidden_size : 2 * hidden_size] = delta + torch.log(-torch.expm1(-delta))  # softplus⁻¹

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, state_size={self.state_size}, conv={self.conv.width}"

    @property
    def A(self) -> Tensor:
        """A = −exp(A_log), (H, S)."""
        return -torch.exp(self.A_log)

    def zero_state(self, batch: int, like: Tensor | None = None) -> SelectiveState:
        """s and the convolution's buffer, zeros."""
        like = like if like is not None else self.D
        return SelectiveState(like.new_zeros(batch, self.hidden_size, self.state_size),
                              self.conv.zero_buffer(batch, like))

    def _state(self, x: Tensor, state) -> SelectiveState:
        check_input(x, self.input_size)
        zero = self.zero_state(x.size(0), x)
        return zero if state is None else check_state(state, zero, "a selective SSM")

    def projections(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, ...]:
        """u, Δ, SiLU gate (N, T, H); B, C (N, T, S); and the convolution's buffer after x."""
        h, s = self.hidden_size, self.state_size
        x_conv, buffer = self.conv(x, buffer)
        u, delta_pre, B, C = self.from_conv(x_conv).split([h, h, s, s], dim=-1)
        return u, F.softplus(delta_pre), B, C, F.silu(self.gate(x)), buffer

    def forward(self, x: Tensor, state: SelectiveState | None = None) -> tuple[Tensor, SelectiveState]:
        """h_t for every t (N, T, H) by the scan, and the final (s, conv)."""
        state = self._state(x, state)
        u, delta, B, C, gate, buffer = self.projections(x, state.conv)
        decay = torch.exp(delta.unsqueeze(-1) * self.A)  # Ā_t, (N, T, H, S)
        write = (delta * u).unsqueeze(-1) * B.unsqueeze(-2)  # B̄_t u_t, (N, T, H, S)
        states = selective_scan(decay, write, state.s)  # (N, T, H, S)
        y = (states * C.unsqueeze(-2)).sum(-1) + self.D * u  # (N, T, H); a product and a sum: 3× faster than bmm
        return y * gate, SelectiveState(states[:, -1], buffer)

    def trace(self, x: Tensor, state: SelectiveState | None = None) -> LayerTrace:
        """Step by step: s (T, N, H, S), y and h (T, N, H), and the selection Δ, u, gate (T, N, H), B, C (T, N, S)."""
        state = self._state(x, state)
        u, delta, B, C, gate, buffer = self.projections(x, state.conv)
        A, s, steps = self.A, state.s, []
        for t in range(x.size(1)):
            step = selective_cell(u[:, t], delta[:, t], B[:, t], C[:, t], gate[:, t], s, A, self.D)
            s = step.s
            steps.append(step)
        values = {name: torch.stack(column) for name, column in zip(SelectiveStep._fields, zip(*steps))}
        values.update(delta=delta.transpose(0, 1), u=u.transpose(0, 1), gate=gate.transpose(0, 1),
                      B=B.transpose(0, 1), C=C.transpose(0, 1))
        return LayerTrace(self.kind, values, values["h"].transpose(0, 1), SelectiveState(s, buffer))
