"""Memory sections of the hidden-state page: how far back each model remembers (linear probes on what it carries:
h_t, [h_t; c_t], the Transformer's K/V cache) and the bottleneck, the loss against the characters read, with the
uniform guess ln V and, where a model does worse than it, the reason in words.

Results of shipped models are shared by the process; those of a session's own models stay in the session
(``hidden_state.slot_value``)."""

from __future__ import annotations

import math
import threading

import streamlit as st
import torch

from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.hidden_state.sections import Slot, page_key, slot_readers, slot_value
from rnnviz.ui.kit.corpora import builtin_corpus
from rnnviz.ui.kit.widgets import plot

PROBE_RUN = page_key("probe_run")
PROBES = page_key("probes")  # this session's probe results of its own models
CORPUS = "english-docs"
PROBE = hs.ProbeConfig()
LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
BOTTLENECK_CHARS = 800  # val characters scored in the bottleneck (positions ≥ max n − 1)


@st.cache_resource(show_spinner=False)
def _val_ids() -> dict:
    """The held-out text (last 10% of english-docs), which none of the shipped models trained on."""
    corpus = builtin_corpus(CORPUS)  # read once per process, shared with the race
    _, val = corpus.split()
    return {"text": corpus.text[len(corpus) - len(val):]}


@st.cache_resource(show_spinner=False)
def _probe_store() -> dict:
    """Probe results of shipped models per process, keyed by (model keys, config): fitted once, shared."""
    return {"lock": threading.Lock()}


def draw_probe(slot_list: list[Slot]) -> None:
    st.subheader("How far back each one remembers: memory probes")
    st.markdown(
        f"For k = 1…{PROBE.max_k}, a linear softmax probe softmax(W z + b) is fitted to read the character k steps "
        "back from what each model **carries into step t+1**: the RNN's and the minGRU's h_t, the LSTM's "
        "[h_t; c_t], and the Transformer's **K/V cache**, whose entry for position s = t − k (the keys and "
        "values of every layer) is where the Transformer keeps that character. Dotted: the Transformer's vector "
        "x_t after its last layer, which it computes at t but does not carry. Fitted on "
        f"{int(PROBE.train_fraction * 100)}% of {PROBE.chars:,} held-out characters of {CORPUS}; accuracy on the "
        "rest." + _state_probe_words(slot_list))
    text = _val_ids()["text"][: PROBE.chars]
    usable, left_out = slot_readers(slot_list, text, f"the held-out {CORPUS} text")
    for line in left_out:
        st.warning(line, icon=":material/block:")
    key = (tuple(s.key for s, _ in usable), PROBE)
    shared = all(s.shared for s, _ in usable)
    store = _probe_store() if shared else st.session_state.setdefault(PROBES, {})
    if st.button("Fit the probes", icon=":material/play_arrow:", key=page_key("probe_button"), disabled=not usable):
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
        plot(fig.probe_figure(store[key]), key=page_key("probe"))
        st.caption(probe_caption(store[key], slot_list))
    else:
        st.caption(f"Fits {PROBE.max_k} probes for each line, which takes a while on a busy machine; for the "
                   "shipped models it is done once and shared by everyone on this server.")


def _state_probe_words(slot_list: list[Slot]) -> str:
    """How the probe reads the state kinds shown: every field of their state side by side."""
    names = [s.name for s in slot_list if s.model.config.kind in STATE_KINDS]
    if not names:
        return ""
    return (f" For {_names(names)}: every field of the state it carries, every layer's, side by side (a matrix "
            "memory flattened; its short convolution's last inputs too, which hold the last few characters as they "
            "are).")


def probe_caption(curves: list[hs.ProbeCurve], slot_list: list[Slot]) -> str:
    """What the probe lines say, with the Transformer's context from its model (the cache holds that many)."""
    lines = ["Dashed grey: always answering the most common character (the chance level)."]
    gpt = next((s.model for s in slot_list if s.model.config.kind == "transformer"), None)
    if gpt is not None and any(c.name == hs.KV_CACHE for c in curves):
        block = gpt.block_size
        lines.append(f"Attention does not forget inside its window: the cache keeps an entry for each of the last "
                     f"{block} characters, so the character k steps back is read from its own entry, as easily for "
                     f"k = {PROBE.max_k} as for k = 1 (and for every k < {block}); a character {block} or more steps "
                     "back is not in the cache at all. The recurrent states fade because they squeeze the whole past "
                     "into a fixed number of values.")
    return " ".join(lines)


