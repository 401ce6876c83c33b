"""Causal linear attention as a recurrent layer (Katharopoulos et al. 2020, "Transformers are RNNs").

Softmax attention weighs the values by exp(q_t·k_s) and must keep every k_s and v_s. With a feature map φ in its
place, the weights factor, φ(q_t)·φ(k_s), and the sum over s can be carried forward as a d × d matrix:

    S_t = S_{t−1} + v_t φ(k_t)ᵀ          the memory, (d, d) per head: one outer product per step, never forgotten
    z_t = z_{t−1} + φ(k_t)               the normaliser, (d,)
    y_t = S_t φ(q_t) / (z_tᵀ φ(q_t) + ε)      the read (or S_t φ(q_t) without the normaliser)

with φ(a) = elu(a) + 1 > 0, so z_tᵀφ(q_t) > 0, and ε = EPS as in the authors' code: when every φ is tiny, the
denominator underflows to 0 in float32 and the read would be 0/0. Per head of width d = H/h, with x̃ the short
convolution of x (rnnviz.core.layer_kit.ShortConv): q_t = W_q x̃_t, k_t = W_k x̃_t, v_t = W_v x_t; the output h_t is
the heads' y_t side by side (N, T, H).

- The **fast path** is ``forward``: the parallel, causal form, A_ts = φ(q_t)·φ(k_s) for s ≤ t (0 above the
  diagonal), y_t = (Σ_s A_ts v_s + S_0 φ(q_t)) / (Σ_s A_ts + z_0ᵀ φ(q_t) + ε): attention's T × T product, without
  the softmax.
- The **trace path** is ``trace``: the recurrence step by step, recording S_t, z_t, φ(q_t), φ(k_t), v_t and y_t.

The state is (S, z, conv): S (N, h, d, d), z (N, h, d), and the convolution's last K − 1 inputs (N, K − 1, D). It
does not grow with t, where a Transformer's K/V cache does.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.layer_kit import LayerTrace, ShortConv, check_input, check_state

EPS = 1e-6  # ε in the read's denominator (Katharopoulos et al.'s code uses the same)


def feature_map(a: Tensor) -> Tensor:
    """φ(a) = elu(a) + 1, that is a + 1 for a > 0 and exp(a) below: always > 0. Written as relu(a) + exp(min(a, 0))
    because elu(a) + 1 rounds to 0 in float32 below a ≈ −17, and a sum of zeros would then divide the read."""
    return F.relu(a) + torch.exp(a.clamp(max=0.0))


class LinearAttentionState(NamedTuple):
    """What linear attention carries into its next step."""

    S: Tensor  # (N, heads, d, d) Σ v_s φ(k_s)ᵀ
    z: Tensor  # (N, heads, d) Σ φ(k_s)
    conv: Tensor  # (N, K − 1, D) the short convolution's last inputs


class LinearAttentionStep(NamedTuple):
    """Intermediates of one step, per head."""

    S: Tensor  # (N, heads, d, d)
    z: Tensor  # (N, heads, d)
    y: Tensor  # (N, heads, d)


def linear_attention_cell(phi_q: Tensor, phi_k: Tensor, v: Tensor, S: Tensor, z: Tensor, normalize: bool = True
                          ) -> LinearAttentionStep:
    """One step: φ(q_t), φ(k_t), v_t (N, heads, d) and the carried S (N, heads, d, d), z (N, heads, d)."""
    S_t = S + v.unsqueeze(-1) * phi_k.unsqueeze(-2)  # S_{t−1} + v_t φ(k_t)ᵀ
    z_t = z + phi_k
    y = (S_t @ phi_q.unsqueeze(-1)).squeeze(-1)  # S_t φ(q_t), (N, heads, d)
    if normalize:
        y = y / ((z_t * phi_q).sum(-1, keepdim=True) + EPS)
    return LinearAttentionStep(S=S_t, z=z_t, y=y)


def linear_attention_parallel(phi_q: Tensor, phi_k: Tensor, v: Tensor, S0: Tensor, z0: Tensor, normalize: bool = True
                              ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Every y_t at once, φ(q), φ(k), v (N, heads, T, d) → y (N, heads, T, d), and the final (S, z)."""
    t_len = phi_q.size(2)
    causal = torch.ones(t_len, t_len, dtype=torch.bool, device=phi_q.device).tril()
    weights = (phi_q @ phi_k.transpose(-1, -2)).masked_fill(~causal, 0.0)  # A_ts, (N, heads, T, T)
    y = weights @ v + phi_q @ S0.transpose(-1, -2)  # Σ_s A_ts v_s + S_0 φ(q_t)
    if normalize:
        y = y / (weights.sum(-1) + (phi_q @ z0.unsqueeze(-1)).squeeze(-1) + EPS).unsqueeze(-1)
    return y, (S0 + v.transpose(-1, -2) @ phi_k, z0 + phi_k.sum(-2))


