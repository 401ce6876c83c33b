"""The Memory experiments page: delayed copy (RNN against LSTM), conditioning on a vector, and what recurrence
costs."""

import streamlit as st

from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.memory_experiments.settings import LINK, TAB, TABS, set_defaults
from rnnviz.ui.memory_experiments.tabs import conditioning_tab, cost_tab, delay_tab


def page() -> None:
    page_header(
        "memory-experiments",
        "Three measured experiments on what a hidden state can hold. **Delayed copy** asks a model to output at "
        "step $t$ the symbol it read $D$ steps earlier, so $h_t$ must carry the last $D$ symbols. **Conditioning** "
        "feeds a style vector $v$ either at every step or only into $h_0$, and measures how long $v$ still matters. "
        "**Cost** times a training step of an LSTM layer, a minGRU (a parallel scan) and self-attention as the "
        "sequence length $T$ grows. Every number is "
        "computed on this machine when you press Run; change the seed in the sidebar to repeat with other seeds.",
        r"y_t = x_{t-D} \qquad h_t = \tanh(W_{hh}\,h_{t-1} + W_{xh}\,x_t + W_{ih}\,v) \;\;\text{or}\;\; "
        r"h_0 = \tanh(W v) \qquad c_t = f_t \odot c_{t-1} + i_t \odot g_t",
    )

    restore_from_link("memory", LINK)
    set_defaults()
    share_link(LINK)
    tab_delay, tab_conditioning, tab_cost = st.tabs(list(TABS.values()), key=TAB, on_change="rerun")
    with tab_delay:
        delay_tab()
    with tab_conditioning:
        conditioning_tab()
    with tab_cost:
        cost_tab()
    mirror_to_link(LINK)
