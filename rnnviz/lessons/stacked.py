"""Stacked RNNs: the time × depth grid of hidden states, and parameter counts that grow linearly with depth.

Layer ℓ reads the layer below at the same step and its own state one step back:

    h_t^(ℓ) = cell(h_t^(ℓ−1), h_{t−1}^(ℓ)),   h_t^(0) = x_t

With hidden sizes d_ℓ (d_0 = E, the width of x_t) and G gate blocks (RNN 1, GRU 3, LSTM 4), layer ℓ holds
W_x^(ℓ) (G·d_ℓ × d_{ℓ−1}), W_h^(ℓ) (G·d_ℓ × d_ℓ) and two biases of G·d_ℓ, so

    P = Σ_ℓ G·d_ℓ·(d_{ℓ−1} + d_ℓ + 2),

which for equal sizes d is G·d·(E + d + 2) + (L − 1)·G·d·(2d + 2): linear in the depth L.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from rnnviz.core.recurrent import GATE_BLOCKS, KINDS, make_recurrent

MAX_LAYERS = 4
MAX_WIDTH = 6  # d_ℓ beyond this no longer fits a grid cell on a projector
MAX_WORDS = 6
DEFAULT_WORDS = ("the", "cat", "sat")
ORDERS = ("layer by layer", "step by step")


@dataclass(frozen=True)
class StackConfig:
    """A small stacked network reading a few words; frozen so it keys a cache."""

    kind: str = "lstm"  # "rnn", "lstm" or "gru"
    sizes: tuple[int, ...] = (3, 3)  # d_1 … d_L, one hidden size per layer
    words: tuple[str, ...] = DEFAULT_WORDS  # the input, one word per step
    embed_dim: int = 3  # E = d_0, the width of each word's embedding x_t
    seed: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if not 1 <= len(self.sizes) <= MAX_LAYERS:
            raise ValueError(f"Choose between 1 and {MAX_LAYERS} layers (got {len(self.sizes)}).")
        if any(not 1 <= d <= MAX_WIDTH for d in self.sizes) or not 1 <= self.embed_dim <= MAX_WIDTH:
            raise ValueError(f"Every hidden size d_ℓ must be between 1 and {MAX_WIDTH} (got {self.sizes}).")
        if not 1 <= len(self.words) <= MAX_WORDS:
            raise ValueError(f"Enter between 1 and {MAX_WORDS} words (got {len(self.words)}).")

    @property
    def layers(self) -> int:
        return len(self.sizes)

    @property
    def uniform(self) -> bool:
        """Every layer as wide as the first: one torch module with num_layers = L holds them all."""
        return len(set(self.sizes)) == 1

    @property
    def vocabulary(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.words)))


def parse_words(text: str) -> tuple[str, ...]:
    """'the cat sat' → ('the', 'cat', 'sat'); a ValueError in plain words when there are none or too many."""
    words = tuple(w for w in re.split(r"\s+", text.strip()) if w)
    if not words:
        raise ValueError("Enter at least one word, for example: the cat sat")
    if len(words) > MAX_WORDS:
        raise ValueError(f"Enter at most {MAX_WORDS} words (got {len(words)}); the grid has one column per word.")
    return tuple(w[:20] for w in words)


def _seeded_uniform_(module: nn.Module, generator: torch.Generator) -> None:
    """torch's own RNN init, U(−1/√d, 1/√d), drawn from an explicit generator instead of the global one."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


def build_stack(config: StackConfig) -> nn.Module:
    """One ``make_recurrent`` module with num_layers = L when the sizes are equal, else one module per layer."""
    gen = torch.Generator().manual_seed(config.seed)
    if config.uniform:
        modules = [make_recurrent(config.kind, config.embed_dim, config.sizes[0], num_layers=config.layers)]
    else:
        widths = (config.embed_dim, *config.sizes)
        modules = [make_recurrent(config.kind, widths[i], widths[i + 1]) for i in range(config.layers)]
    for module in modules:
        _seeded_uniform_(module, gen)
    return modules[0] if config.uniform else nn.ModuleList(modules)


def embedding(config: StackConfig) -> dict[str, Tensor]:
    """A tiny fixed embedding: one seeded N(0, 1) vector of width E per distinct word."""
    gen = torch.Generator().manual_seed(10_007 + config.seed)
    table = torch.randn(len(config.vocabulary), config.embed_dim, generator=gen)
    return {word: table[i] for i, word in enumerate(config.vocabulary)}


