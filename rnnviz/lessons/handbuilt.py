"""The hand-built AND network: a 3-unit ReLU RNN whose weights are set by hand, run through ``rnn_cell``.

The state remembers the current and the previous bit, plus a constant 1 that acts as a bias:

    h_t = (x_t, x_{t−1}, 1),  h_0 = (0, 0, 1)
    a_t = W_xh x_t + W_hh h_{t−1}
    h_t = ReLU(a_t)
    y_t = ReLU(W_hy h_t) = ReLU(x_t + x_{t−1} − 1) = x_t AND x_{t−1}

with W_xh = (1, 0, 0)ᵀ, W_hh = [[0, 0, 0], [1, 0, 0], [0, 0, 1]] and W_hy = (1, 1, −1). The weights can be
edited and the nonlinearity switched to tanh; an output y_t counts as the bit 1 when y_t ≥ ½.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from rnnviz.core.cells import CellWeights, rnn_cell

DEFAULT_BITS = (0, 1, 0, 1, 1, 1, 0, 1, 1)
MAX_BITS = 24  # longer inputs no longer fit the timeline on a projector
UNITS = 3  # hidden units: current bit, previous bit, constant 1
THRESHOLD = 0.5  # y_t ≥ ½ reads as the bit 1

Vector3 = tuple[float, float, float]


@dataclass(frozen=True)
class HandWeights:
    """The three weight arrays; frozen so a config can key a cache."""

    w_xh: Vector3 = (1.0, 0.0, 0.0)  # W_xh, the column that multiplies x_t
    w_hh: tuple[Vector3, Vector3, Vector3] = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))  # W_hh, by rows
    w_hy: Vector3 = (1.0, 1.0, -1.0)  # W_hy, the row that reads y_t from h_t

    def __post_init__(self):
        shapes = (len(self.w_xh), tuple(len(r) for r in self.w_hh), len(self.w_hy))
        if shapes != (UNITS, (UNITS,) * UNITS, UNITS):
            raise ValueError(f"W_xh, W_hh and W_hy must be 3, 3×3 and 3 numbers, got shapes {shapes}")
        values = (*self.w_xh, *itertools.chain(*self.w_hh), *self.w_hy)
        if not all(math.isfinite(v) for v in values):
            raise ValueError("Every weight must be a finite number.")

    def cell_weights(self) -> CellWeights:
        """W_ih (3, 1) and W_hh (3, 3) in torch's layout, without biases (the constant unit is the bias)."""
        return CellWeights(
            w_ih=torch.tensor(self.w_xh, dtype=torch.float64).reshape(UNITS, 1),
            w_hh=torch.tensor(self.w_hh, dtype=torch.float64),
        )


HAND_SET = HandWeights()


@dataclass(frozen=True)
class HandConfig:
    """One run of the hand-built network."""

    bits: tuple[int, ...] = DEFAULT_BITS  # x_1 … x_T, each 0 or 1
    weights: HandWeights = HAND_SET
    nonlinearity: str = "relu"  # of the hidden state: "relu" (the hand-set design) or "tanh"
    h0: Vector3 = (0.0, 0.0, 1.0)  # h_0: no current bit, no previous bit, the constant 1

    def __post_init__(self):
        if not 1 <= len(self.bits) <= MAX_BITS:
            raise ValueError(f"Enter between 1 and {MAX_BITS} bits (got {len(self.bits)}).")
        if any(b not in (0, 1) for b in self.bits):
            raise ValueError("Every input bit must be 0 or 1.")
        if self.nonlinearity not in ("relu", "tanh"):
            raise ValueError(f"The nonlinearity must be 'relu' or 'tanh', not {self.nonlinearity!r}.")


@dataclass(frozen=True)
class HandStep:
    """Every number of one time step t (1-based), as plain floats for display."""

    t: int
    x_t: int
    x_prev: int  # x_{t−1}; 0 before the first bit
    h_prev: Vector3  # h_{t−1}
    xh: Vector3  # W_xh x_t
    hh: Vector3  # W_hh h_{t−1}
    a_t: Vector3  # W_xh x_t + W_hh h_{t−1}
    h_t: Vector3  # φ(a_t)
    y_pre: float  # W_hy h_t
    y_t: float  # ReLU(W_hy h_t)

    @property
    def expected(self) -> int:
        """x_t AND x_{t−1}."""
        return self.x_t & self.x_prev

    @property
    def output_bit(self) -> int:
        return int(self.y_t >= THRESHOLD)

    @property
    def correct(self) -> bool:
        return self.output_bit == self.expected


@dataclass(frozen=True)
class HandRun:
    config: HandConfig
    steps: tuple[HandStep, ...]

    @property
    def outputs(self) -> list[float]:
        return [s.y_t for s in self.steps]

    @property
    def states(self) -> list[Vector3]:
        return [s.h_t for s in self.steps]

    @property
    def wrong_steps(self) -> list[int]:
        return [s.t for s in self.steps if not s.correct]


