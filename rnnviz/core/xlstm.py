"""xLSTM's two cells (Beck et al. 2024): the sLSTM, a scalar memory with exponential gating and memory mixing, and
the mLSTM, a matrix memory written with outer products. Each is one layer, x (N, T, D) → h (N, T, H).

**Exponential gates and the stabiliser.** Both cells open their input gate as i_t = exp(ĩ_t), which can write a new
item over everything before it, and forget with f_t = σ(f̃_t). Products of exponentials overflow, so each cell
carries a stabiliser m_t, the log of the largest weight so far, and stores its memory divided by exp(m_t):

    m_t = max(log f_t + m_{t−1}, ĩ_t)
    i′_t = exp(ĩ_t − m_t) ≤ 1,      f′_t = exp(log f_t + m_{t−1} − m_t) ≤ 1

The read divides the memory by the normaliser n_t, kept with the same scale, so m_t cancels from every output:
any m (the stabiliser, or none at all) gives the same h_t. The code therefore treats m_t as a constant for
gradients (it is detached); the gradients are exact, as the tests show against the unstabilised equations.

**sLSTM**, H units in h heads of d = H/h. The recurrent matrices are block-diagonal: a unit reads h_{t−1} only
within its head ("memory mixing" across the units of a head, not across heads):

    [ĩ_t; f̃_t; z̃_t; õ_t] = W x_t + R h_{t−1} + b              R block-diagonal, one d × d block per gate and head
    c_t = f′_t c_{t−1} + i′_t tanh(z̃_t)                     cell
    n_t = f′_t n_{t−1} + i′_t                               normaliser
    h_t = σ(õ_t) ⊙ c_t / n_t

A nonlinear recurrence has no parallel form: ``forward`` and ``trace`` both step through t (the forward with W x_t
for every t in one product and nothing recorded). The state is (h, c, n, m), each (N, H).

**mLSTM**, h heads of width d = H/h, each with a d × d matrix memory. With x̃ the short convolution of x
(rnnviz.core.layer_kit.ShortConv):

    q_t = W_q x̃_t,   k_t = W_k x̃_t / √d,   v_t = W_v x_t            per head, (d,)
    ĩ_t, f̃_t = w_i·x̃_t + b_i, w_f·x̃_t + b_f                         one scalar pair per head
    C_t = f′_t C_{t−1} + i′_t v_t k_tᵀ                                matrix memory, (d, d)
    n_t = f′_t n_{t−1} + i′_t k_t                                     normaliser, (d,)
    h_t = σ(W_o x_t + b_o) ⊙ C_t q_t / max(|n_tᵀ q_t|, exp(−m_t))      (= max(|n_tᵀ q_t|, 1) unstabilised)

Nothing on the right reads h_{t−1}, so the recurrence unrolls into a causal, attention-like product. With
F_t = Σ_{j≤t} log f_j and the carried state (C_0, n_0, m_0):

    D_ts = exp(F_t − F_s + ĩ_s − m_t)  (s ≤ t),     D_t0 = exp(F_t + m_0 − m_t),     m_t = max(F_t + m_0, max_s …)
    h̃_t = (Σ_s D_ts (q_t·k_s) v_s + D_t0 C_0 q_t) / max(|Σ_s D_ts (q_t·k_s) + D_t0 n_0·q_t|, exp(−m_t))

``forward`` computes that (T × T per head, for training); ``trace`` steps the recurrence and records C_t, n_t and
m_t at every step. The state is (C, n, m, conv): C (N, h, d, d), n (N, h, d), m (N, h), and the convolution's
last K − 1 inputs (N, K − 1, D).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.layer_kit import LayerTrace, ShortConv, check_input, check_state

FORGET_BIAS = (3.0, 6.0)  # b_f at init spread evenly over this range (xLSTM's "small init"): f_t starts near 0.95–1


def _heads(hidden: int, heads: int) -> int:
    if heads < 1 or hidden < 1 or hidden % heads:
        raise ValueError(f"the width H = {hidden} must divide evenly into {heads} heads (at least 1)")
    return hidden // heads


# -- sLSTM ------------------------------------------------------------------------------------------------------


class SLSTMState(NamedTuple):
    """What an sLSTM carries into its next step; each (N, H). c and n are stored divided by exp(m)."""

    h: Tensor
    c: Tensor
    n: Tensor
    m: Tensor


class SLSTMStep(NamedTuple):
    """Intermediates of one sLSTM step, each (N, H)."""

    i: Tensor  # i′_t = exp(ĩ_t − m_t), the stabilised input gate
    f: Tensor  # f′_t = exp(log σ(f̃_t) + m_{t−1} − m_t), the stabilised forget gate
    z: Tensor  # tanh(z̃_t), the cell input
    o: Tensor  # σ(õ_t), the output gate
    c: Tensor
    n: Tensor
    m: Tensor
    h: Tensor


SLSTM_FIELDS = SLSTMStep._fields


def slstm_cell(pre_x: Tensor, state: SLSTMState, weight_hh: Tensor) -> SLSTMStep:
    """One sLSTM step. ``pre_x`` = W x_t + b, (N, 4H) as [ĩ; f̃; z̃; õ]; ``weight_hh`` (4, heads, d, d) holds R's
    blocks, R[g, head] mapping h_{t−1} of that head to gate g of that head."""
    gates, heads, d, _ = weight_hh.shape
    n = pre_x.size(0)
    recurrent = torch.einsum("ghij,nhj->nghi", weight_hh, state.h.view(n, heads, d))  # (N, 4, heads, d)
    i_pre, f_pre, z_pre, o_pre = (pre_x + recurrent.reshape(n, gates * heads * d)).chunk(4, dim=-1)  # (N, H) each
    log_f = F.logsigmoid(f_pre)
    m = torch.maximum(log_f + state.m, i_pre).detach()  # h never depends on m: a constant for gradients
    i, f = torch.exp(i_pre - m), torch.exp(log_f + state.m - m)
    z, o = torch.tanh(z_pre), torch.sigmoid(o_pre)
    c = f * state.c + i * z
    n_t = f * state.n + i
    return SLSTMStep(i=i, f=f, z=z, o=o, c=c, n=n_t, m=m, h=o * c / n_t)


class SLSTM(nn.Module):
    """One sLSTM layer: ``forward(x, state) -> (h (N, T, H), state)``; ``trace`` records every gate and c, n, m."""

    kind = "slstm"

    def __init__(self, input_size: int, hidden_size: int, heads: int = 4):
        super().__init__()
        d = _heads(hidden_size, heads)
        self.input_size, self.hidden_size, self.heads = input_size, hidden_size, heads
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))  # W, rows [ĩ; f̃; z̃; õ]
        self.bias = nn.Parameter(torch.empty(4 * hidden_size))  # b
        self.weight_hh = nn.Parameter(torch.empty(4, heads, d, d))  # R, block-diagonal per gate and head
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """W and b uniform in ±1/√D, R in ±1/√d; the forget bias spread over FORGET_BIAS, the other biases 0."""
        self.weight_ih.uniform_(-1 / math.sqrt(self.input_size), 1 / math.sqrt(self.input_size))
        self.weight_hh.uniform_(-1 / math.sqrt(self.weight_hh.size(-1)), 1 / math.sqrt(self.weight_hh.size(-1)))
        self.bias.zero_()
        h = self.hidden_size
        self.bias[h : 2 * h] = torch.linspace(*FORGET_BIAS, h)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, heads={self.heads}"

    def zero_state(self, batch: int, like: Tensor | None = None) -> SLSTMState:
        """h, c, n and m of zeros, each (N, H)."""
        zeros = (like if like is not None else self.bias).new_zeros(batch, self.hidden_size)
        return SLSTMState(zeros, zeros.clone(), zeros.clone(), zeros.clone())

    def _state(self, x: Tensor, state) -> SLSTMState:
        check_input(x, self.input_size)
        zero = self.zero_state(x.size(0), x)
        return zero if state is None else check_state(state, zero, "an sLSTM")

    def _steps(self, x: Tensor, state, record: bool):
        state = self._state(x, state)
        pre_x = F.linear(x, self.weight_ih, self.bias)  # (N, T, 4H): W x_t + b for every t in one product
        steps = []
        for pre_x_t in pre_x.unbind(1):  # unbind: one gradient copy, not one per t
            step = slstm_cell(pre_x_t, state, self.weight_hh)
            state = SLSTMState(step.h, step.c, step.n, step.m)
            steps.append(step if record else step.h)
        return steps, state

    def forward(self, x: Tensor, state: SLSTMState | None = None) -> tuple[Tensor, SLSTMState]:
        """h_t for every t (N, T, H) and the final (h, c, n, m)."""
        hs, state = self._steps(x, state, record=False)
        return torch.stack(hs, dim=1), state

    def trace(self, x: Tensor, state: SLSTMState | None = None) -> LayerTrace:
        """Every SLSTMStep field at every step, each (T, N, H)."""
        steps, final = self._steps(x, state, record=True)
        values = {name: torch.stack(column) for name, column in zip(SLSTM_FIELDS, zip(*steps))}
        return LayerTrace(self.kind, values, values["h"].transpose(0, 1), final)


# -- mLSTM ------------------------------------------------------------------------------------------------------


class MLSTMState(NamedTuple):
    """What an mLSTM carries into its next step. C and n are stored divided by exp(m)."""

    C: Tensor  # (N, heads, d, d) matrix memory; C q reads it
    n: Tensor  # (N, heads, d) normaliser
    m: Tensor  # (N, heads) stabiliser
    conv: Tensor  # (N, K − 1, D) the short convolution's last inputs


class MLSTMStep(NamedTuple):
    """Intermediates of one mLSTM step (heads of width d)."""

    i: Tensor  # (N, heads) i′_t = exp(ĩ_t − m_t): the weight of this step's outer product v_t k_tᵀ
    f: Tensor  # (N, heads) f′_t = exp(log f_t + m_{t−1} − m_t): how much of C_{t−1} is kept
    C: Tensor  # (N, heads, d, d)
    n: Tensor  # (N, heads, d)
    m: Tensor  # (N, heads)
    h_tilde: Tensor  # (N, heads, d) C_t q_t / max(|n_tᵀ q_t|, exp(−m_t))


def mlstm_cell(q: Tensor, k: Tensor, v: Tensor, i_pre: Tensor, log_f: Tensor, C: Tensor, n: Tensor, m: Tensor
               ) -> MLSTMStep:
    """One step of the mLSTM's memory. q, k, v (N, heads, d) with k already divided by √d; ĩ and log f
    (N, heads); the carried C (N, heads, d, d), n (N, heads, d), m (N, heads)."""
    m_t = torch.maximum(log_f + m, i_pre).detach()  # h̃ never depends on m: a constant for gradients
    i, f = torch.exp(i_pre - m_t), torch.exp(log_f + m - m_t)  # (N, heads)
    C_t = f[..., None, None] * C + i[..., None, None] * (v.unsqueeze(-1) * k.unsqueeze(-2))  # (N, heads, d, d)
    n_t = f[..., None] * n + i[..., None] * k  # (N, heads, d)
    read = (C_t @ q.unsqueeze(-1)).squeeze(-1)  # C_t q_t, (N, heads, d)
    scale = torch.maximum((n_t * q).sum(-1).abs(), torch.exp(-m_t))  # (N, heads)
    return MLSTMStep(i=i, f=f, C=C_t, n=n_t, m=m_t, h_tilde=read / scale[..., None])


def mlstm_parallel(q: Tensor, k: Tensor, v: Tensor, i_pre: Tensor, log_f: Tensor, C0: Tensor, n0: Tensor,
                   m0: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
    """Every h̃_t at once by the unrolled form of the module docstring, and the final (C, n, m).

    q, k, v (N, heads, T, d) with k divided by √d; ĩ and log f (N, heads, T); C0, n0, m0 as in MLSTMState.
    Returns h̃ (N, heads, T, d)."""
    t_len = q.size(2)
    F_cum = torch.cumsum(log_f, dim=-1)  # F_t, (N, heads, T)
    causal = torch.ones(t_len, t_len, dtype=torch.bool, device=q.device).tril()
    log_d = (F_cum.unsqueeze(-1) - F_cum.unsqueeze(-2) + i_pre.unsqueeze(-2)).masked_fill(~causal, float("-inf"))
    log_d0 = F_cum + m0.unsqueeze(-1)  # the carried memory's weight, (N, heads, T)
    m = torch.maximum(log_d.amax(-1), log_d0).detach()  # m_t, the stabiliser of the recurrence, (N, heads, T)
    d_mat = torch.exp(log_d - m.unsqueeze(-1))  # D_ts, 0 above the diagonal, (N, heads, T, T)
    d0 = torch.exp(log_d0 - m)  # D_t0, (N, heads, T)
    scores = (q @ k.transpose(-1, -2)) * d_mat  # D_ts q_t·k_s, (N, heads, T, T)
    numerator = scores @ v + d0.unsqueeze(-1) * (q @ C0.transpose(-1, -2))  # (N, heads, T, d)
    denominator = scores.sum(-1) + d0 * (q @ n0.unsqueeze(-1)).squeeze(-1)  # (N, heads, T)
    h_tilde = numerator / torch.maximum(denominator.abs(), torch.exp(-m)).unsqueeze(-1)
    last = d_mat[:, :, -1]  # D_Ts, (N, heads, T)
    C_T = (v * last.unsqueeze(-1)).transpose(-1, -2) @ k + d0[..., -1, None, None] * C0  # Σ_s D_Ts v_s k_sᵀ + …
    n_T = (k * last.unsqueeze(-1)).sum(-2) + d0[..., -1, None] * n0
    return h_tilde, (C_T, n_T, m[..., -1])


class MLSTM(nn.Module):
    """One mLSTM layer: ``forward(x, state) -> (h (N, T, H), state)`` by the parallel form; ``trace`` steps the
    recurrence and records the matrix memory."""

    kind = "mlstm"

    def __init__(self, input_size: int, hidden_size: int, heads: int = 4, conv: int = 4):
        super().__init__()
        self.head_dim = _heads(hidden_size, heads)
        self.input_size, self.hidden_size, self.heads = input_size, hidden_size, heads
        self.conv = ShortConv(input_size, conv)
        self.from_conv = nn.Linear(input_size, 2 * hidden_size + 2 * heads)  # [W_q; W_k; w_i; w_f] read x̃
        self.from_input = nn.Linear(input_size, 2 * hidden_size)  # [W_v; W_o] read x
        with torch.no_grad():
            self.from_conv.bias[2 * hidden_size + heads :] = torch.linspace(*FORGET_BIAS, heads)  # b_f
            self.from_conv.bias[2 * hidden_size : 2 * hidden_size + heads] = 0.0  # b_i

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, heads={self.heads}, conv={self.conv.width}"

    def zero_state(self, batch: int, like: Tensor | None = None) -> MLSTMState:
        """C, n, m and the convolution's buffer, all zeros."""
        like = like if like is not None else self.from_input.weight
        d = self.head_dim
        return MLSTMState(like.new_zeros(batch, self.heads, d, d), like.new_zeros(batch, self.heads, d),
                          like.new_zeros(batch, self.heads), self.conv.zero_buffer(batch, like))

    def _state(self, x: Tensor, state) -> MLSTMState:
        check_input(x, self.input_size)
        zero = self.zero_state(x.size(0), x)
        return zero if state is None else check_state(state, zero, "an mLSTM")

    def projections(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, ...]:
        """q, k/√d, v (N, heads, T, d); ĩ and log f (N, heads, T); the output gate σ(W_o x + b_o) (N, T, H); and
        the convolution's buffer after x."""
        n, t_len, _ = x.shape
        h, heads, d = self.hidden_size, self.heads, self.head_dim
        x_conv, buffer = self.conv(x, buffer)  # (N, T, D)
        q, k, i_pre, f_pre = self.from_conv(x_conv).split([h, h, heads, heads], dim=-1)
        v, o_pre = self.from_input(x).chunk(2, dim=-1)  # (N, T, H) each

        def split(z: Tensor) -> Tensor:
            return z.view(n, t_len, heads, d).transpose(1, 2)  # (N, heads, T, d)

        return (split(q), split(k) / math.sqrt(d), split(v), i_pre.transpose(1, 2),
                F.logsigmoid(f_pre).transpose(1, 2), torch.sigmoid(o_pre), buffer)

    def _merge(self, h_tilde: Tensor) -> Tensor:
        """(N, heads, T, d) → (N, T, H)."""
        return h_tilde.transpose(1, 2).reshape(h_tilde.size(0), h_tilde.size(2), self.hidden_size)

    def forward(self, x: Tensor, state: MLSTMState | None = None) -> tuple[Tensor, MLSTMState]:
        """h_t for every t (N, T, H) by the parallel form, and the final (C, n, m, conv)."""
        state = self._state(x, state)
        q, k, v, i_pre, log_f, o, buffer = self.projections(x, state.conv)
        h_tilde, (C, n, m) = mlstm_parallel(q, k, v, i_pre, log_f, state.C, state.n, state.m)
        return o * self._merge(h_tilde), MLSTMState(C, n, m, buffer)

    def trace(self, x: Tensor, state: MLSTMState | None = None) -> LayerTrace:
        """The recurrence step by step: i, f, C, n, m, h̃ (each (T, N, heads, …)), q, k, v (T, N, heads, d),
        the output gate o and h (T, N, H)."""
        state = self._state(x, state)
        q, k, v, i_pre, log_f, o, buffer = self.projections(x, state.conv)
        C, n, m, steps = state.C, state.n, state.m, []
        for t in range(x.size(1)):
            step = mlstm_cell(q[:, :, t], k[:, :, t], v[:, :, t], i_pre[..., t], log_f[..., t], C, n, m)
            C, n, m = step.C, step.n, step.m
            steps.append(step)
        values = {name: torch.stack(column) for name, column in zip(MLSTMStep._fields, zip(*steps))}
        output = o * self._merge(values["h_tilde"].permute(1, 2, 0, 3))  # (N, T, H)
        values.update(q=q.permute(2, 0, 1, 3), k=k.permute(2, 0, 1, 3), v=v.permute(2, 0, 1, 3),
                      o=o.transpose(0, 1), h=output.transpose(0, 1))
        return LayerTrace(self.kind, values, output, MLSTMState(C, n, m, buffer))
