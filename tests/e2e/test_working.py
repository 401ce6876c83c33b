"""A move that waits for the server says so at once (rnnviz.ui.app.browser and app.style): the run it starts marks
the page as working until the run ends; a control that answers in the browser (kit.instant) marks nothing."""

from tests.e2e.harness import open_app_page, slider_thumb, wait_idle
from tests.e2e.test_instant import WATCH, reported, shows

# Every change of the page's working mark, with the app's script state at that moment.
MARKS = """() => {
    const app = document.querySelector("[data-testid='stApp']");
    window.__marks = [];
    new MutationObserver(() => window.__marks.push(
        [document.documentElement.dataset.rnnvizWorking || "", app.getAttribute('data-test-script-state')]))
        .observe(document.documentElement, {attributes: true, attributeFilter: ['data-rnnviz-working']});
}"""


def test_a_server_control_marks_the_page_working_for_its_run_and_an_instant_one_does_not(page, base_url):
    open_app_page(page, base_url, "truncated-bptt")
    shows(page, "tbptt_position", "12", 1)
    page.evaluate(MARKS)
    thumb = slider_thumb(page, "Chunk length K")
    thumb.focus()
    thumb.press("ArrowRight")  # K 6 → 7: every t's stops are made anew on the server
    page.wait_for_function("() => window.__marks.length >= 2", timeout=30_000)
    wait_idle(page)
    # Marked while the run ran, and cleared when it ended.
    assert page.evaluate("() => window.__marks") == [["1", "running"], ["", "notRunning"]]

    page.evaluate(MARKS)
    page.evaluate(WATCH, "tbptt_position")
    slider = page.locator(".st-key-tbptt_position input[type='range']")
    slider.focus()
    slider.press("ArrowLeft")  # t 12 → 11: answered in the browser; the report's run is no wait for anyone
    reported(page, "t=11")
    assert page.evaluate("() => window.__instant.states").count("running") >= 1
    assert page.evaluate("() => window.__marks") == []
