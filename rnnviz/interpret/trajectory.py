"""The hidden state's path over a passage, projected to 2-D by PCA, and its nearest states in the full space.

With h_t ∈ ℝ^H the state after character t (t = 0 … T−1) and the centred matrix X̃ = X − 1 h̄ᵀ, h̄ = (1/T) Σ_t h_t,
the singular value decomposition X̃ = U S Vᵀ gives the principal axes (the columns of V, the eigenvectors of the
covariance C = X̃ᵀX̃ / (T−1)) and the variances λ_k = s_k² / (T−1) along them. Keeping the first K axes V_K:

    x̃_t = V_Kᵀ (h_t − h̄)              (the coordinates of step t, (K,))
    h_t ≈ h̄ + V_K x̃_t                  (exact when the states span at most K directions around h̄)
    explained_k = λ_k / Σ_j λ_j          (the share of the total variance that axis k explains)

Sign convention: an axis and its negative explain the same variance, and the SVD picks either. Each axis here is
turned so that its largest-|loading| entry is positive (the lowest-numbered unit among loadings within 1e-6 of the
largest), so the same states always give the same picture, and −X gives the same axes with the coordinates negated.

Defined edge cases: fewer than 2 states, fewer states or units than the components asked for, non-finite values
and states that do not vary at all raise ValueError. An axis along which the states do not vary (its singular
value below rounding, s_k ≤ max(T, H)·ε·s_1) explains exactly 0, its coordinates are exactly 0, and the axis itself
is some unit vector orthogonal to the others. When two variances are equal the axes within their plane are not
unique (any rotation of them is as good); the picture then depends on the SVD's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rnnviz.interpret.colortext import visible_char

TIE = 1e-6  # loadings within this share of the largest |loading| count as tied for the sign convention


@dataclass(frozen=True, eq=False)
class Projection:
    """States projected on their first principal axes (the arrays are read-only)."""

    coords: np.ndarray  # (T, K) x̃_t = V_Kᵀ (h_t − h̄)
    mean: np.ndarray  # (H,) h̄
    axes: np.ndarray  # (K, H) V_Kᵀ: orthonormal rows, each with its largest-|loading| entry positive
    explained: np.ndarray  # (K,) λ_k / Σ_j λ_j, the share of the total variance along each axis
    total_variance: float  # Σ_j λ_j = trace of the covariance (divided by T − 1, as np.cov)

    @property
    def rest(self) -> float:
        """The share of the variance that the kept axes do not explain."""
        return max(0.0, 1.0 - float(self.explained.sum()))


def _as_states(states) -> np.ndarray:
    x = np.asarray(states, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"states must be a (T, H) array of one state per character, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("states must be finite numbers (found NaN or infinity)")
    return x


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def project(states, components: int = 2) -> Projection:
    """PCA of ``states`` (T, H): their coordinates on the first ``components`` principal axes (see the module)."""
    x = _as_states(states)
    t, h = x.shape
    if t < 2:
        raise ValueError(f"a trajectory needs at least 2 states to have a spread, got {t}")
    if not 1 <= components <= min(t, h):
        raise ValueError(f"components must be 1 … min(T, H) = {min(t, h)} for {t} states of {h} units, "
                         f"got {components}")
    if not np.ptp(x, axis=0).any():
        raise ValueError("the states do not vary (every state is the same), so there are no axes to project on")
    mean = x.mean(axis=0)  # (H,)
    centred = x - mean  # (T, H)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)  # s: (min(T, H),), vt: (min(T, H), H)
    axes = vt[:components].copy()  # (K, H)
    size = np.abs(axes)
    first = np.argmax(size >= size.max(axis=1, keepdims=True) * (1.0 - TIE), axis=1)  # (K,) first near-largest
    axes *= np.sign(axes[np.arange(components), first])[:, None]
    null = s[:components] <= max(t, h) * np.finfo(np.float64).eps * s[0]  # (K,) no variance along these
    coords = centred @ axes.T  # (T, K)
    coords[:, null] = 0.0
    power = s ** 2  # (min(T, H),) = (T − 1) λ
    explained = np.where(null, 0.0, power[:components] / power.sum())
    return Projection(coords=_frozen(coords), mean=_frozen(mean), axes=_frozen(axes),
                      explained=_frozen(explained), total_variance=float(power.sum() / (t - 1)))


def nearest(states, index: int, k: int = 5, exclude_within: int = 10) -> list[int]:
    """The ``k`` positions whose states are nearest (Euclidean, in all H units) to ``states[index]``, nearest
    first (ties: earlier position first), leaving out every position within ``exclude_within`` characters of
    ``index`` (itself included), so that the answer is not just its own neighbours in the text. Fewer than ``k``
    when fewer positions remain."""
    x = _as_states(states)
    t = x.shape[0]
    if not 0 <= index < t:
        raise ValueError(f"index must be a position 0 … {t - 1}, got {index}")
    if k < 0:
        raise ValueError(f"k must be 0 or more, got {k}")
    if exclude_within < 0:
        raise ValueError(f"exclude_within must be 0 or more characters, got {exclude_within}")
    distance = np.linalg.norm(x - x[index], axis=1)  # (T,)
    candidates = np.flatnonzero(np.abs(np.arange(t) - index) > exclude_within)  # (C,)
    order = np.argsort(distance[candidates], kind="stable")[:k]
    return [int(p) for p in candidates[order]]


def context(text: str, index: int, before: int = 20, after: int = 10, mark: tuple[str, str] = ("⟦", "⟧")) -> str:
    """The text around ``index`` on one line, whitespace drawn visibly (· ↵ →), the character itself between
    ``mark`` and … where the text goes on. Plain text: escape it before putting it into HTML or a plotly hover."""
    if not 0 <= index < len(text):
        raise ValueError(f"index must be a position 0 … {len(text) - 1} of the text, got {index}")
    if before < 0 or after < 0:
        raise ValueError(f"before and after must be 0 or more characters, got {before} and {after}")
    start, end = max(0, index - before), min(len(text), index + 1 + after)

    def shown(part: str) -> str:
        return "".join(visible_char(c) for c in part)

    return ("…" * (start > 0) + shown(text[start:index]) + mark[0] + shown(text[index]) + mark[1]
            + shown(text[index + 1:end]) + "…" * (end < len(text)))
