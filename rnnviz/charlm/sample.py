"""Generate text from a character model: temperature/top-k/top-p sampling, greedy, beam search, interventions.

At each step the model gives logits z over the V characters and p = softmax(z / τ):

- τ = 0 is greedy decoding, x_{t+1} = argmax z (top-k and top-p do not apply);
- top-k keeps the k largest logits and renormalises over them;
- top-p (nucleus sampling, Holtzman et al. 2020) keeps the smallest set of most likely characters whose
  probabilities add up to at least p (always the most likely one), and renormalises over them. With both,
  top-k applies first and top-p to what it kept, as Hugging Face's generate does;
- beam search keeps the ``beam_width`` continuations with the highest total log-probability
  Σ_t log p(x_{t+1} | x_{≤t}).

Interventions clamp one unit of h_t (or of the LSTM cell c_t) of one layer to a fixed value at every
step, prime included; 0 ablates it. They run on the cells.py step functions, so that the clamped value
is what the next layer, the readout and the next step all see. They apply to RNN, LSTM, GRU and minGRU models,
whose whole state is h_t (and c_t).

A Transformer samples with its key/value cache (``CharTransformer.prefill`` then ``step``): what it carries
from one character to the next is K and V of every earlier position, not a state vector. Past its context
the window slides: each new character is predicted from the last ``block_size`` characters.

The CLI lives in ``rnnviz.cli``: ``rnnviz sample --help``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.charlm.corpus import Vocab
from rnnviz.core.cells import gru_cell, lstm_cell, rnn_cell
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import kind_label
from rnnviz.core.mingru import mingru_cell
from rnnviz.core.recurrent import State
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.core.transformer import CharTransformer, KVCache

Model = CharModel | CharTransformer


@dataclass(frozen=True)
class Intervention:
    """Hold one cell at ``value`` at every step: h_t[layer, :, unit] (or c_t's, with on="c") ← value."""

    layer: int  # 0-based layer
    unit: int  # 0-based unit in that layer
    value: float = 0.0  # 0.0 ablates the cell
    on: str = "h"  # "h", the hidden output, or "c", the LSTM cell state


@dataclass(frozen=True)
class Beam:
    """One beam-search result: the continuation (prime excluded) and its total log-probability."""

    text: str
    log_prob: float  # Σ log p(x_{t+1} | x_{≤t}) over the continuation, in nats


@dataclass(frozen=True)
class NextCharTable:
    """Top-k next characters after every position of a text, for plots."""

    text: str
    chars: list[list[str]]  # chars[t][j]: j-th most likely character after text[: t + 1]
    probs: np.ndarray  # (T, k) their probabilities


@dataclass(frozen=True)
class ExposureBias:
    """Per-position loss on a passage's continuation: fed the true text against fed the model's own."""

    prefix: str
    target: str  # the true continuation
    continuation: str  # the model's own, from the same prefix
    teacher_forced: np.ndarray  # (n,) −log p(target[t] | prefix + target[:t])
    free_running: np.ndarray  # (n,) −log p(target[t] | prefix + continuation[:t])


def _model_device(model: Model) -> torch.device:
    return model.head.weight.device


def _validate_interventions(model: Model, interventions: Sequence[Intervention]) -> None:
    config = model.config
    if interventions and isinstance(model, CharTransformer):
        raise ValueError(
            "cell interventions clamp a unit of a recurrent model's h_t or c_t; a Transformer has no such state "
            "(it carries a key/value cache), so they apply to RNN, LSTM, GRU and minGRU models only"
        )
    if interventions and config.kind in STATE_KINDS:
        raise ValueError(f"cell interventions clamp a unit of h_t or c_t, the whole state of an RNN, LSTM, GRU or "
                         f"minGRU; a {kind_label(config.kind)} carries more than that, so they apply to those kinds "
                         "only")
    for iv in interventions:
        if not 0 <= iv.layer < config.layers:
            raise ValueError(f"intervention layer {iv.layer} is outside 0…{config.layers - 1}")
        if not 0 <= iv.unit < config.hidden:
            raise ValueError(f"intervention unit {iv.unit} is outside 0…{config.hidden - 1}")
        if iv.on not in ("h", "c") or (iv.on == "c" and config.kind != "lstm"):
            raise ValueError(f"intervention target must be 'h', or 'c' for an LSTM, not {iv.on!r}")


def _step_with_interventions(
    model: CharModel, idx: Tensor, state: State | None, interventions: Sequence[Intervention]
) -> tuple[Tensor, State]:
    """One step of every layer through cells.py with the clamps applied; idx (N,) → logits (N, V)."""
    rnn, config = model.rnn, model.config
    if state is None:
        state = rnn.zero_state(idx.size(0), idx.device)
    h0, c0 = state if config.kind == "lstm" else (state, None)
    x = model.inputs(idx.view(-1, 1))[:, 0]  # (N, D)
    new_h, new_c = [], []
    for layer in range(config.layers):
        weights = rnn.layer_params(layer) if config.kind == "mingru" else rnn.layer_weights(layer)
        clamps = [iv for iv in interventions if iv.layer == layer]
        if config.kind == "lstm":
            step = lstm_cell(x, (h0[layer], c0[layer]), weights)
            c = step.c_t.clone()
            for iv in clamps:
                if iv.on == "c":
                    c[:, iv.unit] = iv.value
            h = step.o_t * torch.tanh(c)  # h_t = o_t ⊙ tanh(c_t), with c_t as clamped
            new_c.append(c)
        elif config.kind == "gru":
            h = gru_cell(x, h0[layer], weights).h_t.clone()
        elif config.kind == "mingru":
            h = mingru_cell(x, h0[layer], *weights).h_t.clone()
        else:
            h = rnn_cell(x, h0[layer], weights, rnn.nonlinearity).h_t.clone()
        for iv in clamps:
            if iv.on == "h":
                h[:, iv.unit] = iv.value
        new_h.append(h)
        x = h
    h_n = torch.stack(new_h)  # (L, N, H)
    state = (h_n, torch.stack(new_c)) if config.kind == "lstm" else h_n
    return model.head(x), state


# torch's single-step kernels: the sums of nn.RNN / nn.LSTM / nn.GRU for one time step, without the fused
# module's per-call checks (for one character at batch 1, 1 × 256 LSTM, one thread: 0.07 ms against 0.20 ms).
_CELL_KERNELS = {"lstm": torch.lstm_cell, "gru": torch.gru_cell, "tanh": torch.rnn_tanh_cell,
                 "relu": torch.rnn_relu_cell}


def _steps_by_cell(model: Model) -> bool:
    """Whether one step of ``model`` can go through _cell_step: a recurrent CharModel of torch's kinds, with
    nothing between its layers (evaluation, or no dropout) and no projection of h_t."""
    return (isinstance(model, CharModel) and model.config.kind in ("rnn", "lstm", "gru")
            and (not model.training or model.config.dropout == 0) and not getattr(model.rnn, "proj_size", 0))


def _cell_step(model: CharModel, idx: Tensor, state: State) -> tuple[Tensor, State]:
    """One character for every row, idx (N,) → logits (N, V) and the new state: h_t (and c_t) layer by layer,
    with the module's own weights, the same as ``model(idx[:, None], state=state)`` up to float rounding."""
    rnn, kind = model.rnn, model.config.kind
    kernel = _CELL_KERNELS["lstm" if kind == "lstm" else "gru" if kind == "gru" else rnn.nonlinearity]
    x = model.inputs(idx.view(-1, 1))[:, 0]  # (N, D)
    new_h, new_c = [], []
    for layer in range(model.config.layers):
        weights = (getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"weight_hh_l{layer}"),
                   getattr(rnn, f"bias_ih_l{layer}", None), getattr(rnn, f"bias_hh_l{layer}", None))
        if kind == "lstm":
            h, c = kernel(x, (state[0][layer], state[1][layer]), *weights)
            new_c.append(c)
        else:
            h = kernel(x, state[layer], *weights)
        new_h.append(h)
        x = h
    h_n = torch.stack(new_h)  # (L, N, H)
    return model.head(x), ((h_n, torch.stack(new_c)) if kind == "lstm" else h_n)


