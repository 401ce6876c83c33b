"""Sections of the hidden-state page: what an RNN, an LSTM, a minGRU and a Transformer carry into the next step,
the Transformer's attention (from a position, and to a clicked character), memory probes and the context
bottleneck. Each of the four slots holds a shipped english-docs model by default, or this session's
live-trained model, an uploaded checkpoint, or a model of this session's race.

Figures of shipped models are built once per process and shared by every session (``shared_figure``); figures
of a session's own models are kept in that session only (``_session_value``), keyed by the model and its step.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st
import torch

from rnnviz.charlm.checkpoint import CheckpointError, load_checkpoint
from rnnviz.charlm.corpus import UnknownCharactersError, Vocab, load_builtin
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.models import LIVE_RUN_KEY, UPLOADED_KEY, pretrained_checkpoints
from rnnviz.ui.race import current_runner
from rnnviz.ui.widgets import literal, plot, shared_figure

PAGE = "hidden_state"
SENTENCE = f"{PAGE}_sentence"
STEP = f"{PAGE}_t"
ATTENDED = f"{PAGE}_s"  # the character whose readers are shown
STRIP = f"{PAGE}_strip"  # the clickable character strip
PROBE_RUN = f"{PAGE}_probe_run"
UPLOAD, UPLOAD_ERROR = f"{PAGE}_upload", f"{PAGE}_upload_error"
MEMO = f"{PAGE}_memo"  # this session's figures and values of its own models
PROBES = f"{PAGE}_probes"  # this session's probe results of its own models
MEMO_ENTRIES = 48
CORPUS = "english-docs"
# The four shipped models of rnnviz/assets/models/MODELS.md this page compares, by file stem.
SLOTS = {"RNN": "rnn-english-docs", "LSTM": "lstm-small-english-docs", "minGRU": "mingru-english-docs",
         "Transformer": "transformer-english-docs"}
# The kinds each slot takes: a slot shows a fixed-size recurrent state, h_t and c_t, or a K/V cache.
SLOT_KINDS = {"RNN": ("rnn", "gru"), "LSTM": ("lstm",), "minGRU": ("mingru",), "Transformer": ("transformer",)}
PER_ROW = 2  # columns per row when four models are shown: four side by side are too narrow on a projector
# What the minGRU gives up, said under its column.
MINGRU_TRADE = (r"Its gate $z_t$ and candidate $\tilde h_t$ read $x_t$ only, never $h_{t-1}$: what it writes "
                "cannot depend on what it already holds. In exchange every $h_t$ is a scan over the sequence, so it "
                "trains across all $t$ at once.")
SOURCE_LABELS = {"shipped": "shipped", "live": "live-trained", "uploaded": "uploaded", "race": "from the race"}
DEFAULT_SENTENCE = "The function returns a list of the values, in order."
PROBE = hs.ProbeConfig()
LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
BOTTLENECK_CHARS = 800  # val characters scored in the bottleneck (positions ≥ max n − 1)


def source_key(name: str) -> str:
    return f"{PAGE}_source_{name}"


@dataclass(frozen=True, eq=False)
class Candidate:
    """A model that may fill a slot: where it comes from, the model itself, and what its figures are keyed by."""

    source: str  # "shipped", "live", "uploaded" or "race"
    label: str  # where it comes from, in words
    model: torch.nn.Module
    vocab: Vocab
    step: int
    key: Hashable  # the shipped file stem (figures shared by every session), else (source, id, step)
    file: str  # for the table: the shipped file, or where it came from

    @property
    def shared(self) -> bool:
        return self.source == "shipped"


@dataclass(frozen=True, eq=False)
class Slot:
    """One column of the comparison: its name, the model in it, and the sentence's ids (or the error)."""

    name: str  # "RNN", "LSTM", "minGRU" or "Transformer"
    candidate: Candidate
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
        return self.candidate.key

    @property
    def shared(self) -> bool:
        return self.candidate.shared


# --- where the models come from --------------------------------------------------------------------------------


def _frozen_copy(run_id: int, step: int, model: torch.nn.Module, lock=None) -> torch.nn.Module:
    """An eval-mode copy of a session model at this step (taken under the run's lock), kept in the session: the
    page reads a still model even if its run trains on."""
    def copy_model():
        if lock is None:
            return copy.deepcopy(model).eval()
        with lock:
            return copy.deepcopy(model).eval()

    return _session_value(copy_model, key=("copy", run_id, step))


