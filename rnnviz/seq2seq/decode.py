"""Decoding (greedy, sampling, beam search with its tree), accuracy by input length, and the bytes each decoder reads.

Every decoder here steps ``Seq2Seq.step`` (the traced cell), so the attention row of output step i is α_i·, the
weights the decoder used to write y_i. A decoding stops at <END> (included in ``ids``) or after ``max_len`` tokens
(default: the input's length + 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rnnviz.core import beam as core_beam
from rnnviz.core.beam import BeamNode
from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import Memory, Seq2Seq

EXTRA_STEPS = 5  # a decoding may run this many tokens past the right answer's length before it is cut


@dataclass(frozen=True, eq=False)
class Decoding:
    """One decoded output, with what the decoder did at each output step i."""

    input: str
    output: str  # letters before <END>
    ids: tuple[int, ...]  # the tokens written, <END> included when reached
    logprobs: np.ndarray  # (T_out,) log p(y_i | y_<i, x) of each token written
    attention: np.ndarray | None  # (T_out, T_in): row i is α_i over the input; None for the fixed join
    states: np.ndarray  # (T_out, H_d): the decoder's s_i

    @property
    def finished(self) -> bool:
        return bool(self.ids) and self.ids[-1] == task.END_ID

    @property
    def correct(self) -> bool:
        return self.finished and self.output == task.target(self.input)

    @property
    def logprob(self) -> float:
        return float(self.logprobs.sum())


def _memory(model: Seq2Seq, texts: list[str]) -> Memory:
    for text in texts:
        task.check_input(text, model.letters, model.config.max_input)
    return model.encode(*task.source_tensor(texts, model.letters))


def _cap(text: str, max_len: int | None) -> int:
    cap = len(text) + 1 + EXTRA_STEPS if max_len is None else max_len
    if cap < 1:
        raise ValueError(f"max_len must be at least 1, not {max_len}")
    return cap


def _texts(texts: str | list[str]) -> list[str]:
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts:
        raise ValueError("Give at least one input.")
    return texts


@torch.no_grad()
def _decode(model: Seq2Seq, texts: list[str], max_len: int | None, temperature: float | None,
            generator: torch.Generator | None) -> list[Decoding]:
    model.eval()
    memory = _memory(model, texts)
    caps = torch.tensor([_cap(t, max_len) for t in texts])
    n = len(texts)
    state = model.initial_state(memory)
    tokens = torch.full((n,), task.START_ID, dtype=torch.long)
    done = torch.zeros(n, dtype=torch.bool)
    ids, logps, alphas, hs = [], [], [], []
    for i in range(int(caps.max())):
        logits, state, alpha = model.step(tokens, state, memory)
        log_p = torch.log_softmax(logits, -1)  # (N, V)
        if temperature is None:
            tokens = log_p.argmax(-1)
        else:
            tokens = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)[:, 0]
        ids.append(torch.where(done, torch.full_like(tokens, task.PAD_ID), tokens))
        logps.append(log_p.gather(1, tokens[:, None])[:, 0])
        alphas.append(alpha)
        hs.append(state[0])
        done |= (tokens == task.END_ID) | (i + 1 >= caps)
        if bool(done.all()):
            break
    ids_t = torch.stack(ids, 1)  # (N, T_out)
    logp_t, h_t = torch.stack(logps, 1), torch.stack(hs, 1)
    alpha_t = torch.stack(alphas, 1) if alphas[0] is not None else None  # (N, T_out, T_in)
    out = []
    for k, text in enumerate(texts):
        row = [int(t) for t in ids_t[k] if int(t) != task.PAD_ID][: int(caps[k])]
        steps = len(row)
        att = None if alpha_t is None else alpha_t[k, :steps, : len(text)].numpy().copy()
        out.append(Decoding(text, task.decode(row, model.letters), tuple(row), logp_t[k, :steps].numpy().copy(),
                            att, h_t[k, :steps].numpy().copy()))
    return out


def greedy(model: Seq2Seq, texts: str | list[str], max_len: int | None = None) -> list[Decoding]:
    """The most probable token at each step, for each input."""
    return _decode(model, _texts(texts), max_len, None, None)


def sample(model: Seq2Seq, texts: str | list[str], temperature: float = 1.0, seed: int = 0,
           max_len: int | None = None) -> list[Decoding]:
    """Tokens drawn from softmax(logits / temperature) at each step, from a generator seeded with ``seed``."""
    if not temperature > 0:
        raise ValueError(f"The temperature must be positive, not {temperature}")
    return _decode(model, _texts(texts), max_len, temperature, torch.Generator().manual_seed(seed))


@torch.no_grad()
def rerun(model: Seq2Seq, text: str, ids: tuple[int, ...] | list[int]) -> Decoding:
    """The decoder fed the tokens ``ids`` (teacher forcing through the traced step): their log-probs, α and s_i."""
    model.eval()
    memory = _memory(model, [text])
    state = model.initial_state(memory)
    tokens = [task.START_ID, *ids]
    logps, alphas, hs = [], [], []
    for i, y in enumerate(ids):
        logits, state, alpha = model.step(torch.tensor([tokens[i]]), state, memory)
        logps.append(float(torch.log_softmax(logits, -1)[0, y]))
        alphas.append(None if alpha is None else alpha[0])
        hs.append(state[0][0])
    att = None if model.join == "fixed" or not ids else torch.stack(alphas).numpy()
    states = torch.stack(hs).numpy() if ids else np.zeros((0, model.config.dec_hidden), dtype=np.float32)
    return Decoding(text, task.decode(ids, model.letters), tuple(int(i) for i in ids), np.array(logps), att, states)


@torch.no_grad()
def beam_search(model: Seq2Seq, text: str, width: int = 3,
                max_len: int | None = None) -> tuple[list[Decoding], list[list[BeamNode]]]:
    """The ``width`` best outputs for one input (best first, each with its α and s_i) and the beam tree
    (rnnviz.core.beam, shared with the captioner): tree[t] holds the nodes alive after step t. Width 1 is greedy."""
    if not 1 <= width <= 10:
        raise ValueError(f"The beam width is 1 to 10, not {width}")
    model.eval()
    memory = _memory(model, [text])

    def step(tokens: Tensor, carry):
        state, mem = carry
        logits, state, _ = model.step(tokens, state, mem)
        return torch.log_softmax(logits, -1), (state, mem)

    def select(carry, rows: Tensor):
        (s, c), mem = carry
        return (s[rows], c[rows]), mem.select(rows)

    found, tree = core_beam.beam_search(step, (model.initial_state(memory), memory), select, task.START_ID,
                                        task.END_ID, width, _cap(text, max_len))
    return [rerun(model, text, b.ids) for b in found], tree


# ---------------------------------------------------------------------------------------------------------
# Metrics


def char_accuracy(output: str, truth: str) -> float:
    """Share of positions right, over the longer of the two (a missing or extra letter counts as wrong)."""
    n = max(len(output), len(truth))
    return sum(a == b for a, b in zip(output, truth)) / n if n else 1.0


def accuracy(model: Seq2Seq, texts: list[str], batch: int = 500) -> dict[str, float]:
    """Greedy exact match and per-character accuracy of ``model`` on ``texts``."""
    exact = chars = 0.0
    for i in range(0, len(texts), batch):
        for d in greedy(model, texts[i:i + batch]):
            truth = task.target(d.input)
            exact += d.correct
            chars += char_accuracy(d.output, truth)
    return {"exact": exact / len(texts), "char": chars / len(texts)}


def accuracy_by_length(models: Seq2Seq | dict[str, Seq2Seq], lengths, n_per_length: int = 200,
                       seed: int = task.EVAL_SEED) -> list[dict]:
    """Held-out accuracy per input length, one record per (model, length):
    {"model", "length", "exact", "char", "n", "trained"} ("trained": the length lies in the training range).
    Every model reads the same strings (``task.eval_strings(length, n, letters, seed)``)."""
    models = {"model": models} if isinstance(models, Seq2Seq) else dict(models)
    if n_per_length < 1:
        raise ValueError(f"n_per_length must be at least 1, not {n_per_length}")
    rows = []
    for name, model in models.items():
        c = model.config
        for length in lengths:
            if not 1 <= length <= c.max_input:
                raise ValueError(f"Lengths are 1 to {c.max_input} for this model, not {length}")
            figures = accuracy(model, task.eval_strings(length, n_per_length, c.letters, seed))
            rows.append({"model": name, "length": int(length), **figures, "n": n_per_length,
                         "trained": c.train_min <= length <= c.train_max})
    return rows


# ---------------------------------------------------------------------------------------------------------
# What each decoder reads


def _nbytes(*tensors: Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@torch.no_grad()
def bytes_read(model: Seq2Seq, text: str) -> dict[str, int]:
    """Bytes the decoder reads about the input, measured from the tensors of a real encoding of ``text``:
    "context" the initial state (s_0, c_0) it starts from (the same for 1 letter or 40), "memory" the encoder states
    h_j and their keys U_a h_j that attention reads at every step (grows with the input; 0 for the fixed join)."""
    model.eval()
    memory = _memory(model, [text])
    s0, c0 = model.initial_state(memory)
    mem = 0 if model.join == "fixed" else _nbytes(memory.states, memory.keys)
    return {"context": _nbytes(s0, c0), "memory": mem, "total": _nbytes(s0, c0) + mem}


def bytes_by_length(models: dict[str, Seq2Seq], lengths, seed: int = 0) -> list[dict]:
    """bytes_read per model and input length (a random string of each length): records
    {"model", "length", "context", "memory", "total"}."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, model in models.items():
        for length in lengths:
            text = task.random_strings(rng, 1, length, length, model.letters)[0]
            rows.append({"model": name, "length": int(length), **bytes_read(model, text)})
    return rows
