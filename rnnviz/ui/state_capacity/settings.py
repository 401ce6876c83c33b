"""The page's session keys, its settings' choices and defaults, and its link (every setting in the address)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from rnnviz.experiments.recall import RecallSweepConfig
from rnnviz.experiments.sequence_models import SWEEP_KINDS
from rnnviz.experiments.state_capacity import MEMORY_EVAL, MEMORY_TASK
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_choice, parse_int_in

page_key = PageKeys("capacity")
BYTES_PAIRS = page_key("bytes_pairs")  # D of the accuracy-against-bytes chart
POINT_KIND, POINT_PAIRS, POINT_STEPS = page_key("point_kind"), page_key("point_pairs"), page_key("point_steps")
SEQUENCE, STEP = page_key("sequence"), page_key("t")  # the memory's recall sequence and its token t

PAIRS = RecallSweepConfig().pairs  # the D values every shipped recall sweep covers
AS_SHIPPED = 0  # point steps: the sweep's own budget for that kind
POINT_STEP_CHOICES = (AS_SHIPPED, 50, 150, 300)
DEFAULTS = {BYTES_PAIRS: 8, POINT_KIND: "mlstm", POINT_PAIRS: 8, POINT_STEPS: AS_SHIPPED, SEQUENCE: 0}


def steps_text(steps: int) -> str:
    return "as in the sweep" if steps == AS_SHIPPED else str(steps)


def _parse_steps(text: str) -> int:
    return AS_SHIPPED if text == steps_text(AS_SHIPPED) else parse_choice(POINT_STEP_CHOICES[1:])(text)


LINK = (
    LinkParam("D", BYTES_PAIRS, parse_choice(PAIRS), example="2"),
    LinkParam("kind", POINT_KIND, parse_choice(SWEEP_KINDS), example="lstm"),
    LinkParam("point_D", POINT_PAIRS, parse_choice(PAIRS), example="4"),
    LinkParam("point_steps", POINT_STEPS, _parse_steps, steps_text, example="50"),
    LinkParam("sequence", SEQUENCE, parse_int_in(0, MEMORY_EVAL - 1), example="3"),
    LinkParam("t", STEP, parse_int_in(0, MEMORY_TASK.length - 1), example="12"),
)


def set_defaults(first_query: Callable[[int], int]) -> None:
    """Every setting at its default, once per session; t starts at the chosen sequence's first query."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault(STEP, first_query(st.session_state[SEQUENCE]))