def candidates(slot: str) -> list[Candidate]:
    """The models that may fill ``slot`` in this session: the shipped one first, then its own of a fitting kind."""
    kinds = SLOT_KINDS[slot]
    found = []
    shipped = pretrained_checkpoints().get(SLOTS[slot])
    if shipped is not None:
        found.append(Candidate("shipped", f"shipped: {SLOTS[slot]}.pt", shipped.model, shipped.vocab, shipped.step,
                               SLOTS[slot], f"{SLOTS[slot]}.pt"))
    state = st.session_state
    run = state.get(LIVE_RUN_KEY)
    if run is not None and run.trainer.step > 0 and run.trainer.config.kind in kinds:
        trainer = run.trainer
        model = _frozen_copy(id(run), trainer.step, trainer.model, run.lock)
        found.append(Candidate("live", f"live-trained on {run.corpus_name}, step {trainer.step:,}", model,
                               trainer.vocab, trainer.step, ("live", id(run), trainer.step), "live page"))
    uploaded = state.get(UPLOADED_KEY)
    if uploaded is not None and uploaded.config.kind in kinds:
        found.append(Candidate("uploaded", f"uploaded ({uploaded.corpus}, step {uploaded.step:,})", uploaded.model,
                               uploaded.vocab, uploaded.step, ("uploaded", id(uploaded), uploaded.step), "upload"))
    runner = current_runner()
    if runner is not None and not runner.is_active:
        for name, trainer in runner.race.trainers.items():
            if trainer.step > 0 and trainer.config.kind in kinds:
                model = _frozen_copy(id(trainer), trainer.step, trainer.model)
                found.append(Candidate("race", f"the race's {name}, step {trainer.step:,}", model, trainer.vocab,
                                       trainer.step, ("race", id(trainer), trainer.step), "race"))
    return found


def read_upload() -> None:
    """on_change of the uploader: load through the safe loader (weights only, strict) or keep the reason."""
    state = st.session_state
    state.pop(UPLOAD_ERROR, None)
    uploaded = state.get(UPLOAD)
    if uploaded is None:
        return
    try:
        checkpoint = load_checkpoint(uploaded.getvalue())
    except CheckpointError as err:
        state[UPLOAD_ERROR] = str(err)
        return
    state[UPLOADED_KEY] = checkpoint
    slot = next((s for s, kinds in SLOT_KINDS.items() if checkpoint.config.kind in kinds), None)
    if slot is None:
        state[UPLOAD_ERROR] = (f"A {checkpoint.config.kind} model fits none of the slots "
                               f"({', '.join(SLOTS)}).")
        return
    state[source_key(slot)] = "uploaded"


def choose_models() -> None:
    """Per slot, which model fills it; with an uploader. Drawn inside an expander by the page."""
    cols = st.columns(len(SLOTS))
    for col, slot in zip(cols, SLOTS):
        options = {c.source: c for c in candidates(slot)}
        if st.session_state.get(source_key(slot)) not in options:
            st.session_state[source_key(slot)] = next(iter(options), None)
        col.selectbox(f"{slot} slot", list(options), key=source_key(slot),
                      format_func=lambda s, o=options: o[s].label,
                      help=f"Takes a {' or '.join(hs.kind_label(k) for k in SLOT_KINDS[slot])} model: the shipped one, "
                           "this session's live-trained model, an uploaded checkpoint or a model of the race.")
    st.file_uploader("Upload a checkpoint (.pt) saved by rnnviz", type=["pt"], key=UPLOAD, on_change=read_upload,
                     help="Loaded with weights only into the app's own architecture; it goes into the slot of its "
                          "kind.")
    if st.session_state.get(UPLOAD_ERROR):
        st.error(literal(st.session_state[UPLOAD_ERROR]), icon=":material/error:")


def slots() -> list[Slot]:
    """The model in each slot, with the sentence read by its vocabulary; stops the page when there is none."""
    sentence = st.session_state.get(SENTENCE, DEFAULT_SENTENCE)
    out = []
    for name in SLOTS:
        options = {c.source: c for c in candidates(name)}
        chosen = options.get(st.session_state.get(source_key(name))) or next(iter(options.values()), None)
        if chosen is None:
            continue
        try:
            out.append(Slot(name, chosen, chosen.vocab.encode(sentence), None))
        except UnknownCharactersError as err:
            missing = ", ".join(repr(c) for c in err.chars)
            out.append(Slot(name, chosen, None, f"The {name}'s vocabulary lacks {missing}: it cannot read this "
                                                "sentence. Edit the sentence; the other models still show theirs."))
    if not out:
        st.error("The shipped models of this page are missing from rnnviz/assets/models/.")
        st.stop()
    if not sentence:
        st.info("Type a sentence above to step through it.", icon=":material/edit:")
        st.stop()
    return out


