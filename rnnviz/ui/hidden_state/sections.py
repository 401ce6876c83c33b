"""Sections of the hidden-state page: what an RNN, an LSTM, a minGRU and a Transformer carry into the next step,
and the Transformer's attention (from a position, and to a clicked character); the memory probes and the context
bottleneck are in ``memory``, the models' expander (which model fills each slot, the uploader) in ``models``. Each of
the four slots holds a shipped english-docs model by default, or this session's live-trained model, an uploaded
checkpoint, or a model of this session's race. The sLSTM, mLSTM, selective SSM and linear attention have a slot
each, with no shipped model: it shows only when this session has a model of its kind.

Figures of shipped models are built once per process and shared by every session (``shared_figure``); figures
of a session's own models are kept in that session only (``session_value``), keyed by the model and its step.
A step of t answers in the browser (every t's strips and attention sent ahead; a long sentence's step reruns only
the fragment that draws what t moves), and what depends only on the models and the sentence (the bytes curves) is
not computed again for each t.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st
import torch

from rnnviz.charlm.corpus import UnknownCharactersError, Vocab
from rnnviz.core.state_stack import CARRIED_WORDS, STATE_KINDS
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.limits import name_bidi_controls
from rnnviz.serving.live import still_copy
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hidden_state.race import current_runner
from rnnviz.ui.kit import instant
from rnnviz.ui.kit.cache import session_value, value_for
from rnnviz.ui.kit.instant import Stop, instant_blocks, instant_figure, instant_slider, note
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, mirror_to_link, parse_int_in, parse_text
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
from rnnviz.ui.kit.widgets import for_the_room, literal, plot

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


def choose_step(readable: list[Slot]) -> int:
    length = max((len(s.ids) for s in readable), default=1)
    if length < 2:
        return 0
    keep_step_inside(length)
    return st.slider(STEP_LABEL, 0, length - 1, key=STEP)


def sizes_caption(carried: hs.Carried) -> str:
    parts = [f"{x.name} {tuple(x.shape)}" for x in carried.tensors]
    if len(parts) > 4:
        parts = [*parts[:2], f"… {len(parts) - 2} more"]
    return f"**{carried.numel:,} numbers, {carried.nbytes:,} bytes**: " + ", ".join(parts)


def _carried_at(model, ids: torch.Tensor, t: int) -> tuple[str, int, list[fig.Strip]]:
    """(sizes caption, window start, heat strips) of what ``model`` carries after reading ids[0…t]."""
    carried, _ = hs.carried_state(model, ids, t)
    return sizes_caption(carried), carried.window_start, fig.carried_strips(carried)


# Up to INSTANT_CHARS characters, t answers in the browser: every t's strips (PNGs of one pixel per value, drawn as
# sharp blocks) and attention table are sent with the fragment (about 1.2 and 0.4 MB for the four shipped models at
# the default 52 characters). A longer sentence's server draws the t picked, as before.
@fragment
def step_through(slot_list: list[Slot]) -> None:
    """The t slider, right above what it moves: the four carried states, the bytes against t and the
    Transformer's attention at t. A step of t reruns this fragment only."""
    st.subheader("What each model carries into step t+1")
    readable = [s for s in slot_list if s.ids is not None]
    length = max((len(s.ids) for s in readable), default=1)
    if length < 2 or length > INSTANT_CHARS:
        t = choose_step(readable)
        mirror_to_link((STEP_LINK,))
        draw_carried(slot_list, t)
        draw_attention_at(slot_list, t)
        return
    keep_step_inside(length)
    text = sentence()
    for slot in slot_list:
        if slot.error:
            st.error(literal(slot.error), icon=":material/block:")
    stops = slot_value(step_stops, slot_list, slot_list, text, key=("step stops", text))
    instant_slider(STEP_LABEL, STEP, stops, link=STEP_LINK)
    mirror_to_link((STEP_LINK,))
    draw_bytes(slot_list)
    st.subheader("The Transformer's attention at t")
    slot = _transformer(slot_list)
    if slot is None:
        st.info("The Transformer cannot read this sentence (see the message above).")
        return
    views = slot_value(attention_views, [slot], slot, text, key=("attention views", text))
    instant_blocks(STEP, "attention", views + views[-1:] * (len(stops) - len(views)))


def keep_step_inside(length: int) -> None:
    if st.session_state.get(STEP, 0) > length - 1:  # a shorter sentence: keep t inside it
        st.session_state[STEP] = length - 1
    st.session_state.setdefault(STEP, min(length - 1, 12))


