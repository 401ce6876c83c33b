"""Character n-gram baselines (n = 1…6, interpolated Kneser-Ney) and Karpathy et al.'s error breakdown.

Why Kneser-Ney: it is the standard strongest simple smoothing for n-grams (Chen & Goodman 1998). Add-k
smoothing hands k of mass to every one of the V^(n−1)·V possible events, so at high orders over a vocabulary
of a hundred characters it over-smooths: nearly all of the mass goes to events never seen. Absolute
discounting takes a fixed D from each seen count instead, and Kneser-Ney's continuation counts make the lower
orders answer the question they are asked when the higher order has no answer: how many different contexts
does w follow, not how often it occurs.

Interpolated Kneser-Ney (Chen & Goodman's interpolated form, one discount per order). For a model of order n,
h the n − 1 characters before w and h⁻ the same without its oldest character:

    p_k(w | h) = max(c_k(h w) − D_k, 0) / c_k(h •)  +  D_k · N1+(h •) / c_k(h •) · p_{k−1}(w | h⁻)   if c_k(h •) > 0
    p_k(w | h) = p_{k−1}(w | h⁻)                                                                     otherwise
    p_0(w)     = 1 / V

    c_k(h •)  = Σ_w c_k(h w),   N1+(h •) = #{w : c_k(h w) > 0}
    c_n(g)    = how often the n-gram g occurs in the training ids              (the top order: raw counts)
    c_k(g)    = N1+(• g) = #{v : v g occurs in the training ids},  k < n      (lower orders: continuation counts)
    D_k       = n1 / (n1 + 2 n2),  n_r = the number of k-grams g with c_k(g) = r, counted in the table of c_k

Each table (raw and continuation counts of every order) has its own D. When no k-gram of a table occurs
exactly once (tiny texts only), n1 is taken as 1 so that D > 0 and unseen events keep some mass. D ≤ 1 ≤ every
count, so every p_k(· | h) sums to 1 over the V characters, and p_0 gives every character, seen in training
or not, a non-zero probability.

At the start of a text, where fewer than n − 1 characters precede w, the missing longer contexts count as
unseen: the recursion passes through to the order whose context is there (its continuation counts, as for
any unseen context). This touches only the first n − 2 predictions.

Storage: an n-gram (g_1 … g_k) is the int64 key Σ g_i B^(k−i), with B = (distinct training ids) + 1 (the last
digit stands for every id not seen in training). Each table is a sorted array of keys with their counts
(np.unique), looked up with np.searchsorted; keys sorted by (context, w) put each context's entries in one run.
No dense V^n table and no loop over characters (its cost: ``python -m bench ngram_fit``).

The error breakdown (``error_breakdown``) is section 4.4 of Karpathy, Johnson & Fei-Fei (2015), "Visualizing
and Understanding Recurrent Networks": which characters the model gets right and an n-gram gets wrong, and
of the errors both make, how many a memory of the passage, a knowledge of rare words or of word starts
would explain.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from rnnviz.interpret.textfeatures import SYNTAXES, bracket_depth, prose_quotes, python_string_and_comment

MAX_KEY = np.iinfo(np.int64).max
WORD = re.compile(r"\w+")
RARE_WORD_COUNT = 5  # a word seen at most this often in the training text is rare
_DENSE_CELLS = 1 << 20  # positions × B probabilities per chunk when whole distributions are needed


# ---------------------------------------------------------------------------------------------------------
# Counting


@dataclass(frozen=True, eq=False)
class _Table:
    """One order's counts, raw or continuation, as sorted keys with per-context totals."""

    keys: np.ndarray  # (E,) int64, sorted: the k-gram g_1 … g_k as Σ g_i B^(k−i)
    counts: np.ndarray  # (E,) int64: c_k(g)
    ctx_keys: np.ndarray  # (C,) int64, sorted: the contexts h (keys // B)
    ctx_start: np.ndarray  # (C,) index in keys of each context's first entry
    ctx_total: np.ndarray  # (C,) c_k(h •)
    ctx_types: np.ndarray  # (C,) N1+(h •)
    discount: float  # D_k = n1 / (n1 + 2 n2)


