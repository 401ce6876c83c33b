"""Builds st.navigation from the page registry and draws the sidebar every page shares."""

from __future__ import annotations

import streamlit as st

from rnnviz.limits import quoted
from rnnviz.ui.app.browser import browser_script
from rnnviz.ui.app.registry import GROUPS, PAGES, PageSpec, course_neighbours, page_by_title
from rnnviz.ui.app.text import literal

SEED_KEY = "seed"  # the sidebar's seed, read by every page through kit.widgets.seed
SEED_PARAM = "seed"  # ?seed=7: every page's link carries the seed when it is not the default
DEFAULT_SEED = 0
MAX_SEED = 2**31 - 1
LINK_VALUE_CHARS = 40  # of a link's bad value a notice quotes this much; its reason may quote it again, up to 200
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


def restore_seed_from_link(page: str) -> None:
    """Once per session and page (as a page's own settings), the seed from ``?seed=``, before the sidebar draws its
    box; a bad one is said and left at the default."""
    flag = f"_link_restored_seed_{page}"
    if st.session_state.get(flag):
        return
    st.session_state[flag] = True
    text = st.query_params.get(SEED_PARAM)
    if text is None:
        return
    try:
        value = int(text)
        if not DEFAULT_SEED <= value <= MAX_SEED:
            raise ValueError(f"{value} is outside {DEFAULT_SEED}…{MAX_SEED}")
    except ValueError as err:
        st.warning(f"The seed in the link was not valid and was left at {DEFAULT_SEED}: "
                   f"seed={literal(quoted(text, LINK_VALUE_CHARS))} ({literal(quoted(err))})",
                   icon=":material/link_off:")
        return
    st.session_state[SEED_KEY] = value


def mirror_seed_to_link() -> None:
    """The seed in the address when it is not the default (or when the address already names one)."""
    value = int(st.session_state.get(SEED_KEY, DEFAULT_SEED))
    if value != DEFAULT_SEED or SEED_PARAM in st.query_params:
        if st.query_params.get(SEED_PARAM) != str(value):
            st.query_params[SEED_PARAM] = str(value)


def render_sidebar(page: str) -> None:
    """The shared sidebar: the global seed (from the link, and kept in it), about and links."""
    restore_seed_from_link(page)
    with st.sidebar:
        st.number_input(
            "Seed",
            min_value=DEFAULT_SEED,
            max_value=MAX_SEED,
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
        browser_script()  # here because the sidebar is drawn on every page, before the page itself
    mirror_seed_to_link()
