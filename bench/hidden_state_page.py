"""How fast the Hidden-state page opens and answers a step of t, in a real browser (Chromium) at 1400 × 900.

One server is started and the page opened once, untimed (a warm server: its imports, the shipped models and the
figures every session shares are built). Then:

- ``open``, three ways, in turn, OPENS times each: from the home page by a click on the page's link in the
  sidebar (how a class moves through the app: the app's scripts are loaded); by its address in a tab whose
  browser has loaded the app before (a new session, the scripts cached); in a new browser context (nothing
  cached: the app's scripts are fetched and compiled as well). The clock runs from the click (or the start of
  the navigation) to the moment the page last changed: the script state back to not-running, the page's last
  chart and button there, every chart drawn, and no change under the document for SETTLED_MS; in the page's
  own clock. Medians reported.
- ``step of t``: → on the t slider, to a t this session has not shown yet; the clock runs from the key press to
  the last change of the page (the same settled rule), and the page must then say "Read so far (t = new t)".
  STEPS presses, the median and the worst reported.

The first open of all (cold: models loaded, shared figures built) is reported too. The `uptime` load average
before and after says how busy the machine was. Targets: open < 2 s, step < 0.3 s.

Usage: python -m bench hidden_state_page   (needs Debian's chromium; a minute or two)
"""

from __future__ import annotations

import os
import statistics
import time

from bench.common import print_table
from tests.e2e.harness import APP_IDLE, CHROMIUM_ARGS, find_chromium, open_app_page, streamlit_server, wait_idle

OPENS = 5
STEPS = 10
SETTLED_MS = 500  # the page must stay unchanged this long for the answer to count as complete
OPEN_TARGET_S, STEP_TARGET_S = 2.0, 0.3
VIEWPORT = {"width": 1400, "height": 900}
T_SLIDER = "t: the last character read"

# Installed before the page's own scripts: the time of the last change anywhere under the document, and of
# every change of the app's script state, in the page's clock (0 = start of the navigation).
WATCH = """() => {
    window.__bench = {pressed: null, last: performance.now(), states: []};
    const watch = () => {
        new MutationObserver(() => { window.__bench.last = performance.now(); })
            .observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                                characterData: true});
        const app = document.querySelector("[data-testid='stApp']");
        if (!app) return false;
        new MutationObserver(() => window.__bench.states.push(
            [app.getAttribute("data-test-script-state"), performance.now()]))
            .observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
        return true;
    };
    const poll = () => { if (!document.querySelector("[data-testid='stApp']")) return setTimeout(poll, 5);
                         watch(); };
    if (document.documentElement) poll(); else document.addEventListener("DOMContentLoaded", poll);
}"""

# Seconds from ``since`` (the key press, or the start of the navigation) to the last change, once the script
# state is not-running, the page's last chart and last button are there (a first run that ends early, before
# the page is drawn, does not count), every chart is drawn and nothing has changed for settledMs; else null.
SETTLED = """([settledMs, fromPress]) => {
    const b = window.__bench;
    const since = fromPress ? b.pressed : (b.navigated ?? 0);
    if (since === null) return null;
    const ran = b.states.some(([state, at]) => state === "running" && at >= since);
    const app = document.querySelector("[data-testid='stApp']");
    const idle = app && app.getAttribute("data-test-script-state") === "notRunning";
    const whole = document.querySelector(".st-key-hidden_state_bottleneck .main-svg") !== null
        && document.querySelector(".st-key-hidden_state_race_start") !== null;
    const drawn = [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
        .every(chart => chart.querySelector('.main-svg') !== null);
    if (!ran || !idle || !whole || !drawn || performance.now() - b.last < settledMs) return null;
    return (b.last - since) / 1000;
}"""

PRESS = """() => { window.__bench.pressed = null;
    document.addEventListener("keydown", () => { window.__bench.pressed ??= performance.now(); },
                              {capture: true, once: true}); }"""


def _settled(page, from_press: bool, timeout_s: float = 120.0) -> float:
    deadline = time.monotonic() + timeout_s
    while (elapsed := page.evaluate(SETTLED, [SETTLED_MS, from_press])) is None:
        if time.monotonic() > deadline:
            seen = page.evaluate("() => [window.__bench.pressed, window.__bench.navigated, window.__bench.last, "
                                 "window.__bench.states.slice(-4)]")
            raise TimeoutError(f"the page did not settle within {timeout_s:.0f} s (pressed, navigated, last change, "
                               f"script states: {seen})")
        time.sleep(0.02)
    return elapsed