def _advance(
    model: Model, ids: Tensor, state: State | KVCache | None, interventions: Sequence[Intervention] = ()
) -> tuple[Tensor, State | KVCache]:
    """Feed ids (N, T); returns the logits after the last one (N, V) and the state (a Transformer's cache)."""
    if isinstance(model, CharTransformer):
        if state is None:
            logits, cache = model.prefill(ids)  # (N, T_w, V)
            return logits[:, -1], cache
        for t in range(ids.size(1)):
            last, state = model.step(ids[:, t], state)  # (N, V)
        return last, state
    if not interventions:
        if ids.size(1) == 1 and state is not None and _steps_by_cell(model):
            return _cell_step(model, ids[:, 0], state)
        logits, _, state = model(ids, state=state)
        return logits[:, -1], state
    for t in range(ids.size(1)):
        last, state = _step_with_interventions(model, ids[:, t], state, interventions)
    return last, state


def _prime_ids(vocab: Vocab, prime: str, device: torch.device) -> Tensor:
    """The prime's ids (1, P); an empty prime starts from a newline (or the first character)."""
    if not prime:
        prime = "\n" if "\n" in vocab.chars else vocab.chars[0]
    return vocab.encode(prime).to(device).view(1, -1)


def logits_everywhere(model: Model, ids: Tensor) -> Tensor:
    """Logits (N, T, V) after every position of ids (N, T): one pass of a recurrent model from h_0 = 0, or
    a Transformer's sliding window over texts longer than its context."""
    if isinstance(model, CharTransformer):
        return model.windowed_logits(ids)
    return model(ids)[0]


