"""Why gradients vanish or explode in a recurrent network, measured on real matrices and real Jacobians.

Every curve here is computed from tensors: powers of a seeded W_hh, the Jacobians of a real tanh RNN run
through ``make_recurrent``'s trace path, a short SGD run with and without clipping, and the forget gates
of a real LSTM. The theory lines σ₁^k are returned beside the measurements, never instead of them.

Symbols, as on the page:

- Repeated multiplication (Eq. 8.13): ‖W_hh^k v‖ ≤ σ₁^k ‖v‖, with equality for the top right singular
  vector v of a symmetric W_hh (then W_hh = QΛQᵀ and σ₁ = max |λ|).
- Through the nonlinearity (Eq. 8.12): ∂h_T/∂h_k = ∏_{t=k+1}^{T} diag(tanh′(a_t)) W_hh, with
  tanh′(a_t) = 1 − h_t².
- The gradient of a loss at T is a sum over steps (Eq. 8.8):
  ∂L_T/∂W_hh = Σ_t δ_t h_{t−1}ᵀ,  δ_t = ∂L_T/∂a_t = tanh′(a_t) ⊙ (∂h_T/∂h_t)ᵀ ∂L_T/∂h_T.
- Clipping (Eq. 8.14): g ← θ g / ‖g‖ when ‖g‖ > θ, which keeps the direction of g.
- The LSTM's cell path (Eq. 8.17): c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t, so along that path
  ∂c_T/∂c_k = ∏_{t=k+1}^{T} diag(f_t).

Gradient work runs in float64 so that products of 300 Jacobians do not underflow to zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rnnviz.core.recurrent import RecurrentLSTM, RecurrentRNN, Trace, make_recurrent

MATRIX_KINDS = ("symmetric", "gaussian")  # W_hh = QΛQᵀ (σ₁ is reached), or a general Gaussian (σ₁ is a bound)
VECTOR_KINDS = ("top", "random")  # the top right singular vector of W_hh, or a random unit vector
DTYPE = torch.float64


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high} (got {value}).")


def scaled_w_hh(hidden: int, sigma: float, matrix: str = "symmetric", seed: int = 0) -> Tensor:
    """A seeded random W_hh (H, H) rescaled so that its largest singular value is exactly σ₁.

    "symmetric": (A + Aᵀ)/2 for a Gaussian A, so W_hh = QΛQᵀ and ‖W_hh^k v₁‖ = σ₁^k along the top
    vector v₁.
    "gaussian": A itself; non-normal, so σ₁^k is only an upper bound on ‖W_hh^k v‖.
    The same seed gives the same matrix up to scale for every σ₁.
    """
    if matrix not in MATRIX_KINDS:
        raise ValueError(f"matrix must be one of {', '.join(MATRIX_KINDS)}, not {matrix!r}")
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(hidden, hidden, generator=gen, dtype=DTYPE)  # (H, H)
    base = (a + a.T) / 2 if matrix == "symmetric" else a
    return base * (sigma / torch.linalg.matrix_norm(base, ord=2))


def start_vector(w_hh: Tensor, vector: str = "top", seed: int = 0) -> Tensor:
    """A unit vector v (H,): W_hh's top right singular vector, or a seeded random direction."""
    if vector not in VECTOR_KINDS:
        raise ValueError(f"vector must be one of {', '.join(VECTOR_KINDS)}, not {vector!r}")
    if vector == "top":
        return torch.linalg.svd(w_hh).Vh[0]  # (H,): W_hh v₁ = σ₁ u₁
    gen = torch.Generator().manual_seed(seed + 1)
    v = torch.randn(w_hh.shape[0], generator=gen, dtype=w_hh.dtype)
    return v / v.norm()


@dataclass(frozen=True)
class PowerConfig:
    """Repeated multiplication by one W_hh; frozen so it can key a cache."""

    hidden: int = 64  # H, 4…256
    sigma: float = 1.05  # σ₁, the largest singular value W_hh is rescaled to
    steps: int = 150  # K, the largest power of W_hh shown
    matrix: str = "symmetric"  # "symmetric" or "gaussian", see scaled_w_hh
    vector: str = "top"  # "top" singular vector or "random" unit vector
    seed: int = 0

    def __post_init__(self):
        _check_range("The hidden size H", self.hidden, 2, 1024)
        _check_range("σ₁", self.sigma, 0.01, 10.0)
        _check_range("K", self.steps, 1, 2000)
        if self.matrix not in MATRIX_KINDS or self.vector not in VECTOR_KINDS:
            raise ValueError(f"unknown matrix {self.matrix!r} or vector {self.vector!r}")


