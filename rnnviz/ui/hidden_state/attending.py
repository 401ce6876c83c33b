"""The Hidden state page's "Who attends to a character?": for a character s, each later position t of the
Transformer that can still read it, and how much of its attention goes there (the s slider answers in the browser up
to INSTANT_CHARS characters)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from rnnviz.figures import hidden_state as fig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hidden_state.sections import (
    ATTENDED,
    ATTENDED_LINK,
    INSTANT_CHARS,
    STEP,
    STRIP,
    Slot,
    figures_key,
    page_key,
    said,
    sentence,
    slot_value,
    transformer_slot,
)
from rnnviz.ui.kit.instant import Stop, instant_figure, instant_slider, note
from rnnviz.ui.kit.links import mirror_to_link
from rnnviz.ui.kit.widgets import for_the_room, literal, plot


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
    slot = transformer_slot(slot_list)
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
