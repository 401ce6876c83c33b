"""Kneser-Ney n-gram baselines and the error breakdown: the unigram against its formula and the entropy, a bigram and
trigram worked by hand, every position against a dictionary implementation, normalisation over the vocabulary,
loss falling with n on real text, hand-placed errors landing in their buckets, and bad inputs refused in words."""

import math
from collections import Counter, defaultdict

import numpy as np
import pytest
import torch

from rnnviz.charlm.corpus import Vocab, python_stdlib_text
from rnnviz.interpret.ngram import (
    BUCKETS,
    error_breakdown,
    fit_ngrams,
    innermost_openings,
    ngram_losses,
)


@pytest.fixture(scope="module")
def stdlib():
    """(vocab, train ids, val ids) of 200,000 characters of the standard library's source, 90/10."""
    text = python_stdlib_text(200_000)
    vocab = Vocab.from_text(text)
    ids = vocab.encode(text)
    cut = int(0.9 * len(ids))
    return vocab, ids[:cut], ids[cut:]


def _unigram_by_hand(train: np.ndarray, vocab_size: int) -> np.ndarray:
    """p(w) = (max(c(w) − D, 0) + D · N1+ / V) / N, with D = n1 / (n1 + 2 n2) from the unigram counts-of-counts."""
    c = np.bincount(train, minlength=vocab_size).astype(np.float64)
    n_total, types = c.sum(), np.count_nonzero(c)
    n1, n2 = np.count_nonzero(c == 1), np.count_nonzero(c == 2)
    d = max(n1, 1) / (max(n1, 1) + 2 * n2)
    return (np.maximum(c - d, 0) + d * types / vocab_size) / n_total


def test_unigram_loss_is_the_smoothed_cross_entropy_by_hand(stdlib):
    vocab, train, val = stdlib
    p = _unigram_by_hand(train.numpy(), vocab.size)
    by_hand = -np.mean(np.log(p[val.numpy()[1:]]))  # the first val character is read, never predicted
    models = fit_ngrams(train, vocab.size, max_order=1)
    assert models.loss(val, 1) == pytest.approx(by_hand, rel=1e-12)
    assert ngram_losses(train, val, vocab.size, orders=[1]) == {1: pytest.approx(by_hand, rel=1e-12)}


def test_unigram_on_its_own_text_is_its_entropy_plus_a_small_kl(stdlib):
    """Fitted and scored on one text S (every character seen), with q̃ the frequencies of the scored S[1:]:
    loss = −Σ q̃ log p = H(q̃) + KL(q̃ ‖ p) exactly, and since p(w) ≥ (c(w) − D) / N,
    H(q̃) ≤ loss ≤ −Σ q̃(w) log((c(w) − D) / N)."""
    vocab, _, val = stdlib
    ids = val.numpy()
    models = fit_ngrams(ids, vocab.size, max_order=1)
    loss = models.loss(ids, 1)
    p = _unigram_by_hand(ids, vocab.size)
    scored = np.bincount(ids[1:], minlength=vocab.size)
    q = scored / scored.sum()
    on = q > 0
    entropy = -np.sum(q[on] * np.log(q[on]))
    kl = np.sum(q[on] * np.log(q[on] / p[on]))
    assert loss == pytest.approx(entropy + kl, rel=1e-12)
    c = np.bincount(ids, minlength=vocab.size)
    n1, n2 = np.count_nonzero(c == 1), np.count_nonzero(c == 2)
    d = max(n1, 1) / (max(n1, 1) + 2 * n2)
    upper = -np.sum(q[on] * np.log((c[on] - d) / c.sum()))
    assert entropy < loss <= upper
    assert kl < 2e-3  # 20,000 characters: the smoothing costs under 0.002 nats per character


