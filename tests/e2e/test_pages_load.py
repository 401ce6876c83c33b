"""Every registered page loads in a real browser with no exception, shows its title, and is screenshotted; its
"Next" link opens the next step of the course path (so that, over the pages, the whole path is walked)."""

import pytest

from rnnviz.ui.app.registry import PAGES, course_neighbours
from tests.e2e.harness import ROOT, open_app_page, screenshot

DOCS = ROOT / "docs" / "screenshots"


# Texts of the navigation's links and of the page's buttons and control labels that end in an ellipsis because their
# box is too narrow.
CUT_TEXTS = """() => [...document.querySelectorAll(
    '[data-testid=stSidebarNav] a, [data-testid=stMain] button, [data-testid=stMain] label')]
  .filter(el => el.offsetParent !== null)
  .flatMap(el => [...el.querySelectorAll('p, span, div')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis')
    .map(e => e.textContent.slice(0, 40)))"""


@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_page_loads_in_browser(page, base_url, spec):
    open_app_page(page, base_url, spec.address)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("Page not found").count() == 0
    assert page.get_by_role("heading", name=spec.title, level=1).is_visible()
    # app.py ran around the page: the shared sidebar is there, whichever page a fresh server served first.
    assert page.locator("[data-testid='stSidebar']").get_by_text("Seed").is_visible()
    screenshot(page, spec.url_path)
    # At 1400 × 900 beside the open sidebar, no page name in the navigation and no button or control label is cut
    # to "…" ("Hidden state: RNN, LSTM, minG…", the stepper's "F…").
    assert page.evaluate(CUT_TEXTS) == [], spec.url_path
    if spec.default:  # the README's first picture: Home's first screen on a 1400 × 900 window
        page.screenshot(path=str(DOCS / "home.png"))
    _, following = course_neighbours(spec)
    if following is not None:
        page.locator("[data-testid='stMain'] a").filter(has_text="Next:").filter(has_text=following.title).click()
        page.get_by_role("heading", name=following.title, level=1).wait_for(timeout=90_000)
        assert page.locator("[data-testid='stException']").count() == 0