def read_so_far(text: str, t: int) -> str:
    following = repr(text[t + 1]) if t + 1 < len(text) else "the end"
    return f"Read so far (t = {t}): “{text[: t + 1]}” — next comes {following}."


def window_warning(slot: Slot, text: str, window_start: int) -> str:
    return (f"The sentence is longer than this Transformer's context of {slot.model.block_size} characters: its "
            f"window starts at position {window_start} ({text[window_start]!r}).")


def slot_heading(slot: Slot) -> str:
    origin = "" if slot.shared else f", {SOURCE_LABELS[slot.candidate.origin]}"
    return f"**{slot.name}** ({params(slot):,} parameters{origin}): what it carries into t+1"


def kind_caption(slot: Slot) -> str:
    kind = slot.model.config.kind
    return MINGRU_TRADE if kind == "mingru" else STATE_STRIPS.get(kind, "")


def strip_alt(strip: fig.Strip) -> str:
    return f"{strip.label}: one tensor drawn as a strip of coloured cells, one per unit"


# A strip sent to the browser: one pixel per value, its colour one of 255 evenly spaced along fig.diverging_rgb (the
# server's strip differs by a level or two of a channel), and grey for a missing value: a third of the RGB bytes.
STRIP_PALETTE = np.vstack([fig.diverging_rgb(np.linspace(-1, 1, 255)), [fig.MISSING_RGB]]).astype(np.uint8)


def strip_levels(scaled: np.ndarray) -> np.ndarray:
    """Each value's row of STRIP_PALETTE."""
    scaled = np.atleast_2d(scaled)
    levels = np.rint((np.clip(np.nan_to_num(scaled), -1, 1) + 1) / 2 * 254).astype(np.uint8)
    levels[np.isnan(scaled)] = 255
    return levels


def step_stops(slot_list: list[Slot], text: str) -> list[Stop]:
    """Every t: the sentence read so far, and each model's carried tensors as heat strips, in today's grid."""
    length = max(len(s.ids) for s in slot_list if s.ids is not None)
    stops = []
    for t in range(length):
        parts = []
        for slot in slot_list:
            part = [instant.text(slot_heading(slot))]  # no user text in it
            if slot.ids is None:
                parts.append([*part, note("Cannot read this sentence.")])
                continue
            tt = min(t, len(slot.ids) - 1)
            carried, _ = hs.carried_state(slot.model, slot.ids, tt)
            part.append(instant.text(sizes_caption(carried)))
            if carried.window_start > 0:
                part.append(instant.alert("warning", as_typed(window_warning(slot, text, carried.window_start))))
            for strip in fig.carried_strips(carried):
                part.append(instant.image(strip_levels(strip.scaled), strip.label, strip_alt(strip),
                                          size=strip.image.shape[:2], palette=STRIP_PALETTE))
            if kind_caption(slot):
                part.append(note(kind_caption(slot)))
            parts.append(part)
        rows = [parts] if len(parts) <= 3 else [parts[i : i + PER_ROW] for i in range(0, len(parts), PER_ROW)]
        stops.append(Stop(t, (instant.text(as_typed(read_so_far(text, t))),
                              *(instant.columns(*row) for row in rows), note(STRIPS_KEY))))
    return stops


def attention_views(slot: Slot, text: str) -> list[list[dict]]:
    """Every t's attention of the Transformer, as draw_attention_at shows it."""
    views = []
    for t in range(len(slot.ids)):
        start, weights = hs.attention_at(slot.model, slot.ids, t)
        views.append([instant.text(as_typed(attention_sentence(text, t))),
                      instant.heat_table({**fig.attention_cells(weights, text, start), "key": fig.ATTENTION_KEY})])
    return views


def attention_sentence(text: str, t: int) -> str:
    return (f"Row (layer, head): how much position t = {t} ({text[t]!r}) reads each earlier character s ≤ t; each "
            "row sums to 1. Nothing after t is visible (the causal mask).")


def draw_carried(slot_list: list[Slot], t: int) -> None:
    """One column per model: its carried tensors with sizes, as heat strips; then the bytes against t."""
    text = sentence()
    st.markdown(literal(read_so_far(text, t)))
    for slot in slot_list:
        if slot.error:
            st.error(literal(slot.error), icon=":material/block:")
    for col, slot in zip(grid(len(slot_list)), slot_list):
        with col:
            st.markdown(slot_heading(slot))
            if slot.ids is None:
                st.caption("Cannot read this sentence.")
                continue
            tt = min(t, len(slot.ids) - 1)
            caption, window_start, strips = slot_value(_carried_at, [slot], slot.model, slot.ids, tt,
                                                       key=("carried", tt, text))
            st.markdown(caption)
            if window_start > 0:
                st.warning(literal(window_warning(slot, text, window_start)), icon=":material/crop:")
            with st.container(key=page_key("carried", slot.name), gap=None):
                for strip in strips:
                    st.image(strip.image, caption=strip.label, width="stretch", alt=strip_alt(strip))
            if kind_caption(slot):
                st.caption(kind_caption(slot))
    st.caption(STRIPS_KEY)
    draw_bytes(slot_list)