def test_kneser_ney_by_hand_on_abracadabra():
    vocab = Vocab("abcder")  # e is never seen: V = 6
    models = fit_ngrams(vocab.encode("abracadabra"), vocab.size, max_order=3)
    a, b, c, e, r = (vocab.chars.index(ch) for ch in "abcer")
    # Unigram continuation counts N1+(• w): a follows r, c, d → 3; b, c, d, r each follow one character → 1.
    # Total 7 (distinct bigrams), 5 types; n1 = 4, n2 = 0 → D1 = 4 / 4 = 1.
    d1 = 4 / (4 + 2 * 0)
    p1 = {"a": (3 - d1 + d1 * 5 / 6) / 7, "b": (max(1 - d1, 0) + d1 * 5 / 6) / 7, "e": (d1 * 5 / 6) / 7}
    assert p1 == pytest.approx({"a": 17 / 42, "b": 5 / 42, "e": 5 / 42})
    # Bigram raw counts: ab 2, br 2, ra 2, ac 1, ca 1, ad 1, da 1; n1 = 4, n2 = 3 → D2 = 4 / 10.
    # Context a: c(a •) = 4 over N1+(a •) = 3 types (b, c, d).
    d2 = 4 / (4 + 2 * 3)
    p_b_a = (2 - d2) / 4 + d2 * 3 / 4 * p1["b"]
    p_e_a = d2 * 3 / 4 * p1["e"]
    assert p_b_a == pytest.approx(0.4 + 1 / 28)
    bigram = models.next_probs([a], 2)
    assert bigram[b] == pytest.approx(p_b_a, rel=1e-12)
    assert bigram[e] == pytest.approx(p_e_a, rel=1e-12)
    assert models.next_probs([e], 2)[a] == pytest.approx(p1["a"], rel=1e-12)  # unseen context → p1
    # Trigram raw counts: abr 2, bra 2, rac 1, aca 1, cad 1, ada 1, dab 1; n1 = 5, n2 = 2 → D3 = 5 / 9.
    # Lower bigram continuation counts N1+(• g): br, ra, ac, ca, ad, da, ab each 1 → n1 = 7, n2 = 0 → D2' = 1.
    d3, d2c = 5 / (5 + 2 * 2), 7 / 7
    p2c_a_r = (max(1 - d2c, 0) + d2c * 1 * p1["a"]) / 1  # context r: only "ra", continuation count 1
    p2c_c_b = (0 + d2c * 1 * (5 / 42)) / 1  # context b: only "br"; c never follows b
    p3_a_br = (2 - d3) / 2 + d3 * 1 / 2 * p2c_a_r  # context br: c(br •) = 2, one type (a)
    p3_c_ab = 0 + d3 * 1 / 2 * p2c_c_b  # context ab: c(ab •) = 2, one type (r)
    assert p3_a_br == pytest.approx(631 / 756) and p3_c_ab == pytest.approx(25 / 756)
    assert models.next_probs([b, r], 3)[a] == pytest.approx(p3_a_br, rel=1e-12)
    assert models.next_probs([a, b], 3)[c] == pytest.approx(p3_c_ab, rel=1e-12)
    # The same numbers from the scoring path; its first prediction has one character of context, so the
    # order-3 recursion starts at the continuation bigram: p(b | a) = (max(1 − 1, 0) + 1 · 3/3 · p1(b)) / 1.
    probs = models.prob_of_true(vocab.encode("abra"), 3)
    assert probs == pytest.approx([5 / 42, (2 - d3) / 2 + d3 / 2 * (d2c * p1["b"]), p3_a_br], rel=1e-12)


def _reference(train: list[int], vocab_size: int, order: int):
    """Interpolated Kneser-Ney written with dictionaries, straight from the module docstring's equations."""
    levels = []
    for k in range(1, order + 1):
        grams = Counter(tuple(train[i : i + k]) for i in range(len(train) - k + 1))
        if k < order:
            longer = {tuple(train[i : i + k + 1]) for i in range(len(train) - k)}
            grams = Counter(g[1:] for g in longer)  # N1+(• g)
        n1 = max(sum(1 for v in grams.values() if v == 1), 1)
        n2 = sum(1 for v in grams.values() if v == 2)
        total, types = defaultdict(int), defaultdict(int)
        for g, v in grams.items():
            total[g[:-1]] += v
            types[g[:-1]] += 1
        levels.append((grams, n1 / (n1 + 2 * n2), total, types))

    def prob(w: int, history: list[int]) -> float:
        p = 1 / vocab_size
        for k, (grams, d, total, types) in enumerate(levels, start=1):
            if len(history) < k - 1:
                break
            h = tuple(history[len(history) - (k - 1) :])
            if total.get(h, 0):
                p = (max(grams.get(h + (w,), 0) - d, 0) + d * types[h] * p) / total[h]
        return p

    return prob


