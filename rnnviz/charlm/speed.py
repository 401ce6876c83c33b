"""What a training run costs before it starts: its parameters, and how many characters per second it will train.

Time per step ≈ STEP_OVERHEAD + layers·T·TIMESTEP_OVERHEAD + 6·P·B·T / (MATMUL_EFFICIENCY·F): forward and
backward are about 3 matmul passes of 2 flops per weight and character; F is ``measure_matmul_flops()``, as the
live page measures it. The page shows the estimate before a run starts and uses the parameter count to keep a
session's model small enough to watch.

The kinds whose state is more than a vector pay what their own forms cost instead of the fused kernel's
sequential part (``state_kind_seconds``): the sLSTM a Python loop over t, the selective SSM a scan over t on its
(B, T, H, S) states, the mLSTM and linear attention their T × T parallel forms (and attention's 12·L·B·T²·H flops).

No streamlit here.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import replace

import torch

from rnnviz.charlm.corpus import Corpus, TBPTTBatcher
from rnnviz.charlm.train import TrainConfig, uses_bf16
from rnnviz.core.charmodel import build_model
from rnnviz.core.runtime import pick_device
from rnnviz.core.state_stack import SELECTIVE_STATE_SIZE, STATE_KINDS

# Fitted with bench/live_estimate.py on the 2-core machine (F measured outside the timed steps; four runs gave
# 0.78–0.91 ms, 90–121 µs and 0.84–0.85): within 0.85–1.16× of the measured chars/s for LSTMs and RNNs from 4k
# to 1.2M parameters; a GRU trains about 0.65× as fast as it predicts.
STEP_OVERHEAD_S = 0.9e-3  # optimizer, norms, bookkeeping: dominates the smallest models ("hello": B = 1, T = 4)
TIMESTEP_OVERHEAD_S = 110e-6  # per layer and time step, forward and backward: the fused kernel's sequential part
MATMUL_EFFICIENCY = 0.85  # share of the measured matmul rate a fused LSTM reaches
# The float32 matmul rate understates a run under bfloat16 autocast (TrainConfig.precision): on the 2-core Zen 4
# machine training ran 1.41× (1×256) and 1.58× (1×384) as fast as in float32 in the sweep's races, and a bare
# training step of a 1×512 1.87× as fast.
BF16_SPEEDUP = 1.6
# The state kinds, fitted on one Adam step at bench/kinds_speed.py's ESTIMATE_SHAPES (L 1–2, H 64–256, B 8–32,
# T 32–128) on the 2-core machine with other jobs running (F 99 GFLOP/s, load 3), where the constants above gave a
# 1 × 256 LSTM 0.86 of its measured speed: within 0.6–1.3× of the measured speed. On the quiet machine every kind
# trained faster than estimated, the LSTM 2.5×, the state kinds 2.7–5.5×.
SLSTM_STEP_S = 400e-6  # per layer and time step: the sLSTM's step in Python, forward and backward
SLSTM_UNIT_S = 260e-9  # … and per number of its (B, H) state, per layer and time step
PARALLEL_LAYER_S = 7e-3  # per layer of an mLSTM or linear attention: the many small operations of its T × T form
PAIR_S = 68e-9  # per pair (t, s ≤ T) of each head, batch row and layer: the T × T weights made, masked and read
SCAN_STEP_S = 20e-6  # per layer and time step of the selective SSM's scan
SCAN_NUMBER_S = 38e-9  # per number of its (B, T, H, S) states, per layer: written, read back and differentiated


@functools.lru_cache(maxsize=256)
def count_parameters(config: TrainConfig, vocab_size: int) -> int:
    """Parameters of the model ``config`` builds for V = vocab_size, as sum(p.numel()).

    The model is built on torch's meta device (shapes only, no memory, no arithmetic), so the count holds
    for every kind the engine builds (recurrent layers, a Transformer, any later one) without a formula
    to keep in step with it.
    """
    with torch.device("meta"):
        model = build_model(config.model_config(vocab_size))
    return sum(p.numel() for p in model.parameters())


def _lookup_parameters(config: TrainConfig, vocab_size: int) -> int:
    """Parameters that are looked up, not multiplied: the embedding (and a Transformer's positions)."""
    if config.kind == "transformer":
        return (vocab_size + config.block_size) * config.hidden
    return config.embed_dim * vocab_size if config.embedding else 0


def measure_matmul_flops(size: int = 384, repeats: int = 8) -> float:
    """Dense fp32 matmul rate of this process on the CPU, in flop/s (best of a few, about 50 ms)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)  # warm up the kernels and thread pool
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / max(best, 1e-9)


def estimate_chars_per_second(config: TrainConfig, vocab_size: int, matmul_flops: float) -> float:
    """Training throughput B·T / (time per step) from the model's size and the measured matmul rate.

    A recurrent model also pays a sequential cost per layer and time step. A Transformer has none (its T
    positions run in parallel) but adds the attention products QKᵀ and AV: 4·T²·C flops per window and block
    forward, about 3× that with the backward pass; so do the parallel forms of the mLSTM and linear attention, which
    also pay for their T × T weights (``state_kind_seconds``, as the sLSTM's loop and the selective SSM's scan).
    """
    dense = count_parameters(config, vocab_size) - _lookup_parameters(config, vocab_size)
    chars = config.batch * config.seq_len
    matmul = 6 * dense * chars
    if config.kind in ("transformer", "mlstm", "linear_attention"):  # QKᵀ and AV, or their linear forms
        matmul += 12 * config.layers * config.batch * config.seq_len**2 * config.hidden
    if config.kind == "transformer":
        sequential = 0.0
    elif config.kind in STATE_KINDS:
        sequential = state_kind_seconds(config)
    else:
        sequential = config.layers * config.seq_len * TIMESTEP_OVERHEAD_S
    if uses_bf16(config, pick_device()):
        matmul /= BF16_SPEEDUP
    seconds = STEP_OVERHEAD_S + sequential + matmul / (MATMUL_EFFICIENCY * matmul_flops)
    return chars / seconds


def state_kind_seconds(config: TrainConfig) -> float:
    """What one training step of an sLSTM, mLSTM, selective SSM or linear attention costs beyond its matmuls and the
    step's overhead (the constants above)."""
    layers, batch, length = config.layers, config.batch, config.seq_len
    if config.kind == "slstm":
        return layers * length * (SLSTM_STEP_S + SLSTM_UNIT_S * batch * config.hidden)
    if config.kind == "selective":
        numbers = batch * length * config.hidden * SELECTIVE_STATE_SIZE
        return layers * (length * SCAN_STEP_S + numbers * SCAN_NUMBER_S)
    return layers * (PARALLEL_LAYER_S + PAIR_S * batch * config.n_head * length**2)


def effective_shape(config: TrainConfig, corpus: Corpus) -> tuple[int, int]:
    """The batch B and length T the trainer really uses on ``corpus``: a text too short for B × T shrinks
    them (see TBPTTBatcher), and "hello" trains on B = 1 stream of T = 4 characters."""
    batcher = TBPTTBatcher(corpus.split()[0], config.batch, config.seq_len)
    return batcher.batch, batcher.seq_len


def estimate_for_corpus(config: TrainConfig, corpus: Corpus, matmul_flops: float) -> float:
    """``estimate_chars_per_second`` at the B and T the trainer will use on this corpus."""
    batch, seq_len = effective_shape(config, corpus)
    return estimate_chars_per_second(replace(config, batch=batch, seq_len=seq_len), corpus.vocab.size,
                                     matmul_flops)
