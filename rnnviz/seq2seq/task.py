"""The task: reverse a random string of lower-case letters ("abcde" → "edcba"), generated procedurally.

Why reversal: the output's length equals the input's, so exact match is well defined at every length, and its
alignment is the anti-diagonal (output step i reads input position T − i + 1), which an attention heatmap shows at a
glance. Why the 26 letters a–z rather than 10: each character carries log₂ 26 ≈ 4.7 bits instead of 3.3, so a
fixed context of a few hundred numbers runs out of room within the training lengths (1–20), while a user can type
any lower-case word. Training strings (lengths 1…L by default) and the held-out sets (every length 1…2L, one
seed per length) come from different seeds of numpy's Generator.

Tokens: <PAD> = 0, <START> = 1, <END> = 2, then the alphabet.
"""

from __future__ import annotations

import string

import numpy as np
import torch
from torch import Tensor

PAD, START, END = "<PAD>", "<START>", "<END>"
PAD_ID, START_ID, END_ID = 0, 1, 2
SPECIALS = (PAD, START, END)
LETTERS = string.ascii_lowercase
EVAL_SEED = 10_000  # held-out sets: seed EVAL_SEED + length, never a training seed


def alphabet(size: int) -> str:
    """The first ``size`` lower-case letters (2 to 26)."""
    if not 2 <= size <= len(LETTERS):
        raise ValueError(f"The alphabet has 2 to 26 letters, not {size}")
    return LETTERS[:size]


def vocab(letters: str) -> tuple[str, ...]:
    """Tokens by id: <PAD>, <START>, <END>, then the letters."""
    return (*SPECIALS, *letters)


def check_input(text: str, letters: str, max_len: int) -> str:
    """``text`` when a model over ``letters`` reading at most ``max_len`` characters can take it; else ValueError."""
    if not isinstance(text, str) or not text:
        raise ValueError("The input is empty: type at least one letter.")
    outside = sorted(set(text) - set(letters))
    if outside:
        raise ValueError(f"Character(s) {', '.join(map(repr, outside))} are outside the alphabet {letters[0]}–"
                         f"{letters[-1]}.")
    if len(text) > max_len:
        raise ValueError(f"The input has {len(text)} characters; this model reads at most {max_len}.")
    return text


def target(text: str) -> str:
    """The right answer: the input reversed."""
    return text[::-1]


def encode(text: str, letters: str) -> list[int]:
    """Ids of the letters of ``text`` (no specials); assumes check_input passed."""
    return [3 + letters.index(ch) for ch in text]


def decode(ids, letters: str) -> str:
    """Letters of ids, stopping at <END>, skipping <PAD> and <START>."""
    out = []
    for i in ids:
        i = int(i)
        if i == END_ID:
            break
        if i >= 3:
            out.append(letters[i - 3])
    return "".join(out)


def random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int, letters: str) -> list[str]:
    """``n`` random strings, lengths uniform in [min_len, max_len], letters uniform."""
    lengths = rng.integers(min_len, max_len + 1, size=n)
    chars = rng.integers(0, len(letters), size=(n, max_len))
    return ["".join(letters[c] for c in row[:k]) for row, k in zip(chars, lengths)]


def eval_strings(length: int, n: int, letters: str, seed: int = EVAL_SEED) -> list[str]:
    """The held-out set at one length: ``n`` strings from seed ``seed + length``."""
    return random_strings(np.random.default_rng(seed + length), n, length, length, letters)


def source_tensor(texts: list[str], letters: str) -> tuple[Tensor, Tensor]:
    """(ids (N, T_in) padded with <PAD>, lengths (N,))."""
    lengths = torch.tensor([len(t) for t in texts], dtype=torch.long)
    out = torch.full((len(texts), int(lengths.max())), PAD_ID, dtype=torch.long)
    for n, text in enumerate(texts):
        out[n, : len(text)] = torch.tensor(encode(text, letters))
    return out, lengths


def target_tensors(texts: list[str], letters: str) -> tuple[Tensor, Tensor]:
    """Teacher forcing: (decoder inputs <START> y_1 … y_T, targets y_1 … y_T <END>), each (N, T_out), padded."""
    t_out = max(len(t) for t in texts) + 1
    inputs = torch.full((len(texts), t_out), PAD_ID, dtype=torch.long)
    targets = torch.full((len(texts), t_out), PAD_ID, dtype=torch.long)
    for n, text in enumerate(texts):
        ids = encode(target(text), letters)
        inputs[n, : len(ids) + 1] = torch.tensor([START_ID, *ids])
        targets[n, : len(ids) + 1] = torch.tensor([*ids, END_ID])
    return inputs, targets
