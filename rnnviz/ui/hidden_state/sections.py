"""The hidden-state page's slots and what its sections share: which model fills each slot (a shipped english-docs
model by default, or this session's live-trained model, an uploaded checkpoint, or a model of this session's race;
the sLSTM, mLSTM, selective SSM and linear attention have a slot each, shown only when this session has a model of its
kind), the sentence, the page's keys and links, and the caches. The sections: what each model carries into step t+1
(``stepping``), who attends to a character (``attending``), connectivity (``connectivity``), the memory probes and
the context bottleneck (``memory``), the models' expander (``models``) and the race (``race``).

Figures of shipped models are built once per process and shared by every session (``shared_figure``); figures
of a session's own models are kept in that session only (``session_value``), keyed by the model and its step.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import streamlit as st
import torch

from rnnviz.charlm.corpus import UnknownCharactersError, Vocab
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.limits import name_bidi_controls
from rnnviz.serving.live import still_copy
from rnnviz.ui.hidden_state.race import current_runner
from rnnviz.ui.kit.cache import session_value, value_for
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_int_in, parse_text
from rnnviz.ui.kit.models import (
    LAUNCHED_PREFIX,
    LIVE_RUN_KEY,
    UPLOADED_KEY,
    ModelSource,
    launched_key,
    launched_model,
    pretrained_checkpoints,
    what_it_is,
)
from rnnviz.ui.kit.widgets import literal

PAGE = "hidden_state"
page_key = PageKeys(PAGE)
SENTENCE = page_key("sentence")
STEP = page_key("t")
STEP_LABEL = "t: the last character read (0-based)"
ATTENDED = page_key("s")  # the character whose readers are shown
STRIP = page_key("strip")  # the clickable character strip
# The four shipped models of rnnviz/assets/models/MODELS.md this page compares, by file stem.
SLOTS = {"RNN": "rnn-english-docs", "LSTM": "lstm-small-english-docs", "minGRU": "mingru-english-docs",
         "Transformer": "transformer-english-docs"}
# The kinds each slot takes, in the page's order: a slot shows a fixed-size recurrent state (h_t and c_t, or the
# fields of a state kind: matrix memories, normalisers, a convolution's inputs), or a K/V cache. The state kinds'
# slots have no shipped model: they show a session's own (live-trained, uploaded or raced), after the shipped four,
# which keep their places.
SLOT_KINDS = {"RNN": ("rnn", "gru"), "LSTM": ("lstm",), "minGRU": ("mingru",), "Transformer": ("transformer",),
              "sLSTM": ("slstm",), "mLSTM": ("mlstm",), "Selective SSM": ("selective",),
              "Linear attention": ("linear_attention",)}
PER_ROW = 2  # columns per row when four models are shown: four side by side are too narrow on a projector
# What the minGRU gives up, said under its column.
MINGRU_TRADE = (r"Its gate $z_t$ and candidate $\tilde h_t$ read $x_t$ only, never $h_{t-1}$: what it writes "
                "cannot depend on what it already holds. In exchange every $h_t$ is a scan over the sequence, so it "
                "trains across all $t$ at once.")
# What a state kind's strips show, said under its column.
STATE_STRIPS = {
    "slstm": r"Four vectors per layer: $c_t$ and its normaliser $n_t$ (it reads $h_t = o_t \odot c_t / n_t$) and "
             r"the stabiliser $m_t$, which only keeps the exponential gates in range.",
    "mlstm": r"$C$: each head's $d \times d$ matrix memory, the heads side by side (image row i holds row i of every "
             r"head's matrix); $n$ per head and unit, $m$ one per head; conv: the last $K - 1$ inputs its short "
             "convolution still holds, oldest on top.",
    "selective": r"$s$: the $S$ numbers of every channel, one column per channel (image row j holds the j-th number "
                 r"of each); conv: the last $K - 1$ inputs its short convolution still holds, oldest on top.",
    "linear_attention": r"$S$: each head's $d \times d$ memory, the heads side by side (image row i holds row i of "
                        r"every head's matrix); $z$ per head and unit; conv: the last $K - 1$ inputs its short "
                        "convolution still holds, oldest on top.",
}
STRIPS_KEY = ("Each strip is one tensor, one column per unit (a K or V: one row per cached position s, top to "
              "bottom), coloured relative to its own largest |value|: dark blue −max, white 0, dark red +max.")
SOURCE_LABELS = {"shipped": "shipped", "live": "live-trained", "uploaded": "uploaded", "race": "from the race",
                 "file": "the model the server was started with"}
DEFAULT_SENTENCE = "The function returns a list of the values, in order."
SENTENCE_CHARS = 300
# Up to this many characters, s and the connectivity's t answer in the browser (every stop's figure sent ahead: about
# 0.85 MB at the default 52 characters, growing with the square of the length); a longer sentence's server draws the
# stop picked (at 300 characters every stop would be 8.8 MB and 6 s of figures).
INSTANT_CHARS = 80
# The page's settings in its address; t and s change in fragments, which keep the address themselves.
STEP_LINK = LinkParam("t", STEP, parse_int_in(0, SENTENCE_CHARS - 1), example="20")
ATTENDED_LINK = LinkParam("s", ATTENDED, parse_int_in(0, SENTENCE_CHARS - 1), example="4")
LINK = (LinkParam("sentence", SENTENCE, parse_text(SENTENCE_CHARS), example="Print the first line, then stop."),
        STEP_LINK, ATTENDED_LINK)


def source_key(name: str) -> str:
    return page_key("source", name)


@dataclass(frozen=True, eq=False)
class Slot:
    """One column of the comparison: its name, the model in it, and the sentence's ids (or the error)."""

    name: str  # a SLOT_KINDS name: "RNN", "LSTM", "minGRU", "sLSTM", …, "Transformer"
    candidate: ModelSource  # the model that fills it
    ids: torch.Tensor | None
    error: str | None

    @property
    def model(self):
        return self.candidate.model

    @property
    def vocab(self) -> Vocab:
        return self.candidate.vocab

    @property
    def key(self) -> Hashable:
        return self.candidate.identity

    @property
    def shared(self) -> bool:
        return self.candidate.shared