# --- caching: shared for shipped models, per session for the session's own --------------------------------------


def _session_value(build: Callable[..., Any], *args, key: Hashable) -> Any:
    """``build(*args)`` once per session for ``key`` (the newest MEMO_ENTRIES kept): for a session's own models,
    whose figures nobody else may see and which change as they train."""
    memo = st.session_state.setdefault(MEMO, {})
    full = (f"{build.__module__}.{build.__qualname__}", key)
    if full not in memo:
        memo[full] = build(*args)
        while len(memo) > MEMO_ENTRIES:
            memo.pop(next(iter(memo)))
    return memo[full]


def slot_value(build: Callable[..., Any], slot_list: list[Slot], *args, key: Hashable) -> Any:
    """A figure or value of some slots' models: shared by the process when all are shipped, else the session's."""
    full = (tuple(s.key for s in slot_list), key)
    if all(s.shared for s in slot_list):
        return shared_figure(build, *args, key=full)
    return _session_value(build, *args, key=full)


def params(slot: Slot) -> int:
    return sum(p.numel() for p in slot.model.parameters())


def choose_sentence() -> None:
    st.text_input("A sentence to step through", value=DEFAULT_SENTENCE, key=SENTENCE, max_chars=300)


def choose_step(readable: list[Slot]) -> int:
    length = max((len(s.ids) for s in readable), default=1)
    if length < 2:
        return 0
    if st.session_state.get(STEP, 0) > length - 1:  # a shorter sentence: keep t inside it
        st.session_state[STEP] = length - 1
    st.session_state.setdefault(STEP, min(length - 1, 12))
    return st.slider("t: the last character read (0-based)", 0, length - 1, key=STEP)


def sizes_caption(carried: hs.Carried) -> str:
    parts = [f"{x.name} {tuple(x.shape)}" for x in carried.tensors]
    if len(parts) > 4:
        parts = [*parts[:2], f"… {len(parts) - 2} more"]
    return f"**{carried.numel:,} numbers, {carried.nbytes:,} bytes**: " + ", ".join(parts)


def _carried_fig(name: str, model, ids: torch.Tensor, t: int) -> object:
    carried, _ = hs.carried_state(model, ids, t)
    return fig.carried_figure(carried, f"{name}: what it carries into t+1")


def draw_carried(slot_list: list[Slot], t: int) -> None:
    """One column per model: its carried tensors with sizes, as heat strips."""
    st.subheader("What each model carries into step t+1")
    sentence = st.session_state.get(SENTENCE, DEFAULT_SENTENCE)
    following = literal(repr(sentence[t + 1])) if t + 1 < len(sentence) else "the end"
    st.markdown(f"Read so far (t = {t}): “{literal(sentence[: t + 1])}” — next comes {following}.")
    for slot in slot_list:
        if slot.error:
            st.error(literal(slot.error), icon=":material/block:")
    for col, slot in zip(_grid(len(slot_list)), slot_list):
        with col:
            origin = "" if slot.shared else f", {SOURCE_LABELS[slot.candidate.source]}"
            st.markdown(f"**{slot.name}** ({params(slot):,} parameters{origin})")
            if slot.ids is None:
                st.caption("Cannot read this sentence.")
                continue
            tt = min(t, len(slot.ids) - 1)
            carried, _ = hs.carried_state(slot.model, slot.ids, tt)
            st.markdown(sizes_caption(carried))
            if carried.window_start > 0:
                st.warning(f"The sentence is longer than this Transformer's context of "
                           f"{slot.model.block_size} characters: its window starts at position "
                           f"{carried.window_start} ({literal(repr(sentence[carried.window_start]))}).",
                           icon=":material/crop:")
            plot(slot_value(_carried_fig, [slot], slot.name, slot.model, slot.ids, tt, key=("carried", tt, sentence)),
                 key=f"{PAGE}_carried_{slot.name}")
            if slot.model.config.kind == "mingru":
                st.caption(MINGRU_TRADE)
    readable = [s for s in slot_list if s.ids is not None]
    if readable:
        plot(slot_value(_bytes_fig, readable, [(s.name, s.model, s.ids) for s in readable], sentence, t,
                        key=("bytes", sentence, t)), key=f"{PAGE}_bytes")
        st.caption("Measured from the tensors after every character: the RNN's h_t, the LSTM's h_t and c_t and "
                   "the minGRU's h_t (one per layer) stay the same size; the Transformer's K and V cache grows by "
                   "2·L·C numbers per character (until its context is full).")


