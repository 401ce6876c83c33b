"""What "hidden state" means in an RNN, an LSTM, a minGRU and a Transformer, measured on trained character models.

What each model carries from step t into step t+1 (everything it may use later about x_1…x_t):

    RNN          h_t = tanh(W_xh x_t + b_xh + W_hh h_{t-1} + b_hh)            carries h_t           (L·H numbers)
    LSTM         c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t,   h_t = o_t ⊙ tanh(c_t)     carries h_t and c_t   (2·L·H)
    minGRU       z_t = σ(W_z x_t),  h̃_t = g(W_h x_t),                         carries h_t           (L·H)
                 h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t   (gates read x_t only, so training is a scan)
    Transformer  Attn(X) = softmax(QKᵀ/√d + M) V, M the causal mask           carries K and V of every
                                                                              position ≤ t, every layer (2·L·t·C)

and the kinds whose state is more than a vector (rnnviz.core.state_stack, each layer's state a NamedTuple):

    sLSTM        exponential gates, memory mixing within heads                 carries h, c, n, m    (4·L·H)
    mLSTM        C_t = f_t C_{t−1} + i_t v_t k_tᵀ                              carries C, n, m and   (L·(H·d + H
                                                                              the conv's inputs      + h + (K−1)·D))
    selective    s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t u_t B_tᵀ                     carries s and the     (L·(H·S
                                                                              conv's inputs          + (K−1)·D))
    linear attn  S_t = S_{t−1} + v_t φ(k_t)ᵀ                                   carries S, z and the  (L·(H·d + H
                                                                              conv's inputs          + (K−1)·D))

(d = H / h per head, S the selective SSM's numbers per channel, K the short convolution's width, D the layer's input
width: the conv's last K − 1 inputs are part of the state, so a probe reads the last K − 1 characters from them.)

so the recurrent models carry a fixed size and the Transformer a cache that grows linearly with t (until its
context of ``block_size`` positions is full: then the window slides and the cache stays at its full size).
Every size here is measured from the tensors themselves (numel × element_size).

**Memory probe.** For k = 1…K, a linear softmax probe p(x_{t−k} | z) = softmax(W z + b) is fitted to read the
character k steps back from what each model carries into step t+1: the RNN's and the minGRU's h_t, the LSTM's
[h_t; c_t], and the Transformer's K/V cache, whose entry for position s = t − k (its keys and values in every
layer, 2·L·C numbers) is where that character is kept. Beside it, the Transformer's vector x_t⁽ᴸ⁾ after its last
layer at position t: what it passes up to the readout, not what it keeps. The accuracy on held-out positions,
against the chance level of always answering the most common character, says how far back each one still holds
the text.

**Bottleneck.** The next-character loss −log p(x_{t+1} | x_{t−n+1}…x_t) when the model reads only the last n
characters (from a fresh state h_0 = 0, or a window of n for the Transformer), for n = 1…N. The recurrent models
of this project train with their state carried from chunk to chunk, so a fresh h_0 = 0 is a start they met only
once, at their first step: at small n their loss says that as well as how much the n characters tell.

No streamlit here: pages call these functions and plot what they return.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.core.charmodel import CharModel, carried_nbytes
from rnnviz.core.config import kind_label
from rnnviz.core.layer_kit import LayerTrace, state_nbytes
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.core.transformer import CharTransformer, KVCache

Model = CharModel | CharTransformer
ProgressFn = Callable[[float, str], None]


# -- what each model carries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CarriedTensor:
    """One tensor a model carries into the next step, with its size measured from the tensor."""

    name: str  # "h", "c", "K", "V", or a field of a layer state ("C", "s", "conv"), with its layer: "h (layer 1)"
    shape: tuple[int, ...]  # as held: (N, H) for h and c; (N, h, t, d) for K and V; a layer state's field as it is
    numel: int  # numbers held
    nbytes: int  # numel × element_size
    # For plots: (H,) for h and c; (t, C) for K and V (heads side by side); see ``plotted`` for the layer states'.
    values: np.ndarray


@dataclass(frozen=True)
class Carried:
    """Everything a model carries from step t into step t+1."""

    kind: str  # one of rnnviz.core.config.MODEL_KINDS
    t: int  # the last position read (0-based)
    window_start: int  # first position the carried state covers directly (> 0 once a Transformer's window slides)
    tensors: tuple[CarriedTensor, ...]

    @property
    def numel(self) -> int:
        return sum(x.numel for x in self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(x.nbytes for x in self.tensors)


def _tensor(name: str, tensor: Tensor, values: Tensor) -> CarriedTensor:
    return CarriedTensor(name, tuple(tensor.shape), tensor.numel(), tensor.numel() * tensor.element_size(),
                         values.detach().float().cpu().numpy())


def plotted(field: str, value: Tensor) -> Tensor:
    """One sequence's field of a layer state, as a plot draws it, one column per unit where it has units: a vector
    (H,) as it is; per-head vectors (heads, d) side by side (H,); per-head matrices C or S (heads, d, d) as (d, H),
    row i of every head's matrix side by side; the selective SSM's s (H, S) as (S, H); the convolution's inputs
    (K − 1, D) as they are, oldest first."""
    if field in ("C", "S"):
        return value.permute(1, 0, 2).reshape(value.size(1), -1)  # (d, heads·d)
    if field == "s":
        return value.t()  # (S, H)
    if field in ("n", "z") and value.dim() == 2:
        return value.reshape(-1)  # (heads·d,)
    return value


@torch.no_grad()
def carried_state(model: Model, ids: Tensor, t: int) -> tuple[Carried, Tensor | tuple[Tensor, Tensor] | KVCache]:
    """What ``model`` carries into step t+1 after reading ids[0…t] (ids 1-D), and the raw state itself.

    Recurrent (RNN, GRU, LSTM, minGRU): the fast path's final state, h (L, 1, H), and c for an LSTM.
    sLSTM, mLSTM, selective SSM, linear attention: every field of every layer's state (``plotted`` for the values).
    Transformer: the KVCache of ``prefill`` over the last ``block_size`` characters up to t (its window)."""
    model.eval()
    x = ids[: t + 1].view(1, -1)  # (1, t+1)
    if isinstance(model, CharTransformer):
        _, cache = model.prefill(x)
        start = t + 1 - cache.length
        tensors = []
        for layer, (k, v) in enumerate(zip(cache.keys, cache.values), start=1):
            for name, z in (("K", k), ("V", v)):
                flat = z[0].transpose(0, 1).reshape(z.size(2), -1)  # (t, C): heads side by side
                tensors.append(_tensor(f"{name} (layer {layer})", z, flat))
        return Carried("transformer", t, start, tuple(tensors)), cache
    _, _, state = model(x)
    if model.config.kind in STATE_KINDS:
        tensors = [_tensor(f"{field} (layer {layer})", value, plotted(field, value[0]))
                   for layer, layer_state in enumerate(state, start=1)
                   for field, value in zip(layer_state._fields, layer_state)]
        return Carried(model.config.kind, t, 0, tuple(tensors)), state
    parts = (("h", state[0]), ("c", state[1])) if isinstance(state, tuple) else (("h", state),)
    tensors = []
    for name, z in parts:  # z (L, 1, H)
        for layer in range(z.size(0)):
            tensors.append(_tensor(f"{name} (layer {layer + 1})", z[layer], z[layer, 0]))
    return Carried(model.config.kind, t, 0, tuple(tensors)), state


@torch.no_grad()
def carried_bytes_curve(model: Model, ids: Tensor) -> np.ndarray:
    """Bytes carried into step t+1 for t = 0…T−1, measured from the state tensors after each step.

    Steps the model one character at a time, as sampling does: the recurrent state, or the Transformer's
    KVCache through ``prefill`` and ``step``."""
    model.eval()
    out = np.zeros(len(ids), dtype=np.int64)
    if isinstance(model, CharTransformer):
        _, cache = model.prefill(ids[:1].view(1, 1))
        out[0] = carried_nbytes(cache)
        for t in range(1, len(ids)):
            _, cache = model.step(ids[t].view(1), cache)
            out[t] = carried_nbytes(cache)
        return out
    state = None
    for t in range(len(ids)):
        _, _, state = model(ids[t].view(1, 1), state=state)
        out[t] = carried_nbytes(state)
    return out


# How a probe's name writes each field a model carries.
FIELD_SYMBOLS = {"h": "h_t", "c": "c_t", "n": "n_t", "m": "m_t", "C": "C_t", "s": "s_t", "S": "S_t", "z": "z_t",
                 "conv": "x_{t−K+2…t}"}


@dataclass(frozen=True)
class StateSteps:
    """A recurrent model's state at every step of a text, layer by layer, as plain arrays for a page."""

    kind: str  # one of rnnviz.core.config.CHAR_MODEL_KINDS
    carried: tuple[str, ...]  # the fields it carries into the next step: ("h",), ("h", "c"), ("C", "n", "m", "conv"), …
    # Per layer, every value recorded at every step, (T, …) for one sequence: the carried fields (the convolution's
    # inputs included, (T, K − 1, D)) and what the step computed on the way (gates, Δ_t, q, k, v, …).
    layers: tuple[dict[str, np.ndarray], ...]
    nbytes: int  # bytes carried into each next step, the same at every step (numel × element_size)