def check_top_p(top_p: float | None) -> None:
    """Raise ValueError unless top_p is None (off) or in (0, 1]."""
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be more than 0 and at most 1 (1 or None keeps every character), not {top_p}")


# Cumulative probabilities within this of p count as reaching it, so that the float rounding of a sum that is
# exactly p (0.5 + 0.3 for p = 0.8) does not add one more character to the nucleus.
NUCLEUS_TOLERANCE = 1e-6


def sampling_probs(logits: Tensor, temperature: float, top_k: int | None = None,
                   top_p: float | None = None) -> Tensor:
    """The distribution a draw at τ = ``temperature`` > 0 comes from, logits (V,) → probabilities (V,).

    Top-k keeps the k largest logits; then p = softmax(z / τ) over them; then top-p keeps the most likely
    characters in order while the probability of the ones before stays below p, and renormalises.
    """
    logits = logits.float().cpu()
    if top_k is not None and top_k < logits.numel():
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    if top_p is None or top_p >= 1:
        return probs
    sorted_probs, order = torch.sort(probs.double(), descending=True)  # (V,)
    before = torch.cumsum(sorted_probs, 0) - sorted_probs  # probability of the characters ahead of each
    drop = order[1:][before[1:] >= top_p - NUCLEUS_TOLERANCE]  # the most likely one is always kept
    return torch.softmax((logits / temperature).index_fill(0, drop, float("-inf")), dim=-1)