@dataclass(frozen=True)
class PowerCurve:
    """‖W_hh^k v‖ for k = 0…K, measured, beside the theory line σ₁^k."""

    sigma: float
    k: np.ndarray  # (K+1,) 0…K
    measured: np.ndarray  # (K+1,) ‖W_hh^k v‖ by repeated multiplication
    theory: np.ndarray  # (K+1,) σ₁^k


def power_curve(config: PowerConfig) -> PowerCurve:
    """Multiply v by W_hh K times and record the norm after each product."""
    w_hh = scaled_w_hh(config.hidden, config.sigma, config.matrix, config.seed)
    v = start_vector(w_hh, config.vector, config.seed)
    norms = [v.norm()]
    for _ in range(config.steps):
        v = w_hh @ v
        norms.append(v.norm())
    k = np.arange(config.steps + 1)
    return PowerCurve(config.sigma, k, torch.stack(norms).numpy(), config.sigma ** k.astype(float))


def power_curves(config: PowerConfig, sigmas: Sequence[float]) -> list[PowerCurve]:
    """``power_curve`` for every σ₁ in ``sigmas`` at the H, K, kind of W_hh, start vector and seed of ``config``
    (its own σ₁ is not used), all at once: each σ₁'s own W_hh multiplies its own v K times, as a batch of
    matrix–vector products instead of one loop per σ₁. The matrices are the same ones ``scaled_w_hh`` makes (one
    seeded base, rescaled), so the curves equal power_curve's to rounding."""
    sigma = torch.tensor([float(s) for s in sigmas], dtype=DTYPE)  # (S,)
    for value in sigma.tolist():
        _check_range("σ₁", value, 0.01, 10.0)
    gen = torch.Generator().manual_seed(config.seed)
    a = torch.randn(config.hidden, config.hidden, generator=gen, dtype=DTYPE)  # as scaled_w_hh draws it
    base = (a + a.T) / 2 if config.matrix == "symmetric" else a
    w_hh = base * (sigma / torch.linalg.matrix_norm(base, ord=2))[:, None, None]  # (S, H, H)
    # The top right singular vector is the same for every positive rescaling of one matrix (up to its sign, which
    # no norm sees), so one v serves every σ₁.
    v = start_vector(base, config.vector, config.seed).expand(len(sigma), -1)  # (S, H)
    norms = [v.norm(dim=1)]
    for _ in range(config.steps):
        v = torch.einsum("sij,sj->si", w_hh, v)
        norms.append(v.norm(dim=1))
    measured = torch.stack(norms, dim=1).numpy()  # (S, K + 1)
    k = np.arange(config.steps + 1)
    return [PowerCurve(float(s), k, measured[i], float(s) ** k.astype(float)) for i, s in enumerate(sigma.tolist())]


# --- Through the tanh nonlinearity -------------------------------------------------------------------


@dataclass(frozen=True)
class TanhRNNConfig:
    """A real tanh RNN with the W_hh of PowerConfig, run forward on random inputs."""

    hidden: int = 64  # H
    sigma: float = 1.05  # σ₁ of W_hh
    steps: int = 150  # T, the sequence length
    input_scale: float = 1.0  # standard deviation of each component of x_t
    input_weight_scale: float = 1.0  # W_ih entries are N(0, s²/D): s = 1 keeps W_ih x_t of unit size
    input_size: int = 8  # D
    matrix: str = "symmetric"
    seed: int = 0

    def __post_init__(self):
        _check_range("The hidden size H", self.hidden, 2, 1024)
        _check_range("σ₁", self.sigma, 0.01, 10.0)
        _check_range("T", self.steps, 1, 2000)
        _check_range("The input scale", self.input_scale, 0.0, 100.0)
        _check_range("The input weight scale", self.input_weight_scale, 0.0, 100.0)
        if self.matrix not in MATRIX_KINDS:
            raise ValueError(f"matrix must be one of {', '.join(MATRIX_KINDS)}, not {self.matrix!r}")


