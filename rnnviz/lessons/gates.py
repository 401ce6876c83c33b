"""The LSTM's gates, number by number: one cell value, one full step, and saturation over a text.

    [i_t; f_t; g_t; o_t] = W [h_{t−1}; x_t] + b,   W = [W_hh | W_ih] (4H × (H+D)),  b = b_ih + b_hh
    i_t = σ(·), f_t = σ(·), g_t = tanh(·), o_t = σ(·)          (torch's row-block order: i, f, g, o)
    c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t                            ("kept" + "written")
    h_t = o_t ⊙ tanh(c_t)                                      ("exposed")

The functions take any ``CharModel`` whose recurrent stack is an LSTM, so a page can pass the small
seeded model built here, a shared trained one, or the session's live-trained model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig, kind_label
from rnnviz.core.recurrent import RecurrentLSTM, make_recurrent

GATES = ("i", "f", "g", "o")  # torch's row-block order in W_ih, W_hh and the biases
GATE_NAMES = {"i": "input gate i_t", "f": "forget gate f_t", "g": "candidate g_t", "o": "output gate o_t"}

# --- One number through the gates ---------------------------------------------------------------------


@dataclass(frozen=True)
class OneNumber:
    """One cell component through one step, with the gate values set by hand."""

    c_prev: float  # c_{t−1}
    f: float  # forget gate, 0…1
    i: float  # input gate, 0…1
    g: float  # candidate, −1…1
    o: float  # output gate, 0…1

    def __post_init__(self):
        for name in ("f", "i", "o"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"The gate {name} is a sigmoid output and must lie in 0…1 (got {value}).")
        if not -1.0 <= self.g <= 1.0:
            raise ValueError(f"The candidate g is a tanh output and must lie in −1…1 (got {self.g}).")

    @property
    def kept(self) -> float:
        """f · c_{t−1}: what the forget gate keeps of the old cell."""
        return self.f * self.c_prev

    @property
    def written(self) -> float:
        """i · g: what the input gate writes."""
        return self.i * self.g

    @property
    def c_t(self) -> float:
        """c_t = f · c_{t−1} + i · g."""
        return self.kept + self.written

    @property
    def tanh_c(self) -> float:
        """tanh(c_t), the cell squashed into −1…1."""
        return math.tanh(self.c_t)

    @property
    def h_t(self) -> float:
        """h_t = o · tanh(c_t): what the output gate exposes."""
        return self.o * self.tanh_c


# The classroom cases: (f, i, g, o) from c_{t−1} = 0.8, each with the one sentence it teaches.
PRESETS: dict[str, tuple[tuple[float, float, float, float], str]] = {
    "Small output gate": (
        (0.9, 0.5, 0.4, 0.05),
        "A small output gate does not erase the cell: c_t stays large while h_t is nearly 0.",
    ),
    "Forget near 1, still writing": (
        (0.99, 0.9, -0.7, 1.0),
        "A forget gate near 1 does not stop new writes: i·g still moves the cell.",
    ),
    "Clear the cell": (
        (0.0, 0.0, 0.5, 1.0),
        "f = 0 drops the old cell, and i = 0 writes nothing: c_t = 0.",
    ),
    "Copy forward": (
        (1.0, 0.0, 0.5, 1.0),
        "f = 1 and i = 0 carry the cell forward unchanged: c_t = c_{t−1}.",
    ),
}

# --- One full LSTM step ---------------------------------------------------------------------------------


def stacked_weights(lstm: RecurrentLSTM, layer: int = 0) -> tuple[Tensor, Tensor]:
    """W = [W_hh | W_ih] (4H, H+D) and b = b_ih + b_hh (4H,): the one product that computes all four gates."""
    weights = lstm.layer_weights(layer)
    w = torch.cat([weights.w_hh, weights.w_ih], dim=1)  # (4H, H+D)
    b = torch.zeros(w.shape[0], dtype=w.dtype)
    for bias in (weights.b_ih, weights.b_hh):
        if bias is not None:
            b = b + bias
    return w.detach(), b.detach()


def gate_blocks(stacked: Tensor) -> dict[str, Tensor]:
    """Split the 4H rows (of W, b or the pre-activations) into the i, f, g, o blocks, in torch's order."""
    return dict(zip(GATES, stacked.chunk(4, dim=0)))


