"""Find interpretable cells: trace every cell over a text, rank cells by feature, search patterns, ablate.

A *cell* is one (layer, unit, quantity), where the quantity is h or a value inside the unit
(LSTM: c, i, f, g, o; GRU: r, z, n). Its activation a_t over a text is compared with a feature track
y_t from ``textfeatures``:

- Pearson correlation  r = Σ_t (a_t − ā)(y_t − ȳ) / (T σ_a σ_y);
- for a 0/1 feature, the best threshold accuracy  max_θ max(acc(a > θ), acc(a < θ))  with
  acc(a > θ) = (1/T) Σ_t [(a_t > θ) = y_t].

Pattern search (after LSTMVis): a cell is *on* over a chosen range when a_t ≥ θ at every step of the
range and a_t < θ at every step of the padding around it; other ranges *match* when the same cells are
all on there. Ablation holds h_t[layer, unit] at 0 at every step.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.charlm.train import sequence_loss
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import kind_label
from rnnviz.core.recurrent import TORCH_CLASSES
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.interpret.textfeatures import FEATURES

# The quantities recorded per kind; h first. tanh(c_t) is left out: it carries the same order as c_t. Of the kinds
# whose state is more than a vector (rnnviz.core.state_stack), each layer's output h_t is read, one value per unit.
QUANTITIES = {"lstm": ("h", "c", "i", "f", "g", "o"), "gru": ("h", "r", "z", "n"), "rnn": ("h",),
              **{kind: ("h",) for kind in STATE_KINDS}}
QUANTITY_LABELS = {
    "h": "h_t, hidden output",
    "c": "c_t, cell state",
    "i": "i_t, input gate",
    "f": "f_t, forget gate",
    "g": "g_t, candidate",
    "o": "o_t, output gate",
    "r": "r_t, reset gate",
    "z": "z_t, update gate",
    "n": "n_t, candidate",
    "s": "s_t, a state from your file",  # states read without a model (rnnviz.interpret.states)
}
TOP_NEXT = 5  # next-character predictions kept per position


@dataclass(frozen=True, order=True)
class CellId:
    """One cell: 0-based layer and unit (torch's numbering, as in weight_hh_l0) and the quantity."""

    layer: int
    unit: int
    quantity: str = "h"

    @property
    def label(self) -> str:
        return f"layer {self.layer}, unit {self.unit}, {self.quantity}"


@dataclass(eq=False)
class CellTrace:
    """Every cell's activation over one text, and the model's top next characters after each position."""

    kind: str
    quantities: tuple[str, ...]
    values: np.ndarray  # (Q, L, T, H) float32, read-only
    next_ids: np.ndarray  # (T, k) ids of the k most likely next characters, best first
    next_probs: np.ndarray  # (T, k) their probabilities

    @property
    def layers(self) -> int:
        return self.values.shape[1]

    @property
    def length(self) -> int:
        return self.values.shape[2]

    @property
    def hidden(self) -> int:
        return self.values.shape[3]

    def block(self, layer: int, quantity: str) -> np.ndarray:
        """(T, H): one quantity of every unit of one layer."""
        return self.values[self.quantities.index(quantity), layer]

    def cell(self, cell: CellId) -> np.ndarray:
        """(T,): one cell's activation after each character."""
        return self.values[self.quantities.index(cell.quantity), cell.layer, :, cell.unit]

    def check(self, cell: CellId) -> None:
        """Raise ValueError, in words, when ``cell`` does not exist in this model."""
        if cell.quantity not in self.quantities:
            article = "an" if self.kind in ("rnn", "lstm", "slstm", "mlstm") else "a"  # "an RNN", "a GRU"
            owner = "these states have" if self.kind == "states" else f"{article} {kind_label(self.kind)} has"
            raise ValueError(f"{owner} no quantity {cell.quantity!r}; choose {', '.join(self.quantities)}")
        if not 0 <= cell.layer < self.layers or not 0 <= cell.unit < self.hidden:
            raise ValueError(f"{cell.label} is outside layers 0…{self.layers - 1} and units 0…{self.hidden - 1}")


# ---------------------------------------------------------------------------------------------------------
# Tracing


def _single_layer(model: CharModel, layer: int) -> nn.Module:
    """A one-layer fused torch module holding ``layer``'s weights (the model's own when it has one layer)."""
    rnn = model.rnn
    if rnn.num_layers == 1:
        return rnn
    weights = rnn.layer_weights(layer)
    kwargs = dict(batch_first=True, bias=weights.b_ih is not None, device="meta")
    if rnn.kind == "rnn":
        kwargs["nonlinearity"] = rnn.nonlinearity
    # Built on the meta device and then allocated, so that no random init touches torch's global RNG.
    module = TORCH_CLASSES[rnn.kind](weights.w_ih.size(1), rnn.hidden_size, 1, **kwargs)
    module = module.to_empty(device=weights.w_hh.device)
    with torch.no_grad():
        for name, value in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), weights):
            if value is not None:
                getattr(module, name).copy_(value)
    return module


