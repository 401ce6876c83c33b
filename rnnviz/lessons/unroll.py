"""Unrolling and backpropagation through time, measured on a small seeded vanilla RNN.

The forward pass steps ``rnn_cell`` (tanh) T times with one shared W_hh:

    a_t = W_xh x_t + b_xh + W_hh h_{t−1} + b_hh,   h_t = tanh(a_t),   y_t = W_hy h_t + b_y
    L = Σ_{t ∈ S} ½‖y_t − ŷ_t‖²                     (S: the steps where the loss attaches)

BPTT by hand walks back from t = T with δ_t = ∂L/∂a_t:

    ∂L/∂h_t = W_hyᵀ (y_t − ŷ_t) [t ∈ S] + (∂a_{t+1}/∂h_t)ᵀ δ_{t+1}
    δ_t = tanh′(a_t) ⊙ ∂L/∂h_t = (1 − h_t²) ⊙ ∂L/∂h_t
    ∂L/∂W_hh = Σ_t ∂L/∂W_hh|_t = Σ_t δ_t h_{t−1}ᵀ                           (Eq. 8.8)

and each edge h_{t−1} → h_t carries the Jacobian ∂h_t/∂h_{t−1} = diag(tanh′(a_t)) W_hh. In one-to-many
with the previous output fed back as the next input, x_t = y_{t−1} adds a second path, and the Jacobian
becomes diag(tanh′(a_t)) (W_hh + W_xh W_hy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rnnviz.core.cells import CellWeights, rnn_cell

ATTACHMENTS = ("many-to-many", "many-to-one", "one-to-many")
POOLS = ("last", "mean")  # many-to-one reads h_T, or the mean of h_1 … h_T
FEEDS = ("zeros", "previous output")  # one-to-many inputs after the first
MAX_STEPS = 12
MAX_HIDDEN = 8


@dataclass(frozen=True)
class UnrollConfig:
    """A small vanilla RNN and where its loss attaches; frozen so it keys a cache."""

    steps: int = 6  # T, 2–12
    hidden: int = 3  # H
    inputs: int = 2  # D, width of x_t and of y_t (equal, so an output can be fed back as an input)
    attach: str = "many-to-many"  # one of ATTACHMENTS
    pool: str = "last"  # many-to-one: "last" or "mean"
    feed: str = "zeros"  # one-to-many: "zeros" or "previous output"
    gain: float = 1.0  # scales W_hh after the seeded draw; above ~1 the Jacobians grow
    seed: int = 0

    def __post_init__(self):
        if not 2 <= self.steps <= MAX_STEPS:
            raise ValueError(f"T must be between 2 and {MAX_STEPS} (got {self.steps}).")
        if not 1 <= self.hidden <= MAX_HIDDEN:
            raise ValueError(f"The hidden size must be between 1 and {MAX_HIDDEN} (got {self.hidden}).")
        if self.inputs < 1:
            raise ValueError("x_t needs at least one component.")
        if self.attach not in ATTACHMENTS:
            raise ValueError(f"The loss attaches {', '.join(ATTACHMENTS)}; not {self.attach!r}.")
        if self.pool not in POOLS or self.feed not in FEEDS:
            raise ValueError(f"pool must be one of {POOLS} and feed one of {FEEDS}.")
        if not (math.isfinite(self.gain) and self.gain > 0):
            raise ValueError(f"The gain on W_hh must be a positive number (got {self.gain}).")

    @property
    def feeds_back(self) -> bool:
        return self.attach == "one-to-many" and self.feed == "previous output"

    @property
    def loss_steps(self) -> tuple[int, ...]:
        """1-based steps t whose y_t enters the loss (mean-pooling reads every h_t through one output)."""
        if self.attach == "many-to-one":
            return (self.steps,)
        return tuple(range(1, self.steps + 1))


@dataclass
class UnrollNetwork:
    """The seeded weights (float64, so sums agree to ~1e-15) and the fixed inputs and targets."""

    w_xh: Tensor  # (H, D)
    w_hh: Tensor  # (H, H)
    b_xh: Tensor  # (H,)
    b_hh: Tensor  # (H,)
    w_hy: Tensor  # (D, H)
    b_y: Tensor  # (D,)
    x: Tensor  # (T, D), the inputs (one-to-many uses only x_1)
    targets: Tensor  # (T, D), ŷ_t; many-to-one scores only the last row


def build_network(config: UnrollConfig) -> UnrollNetwork:
    """Weights drawn like torch's nn.RNN (uniform ±1/√H) from the config's own generator, then W_hh × gain."""
    gen = torch.Generator().manual_seed(config.seed)
    bound = 1.0 / math.sqrt(config.hidden)
    h, d, t = config.hidden, config.inputs, config.steps

    def uniform(*shape: int) -> Tensor:
        return (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound

    net = UnrollNetwork(
        w_xh=uniform(h, d), w_hh=uniform(h, h), b_xh=uniform(h), b_hh=uniform(h), w_hy=uniform(d, h), b_y=uniform(d),
        x=torch.randn(t, d, generator=gen, dtype=torch.float64),
        targets=torch.randn(t, d, generator=gen, dtype=torch.float64),
    )
    net.w_hh = net.w_hh * config.gain
    return net


@dataclass
class Forward:
    """One differentiable forward pass: h_0 … h_T and the outputs, from the given leaves."""

    h: list[Tensor]  # T + 1 tensors (1, H)
    y: list[Tensor]  # T tensors (1, D), y_t = W_hy h_t + b_y
    loss: Tensor


def forward(config: UnrollConfig, net: UnrollNetwork, w_hh: Tensor | list[Tensor], h0: Tensor | None = None) -> Forward:
    """Run the RNN through ``rnn_cell``. ``w_hh`` is one shared matrix, or one copy per step (to split ∂L/∂W)."""
    copies = w_hh if isinstance(w_hh, list) else [w_hh] * config.steps
    h = torch.zeros(1, config.hidden, dtype=torch.float64) if h0 is None else h0
    hs, ys = [h], []
    for t in range(config.steps):
        if config.attach != "one-to-many" or t == 0:
            x_t = net.x[t : t + 1]  # (1, D)
        elif config.feeds_back:
            x_t = ys[-1]
        else:
            x_t = torch.zeros(1, config.inputs, dtype=torch.float64)
        step = rnn_cell(x_t, h, CellWeights(net.w_xh, copies[t], net.b_xh, net.b_hh), "tanh")
        h = step.h_t  # (1, H)
        hs.append(h)
        ys.append(h @ net.w_hy.t() + net.b_y)  # (1, D)
    if config.attach == "many-to-one":
        read = torch.stack(hs[1:]).mean(0) if config.pool == "mean" else hs[-1]  # (1, H)
        loss = 0.5 * ((read @ net.w_hy.t() + net.b_y - net.targets[-1:]) ** 2).sum()
    else:
        loss = sum(0.5 * ((y - net.targets[t : t + 1]) ** 2).sum() for t, y in enumerate(ys))
    return Forward(hs, ys, loss)


@dataclass(frozen=True)
class UnrollResult:
    """Everything the page shows, as NumPy arrays; steps are 1-based in the names, 0-based in the arrays."""

    config: UnrollConfig
    h: np.ndarray  # (T + 1, H): h_0 … h_T
    jacobians: np.ndarray  # (T, H, H): ∂h_t/∂h_{t−1} for t = 1 … T
    jacobian_norms: np.ndarray  # (T,): spectral norm ‖∂h_t/∂h_{t−1}‖₂
    dl_dh_norms: np.ndarray  # (T,): ‖∂L/∂h_t‖, the gradient that reaches h_t from every later loss
    step_grads: np.ndarray  # (T, H, H): ∂L/∂W_hh|_t = δ_t h_{t−1}ᵀ, from the hand-written backward pass
    autograd_grad: np.ndarray  # (H, H): ∂L/∂W_hh from torch's autograd on the shared parameter
    loss: float

    @property
    def bptt_sum(self) -> np.ndarray:
        return self.step_grads.sum(axis=0)

    @property
    def max_abs_difference(self) -> float:
        """max |Σ_t ∂L/∂W_hh|_t − autograd's ∂L/∂W_hh|, which should sit at rounding level."""
        return float(np.abs(self.bptt_sum - self.autograd_grad).max())

    @property
    def step_grad_norms(self) -> np.ndarray:
        """‖∂L/∂W_hh|_t‖_F for t = 1 … T."""
        return np.linalg.norm(self.step_grads, axis=(1, 2))


