"""Experiment 3: what recurrence costs against attention as the sequence grows.

For a sequence of T vectors of width d, one training step (forward and backward) timed on this machine:

- an LSTM layer runs T sequential steps of O(d²) work, each a small matrix product that needs h_{t-1}:
  time ∝ T, and its state (h_t, c_t) is 2·d numbers whatever T is;
- a minGRU layer (rnnviz.core.mingru) has gates that read x_t only, so all its matrix products run at once,
  as one (T, d) × (d, 2d) product, and the recurrence that is left, h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t,
  is a scan of cheap element-wise operations (in log space): time ∝ T, and its state h_t is d numbers;
- a single-head self-attention layer, softmax(Q Kᵀ/√d) V with Q, K, V = x W_Q, x W_K, x W_V, does O(T²·d)
  work and holds the T×T score matrix: time and peak memory ∝ T², and its key/value cache is 2·T·d numbers.

The critical path from the first token to the last is T sequential steps for the LSTM, ⌈log₂ T⌉ for a parallel
scan (a tree of pairwise combinations; torch's CPU kernel walks the T additions in a loop, but none is a
matrix product), and 1 for attention. Slopes are fitted on log-log axes: log y = slope · log T + intercept.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile

from rnnviz.core.mingru import MinGRU, critical_path_scan

BYTES_PER_FLOAT = 4  # float32 throughout


class SelfAttention(nn.Module):
    """Single-head self-attention, written out so that the T×T matrix is really built (no fused kernel).

    A = softmax(Q Kᵀ / √d), y = A V W_O, with Q, K, V = x W_Q, x W_K, x W_V. No mask: every token sees every
    other, as in an encoder layer.
    """

    def __init__(self, width: int):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.scale = 1.0 / math.sqrt(width)

    def forward(self, x: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """y (N, T, d) and the key/value cache (K, V), each (N, T, d)."""
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # (N, T, d) each
        scores = (q * self.scale) @ k.transpose(1, 2)  # (N, T, T)
        attn = scores.softmax(dim=-1)  # (N, T, T)
        return self.out(attn @ v), (k, v)


def peak_allocated_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes that torch's CPU allocator held during ``fn()``, above what it held before.

    Measured with torch.profiler (profile_memory=True): every allocation and free is a "[memory]" record
    with a signed size; the peak is the highest running sum. Memory a library allocates on its own, outside
    torch's allocator (such as a oneDNN scratch pad), is not seen.
    """
    # Kineto writes two "USDT" lines to stderr per profile unless its log level is raised; a user's own
    # KINETO_LOG_LEVEL still wins.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    records = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    running = peak = 0
    for _, nbytes in records:
        running += nbytes
        peak = max(peak, running)
    return peak


def fit_loglog(lengths, values) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line log y = slope · log T + intercept."""
    if len(lengths) < 2:
        raise ValueError("A slope needs at least two sizes.")
    slope, intercept = np.polyfit(np.log(np.asarray(lengths, float)), np.log(np.asarray(values, float)), 1)
    return float(slope), float(intercept)


@dataclass(frozen=True)
class CostConfig:
    """The measurement's sizes and safety caps; frozen so it keys a cache."""

    width: int = 128  # d, the width of both layers
    min_length: int = 64  # the first T
    max_length: int = 8192  # the last T asked for; T doubles from min_length
    repeats: int = 3  # timed forward passes per size, after one warm-up; the median is reported
    time_cap_s: float = 60.0  # stop before a size whose predicted time would pass this total
    memory_cap_bytes: int = 2 * 1024**3  # stop before a size whose predicted peak would pass this
    seed: int = 0

    def __post_init__(self):
        if self.width < 1:
            raise ValueError(f"The width d must be at least 1 (got {self.width}).")
        if not 2 <= self.min_length <= self.max_length:
            raise ValueError(
                f"Sequence lengths need 2 ≤ first T ≤ last T (got {self.min_length} and {self.max_length})."
            )
        if self.repeats < 1:
            raise ValueError("Time at least one forward pass per size.")
        if self.time_cap_s <= 0 or self.memory_cap_bytes <= 0:
            raise ValueError("The time and memory caps must be positive.")

    def lengths(self) -> list[int]:
        """T = min_length, 2·min_length, … up to max_length."""
        out = [self.min_length]
        while out[-1] * 2 <= self.max_length:
            out.append(out[-1] * 2)
        return out


@dataclass(frozen=True)
class CostPoint:
    """Measurements at one sequence length T (batch 1, width d); the minGRU fields are None in a point made
    without it (an older cached point, or a synthetic one in a test)."""

    length: int  # T
    lstm_seconds: float  # median time of one training step (forward and backward)
    attention_seconds: float
    lstm_peak_bytes: int  # peak allocated during one training step (torch.profiler)
    attention_peak_bytes: int
    lstm_state_bytes: int  # h_T and c_T, the whole memory the LSTM carries forward
    kv_cache_bytes: int  # K and V, what attention must keep to attend over the past
    seconds: float  # wall time of measuring this point, warm-ups and profiling included
    mingru_seconds: float | None = None  # the minGRU's parallel scan, timed as the two above
    mingru_peak_bytes: int | None = None
    mingru_state_bytes: int | None = None  # h_T, all that the minGRU carries forward

    @property
    def path_lstm(self) -> int:
        """Sequential steps from the first token to the last through the recurrence."""
        return self.length

    @property
    def path_scan(self) -> int:
        """Sequential steps of a parallel scan over T tokens: ⌈log₂ T⌉."""
        return critical_path_scan(self.length)

    @property
    def path_attention(self) -> int:
        """The last token attends to the first directly."""
        return 1


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _training_step(module: nn.Module, x: Tensor) -> Callable[[], object]:
    """One forward and backward pass of ``module`` on x; the parameter gradients are dropped after it, so that
    every step allocates them afresh (and a profiled step sees both their allocation and their release)."""
    params = list(module.parameters())

    def step():
        module(x)[0].sum().backward()
        for p in params:
            p.grad = None

    return step


