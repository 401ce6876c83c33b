"""Hidden state in an RNN, an LSTM, a minGRU and a Transformer: what each carries into the next step, the
Transformer's attention, how far back each one remembers (memory probes) and the loss against the context read."""

import streamlit as st

from rnnviz.ui import hidden_state as sections
from rnnviz.ui import hidden_state_memory as memory
from rnnviz.ui.race import race_section
from rnnviz.ui.widgets import page_header

page_header(
    "hidden-state",
    "Four character models of about the same size, trained on the same text (english-docs): a vanilla **RNN**, "
    "an **LSTM**, a **minGRU** and a small **Transformer**. The RNN rewrites one vector h_t at every step; the LSTM "
    "splits its state into a slow cell c_t and an exposed h_t; the minGRU keeps one fixed-size h_t too, but its "
    "gates read only x_t, never the previous state, so it trains as a scan across the whole sequence (the recurrent "
    "idea behind Mamba and RWKV); the Transformer has no evolving state at all: at every step it keeps the keys "
    "and values of **every earlier character** in every layer, and attends over them.",
)
st.latex(r"\text{RNN:}\quad h_t = \tanh(W_{xh} x_t + b_{xh} + W_{hh} h_{t-1} + b_{hh})")
st.latex(r"\text{LSTM:}\quad c_t = f_t \odot c_{t-1} + i_t \odot g_t, \qquad h_t = o_t \odot \tanh(c_t)")
st.latex(r"\text{minGRU:}\quad z_t = \sigma(W_z x_t), \quad \tilde h_t = g(W_h x_t), \qquad "
         r"h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tilde h_t")
st.latex(r"\text{Transformer:}\quad \mathrm{Attn}(X) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d}} + M\right)V,"
         r"\qquad M_{ts} = \begin{cases} 0 & s \le t \\ -\infty & s > t \end{cases}")

sections.choose_sentence()
slots = sections.slots()
with st.expander("The four models: shipped, live-trained, uploaded or raced", icon=":material/info:"):
    sections.choose_models()
    sections.model_table(slots)
sections.step_through(slots)
sections.who_attends(slots)
memory.draw_probe(slots)
memory.draw_bottleneck(slots)
race_section()
