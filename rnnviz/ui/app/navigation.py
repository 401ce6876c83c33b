"""Builds st.navigation from the page registry and draws the sidebar every page shares."""

from __future__ import annotations

import streamlit as st

from rnnviz.ui.app.registry import GROUPS, PAGES

SEED_KEY = "seed"  # the sidebar's seed, read by every page through kit.widgets.seed

ABOUT = (
    "**rnnviz** is an interactive lab for recurrent neural networks. Every number and figure is computed "
    "live by a small PyTorch engine from real tensors; nothing is pre-rendered."
)


def build_navigation():
    """st.navigation over the registered pages, grouped by section."""
    sections = {
        group: [
            st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, default=p.default)
            for p in PAGES
            if p.group == group
        ]
        for group in GROUPS
    }
    return st.navigation(sections)


def render_sidebar() -> None:
    """The shared sidebar: the global seed, about and links."""
    with st.sidebar:
        st.number_input(
            "Seed",
            min_value=0,
            max_value=2**31 - 1,
            step=1,
            key=SEED_KEY,
            help="Seeds every random weight, input and sample on the pages, so a class sees the same numbers.",
        )
        with st.expander("About rnnviz"):
            st.markdown(ABOUT)
            st.markdown(
                "- [PyTorch `nn.LSTM`](https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)\n"
                "- [Karpathy: The Unreasonable Effectiveness of RNNs]"
                "(https://karpathy.github.io/2015/05/21/rnn-effectiveness/)\n"
                "- [LSTMVis](http://lstm.seas.harvard.edu/)\n"
                "- [Distill: Memorization in RNNs](https://distill.pub/2019/memorization-in-rnns/)"
            )
