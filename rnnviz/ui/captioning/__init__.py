"""The Image captioning page: a small CNN reads a generated scene, its vector v conditions an LSTM that writes the
caption, with v at every step (the LSTM reads [x_t; v]) or only in the initial state h₀, c₀; beam search, word
saliency and hallucination from co-occurrence."""

import streamlit as st

from rnnviz.ui.captioning import scene as scene_builder
from rnnviz.ui.captioning import sections
from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header

LINK = (*scene_builder.LINK, *sections.LINK)


def page() -> None:
    page_header(
        "image-captioning",
        "A convolutional network reads a 48 × 48 scene; its penultimate vector **v** conditions an LSTM that writes "
        "the caption word by word, from `<START>` to `<END>`. Two ways to join them: v enters **at every step** "
        "(the LSTM reads [x_t; v]), or **only in the initial state** h₀, c₀ (once, at t = 0): the equations below "
        "differ only in the gates' pre-activation a_t and in h₀, c₀. Build a scene, watch the caption being decoded, "
        "and see where and why it goes wrong.",
    )
    # The equations the engine computes (rnnviz/captioning/model.py; tests/test_captioning_page.py steps both shipped
    # captioners by hand with them). W_xh and W_vh are the x_t and v columns of torch's weight_ih_l0.
    st.latex(r"\text{v at every step:}\quad a_t = W_{xh}\,x_t + W_{vh}\,v + W_{hh}\,h_{t-1} + b,\qquad h_0 = c_0 = 0")
    st.latex(r"\text{v only in } h_0, c_0\text{:}\quad a_t = W_{xh}\,x_t + W_{hh}\,h_{t-1} + b,\qquad "
             r"h_0 = \tanh(W_h\,v + b_h),\quad c_0 = W_c\,v + b_c")
    st.latex(r"a_t = [a^i_t;\, a^f_t;\, a^g_t;\, a^o_t]:\quad i_t = \sigma(a^i_t),\quad f_t = \sigma(a^f_t),\quad "
             r"g_t = \tanh(a^g_t),\quad o_t = \sigma(a^o_t)")
    st.latex(r"c_t = f_t \odot c_{t-1} + i_t \odot g_t,\qquad h_t = o_t \odot \tanh(c_t),\qquad "
             r"p(w_t \mid w_{<t}, v) = \mathrm{softmax}(W_{hy}\,h_t + b_y)")
    st.latex(r"x_t = E\,w_{t-1},\quad w_0 = \langle\mathrm{START}\rangle,\qquad v = \mathrm{CNN}(\text{image}),"
             r"\qquad t = 1, 2, \ldots \text{ until } w_t = \langle\mathrm{END}\rangle")

    restore_from_link("captioning", LINK)
    scene_builder.set_defaults()
    sections.set_defaults()
    share_link(LINK)
    caps = sections.captioners()
    built = scene_builder.build_scene()
    if built is not None:
        scene, image = built
        model, ids = sections.decode_section(caps, image)
        sections.saliency_section(model, image, scene, ids)
    sections.joins_section(caps, None if built is None else built[1])
    sections.hallucination_section(caps)
    sections.train_section()
    mirror_to_link(LINK)