class LinearAttention(nn.Module):
    """Causal linear attention: ``forward(x, state) -> (h (N, T, H), state)``, parallel; ``trace`` recurrent."""

    kind = "linear_attention"

    def __init__(self, input_size: int, hidden_size: int, heads: int = 4, conv: int = 4, normalize: bool = True):
        super().__init__()
        if heads < 1 or hidden_size < 1 or hidden_size % heads:
            raise ValueError(f"the width H = {hidden_size} must divide evenly into {heads} heads (at least 1)")
        self.input_size, self.hidden_size, self.heads = input_size, hidden_size, heads
        self.head_dim, self.normalize = hidden_size // heads, normalize
        self.conv = ShortConv(input_size, conv)
        self.query_key = nn.Linear(input_size, 2 * hidden_size)  # [W_q; W_k] read x̃
        self.value = nn.Linear(input_size, hidden_size)  # W_v reads x

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, heads={self.heads}, conv={self.conv.width}, "
                f"normalize={self.normalize}")

    def zero_state(self, batch: int, like: Tensor | None = None) -> LinearAttentionState:
        """S, z and the convolution's buffer, all zeros."""
        like = like if like is not None else self.value.weight
        d = self.head_dim
        return LinearAttentionState(like.new_zeros(batch, self.heads, d, d), like.new_zeros(batch, self.heads, d),
                                    self.conv.zero_buffer(batch, like))

    def _state(self, x: Tensor, state) -> LinearAttentionState:
        check_input(x, self.input_size)
        zero = self.zero_state(x.size(0), x)
        return zero if state is None else check_state(state, zero, "a linear attention")

    def projections(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """φ(q), φ(k), v, each (N, heads, T, d), and the convolution's buffer after x."""
        n, t_len, _ = x.shape
        x_conv, buffer = self.conv(x, buffer)
        q, k = self.query_key(x_conv).chunk(2, dim=-1)  # (N, T, H) each
        v = self.value(x)

        def split(a: Tensor) -> Tensor:
            return a.view(n, t_len, self.heads, self.head_dim).transpose(1, 2)  # (N, heads, T, d)

        return feature_map(split(q)), feature_map(split(k)), split(v), buffer

    def _merge(self, y: Tensor) -> Tensor:
        """(N, heads, T, d) → (N, T, H)."""
        return y.transpose(1, 2).reshape(y.size(0), y.size(2), self.hidden_size)

    def forward(self, x: Tensor, state: LinearAttentionState | None = None
                ) -> tuple[Tensor, LinearAttentionState]:
        """y_t for every t (N, T, H) by the parallel form, and the final (S, z, conv)."""
        state = self._state(x, state)
        phi_q, phi_k, v, buffer = self.projections(x, state.conv)
        y, (S, z) = linear_attention_parallel(phi_q, phi_k, v, state.S, state.z, self.normalize)
        return self._merge(y), LinearAttentionState(S, z, buffer)

    def trace(self, x: Tensor, state: LinearAttentionState | None = None) -> LayerTrace:
        """The recurrence step by step: S (T, N, heads, d, d), z, y, φ(q), φ(k), v (T, N, heads, d), h (T, N, H)."""
        state = self._state(x, state)
        phi_q, phi_k, v, buffer = self.projections(x, state.conv)
        S, z, steps = state.S, state.z, []
        for t in range(x.size(1)):
            step = linear_attention_cell(phi_q[:, :, t], phi_k[:, :, t], v[:, :, t], S, z, self.normalize)
            S, z = step.S, step.z
            steps.append(step)
        values = {name: torch.stack(column) for name, column in zip(LinearAttentionStep._fields, zip(*steps))}
        output = self._merge(values["y"].permute(1, 2, 0, 3))
        values.update(phi_q=phi_q.permute(2, 0, 1, 3), phi_k=phi_k.permute(2, 0, 1, 3), v=v.permute(2, 0, 1, 3),
                      h=output.transpose(0, 1))
        return LayerTrace(self.kind, values, output, LinearAttentionState(S, z, buffer))
