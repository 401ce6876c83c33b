"""The Hidden state page's "What each model carries into step t+1": each model's carried tensors at t as heat strips,
with their sizes, the bytes against t, and the Transformer's attention at t (t answers in the browser up to
INSTANT_CHARS characters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st
import torch

from rnnviz.core.state_stack import CARRIED_WORDS, STATE_KINDS
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hidden_state.sections import (
    INSTANT_CHARS,
    MINGRU_TRADE,
    PER_ROW,
    SOURCE_LABELS,
    STATE_STRIPS,
    STEP,
    STEP_LABEL,
    STEP_LINK,
    STRIPS_KEY,
    Slot,
    as_typed,
    grid,
    page_key,
    params,
    sentence,
    slot_value,
    transformer_slot,
)
from rnnviz.ui.kit import instant
from rnnviz.ui.kit.instant import Stop, instant_blocks, instant_slider, note
from rnnviz.ui.kit.links import mirror_to_link
from rnnviz.ui.kit.widgets import literal, plot


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
    slot = transformer_slot(slot_list)
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


def _bytes_fig(models: list[tuple[str, Any, torch.Tensor]], text: str):
    """Bytes carried after every character of the sentence, per model: the same for every t, so built once."""
    return fig.carried_bytes_figure({name: hs.carried_bytes_curve(model, ids) for name, model, ids in models}, text)


def _attention_table(model, ids: torch.Tensor, text: str, t: int) -> str:
    start, weights = hs.attention_at(model, ids, t)
    return fig.attention_table(weights, text, start)


def draw_attention_at(slot_list: list[Slot], t: int) -> None:
    """The Transformer's attention from position t over the characters it may read, per layer and head."""
    st.subheader("The Transformer's attention at t")
    slot = transformer_slot(slot_list)
    if slot is None:
        st.info("The Transformer cannot read this sentence (see the message above).")
        return
    text = sentence()
    tt = min(t, len(slot.ids) - 1)
    st.markdown(literal(attention_sentence(text, tt)))
    with st.container(key=page_key("attention")):
        st.html(slot_value(_attention_table, [slot], slot.model, slot.ids, text, tt, key=("attention", text, tt)))
