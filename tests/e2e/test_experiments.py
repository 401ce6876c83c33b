"""Memory experiments in a real browser: the page loads, and each tab runs its quick settings."""

from tests.e2e.harness import open_app_page, screenshot, wait_idle


def _run_quick(page, tab: str, button: str) -> None:
    page.get_by_role("tab", name=tab).click()
    panel = page.get_by_role("tabpanel", name=tab)
    panel.get_by_text("Quick settings").click()
    page.wait_for_timeout(500)  # let the rerun start before waiting for it to end
    wait_idle(page)
    panel.get_by_role("button", name=button).click()
    page.wait_for_timeout(500)
    wait_idle(page, timeout_ms=180_000)
    assert page.locator("[data-testid='stException']").count() == 0


def test_memory_experiments_run_quick_in_browser(page, base_url):
    page.set_viewport_size({"width": 1400, "height": 2800})  # Streamlit scrolls inside the app: show a whole tab
    open_app_page(page, base_url, "memory-experiments")
    assert page.get_by_role("heading", name="Memory experiments", level=1).is_visible()

    _run_quick(page, "1 · Delayed copy: RNN against LSTM", "Run the sweep")
    panel = page.get_by_role("tabpanel", name="1 · Delayed copy: RNN against LSTM")
    assert panel.get_by_text("Measured (mean final accuracy over seeds)").is_visible()
    assert panel.locator(".js-plotly-plot").count() == 2
    screenshot(page, "memory-experiments-delay")

    _run_quick(page, "3 · What recurrence costs", "Measure")
    panel = page.get_by_role("tabpanel", name="3 · What recurrence costs")
    assert panel.get_by_text("Attention time slope").is_visible()
    assert panel.locator(".js-plotly-plot").count() == 3
    screenshot(page, "memory-experiments-cost")

    _run_quick(page, "2 · Conditioning on a vector", "Train both variants")
    panel = page.get_by_role("tabpanel", name="2 · Conditioning on a vector")
    assert panel.get_by_text("Samples", exact=True).is_visible()
    assert panel.locator(".js-plotly-plot").count() == 2
    screenshot(page, "memory-experiments-conditioning")
