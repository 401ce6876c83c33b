"""The hidden-state page in a real browser at 1400 × 900: three carried states with their sizes, the
Transformer's attention map, a step of the slider, and the memory probe with its plot. The screenshot of the
carried states goes to docs/screenshots/hidden-state.png."""

from playwright.sync_api import expect

from tests.e2e.harness import ROOT, open_app_page, screenshot_whole_page, wait_idle
from tests.e2e.test_gradients_gates import nudge_slider

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 120_000  # loads the shipped models and builds the bottleneck plot once per process


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def test_step_through_a_sentence_see_three_states_attention_and_the_probe(page, base_url):
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    assert no_exception(page)
    main = page.locator("[data-testid='stMain']")
    for name in ("RNN", "LSTM", "Transformer"):
        expect(main.locator("strong", has_text=name).first).to_be_visible()
    expect(main.get_by_text("bytes", exact=False).first).to_be_visible()
    expect(main.get_by_text("The Transformer's attention at t")).to_be_visible()
    nudge_slider(page, "t: the last character read", "ArrowRight", presses=3)
    assert no_exception(page)
    expect(main.get_by_text("Row (layer, head): how much position t = 15")).to_be_visible()
    page.get_by_role("button", name="Fit the probes").click()
    wait_idle(page, timeout_ms=120_000)
    expect(main.get_by_text("Dashed grey: always answering")).to_be_visible(timeout=120_000)
    assert no_exception(page)
    # What the class sees first: the three carried states with their sizes, on one 1400 × 900 screen.
    main.get_by_text("What each model carries into step t+1").scroll_into_view_if_needed()
    page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                  " const h = [...m.querySelectorAll('h3')].find(e => e.textContent.startsWith('What each'));"
                  " m.scrollTop += h.getBoundingClientRect().top - 70; }")
    page.wait_for_timeout(800)
    DOCS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS / "hidden-state.png"))
    screenshot_whole_page(page, "hidden-state-whole")