def draw_bytes(slot_list: list[Slot]) -> None:
    """The bytes each model carries against t: the same for every t."""
    text = sentence()
    readable = [s for s in slot_list if s.ids is not None]
    if readable:
        models = [(s.name, s.model, s.ids) for s in readable]
        plot(slot_value(_bytes_fig, readable, models, text, key=("bytes", text)), key=page_key("bytes"))
        states = [s for s in readable if s.model.config.kind in STATE_KINDS]
        carried = "".join(f", the {hs.kind_label(s.model.config.kind)}'s {CARRIED_WORDS[s.model.config.kind]}"
                          for s in states)
        st.caption(f"Measured from the tensors after every character: the RNN's h_t, the LSTM's h_t and c_t, "
                   f"the minGRU's h_t{carried} (every layer's) stay the same size; the Transformer's K and V cache "
                   "grows by 2·L·C numbers per character (until its context is full).")


def grid(count: int, per_row: int = PER_ROW) -> list:
    """``count`` columns: side by side up to three, in rows of ``per_row`` beyond that (2 × 2 for four)."""
    if count <= 3:
        return list(st.columns(max(count, 1)))[:count]
    return [col for start in range(0, count, per_row) for col in st.columns(per_row)][:count]


def _bytes_fig(models: list[tuple[str, Any, torch.Tensor]], text: str):
    """Bytes carried after every character of the sentence, per model: the same for every t, so built once."""
    return fig.carried_bytes_figure({name: hs.carried_bytes_curve(model, ids) for name, model, ids in models}, text)


def _attention_table(model, ids: torch.Tensor, text: str, t: int) -> str:
    start, weights = hs.attention_at(model, ids, t)
    return fig.attention_table(weights, text, start)


def attention_columns(model, ids: torch.Tensor) -> list[tuple[np.ndarray, np.ndarray]]:
    """hs.attention_to at every s, read off one hs.attention_at row per position t: one trace per t, where
    attention_to traces up to block_size windows for each s."""
    rows = [hs.attention_at(model, ids, t) for t in range(len(ids))]
    columns = []
    for s in range(len(ids)):
        queries = np.arange(s, min(len(ids), s + model.block_size))
        columns.append((queries, np.stack([rows[t][1][:, :, s - rows[t][0]] for t in queries], axis=-1)))
    return columns


def _on_strip_click() -> None:
    """on_select of the character strip: the clicked character becomes s."""
    event = st.session_state.get(STRIP)
    points = event["selection"]["points"] if event else []
    if points:
        st.session_state[ATTENDED] = int(points[0]["x"])


def _transformer(slot_list: list[Slot]) -> Slot | None:
    slot = next((s for s in slot_list if s.name == "Transformer"), None)
    return slot if slot is not None and slot.ids is not None else None


def draw_attention_at(slot_list: list[Slot], t: int) -> None:
    """The Transformer's attention from position t over the characters it may read, per layer and head."""
    st.subheader("The Transformer's attention at t")
    slot = _transformer(slot_list)
    if slot is None:
        st.info("The Transformer cannot read this sentence (see the message above).")
        return
    text = sentence()
    tt = min(t, len(slot.ids) - 1)
    st.markdown(literal(attention_sentence(text, tt)))
    with st.container(key=page_key("attention")):
        st.html(slot_value(_attention_table, [slot], slot.model, slot.ids, text, tt, key=("attention", text, tt)))


def as_typed(text: str) -> str:
    """User text for the browser's text blocks (kit.instant draws **…** in bold and $…$ as an equation) shown as
    typed: a dollar sign as its full-width look-alike, a zero-width space between two stars, bidirectional controls
    by name."""
    return re.sub(r"\*(?=\*)", "*\u200b", name_bidi_controls(text).replace("$", "\uff04"))


def said(char: str) -> str:
    """A character of the user's sentence as the browser's text says it: quoted, and a "$" by its name (two of them
    would open an equation there)."""
    return "a dollar sign" if char == "$" else repr(char)


