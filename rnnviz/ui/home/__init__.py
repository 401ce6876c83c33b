"""The Home page: the five shapes a sequence problem can take, with links to the pages that use each, and the
course path through the pages in the chapter's order."""

import streamlit as st

from rnnviz.figures.shapes import shape_figure
from rnnviz.lessons.shapes import SHAPES
from rnnviz.ui.app.registry import COURSE, page_by_url
from rnnviz.ui.kit.cache import shared_figure
from rnnviz.ui.kit.links import restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header, plot

PAGE = "home"


def page() -> None:
    page_header(
        "home",
        "A recurrent network reads a sequence one step at a time and carries a **hidden state** h_t from each "
        "step to the next. The same weights are used at every step, so one small network handles sequences of "
        "any length. Problems differ in where the inputs x_t go in and where the outputs y_t come out:",
        r"h_t = \tanh(W_{hh}\, h_{t-1} + W_{xh}\, x_t), \qquad y_t = W_{hy}\, h_t",
    )
    restore_from_link(PAGE, ())  # Home has no settings of its own: its link carries the sidebar's seed
    share_link(())
    st.markdown("In each diagram time runs left to right: the bottom row (red) holds the inputs x_t, the middle "
                "row (green) the hidden state h_t, the top row (blue) the outputs y_t.")

    for shape in SHAPES:
        with st.container(border=True):
            diagram, words = st.columns([1, 2], vertical_alignment="center")
            with diagram:
                plot(shared_figure(shape_figure, shape, key=shape.name), key=f"{PAGE}_{shape.name}",
                     alt=f"{shape.name}: {shape.steps} hidden state{'s' * (shape.steps > 1)} in a row, "
                         f"{len(shape.input_steps)} reading an input, {len(shape.output_steps)} writing an output")
            words.markdown(f"**{shape.name}.** {shape.example}")
            linked = [spec for spec in map(page_by_url, shape.page_urls) if spec is not None]
            for spec in linked:
                words.page_link(spec.path, label=spec.title, icon=spec.icon)

    st.header("The course, in the chapter's order")
    st.caption("Each page ends with a link to the next one.")
    for spec in COURSE[1:]:  # this page is the first step
        chapter, link, summary = st.columns([1, 4, 6], vertical_alignment="center")
        chapter.markdown(f"**{spec.chapter}**")
        link.page_link(spec.path, label=spec.title, icon=spec.icon)
        summary.markdown(spec.summary)
