"""rnnviz.figures.static: the picture a saved notebook keeps beside a figure's plotly JSON, for a viewer without
plotly: kaleido's PNG where it can draw one, else an SVG sketch whose bars and points stand where the figure's numbers
put them."""

import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from rnnviz.figures import static
from rnnviz.figures.gates import SATURATION_COLOURS

RECT = re.compile(r"<rect class='bar' x='([^']*)' y='([^']*)' width='([^']*)' height='([^']*)' fill='([^']*)'")
POINT = re.compile(r"<circle class='point' cx='([^']*)' cy='([^']*)'")


def test_stacked_bars_are_as_long_as_their_shares_and_keep_their_colours():
    shares = {"left": [0.2, 0.5], "middle": [0.3, 0.1], "right": [0.5, 0.4]}
    fig = go.Figure([go.Bar(y=["a", "b"], x=values, orientation="h", marker_color=SATURATION_COLOURS[part])
                     for part, values in shares.items()])
    fig.update_layout(barmode="stack", yaxis=dict(autorange="reversed"))
    bars = [(float(x), float(y), float(w), colour) for x, y, w, _, colour in RECT.findall(static.figure_svg(fig))]
    assert [colour for *_, colour in bars] == [SATURATION_COLOURS[p] for p in shares for _ in "ab"]
    widths = np.array([w for _, _, w, _ in bars]).reshape(3, 2)
    np.testing.assert_allclose(widths / widths.sum(axis=0), np.array(list(shares.values())), atol=1e-3)
    starts = np.array([x for x, _, _, _ in bars]).reshape(3, 2)
    np.testing.assert_allclose(starts[1:], starts[:-1] + widths[:-1], atol=0.2)  # each bar starts where one ends
    assert bars[0][1] < bars[1][1]  # "a" above "b", as the reversed axis draws them


def test_points_keep_their_order_along_both_axes():
    x, y = np.array([0.0, 1.0, 3.0, 2.0]), np.array([5.0, -1.0, 2.0, 0.5])
    drawn = np.array(POINT.findall(static.figure_svg(go.Figure(go.Scatter(x=x, y=y, mode="markers")))), dtype=float)
    assert list(np.argsort(drawn[:, 0])) == list(np.argsort(x))
    assert list(np.argsort(-drawn[:, 1])) == list(np.argsort(y))  # up the page is up the axis


def test_the_renderer_stores_an_svg_where_kaleido_cannot_draw(monkeypatch):
    def no_kaleido(*args, **kwargs):
        raise ValueError("Image export using the \"kaleido\" engine requires the kaleido package")

    monkeypatch.setattr(pio, "to_image", no_kaleido)
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    assert static.keep_pictures() == "plotly_mimetype+rnnviz_picture"
    bundle = pio.renderers._build_mime_bundle(go.Figure(go.Bar(x=["a"], y=[1.0])).to_dict())
    assert "application/vnd.plotly.v1+json" in bundle
    assert bundle["image/svg+xml"].startswith("<svg ") and len(RECT.findall(bundle["image/svg+xml"])) == 1
    assert static.keep_pictures() == "plotly_mimetype+rnnviz_picture"  # once, however often it is called


@pytest.mark.parametrize("title", [{"text": "<b>a</b> & b<br>c"}, "<b>a</b> & b<br>c"])
def test_a_title_is_text_without_its_markup(title):
    assert "<text x='110' y='28' font-size='17' font-weight='bold'>a &amp; b c</text>" in static.figure_svg(
        go.Figure(layout=dict(title=title)).to_dict())
