"""Gradient decay and LSTM gates in a real browser: each page loads, and a shown number follows a slider."""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.harness import open_app_page, screenshot_whole_page, slider_thumb, wait_idle, wait_settled

# The first visit to the gates page loads the shipped models and traces held-out prose.
FIRST_LOAD_MS = 90_000


def metric(page, label_start: str):
    """The value of the st.metric, or of the number under an instant chart (kit.instant_chart, inside its shadow
    root, which Playwright's locators enter), whose label starts with ``label_start``, as a locator."""
    box = page.locator("[data-testid='stMetric'], .instant-chart .number").filter(
        has=page.locator("[data-testid='stMetricLabel'], .label", has_text=label_start)
    )
    return box.locator("[data-testid='stMetricValue'], .value")


def shows(page, label_start: str, value: str) -> None:
    """Wait (a rerun may still be drawing) until the metric reads ``value``; fail if it never does."""
    expect(metric(page, label_start)).to_have_text(value, timeout=30_000)


def nudge_slider(page, label: str, key: str, presses: int = 1) -> None:
    """Move a slider by keyboard, as a user would, and wait for the rerun it triggers."""
    thumb = slider_thumb(page, label)
    thumb.focus()
    for _ in range(presses):
        thumb.press(key)
    wait_idle(page)


def slide_to(page, label: str, target: float, presses: int = 40) -> None:
    """Move a slider by keyboard to ``target``, a press at a time, and wait for the rerun.

    A press that lands while the rerun of an earlier one redraws the slider can be lost, so the thumb's own
    value is read between presses instead of counting them (a bounded number of tries)."""
    slider = page.locator("[data-testid='stSlider']").filter(has_text=label)
    thumb = slider.get_by_role("slider")

    def value() -> float:
        return float(slider.locator("[data-testid='stSliderThumbValue']").inner_text().strip())

    for _ in range(presses):
        thumb.focus()  # a rerun that redraws the slider takes its focus away
        if abs(value() - target) < 1e-9:
            break
        thumb.press("ArrowLeft" if value() > target else "ArrowRight")
        page.wait_for_timeout(50)
    assert value() == target
    wait_idle(page)


# Per text of an instant chart, the pixels of its curves (every path, sampled at 1 px along each segment) inside the
# text's box: the labels ("1.51·10³ after 150 steps", "‖v‖ = 1") stand where no curve runs.
CURVE_PIXELS_UNDER_LABELS = """() => [...document.querySelectorAll('*')].filter(host => host.shadowRoot)
  .flatMap(host => [...host.shadowRoot.querySelectorAll('.instant-chart svg')]).flatMap(svg => {
    const pixels = [...svg.querySelectorAll('path')].flatMap(path => {
      const points = (path.getAttribute('d').match(/[ML][^ML]*/g) || []).map(c => [c[0], ...c.slice(1).split(',')
        .map(Number)]);
      return points.slice(1).flatMap(([command, x2, y2], i) => {
        if (command !== 'L') return [];
        const [, x1, y1] = points[i], n = Math.ceil(Math.hypot(x2 - x1, y2 - y1));
        return Array.from({length: n + 1}, (_, k) => [x1 + (x2 - x1) * k / n, y1 + (y2 - y1) * k / n]);
      });
    });
    return [...svg.querySelectorAll(':scope > text')].map(text => {
      const b = text.getBBox();
      return [text.textContent, pixels.filter(([x, y]) => x >= b.x && x <= b.x + b.width && y >= b.y
                                                          && y <= b.y + b.height).length];
    });
  })"""


def labels_on_curves(page) -> dict[str, int]:
    """The instant charts' labels that a curve runs through, with how many of its pixels do."""
    page.locator(".instant-chart[data-shown]").first.wait_for()
    return {text: pixels for text, pixels in page.evaluate(CURVE_PIXELS_UNDER_LABELS) if pixels}


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def test_gradient_decay_answers_the_sigma_slider(page, base_url):
    open_app_page(page, base_url, "gradient-decay")
    assert no_exception(page)
    shows(page, "measured ‖W_hhᴷ v‖ after K = 150", "1.51·10³")  # 1.05¹⁵⁰ ≈ 1507
    assert labels_on_curves(page) == {}
    slide_to(page, "σ₁, the largest singular value", 0.95)  # 1.05 → 0.95
    page.wait_for_function("() => window.location.search.includes('sigma=0.95')")
    shows(page, "measured ‖W_hhᴷ v‖ after K = 150", "4.56·10⁻⁴")  # 0.95¹⁵⁰ ≈ 4.6·10⁻⁴
    assert labels_on_curves(page) == {}
    assert no_exception(page)
    screenshot_whole_page(page, "gradient-decay-sigma-0.95")


def test_lstm_gates_answers_the_forget_slider(page, base_url):
    open_app_page(page, base_url, "lstm-gates", timeout_ms=FIRST_LOAD_MS)
    assert no_exception(page)
    shows(page, "c_t, the new cell", "0.600")  # 0.5·0.8 + 1·0.2
    nudge_slider(page, "forget gate f", "ArrowRight", presses=10)  # f 0.50 → 0.60
    page.wait_for_function("() => window.location.search.includes('f=0.60')")
    shows(page, "c_t, the new cell", "0.680")  # 0.6·0.8 + 0.2
    shows(page, "h_t, what is exposed", "0.592")  # tanh(0.68)
    page.get_by_role("button", name="Clear the cell").click()
    wait_idle(page)
    shows(page, "c_t, the new cell", "0.000")
    expect(page.get_by_text("f = 0 drops the old cell")).to_be_visible()
    assert no_exception(page)
    screenshot_whole_page(page, "lstm-gates-cleared")


