"""Widgets of the hand-built AND page: the weight editor and the quiz's session state."""

from __future__ import annotations

import streamlit as st

from rnnviz.lessons.handbuilt import (
    HAND_SET,
    MAX_BITS,
    UNITS,
    HandConfig,
    HandWeights,
    format_bits,
    guess_is_right,
    parse_bits,
)
from rnnviz.ui.kit.links import LinkParam, parse_int_in

PREFIX = "handbuilt"
WEIGHT_INPUT = dict(min_value=-10.0, max_value=10.0, step=0.5, format="%g", label_visibility="collapsed")


def _xh_key(i: int) -> str:
    return f"{PREFIX}_w_xh_{i}"


def _hh_key(i: int, j: int) -> str:
    return f"{PREFIX}_w_hh_{i}{j}"


def _hy_key(j: int) -> str:
    return f"{PREFIX}_w_hy_{j}"


def _hand_set_values() -> dict[str, float]:
    values = {_xh_key(i): HAND_SET.w_xh[i] for i in range(UNITS)}
    values |= {_hh_key(i, j): HAND_SET.w_hh[i][j] for i in range(UNITS) for j in range(UNITS)}
    values |= {_hy_key(j): HAND_SET.w_hy[j] for j in range(UNITS)}
    return values


def reset_weights() -> None:
    """Put every weight back to the hand-set value (an on_click callback)."""
    st.session_state.update(_hand_set_values())


def weight_editor() -> HandWeights:
    """Number inputs laid out as W_xh (a column), W_hh (3×3) and W_hy (a row); returns the edited weights."""
    for key, value in _hand_set_values().items():
        st.session_state.setdefault(key, float(value))
    col_xh, col_hh, col_hy = st.columns([1, 3, 3])
    with col_xh:
        st.markdown("$W_{xh}$")
        for i in range(UNITS):
            st.number_input(f"W_xh[{i + 1}]", key=_xh_key(i), **WEIGHT_INPUT)
    with col_hh:
        st.markdown("$W_{hh}$")
        for i in range(UNITS):
            for j, cell in enumerate(st.columns(UNITS)):
                cell.number_input(f"W_hh[{i + 1},{j + 1}]", key=_hh_key(i, j), **WEIGHT_INPUT)
    with col_hy:
        st.markdown("$W_{hy}$")
        for j, cell in enumerate(st.columns(UNITS)):
            cell.number_input(f"W_hy[{j + 1}]", key=_hy_key(j), **WEIGHT_INPUT)
    # Under the matrices, not in W_hy's column: at 1024 px beside the sidebar that column cut the label to "…".
    st.button("Reset to the hand-set weights", key=f"{PREFIX}_reset", icon=":material/restart_alt:",
              on_click=reset_weights)
    state = st.session_state
    return HandWeights(
        w_xh=tuple(float(state[_xh_key(i)]) for i in range(UNITS)),
        w_hh=tuple(tuple(float(state[_hh_key(i, j)]) for j in range(UNITS)) for i in range(UNITS)),
        w_hy=tuple(float(state[_hy_key(j)]) for j in range(UNITS)),
    )


# --- Quiz mode -------------------------------------------------------------------------------------------

_SCORES = f"{PREFIX}_quiz_scores"  # {t: (guess, (right, right, right))} for the steps the user has checked
_SCORED_FOR = f"{PREFIX}_quiz_config"  # the config those scores belong to


def guess_key(unit: int) -> str:
    return f"{PREFIX}_guess_{unit}"


def quiz_scores(config: HandConfig) -> dict[int, tuple[tuple[float, ...], tuple[bool, ...]]]:
    """The checked guesses for this config; editing the bits or weights starts a fresh quiz."""
    if st.session_state.get(_SCORED_FOR) != config:
        st.session_state[_SCORED_FOR] = config
        st.session_state[_SCORES] = {}
    return st.session_state[_SCORES]


def _check_guess(t: int, truth: tuple[float, float, float]) -> None:
    guess = tuple(float(st.session_state.get(guess_key(u), 0.0)) for u in range(UNITS))
    st.session_state[_SCORES] = {**st.session_state.get(_SCORES, {}), t: (guess, guess_is_right(guess, truth))}
    for unit in range(UNITS):  # a fresh form for the next step
        st.session_state[guess_key(unit)] = 0.0


def guess_form(t: int, truth: tuple[float, float, float]) -> None:
    """Three number inputs for the predicted h_t and a button that scores them and reveals h_t."""
    st.markdown(f"**Quiz:** predict $h_{{{t}}}$ before it is revealed.")
    cols = st.columns(UNITS + 1, vertical_alignment="bottom")
    for unit in range(UNITS):
        st.session_state.setdefault(guess_key(unit), 0.0)
        cols[unit].number_input(f"$h_{{{t},{unit + 1}}}$", key=guess_key(unit), step=1.0, format="%g",
                                min_value=-100.0, max_value=100.0)
    cols[UNITS].button("Check my guess", key=f"{PREFIX}_check_guess", type="primary", on_click=_check_guess,
                       args=(t, truth))


# --- Shareable link --------------------------------------------------------------------------------------


def _parse_bits_text(text: str) -> str:
    return format_bits(parse_bits(text))


def _compact_bits(text: str) -> str:
    """'0,1,1' → '011' for a short address; text that is not bits travels as it is."""
    try:
        return "".join(map(str, parse_bits(text)))
    except ValueError:
        return text


STEP_LINK = LinkParam("t", f"{PREFIX}_step", parse=parse_int_in(0, MAX_BITS), example="5")
LINK_PARAMS = (
    LinkParam("bits", f"{PREFIX}_bits", parse=_parse_bits_text, format=_compact_bits, example="0110111"),
    STEP_LINK,
)