def _conv_steps(layer_input: Tensor, width: int) -> Tensor:
    """The short convolution's buffer after every step: the inputs t − K + 2 … t, zeros before the text, (T, K − 1,
    D) from one sequence's layer input (T, D)."""
    t_len, channels = layer_input.shape
    length = max(width - 1, 0)
    padded = torch.cat([layer_input.new_zeros(length, channels), layer_input])  # (K − 1 + T, D)
    return padded.unfold(0, length, 1)[1:].transpose(1, 2) if length else layer_input.new_zeros(t_len, 0, channels)


def _layer_steps(model: CharModel, ids: Tensor) -> tuple[list[LayerTrace], list[Tensor]]:
    """A state kind's trace of one sequence (1, T) and each layer's input (T, D)."""
    _, traces = model.trace(ids.view(1, -1))
    inputs = [model.inputs(ids.view(1, -1))[0]] + [trace.output[0] for trace in traces[:-1]]
    return traces, inputs


@torch.no_grad()
def state_steps(model: CharModel, ids: Tensor) -> StateSteps:
    """Every layer's state (and all it computed) after each character of ``ids`` (1-D), read from a zero state on the
    trace path in eval mode. A Transformer carries a cache, not a state: ``carried_state`` reads it."""
    if isinstance(model, CharTransformer):
        raise ValueError("a Transformer carries no state from step to step but a key/value cache that grows with t; "
                         "carried_state reads it")
    model.eval()
    kind = model.config.kind
    if kind in STATE_KINDS:
        traces, inputs = _layer_steps(model, ids)
        fields = model.rnn.layers[0].zero_state(1)._fields
        layers = []
        for layer, trace, layer_input in zip(model.rnn.layers, traces, inputs):
            values = {name: value[:, 0] for name, value in trace.values.items()}  # (T, …)
            if "conv" in fields:
                values["conv"] = _conv_steps(layer_input, layer.conv.width)
            layers.append({name: value.float().cpu().numpy() for name, value in values.items()})
        nbytes = state_nbytes(model.rnn.zero_state(1))
    else:
        _, trace = model.trace(ids.view(1, -1))
        fields = ("h", "c") if kind == "lstm" else ("h",)
        layers = [{name: value[layer, :, 0].float().cpu().numpy() for name, value in trace.values.items()}
                  for layer in range(model.config.layers)]
        nbytes = state_nbytes(model.rnn.zero_state(1))
    return StateSteps(kind, tuple(fields), tuple(layers), nbytes)


