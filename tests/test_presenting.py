"""Presenting mode and hidden controls (rnnviz/ui/app/presenting.py), through AppTest: ?present=1 turns the switch
on and draws the page for a room (its CSS, its figures' fonts 1.25 times larger), ?hide= hides the named controls,
and a bad value is named in a notice instead of failing."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from rnnviz.figures import FONT_SIZE, house_style, scale_fonts
from rnnviz.ui.app.presenting import PRESENT_KEY, ROOM_SCALE
from rnnviz.ui.gradient_decay import sections as gradient
from tests.apptest_helpers import APP, TIMEOUT, instant_chart, open_page, page_text
from tests.figure_helpers import figure

GRADIENT_DECAY = "app_pages/gradient_decay.py"


def styles(at) -> str:
    return "\n".join(h.value for h in at.html if "<style>" in h.value)


def test_scale_fonts_multiplies_every_font_size_and_leaves_the_data_and_the_figure_alone():
    fig = house_style(go.Figure(go.Bar(x=["a", "b"], y=[1.0, 2.0], text=["1", "2"], textfont=dict(size=[10, 13]))))
    fig.add_annotation(text="note", x=0, y=1, font=dict(size=14, color="#555"))
    fig.update_xaxes(tickfont=dict(size=11))
    fig.update_layout(title=dict(text="t", font=dict(size=18)))
    scaled = scale_fonts(fig, 1.5)
    assert scaled["layout"]["font"]["size"] == FONT_SIZE * 1.5
    assert scaled["layout"]["legend"]["font"]["size"] == (FONT_SIZE - 2) * 1.5
    assert scaled["layout"]["annotations"][0]["font"] == {"size": 21.0, "color": "#555"}
    assert scaled["layout"]["xaxis"]["tickfont"]["size"] == 16.5
    assert scaled["layout"]["title"]["font"]["size"] == 27.0
    assert scaled["data"][0]["textfont"]["size"] == [15.0, 19.5]
    assert list(scaled["data"][0]["y"]) == [1.0, 2.0] and list(scaled["data"][0]["x"]) == ["a", "b"]
    # The figure itself (a cached one may be drawn in other sessions) keeps its sizes.
    assert fig.layout.font.size == FONT_SIZE and fig.layout.annotations[0].font.size == 14
    # A figure that sets no global font gets plotly's 12 px, scaled, so that its unsized text grows too.
    bare = scale_fonts(go.Figure(go.Scatter(x=np.arange(3), y=np.ones(3))), ROOM_SCALE)
    assert bare["layout"]["font"]["size"] == 12 * ROOM_SCALE


def test_a_presenting_link_hides_the_named_controls_and_draws_the_figures_larger():
    at = open_page(GRADIENT_DECAY, query={"present": "1", "hide": "sigma,bogus"})
    assert not at.exception
    assert at.toggle(key=PRESENT_KEY).value is True
    css = styles(at)
    assert f"font-size: {16 * ROOM_SCALE:g}px" in css and '[data-testid="stSidebar"]' in css
    assert f".st-key-{gradient.SIGMA} {{ display: none !important; }}" in css
    assert f".st-key-{gradient.STEPS}" not in css  # K was not named
    text = page_text(at)
    assert "names controls this page does not have (bogus)" in text and "can hide: section, sigma, K" in text
    # The section's chart is drawn in the browser (kit.instant_chart), at the room's scale.
    assert instant_chart(at, "gradient_decay_power")["font_scale"] == ROOM_SCALE
    at.segmented_control(key=gradient.SECTION).set_value("tanh").run()  # a section of plotly charts
    assert figure(at)["layout"]["font"]["size"] == FONT_SIZE * ROOM_SCALE
    at.segmented_control(key=gradient.SECTION).set_value("powers").run()
    assert at.query_params["present"] == "1"

    at.toggle(key=PRESENT_KEY).set_value(False).run()  # the teacher turns it off
    assert not at.exception
    css = styles(at)
    assert "font-size: 20px" not in css and '[data-testid="stSidebar"]' not in css
    assert f".st-key-{gradient.SIGMA}" in css, "a hidden control stays hidden: the link still says hide=sigma"
    assert "present" not in at.query_params
    assert instant_chart(at, "gradient_decay_power")["font_scale"] == 1.0


def test_presenting_home_draws_its_diagrams_larger():
    """Home's diagrams are figures without traces (shapes and annotations), which st.plotly_chart refuses as a
    dict: presenting Home raised an exception before (found by bench.browser_latency's Presenting row)."""
    at = open_page("app_pages/home.py", query={"present": "1"})
    assert not at.exception
    diagrams = [figure(at, i) for i in range(len(at.get("plotly_chart")))]
    assert diagrams and all(not d.get("data") for d in diagrams)
    at.toggle(key=PRESENT_KEY).set_value(False).run()  # the teacher turns it off
    assert not at.exception
    as_usual = [figure(at, i) for i in range(len(at.get("plotly_chart")))]
    assert [d["layout"]["font"]["size"] for d in diagrams] == [
        pytest.approx(d["layout"]["font"].get("size", 12) * ROOM_SCALE) for d in as_usual]


def test_a_bad_present_value_is_named_and_the_page_is_shown_as_usual():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)  # the link's page is the session's first run, as in a browser
    at.query_params["present"] = "<b>maybe</b>"
    at.switch_page(GRADIENT_DECAY)
    at.run()
    assert not at.exception
    assert at.toggle(key=PRESENT_KEY).value is False
    assert "present= in the link is neither 1 nor 0" in page_text(at)
    assert "font-size: 20px" not in styles(at)
    assert figure(at)["layout"]["font"]["size"] == FONT_SIZE


def test_presenting_folds_the_live_pages_settings_once_when_it_starts():
    def settings_open(at) -> bool:
        return next(e for e in at.expander if e.label.startswith("Settings:")).proto.expanded

    at = open_page("app_pages/live_training.py")
    assert not at.exception and settings_open(at), "a class that is not presented sees the settings"
    at.toggle(key=PRESENT_KEY).set_value(True).run()  # the teacher starts presenting
    assert not at.exception and not settings_open(at)
    assert not settings_open(open_page("app_pages/live_training.py", query={"present": "1"}))