def test_every_position_matches_a_dictionary_implementation():
    text = python_stdlib_text(6_000)
    vocab = Vocab.from_text(text + "€")  # one character never seen in training
    ids = vocab.encode(text).tolist()
    train, scored = ids[:4000], ids[4000:4600] + [vocab.chars.index("€")] + ids[4600:4700]
    models = fit_ngrams(train, vocab.size, max_order=5)
    for order in range(1, 6):
        prob = _reference(train, vocab.size, order)
        expected = [prob(scored[t + 1], scored[: t + 1]) for t in range(len(scored) - 1)]
        assert models.prob_of_true(scored, order) == pytest.approx(expected, rel=1e-10), order


def test_probabilities_sum_to_one_over_the_vocabulary():
    text = "the cat sat on the mat; the dog sat on the log. " * 5
    vocab = Vocab.from_text(text + "XYZ")  # X, Y, Z never seen
    ids = vocab.encode(text)
    models = fit_ngrams(ids, vocab.size, max_order=6)
    unseen = vocab.encode("XYZ").tolist()
    contexts = {
        "empty": [],
        "seen": ids[:20].tolist(),
        "seen, short": ids[3:5].tolist(),
        "seen, but never in this order": vocab.encode("tac eh").tolist(),
        "ends with an unseen id": ids[:8].tolist() + unseen[:1],
        "all unseen": unseen,
    }
    for order in range(1, 7):
        for name, context in contexts.items():
            p = models.next_probs(context, order)
            assert p.shape == (vocab.size,)
            assert p.sum() == pytest.approx(1.0, abs=1e-12), (order, name)
            assert p.min() > 0, (order, name)
        # The scoring and guessing paths agree with the whole distributions.
        passage = vocab.encode("the dog sat on the mat. XY the")
        probs = models.prob_of_true(passage, order)
        guesses = models.top_guess(passage, order)
        for t in range(len(passage) - 1):
            whole = models.next_probs(passage[: t + 1], order)
            assert probs[t] == pytest.approx(whole[passage[t + 1]], rel=1e-12)
            assert guesses[t] == np.argmax(whole)
        assert models.log_probs(passage, order) == pytest.approx(np.log(probs), rel=1e-12)


def test_val_loss_falls_from_unigram_to_4_gram_on_python_source(stdlib):
    vocab, train, val = stdlib
    losses = ngram_losses(train, val, vocab.size, orders=range(1, 5))
    assert losses[1] > losses[2] > losses[3] > losses[4]
    assert losses[1] - losses[4] > 1.0, losses  # nats per character: context helps a lot on code
    top = fit_ngrams(train, vocab.size, max_order=4).top_guess(val, 4)
    assert np.mean(top == val.numpy()[1:]) > 0.4


def test_works_for_a_vocabulary_of_2000_when_the_text_uses_fewer():
    rng = np.random.default_rng(0)
    train = torch.from_numpy(rng.integers(0, 300, 5000) * 6)  # 300 distinct ids spread over 0 … 1794
    models = fit_ngrams(train, 2000, max_order=6)
    assert models.next_probs(train[:10], 6).sum() == pytest.approx(1.0, abs=1e-12)
    assert np.isfinite(models.loss(train[:100], 6))


def test_error_breakdown_puts_hand_placed_errors_in_their_buckets():
    text = "the (cat sat) 'qux the mat'\n"
    #       0123456789012345678901234567
    train_text = "the cat sat on the mat. " * 10 + "qux"  # the 20, mat 10, qux once: rare
    assert (text[4], text[12], text[14], text[26]) == ("(", ")", "'", "'")
    ngram_wrong = {5, 6, 7, 12, 26, 19, 20, 15, 16, 23, 3, 24, 27}
    model_wrong = {19, 20, 15, 16, 23, 3, 24, 27, 9}
    ngram = np.array([0.1 if i in ngram_wrong else 0.9 for i in range(1, len(text))])
    model = np.array([0.2 if i in model_wrong else 0.9 for i in range(1, len(text))])
    ngram[10 - 1] = 0.5  # exactly the threshold: not an error
    result = error_breakdown(text, model, ngram, order=3, train_text=train_text)
    expected = {
        # ( at 4: 7 − 4 = 3 ≥ n, so a 3-gram (seeing text[5:7]) cannot see it; 5 and 6 see it. ) at 12 and the
        # closing quote at 26 (opened at 14) are predicted from inside what they close.
        "long_range": [7, 12, 26],
        "ngram_other": [5, 6],
        "dynamic_memory": [19, 20],  # "the" again; its first letter too (the onion takes it first)
        "rare_word": [15, 16],  # "qux", once in train; its q is a word start, but rare words come first
        "word_start": [23],  # the m of "mat": common, not yet in the passage
        "both_other": [3, 24, 27],  # a space, the inside of "mat", the line end
        "model_only": [9],
    }
    assert {name: pos.tolist() for name, pos in result.positions.items()} == expected
    assert result.counts() == {name: len(pos) for name, pos in expected.items()}
    assert set(BUCKETS) == set(expected) and all(BUCKETS.values())
    assert (result.chars, result.model_errors, result.ngram_errors) == (27, 9, 13)
    # With n = 9 the 8-character context reaches the ( at 4 from 12 (12 − 4 < 9): no longer long-range.
    assert error_breakdown(text, model, ngram, 9, train_text).positions["long_range"].tolist() == [26]


