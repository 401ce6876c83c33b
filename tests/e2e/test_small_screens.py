"""Every registered page on a tablet (768 × 1024) and a phone (390 × 844): the page never scrolls sideways, and
what is wider than the screen (a long equation, a row of section buttons, a wide table) scrolls inside its own
box, which shows a shadow on the side that has more; no button or control label is cut to "…", and no chart's
legend takes the side of the plot on a phone; on the tablet no chart's modebar covers its plot or its legend."""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from rnnviz.ui.app.registry import PAGES
from tests.e2e.harness import ROOT, open_app_page, wait_idle

TABLET = {"width": 768, "height": 1024}
PHONE = {"width": 390, "height": 844}

# The page's own width against the window's, for the document and for Streamlit's main block (which scrolls).
PAGE_WIDTHS = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  return {window: window.innerWidth, document: document.scrollingElement.scrollWidth,
          main: main.scrollWidth, mainBox: main.clientWidth};
}"""

# Boxes in the main block that scroll sideways now, with whether they draw the scroll hint.
SIDEWAYS_BOXES = """() => [...document.querySelectorAll('[data-testid=stMain] *')]
  .filter(el => el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
  .map(el => ({what: el.className.toString().split(' ')[0] || el.getAttribute('data-testid') || el.tagName,
               kind: el.matches('.katex-display') ? 'equation'
                   : el.closest('[data-testid=stDataFrame], [data-testid=stTable], [data-testid=stCode], pre')
                     ? 'table'
                   : el.closest('[data-testid=stButtonGroup]') || el.matches('[data-testid=stTabs] [role=tablist]')
                     ? 'buttons'
                   : el.matches('[data-testid=stMarkdownContainer] table, [data-testid=stHtml] > div') ? 'text'
                   : 'other',
               hint: getComputedStyle(el).backgroundImage.includes('radial-gradient')}))"""


# Texts of buttons and control labels that Streamlit cut with an ellipsis because their column is too narrow.
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid=stMain] button, [data-testid=stMain] label')]
  .filter(el => el.offsetParent !== null)
  .flatMap(el => [...el.querySelectorAll('p, span, div')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis')
    .map(e => e.textContent.slice(0, 40)))"""


# Charts whose legend stands beside the plot (vertical) and takes more than a third of the chart's width.
WIDE_SIDE_LEGENDS = """() => [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
  .filter(g => g._fullLayout && g._fullLayout.showlegend && g._fullLayout.legend.orientation === 'v')
  .filter(g => { const l = g.querySelector('.legend'); return l
    && l.getBoundingClientRect().width > g.getBoundingClientRect().width / 3; })
  .map(g => g.getAttribute('aria-label') || g.textContent.slice(0, 60))"""


def settle_widths(page, timeout_ms: int = 5_000) -> None:
    """After a resize, charts and columns follow the new width a few frames later (plotly's resize handler,
    Streamlit's ResizeObserver): wait, for a while, until the page fits. A page that still does not fit after it
    fails in check_fits, with its widths."""
    try:
        page.wait_for_function(f"() => {{ const w = ({PAGE_WIDTHS})(); "
                               "return w.document <= w.window && w.main <= w.mainBox; }", timeout=timeout_ms)
    except PlaywrightTimeout:
        pass


def check_fits(page, name: str) -> None:
    widths = page.evaluate(PAGE_WIDTHS)
    assert widths["document"] <= widths["window"], (name, widths)
    assert widths["main"] <= widths["mainBox"], (name, widths)
    for box in page.evaluate(SIDEWAYS_BOXES):
        assert box["kind"] != "other", (name, box)  # nothing else cuts its content off behind a scroll bar
        if box["kind"] in ("equation", "buttons", "text"):  # ours to mark (a data frame draws its own scroll bar)
            assert box["hint"], (name, box)
    assert page.evaluate(CUT_LABELS) == [], name


# Where a chart's modebar (it floats over the chart's top right while the pointer is on the chart, and stays on a
# tablet once the chart is touched) would cover what the chart shows: its plot area (a table's header row included)
# or its legend. (A long title on a narrow chart may still run under it.)
UNDER_THE_MODEBAR = """() => [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')].flatMap(chart => {
  const bar = chart.querySelector('.modebar');
  if (!bar || !chart._fullLayout) return [];
  const b = bar.getBoundingClientRect(), c = chart.getBoundingClientRect(), s = chart._fullLayout._size;
  const area = {left: c.left + s.l, right: c.left + s.l + s.w, top: c.top + s.t, bottom: c.top + s.t + s.h};
  const drawn = [['plot area', area], ...[...chart.querySelectorAll('.legend')]
    .map(e => [e.getAttribute('class'), e.getBoundingClientRect()])];
  const where = chart.closest('[data-testid=stElementContainer]').className.match(/st-key-\\S+/);
  return drawn.filter(([, r]) => r.right > r.left && r.left < b.right && b.left < r.right && r.top < b.bottom
                                  && b.top < r.bottom)
    .map(([what]) => `${what} of ${where ? where[0] : 'a chart'}`);
})"""

# Opened where a page draws more than at its plain address: the hand-built page's timeline table from step 1 on.
DRAWN = {"hand-built-rnn": "?bits=1101&t=4"}


@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_no_page_scrolls_sideways_on_a_tablet_or_a_phone(page, base_url, spec):
    page.set_viewport_size(TABLET)
    open_app_page(page, base_url, spec.address + DRAWN.get(spec.url_path, ""))
    check_fits(page, f"{spec.url_path} at 768 px")
    assert page.evaluate(UNDER_THE_MODEBAR) == [], f"{spec.url_path} at 768 px"
    page.set_viewport_size(PHONE)
    page.wait_for_function("() => document.querySelector('[data-testid=stMain]').clientWidth <= 390")
    wait_idle(page)
    settle_widths(page)
    check_fits(page, f"{spec.url_path} at 390 px")
    assert page.evaluate(WIDE_SIDE_LEGENDS) == [], f"{spec.url_path}: legends below the plot on a phone"
    if spec.default:  # the README's picture of a phone
        page.screenshot(path=str(ROOT / "docs" / "screenshots" / "phone-home.png"))