@dataclass(frozen=True)
class StepDetail:
    """Every number of one LSTM step at position t of a sequence (first sequence, one layer)."""

    t: int  # 1-based step
    x_t: np.ndarray  # (D,)
    h_prev: np.ndarray  # (H,) h_{t−1}
    c_prev: np.ndarray  # (H,) c_{t−1}
    w: np.ndarray  # (4H, H+D) [W_hh | W_ih]
    b: np.ndarray  # (4H,) b_ih + b_hh
    pre: np.ndarray  # (4H,) W [h_{t−1}; x_t] + b
    gates: dict[str, np.ndarray]  # i, f, g, o, each (H,)
    c_t: np.ndarray  # (H,)
    tanh_c: np.ndarray  # (H,)
    h_t: np.ndarray  # (H,)

    @property
    def hidden(self) -> int:
        return self.h_t.shape[0]

    @property
    def input_size(self) -> int:
        return self.x_t.shape[0]


@torch.no_grad()
def lstm_step_detail(model: CharModel, idx: Tensor, t: int, layer: int = 0) -> StepDetail:
    """Step t (1…T) of ``idx`` (T,) through one LSTM layer, recomputed from the stacked W.

    h_{t−1}, c_{t−1} and the layer's input x_t come from the model's trace path; the gates are then
    computed by the single product W [h_{t−1}; x_t] + b, which tests check against the trace.
    """
    if model.config.kind != "lstm":
        raise ValueError(f"the gates belong to an LSTM; this model is a {kind_label(model.config.kind)}")
    steps = idx.shape[-1]
    if not 1 <= t <= steps:
        raise ValueError(f"The step t must be between 1 and {steps} (got {t}).")
    _, trace = model.trace(idx.reshape(1, -1))
    layer_input = model.inputs(idx.reshape(1, -1)) if layer == 0 else trace["h"][layer - 1].transpose(0, 1)
    x_t = layer_input[0, t - 1]  # (D,)
    h_prev = trace["h"][layer, t - 2, 0] if t > 1 else trace.h0[layer, 0]  # (H,)
    c_prev = trace["c"][layer, t - 2, 0] if t > 1 else trace.c0[layer, 0]  # (H,)
    w, b = stacked_weights(model.rnn, layer)
    pre = w @ torch.cat([h_prev, x_t]) + b  # (4H,)
    blocks = gate_blocks(pre)
    gates = {name: (torch.tanh if name == "g" else torch.sigmoid)(value) for name, value in blocks.items()}
    c_t = gates["f"] * c_prev + gates["i"] * gates["g"]
    tanh_c = torch.tanh(c_t)
    as_np = lambda v: v.detach().double().numpy()  # noqa: E731
    return StepDetail(
        t=t,
        x_t=as_np(x_t),
        h_prev=as_np(h_prev),
        c_prev=as_np(c_prev),
        w=as_np(w),
        b=as_np(b),
        pre=as_np(pre),
        gates={name: as_np(v) for name, v in gates.items()},
        c_t=as_np(c_t),
        tanh_c=as_np(tanh_c),
        h_t=as_np(gates["o"] * tanh_c),
    )


def parameter_counts(input_size: int, hidden: int) -> dict[str, int]:
    """Parameters of one vanilla RNN layer and one LSTM layer of the same D and H, counted from the modules.

    RNN: H(H+D) + 2H.  LSTM: 4·(H(H+D) + 2H), one block per gate.
    """
    return {
        kind: sum(p.numel() for p in make_recurrent(kind, input_size, hidden).parameters())
        for kind in ("rnn", "lstm")
    }


@dataclass(frozen=True)
class StepModelConfig:
    """The small seeded LSTM drawn one step at a time: one-hot characters of a short word in, H units."""

    text: str = "hello"  # the sequence; its distinct characters are the vocabulary
    hidden: int = 4  # H, 2…8 so that every number fits on the drawing
    seed: int = 0

    def __post_init__(self):
        if not 2 <= len(self.text) <= 24:
            raise ValueError(f"Type between 2 and 24 characters (got {len(self.text)}).")
        if len(set(self.text)) < 2:
            raise ValueError("Type at least 2 different characters, so that the inputs x_t differ.")
        if not 2 <= self.hidden <= 8:
            raise ValueError(f"The hidden size H must be between 2 and 8 (got {self.hidden}).")

    @property
    def vocabulary(self) -> str:
        """The distinct characters, sorted: index k is the one-hot x_t with a 1 in row k."""
        return "".join(sorted(set(self.text)))


