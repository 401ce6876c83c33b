"""Builds st.navigation from the page registry and draws the sidebar every page shares."""

from __future__ import annotations

import streamlit as st

from rnnviz.ui.app.registry import GROUPS, PAGES, PageSpec, course_neighbours, page_by_title

SEED_KEY = "seed"  # the sidebar's seed, read by every page through kit.widgets.seed
COURSE_FOOTER = "course_footer"  # the container of Previous and Next (its CSS class: st-key-course_footer)

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
    return st.navigation(sections, expanded=True)  # every page shows: no "View N more" fold


def course_footer(title: str) -> None:
    """"Previous" and "Next" on the course path, at the end of the page called ``title``."""
    spec = page_by_title(title)
    if spec is None:
        return
    previous, following = course_neighbours(spec)
    if previous is None and following is None:
        return
    with st.container(key=COURSE_FOOTER):  # below the lesson: a page's first screen is measured without it
        st.divider()
        left, right = st.columns(2)
        if previous is not None:
            left.page_link(previous.path, label=f"Previous: {_step_name(previous)}", icon=":material/arrow_back:")
        if following is not None:
            right.page_link(following.path, label=f"Next: {_step_name(following)}",
                            icon=":material/arrow_forward:")


def _step_name(spec: PageSpec) -> str:
    return spec.title if spec.chapter == "Beyond" else f"{spec.chapter} {spec.title}"


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