def _table(keys: np.ndarray, counts: np.ndarray, base: int) -> _Table:
    """A table from sorted unique keys and their counts."""
    ctx = keys // base
    start = np.flatnonzero(np.r_[True, ctx[1:] != ctx[:-1]]) if len(keys) else np.zeros(0, np.int64)
    total = np.add.reduceat(counts, start) if len(keys) else np.zeros(0, np.int64)
    types = np.diff(np.r_[start, len(keys)])
    n1 = max(int(np.count_nonzero(counts == 1)), 1)
    n2 = int(np.count_nonzero(counts == 2))
    return _Table(keys, counts, ctx[start], start, total, types, n1 / (n1 + 2 * n2))


def _find(sorted_keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, found) of each query in a sorted array; index is clipped to a valid one where not found."""
    if len(sorted_keys) == 0:
        return np.zeros(len(queries), np.int64), np.zeros(len(queries), bool)
    index = np.minimum(np.searchsorted(sorted_keys, queries), len(sorted_keys) - 1)
    return index, sorted_keys[index] == queries


def _check_order(order, name: str = "order") -> int:
    if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, not {order!r}")
    return int(order)


def _as_ids(ids, vocab_size: int, name: str, minimum: int = 1) -> np.ndarray:
    """A 1-D int64 array of ids in [0, vocab_size), from a tensor, array or list; raises ValueError otherwise."""
    if hasattr(ids, "detach"):
        ids = ids.detach().cpu().numpy()
    array = np.asarray(ids)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of character ids, not an array of shape {array.shape}")
    if len(array) < minimum:
        raise ValueError(f"{name} is empty or too short: it has {len(array)} id(s), at least {minimum} needed"
                         + (" (one to read and one to predict)" if minimum == 2 else ""))
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integer character ids, not {array.dtype}")
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name} must lie in [0, {vocab_size}) for a vocabulary of {vocab_size}; "
                         f"found {low if low < 0 else high}")
    return array.astype(np.int64, copy=False)


@dataclass(frozen=True, eq=False)
class NGramModels:
    """Interpolated Kneser-Ney character models of every order 1 … max_order, fitted on one text."""

    vocab_size: int  # V: the uniform p_0 spreads over it
    max_order: int  # the highest n fitted
    seen: np.ndarray  # (B − 1,) sorted ids seen in training; id seen[i] is digit i, any other id digit B − 1
    raw: tuple[_Table, ...]  # raw[k − 1]: k-gram counts, the top level of an order-k model
    cont: tuple[_Table, ...]  # cont[k − 1]: continuation counts of k-grams, a lower level (k < max_order)

    @property
    def base(self) -> int:
        """B, the base of the keys."""
        return len(self.seen) + 1

    def log_probs(self, ids, order: int) -> np.ndarray:
        """(T − 1,) float64: log p(ids[t + 1] | the up to order − 1 ids ending at ids[t]), in nats."""
        return np.log(self.prob_of_true(ids, order))

    def prob_of_true(self, ids, order: int) -> np.ndarray:
        """(T − 1,) float64: the probability given to each next id, ids[t + 1], after ids[: t + 1]."""
        levels = self._levels(order)
        digits = self._digits(_as_ids(ids, self.vocab_size, "ids", minimum=2))
        ends = np.arange(len(digits) - 1)  # (T − 1,) position t, whose next id is predicted
        targets = digits[1:]
        p = np.full(len(ends), 1.0 / self.vocab_size)  # p_0
        for k, table in enumerate(levels, start=1):
            if len(table.keys) == 0:
                continue  # a text shorter than k: every context of this order is unseen
            ctx, valid = self._contexts(digits, ends, k - 1)
            row, found = _find(table.ctx_keys, ctx)
            found &= valid
            index, hit = _find(table.keys, ctx * self.base + targets)
            count = np.where(hit & found, table.counts[index], 0)
            d = table.discount
            total = np.where(found, table.ctx_total[row], 1)
            mixed = (np.maximum(count - d, 0.0) + d * table.ctx_types[row] * p) / total
            p = np.where(found, mixed, p)
        return p

    def loss(self, ids, order: int) -> float:
        """Mean −log p of the next id over the text, nats per character: the char models' val loss."""
        return float(-self.log_probs(ids, order).mean())

    def next_probs(self, context, order: int) -> np.ndarray:
        """(V,) float64: p(w | the last order − 1 ids of ``context``) for every id w; context may be empty."""
        levels = self._levels(order)
        if len(context):
            digits = self._digits(_as_ids(context, self.vocab_size, "context"))
        else:
            digits = np.zeros(1, np.int64)  # a placeholder: at end −1 no context of length ≥ 1 is valid
        ends = np.array([len(context) - 1])
        return self._full(self._dense(digits, ends, levels))[0]

    def top_guess(self, ids, order: int) -> np.ndarray:
        """(T − 1,) int64: the most likely next id after each position t (ties go to the lowest id)."""
        levels = self._levels(order)
        digits = self._digits(_as_ids(ids, self.vocab_size, "ids", minimum=2))
        chunk = max(1, _DENSE_CELLS // self.base)
        guesses = []
        for start in range(0, len(digits) - 1, chunk):
            ends = np.arange(start, min(start + chunk, len(digits) - 1))
            dense = self._dense(digits, ends, levels)  # (n, B)
            # A seen id never gets less than an unseen one (its discounted counts are ≥ 0 at every level).
            guesses.append(self.seen[np.argmax(dense[:, :-1], axis=1)])
        return np.concatenate(guesses)

    # -----------------------------------------------------------------------------------------------------

    def _levels(self, order: int) -> tuple[_Table, ...]:
        order = _check_order(order)
        if order > self.max_order:
            raise ValueError(f"order {order} was not fitted: these models go up to order {self.max_order}; "
                             f"fit with max_order ≥ {order}")
        return (*self.cont[: order - 1], self.raw[order - 1])

    def _digits(self, ids: np.ndarray) -> np.ndarray:
        """Ids as key digits: seen ids by rank, every other id as B − 1."""
        index, found = _find(self.seen, ids)
        return np.where(found, index, self.base - 1)

    def _contexts(self, digits: np.ndarray, ends: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
        """(key, valid) of the ``length`` digits ending at each index of ``ends``; valid where all are there."""
        keys = np.zeros(len(ends), np.int64)
        for j in range(length):
            keys += digits[np.maximum(ends - j, 0)] * self.base**j
        return keys, ends - length + 1 >= 0

    def _dense(self, digits: np.ndarray, ends: np.ndarray, levels: tuple[_Table, ...]) -> np.ndarray:
        """(n, B) the whole next-id distribution after each end; column B − 1 is each unseen id's probability."""
        base = self.base
        p = np.full((len(ends), base), 1.0 / self.vocab_size)  # p_0
        for k, table in enumerate(levels, start=1):
            if len(table.keys) == 0:
                continue
            ctx, valid = self._contexts(digits, ends, k - 1)
            row, found = _find(table.ctx_keys, ctx)
            found &= valid
            d = table.discount
            rows = np.flatnonzero(found)
            r = row[rows]
            total = table.ctx_total[r].astype(np.float64)
            p[rows] *= (d * table.ctx_types[r] / total)[:, None]
            n_entries = table.ctx_types[r]  # each found context's run of entries in keys
            run_first = np.cumsum(n_entries) - n_entries
            entries = np.repeat(table.ctx_start[r] - run_first, n_entries) + np.arange(int(n_entries.sum()))
            at_rows = np.repeat(rows, n_entries)
            p[at_rows, table.keys[entries] % base] += (
                np.maximum(table.counts[entries] - d, 0.0) / np.repeat(total, n_entries))
        return p

    def _full(self, dense: np.ndarray) -> np.ndarray:
        """(n, V) from (n, B): seen ids from their columns, every other id from the last."""
        out = np.repeat(dense[:, -1:], self.vocab_size, axis=1)
        out[:, self.seen] = dense[:, :-1]
        return out


def fit_ngrams(train_ids, vocab_size: int, max_order: int = 6) -> NGramModels:
    """Count every order 1 … max_order of ``train_ids`` (ids in [0, vocab_size)) for Kneser-Ney models."""
    vocab_size = _check_order(vocab_size, "vocab_size")
    max_order = _check_order(max_order, "max_order")
    ids = _as_ids(train_ids, vocab_size, "train_ids")
    seen = np.unique(ids)
    base = len(seen) + 1
    if base**max_order - 1 > MAX_KEY:
        fits = max(k for k in range(1, max_order) if base**k - 1 <= MAX_KEY)
        raise ValueError(f"{max_order}-grams over {len(seen)} distinct characters do not fit in a 64-bit key; "
                         f"use max_order ≤ {fits}, or a text with fewer distinct characters")
    digits = np.searchsorted(seen, ids)
    raw, uniques = [], []
    keys = np.zeros(len(ids), np.int64)
    for k in range(1, max_order + 1):
        n = max(len(ids) - k + 1, 0)
        keys = keys[:n] * base + digits[k - 1 : k - 1 + n]  # (T − k + 1,) the k-gram starting at each index
        unique, counts = np.unique(keys, return_counts=True)
        uniques.append(unique)
        raw.append(_table(unique, counts, base))
    cont = []
    for k in range(1, max_order):
        # N1+(• g): each distinct (k + 1)-gram v g adds one to its last k digits g.
        unique, counts = np.unique(uniques[k] % base**k, return_counts=True)
        cont.append(_table(unique, counts, base))
    return NGramModels(vocab_size, max_order, seen, tuple(raw), tuple(cont))


def ngram_losses(train_ids, val_ids, vocab_size: int, orders: Iterable[int] = range(1, 7)) -> dict[int, float]:
    """{n: val loss in nats per character of the order-n Kneser-Ney model fitted on ``train_ids``}."""
    orders = [_check_order(n) for n in orders]
    if not orders:
        raise ValueError("orders is empty: name at least one order, e.g. range(1, 7)")
    models = fit_ngrams(train_ids, vocab_size, max(orders))
    return {n: models.loss(val_ids, n) for n in orders}


# ---------------------------------------------------------------------------------------------------------
# Karpathy, Johnson & Fei-Fei (2015), section 4.4: the error breakdown

BUCKETS: dict[str, str] = {
    "long_range": "n-gram wrong, model right: inside brackets or quotes opened at least n characters back, "
                  "where no n-gram context reaches the opening",
    "ngram_other": "n-gram wrong, model right: anywhere else",
    "dynamic_memory": "both wrong: in a word that already occurred earlier in the passage, a copy the model "
                      "could have made",
    "rare_word": f"both wrong: in a word seen at most {RARE_WORD_COUNT} times in the training text",
    "word_start": "both wrong: the first character of a word, right after a space, line end or punctuation",
    "both_other": "both wrong: anywhere else (punctuation, spaces, the inside of common words)",
    "model_only": "model wrong, n-gram right",
}


@dataclass(frozen=True, eq=False)
class ErrorBreakdown:
    """Where a model and an n-gram err on one passage; ``positions[b]`` indexes the predicted characters."""

    order: int  # n of the n-gram compared with
    threshold: float  # a character is an error of a model that gives it less than this probability
    chars: int  # predicted characters: len(text) − 1
    model_errors: int  # characters the model got wrong
    ngram_errors: int  # characters the n-gram got wrong
    positions: dict[str, np.ndarray]  # BUCKETS name → (m,) int64 indices into the text, ascending

    def counts(self) -> dict[str, int]:
        """BUCKETS name → number of characters."""
        return {name: len(self.positions[name]) for name in BUCKETS}


def innermost_openings(text: str, syntax: str = "code") -> np.ndarray:
    """(T,) int64: where the innermost bracket or quote still open just after text[t] opened, −1 if none.

    Brackets and quotes are read as ``textfeatures`` reads them: in ``"code"`` quotes are Python string
    literals (' and ", triple or not; a one-quote string ends at its line end) and brackets inside strings or
    comments don't count; in ``"prose"`` only "…" quotes (a straight quote toggles, a blank line closes one:
    ' is mostly an apostrophe there) and every bracket counts. Innermost is the latest opening still open.
    """
    if syntax == "code":
        string, comment = python_string_and_comment(text)
        depth = bracket_depth(text, ignore=(string + comment) > 0)
    elif syntax == "prose":
        string = prose_quotes(text)
        depth = bracket_depth(text)
    else:
        raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, not {syntax!r}")
    out = np.full(len(text), -1, np.int64)
    brackets: list[int] = []  # opening index of each open bracket (depth moves by at most 1 per character)
    quote, previous_depth, previous_string = -1, 0.0, 0.0
    for t in range(len(text)):
        if depth[t] > previous_depth:
            brackets.append(t)
        elif depth[t] < previous_depth and brackets:
            brackets.pop()
        if string[t] and not previous_string:
            quote = t
        elif not string[t]:
            quote = -1
        previous_depth, previous_string = depth[t], string[t]
        out[t] = max(quote, brackets[-1] if brackets else -1)
    return out


def _check_probs(probs, length: int, name: str) -> np.ndarray:
    array = np.asarray(probs.detach().cpu() if hasattr(probs, "detach") else probs, dtype=np.float64)
    if array.shape != (length,):
        raise ValueError(f"{name} must have one probability per predicted character, shape ({length},) for a "
                         f"text of {length + 1}, not {array.shape}")
    if not np.all((array >= 0) & (array <= 1)):
        raise ValueError(f"{name} must hold probabilities in [0, 1] (not log-probabilities, not NaN)")
    return array


def error_breakdown(text: str, model_probs, ngram_probs, order: int, train_text: str | Counter,
                    threshold: float = 0.5,
                    syntax: str = "code") -> ErrorBreakdown:
    """Sort the errors of a model and an order-``order`` n-gram on ``text`` into BUCKETS (Karpathy et al. 2015).

    ``model_probs`` and ``ngram_probs`` are (T − 1,): the probability each gave the true text[t + 1] after
    text[: t + 1]. A character is an error of a model when that probability is below ``threshold``.
    Characters the n-gram gets wrong and the model right are long-range when the innermost bracket or quote
    open before them (``innermost_openings``, read by ``syntax``) opened at least ``order`` characters back,
    outside the n-gram's order − 1 characters of context. Errors of both go to the first bucket that fits, in
    the paper's onion order: dynamic memory, rare word, word start, other. Words are runs of \\w;
    ``train_text`` may be given as its words' counts already (a Counter of WORD's matches).
    """
    if not isinstance(text, str) or len(text) < 2:
        raise ValueError("text must be a string of at least 2 characters: one to read and one to predict")
    order = _check_order(order)
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], not {threshold!r}")
    model = _check_probs(model_probs, len(text) - 1, "model_probs")
    ngram = _check_probs(ngram_probs, len(text) - 1, "ngram_probs")
    position = np.arange(1, len(text))  # (T − 1,) index of each predicted character
    model_wrong, ngram_wrong = model < threshold, ngram < threshold

    opening = innermost_openings(text, syntax)[position - 1]  # open just before the character is read
    long_range = (opening >= 0) & (position - opening >= order)

    train_words = train_text if isinstance(train_text, Counter) else Counter(WORD.findall(train_text))
    repeat, rare, starts = (np.zeros(len(text), bool) for _ in range(3))
    earlier: set[str] = set()
    for match in WORD.finditer(text):
        word, span = match.group(), slice(match.start(), match.end())
        repeat[span] = word in earlier
        rare[span] = train_words[word] <= RARE_WORD_COUNT
        starts[match.start()] = True
        earlier.add(word)

    only_ngram = ngram_wrong & ~model_wrong
    both = ngram_wrong & model_wrong
    dynamic = both & repeat[position]
    rare_word = both & ~dynamic & rare[position]
    word_start = both & ~dynamic & ~rare_word & starts[position]
    masks = {
        "long_range": only_ngram & long_range,
        "ngram_other": only_ngram & ~long_range,
        "dynamic_memory": dynamic,
        "rare_word": rare_word,
        "word_start": word_start,
        "both_other": both & ~dynamic & ~rare_word & ~word_start,
        "model_only": model_wrong & ~ngram_wrong,
    }
    return ErrorBreakdown(order, float(threshold), len(position), int(model_wrong.sum()), int(ngram_wrong.sum()),
                          {name: position[mask] for name, mask in masks.items()})