def measure_cost_at(length: int, width: int, repeats: int, seed: int = 0) -> CostPoint:
    """Training-step time (median of ``repeats``, the three layers taking turns) and peak memory at one T."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    layers = {"lstm": nn.LSTM(width, width, batch_first=True), "mingru": MinGRU(width, width),
              "attention": SelfAttention(width)}
    x = torch.randn(1, length, width)  # (N, T, d)
    with torch.no_grad():
        _, (h, c) = layers["lstm"](x)  # the state each one carries
        _, h_mingru = layers["mingru"](x)
        _, (k, v) = layers["attention"](x)
    state_bytes, mingru_bytes, kv_bytes = h.nbytes + c.nbytes, h_mingru.nbytes, k.nbytes + v.nbytes
    del h, c, h_mingru, k, v
    steps = {name: _training_step(layer, x) for name, layer in layers.items()}
    for step in steps.values():  # warm-up
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):  # take turns, so that a burst of other work hits every layer alike
        for name, step in steps.items():
            times[name].append(_seconds(step))
    peaks = {name: peak_allocated_bytes(step) for name, step in steps.items()}
    return CostPoint(
        length=length,
        lstm_seconds=statistics.median(times["lstm"]),
        attention_seconds=statistics.median(times["attention"]),
        lstm_peak_bytes=peaks["lstm"],
        attention_peak_bytes=peaks["attention"],
        lstm_state_bytes=state_bytes,
        kv_cache_bytes=kv_bytes,
        seconds=time.perf_counter() - start,
        mingru_seconds=statistics.median(times["mingru"]),
        mingru_peak_bytes=peaks["mingru"],
        mingru_state_bytes=mingru_bytes,
    )


@dataclass
class CostSweep:
    """Every measured size, and why the sweep stopped early if it did."""

    config: CostConfig
    points: list[CostPoint] = field(default_factory=list)
    stopped: str | None = None  # plain-words reason, None when every asked size was measured
    threads: int = 1  # torch's intra-op threads during the measurement

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.points)

    def column(self, name: str) -> list[float]:
        return [getattr(p, name) for p in self.points]

    def fit_points(self) -> list[CostPoint]:
        """The larger half of the sizes (at least two): small sizes are dominated by fixed overheads."""
        n = len(self.points)
        return self.points[max(0, min(n - 2, n // 2)) :]

    def has(self, name: str) -> bool:
        """Whether every point measured the column ``name`` (the minGRU's are None in older points)."""
        return bool(self.points) and all(getattr(p, name) is not None for p in self.points)

    def slope(self, name: str) -> float | None:
        """Fitted log-log slope of one measured column over ``fit_points``; None with fewer than 2 sizes, or
        when a point lacks the column."""
        points = self.fit_points()
        if len(points) < 2 or not self.has(name):
            return None
        return fit_loglog([p.length for p in points], [getattr(p, name) for p in points])[0]


def predicted_next(last: CostPoint, next_length: int, repeats: int) -> tuple[float, int]:
    """(seconds, peak bytes) expected at ``next_length``: the LSTM's and the minGRU's times scaled by T,
    attention's by T².

    Each size runs every layer repeats + 2 times (a warm-up, the timings, a profiled pass). One-time costs
    in the last point's own measuring time (the profiler's start, first-call set-up) are not extrapolated.
    The peak is at least the two T×T float matrices (scores and softmax) that attention must hold.
    """
    ratio = next_length / last.length
    linear = last.lstm_seconds + (last.mingru_seconds or 0.0)
    seconds = (repeats + 2) * (linear * ratio + last.attention_seconds * ratio**2)
    peak = max(last.attention_peak_bytes * ratio**2, 2 * next_length**2 * BYTES_PER_FLOAT,
               last.lstm_peak_bytes * ratio)
    return seconds, int(peak)


def run_cost_sweep(
    config: CostConfig,
    on_progress: Callable[[int, int, CostPoint], None] | None = None,
    measure: Callable[[int, int, int, int], CostPoint] = measure_cost_at,
) -> CostSweep:
    """Measure each T in turn, stopping before a size that would pass the time or memory cap.

    ``measure`` lets the page pass a cached ``measure_cost_at``; the caps use each point's recorded time,
    so a cached rerun makes the same decisions.
    """
    sweep = CostSweep(config, threads=torch.get_num_threads())
    lengths = config.lengths()
    for i, length in enumerate(lengths):
        if sweep.points:
            seconds, peak = predicted_next(sweep.points[-1], length, config.repeats)
        else:
            seconds, peak = 0.0, 2 * length**2 * BYTES_PER_FLOAT
        if peak > config.memory_cap_bytes:
            sweep.stopped = (
                f"Stopped before T = {length}: attention would need about {peak / 2**30:.2f} GiB, above the "
                f"{config.memory_cap_bytes / 2**30:.2f} GiB memory cap."
            )
            break
        if sweep.seconds + seconds > config.time_cap_s:
            sweep.stopped = (
                f"Stopped before T = {length}: it would take about {seconds:.0f} s more, past the "
                f"{config.time_cap_s:.0f} s time cap."
            )
            break
        sweep.points.append(measure(length, config.width, config.repeats, config.seed))
        if on_progress is not None:
            on_progress(i + 1, len(lengths), sweep.points[-1])
    return sweep