def _choose(logits: Tensor, temperature: float, top_k: int | None, generator: torch.Generator,
            top_p: float | None = None) -> int:
    """Greedy when temperature is 0, else a draw from softmax(z / τ) over the top k, then the top-p nucleus."""
    if temperature == 0:
        return int(logits.float().cpu().argmax())
    probs = sampling_probs(logits, temperature, top_k, top_p)
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.no_grad()
def generate(
    model: Model,
    vocab: Vocab,
    prime: str,
    length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int | None = 0,
    interventions: Sequence[Intervention] = (),
    top_p: float | None = None,
) -> str:
    """``length`` characters continuing ``prime`` (the prime is not repeated in the result).

    temperature 0 is greedy (top_k and top_p then do nothing); ``top_k`` keeps the k most likely characters,
    then ``top_p`` the nucleus of what is left (1 or None: off); ``seed`` fixes the draws (None draws fresh
    randomness). Unknown characters in the prime raise corpus.UnknownCharactersError naming them. A
    Transformer keeps a key/value cache and slides its window past its context.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be at least 0, not {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, or None for off, not {top_k}")
    check_top_p(top_p)
    _validate_interventions(model, interventions)
    was_training = model.training
    model.eval()
    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    device = _model_device(model)
    try:
        logits, state = _advance(model, _prime_ids(vocab, prime, device), None, interventions)
        out = []
        for _ in range(length):
            idx = _choose(logits[0], temperature, top_k, generator, top_p)
            out.append(idx)
            logits, state = _advance(model, torch.tensor([[idx]], device=device), state, interventions)
    finally:
        model.train(was_training)
    return vocab.decode(out)


def _select_state(model: Model, state: State | tuple | KVCache, rows: Tensor) -> State | tuple | KVCache:
    """Rows of the batch dimension of a model's state, or of a Transformer's cache."""
    if isinstance(state, KVCache):
        return state.select(rows)
    return model.select_rows(state, rows)


@torch.no_grad()
def beam_search(model: Model, vocab: Vocab, prime: str, length: int, beam_width: int = 5) -> list[Beam]:
    """The ``beam_width`` most probable continuations of ``length`` characters, best first.

    Each step extends every beam by every character, scores each candidate by its total log-probability
    Σ log p(x_{t+1} | x_{≤t}), and keeps the best ``beam_width``. Width 1 is greedy decoding.
    """
    if beam_width < 1:
        raise ValueError(f"beam width must be at least 1, not {beam_width}")
    was_training = model.training
    model.eval()
    device = _model_device(model)
    try:
        logits, state = _advance(model, _prime_ids(vocab, prime, device), None)  # (1, V)
        scores = torch.zeros(1, dtype=torch.float64, device=device)  # (B,)
        sequences = torch.zeros(1, 0, dtype=torch.long, device=device)  # (B, t)
        for _ in range(length):
            log_p = F.log_softmax(logits.double(), dim=-1)  # (B, V)
            candidates = (scores[:, None] + log_p).flatten()  # (B·V,)
            width = min(beam_width, candidates.numel())
            scores, flat = torch.topk(candidates, width)
            rows, chars = flat // log_p.size(1), flat % log_p.size(1)
            sequences = torch.cat([sequences[rows], chars[:, None]], dim=1)
            logits, state = _advance(model, chars[:, None], _select_state(model, state, rows))
    finally:
        model.train(was_training)
    return [Beam(vocab.decode(seq), float(score)) for seq, score in zip(sequences, scores)]


@torch.no_grad()
def next_char_distribution(model: Model, vocab: Vocab, text: str, k: int = 5) -> NextCharTable:
    """For every position t of ``text``, the k most likely next characters given text[: t + 1] (a
    Transformer reads at most its context: the last block_size characters up to t)."""
    was_training = model.training
    model.eval()
    try:
        logits = logits_everywhere(model, vocab.encode(text).to(_model_device(model)).view(1, -1))
    finally:
        model.train(was_training)
    probs = torch.softmax(logits[0].float(), dim=-1)  # (T, V)
    top = torch.topk(probs, min(k, vocab.size), dim=-1)
    chars = [[vocab.chars[i] for i in row] for row in top.indices.tolist()]
    return NextCharTable(text, chars, top.values.cpu().numpy())


@torch.no_grad()
def exposure_bias(
    model: Model,
    vocab: Vocab,
    passage: str,
    prefix_len: int,
    temperature: float = 0.0,
    seed: int = 0,
) -> ExposureBias:
    """Teacher forcing against free running on ``passage`` after its first ``prefix_len`` characters.

    Teacher-forced: the state has read the true text, loss_t = −log p(x_{t+1} | true x_{≤t}).
    Free-running: from the same prefix the model reads its own continuation (greedy by default), and
    loss_t = −log p(x_{t+1} | prefix, own ŷ_{<t}) is still scored against the true next character.
    """
    if not 1 <= prefix_len < len(passage):
        raise ValueError(f"prefix_len must be in 1…{len(passage) - 1}, not {prefix_len}")
    was_training = model.training
    model.eval()
    device = _model_device(model)
    ids = vocab.encode(passage).to(device)
    n = len(ids) - prefix_len
    targets = ids[prefix_len:]  # (n,)
    generator = torch.Generator().manual_seed(seed)
    try:
        logits = logits_everywhere(model, ids.view(1, -1))
        teacher = F.cross_entropy(logits[0, prefix_len - 1 : -1], targets, reduction="none")  # (n,)
        last, state = _advance(model, ids[:prefix_len].view(1, -1), None)
        free, own = [], []
        for t in range(n):
            free.append(F.cross_entropy(last, targets[t : t + 1]).item())
            idx = _choose(last[0], temperature, None, generator)
            own.append(idx)
            last, state = _advance(model, torch.tensor([[idx]], device=device), state)
    finally:
        model.train(was_training)
    return ExposureBias(
        prefix=passage[:prefix_len],
        target=passage[prefix_len:],
        continuation=vocab.decode(own),
        teacher_forced=teacher.cpu().numpy(),
        free_running=np.array(free),
    )
