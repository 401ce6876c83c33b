"""What a teacher puts on a slide: every chart downloads as SVG (the app's button beside plotly's camera) and as a
PNG at twice its drawn size."""

import struct

from rnnviz.ui.app.browser import SVG_TITLE
from tests.e2e.harness import open_app_page


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    return struct.unpack(">II", data[16:24])


def test_a_chart_downloads_as_svg_and_as_png_at_twice_its_size(page, base_url):
    open_app_page(page, base_url, "gradient-decay?section=tanh")
    chart = page.locator(".js-plotly-plot").nth(1)
    chart.scroll_into_view_if_needed()
    chart.hover()
    with page.expect_download() as svg_download:
        chart.locator(f'[data-title="{SVG_TITLE}"]').click()
    svg = open(svg_download.value.path(), encoding="utf-8").read()
    assert svg_download.value.suggested_filename.endswith(".svg")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    # The chart's own axis title, as text (a vector export, not an image wrapped in SVG).
    assert "steps back from T" in svg

    with page.expect_download() as png_download:
        chart.locator('[data-title="Download plot as a PNG"]').click()
    width, height = png_size(open(png_download.value.path(), "rb").read())
    drawn = chart.locator(".main-svg").first.bounding_box()
    # The drawn size may be a fraction of a pixel (588.5 px), which plotly rounds.
    assert abs(width - 2 * drawn["width"]) <= 1 and abs(height - 2 * drawn["height"]) <= 1, (width, height, drawn)

    # One SVG button per chart, however often the page has redrawn, and the camera still gives a PNG after it.
    assert chart.locator(f'[data-title="{SVG_TITLE}"]').count() == 1


def test_the_instant_chart_downloads_as_svg_and_as_png_at_twice_its_size(page, base_url):
    """Section 1's σ₁ chart is drawn by the app in the browser (kit.instant_chart), not by plotly: its own two
    buttons give the same two files."""
    open_app_page(page, base_url, "gradient-decay?section=powers")
    chart = page.locator(".instant-chart")
    chart.locator("svg[role=img]").wait_for()  # the component's code loads after the run
    with page.expect_download() as svg_download:
        chart.locator(f'button[title="{SVG_TITLE}"]').click()
    svg = open(svg_download.value.path(), encoding="utf-8").read()
    assert svg_download.value.suggested_filename.endswith(".svg")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "the number of multiplications by W_hh" in svg and "1.51·10³" in svg  # its axis and its note, as text

    with page.expect_download() as png_download:
        chart.locator('button[title="Download plot as a PNG"]').click()
    width, height = png_size(open(png_download.value.path(), "rb").read())
    drawn = chart.locator("svg[role=img]").bounding_box()
    assert abs(width - 2 * drawn["width"]) <= 1 and abs(height - 2 * drawn["height"]) <= 1, (width, height, drawn)