def tanh_rnn(config: TanhRNNConfig) -> RecurrentRNN:
    """The engine's tanh RNN (float64) with W_hh = scaled_w_hh(…), a seeded W_ih and zero biases."""
    rnn = make_recurrent("rnn", config.input_size, config.hidden, nonlinearity="tanh").to(DTYPE)
    gen = torch.Generator().manual_seed(config.seed + 2)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(scaled_w_hh(config.hidden, config.sigma, config.matrix, config.seed))
        w_ih = torch.randn(config.hidden, config.input_size, generator=gen, dtype=DTYPE)
        rnn.weight_ih_l0.copy_(w_ih * config.input_weight_scale / math.sqrt(config.input_size))
        rnn.bias_ih_l0.zero_()
        rnn.bias_hh_l0.zero_()
    return rnn


def random_inputs(steps: int, input_size: int, scale: float, seed: int) -> Tensor:
    """x_1…x_T as one sequence (1, T, D) of N(0, scale²) entries."""
    gen = torch.Generator().manual_seed(seed + 3)
    return torch.randn(1, steps, input_size, generator=gen, dtype=DTYPE) * scale


def rnn_step_jacobians(rnn: RecurrentRNN, trace: Trace) -> Tensor:
    """J_t = ∂h_t/∂h_{t−1} = diag(tanh′(a_t)) W_hh for t = 1…T of the first sequence, (T, H, H)."""
    tanh_prime = 1 - trace["h"][0, :, 0] ** 2  # (T, H): tanh′(a_t) = 1 − tanh(a_t)²
    return tanh_prime.unsqueeze(-1) * rnn.weight_hh_l0.detach()  # (T, H, H), row j scaled by tanh′(a_t)_j


def backward_products(jacobians: Tensor) -> Tensor:
    """∂h_T/∂h_{T−j} = J_T J_{T−1} ⋯ J_{T−j+1} for j = 0…T, (T+1, H, H); j = 0 is the identity."""
    steps, hidden, _ = jacobians.shape
    product = torch.eye(hidden, dtype=jacobians.dtype)
    products = [product]
    for t in range(steps - 1, -1, -1):
        product = product @ jacobians[t]
        products.append(product)
    return torch.stack(products)


def spectral_norms(matrices: Tensor) -> Tensor:
    """‖M‖₂, the largest singular value, of each matrix in a (B, H, H) stack: √λ_max(MᵀM)."""
    return torch.linalg.eigvalsh(matrices.mT @ matrices)[:, -1].clamp_min(0).sqrt()


# Exact spectral norms cost O(H³) each: the norms are measured at every lag up to this many, and at this many
# evenly spaced lags (first and last included) beyond, so that a slider answers quickly. At H = 64 and
# T = 300 that is every second lag; on a log axis the line through them is indistinguishable.
MAX_MEASURED_LAGS = 151
# Above H = 64 fewer still: 300 exact norms of 256 × 256 matrices take seconds on two cores.
FULL_LAGS_UP_TO_HIDDEN = 64
SAMPLED_LAGS = 60


def measured_lags(steps: int, hidden: int) -> np.ndarray:
    """The lags j at which ‖∂h_T/∂h_{T−j}‖ is measured: all of 0…T when few enough, else evenly spaced ones."""
    budget = MAX_MEASURED_LAGS if hidden <= FULL_LAGS_UP_TO_HIDDEN else SAMPLED_LAGS
    if steps + 1 <= budget:
        return np.arange(steps + 1)
    return np.unique(np.linspace(0, steps, budget).round().astype(int))


