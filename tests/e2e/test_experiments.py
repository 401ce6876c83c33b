"""Memory experiments in a real browser: the page loads, and each tab runs its quick settings."""

from playwright.sync_api import expect

from tests.e2e.harness import open_app_page, screenshot_whole_page, wait_idle

RUN_TIMEOUT_MS = 240_000  # a quick run on two busy cores


def _run_quick(page, tab: str, quick_sign: str, button: str, result_sign: str, toggle: str = "Quick settings"):
    """Open a tab, switch on its quick settings, run, and wait for the result; returns the tab's panel."""
    page.get_by_role("tab", name=tab).click()
    panel = page.get_by_role("tabpanel", name=tab)
    panel.get_by_text(toggle).click()
    panel.get_by_text(quick_sign, exact=False).wait_for(timeout=60_000)  # the quick values are in place
    wait_idle(page)
    panel.get_by_role("button", name=button).click()
    panel.get_by_text(result_sign, exact=False).first.wait_for(timeout=RUN_TIMEOUT_MS)
    wait_idle(page, timeout_ms=RUN_TIMEOUT_MS)
    assert page.locator("[data-testid='stException']").count() == 0
    return panel


def test_memory_experiments_run_quick_in_browser(page, base_url):
    open_app_page(page, base_url, "memory-experiments")
    assert page.get_by_role("heading", name="Memory experiments", level=1).is_visible()

    panel = _run_quick(page, "1 · Delayed copy: RNN against LSTM", "12 runs in all", "Run the sweep",
                       "How each model starts", toggle="A first look (too short to compare)")
    assert panel.get_by_text("D = 8: vanilla RNN").is_visible()
    # A first look names no winner (issue 27): no verdict, in bold or otherwise.
    expect(panel.get_by_text("ahead on every seed")).to_have_count(0)
    expect(panel.get_by_text("A first look is too short to compare the two models")).to_be_visible()
    expect(panel.locator(".js-plotly-plot")).to_have_count(2, timeout=60_000)  # charts land after the text
    screenshot_whole_page(page, "memory-experiments-delay")

    panel = _run_quick(page, "3 · What recurrence costs", "T = 64 … 512", "Measure", "Attention time slope")
    expect(panel.locator(".js-plotly-plot")).to_have_count(4, timeout=60_000)  # charts land after the text
    screenshot_whole_page(page, "memory-experiments-cost")

    panel = _run_quick(page, "2 · Conditioning on a vector", "30 steps each", "Train both variants",
                       "How long v matters")
    assert panel.get_by_text("Samples", exact=True).is_visible()
    expect(panel.locator(".js-plotly-plot")).to_have_count(2, timeout=60_000)  # charts land after the text
    screenshot_whole_page(page, "memory-experiments-conditioning")
