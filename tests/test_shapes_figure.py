"""Home's diagrams (their blocks are checked on the page by tests/test_pages.py): one arrow per connection, and
every shape drawn to one scale, so that a step is as wide in each."""

import pytest

from rnnviz.figures import PALETTE
from rnnviz.figures.shapes import shape_figure
from rnnviz.lessons.shapes import SHAPES


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_draws_an_arrow_per_step_to_step_input_and_output_connection(shape):
    fig = shape_figure(shape)
    colours = [block.fillcolor for block in fig.layout.shapes]
    assert colours.count(PALETTE["input"]) == len(shape.input_steps)
    assert colours.count(PALETTE["output"]) == len(shape.output_steps)
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == (shape.steps - 1) + len(shape.input_steps) + len(shape.output_steps)


def test_the_shapes_are_drawn_to_one_scale():
    ranges = {tuple(shape_figure(shape).layout.xaxis.range) for shape in SHAPES}
    assert len(ranges) == 1