def _bottleneck_values(model, ids: torch.Tensor) -> tuple[list[float], float]:
    """(loss for each n in LENGTHS, loss as the model ordinarily reads the same positions)."""
    return hs.bottleneck(model, ids, LENGTHS), hs.ordinary_loss(model, ids, max(LENGTHS) - 1)


def _bottleneck_fig(values: dict[str, tuple[list[float], float]], vocab_sizes: tuple[int, ...]):
    return fig.bottleneck_figure(LENGTHS, {n: v[0] for n, v in values.items()}, vocab_sizes,
                                 {n: v[1] for n, v in values.items()})


def above_uniform(values: dict[str, tuple[list[float], float]],
                  vocab_sizes: dict[str, int]) -> list[tuple[str, int, float]]:
    """(model, n, loss) of every point above its uniform guess ln V: worse than guessing blindly."""
    return [(name, n, loss) for name, (losses, _) in values.items() for n, loss in zip(LENGTHS, losses)
            if math.isfinite(loss) and loss > math.log(vocab_sizes[name])]


def bottleneck_note(values: dict[str, tuple[list[float], float]], slot_list: list[Slot]) -> str:
    """Which points sit above ln V and why; why the small n of a model trained with its state carried mean less."""
    sizes = {s.name: s.vocab.size for s in slot_list}
    carried = [s.name for s in slot_list if s.candidate.carries_state and s.name in values]
    points = above_uniform(values, sizes)
    lines = []
    if points:
        shown = "; ".join(f"the {name} at n = {n}: {loss:.3f} against ln {sizes[name]} = "
                          f"{math.log(sizes[name]):.3f}" for name, n, loss in points)
        lines.append(f"**Above the dashed line, worse than the uniform guess:** {shown}.")
    if carried:
        lines.append(f"Why: {_names(carried)} were trained with their state carried from one chunk of text to the "
                     "next, so a fresh h_0 = 0 is a start they met only at their very first step. Reading n "
                     "characters from h_0 = 0 is a situation they never practised: at small n their loss says that "
                     "as well as how much the n characters tell. It is not a slip of the scoring: the dotted lines "
                     "show the same positions read as usual.")
        if any(s.model.config.kind == "transformer" for s in slot_list):
            lines[-1] += (" The Transformer trained on windows that each start from nothing, so n characters read "
                          "from nothing is what it practised at every position of a window.")
    fresh = sorted({name for name, _, _ in points} - set(carried))
    if fresh:
        names = _names(fresh)
        lines.append(f"{names[0].upper()}{names[1:]} trained without a carried state: "
                     f"{'its' if len(fresh) == 1 else 'their'} points above ln V are simply worse than a blind guess.")
    return "\n\n".join(lines)


def _names(names: list[str]) -> str:
    """"the RNN", "the RNN and the LSTM", "the RNN, the LSTM and the minGRU"."""
    named = [f"the {n}" for n in names]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def draw_bottleneck(slot_list: list[Slot]) -> None:
    st.subheader("The bottleneck: loss against the context read")
    st.markdown(f"Each model reads only the last n characters (from a fresh state) and predicts the next; "
                f"the mean loss over {BOTTLENECK_CHARS} held-out positions, the same positions for every n. "
                "Dotted: the same positions read as each model ordinarily reads a text — the recurrent models "
                f"with their state carried from the start of the {BOTTLENECK_CHARS + max(LENGTHS)} characters, the "
                "Transformer through its sliding window (so its dotted line meets its curve at n = its context). "
                "Dashed grey: the uniform guess over the V characters, ln V nats.")
    text = _val_ids()["text"][: BOTTLENECK_CHARS + max(LENGTHS)]
    usable, left_out = slot_readers(slot_list, text, f"the held-out {CORPUS} text")
    for line in left_out:
        st.warning(line, icon=":material/block:")
    if not usable:
        return
    slots_used = [s for s, _ in usable]
    # One slot at a time: a shipped model's values stay shared by the process when a session's own joins them.
    values = {s.name: slot_value(_bottleneck_values, [s], s.model, ids, key=("bottleneck", LENGTHS))
              for s, ids in usable}
    vocab_sizes = tuple(sorted({s.vocab.size for s in slots_used}))  # one V unless a slot reads another corpus
    plot(slot_value(_bottleneck_fig, slots_used, values, vocab_sizes, key=("bottleneck figure", LENGTHS)),
         key=page_key("bottleneck"))
    note = bottleneck_note(values, slots_used)
    if note:
        st.markdown(note)
