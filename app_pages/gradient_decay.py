"""Gradient decay: powers of W_hh, the tanh′ factor, per-step shares, clipping and the LSTM cell path, one
section at a time (the section is in the address, so a teacher can link straight to one)."""

import streamlit as st

from rnnviz.ui.kit.links import (
    LinkParam,
    mirror_to_link,
    parse_choice,
    parse_float_in,
    parse_int_in,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.mechanics import gradient as sections

LINK = (
    LinkParam("section", sections.SECTION, parse_choice(list(sections.SECTIONS))),
    LinkParam("sigma", sections.SIGMA, parse_float_in(0.5, 1.5), lambda v: f"{v:.2f}"),
    LinkParam("K", sections.STEPS, parse_int_in(10, 300)),
)

page_header(
    "gradient-decay",
    "Backpropagation through time multiplies one Jacobian per step, so the gradient from far back **vanishes** "
    "or **explodes**. Solid curves are measured from real matrices and a real RNN; dashed lines are theory.",
)
restore_from_link(sections.PAGE, LINK)
sections.keep_settings()
with st.container(horizontal=True, vertical_alignment="bottom"):
    st.segmented_control("Section", list(sections.SECTIONS), format_func=sections.SECTIONS.get, required=True,
                         key=sections.SECTION, label_visibility="collapsed")
    share_link(LINK)
sections.draw(st.session_state[sections.SECTION])
mirror_to_link(LINK)
