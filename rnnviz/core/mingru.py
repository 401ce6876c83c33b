"""minGRU (Feng et al. 2024, "Were RNNs All We Needed?"): a recurrent layer whose gates never read h_{t-1}.

One layer, for x_t of width D and a state of width H:

    z_t = σ(W_z x_t + b_z)                          update gate, from x_t only
    h̃_t = g(W_h x_t + b_h)                          candidate, from x_t only
    h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t

with g(a) = a + ½ for a ≥ 0 and σ(a) for a < 0 (continuous at 0, where both are ½, and always > 0).
Because nothing on the right reads h_{t-1} except the one product with (1 − z_t), the recurrence unrolls to

    h_t = A_t ⊙ h_0 + Σ_{k ≤ t} (A_t / A_k) ⊙ z_k ⊙ h̃_k,      A_t = Π_{j ≤ t} (1 − z_j),

a scan: every W x_t for all t is one matrix product, and what is left is a cumulative sum.

- The **fast path** is ``forward``: the scan for all t at once, in log space (Heinsen 2023). With
  a*_t = Σ_{j ≤ t} log(1 − z_j),

      h_t = exp(a*_t) ⊙ h_0 + exp(a*_t + logcumsumexp_{k ≤ t}(log z_k + log h̃_k − a*_k)),

  where log(1 − z_t) = −softplus(k_t) and log z_t = k_t − softplus(k_t) for k_t = W_z x_t + b_z (never
  log 0), and log h̃_t = log g(a_t) = log(a_t + ½) or a_t − softplus(a_t). No product Π(1 − z_j) is ever formed, so
  nothing underflows however long T is: a*_t only grows more negative, and logcumsumexp subtracts its running
  maximum before exponentiating. On a GPU the cumulative sums take ⌈log₂ T⌉ parallel steps; torch's CPU
  kernel walks T cheap additions in a vectorised loop, but none of them is a matrix product. ``LogSpaceScan``
  runs it as one autograd node with the backward written out (the adjoint is a linear scan backwards in time).
- The **step path** is ``step``: one character at a time from a fixed-size state h (L, N, H), for sampling.
- The **trace path** is ``trace``: the step path for every t, recording z_t, h̃_t and h_t per layer
  (a ``rnnviz.core.recurrent.Trace`` of kind "mingru"), for inspection.

**Why h̃ > 0 (the g trick) and not a signed candidate.** Log space needs a logarithm of every term
z_k ⊙ h̃_k. With g every term is positive: one logcumsumexp, no sign bookkeeping, and the result is a sum of
positive numbers, exact to a few ulps. A signed h̃ needs two scans, one over the positive and one over the
negative terms, and h_t = exp(P_t) − exp(N_t): when the two nearly balance (an h_t near 0, common in a
trained model) the subtraction cancels catastrophically (relative error ≈ ulp · (e^P + e^N)/|e^P − e^N|),
and so does its gradient. g also gives each layer the nonlinearity that a stack needs: with a linear h̃,
a stack of minGRUs would read its inputs only through gated sums. The carried h_0 may have any sign (a clamp,
or a state set by hand): its term exp(a*_t) ⊙ h_0 is added outside the logarithm.

The one rounding to know about: a*_t + logcumsumexp(…) adds two numbers of size |a*_t|, so fp32 loses about
|a*_t| · 6·10⁻⁸ of relative precision in h_t (|a*_t| ≈ 0.7 T with fresh gates: 3·10⁻⁶ at T = 64).

Parameters per layer ℓ: ``weight_ih_l{ℓ}`` (2H, D) and ``bias_ih_l{ℓ}`` (2H,), torch's names, with rows 0…H−1
for the gate (W_z, b_z) and rows H…2H−1 for the candidate (W_h, b_h); there is no ``weight_hh``. Layers are
batch-first: x (N, T, D), states (L, N, H). Dropout between layers applies in training only, as in ``nn.GRU``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from rnnviz.core.recurrent import Trace

TRACE_FIELDS = ("z", "h_tilde", "h")  # recorded per layer and step, in the order mingru_cell returns them


class MinGRUStep(NamedTuple):
    """Intermediates of one minGRU step."""

    z_t: Tensor  # (N, H) update gate σ(W_z x_t + b_z)
    h_tilde_t: Tensor  # (N, H) candidate g(W_h x_t + b_h) > 0
    h_t: Tensor  # (N, H)


def g(a: Tensor) -> Tensor:
    """g(a) = a + ½ for a ≥ 0, σ(a) for a < 0: continuous, increasing and positive."""
    return torch.where(a >= 0, a.clamp_min(0) + 0.5, torch.sigmoid(a))


def log_g(a: Tensor) -> Tensor:
    """log g(a), computed without ever taking log of 0: log(a + ½) for a ≥ 0, log σ(a) = a − softplus(a) for a < 0."""
    return torch.where(a >= 0, torch.log(a.clamp_min(0) + 0.5), a - F.softplus(a))  # log σ(a) = a − softplus(a)


def mingru_cell(x_t: Tensor, h_prev: Tensor, w_ih: Tensor, b_ih: Tensor | None = None) -> MinGRUStep:
    """One minGRU step; W_ih = [W_z; W_h] is (2H, D).

    [k_t; a_t] = W_ih x_t + b_ih
    z_t = σ(k_t),  h̃_t = g(a_t)
    h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t
    """
    pre = x_t @ w_ih.t()  # (N, 2H)
    if b_ih is not None:
        pre = pre + b_ih
    k_t, a_t = pre.chunk(2, dim=-1)
    z_t, h_tilde_t = torch.sigmoid(k_t), g(a_t)
    return MinGRUStep(z_t=z_t, h_tilde_t=h_tilde_t, h_t=(1 - z_t) * h_prev + z_t * h_tilde_t)


def scan_log_space(k: Tensor, a: Tensor, h0: Tensor) -> Tensor:
    """Every h_t of one layer at once from the pre-activations k (gate) and a (candidate), each (N, T, H),
    and h_0 (N, H): the parallel scan of the module docstring, differentiated by torch's autograd.
    Returns (N, T, H). ``LogSpaceScan`` is the same scan with a hand-written backward (the fast path)."""
    log_keep = -F.softplus(k)  # log(1 − z_t), (N, T, H)
    log_write = k + log_keep + log_g(a)  # log z_t + log h̃_t, with log σ(k) = k − softplus(k), (N, T, H)
    a_star = torch.cumsum(log_keep, dim=1)  # a*_t = log A_t, (N, T, H)
    h = torch.exp(a_star + torch.logcumsumexp(log_write - a_star, dim=1))  # Σ_k (A_t / A_k) z_k h̃_k
    return h + torch.exp(a_star) * h0.unsqueeze(1)  # + A_t h_0, outside the log: h_0 may be any sign


def _reverse_logcumsumexp(x: Tensor) -> Tensor:
    """log Σ_{s ≥ t} exp(x_s) along dim 1."""
    return torch.logcumsumexp(x.flip(1), dim=1).flip(1)


def adjoint_log_space(grad: Tensor, keep: Tensor, a_star: Tensor) -> Tensor:
    """λ_t = Σ_{s ≥ t} (A_s / A_t) g_s for every t at once, in log space: λ has both signs, so the positive and
    the negative parts of g are scanned separately (as torch's own logcumsumexp backward does) and subtracted,
    which costs up to an ulp of their size. ``keep`` (1 − z) is unused: A comes from a* = log A."""
    up = _reverse_logcumsumexp(torch.log(grad.clamp_min(0)).add_(a_star)).sub_(a_star).exp_()
    down = _reverse_logcumsumexp(torch.log(grad.neg().clamp_min_(0)).add_(a_star)).sub_(a_star).exp_()
    return up.sub_(down)


def adjoint_loop(grad: Tensor, keep: Tensor, a_star: Tensor) -> Tensor:
    """The same λ by its recurrence λ_t = g_t + (1 − z_{t+1}) λ_{t+1}, one fused multiply-add per step from t = T
    down to 1: exact, and on a CPU cheaper than two log-space scans (bench/mingru_speed.py)."""
    lam = torch.empty_like(grad)
    acc = lam[:, -1] = grad[:, -1]
    for t in range(grad.size(1) - 2, -1, -1):
        acc = lam[:, t] = torch.addcmul(grad[:, t], keep[:, t + 1], acc)
    return lam


class LogSpaceScan(torch.autograd.Function):
    """``scan_log_space`` as one autograd node: the forward in place, and the backward written out.

    The backward is the recurrence's adjoint, itself a linear scan run backwards in time: with g_t = ∂L/∂h_t,

        λ_t = g_t + (1 − z_{t+1}) λ_{t+1} = Σ_{s ≥ t} (A_s / A_t) g_s         (λ_T = g_T)
        ∂L/∂k_t = λ_t ⊙ z_t (1 − z_t) ⊙ (h̃_t − h_{t-1}),   ∂L/∂a_t = λ_t ⊙ z_t ⊙ g′(a_t),   ∂L/∂h_0 = (1 − z_1) ⊙ λ_1

    with g′(a) = 1 for a ≥ 0 and h̃(1 − h̃) for a < 0. λ runs as ``adjoint_log_space`` (parallel, ⌈log₂ T⌉
    deep) on an accelerator and as ``adjoint_loop`` (T multiply-adds, exact) on a CPU, where every number of a
    log-space scan pays an exp and a log and the loop is the faster (bench/mingru_speed.py). Either way the node
    saves six tensors, where autograd through ``scan_log_space`` keeps a dozen.
    """

    @staticmethod
    def forward(ctx, k: Tensor, a: Tensor, h0: Tensor) -> Tensor:
        z = torch.sigmoid(k)  # (N, T, H)
        log_keep = F.softplus(k).neg_()  # log(1 − z_t)
        positive = a >= 0
        h_tilde = torch.where(positive, a + 0.5, torch.sigmoid(a))  # g(a_t) > 0 (σ may round to 0: log → −inf)
        a_star = torch.cumsum(log_keep, dim=1)  # a*_t = log A_t
        log_write = torch.log(h_tilde).add_(k).add_(log_keep).sub_(a_star)  # log z_k h̃_k − a*_k
        h = torch.logcumsumexp(log_write, dim=1).add_(a_star).exp_()
        h.addcmul_(a_star.exp(), h0.unsqueeze(1))  # + A_t h_0
        ctx.save_for_backward(z, h_tilde, positive, a_star, h, h0)
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        z, h_tilde, positive, a_star, h, h0 = ctx.saved_tensors
        keep = 1 - z
        adjoint = adjoint_loop if grad.device.type == "cpu" else adjoint_log_space
        lam = adjoint(grad, keep, a_star)  # λ_t, (N, T, H)
        h_prev = torch.cat([h0.unsqueeze(1), h[:, :-1]], dim=1)  # h_{t-1}
        lam_z = lam * z
        grad_k = (h_tilde - h_prev).mul_(lam_z).mul_(keep)
        grad_a = torch.where(positive, lam_z, lam_z * h_tilde * (1 - h_tilde))
        return grad_k, grad_a, lam[:, 0] * keep[:, 0]


def scan_sequential(k: Tensor, a: Tensor, h0: Tensor) -> Tensor:
    """The same h_t (N, T, H) by the recurrence, one t after another: the reference the scan is tested against."""
    z, h_tilde = torch.sigmoid(k), g(a)
    h, out = h0, []
    for t in range(k.size(1)):
        h = (1 - z[:, t]) * h + z[:, t] * h_tilde[:, t]
        out.append(h)
    return torch.stack(out, dim=1)


def critical_path_scan(length: int) -> int:
    """Sequential steps from the first token to the last in a parallel scan over T tokens: ⌈log₂ T⌉ (0 for T = 1)."""
    return math.ceil(math.log2(length)) if length > 1 else 0


class MinGRU(nn.Module):
    """Stacked minGRU layers, batch-first: ``forward(x, state) -> (output (N, T, H), h_T (L, N, H))``."""

    kind = "mingru"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, dropout: float = 0.0,
                 bias: bool = True):
        super().__init__()
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError("input size, hidden size and layers must all be at least 1")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {dropout}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.dropout = dropout if num_layers > 1 else 0.0
        self.bias = bias
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size
            self.register_parameter(f"weight_ih_l{layer}", nn.Parameter(torch.empty(2 * hidden_size, width)))
            self.register_parameter(f"bias_ih_l{layer}",
                                    nn.Parameter(torch.empty(2 * hidden_size)) if bias else None)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """U(−1/√H, 1/√H) for every weight and bias, as torch's own recurrent layers."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            p.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, dropout={self.dropout}"

    def layer_params(self, layer: int) -> tuple[Tensor, Tensor | None]:
        """(W_ih, b_ih) of one layer: W_ih = [W_z; W_h] is (2H, D), b_ih (2H,) or None."""
        return getattr(self, f"weight_ih_l{layer}"), getattr(self, f"bias_ih_l{layer}")

    def zero_state(self, batch: int, device: torch.device | str | None = None) -> Tensor:
        """h_0 of zeros, (L, N, H)."""
        w = self.weight_ih_l0
        return torch.zeros(self.num_layers, batch, self.hidden_size, device=device or w.device, dtype=w.dtype)

    def _check(self, x: Tensor, state: Tensor | None) -> Tensor:
        if x.dim() != 3 or x.size(-1) != self.input_size:
            raise ValueError(f"expected input of shape (N, T, {self.input_size}), got {tuple(x.shape)}")
        if state is None:
            return self.zero_state(x.size(0), x.device)
        if isinstance(state, tuple) or state.shape != (self.num_layers, x.size(0), self.hidden_size):
            shape = tuple(state.shape) if isinstance(state, Tensor) else "a tuple"
            raise ValueError(f"a minGRU state is h_0 of shape {(self.num_layers, x.size(0), self.hidden_size)}, "
                             f"got {shape}")
        return state

    def forward(self, x: Tensor, state: Tensor | None = None, parallel: bool = True) -> tuple[Tensor, Tensor]:
        """Output h_t of the top layer (N, T, H) and the final state h_T (L, N, H).

        ``parallel`` (the default) computes each layer with the log-space scan; False runs the same
        recurrence one step at a time (the reference, and the baseline of bench/mingru_speed.py).
        """
        h0 = self._check(x, state)
        scan = LogSpaceScan.apply if parallel else scan_sequential
        finals, layer_input = [], x
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout and self.training:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
            w, b = self.layer_params(layer)
            k, a = F.linear(layer_input, w, b).chunk(2, dim=-1)  # (N, T, H) each: all t in one product
            layer_input = scan(k, a, h0[layer])  # (N, T, H)
            finals.append(layer_input[:, -1])
        return layer_input, torch.stack(finals)

    def step(self, x_t: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """One step of every layer from the fixed-size state: x_t (N, D) → (top h_t (N, H), state (L, N, H))."""
        h0 = self._check(x_t.unsqueeze(1), state)
        new, inp = [], x_t
        for layer in range(self.num_layers):
            inp = mingru_cell(inp, h0[layer], *self.layer_params(layer)).h_t
            new.append(inp)
        return inp, torch.stack(new)

    def trace(self, x: Tensor, state: Tensor | None = None) -> Trace:
        """Run x (N, T, D) step by step and record z_t, h̃_t and h_t; each value is (L, T, N, H).

        Differentiable, and runs as in eval mode (no dropout between layers), as the other kinds' trace path."""
        h0 = self._check(x, state)
        per_layer: dict[str, list[Tensor]] = {name: [] for name in TRACE_FIELDS}
        layer_input = x  # (N, T, D)
        for layer in range(self.num_layers):
            w, b = self.layer_params(layer)
            h, steps = h0[layer], []
            for t in range(x.size(1)):
                step = mingru_cell(layer_input[:, t], h, w, b)
                h = step.h_t
                steps.append(step)
            for name, column in zip(TRACE_FIELDS, zip(*steps)):
                per_layer[name].append(torch.stack(column))  # (T, N, H)
            layer_input = per_layer["h"][-1].transpose(0, 1)  # (N, T, H)
        values = {name: torch.stack(layers) for name, layers in per_layer.items()}  # (L, T, N, H)
        return Trace(kind=self.kind, h0=h0, c0=None, values=values)


def count_parameters(vocab_size: int, layers: int, hidden: int, embed_dim: int | None) -> int:
    """Parameters of a minGRU CharModel, by hand: embedding V·E (or none with one-hot, D = V), per layer
    2H·(D + 1) with D = E (or V) for the first layer and H after it, readout H·V + V."""
    width = embed_dim if embed_dim else vocab_size
    total = vocab_size * embed_dim if embed_dim else 0
    for layer in range(layers):
        total += 2 * hidden * ((width if layer == 0 else hidden) + 1)
    return total + hidden * vocab_size + vocab_size
