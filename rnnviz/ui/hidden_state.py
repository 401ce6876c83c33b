"""Sections of the hidden-state page: what an RNN, an LSTM and a Transformer carry into the next step, the
Transformer's attention, memory probes and the context bottleneck, on the three shipped english-docs models."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import streamlit as st
import torch

from rnnviz.charlm.checkpoint import Checkpoint
from rnnviz.charlm.corpus import UnknownCharactersError, load_builtin
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.models import pretrained_checkpoints
from rnnviz.ui.widgets import literal, plot, shared_figure

PAGE = "hidden_state"
SENTENCE = f"{PAGE}_sentence"
STEP = f"{PAGE}_t"
PROBE_RUN = f"{PAGE}_probe_run"
CORPUS = "english-docs"
# The three shipped models of rnnviz/assets/models/MODELS.md this page compares, by file stem.
SLOTS = {"RNN": "rnn-english-docs", "LSTM": "lstm-small-english-docs", "Transformer": "transformer-english-docs"}
DEFAULT_SENTENCE = "The function returns a list of the values, in order."
PROBE = hs.ProbeConfig()
LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
BOTTLENECK_CHARS = 800  # val characters scored in the bottleneck (positions ≥ max n − 1)


@dataclass(frozen=True, eq=False)
class Slot:
    """One column of the comparison: a name, the shipped checkpoint, and the sentence's ids (or the error)."""

    name: str
    stem: str
    checkpoint: Checkpoint
    ids: torch.Tensor | None
    error: str | None


def slots() -> list[Slot]:
    """The shipped models of SLOTS that are present; stops the page with a message when none is."""
    loaded = pretrained_checkpoints()
    found = [(name, stem, loaded[stem]) for name, stem in SLOTS.items() if stem in loaded]
    if not found:
        st.error("The three shipped models of this page are missing from rnnviz/assets/models/.")
        st.stop()
    sentence = st.session_state.get(SENTENCE, DEFAULT_SENTENCE)
    if not sentence:
        st.info("Type a sentence above to step through it.", icon=":material/edit:")
        st.stop()
    out = []
    for name, stem, ckpt in found:
        try:
            out.append(Slot(name, stem, ckpt, ckpt.vocab.encode(sentence), None))
        except UnknownCharactersError as err:
            missing = ", ".join(repr(c) for c in err.chars)
            out.append(Slot(name, stem, ckpt, None, f"The {name}'s vocabulary lacks {missing}: it cannot read this "
                                                    "sentence. Edit the sentence; the other models still show theirs."))
    return out


def params(slot: Slot) -> int:
    return slot.checkpoint.model.num_parameters()


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


def _carried_fig(name: str, stem: str, t: int, sentence: str, checkpoint: Checkpoint) -> object:
    carried, _ = hs.carried_state(checkpoint.model, checkpoint.vocab.encode(sentence), t)
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
    cols = st.columns(len(slot_list))
    for col, slot in zip(cols, slot_list):
        with col:
            st.markdown(f"**{slot.name}** ({params(slot):,} parameters)")
            if slot.ids is None:
                st.caption("Cannot read this sentence.")
                continue
            tt = min(t, len(slot.ids) - 1)
            carried, _ = hs.carried_state(slot.checkpoint.model, slot.ids, tt)
            st.markdown(sizes_caption(carried))
            if carried.window_start > 0:
                st.warning(f"The sentence is longer than this Transformer's context of "
                           f"{slot.checkpoint.model.block_size} characters: its window starts at position "
                           f"{carried.window_start} ({literal(repr(sentence[carried.window_start]))}).",
                           icon=":material/crop:")
            plot(shared_figure(_carried_fig, slot.name, slot.stem, tt, sentence, slot.checkpoint,
                               key=(PAGE, "carried", slot.stem, tt, sentence)), key=f"{PAGE}_carried_{slot.name}")
    readable = [s for s in slot_list if s.ids is not None]
    if readable:
        plot(shared_figure(_bytes_fig, tuple(s.stem for s in readable), sentence, t,
                           key=(PAGE, "bytes", tuple(s.stem for s in readable), sentence, t)), key=f"{PAGE}_bytes")
        st.caption("Measured from the tensors after every character: the RNN's h_t and the LSTM's h_t and c_t "
                   "stay the same size; the Transformer's K and V cache grows by 2·L·C numbers per character "
                   "(until its context is full).")


def _bytes_fig(stems: tuple[str, ...], sentence: str, t: int):
    loaded = pretrained_checkpoints()
    names = {stem: name for name, stem in SLOTS.items()}
    curves = {names[s]: hs.carried_bytes_curve(loaded[s].model, loaded[s].vocab.encode(sentence)) for s in stems}
    return fig.carried_bytes_figure(curves, sentence, t)


def _attention_fig(stem: str, sentence: str, t: int):
    ckpt = pretrained_checkpoints()[stem]
    start, weights = hs.attention_at(ckpt.model, ckpt.vocab.encode(sentence), t)
    return fig.attention_figure(weights, sentence, start)


