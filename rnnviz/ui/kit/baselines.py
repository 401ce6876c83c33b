"""n-gram baselines of a corpus (rnnviz.interpret.ngram), fitted on its train split once per server process and
shared by every page and session: the live page's and the race's "a 5-gram gets here" lines, and the explorer's
comparison (the fit's cost: ``python -m bench ngram_fit``)."""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import Counter
from dataclasses import dataclass

import streamlit as st

from rnnviz.charlm.corpus import Corpus
from rnnviz.interpret.ngram import WORD, NGramModels, fit_ngrams

MAX_ORDER = 6
# n-gram tables take about 21 bytes per training character (all six orders): an upload of 20 MB would hold 400 MB
# in a shared server, so the counts stop at the first FIT_CHARS of the train split (every built-in corpus is shorter).
FIT_CHARS = 2_000_000
LINE_ORDERS = (3, 5)  # the baselines drawn on the loss curves: a weak one and a strong one

_digests: dict[int, tuple[weakref.ref, str]] = {}
_digests_lock = threading.Lock()


def corpus_digest(corpus: Corpus) -> str:
    """A hash of the corpus's text, computed once per corpus object (the live page asks on every redraw)."""
    with _digests_lock:
        held = _digests.get(id(corpus))
        if held is not None and held[0]() is corpus:
            return held[1]
    digest = hashlib.blake2b(corpus.text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    with _digests_lock:
        for key in [k for k, (ref, _) in _digests.items() if ref() is None]:
            del _digests[key]
        _digests[id(corpus)] = (weakref.ref(corpus), digest)
    return digest


@dataclass(frozen=True, eq=False)
class Baselines:
    """A corpus's n-gram models (fitted on its train split) and their val losses."""

    models: NGramModels
    val_loss: dict[int, float]  # n → the order-n model's loss on the val split, nats/char
    train_words: Counter  # how often each word occurs in the train split (the error breakdown's "rare words")
    train_chars: int  # the training characters counted: the train split, up to FIT_CHARS


@st.cache_resource(show_spinner="Fitting n-gram baselines (n = 1…6) on the training text…", max_entries=4)
def _fitted(name: str, length: int, digest: str, _corpus: Corpus) -> Baselines:
    train, val = _corpus.split()
    train = train[:FIT_CHARS]
    models = fit_ngrams(train, _corpus.vocab.size, MAX_ORDER)
    val_loss = {n: models.loss(val, n) for n in range(1, MAX_ORDER + 1)} if len(val) >= 2 else {}
    train_words = Counter(WORD.findall(_corpus.text[: len(train)]))
    return Baselines(models, val_loss, train_words, len(train))


def baselines(corpus: Corpus) -> Baselines:
    """The corpus's baselines, fitted on first use in this process."""
    return _fitted(corpus.name, len(corpus), corpus_digest(corpus), corpus)


def line_losses(corpus: Corpus | None) -> dict[int, float]:
    """{n: val loss} for the orders drawn on loss curves; {} without a corpus (or one too short to have a val)."""
    if corpus is None:
        return {}
    losses = baselines(corpus).val_loss
    return {n: losses[n] for n in LINE_ORDERS if n in losses}