def unroll(config: UnrollConfig = UnrollConfig()) -> UnrollResult:
    """Forward once, backpropagate by hand step by step, and check the sum against autograd."""
    net = build_network(config)
    w_hh = net.w_hh.clone().requires_grad_(True)
    run = forward(config, net, w_hh)
    run.loss.backward()
    h = torch.cat(run.h).detach()  # (T + 1, H)
    with torch.no_grad():
        # ∂a_t/∂h_{t−1}: W_hh, plus W_xh W_hy where x_t = y_{t−1} is fed back (t ≥ 2).
        feedback = net.w_xh @ net.w_hy if config.feeds_back else torch.zeros_like(net.w_hh)
        da_dh = [net.w_hh + (feedback if t >= 1 else 0) for t in range(config.steps)]  # index t-1 ↔ step t
        tanh_prime = 1 - h[1:] ** 2  # (T, H)
        jacobians = torch.stack([tanh_prime[t, :, None] * da_dh[t] for t in range(config.steps)])  # (T, H, H)
        direct = _direct_gradients(config, net, run)  # (T, H)
        step_grads, dl_dh_norms = [], []
        carry = torch.zeros(config.hidden, dtype=torch.float64)  # ∂L/∂h_t through h_{t+1}
        for t in reversed(range(config.steps)):
            dl_dh = direct[t] + carry
            delta = tanh_prime[t] * dl_dh  # δ_t = ∂L/∂a_t
            step_grads.append(torch.outer(delta, h[t]))  # δ_t h_{t−1}ᵀ
            dl_dh_norms.append(dl_dh.norm())
            carry = da_dh[t].t() @ delta
        step_grads.reverse()
        dl_dh_norms.reverse()
    return UnrollResult(
        config=config,
        h=h.numpy(),
        jacobians=jacobians.numpy(),
        jacobian_norms=torch.linalg.matrix_norm(jacobians, ord=2).numpy(),
        dl_dh_norms=torch.stack(dl_dh_norms).numpy(),
        step_grads=torch.stack(step_grads).numpy(),
        autograd_grad=w_hh.grad.numpy(),
        loss=run.loss.item(),
    )


def _direct_gradients(config: UnrollConfig, net: UnrollNetwork, run: Forward) -> Tensor:
    """∂L_t/∂h_t through y_t alone (not through later steps), for every t: (T, H)."""
    direct = torch.zeros(config.steps, config.hidden, dtype=torch.float64)
    if config.attach == "many-to-one":
        hs = torch.cat(run.h[1:])  # (T, H)
        read = hs.mean(0) if config.pool == "mean" else hs[-1]
        residual = read @ net.w_hy.t() + net.b_y - net.targets[-1]  # (D,)
        if config.pool == "mean":
            direct[:] = (net.w_hy.t() @ residual) / config.steps
        else:
            direct[-1] = net.w_hy.t() @ residual
    else:
        for t, y in enumerate(run.y):
            direct[t] = net.w_hy.t() @ (y[0] - net.targets[t])
    return direct
