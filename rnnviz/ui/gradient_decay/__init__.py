"""The Gradient decay page: powers of W_hh, the tanh′ factor, per-step shares, clipping and the LSTM cell path, one
section at a time (the section is in the address, so a teacher can link straight to one)."""

import streamlit as st

from rnnviz.ui.app.errors import fragment
from rnnviz.ui.gradient_decay import sections
from rnnviz.ui.kit.links import (
    LinkParam,
    format_bool,
    format_choices,
    mirror_to_link,
    parse_bool,
    parse_choice,
    parse_choices,
    parse_float_in,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.widgets import page_header

LINK = (
    LinkParam("section", sections.SECTION, parse_choice(list(sections.SECTIONS)), example="clipping"),
    LinkParam("sigma", sections.SIGMA, parse_float_in(*sections.SIGMA_RANGE[:2]), lambda v: f"{v:.2f}", example="0.90"),
    sections.STEPS_LINK,
    LinkParam("H", sections.HIDDEN, parse_choice(sections.HIDDEN_SIZES), example="16"),
    LinkParam("matrix", sections.MATRIX, parse_choice(list(sections.MATRICES)), example="gaussian"),
    LinkParam("v", sections.VECTOR, parse_choice(list(sections.VECTORS)), example="random"),
    LinkParam("x_scale", sections.INPUT_SCALE, parse_float_in(0.0, 3.0), lambda v: f"{v:g}", example="0.5"),
    LinkParam("w_ih", sections.INPUT_WEIGHT, parse_float_in(0.0, 3.0), lambda v: f"{v:g}", example="2"),
    LinkParam("overlay", sections.OVERLAY, parse_choices(sections.OVERLAYS), format_choices, example="0.8,1.2"),
    LinkParam("log", sections.LOG_BARS, parse_bool, format_bool, example="0"),
    sections.THETA_LINK,
    LinkParam("lr", sections.LR, parse_choice(sections.RATES), example="2.0"),
    LinkParam("b_f", sections.FORGET_BIAS, parse_float_in(*sections.FORGET_BIAS_RANGE[:2]), lambda v: f"{v:g}",
              example="1"),
)


# The picker, the open section and its controls change nothing above them: one fragment, so that a move reruns it
# alone (not the navigation, the sidebar and the title).
@fragment
def one_section() -> None:
    sections.keep_settings()  # here: a section switch is a run of this fragment alone, which drops the other's widgets
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.segmented_control("Section", list(sections.SECTIONS), format_func=sections.SECTIONS.get, required=True,
                             key=sections.SECTION, label_visibility="collapsed")
        share_link(LINK)
    sections.draw(st.session_state[sections.SECTION])
    mirror_to_link(LINK)


def page() -> None:
    page_header(
        "gradient-decay",
        "Backpropagation through time multiplies one Jacobian per step, so the gradient from far back **vanishes** "
        "or **explodes**. Solid curves are measured from real matrices and a real RNN; dashed lines are theory.",
    )
    restore_from_link(sections.PAGE, LINK)
    one_section()