@torch.no_grad()
def seeded_init(model: CharModel, seed: int) -> None:
    """Torch's default initialisation drawn from a private generator, not the process-wide one.

    Pages run in threads of one server; a private generator keeps a seed's weights the same whatever
    other sessions draw at the same moment. Embedding rows ~ N(0, 1); everything else ~ U(−1/√H, 1/√H),
    as nn.LSTM initialises itself.
    """
    gen = torch.Generator().manual_seed(seed)
    bound = 1 / math.sqrt(model.config.hidden)
    for name, p in model.named_parameters():
        if name.startswith("embed."):
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype))
        else:
            p.copy_((torch.rand(p.shape, generator=gen, dtype=p.dtype) * 2 - 1) * bound)


def seeded_step_model(config: StepModelConfig) -> tuple[CharModel, Tensor]:
    """A seeded one-layer LSTM CharModel with one-hot inputs (D = vocabulary size), and the text's indices (T,)."""
    vocab = config.vocabulary
    model = CharModel(ModelConfig(vocab_size=len(vocab), kind="lstm", hidden=config.hidden, embedding=False))
    seeded_init(model, config.seed)
    model.eval()
    idx = torch.tensor([vocab.index(ch) for ch in config.text])
    return model, idx


# --- Gate saturation over a text ------------------------------------------------------------------------

# A gate value is saturated when it lies within 10% of either end of its range: below 0.1 or above 0.9
# for the sigmoid gates i, f, o (range 0…1), below −0.8 or above 0.8 for the candidate g (range −1…1).
GATE_RANGES = {"i": (0.0, 1.0), "f": (0.0, 1.0), "g": (-1.0, 1.0), "o": (0.0, 1.0)}
SATURATION_MARGIN = 0.1  # share of the range at each end
HISTOGRAM_BINS = 40


def saturation_thresholds(gate: str) -> tuple[float, float]:
    """(left, right): values below left are left-saturated, above right right-saturated."""
    low, high = GATE_RANGES[gate]
    span = high - low
    return low + SATURATION_MARGIN * span, high - SATURATION_MARGIN * span


@dataclass(frozen=True)
class GateSaturation:
    """One gate of one layer over a text: the three fractions and a histogram of its values."""

    layer: int  # 0-based
    gate: str  # "i", "f", "g" or "o"
    left: float  # fraction of values < left threshold
    middle: float
    right: float  # fraction of values > right threshold
    counts: np.ndarray  # (HISTOGRAM_BINS,) histogram over the gate's range
    edges: np.ndarray  # (HISTOGRAM_BINS + 1,)


@dataclass(frozen=True)
class SaturationStats:
    """Every (layer, gate) over a text of ``characters`` characters."""

    characters: int
    per_gate: tuple[GateSaturation, ...]

    def get(self, layer: int, gate: str) -> GateSaturation:
        return next(s for s in self.per_gate if s.layer == layer and s.gate == gate)

    @property
    def layers(self) -> int:
        return 1 + max(s.layer for s in self.per_gate)


@torch.no_grad()
def gate_saturation(model: CharModel, idx: Tensor) -> SaturationStats:
    """Run ``idx`` (T,) through the model's trace path and measure every gate's saturation per layer."""
    if model.config.kind != "lstm":
        raise ValueError(f"gate saturation needs an LSTM; this model is a {kind_label(model.config.kind)}")
    if idx.numel() == 0:
        raise ValueError("The text has no characters that the model knows.")
    was_training = model.training
    model.eval()
    _, trace = model.trace(idx.reshape(1, -1))
    model.train(was_training)
    per_gate = []
    for layer in range(model.config.layers):
        for gate in GATES:
            values = trace[gate][layer].flatten().double().numpy()  # (T·N·H,)
            left_edge, right_edge = saturation_thresholds(gate)
            left, right = float((values < left_edge).mean()), float((values > right_edge).mean())
            counts, edges = np.histogram(values, bins=HISTOGRAM_BINS, range=GATE_RANGES[gate])
            per_gate.append(GateSaturation(layer, gate, left, 1.0 - left - right, right, counts, edges))
    return SaturationStats(int(idx.numel()), tuple(per_gate))