@dataclass(frozen=True)
class StackRun:
    """Every state of the grid; h[ℓ] and c[ℓ] are (T, d_{ℓ+1}) arrays, layer 0 being the lowest."""

    config: StackConfig
    x: np.ndarray  # (T, E), the words' embeddings
    h: tuple[np.ndarray, ...]
    c: tuple[np.ndarray, ...] | None  # LSTM cell states, else None
    parameters: int  # sum(p.numel()) of the real model


def run_stack(config: StackConfig = StackConfig()) -> StackRun:
    """Read the words through the stack on the trace path and keep h_t^(ℓ) (and c_t^(ℓ)) for every cell."""
    model = build_stack(config)
    table = embedding(config)
    x = torch.stack([table[w] for w in config.words]).unsqueeze(0)  # (1, T, E)
    modules = [model] if config.uniform else list(model)
    hs, cs = [], []
    layer_input = x
    with torch.no_grad():
        for module in modules:
            trace = module.trace(layer_input)
            hs.extend(trace["h"][:, :, 0].numpy())  # each (T, d)
            if config.kind == "lstm":
                cs.extend(trace["c"][:, :, 0].numpy())
            layer_input = trace.output  # (1, T, d)
    return StackRun(config, x[0].numpy(), tuple(hs), tuple(cs) if cs else None,
                    sum(p.numel() for p in model.parameters()))


def computation_order(layers: int, steps: int, order: str = "layer by layer") -> list[tuple[int, int]]:
    """Cells (ℓ, t), 0-based, in an order that respects both arrows into each cell.

    "layer by layer" is how torch's fused kernels run (all of layer 1, then layer 2); "step by step" is how a
    streaming model runs (every layer at t = 1, then t = 2). Both are valid: cell (ℓ, t) needs only
    (ℓ, t − 1) and (ℓ − 1, t).
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    if order == "layer by layer":
        return [(layer, t) for layer in range(layers) for t in range(steps)]
    return [(layer, t) for t in range(steps) for layer in range(layers)]


@dataclass(frozen=True)
class LayerParameters:
    """One layer's weight shapes, in torch's names, and its parameter count."""

    layer: int  # 1-based
    w_x: tuple[int, int]  # W_x^(ℓ) = weight_ih: (G·d_ℓ, d_{ℓ−1})
    w_h: tuple[int, int]  # W_h^(ℓ) = weight_hh: (G·d_ℓ, d_ℓ)
    biases: int  # b_ih + b_hh: 2·G·d_ℓ
    count: int


def layer_parameters(kind: str, input_size: int, sizes: tuple[int, ...]) -> list[LayerParameters]:
    """The formula P_ℓ = G·d_ℓ·(d_{ℓ−1} + d_ℓ + 2), layer by layer."""
    gates = GATE_BLOCKS[kind]
    widths = (input_size, *sizes)
    rows = []
    for i, d in enumerate(sizes):
        w_x, w_h, biases = (gates * d, widths[i]), (gates * d, d), 2 * gates * d
        rows.append(LayerParameters(i + 1, w_x, w_h, biases, w_x[0] * w_x[1] + w_h[0] * w_h[1] + biases))
    return rows


def parameter_count(kind: str, input_size: int, sizes: tuple[int, ...]) -> int:
    return sum(row.count for row in layer_parameters(kind, input_size, sizes))


@dataclass(frozen=True)
class DepthRow:
    layers: int
    formula: int  # Σ_ℓ G·d_ℓ·(d_{ℓ−1} + d_ℓ + 2)
    model: int  # sum(p.numel()) of a real make_recurrent model of that depth


def depth_table(kind: str, input_size: int, hidden: int, max_layers: int = 8) -> list[DepthRow]:
    """Parameter counts for 1 … max_layers layers of width ``hidden``: the formula beside the real model."""
    rows = []
    for layers in range(1, max_layers + 1):
        model = make_recurrent(kind, input_size, hidden, num_layers=layers)
        rows.append(DepthRow(layers, parameter_count(kind, input_size, (hidden,) * layers),
                             sum(p.numel() for p in model.parameters())))
    return rows