def _grid(count: int) -> list:
    """``count`` columns: side by side up to three, in rows of PER_ROW beyond that (2 × 2 for four)."""
    if count <= 3:
        return list(st.columns(count))
    return [col for start in range(0, count, PER_ROW) for col in st.columns(PER_ROW)][:count]


def _bytes_fig(models: list[tuple[str, Any, torch.Tensor]], sentence: str, t: int):
    curves = {name: hs.carried_bytes_curve(model, ids) for name, model, ids in models}
    return fig.carried_bytes_figure(curves, sentence, t)


def _attention_fig(model, ids: torch.Tensor, sentence: str, t: int):
    start, weights = hs.attention_at(model, ids, t)
    return fig.attention_figure(weights, sentence, start)


def _attended_fig(model, ids: torch.Tensor, sentence: str, s: int):
    queries, weights = hs.attention_to(model, ids, s)
    return fig.attended_figure(queries, weights, sentence, s)


def _on_strip_click() -> None:
    """on_select of the character strip: the clicked character becomes s."""
    event = st.session_state.get(STRIP)
    points = event["selection"]["points"] if event else []
    if points:
        st.session_state[ATTENDED] = int(points[0]["x"])


def draw_attention(slot_list: list[Slot], t: int) -> None:
    """The Transformer's attention from position t over the characters it may read, per layer and head; then,
    for a character s the user clicks or picks, who attends to it."""
    slot = next((s for s in slot_list if s.name == "Transformer"), None)
    st.subheader("The Transformer's attention at t")
    if slot is None or slot.ids is None:
        st.info("The Transformer cannot read this sentence (see the message above).")
        return
    sentence = st.session_state.get(SENTENCE, DEFAULT_SENTENCE)
    tt = min(t, len(slot.ids) - 1)
    st.markdown(f"Row (layer, head): how much position t = {tt} ({literal(repr(sentence[tt]))}) reads each earlier "
                "character s ≤ t; each row sums to 1. Nothing after t is visible (the causal mask).")
    plot(slot_value(_attention_fig, [slot], slot.model, slot.ids, sentence, tt, key=("attention", sentence, tt)),
         key=f"{PAGE}_attention")

    st.markdown("**Who attends to a character?** Click one below (or pick it with the slider): each later position "
                "t that can still see it, and how much of its attention goes there, per layer and head.")
    n = len(slot.ids)
    if st.session_state.get(ATTENDED) is None or st.session_state[ATTENDED] > n - 1:
        st.session_state[ATTENDED] = min(tt, n - 1)
    s = st.session_state[ATTENDED]
    st.plotly_chart(fig.character_strip(sentence[:n], s), key=STRIP, on_select=_on_strip_click,
                    selection_mode="points", config={"displayModeBar": False}, width="stretch")
    if n > 1:
        s = st.select_slider("s: the character attended to", options=list(range(n)), key=ATTENDED,
                             format_func=lambda i: f"{i}: {sentence[i]!r}")
    queries, weights = hs.attention_to(slot.model, slot.ids, s)
    strongest = np.unravel_index(int(np.argmax(weights)), weights.shape)
    layer, head, column = (int(x) for x in strongest)
    st.caption(f"{len(queries)} later position{'s' if len(queries) != 1 else ''} can read s = {s} "
               f"({literal(repr(sentence[s]))}). The strongest reader: t = {int(queries[column])} "
               f"({literal(repr(sentence[int(queries[column])]))}), layer {layer + 1} head {head + 1}, weight "
               f"{float(weights[layer, head, column]):.2f}. A row need not sum to 1: each reader spreads its own "
               "attention over every s ≤ t.")
    plot(slot_value(_attended_fig, [slot], slot.model, slot.ids, sentence, s, key=("attended", sentence, s)),
         key=f"{PAGE}_attended")


@st.cache_resource(show_spinner=False)
def _val_ids() -> dict:
    """The held-out text (last 10% of english-docs), which none of the shipped models trained on."""
    corpus = load_builtin(CORPUS)
    _, val = corpus.split()
    return {"text": corpus.text[len(corpus) - len(val):]}


@st.cache_resource(show_spinner=False)
def _probe_store() -> dict:
    """Probe results of shipped models per process, keyed by (model keys, config): fitted once, shared."""
    return {"lock": threading.Lock()}


