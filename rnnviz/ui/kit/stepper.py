"""Step-through controls: first, back, step and play-to-end buttons that move an index in session state.

The buttons are ``on_click`` callbacks, so the index has moved before the page reruns and every element
drawn below the controls already shows the new step. The index lives in ``st.session_state[key]``, which
a page may also mirror into its shareable link.
"""

from __future__ import annotations

import streamlit as st


def _move(key: str, target: int) -> None:
    st.session_state[key] = target


def _shift(key: str, delta: int, first: int, last: int) -> None:
    # Relative to the index at click time, so two quick clicks move two steps.
    st.session_state[key] = min(max(int(st.session_state.get(key, first)) + delta, first), last)


def clamp_step(key: str, first: int, last: int) -> int:
    """The index, kept within [first, last] when the sequence under it has changed."""
    value = st.session_state.get(key, first)
    value = min(max(int(value), first), last)
    st.session_state[key] = value
    return value


def step_controls(key: str, first: int, last: int, caption: str = "", out_of_range: str = "") -> int:
    """Four buttons in a row and a caption (``{step}`` in it becomes the index); returns the index in [first, last].

    ``out_of_range`` is said when the index asked for (by a link, or before the sequence shrank) was outside and
    was moved in: ``{asked}`` and ``{step}`` in it become the two."""
    asked = st.session_state.get(key, first)
    current = clamp_step(key, first, last)
    if out_of_range and asked != current:
        st.warning(out_of_range.format(asked=asked, step=current), icon=":material/link_off:")
    # Each button as wide as its label (and its key's sign), in a row that wraps where the page is narrow: in
    # shared columns "First" was cut to "F…" at 1400 px beside the sidebar, and every label on a tablet.
    row = st.container(horizontal=True, vertical_alignment="center")
    # The arrow keys, Home and End press them too (Streamlit's shortcuts, which stay quiet while a text box, a
    # slider or another control that reads those keys has the focus): a page has one stepper.
    row.button("First", key=f"{key}_first", icon=":material/first_page:", on_click=_move, args=(key, first),
               disabled=current == first, shortcut="Home")
    row.button("Back", key=f"{key}_back", icon=":material/chevron_left:", on_click=_shift,
               args=(key, -1, first, last), disabled=current == first, shortcut="Left")
    row.button("Step", key=f"{key}_forward", icon=":material/chevron_right:", type="primary", on_click=_shift,
               args=(key, 1, first, last), disabled=current == last, shortcut="Right")
    row.button("Play to end", key=f"{key}_end", icon=":material/last_page:", on_click=_move, args=(key, last),
               disabled=current == last, shortcut="End")
    if caption:
        row.markdown(caption.format(step=current))
    return current
