"""The image-captioning page in a real browser at 1400 × 900: build a scene, caption it, change the beam width,
see the beam tree and a saliency map; a bad scene spec gives a clear message. The screenshot of the scene and
its decoding goes to docs/screenshots/captioning.png."""

from playwright.sync_api import expect

from tests.e2e.harness import ROOT, open_app_page, screenshot_from, screenshot_whole_page, wait_idle
from tests.e2e.test_gradients_gates import slide_to

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 120_000  # loads the shipped captioners and finds the boat example once per process


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` and wait for the rerun."""
    page.locator("[data-testid='stSelectbox']").filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def test_build_a_scene_caption_it_change_the_beam_width_and_see_saliency(page, base_url):
    open_app_page(page, base_url, "image-captioning", timeout_ms=FIRST_LOAD_MS)
    assert no_exception(page)
    main = page.locator("[data-testid='stMain']")
    expect(main.get_by_text("a large red circle at middle on water").first).to_be_visible()
    choose(page, "Shape at left", "triangle")
    choose(page, "Colour at left", "yellow")
    expect(main.get_by_text("a small yellow triangle at left and a large red circle at middle on water").first
           ).to_be_visible(timeout=30_000)
    assert no_exception(page)
    main.get_by_text("beam search", exact=True).click()
    wait_idle(page)
    slide_to(page, "Beam width", 5)
    expect(main.get_by_text("Best of", exact=False).first).to_be_visible(timeout=30_000)
    expect(page.locator(".st-key-cap_beam_fig .js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(page.locator(".st-key-cap_topk_fig .js-plotly-plot")).to_be_visible()
    assert no_exception(page)
    saliency = page.locator(".st-key-cap_saliency_fig .js-plotly-plot")
    saliency.scroll_into_view_if_needed()
    expect(saliency).to_be_visible(timeout=30_000)
    expect(main.get_by_text("of the saliency lies on object pixels", exact=False)).to_be_visible(timeout=30_000)
    # The decoding on one 1400 × 900 screen: the beams, the top-k next words at step t and the beam tree.
    screenshot_from(page, "strong", "Best of", DOCS / "captioning.png")
    screenshot_whole_page(page, "captioning-whole")


def test_a_bad_scene_spec_says_why(page, base_url):
    open_app_page(page, base_url, "image-captioning", timeout_ms=FIRST_LOAD_MS)
    choose(page, "Colour at middle", "blue")  # a blue circle on water
    expect(page.locator("[data-testid='stAlert']").filter(has_text="would be invisible")).to_be_visible(
        timeout=30_000)
    assert no_exception(page)
    expect(page.get_by_text("The join, side by side")).to_be_attached()