@torch.no_grad()
def attention_at(model: CharTransformer, ids: Tensor, t: int) -> tuple[int, np.ndarray]:
    """(window start s₀, weights (L, h, t − s₀ + 1)): how position t attends to positions s₀…t, per layer and head.

    The window is the last ``block_size`` characters up to t; row t of softmax(QKᵀ/√d + M) for each head."""
    model.eval()
    start = max(0, t + 1 - model.block_size)
    _, trace = model.trace(ids[start : t + 1].view(1, -1))
    return start, trace.attention[:, 0, :, -1, :].numpy()  # (L, h, t − start + 1)


@torch.no_grad()
def attention_to(model: CharTransformer, ids: Tensor, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(queries t, weights (L, h, len(t))): how much each position t ≥ s attends to the character at s, per
    layer and head: column s of softmax(QKᵀ/√d + M), read in the window each t is ordinarily read in.

    Only the t whose window still holds s count: t < s + block_size. Positions t < block_size are read from the
    text's start (one trace of the first block_size characters serves them all: the mask makes every prefix its
    own window); a later t reads the window of the block_size characters ending at t, where s sits at
    s − (t + 1 − block_size)."""
    if not 0 <= s < len(ids):
        raise ValueError(f"s = {s} is outside the text of {len(ids)} characters")
    model.eval()
    block = model.block_size
    last = min(len(ids), s + block)  # one past the last query that can still see s
    columns = []
    head_end = min(last, block)
    if s < head_end:
        _, trace = model.trace(ids[:head_end].view(1, -1))
        columns.append(trace.attention[:, 0, :, s:head_end, s])  # (L, h, t = s…head_end − 1)
    later = list(range(max(block, s), last))
    if later:
        windows = torch.stack([ids[t + 1 - block : t + 1] for t in later])  # (n, block)
        _, trace = model.trace(windows)
        rows = trace.attention[:, :, :, -1, :]  # (L, n, h, block): the query is each window's last position
        columns.append(torch.stack([rows[:, i, :, s - (t + 1 - block)] for i, t in enumerate(later)], dim=-1))
    return np.arange(s, last), torch.cat(columns, dim=-1).numpy()


# -- memory probes -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeConfig:
    """How the memory probes are fitted."""

    max_k: int = 8  # K: probe the characters 1…K steps back
    chars: int = 3000  # characters of text read (positions probed: those with k earlier characters in view)
    train_fraction: float = 0.7  # the first part of the positions fits the probe; the rest is held out
    l2: float = 1e-3  # weight decay on W, per sample (mean loss + l2·‖W‖²)
    iterations: int = 40  # LBFGS iterations per probe
    seed: int = 0


@dataclass(frozen=True)
class ProbeCurve:
    """Held-out accuracy of reading x_{t−k} from one feature, for k = 1…K."""

    name: str  # "RNN h_t", "LSTM [h_t; c_t]", "Transformer K/V cache", …
    k: tuple[int, ...]
    accuracy: tuple[float, ...]  # held-out accuracy for each k
    chance: tuple[float, ...]  # held-out accuracy of answering the training split's most common character
    carried: bool = True  # False: a vector the model computes at t but does not carry into t+1


KV_CACHE = "Transformer K/V cache"
TOP_VECTOR = "Transformer x_t after its last layer"


@dataclass(frozen=True)
class ProbeFeature:
    """What a probe reads: ``values`` (T, D), one row per position of the text."""

    name: str
    values: Tensor  # (T, D)
    addressed: bool = False  # True: x_{t−k} is read from row t − k (a cache entry), else from row t
    carried: bool = True  # False: computed at t, not carried into t+1


@torch.no_grad()
def kv_rows(model: CharTransformer, windows: Tensor) -> Tensor:
    """The K/V cache of each window (W, block) as one row per position: (W·block, 2·L·C), the keys and values
    that every layer stored for that position, heads side by side (what ``prefill`` keeps for sampling)."""
    _, cache = model.prefill(windows)
    parts = [z.transpose(1, 2).flatten(2) for pair in zip(cache.keys, cache.values) for z in pair]  # (W, block, C)
    return torch.cat(parts, dim=2).reshape(-1, 2 * len(cache.keys) * parts[0].size(2))  # (W·block, 2·L·C)


@torch.no_grad()
def probe_features(model: Model, ids: Tensor) -> tuple[list[ProbeFeature], Tensor]:
    """(features, position): each feature's rows at every position of ids (1-D), and each position's index in
    its view (x_{t−k} is in view where position[t] ≥ k: after the text's start, or a Transformer window's start).

    Recurrent: the trace of the whole text, h of every layer (and c for an LSTM) side by side: what it carries; for
    the state kinds every field of every layer's state (the matrix memories flattened, the convolution's inputs too).
    Transformer: the text in consecutive windows of ``block_size``; its K/V cache, one row per position s (the
    probe for k reads row s = t − k, which the cache holds for every s in the window), and the vector x_t⁽ᴸ⁾
    after its last layer at t (computed at t, not carried)."""
    model.eval()
    t_len = len(ids)
    if isinstance(model, CharTransformer):
        block = model.block_size
        usable = (t_len // block) * block
        windows = ids[:usable].view(-1, block)  # (W, block)
        _, trace = model.trace(windows)
        top = trace.residual[-1].reshape(usable, -1)  # (W·block, C)
        feats = [ProbeFeature(KV_CACHE, kv_rows(model, windows), addressed=True),
                 ProbeFeature(TOP_VECTOR, top, carried=False)]
        return feats, torch.arange(usable) % block  # position inside its window
    kind = kind_label(model.config.kind)
    if model.config.kind in STATE_KINDS:  # every field of every layer's state, flattened side by side
        traces, inputs = _layer_steps(model, ids)
        fields = model.rnn.layers[0].zero_state(1)._fields
        parts = []
        for layer, trace, layer_input in zip(model.rnn.layers, traces, inputs):
            for field in fields:
                value = _conv_steps(layer_input, layer.conv.width) if field == "conv" else trace[field][:, 0]
                parts.append(value.reshape(t_len, -1))
        name = f"{kind} [{'; '.join(FIELD_SYMBOLS[field] for field in fields)}]"
        return [ProbeFeature(name, torch.cat(parts, dim=1))], torch.arange(t_len)
    _, trace = model.trace(ids.view(1, -1))
    h = trace["h"][:, :, 0].permute(1, 0, 2).reshape(t_len, -1)  # (T, L·H)
    if model.config.kind == "lstm":
        c = trace["c"][:, :, 0].permute(1, 0, 2).reshape(t_len, -1)  # (T, L·H)
        return [ProbeFeature(f"{kind} [h_t; c_t]", torch.cat([h, c], dim=1))], torch.arange(t_len)
    return [ProbeFeature(f"{kind} h_t", h)], torch.arange(t_len)


def fit_probe(x_train: Tensor, y_train: Tensor, classes: int, config: ProbeConfig) -> tuple[Tensor, Tensor]:
    """(W, b) of softmax(W z + b) minimising mean cross-entropy + l2·‖W‖² by LBFGS, on standardised z."""
    gen = torch.Generator().manual_seed(config.seed)
    w = (0.01 * torch.randn(x_train.size(1), classes, generator=gen)).requires_grad_()
    b = torch.zeros(classes, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=config.iterations, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(x_train @ w + b, y_train) + config.l2 * (w * w).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return w.detach(), b.detach()


def probe_memory(models: Sequence[Model], ids: Tensor, config: ProbeConfig = ProbeConfig(),
                 progress: ProgressFn | None = None) -> list[ProbeCurve]:
    """Held-out accuracy of a linear softmax probe reading x_{t−k} (k = 1…K) from each model's features.

    Positions are split in order: the first ``train_fraction`` fit, the rest are held out. Only positions with
    x_{t−k} in view count (t ≥ k, and for a Transformer k ≤ its position in the window). Features are
    standardised with the training split's mean and standard deviation. An addressed feature (the K/V cache)
    is read at row t − k: the entry the cache holds for that character."""
    ids = ids[: config.chars]
    jobs = []
    for model in models:
        feats, position = probe_features(model, ids)
        jobs += [(feature, position) for feature in feats]
    total, done = len(jobs) * config.max_k, 0
    curves = []
    for feature, position in jobs:
        z, name = feature.values, feature.name
        n = z.size(0)
        split = int(config.train_fraction * n)
        mean, std = z[:split].mean(0), z[:split].std(0) + 1e-6
        z = (z - mean) / std
        accuracy, chance = [], []
        for k in range(1, config.max_k + 1):
            t = torch.arange(n)
            keep = position >= k  # x_{t−k} in view
            target = torch.full((n,), -1, dtype=torch.long)
            target[k:] = ids[: n - k]
            read = torch.roll(z, k, dims=0) if feature.addressed else z  # row t − k at t (rows t < k: not kept)
            train, test = keep & (t < split), keep & (t >= split)
            y_train, y_test = target[train], target[test]
            classes = int(ids.max()) + 1
            w, b = fit_probe(read[train], y_train, classes, config)
            predicted = (read[test] @ w + b).argmax(1)
            accuracy.append(float((predicted == y_test).float().mean()))
            majority = int(torch.bincount(y_train, minlength=classes).argmax())
            chance.append(float((y_test == majority).float().mean()))
            done += 1
            if progress:
                progress(done / total, f"{name}: k = {k}")
        curves.append(ProbeCurve(name, tuple(range(1, config.max_k + 1)), tuple(accuracy), tuple(chance),
                                 feature.carried))
    return curves


# -- the bottleneck ----------------------------------------------------------------------------------------


@torch.no_grad()
def context_loss(model: Model, ids: Tensor, n: int, first: int) -> float:
    """Mean −log p(x_{t+1} | x_{t−n+1}…x_t) over t = first…T−2, each window read from nothing (nats/char).

    Needs first ≥ n − 1, so every window holds n characters; n ≤ block_size for a Transformer."""
    if first < n - 1:
        raise ValueError(f"the first scored position must be ≥ n − 1 = {n - 1}")
    if isinstance(model, CharTransformer) and n > model.block_size:
        raise ValueError(f"this Transformer reads at most {model.block_size} characters")
    model.eval()
    t = torch.arange(first, len(ids) - 1)  # positions scored
    windows = torch.stack([ids[s - n + 1 : s + 1] for s in t.tolist()])  # (M, n)
    logits = torch.cat([model(w)[0][:, -1] for w in windows.split(512)])  # (M, V)
    return float(F.cross_entropy(logits.double(), ids[t + 1], reduction="mean"))


@torch.no_grad()
def ordinary_loss(model: Model, ids: Tensor, first: int) -> float:
    """Mean −log p(x_{t+1} | x_{≤t}) over t = first…T−2 as the model ordinarily reads the text: a recurrent
    model from the start with its state carried, a Transformer through its sliding window (``windowed_logits``)."""
    model.eval()
    if isinstance(model, CharTransformer):
        logits = model.windowed_logits(ids[:-1].view(1, -1))[0]  # (T − 1, V)
    else:
        logits = model(ids[:-1].view(1, -1))[0][0]  # (T − 1, V)
    t = torch.arange(first, len(ids) - 1)
    return float(F.cross_entropy(logits[t].double(), ids[t + 1], reduction="mean"))


@torch.no_grad()
def bottleneck(model: Model, ids: Tensor, lengths: Sequence[int]) -> list[float]:
    """``context_loss`` for each n in ``lengths``, all scored on the same positions t ≥ max(lengths) − 1; NaN
    for an n beyond a Transformer's context (it cannot read that many characters at once).

    One forward pass serves every n: the text read from a fresh start at every position s, N characters at a
    time (N the largest n it can read). Both kinds are causal, so output j of the read that starts at s is the
    prediction from x_s…x_{s+j} alone: the window of n = j + 1 that ends at t = s + j."""
    first = max(lengths) - 1
    limit = model.block_size if isinstance(model, CharTransformer) else max(lengths)
    span = min(max(lengths), limit)  # N
    model.eval()
    t = torch.arange(first, len(ids) - 1)  # positions scored, (M,)
    padded = torch.cat([ids, ids.new_zeros(span)])  # reads near the end run past it; their outputs go unused
    starts = torch.arange(first - span + 1, len(ids) - 1)  # every s a scored window may start at
    reads = padded[starts.view(-1, 1) + torch.arange(span)]  # (S, N)
    logits = torch.cat([model(r)[0] for r in reads.split(512)])  # (S, N, V)
    out = []
    for n in lengths:
        if n > span:
            out.append(float("nan"))
            continue
        rows = logits[t - n + 1 - starts[0], n - 1]  # (M, V): the window of n ending at each t
        out.append(float(F.cross_entropy(rows.double(), ids[t + 1], reduction="mean")))
    return out