def readers_caption(queries: np.ndarray, weights: np.ndarray, text: str, s: int) -> str:
    """Who reads s, in words: the later positions t > s whose window holds s (s reading itself is not one of
    them), and the strongest of them."""
    later = [i for i, t in enumerate(queries) if t > s]
    shown = said(text[s])
    if not later:
        return (f"No later position reads s = {s} ({shown}): it is the last character, and only it reads itself. "
                "A row need not sum to 1: each reader spreads its own attention over every s ≤ t.")
    sub = weights[:, :, later]  # (L, h, later)
    layer, head, column = (int(x) for x in np.unravel_index(int(np.argmax(sub)), sub.shape))
    t = int(queries[later[column]])
    return (f"{len(later)} later position{'s' if len(later) != 1 else ''} (t > s) can read s = {s} ({shown}); "
            f"s also reads itself. The strongest later reader: t = {t} ({said(text[t])}), layer "
            f"{layer + 1} head {head + 1}, weight {float(sub[layer, head, column]):.2f}. A row need not sum to 1: "
            "each reader spreads its own attention over every s ≤ t.")


def figures_key(slot_list: list[Slot], *parts: Hashable) -> Hashable:
    """What instant_figure shares a view's figures by: the models and ``parts``, and for a session's own model the
    session too (the figures stay the session's even where another session's model later gets the same id)."""
    if all(s.shared for s in slot_list):
        return (tuple(s.key for s in slot_list), *parts)
    owner = st.session_state.setdefault(page_key("owner"), uuid.uuid4().hex)
    return (owner, tuple(s.key for s in slot_list), *parts)


def attended_stops(slot: Slot, text: str) -> list[Stop]:
    """Every s of the sentence: who reads it, in words."""
    columns = slot_value(attention_columns, [slot], slot.model, slot.ids, key=("attention columns", text))
    return [Stop(s, (note(readers_caption(queries, weights, text, s)),), label=f"{s}: {text[s]!r}")
            for s, (queries, weights) in enumerate(columns)]


def attended_figures(slot: Slot, text: str) -> list:
    """Every s's figure of who attends to it."""
    columns = slot_value(attention_columns, [slot], slot.model, slot.ids, key=("attention columns", text))
    return [fig.attended_figure(queries, weights, text, s) for s, (queries, weights) in enumerate(columns)]


# The s slider answers in the browser: every s's caption and figure are sent with the fragment, and a move shows them
# in the frame of the move (kit.instant). The character strip stays the server's (a click is a server event), so its
# mark follows s once the browser has told the server of the move.
@fragment
def who_attends(slot_list: list[Slot]) -> None:
    """For a character s the user clicks or picks, who attends to it."""
    slot = _transformer(slot_list)
    if slot is None:
        return
    text = sentence()
    st.markdown("**Who attends to a character?** Click one below (or pick it with the slider): each later position "
                "t that can still see it, and how much of its attention goes there, per layer and head.")
    n = len(slot.ids)
    if st.session_state.get(ATTENDED) is None or st.session_state[ATTENDED] > n - 1:
        st.session_state[ATTENDED] = min(st.session_state.get(STEP, 0), n - 1)
    s = st.session_state[ATTENDED]
    st.plotly_chart(for_the_room(fig.character_strip(text[:n], s)), key=STRIP, on_select=_on_strip_click,
                    selection_mode="points", config={"displayModeBar": False}, width="stretch",
                    alt=f"The sentence's characters in a row, each clickable; s = {s} ({text[s]!r}) is marked.")
    if n > INSTANT_CHARS:
        s = st.select_slider("s: the character attended to", options=list(range(n)), key=ATTENDED,
                             format_func=lambda i: f"{i}: {text[i]!r}")
        mirror_to_link((ATTENDED_LINK,))
        queries, weights = slot_value(hs.attention_to, [slot], slot.model, slot.ids, s, key=("attended", text, s))
        st.caption(literal(readers_caption(queries, weights, text, s)))
        plot(fig.attended_figure(queries, weights, text, s), key=page_key("attended"))
        return
    stops = slot_value(attended_stops, [slot], slot, text, key=("attended stops", text))
    instant_slider("s: the character attended to", ATTENDED, stops, link=ATTENDED_LINK)
    mirror_to_link((ATTENDED_LINK,))
    instant_figure(ATTENDED, "attended", lambda: attended_figures(slot, text),
                   cache=figures_key([slot], "attended", text))


def state_kinds(slot_list: list[Slot]) -> list[str]:
    """The state kinds (sLSTM … linear attention) whose slot is shown, in the page's order."""
    return list(dict.fromkeys(s.model.config.kind for s in slot_list if s.model.config.kind in STATE_KINDS))
