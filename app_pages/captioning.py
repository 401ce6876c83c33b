"""Image captioning: a small CNN reads a generated scene, its vector v conditions an LSTM that writes the caption
(Eq. 8.11), with v at every step or only in the initial state h₀, c₀; beam search, word saliency and
hallucination from co-occurrence."""

import streamlit as st

from rnnviz.ui import captioning as sections
from rnnviz.ui.widgets import page_header

page_header(
    "image-captioning",
    "A convolutional network reads a 48 × 48 scene; its penultimate vector **v** conditions an LSTM that writes "
    "the caption word by word, from `<START>` to `<END>`. Two ways to join them: v enters **at every step** "
    "(Eq. 8.11), or **only in the initial state** h₀, c₀ (once, at t = 0). Build a scene, watch the caption "
    "being decoded, and see where and why it goes wrong.",
)
st.latex(r"\text{every step (Eq. 8.11):}\quad "
         r"h_t = \mathrm{LSTM}\big(W_{xh}\,x_t + W_{ih}\,v + W_{hh}\,h_{t-1} + b\big),"
         r"\qquad h_0 = c_0 = 0")
st.latex(r"h_0\text{ only:}\quad h_0 = \tanh(W_h v + b_h),\quad c_0 = W_c v + b_c,\qquad "
         r"h_t = \mathrm{LSTM}\big(W_{xh}\,x_t + W_{hh}\,h_{t-1} + b\big)")
st.latex(r"p(w_{t+1} \mid w_{\le t}, v) = \mathrm{softmax}(W_{hy} h_t + b_y),\qquad x_t = E\,w_t,\qquad "
         r"v = \mathrm{CNN}(\text{image})")

caps = sections.captioners()
built = sections.build_scene()
if built is not None:
    scene, image = built
    model, ids = sections.decode_section(caps, image)
    sections.saliency_section(model, image, scene, ids)
sections.joins_section(caps, None if built is None else built[1])
sections.hallucination_section(caps)
sections.train_section()
