"""The image-captioning page in a real browser at 1400 × 900: build a scene, caption it, change the beam width,
see the beam tree and a saliency map; a bad scene spec gives a clear message. Measured in the browser: the
saliency map is drawn at the image's own size, and at a projector's 1024 px the beams' captions and the top-k
probability labels are shown whole. The screenshot of the scene and its decoding goes to
docs/screenshots/captioning.png."""

from playwright.sync_api import expect

from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from tests.e2e.harness import ROOT, open_app_page, screenshot_from, screenshot_whole_page, wait_idle
from tests.e2e.test_gradients_gates import slide_to

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 120_000  # loads the shipped captioners and finds the boat example once per process
PROJECTOR = {"width": 1024, "height": 768}
# The on-screen boxes (x, y, width, height) of the two rasters plotly draws in the saliency figure: the image
# trace and the heat map, left to right.
SALIENCY_RASTERS = """() => [...document.querySelectorAll('.st-key-cap_saliency_fig .js-plotly-plot image')]
    .map(e => e.getBoundingClientRect()).sort((a, b) => a.x - b.x).map(r => [r.x, r.y, r.width, r.height])"""
# Each top-k bar's probability label and how far it sticks out of the chart's drawing (px; 0 when inside).
TOPK_LABELS_OUTSIDE = """() => { const chart = document.querySelector('.st-key-cap_t_figure_topk .js-plotly-plot');
    const svg = chart.querySelector('.main-svg').getBoundingClientRect();
    return [...chart.querySelectorAll('.bartext')].map(e => { const r = e.getBoundingClientRect();
        return [e.textContent, Math.max(0, svg.left - r.left, r.right - svg.right)]; }); }"""
# Every cell of the beam table whose text does not fit its box (scrolled or cut), and the table's overflow past
# the main column.
BEAM_TABLE_CUT = """() => { const table = [...document.querySelectorAll("[data-testid='stMain'] table")]
        .find(t => t.textContent.includes('total log p'));
    const main = document.querySelector("[data-testid='stMainBlockContainer']").getBoundingClientRect();
    const cut = [...table.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.textContent);
    return [cut, Math.max(0, table.getBoundingClientRect().right - main.right)]; }"""


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` and wait for the rerun."""
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label).get_by_role("combobox")
    box.click()
    if page.get_by_role("listbox").count() == 0:
        box.press("ArrowDown")  # a box that kept the focus through the last rerun can stay shut on a click
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
    # While that rerun draws, Streamlit can hold the old chart beside the new one in the keyed box: wait for it.
    wait_idle(page)
    expect(page.locator(".st-key-cap_beam_fig .js-plotly-plot")).to_have_count(1, timeout=30_000)
    expect(page.locator(".st-key-cap_beam_fig .js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(page.locator(".st-key-cap_t_figure_topk .js-plotly-plot")).to_be_visible()
    assert no_exception(page)
    saliency = page.locator(".st-key-cap_saliency_fig .js-plotly-plot")
    saliency.scroll_into_view_if_needed()
    expect(saliency).to_be_visible(timeout=30_000)
    expect(main.get_by_text("of the saliency lies on object pixels", exact=False)).to_be_visible(timeout=30_000)
    # The decoding on one 1400 × 900 screen: the beams, the top-k next words at step t and the beam tree.
    screenshot_from(page, "strong", "Best of", DOCS / "captioning.png")
    screenshot_whole_page(page, "captioning-whole")


def same_size(page) -> None:
    """The heat map is drawn at the image's pixel size, side by side on one row (within 2 px)."""
    (ix, iy, iw, ih), (hx, hy, hw, hh) = page.evaluate(SALIENCY_RASTERS)
    assert abs(hw - iw) <= 2 and abs(hh - ih) <= 2, f"image {iw:.0f} × {ih:.0f} px, saliency {hw:.0f} × {hh:.0f} px"
    assert abs(hy - iy) <= 2 and hx > ix + iw, "the heat map sits beside the image, tops aligned"
    assert abs(iw - ih) <= 2, "square pixels"


def test_the_saliency_map_is_drawn_at_the_size_of_the_image_beside_it(page, base_url):
    open_app_page(page, base_url, "image-captioning", timeout_ms=FIRST_LOAD_MS)
    saliency = page.locator(".st-key-cap_saliency_fig .js-plotly-plot")
    saliency.scroll_into_view_if_needed()
    expect(saliency).to_be_visible(timeout=30_000)
    same_size(page)
    page.set_viewport_size(PROJECTOR)  # a narrower column: the image shrinks, the heat map with it
    page.wait_for_timeout(1000)  # plotly redraws on the window's resize event
    wait_idle(page)
    same_size(page)


def test_long_beam_captions_and_the_top_k_labels_are_whole_at_projector_width(page, base_url):
    """Three objects on grass make the longest captions (the cut one read "…right on g")."""
    page.set_viewport_size(PROJECTOR)
    open_app_page(page, base_url, "image-captioning", timeout_ms=FIRST_LOAD_MS)
    choose(page, "Background", "grass")
    choose(page, "Shape at left", "triangle")
    choose(page, "Shape at right", "square")
    scene = world.Scene("grass", (world.SceneObject("triangle", "red", "small", "left"),
                                  world.SceneObject("circle", "red", "large", "middle"),
                                  world.SceneObject("square", "red", "small", "right")))
    main = page.locator("[data-testid='stMain']")
    expect(main.get_by_text(world.caption(scene)).first).to_be_visible(timeout=30_000)
    main.get_by_text("beam search", exact=True).click()
    wait_idle(page)
    slide_to(page, "Beam width", 5)
    beams, _ = M.beam_search(shipped.load("every")[0], M.pixels(world.render(scene, 0)[None]), 5)
    assert any(len(b.text) > 80 for b in beams)
    table = page.locator("[data-testid='stMain'] table").filter(has_text="total log p")
    for beam in beams:
        expect(table.get_by_role("cell", name=beam.text, exact=True)).to_be_visible(timeout=30_000)
    cut, overflow = page.evaluate(BEAM_TABLE_CUT)
    assert cut == [] and overflow <= 1, (cut, overflow)
    expect(page.locator(".st-key-cap_t_figure_topk .js-plotly-plot")).to_be_visible()
    labels = page.evaluate(TOPK_LABELS_OUTSIDE)
    assert len(labels) == 6 and all(out <= 0.5 for _, out in labels), labels
    assert no_exception(page)


def test_a_bad_scene_spec_says_why(page, base_url):
    open_app_page(page, base_url, "image-captioning", timeout_ms=FIRST_LOAD_MS)
    choose(page, "Colour at middle", "blue")  # a blue circle on water
    expect(page.locator("[data-testid='stAlert']").filter(has_text="would be invisible")).to_be_visible(
        timeout=30_000)
    assert no_exception(page)
    expect(page.get_by_text("The join, side by side")).to_be_attached()
