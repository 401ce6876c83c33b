"""The lesson pages' controls rerun their fragment alone, in a real browser: a move changes the fragment's figure
and leaves the page's title (drawn outside every fragment) out of the run.

How a run is seen: while a script runs, Streamlit marks every element the run may redraw as stale
(``data-stale="true"`` on its container) until the run draws it again; a fragment's run marks only the fragment's
own elements. So the title's container turning stale means the whole page ran. Each test checks the detector on the
same page: the "r" shortcut (a whole-page rerun) does mark the title.
"""

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import APP_IDLE, open_app_page, wait_idle

# Counts the title's stale marks, and keeps a copy of the first figure's drawing to compare with.
WATCH_TITLE = """() => {
    const title = document.querySelector("[data-testid='stMain'] h1").closest("[data-testid='stElementContainer']");
    window.__titleRuns = 0;
    new MutationObserver(() => { if (title.getAttribute("data-stale") === "true") window.__titleRuns += 1; })
        .observe(title, {attributes: true, attributeFilter: ["data-stale"]});
}"""
FIGURE = "document.querySelectorAll(\"[data-testid='stMain'] [data-testid='stPlotlyChart'] .main-svg\")[{index}]"

# page address, how to move its control (slider label or a button's key), the index of a figure the move changes
CONTROLS = [
    ("unrolling-bptt", ("slider", "Hidden size H"), 0),
    ("truncated-bptt", ("slider", "Chunk length K"), 0),
    # The decay curves; section 1's σ₁ chart redraws in the browser (tests/e2e/test_gradients_gates.py).
    ("gradient-decay?section=tanh", ("slider", "σ₁"), 1),
    # The steppers answer in the browser (rnnviz.ui.kit.instant): the run is their report of the step, afterwards.
    ("hand-built-rnn", ("stepper", "handbuilt_step"), 0),
    ("stacked-rnns", ("stepper", "stacked_step"), 0),
]


def move(page, how: tuple[str, str]) -> None:
    kind, name = how
    if kind == "slider":
        thumb = page.locator("[data-testid='stSlider']").filter(has_text=name).first.get_by_role("slider")
        thumb.focus()
        thumb.press("ArrowRight")
    elif kind == "stepper":
        page.locator(f".st-key-{name} button[data-move='step']").click()
    else:
        page.locator(f".st-key-{name} button").first.click()


def title_runs(page) -> int:
    return page.evaluate("() => window.__titleRuns")


@pytest.mark.parametrize("address, how, figure", CONTROLS, ids=[c[0].split("?")[0] for c in CONTROLS])
def test_a_lesson_control_reruns_its_fragment_alone(page, base_url, address, how, figure):
    open_app_page(page, base_url, address)
    page.evaluate(WATCH_TITLE)
    drawing = FIGURE.format(index=figure)
    page.wait_for_function(f"() => {drawing} !== undefined", timeout=60_000)  # plotly draws after the run
    page.evaluate(f"() => {{ window.__before = {drawing}.innerHTML; }}")
    move(page, how)
    page.wait_for_function(f"() => {drawing} && {drawing}.innerHTML !== window.__before", timeout=60_000)
    wait_idle(page)
    assert title_runs(page) == 0, "the move reran the whole page"
    assert page.locator("[data-testid='stException']").count() == 0
    # The detector sees a whole-page run: the "r" shortcut, with the focus on no control.
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("r")
    page.wait_for_function("() => window.__titleRuns > 0", timeout=60_000)
    page.wait_for_selector(APP_IDLE)
    expect(page.locator("[data-testid='stMain'] h1").first).to_be_visible()