def parse_bits(text: str) -> tuple[int, ...]:
    """'0,1,0,1', '0 1 0 1' or '0101' → (0, 1, 0, 1); a ValueError in plain words otherwise."""
    cleaned = text.strip()
    if not cleaned:
        raise ValueError("Enter at least one bit, for example 0,1,0,1,1.")
    tokens = re.split(r"[\s,;]+", cleaned) if re.search(r"[\s,;]", cleaned) else list(cleaned)
    tokens = [tok for tok in tokens if tok]
    bad = sorted({tok for tok in tokens if tok not in ("0", "1")})
    if bad:
        shown = ", ".join(repr(tok[:10]) for tok in bad[:3])
        raise ValueError(f"The input may only hold the bits 0 and 1, separated by commas or spaces; found {shown}.")
    if len(tokens) > MAX_BITS:
        raise ValueError(f"Enter at most {MAX_BITS} bits (got {len(tokens)}).")
    return tuple(int(tok) for tok in tokens)


def format_bits(bits: tuple[int, ...]) -> str:
    return ",".join(str(b) for b in bits)


def _forward(bits: torch.Tensor, config: HandConfig) -> dict[str, torch.Tensor]:
    """Run a batch of bit sequences (N, T) through rnn_cell; every intermediate as (N, T, ·)."""
    weights = config.weights.cell_weights()
    w_hy = torch.tensor(config.weights.w_hy, dtype=torch.float64)  # (3,)
    n, t_len = bits.shape
    h = torch.tensor(config.h0, dtype=torch.float64).expand(n, UNITS)  # (N, 3)
    record: dict[str, list[torch.Tensor]] = {k: [] for k in ("h_prev", "xh", "hh", "a", "h", "y_pre")}
    for t in range(t_len):
        x_t = bits[:, t : t + 1].to(torch.float64)  # (N, 1)
        step = rnn_cell(x_t, h, weights, config.nonlinearity)
        y_pre = step.h_t @ w_hy  # (N,)
        record["h_prev"].append(h)
        record["xh"].append(x_t @ weights.w_ih.t())  # (N, 3), shown apart from the recurrent product
        record["hh"].append(h @ weights.w_hh.t())  # (N, 3)
        record["a"].append(step.a_t)
        record["h"].append(step.h_t)
        record["y_pre"].append(y_pre)
        h = step.h_t
    out = {k: torch.stack(v, dim=1) for k, v in record.items()}  # (N, T, 3) or (N, T)
    out["y"] = torch.relu(out["y_pre"])
    return out


def _vec(row) -> Vector3:
    return tuple(float(v) for v in row)


def run_handbuilt(config: HandConfig = HandConfig()) -> HandRun:
    """Step the network through the config's bits and record every number of every step."""
    bits = torch.tensor([config.bits])
    out = {k: v[0] for k, v in _forward(bits, config).items()}
    steps = []
    for i, x_t in enumerate(config.bits):
        steps.append(
            HandStep(
                t=i + 1,
                x_t=x_t,
                x_prev=config.bits[i - 1] if i > 0 else 0,
                h_prev=_vec(out["h_prev"][i]),
                xh=_vec(out["xh"][i]),
                hh=_vec(out["hh"][i]),
                a_t=_vec(out["a"][i]),
                h_t=_vec(out["h"][i]),
                y_pre=float(out["y_pre"][i]),
                y_t=float(out["y"][i]),
            )
        )
    return HandRun(config, tuple(steps))


@dataclass(frozen=True)
class TruthRow:
    """How the network answers one line of the AND truth table, over every position of every test input."""

    x_prev: int
    x_t: int
    expected: int  # x_t AND x_{t−1}
    y_min: float  # smallest y_t seen for this pair
    y_max: float  # largest y_t seen for this pair
    wrong: int  # positions where the output bit differs from the expected one
    total: int  # positions with this pair

    @property
    def correct(self) -> bool:
        return self.wrong == 0


def truth_table(weights: HandWeights, nonlinearity: str = "relu", length: int = 10) -> tuple[TruthRow, ...]:
    """Check the AND rule on every bit sequence of the given length (2^length inputs), grouped by (x_{t−1}, x_t).

    A recurrent network's answer can depend on more than the last two bits, so one run per table row is not
    enough: every position of every sequence is scored.
    """
    bits = torch.tensor(list(itertools.product((0, 1), repeat=length)))  # (2^length, length)
    y = _forward(bits, HandConfig(bits=(0,), weights=weights, nonlinearity=nonlinearity))["y"].numpy()
    prev = np.concatenate([np.zeros((bits.shape[0], 1), dtype=np.int64), bits[:, :-1].numpy()], axis=1)
    cur = bits.numpy()
    rows = []
    for p, c in itertools.product((0, 1), repeat=2):
        mask = (prev == p) & (cur == c)
        ys = y[mask]
        wrong = int(((ys >= THRESHOLD).astype(int) != (p & c)).sum())
        rows.append(TruthRow(p, c, p & c, float(ys.min()), float(ys.max()), wrong, int(mask.sum())))
    return tuple(rows)


def guess_is_right(guess: Vector3, truth: Vector3, tolerance: float = 0.05) -> tuple[bool, bool, bool]:
    """Quiz mode: each predicted state value counts when it is within ``tolerance`` of h_t."""
    return tuple(abs(g - t) <= tolerance for g, t in zip(guess, truth))