def _cell_path(f: np.ndarray, written: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t from c_0 = 0 into ``c``, with ``written`` = i ⊙ g; all (T, H)."""
    previous = np.zeros(f.shape[1], dtype=f.dtype)
    for t in range(f.shape[0]):
        np.multiply(f[t], previous, out=c[t])
        c[t] += written[t]
        previous = c[t]
    return c


@torch.no_grad()
def trace_cells(model: CharModel, ids: Tensor, top_next: int = TOP_NEXT) -> CellTrace:
    """Every cell of ``model`` over the text ``ids`` (T,), read from h_0 = 0 in eval mode.

    Fast: each layer's h_t comes from torch's fused kernel; the gates then follow from h_{t−1} and the
    layer's input for all t at once (one matrix product), and only the LSTM cell path
    c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t is stepped. Equal to ``model.trace`` up to float rounding.
    """
    if ids.dim() != 1 or len(ids) < 1:
        raise ValueError("trace_cells expects a non-empty 1-D tensor of character ids")
    kind = model.config.kind
    quantities = QUANTITIES[kind]
    config = model.config
    values = np.empty((len(quantities), config.layers, len(ids), config.hidden), dtype=np.float32)  # (Q, L, T, H)
    was_training = model.training
    model.eval()
    try:
        device = model.head.weight.device
        layer_input = model.inputs(ids.to(device).view(1, -1))[0]  # (T, D)
        for layer in range(config.layers):
            if kind in STATE_KINDS:  # each layer's output by its fast path, from a zero state
                layer_input = model.rnn.layers[layer](layer_input.unsqueeze(0))[0][0]  # (T, H)
                values[0, layer] = layer_input.float().cpu().numpy()
                continue
            weights = model.rnn.layer_weights(layer)
            h, _ = _single_layer(model, layer)(layer_input.unsqueeze(0))
            h = h[0]  # (T, H)
            h_prev = torch.cat([h.new_zeros(1, h.size(1)), h[:-1]])  # (T, H), h_{t−1} with h_0 = 0
            gi = F.linear(layer_input, weights.w_ih, weights.b_ih)  # (T, G·H)
            gh = F.linear(h_prev, weights.w_hh, weights.b_hh)  # (T, G·H)
            if kind == "lstm":
                i_pre, f_pre, g_pre, o_pre = (gi + gh).chunk(4, dim=-1)
                i, f, g, o = (torch.sigmoid(i_pre), torch.sigmoid(f_pre), torch.tanh(g_pre), torch.sigmoid(o_pre))
                named = {"h": h, "i": i, "f": f, "g": g, "o": o}
            elif kind == "gru":
                i_r, i_z, i_n = gi.chunk(3, dim=-1)
                h_r, h_z, h_n = gh.chunk(3, dim=-1)
                r = torch.sigmoid(i_r + h_r)
                named = {"h": h, "r": r, "z": torch.sigmoid(i_z + h_z), "n": torch.tanh(i_n + r * h_n)}
            else:
                named = {"h": h}
            for q, name in enumerate(quantities):
                if name in named:
                    values[q, layer] = named[name].float().cpu().numpy()
            if kind == "lstm":
                q_i, q_f, q_g, q_c = (quantities.index(name) for name in "ifgc")
                _cell_path(values[q_f, layer], values[q_i, layer] * values[q_g, layer], values[q_c, layer])
            layer_input = h
        probs = torch.softmax(model.head(layer_input).float(), dim=-1)  # (T, V)
        top = torch.topk(probs, min(top_next, probs.size(-1)), dim=-1)
    finally:
        model.train(was_training)
    next_ids, next_probs = top.indices.cpu().numpy(), top.values.cpu().numpy()
    for array in (values, next_ids, next_probs):
        array.flags.writeable = False  # shared between reruns and sessions: nobody may change it
    return CellTrace(kind, QUANTITIES[kind], values, next_ids, next_probs)


# ---------------------------------------------------------------------------------------------------------
# Ranking


@dataclass(frozen=True)
class RankedCell:
    """A cell's score against one feature."""

    cell: CellId
    r: float  # Pearson correlation with the feature
    accuracy: float | None = None  # best threshold accuracy (0/1 features only)
    threshold: float | None = None  # θ of that accuracy
    above: bool | None = None  # True: the cell says "feature on" when a_t > θ; False: when a_t < θ


@dataclass(frozen=True)
class FeatureRanking:
    """The cells that track one feature best over a text."""

    feature: str
    by_correlation: tuple[RankedCell, ...]  # top cells by |r|, best first
    by_accuracy: tuple[RankedCell, ...]  # 0/1 features: top cells by threshold accuracy; else ()
    base_rate: float | None  # 0/1 features: accuracy of always guessing the more common value
    varies: bool  # False when the feature is constant over the text (nothing to rank)
    clearest: RankedCell | None = None  # best |r| among cells that track this feature more than any other

    @property
    def best(self) -> RankedCell | None:
        return self.by_correlation[0] if self.by_correlation else None


def correlations(trace: CellTrace, tracks: dict[str, np.ndarray]) -> np.ndarray:
    """Pearson r of every cell with every track: (Q, L, H, F), F in the order of ``tracks``.

    r = Σ_t a_t ỹ_t / (T σ_a σ_y) with ỹ = y − ȳ (the a_t mean drops out because Σ ỹ_t = 0); r is 0 for a
    constant cell or a constant track.
    """
    ys = np.stack([np.asarray(y, dtype=np.float64) for y in tracks.values()], axis=1)  # (T, F)
    if ys.shape[0] != trace.length:
        raise ValueError(f"the feature tracks have {ys.shape[0]} steps but the trace has {trace.length}")
    centred = ys - ys.mean(axis=0)
    sigma_y = ys.std(axis=0)  # (F,)
    n_q, n_l, length, hidden = trace.values.shape
    out = np.zeros((n_q, n_l, hidden, ys.shape[1]))
    centred32 = centred.astype(np.float32)
    for q in range(n_q):
        for layer in range(n_l):
            block = trace.values[q, layer]  # (T, H), a view
            covariance = (block.T @ centred32).astype(np.float64) / length  # (H, F)
            sigma_a = block.std(axis=0).astype(np.float64)  # (H,)
            denominator = np.outer(sigma_a, sigma_y)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[q, layer] = np.where(denominator > 1e-12, covariance / denominator, 0.0)
    return np.clip(out, -1.0, 1.0)


def best_thresholds(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(accuracy, θ, above) per row of ``values`` (K, T): the best single-threshold rule for 0/1 ``labels`` (T,).

    Exact: every cut between two distinct sorted values is tried, in both directions ("on" when a > θ, or
    when a < θ), and the two ends (always 0, always 1) too, so the accuracy is never below the base rate.
    """
    values = torch.as_tensor(np.ascontiguousarray(values), dtype=torch.float32)
    if values.dim() == 1:
        values = values.unsqueeze(0)
    k, n = values.shape
    v, order = torch.sort(values, dim=1)  # (K, T)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.float64)[order]  # (K, T), labels in sorted order
    zeros = torch.zeros(k, 1, dtype=torch.float64)
    positives_below = torch.cat([zeros, torch.cumsum(y, dim=1)], dim=1)  # (K, T + 1): cut j puts v[:, :j] below
    negatives_below = torch.arange(n + 1, dtype=torch.float64) - positives_below
    total_positives = positives_below[:, -1:]
    accuracy_above = (negatives_below + total_positives - positives_below) / n  # (K, T + 1)
    valid = torch.ones(k, n + 1, dtype=torch.bool)
    valid[:, 1:n] = v[:, 1:] > v[:, :-1]  # cut only between distinct values
    above_scores = torch.where(valid, accuracy_above, -1.0)
    below_scores = torch.where(valid, 1.0 - accuracy_above, -1.0)  # each point is right under exactly one rule
    best_above, cut_above = above_scores.max(dim=1)
    best_below, cut_below = below_scores.max(dim=1)
    above = best_above >= best_below
    cut = torch.where(above, cut_above, cut_below)  # (K,)
    padded = torch.cat([v[:, :1] - 1.0, v, v[:, -1:] + 1.0], dim=1)  # (K, T + 2): a value below all, above all
    theta = 0.5 * (padded.gather(1, cut[:, None]) + padded.gather(1, cut[:, None] + 1))[:, 0]
    theta = torch.where(cut == 0, v[:, 0] - 1.0, torch.where(cut == n, v[:, -1] + 1.0, theta))
    accuracy = torch.where(above, best_above, best_below)
    return accuracy.numpy(), theta.double().numpy(), above.numpy()


def rank_cells(
    trace: CellTrace, tracks: dict[str, np.ndarray], top: int = 10, candidates: int = 32
) -> dict[str, FeatureRanking]:
    """For each track, the ``top`` cells by |r|, and for 0/1 tracks also by best threshold accuracy.

    The accuracy ranking looks at the ``candidates`` cells of highest |r| (a rule that separates a 0/1
    feature well also correlates with it), so it stays exact and fast for thousands of cells.
    """
    r = correlations(trace, tracks)  # (Q, L, H, F)
    flat = r.reshape(-1, r.shape[-1])  # (Q·L·H, F)
    n_l, hidden = r.shape[1:3]

    def cell_at(k: int) -> CellId:
        q, rest = divmod(int(k), n_l * hidden)
        layer, unit = divmod(rest, hidden)
        return CellId(layer, unit, trace.quantities[q])

    strongest = np.abs(flat).argmax(axis=1)  # (Q·L·H,): each cell's best-tracked feature
    rankings = {}
    for j, (name, y) in enumerate(tracks.items()):
        varies = bool(np.ptp(y) > 0)
        order = np.argsort(-np.abs(flat[:, j])) if varies else np.array([], dtype=int)
        by_r = tuple(RankedCell(cell_at(k), float(flat[k, j])) for k in order[:top])
        own = order[strongest[order] == j][:1]
        clearest = RankedCell(cell_at(own[0]), float(flat[own[0], j])) if own.size else None
        by_accuracy, base_rate = (), None
        binary = FEATURES[name].binary if name in FEATURES else bool(np.isin(y, (0, 1)).all())
        if binary:
            base_rate = float(max(y.mean(), 1 - y.mean()))
            chosen = [cell_at(k) for k in order[:candidates]]
            if chosen:
                accuracy, theta, above = best_thresholds(np.stack([trace.cell(c) for c in chosen]), y)
                scored = [RankedCell(c, float(flat[k, j]), float(a), float(th), bool(ab))
                          for c, k, a, th, ab in zip(chosen, order, accuracy, theta, above)]
                by_accuracy = tuple(sorted(scored, key=lambda c: -c.accuracy)[:top])
        rankings[name] = FeatureRanking(name, by_r, by_accuracy, base_rate, varies, clearest)
    return rankings


def sorted_units(trace: CellTrace, layer: int, quantity: str, track: np.ndarray) -> np.ndarray:
    """Units of one layer and quantity, by decreasing |r| with ``track``."""
    block = trace.block(layer, quantity)  # (T, H)
    centred = track.astype(np.float64) - track.mean()
    covariance = block.T.astype(np.float64) @ centred / len(track)
    denominator = block.std(axis=0).astype(np.float64) * track.std()
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(denominator > 1e-12, covariance / denominator, 0.0)
    return np.argsort(-np.abs(r), kind="stable")


# ---------------------------------------------------------------------------------------------------------
# Pattern search


@dataclass(frozen=True)
class Match:
    """A range [start, end) where every selected cell is on."""

    start: int
    end: int
    score: float  # mean over the range of (selected cells on) / (all cells on): 1 when only they are on


def pattern_cells(
    block: np.ndarray, start: int, end: int, threshold: float = 0.3, pad_before: int = 0, pad_after: int = 0
) -> np.ndarray:
    """Units of ``block`` (T, H) that are ≥ θ at every t in [start, end) and < θ in the padding around it.

    The padding is [start − pad_before, start) and [end, end + pad_after), cut at the ends of the text.
    """
    length = block.shape[0]
    if not 0 <= start < end <= length:
        raise ValueError(f"the range must satisfy 0 ≤ start < end ≤ {length}, got [{start}, {end})")
    if pad_before < 0 or pad_after < 0:
        raise ValueError("padding must be at least 0")
    on = (block[start:end] >= threshold).all(axis=0)
    before = block[max(start - pad_before, 0) : start]
    after = block[end : min(end + pad_after, length)]
    off = (before < threshold).all(axis=0) & (after < threshold).all(axis=0)
    return np.flatnonzero(on & off)


def match_ranges(
    block: np.ndarray,
    units: Sequence[int],
    threshold: float = 0.3,
    exclude: tuple[int, int] | None = None,
    target_length: int | None = None,
    top: int = 20,
) -> list[Match]:
    """Maximal ranges where every unit in ``units`` is ≥ θ, best first.

    Score: the mean over the range of |S| / |on_t|, the share of the cells on at step t that belong to the
    selection S (1 when the selection alone is on). Scores equal to two decimals (as shown) prefer a length
    close to ``target_length``.
    Ranges overlapping ``exclude`` (the selected range itself) are left out.
    """
    units = np.asarray(units, dtype=int)
    if units.size == 0:
        return []
    on_all = block >= threshold  # (T, H)
    selected_on = on_all[:, units].all(axis=1)  # (T,)
    share = units.size / np.maximum(on_all.sum(axis=1), 1)  # (T,)
    edges = np.diff(np.concatenate([[0], selected_on.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    matches = []
    for s, e in zip(starts, ends):
        if exclude is not None and s < exclude[1] and exclude[0] < e:
            continue
        matches.append(Match(int(s), int(e), float(share[s:e].mean())))
    target = target_length or 0
    matches.sort(key=lambda m: (-round(m.score, 2), abs((m.end - m.start) - target), m.start))
    return matches[:top]


# ---------------------------------------------------------------------------------------------------------
# Ablation


def ablated_model(model: CharModel, layer: int, unit: int) -> CharModel:
    """A copy of ``model`` that behaves as if h_t[layer, unit] were held at 0 at every step.

    The unit's h reaches the rest of the network only through column ``unit`` of its layer's W_hh and of
    the next layer's W_ih (or of the readout W_hy for the top layer), so zeroing those columns is the same
    as zeroing the unit's row of the state, and the copy still runs on the fused kernels.
    """
    config = model.config
    if not 0 <= layer < config.layers or not 0 <= unit < config.hidden:
        raise ValueError(f"cell (layer {layer}, unit {unit}) is outside {config.layers} × {config.hidden}")
    copy_ = copy.deepcopy(model)
    with torch.no_grad():
        getattr(copy_.rnn, f"weight_hh_l{layer}")[:, unit] = 0.0
        reader = getattr(copy_.rnn, f"weight_ih_l{layer + 1}") if layer + 1 < config.layers else copy_.head.weight
        reader[:, unit] = 0.0
    return copy_


def ablation_importance(
    model: CharModel,
    ids: Tensor,
    cells: Sequence[CellId],
    progress: Callable[[int, int], None] | None = None,
) -> tuple[float, list[float]]:
    """(loss with nothing ablated, [Δ loss when each cell's unit is ablated]) on ``ids``, in nats/char.

    Ablating a unit sets its h_t to 0 (for an LSTM, clamping c_t to 0 does the same: h_t = o_t ⊙ tanh(0)),
    whichever quantity of the unit was ranked.
    """
    base, _ = sequence_loss(model, ids)
    deltas = []
    for done, cell in enumerate(cells):
        loss, _ = sequence_loss(ablated_model(model, cell.layer, cell.unit), ids)
        deltas.append(loss - base)
        if progress is not None:
            progress(done + 1, len(cells))
    return base, deltas


def cell_correlations(values: np.ndarray, tracks: dict[str, np.ndarray]) -> dict[str, float]:
    """Pearson r of one cell's values with each track (0 where either is constant)."""
    out = {}
    a = np.asarray(values, dtype=np.float64)
    for name, y in tracks.items():
        y = np.asarray(y, dtype=np.float64)
        denominator = a.std() * y.std()
        out[name] = float(np.mean((a - a.mean()) * (y - y.mean())) / denominator) if denominator > 1e-12 else 0.0
    return out