def product_norms(jacobians: Tensor, lags: np.ndarray | None = None) -> np.ndarray:
    """‖J_T ⋯ J_{T−j+1}‖₂ at each lag j in ``lags`` (default 0…T).

    The running product is renormalised after each step and its scale kept as a logarithm, so that a
    product far below float64's range keeps a measured direction; a norm reads 0 only when its value
    itself is below 10⁻³⁰⁸.
    """
    steps, hidden, _ = jacobians.shape
    wanted = set((np.arange(steps + 1) if lags is None else lags).tolist())
    product = torch.eye(hidden, dtype=jacobians.dtype)
    log_scale = 0.0
    units, log_scales = [], []
    for j in range(steps + 1):
        if j > 0:
            product = product @ jacobians[steps - j]  # now J_T ⋯ J_{T−j+1}
            size = float(torch.linalg.matrix_norm(product))
            if size == 0.0:  # an exactly singular product stays zero from here on
                log_scale = -math.inf
            else:
                product = product / size
                log_scale += math.log(size)
        if j in wanted:
            units.append(product)
            log_scales.append(log_scale)
    return spectral_norms(torch.stack(units)).numpy() * np.exp(np.array(log_scales))


@dataclass(frozen=True)
class DecayCurves:
    """‖∂h_T/∂h_k‖ against the lag T − k, with and without tanh′, and the theory σ₁^(T−k)."""

    lag: np.ndarray  # the measured lags T − k, see measured_lags
    linear: np.ndarray  # ‖W_hh^(T−k)‖₂ at each lag: the same run with tanh′ ≡ 1
    with_tanh: np.ndarray  # ‖∂h_T/∂h_k‖₂ of the real tanh RNN at each lag
    theory: np.ndarray  # σ₁^(T−k) at each lag
    tanh_prime: np.ndarray  # (T·H,) every tanh′(a_t) value met along the way

    @property
    def mean_tanh_prime(self) -> float:
        return float(self.tanh_prime.mean())


def decay_curves(config: TanhRNNConfig) -> DecayCurves:
    """Run the tanh RNN forward, then multiply its true Jacobians backwards from T."""
    rnn = tanh_rnn(config)
    with torch.no_grad():
        trace = rnn.trace(random_inputs(config.steps, config.input_size, config.input_scale, config.seed))
    jacobians = rnn_step_jacobians(rnn, trace)  # (T, H, H)
    w_hh = rnn.weight_hh_l0.detach()
    lag = measured_lags(config.steps, config.hidden)
    return DecayCurves(
        lag=lag,
        linear=product_norms(w_hh.expand_as(jacobians), lag),
        with_tanh=product_norms(jacobians, lag),
        theory=config.sigma ** lag.astype(float),
        tanh_prime=(1 - trace["h"][0, :, 0] ** 2).flatten().numpy(),
    )


# --- Per-step contributions of a loss at T -------------------------------------------------------------


def loss_target(hidden: int, seed: int) -> Tensor:
    """The target y (1, H) of the loss L_T = ½‖h_T − y‖², a seeded point inside the tanh range."""
    gen = torch.Generator().manual_seed(seed + 4)
    return torch.rand(1, hidden, generator=gen, dtype=DTYPE) * 1.6 - 0.8


def per_step_gradients(rnn: RecurrentRNN, x: Tensor, target: Tensor) -> Tensor:
    """The contribution of each step t to ∂L_T/∂W_hh, (T, H, H); they sum to autograd's W_hh.grad.

    L_T = ½‖h_T − y‖². Backwards from T: δ_t = tanh′(a_t) ⊙ ∂L_T/∂h_t, contribution_t = δ_t h_{t−1}ᵀ
    and ∂L_T/∂h_{t−1} = W_hhᵀ δ_t.
    """
    with torch.no_grad():
        trace = rnn.trace(x)
        h = trace["h"][0, :, 0]  # (T, H)
        h_prev = torch.cat([trace.h0[0], h[:-1]])  # (T, H): h_0 … h_{T−1}
        w_hh = rnn.weight_hh_l0
        grad_h = h[-1] - target[0]  # (H,) ∂L_T/∂h_T
        contributions = []
        for t in range(h.shape[0] - 1, -1, -1):
            delta = (1 - h[t] ** 2) * grad_h  # (H,) ∂L_T/∂a_t
            contributions.append(torch.outer(delta, h_prev[t]))  # (H, H)
            grad_h = w_hh.T @ delta
    return torch.stack(contributions[::-1])


