"""The text alternative every chart carries (rnnviz.figures.describe, Streamlit's ``alt``): what a screen reader says
instead of the picture is read from the figure itself: its title, its axes, and each series' size and range."""

import json

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import describe, house_style
from tests.apptest_helpers import instant_chart, open_page


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
    at = open_page("app_pages/gradient_decay.py", query={"section": "tanh"})
    charts = at.get("plotly_chart")
    assert len(charts) == 2  # the tanh′ histogram and the decay curves
    histogram, decay = charts
    assert histogram.proto.alt.startswith("A bar chart") and "bar: 40 values" in histogram.proto.alt  # 40 bins
    assert decay.proto.alt == describe(go.Figure(json.loads(decay.proto.spec)))
    # The decay curves at the default σ₁ and K: W_hh alone grows as 1.05ᵏ, to 1.51e+03 at k = 150.
    assert "measured ‖W_hh^(T−k)‖ (no tanh′): 151 values, 1 to 1.51e+03" in decay.proto.alt, decay.proto.alt


def test_the_instant_chart_says_what_it_shows_at_every_stop():
    """The powers section's chart is drawn in the browser (kit.instant_chart): its words for a screen reader come
    with each σ₁ stop's curves, and name that stop's σ₁ and the engine's numbers."""
    at = open_page("app_pages/gradient_decay.py")
    data = instant_chart(at, "gradient_decay_power")
    chosen = dict(zip(data["stops"], data["chosen"], strict=True))
    assert "for σ₁ = 1.05: measured 1.51·10³ after 150 steps" in chosen[1.05]["alt"]
    assert "for σ₁ = 0.95: measured 4.56·10⁻⁴ after 150 steps" in chosen[0.95]["alt"]