def _fresh_open_seconds(browser, url: str) -> float:
    """A new browser context (nothing cached: the app's scripts are fetched and compiled too) loads the page."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.add_init_script(f"({WATCH})()")
        return _reload_seconds(page, url)
    finally:
        context.close()


def _reload_seconds(page, url: str) -> float:
    """The page loaded by its address (a new session) in a tab that watches itself (WATCH)."""
    page.goto(f"{url}/hidden-state", wait_until="commit")
    elapsed = _settled(page, from_press=False)
    _no_exception(page)
    return elapsed


def _navigate_seconds(page, url: str) -> float:
    """From the home page, a click on the page's link in the sidebar (how a class moves through the app)."""
    page.goto(url, wait_until="commit")
    page.wait_for_selector(APP_IDLE)
    page.locator("[data-testid='stSidebar'] a[href$='/hidden-state']").first.wait_for()
    page.wait_for_timeout(SETTLED_MS)  # the home page has settled
    page.evaluate("() => { window.__bench.navigated = performance.now(); }")
    page.locator("[data-testid='stSidebar'] a[href$='/hidden-state']").first.click()
    elapsed = _settled(page, from_press=False)
    _no_exception(page)
    return elapsed


def _no_exception(page) -> None:
    wait_idle(page)
    if page.locator("[data-testid='stException']").count():
        raise RuntimeError("the page raised an exception")


def _step_seconds(page) -> tuple[float, int]:
    """→ on the t slider; seconds until the page has settled, and the new t (checked on the page)."""
    page.wait_for_selector(APP_IDLE)
    slider = page.locator("[data-testid='stSlider']").filter(has_text=T_SLIDER)
    thumb = slider.get_by_role("slider")

    def value() -> int:
        return int(slider.locator("[data-testid='stSliderThumbValue']").inner_text().strip())

    before = value()
    thumb.focus()
    page.evaluate(PRESS)
    thumb.press("ArrowRight")
    elapsed = _settled(page, from_press=True)
    now = value()
    if now != before + 1:
        raise RuntimeError(f"the press moved t from {before} to {now}")
    page.get_by_text(f"Read so far (t = {now})").first.wait_for(timeout=10_000)
    return elapsed, now


def run() -> dict:
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    with streamlit_server() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        cold = _fresh_open_seconds(browser, url)  # the server's first open: models loaded, shared figures built
        warm_context = browser.new_context(viewport=VIEWPORT)
        tab = warm_context.new_page()
        tab.add_init_script(f"({WATCH})()")
        _reload_seconds(tab, url)  # this browser now holds the app's scripts
        opens: dict[str, list[float]] = {"navigate": [], "reload": [], "fresh": []}
        for _ in range(OPENS):  # the three ways in turn, so that load from other work hits them alike
            opens["navigate"].append(_navigate_seconds(tab, url))
            opens["reload"].append(_reload_seconds(tab, url))
            opens["fresh"].append(_fresh_open_seconds(browser, url))
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.add_init_script(f"({WATCH})()")
        open_app_page(page, url, "hidden-state", timeout_ms=120_000)
        page.locator("[data-testid='stSlider']").filter(has_text=T_SLIDER).scroll_into_view_if_needed()
        _step_seconds(page)  # warm: the first press pays for the fragment's first run
        steps = [_step_seconds(page)[0] for _ in range(STEPS)]
        browser.close()
    load_after = os.getloadavg()
    med = {way: statistics.median(times) for way, times in opens.items()}
    step_med = statistics.median(steps)
    names = {"navigate": "open from the sidebar (scripts loaded)", "reload": "open by its address (scripts cached)",
             "fresh": "open in a new browser (nothing cached)"}
    rows = [[names[way], f"{med[way]:.2f}", f"{max(times):.2f}", f"< {OPEN_TARGET_S:g} s",
             "yes" if med[way] < OPEN_TARGET_S else "NO", ", ".join(f"{t:.2f}" for t in times)]
            for way, times in opens.items()]
    rows += [["step of t (→ key)", f"{step_med:.3f}", f"{max(steps):.3f}", f"< {STEP_TARGET_S:g} s",
              "yes" if step_med < STEP_TARGET_S else "NO", ", ".join(f"{t:.2f}" for t in steps)],
             ["first open of the server (cold)", f"{cold:.2f}", "", "", "", ""]]
    print_table(
        f"hidden_state_page: Chromium at 1400 × 900 against a warm server, load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after ({os.cpu_count()} cores)",
        ["what", "median s", "max s", "target", "met", "all"], rows)
    return {**{f"open_{way}_s": round(m, 3) for way, m in med.items()},
            **{f"open_{way}_max_s": round(max(t), 3) for way, t in opens.items()},
            "step_s": round(step_med, 3), "step_max_s": round(max(steps), 3), "cold_open_s": round(cold, 2),
            "opens": OPENS, "steps": STEPS, "load_before": round(load_before[0], 2),
            "load_after": round(load_after[0], 2)}


if __name__ == "__main__":
    run()