# --- where the models come from --------------------------------------------------------------------------------


def _race_copy(trainer) -> torch.nn.Module:
    """A still copy of a race model at its step, kept in the session: the page reads it even if the race goes on."""
    return session_value(still_copy, trainer.model, key=("race copy", id(trainer), trainer.step))


def candidates(slot: str) -> list[ModelSource]:
    """The models that may fill ``slot`` in this session: the one the server was started with (``rnnviz app
    --model``) when it is of a fitting kind, the shipped one, then the session's own of a fitting kind."""
    kinds = SLOT_KINDS[slot]
    found = []
    launched, _, _ = launched_model()
    if launched is not None and launched.config.kind in kinds:
        found.append(ModelSource(launched_key(), f"yours: {launched_key().removeprefix(LAUNCHED_PREFIX)}",
                                 launched.model, launched.vocab, launched.corpus, launched.step,
                                 launched.config.carries_state))
    stem = SLOTS.get(slot)
    shipped = pretrained_checkpoints().get(stem) if stem else None
    if shipped is not None:
        found.append(ModelSource(f"pretrained:{stem}", f"shipped: {stem}.pt", shipped.model,
                                 shipped.vocab, shipped.corpus, shipped.step, shipped.config.carries_state))
    state = st.session_state
    run = state.get(LIVE_RUN_KEY)
    if run is not None and run.trainer.step > 0 and run.trainer.config.kind in kinds:
        trainer, frozen = run.trainer, run.reader_model()
        cooled = ", a copy cooled down" if frozen.step != trainer.step else ""
        found.append(ModelSource("live", f"live-trained on {run.corpus_name}, step {frozen.step:,}{cooled}",
                                 frozen.model, trainer.vocab, run.corpus_name, frozen.step,
                                 trainer.config.carries_state))
    uploaded = state.get(UPLOADED_KEY)
    if uploaded is not None and uploaded.config.kind in kinds:
        found.append(ModelSource("uploaded", f"uploaded ({what_it_is(uploaded)})",
                                 uploaded.model, uploaded.vocab, uploaded.corpus, uploaded.step,
                                 uploaded.config.carries_state))
    runner = current_runner()
    if runner is not None and not runner.is_active:
        for name, trainer in runner.race.trainers.items():
            if trainer.step > 0 and trainer.config.kind in kinds:
                model = _race_copy(trainer)
                found.append(ModelSource(f"race:{name}", f"the race's {name}, step {trainer.step:,}", model,
                                         trainer.vocab, runner.race.corpus_name, trainer.step,
                                         trainer.config.carries_state))
    return found