@dataclass(frozen=True)
class Contributions:
    """‖contribution_t‖_F for t = 1…T and the norm of their sum, the gradient SGD sees."""

    t: np.ndarray  # (T,) 1…T
    norms: np.ndarray  # (T,) Frobenius norm of step t's contribution to ∂L_T/∂W_hh
    total_norm: float  # ‖Σ_t contribution_t‖_F

    @property
    def is_zero(self) -> bool:
        """True when every term vanishes, e.g. with no input every h_{t−1} = 0 and so is δ_t h_{t−1}ᵀ."""
        return not self.norms.any()

    def share_of_last(self, steps: int) -> float:
        """The last `steps` steps' share of Σ_t ‖contribution_t‖."""
        total = self.norms.sum()
        return float(self.norms[-steps:].sum() / total) if total > 0 else float("nan")

    def share_of_first(self, steps: int) -> float:
        """The first `steps` steps' share of Σ_t ‖contribution_t‖, summed directly so that tiny shares survive."""
        total = self.norms.sum()
        return float(self.norms[:steps].sum() / total) if total > 0 else float("nan")


def contributions(config: TanhRNNConfig) -> Contributions:
    """Per-step contributions to ∂L_T/∂W_hh for the tanh RNN of ``config``."""
    rnn = tanh_rnn(config)
    x = random_inputs(config.steps, config.input_size, config.input_scale, config.seed)
    per_step = per_step_gradients(rnn, x, loss_target(config.hidden, config.seed))
    norms = torch.linalg.matrix_norm(per_step).numpy()  # Frobenius
    return Contributions(np.arange(1, config.steps + 1), norms, float(per_step.sum(0).norm()))


# --- The LSTM's cell path -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CellPathConfig:
    """A real LSTM run on the same random inputs as TanhRNNConfig with the same seed, H, T and input scale."""

    hidden: int = 64  # H
    steps: int = 150  # T
    forget_bias: float = 1.0  # b_f, the forget gate's bias at initialisation
    input_scale: float = 1.0  # standard deviation of each component of x_t
    input_size: int = 8  # D
    seed: int = 0

    def __post_init__(self):
        _check_range("The hidden size H", self.hidden, 2, 1024)
        _check_range("T", self.steps, 1, 2000)
        _check_range("The forget-gate bias b_f", self.forget_bias, -20.0, 20.0)
        _check_range("The input scale", self.input_scale, 0.0, 100.0)


def lstm_with_forget_bias(config: CellPathConfig) -> RecurrentLSTM:
    """The engine's LSTM (float64) with torch's U(−1/√H, 1/√H) init from the seed, and b_f set.

    b_f is the forget block of bias_ih (torch's order i, f, g, o); the forget block of bias_hh is zeroed,
    so the forget pre-activation starts at b_f.
    """
    hidden = config.hidden
    lstm = make_recurrent("lstm", config.input_size, hidden).to(DTYPE)
    gen = torch.Generator().manual_seed(config.seed + 5)
    bound = 1 / math.sqrt(hidden)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_((torch.rand(p.shape, generator=gen, dtype=DTYPE) * 2 - 1) * bound)
        lstm.bias_ih_l0[hidden : 2 * hidden] = config.forget_bias
        lstm.bias_hh_l0[hidden : 2 * hidden] = 0.0
    return lstm


def cell_path_products(forget_gates: Tensor) -> Tensor:
    """Diagonals of ∂c_T/∂c_{T−j} = ∏_{t=T−j+1}^{T} diag(f_t) for j = 0…T, from f (T, H) → (T+1, H)."""
    ones = torch.ones(1, forget_gates.shape[1], dtype=forget_gates.dtype)
    reversed_cumprod = torch.cumprod(forget_gates.flip(0), dim=0)  # row j−1: f_T ⊙ … ⊙ f_{T−j+1}
    return torch.cat([ones, reversed_cumprod])


@dataclass(frozen=True)
class CellPath:
    """‖∂c_T/∂c_k‖ along the LSTM's cell path against the lag T − k."""

    forget_bias: float
    lag: np.ndarray  # (T+1,)
    cell_path: np.ndarray  # (T+1,) ‖∏ diag(f_t)‖₂ = the largest product over units
    mean_forget: float  # mean f_t over steps and units