# Every instant chart's element now: each one is drawn in the shadow root of its component's host.
INSTANT_CHARTS = """[...document.querySelectorAll('.stBidiComponent *')]
    .map(host => host.shadowRoot && host.shadowRoot.querySelector('.instant-chart')).filter(Boolean)"""

# From the next key press on: the script states the app goes through, and the moment an instant chart shows a new
# stop, with the states seen before it. Every instant chart on the page is watched, also one drawn anew after this
# ran (a chart's element, or the component's whole shadow root, may be replaced by a late rerun on a loaded machine:
# a watcher that held the first chart's element timed out in two CI runs with the page at the new stop).
WATCH_REDRAW = """() => {
    const app = document.querySelector("[data-testid='stApp']");
    const seen = window.__redraw = {pressed: false, states: [], redrawn: null, statesBefore: null, charts: 0};
    document.addEventListener('keydown', () => { seen.pressed = true; }, {capture: true, once: true});
    new MutationObserver(() => { if (seen.pressed) seen.states.push(app.getAttribute('data-test-script-state')); })
        .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
    const shown = (mutations) => {
        if (!seen.pressed || seen.redrawn !== null) return;
        seen.redrawn = mutations[mutations.length - 1].target.dataset.shown;
        seen.statesBefore = [...seen.states];
    };
    const watched = new WeakSet();
    const watchCharts = () => __CHARTS__.forEach(chart => {
        if (watched.has(chart)) return;
        watched.add(chart);
        seen.charts += 1;
        new MutationObserver(shown).observe(chart, {attributes: true, attributeFilter: ['data-shown']});
    });
    watchCharts();
    // A chart is drawn inside its shadow root after its host lands: look again on every change of the page.
    new MutationObserver(watchCharts).observe(document.body, {childList: true, subtree: true});
}""".replace("__CHARTS__", INSTANT_CHARTS)

# What the page shows now, for the message of a test that waited in vain: the watcher's record, and every instant
# chart's stop.
SHOWN_NOW = f"() => ({{watcher: window.__redraw, shown: {INSTANT_CHARTS}.map(chart => chart.dataset.shown)}})"


def _engine_numbers(section: str) -> dict[str, str]:
    """What the engine says at the moved stop: σ₁ 1.05 → 1.06 in section 1, b_f 5.0 → 4.5 in section 5."""
    from rnnviz.figures.gradients import sci
    from rnnviz.lessons import gradients

    if section == "powers":
        curve = gradients.power_curve(gradients.PowerConfig(hidden=64, sigma=1.06, steps=150))
        return {"measured ‖W_hhᴷ v‖ after K = 150": sci(curve.measured[-1]), "theory σ₁ᴷ = 1.06^150": sci(1.06**150)}
    path = gradients.cell_path(gradients.CellPathConfig(hidden=64, steps=150, forget_bias=4.5))
    return {"‖∂c_T/∂c_k‖ at T − k = 150, LSTM": sci(path.cell_path[-1]),
            "mean forget gate f_t": f"{path.mean_forget:.3f}"}


@pytest.mark.parametrize(("section", "slider", "key", "stop", "link"), [
    ("powers", "σ₁, the largest", "ArrowRight", "1.06", "sigma=1.06"),
    ("lstm", "forget-gate bias b_f", "ArrowLeft", "4.5", "b_f=4.5"),
])
def test_an_instant_chart_follows_its_slider_in_the_browser_before_the_server_runs(page, base_url, section, slider,
                                                                                   key, stop, link):
    """Sections 1 and 5 redraw their chart from the stops the server sent when the thumb moves, before the script
    run that the move asks for has started; the numbers under it are the engine's at the new stop."""
    open_app_page(page, base_url, f"gradient-decay?section={section}")
    page.locator(".instant-chart[data-shown]").wait_for()  # the component's code loads after the run
    # The slider is focused by its element: on a loaded machine the run's last elements land after the "notRunning"
    # mark, and a slider drawn again then would leave the key press on a detached one.
    wait_settled(page)
    page.evaluate(WATCH_REDRAW)
    thumb = slider_thumb(page, slider)
    thumb.focus()
    thumb.press(key)
    try:
        page.wait_for_function(
            "() => window.__redraw.redrawn !== null && window.__redraw.states.includes('notRunning')")
    except PlaywrightTimeout:
        raise AssertionError(f"no redraw seen after the key press: {page.evaluate(SHOWN_NOW)}") from None
    wait_idle(page)
    seen = page.evaluate("() => window.__redraw")
    assert seen["redrawn"] == stop
    assert "running" not in seen["statesBefore"], seen  # drawn before the server's run began
    assert "running" in seen["states"] or "rerunRequested" in seen["states"], seen  # and the run followed
    for label, value in _engine_numbers(section).items():
        shows(page, label, value)
    page.wait_for_function(f"() => window.location.search.includes('{link}')")  # the link follows, as before
    assert no_exception(page)