def _readers(slot_list: list[Slot], text: str) -> tuple[list[tuple[Slot, torch.Tensor]], list[str]]:
    """(slots whose vocabulary can read ``text``, with its ids), and a sentence for each that cannot."""
    usable, left_out = [], []
    for slot in slot_list:
        try:
            usable.append((slot, slot.vocab.encode(text)))
        except UnknownCharactersError as err:
            shown = ", ".join(repr(c) for c in err.chars[:8])
            left_out.append(f"The {slot.name} ({SOURCE_LABELS[slot.candidate.source]}) is left out: its vocabulary "
                            f"lacks {literal(shown)} of the held-out {CORPUS} text.")
    return usable, left_out


def draw_probe(slot_list: list[Slot]) -> None:
    st.subheader("How far back each one remembers: memory probes")
    st.markdown(f"For k = 1…{PROBE.max_k}, a linear softmax probe softmax(W z_t + b) is fitted to read the "
                f"character k steps back from z_t: the RNN's and the minGRU's h_t, the LSTM's [h_t; c_t], the "
                f"Transformer's "
                f"vector at position t after each layer. Fitted on {int(PROBE.train_fraction * 100)}% of "
                f"{PROBE.chars:,} held-out characters of {CORPUS}; accuracy on the rest.")
    text = _val_ids()["text"][: PROBE.chars]
    usable, left_out = _readers(slot_list, text)
    for line in left_out:
        st.warning(line, icon=":material/block:")
    key = (tuple(s.key for s, _ in usable), PROBE)
    shared = all(s.shared for s, _ in usable)
    store = _probe_store() if shared else st.session_state.setdefault(PROBES, {})
    if st.button("Fit the probes", icon=":material/play_arrow:", key=f"{PAGE}_probe_button", disabled=not usable):
        st.session_state[PROBE_RUN] = True
        if key not in store:
            bar = st.progress(0.0, text="Fitting probes…")
            lock = store["lock"] if shared else threading.Lock()
            with lock:
                if key not in store:
                    curves = []
                    for i, (slot, ids) in enumerate(usable):
                        def report(f, msg, i=i):
                            bar.progress((i + f) / len(usable), text=msg)

                        curves += hs.probe_memory([slot.model], ids, PROBE, progress=report)
                    store[key] = curves
            bar.empty()
    if key in store and st.session_state.get(PROBE_RUN):
        plot(fig.probe_figure(store[key]), key=f"{PAGE}_probe")
        st.caption("Dashed grey: always answering the most common character (the chance level). The "
                   "Transformer's embedding (before layer 1) holds only x_t and its position: what it gets right at "
                   "k = 1 is guessed from x_t alone (which characters tend to come before it).")
    else:
        st.caption("Takes a few seconds; for the shipped models the result is shared by everyone on this server.")


def _bottleneck_fig(models: list[tuple[str, Any, torch.Tensor]]):
    losses = {name: hs.bottleneck(model, ids, LENGTHS) for name, model, ids in models}
    reference = {name: hs.ordinary_loss(model, ids, max(LENGTHS) - 1) for name, model, ids in models}
    return fig.bottleneck_figure(LENGTHS, losses, reference)


def draw_bottleneck(slot_list: list[Slot]) -> None:
    st.subheader("The bottleneck: loss against the context read")
    st.markdown(f"Each model reads only the last n characters (from a fresh state) and predicts the next; "
                f"the mean loss over {BOTTLENECK_CHARS} held-out positions, the same positions for every n. "
                "Dotted: the same positions read as each model ordinarily reads a text — the recurrent models "
                f"with their state carried from the start of the {BOTTLENECK_CHARS + max(LENGTHS)} characters, the "
                "Transformer through its sliding window (so its dotted line meets its curve at n = its context).")
    text = _val_ids()["text"][: BOTTLENECK_CHARS + max(LENGTHS)]
    usable, left_out = _readers(slot_list, text)
    for line in left_out:
        st.warning(line, icon=":material/block:")
    if not usable:
        return
    slots_used = [s for s, _ in usable]
    plot(slot_value(_bottleneck_fig, slots_used, [(s.name, s.model, ids) for s, ids in usable],
                    key=("bottleneck", LENGTHS)), key=f"{PAGE}_bottleneck")


def model_table(slot_list: list[Slot]) -> None:
    rows = [{"slot": s.name, "model": s.candidate.label, "parameters": params(s), "architecture": _describe(s),
             "steps": s.candidate.step} for s in slot_list]
    st.dataframe(rows, hide_index=True)


def _describe(slot: Slot) -> str:
    c = slot.model.config
    if c.kind == "transformer":
        return f"{c.layers} blocks, C = {c.hidden}, {c.n_head} heads, context {c.block_size}"
    return f"{c.layers} × {c.hidden} {hs.kind_label(c.kind)}"