def cell_path(config: CellPathConfig) -> CellPath:
    """Run a real LSTM on the same inputs as the tanh RNN and multiply its recorded forget gates."""
    lstm = lstm_with_forget_bias(config)
    with torch.no_grad():
        trace = lstm.trace(random_inputs(config.steps, config.input_size, config.input_scale, config.seed))
    forget = trace["f"][0, :, 0]  # (T, H)
    diagonals = cell_path_products(forget)  # (T+1, H)
    return CellPath(
        forget_bias=config.forget_bias,
        lag=np.arange(config.steps + 1),
        cell_path=diagonals.abs().amax(dim=1).numpy(),  # ‖diag(d)‖₂ = max |d_j|
        mean_forget=float(forget.mean()),
    )


# --- Gradient clipping --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipConfig:
    """A small tanh RNN trained by plain SGD at a deliberately high learning rate on delayed recall.

    The task: x_t ~ N(0, 1), target y_t = x_{t−D}, mean squared error over the steps t ≥ D.
    """

    lr: float = 1.0  # SGD learning rate, high on purpose
    hidden: int = 16  # H
    length: int = 30  # T, steps per sequence
    delay: int = 5  # D
    batch: int = 16  # N
    steps: int = 60  # SGD steps
    seed: int = 0

    def __post_init__(self):
        _check_range("The learning rate", self.lr, 1e-6, 1e3)
        if not 0 < self.delay < self.length:
            raise ValueError(f"The delay D must be between 1 and T − 1 = {self.length - 1} (got {self.delay}).")


@dataclass(frozen=True)
class ClipRun:
    """What one run measured, step by step, until it finished or blew up."""

    threshold: float | None  # θ, or None for the unclipped run
    grad_norms: np.ndarray  # raw ‖g‖ before clipping, per step
    losses: np.ndarray  # loss per step
    blew_up_at: int | None  # first step (1-based) whose loss or gradient was inf or NaN
    clipped_steps: int  # steps where ‖g‖ > θ and clipping acted
    cosine: float | None  # cos(g_raw, g_clipped) on the last clipped step; None if never clipped


def gradient_vector(params: list[Tensor]) -> Tensor:
    """All parameter gradients flattened into one vector g."""
    return torch.cat([p.grad.reshape(-1) for p in params])


def cosine(a: Tensor, b: Tensor) -> float:
    """cos(a, b) = a·b / (‖a‖‖b‖), in float64."""
    a, b = a.to(DTYPE), b.to(DTYPE)
    return float(a @ b / (a.norm() * b.norm()))


def train_for_clipping(config: ClipConfig, threshold: float | None = None) -> ClipRun:
    """SGD on delayed recall, clipped to ‖g‖ ≤ θ = ``threshold`` (None: not clipped); stops at the first inf/NaN.

    Runs with any θ start from the same weights and see the same batches, so they differ only by clipping.
    """
    if threshold is not None:
        _check_range("The threshold θ", threshold, 1e-6, 1e6)
    gen = torch.Generator().manual_seed(config.seed)
    rnn = make_recurrent("rnn", 1, config.hidden)
    head = torch.nn.Linear(config.hidden, 1)
    params = [*rnn.parameters(), *head.parameters()]
    bound = 1 / math.sqrt(config.hidden)
    with torch.no_grad():
        for p in params:
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    opt = torch.optim.SGD(params, lr=config.lr)
    norms, losses, blew_up_at, clipped_steps, last_cosine = [], [], None, 0, None
    for step in range(1, config.steps + 1):
        x = torch.randn(config.batch, config.length, 1, generator=gen)  # (N, T, 1)
        out, _ = rnn(x)  # (N, T, H)
        prediction = head(out)  # (N, T, 1)
        loss = ((prediction[:, config.delay :] - x[:, : -config.delay]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        raw = gradient_vector(params)
        norm = float(raw.norm())
        norms.append(norm)
        losses.append(loss.item())
        if not (math.isfinite(norm) and math.isfinite(losses[-1])):
            blew_up_at = step
            break
        if threshold is not None:
            torch.nn.utils.clip_grad_norm_(params, threshold)
            if norm > threshold:
                clipped_steps += 1
                last_cosine = cosine(raw, gradient_vector(params))
        opt.step()
    return ClipRun(threshold, np.array(norms), np.array(losses), blew_up_at, clipped_steps, last_cosine)
