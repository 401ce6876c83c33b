"""The text alternative every chart carries (rnnviz.figures.describe, Streamlit's ``alt``): what a screen reader says
instead of the picture is read from the figure itself: its title, its axes, and each series' size and range."""

import json

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import describe, house_style
from tests.apptest_helpers import open_page


def test_describe_reads_the_title_the_axes_and_each_series_range():
    fig = house_style(go.Figure([
        go.Scatter(x=np.arange(4), y=[1.0, 0.5, 0.25, 0.125], name="measured ‖W_hhᴷ v‖"),
        go.Scatter(x=np.arange(4), y=[2.0, 2.0, 2.0, 2.0], name="<b>bound</b> σ₁ᴷ"),
        go.Scatter(x=[None], y=[None], mode="markers"),  # a legend marker: nothing to say
    ]))
    fig.update_layout(title="Gradient norm<br>over K steps", xaxis_title="K", yaxis_title="norm")
    assert describe(fig) == ("Gradient norm over K steps. x axis: K; y axis: norm. measured ‖W_hhᴷ v‖: 4 values, "
                             "0.125 to 1. bound σ₁ᴷ: 4 values, 2.")


def test_describe_gives_a_heat_map_s_range_and_counts_the_series_it_leaves_out():
    heat = go.Figure(go.Heatmap(z=[[0.0, -3.5], [np.nan, 7.25]], name="attention"))
    assert describe(heat) == "A heat map chart. attention: 4 values, -3.5 to 7.25."
    many = go.Figure([go.Bar(x=["a"], y=[k], name=f"run {k}") for k in range(9)])
    text = describe(many)
    assert "run 5: 1 value, 5" in text and "run 6" not in text and text.endswith("and 3 more series.")


def test_every_chart_on_a_page_carries_its_description():
    at = open_page("app_pages/gradient_decay.py")
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        assert chart.proto.alt == describe(go.Figure(spec))
        assert "σ₁ = 1.05, measured: 151 values, 1 to 1.51e+03" in chart.proto.alt  # the default σ₁ and K