def test_innermost_openings_follow_brackets_and_quotes():
    code = "f(a, [b, 'c)'], d)"
    #       012345678901234567
    assert innermost_openings(code, "code").tolist() == [
        -1, 1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9, 5, 1, 1, 1, 1, -1]  # ) inside the string does not count
    prose = 'I\'ll say "no (not) yes" ok'
    opened = innermost_openings(prose, "prose")
    assert opened[prose.index("'")] == -1  # an apostrophe is no quote in prose
    assert opened[prose.index("n")] == prose.index('"') and opened[prose.index("(") + 1] == prose.index("(")
    assert opened[prose.index(")")] == prose.index('"') and opened[-1] == -1


def test_bad_inputs_are_refused_in_words():
    models = fit_ngrams([0, 1, 2, 1, 0], 5, max_order=2)
    cases = [
        (lambda: fit_ngrams([], 5), "train_ids is empty"),
        (lambda: fit_ngrams([0, 5], 5), r"must lie in \[0, 5\) for a vocabulary of 5; found 5"),
        (lambda: fit_ngrams([0, -1], 5), r"must lie in \[0, 5\).*found -1"),
        (lambda: fit_ngrams(np.array([0.0, 1.0]), 5), "integer character ids"),
        (lambda: fit_ngrams(np.zeros((2, 2), int), 5), "1-D sequence"),
        (lambda: fit_ngrams([0, 1], 0), "vocab_size must be a whole number of at least 1"),
        (lambda: fit_ngrams([0, 1], 5, max_order=0), "max_order must be a whole number of at least 1"),
        (lambda: fit_ngrams(np.arange(2000), 2000, max_order=6), "do not fit in a 64-bit key; use max_order ≤ 5"),
        (lambda: models.loss([0, 1, 2], 0), "order must be a whole number of at least 1"),
        (lambda: models.loss([0, 1, 2], 3), "order 3 was not fitted: these models go up to order 2"),
        (lambda: models.loss([3], 1), "at least 2 needed"),
        (lambda: models.top_guess([0, 9], 1), r"ids must lie in \[0, 5\)"),
        (lambda: models.next_probs([7], 1), r"context must lie in \[0, 5\)"),
        (lambda: ngram_losses([0, 1], [0, 1], 5, orders=[]), "orders is empty"),
        (lambda: error_breakdown("a", [], [], 3, ""), "at least 2 characters"),
        (lambda: error_breakdown("abc", [0.5], [0.5, 0.5], 3, ""), r"one probability per predicted character"),
        (lambda: error_breakdown("abc", [0.5, 1.5], [0.5, 0.5], 3, ""), r"probabilities in \[0, 1\]"),
        (lambda: error_breakdown("abc", [0.5, math.nan], [0.5, 0.5], 3, ""), "not NaN"),
        (lambda: error_breakdown("abc", [0.5, 0.5], [0.5, 0.5], 0, ""), "order must be"),
        (lambda: error_breakdown("abc", [0.5, 0.5], [0.5, 0.5], 3, "", threshold=0), "threshold must lie"),
        (lambda: error_breakdown("abc", [0.5, 0.5], [0.5, 0.5], 3, "", syntax="c"), "syntax must be one of"),
    ]
    for call, words in cases:
        with pytest.raises(ValueError, match=words):
            call()