def slots() -> list[Slot]:
    """The model in each slot, with the sentence read by its vocabulary; stops the page when there is none."""
    text = sentence()
    out = []
    for name in SLOT_KINDS:
        options = {c.origin: c for c in candidates(name)}
        chosen = options.get(st.session_state.get(source_key(name))) or next(iter(options.values()), None)
        if chosen is None:
            continue
        try:
            out.append(Slot(name, chosen, chosen.vocab.encode(text), None))
        except UnknownCharactersError as err:
            missing = ", ".join(repr(c) for c in err.chars)
            out.append(Slot(name, chosen, None, f"The {name}'s vocabulary lacks {missing}: it cannot read this "
                                                "sentence. Edit the sentence; the other models still show theirs."))
    if not out:
        st.error("The shipped models of this page are missing from rnnviz/assets/models/.")
        st.stop()
    if not text:
        st.info("Type a sentence above to step through it.", icon=":material/edit:")
        st.stop()
    return out


# --- caching: shared for shipped models, per session for the session's own --------------------------------------


def slot_readers(slot_list: list[Slot], text: str, what: str) -> tuple[list[tuple[Slot, torch.Tensor]], list[str]]:
    """(slots whose vocabulary can read ``text``, with its ids), and a sentence for each that cannot, naming the text
    as ``what`` ("the held-out english-docs text")."""
    usable, left_out = [], []
    for slot in slot_list:
        try:
            usable.append((slot, slot.vocab.encode(text)))
        except UnknownCharactersError as err:
            shown = ", ".join(repr(c) for c in err.chars[:8])
            left_out.append(f"The {slot.name} ({SOURCE_LABELS[slot.candidate.origin]}) is left out: its vocabulary "
                            f"lacks {literal(shown)} of {what}.")
    return usable, left_out


def slot_value(build: Callable[..., Any], slot_list: list[Slot], *args, key: Hashable) -> Any:
    """A figure or value of some slots' models: shared by the process when all are shipped, else the session's."""
    return value_for(all(s.shared for s in slot_list), build, *args, key=(tuple(s.key for s in slot_list), key))


def params(slot: Slot) -> int:
    return sum(p.numel() for p in slot.model.parameters())


def choose_sentence() -> None:
    st.session_state.setdefault(SENTENCE, DEFAULT_SENTENCE)
    st.text_input("A sentence to step through", key=SENTENCE, max_chars=SENTENCE_CHARS)


def sentence() -> str:
    return st.session_state.get(SENTENCE, DEFAULT_SENTENCE)


def grid(count: int, per_row: int = PER_ROW) -> list:
    """``count`` columns: side by side up to three, in rows of ``per_row`` beyond that (2 × 2 for four)."""
    if count <= 3:
        return list(st.columns(max(count, 1)))[:count]
    return [col for start in range(0, count, per_row) for col in st.columns(per_row)][:count]


def transformer_slot(slot_list: list[Slot]) -> Slot | None:
    slot = next((s for s in slot_list if s.name == "Transformer"), None)
    return slot if slot is not None and slot.ids is not None else None


def as_typed(text: str) -> str:
    """User text for the browser's text blocks (kit.instant draws **…** in bold and $…$ as an equation) shown as
    typed: a dollar sign as its full-width look-alike, a zero-width space between two stars, bidirectional controls
    by name."""
    return re.sub(r"\*(?=\*)", "*\u200b", name_bidi_controls(text).replace("$", "\uff04"))


def said(char: str) -> str:
    """A character of the user's sentence as the browser's text says it: quoted, and a "$" by its name (two of them
    would open an equation there)."""
    return "a dollar sign" if char == "$" else repr(char)


def figures_key(slot_list: list[Slot], *parts: Hashable) -> Hashable:
    """What instant_figure shares a view's figures by: the models and ``parts``, and for a session's own model the
    session too (the figures stay the session's even where another session's model later gets the same id)."""
    if all(s.shared for s in slot_list):
        return (tuple(s.key for s in slot_list), *parts)
    owner = st.session_state.setdefault(page_key("owner"), uuid.uuid4().hex)
    return (owner, tuple(s.key for s in slot_list), *parts)


def state_kinds(slot_list: list[Slot]) -> list[str]:
    """The state kinds (sLSTM … linear attention) whose slot is shown, in the page's order."""
    return list(dict.fromkeys(s.model.config.kind for s in slot_list if s.model.config.kind in STATE_KINDS))