def draw_attention(slot_list: list[Slot], t: int) -> None:
    """The Transformer's attention from position t over the characters it may read, per layer and head."""
    slot = next((s for s in slot_list if s.name == "Transformer"), None)
    st.subheader("The Transformer's attention at t")
    if slot is None or slot.ids is None:
        st.info("The Transformer cannot read this sentence (see the message above).")
        return
    sentence = st.session_state.get(SENTENCE, DEFAULT_SENTENCE)
    tt = min(t, len(slot.ids) - 1)
    st.markdown(f"Row (layer, head): how much position t = {tt} ({literal(repr(sentence[tt]))}) reads each earlier "
                "character s ≤ t; each row sums to 1. Nothing after t is visible (the causal mask).")
    plot(shared_figure(_attention_fig, slot.stem, sentence, tt, key=(PAGE, "attention", slot.stem, sentence, tt)),
         key=f"{PAGE}_attention")


@st.cache_resource(show_spinner=False)
def _val_ids() -> dict:
    """The held-out text (last 10% of english-docs), which none of the three models trained on."""
    corpus = load_builtin(CORPUS)
    _, val = corpus.split()
    return {"text": corpus.text[len(corpus) - len(val):]}


@st.cache_resource(show_spinner=False)
def _probe_store() -> dict:
    """Probe results per process, keyed by (model stems, config): fitted once, shared by every session."""
    return {"lock": threading.Lock()}


def draw_probe(slot_list: list[Slot]) -> None:
    st.subheader("How far back each one remembers: memory probes")
    st.markdown(f"For k = 1…{PROBE.max_k}, a linear softmax probe softmax(W z_t + b) is fitted to read the "
                f"character k steps back from z_t: the RNN's h_t, the LSTM's [h_t; c_t], the Transformer's "
                f"vector at position t after each layer. Fitted on {int(PROBE.train_fraction * 100)}% of "
                f"{PROBE.chars:,} held-out characters of {CORPUS}; accuracy on the rest.")
    stems = tuple(s.stem for s in slot_list)
    key = (stems, PROBE)
    store = _probe_store()
    if st.button("Fit the probes", icon=":material/play_arrow:", key=f"{PAGE}_probe_button"):
        st.session_state[PROBE_RUN] = True
        if key not in store:
            bar = st.progress(0.0, text="Fitting probes…")
            loaded = pretrained_checkpoints()
            text = _val_ids()["text"]
            with store["lock"]:
                if key not in store:
                    ids = loaded[stems[0]].vocab.encode(text[: PROBE.chars])
                    store[key] = hs.probe_memory([loaded[s].model for s in stems], ids, PROBE,
                                                 progress=lambda f, msg: bar.progress(f, text=msg))
            bar.empty()
    if key in store and st.session_state.get(PROBE_RUN):
        curves = store[key]
        plot(fig.probe_figure(curves), key=f"{PAGE}_probe")
        st.caption("Dashed grey: always answering the most common character (the chance level). The "
                   "Transformer's embedding (before layer 1) holds only x_t and its position: what it gets right at "
                   "k = 1 is guessed from x_t alone (which characters tend to come before it).")
    else:
        st.caption("Takes a few seconds; the result is shared by everyone on this server.")


def _bottleneck_fig(stems: tuple[str, ...]):
    loaded = pretrained_checkpoints()
    names = {stem: name for name, stem in SLOTS.items()}
    text = _val_ids()["text"][: BOTTLENECK_CHARS + max(LENGTHS)]
    losses = {names[s]: hs.bottleneck(loaded[s].model, loaded[s].vocab.encode(text), LENGTHS) for s in stems}
    reference = {names[s]: hs.ordinary_loss(loaded[s].model, loaded[s].vocab.encode(text), max(LENGTHS) - 1)
                 for s in stems}
    return fig.bottleneck_figure(LENGTHS, losses, reference)


def draw_bottleneck(slot_list: list[Slot]) -> None:
    st.subheader("The bottleneck: loss against the context read")
    st.markdown(f"Each model reads only the last n characters (from a fresh state) and predicts the next; "
                f"the mean loss over {BOTTLENECK_CHARS} held-out positions, the same positions for every n. "
                "Dotted: the same positions read as each model ordinarily reads a text — the recurrent models "
                f"with their state carried from the start of the {BOTTLENECK_CHARS + max(LENGTHS)} characters, the "
                "Transformer through its sliding window of 64 (so its dotted line meets its curve at n = 64).")
    stems = tuple(s.stem for s in slot_list)
    plot(shared_figure(_bottleneck_fig, stems, key=(PAGE, "bottleneck", stems, LENGTHS)), key=f"{PAGE}_bottleneck")


def model_table(slot_list: list[Slot]) -> None:
    rows = [{"model": s.name, "file": f"{s.stem}.pt", "parameters": params(s), "architecture": _describe(s),
             "steps": s.checkpoint.step} for s in slot_list]
    st.dataframe(rows, hide_index=True)


def _describe(slot: Slot) -> str:
    c = slot.checkpoint.model.config
    if c.kind == "transformer":
        return f"{c.layers} blocks, C = {c.hidden}, {c.n_head} heads, context {c.block_size}"
    return f"{c.layers} × {c.hidden} {c.kind.upper()}"

