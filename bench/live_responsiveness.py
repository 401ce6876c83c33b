"""Does the app stay responsive while a model trains live? Measured in a real browser (Chromium).

Session A trains the quick preset on python-stdlib on the live-training page. Session B presses → on the σ₁
slider of the Gradient decay page, so that σ₁ goes up by 0.01 to a value no session has asked for yet (every
press is new to the caches, whether A trains or not). The clock starts at the key press and stops when
session B's script state has returned to not-running and stayed there for half a second (its last run is
over), both read in the page's own clock. Presses alternate between A training and A paused, and which comes
first alternates by round, so that both see the same load from other jobs. Reported: medians, the worst
press, and the share of presses answered within 1 s. Also timed: how long after a Pause click the live page
says "Paused" (the chunk in flight must finish first).

Usage: python -m bench.live_responsiveness   (needs Debian's chromium; about two minutes)
"""

from __future__ import annotations

import statistics
import time
from urllib.parse import quote

from bench.common import print_table
from tests.e2e.harness import APP_IDLE, CHROMIUM_ARGS, find_chromium, open_app_page, streamlit_server, wait_idle

ROUNDS = 6
BUDGET_S = 1.0
SETTLED_MS = 500  # the script state must stay not-running this long for the answer to count as complete
SIGMA = "σ₁, the largest singular value"
METRIC = "measured ‖W_hhᴷ v‖"

# Records, in the page's clock, the key press and every change of the app's script state.
WATCH = """() => {
    const app = document.querySelector("[data-testid='stApp']");
    window.__bench = {pressed: null, states: []};
    document.addEventListener("keydown", () => { window.__bench.pressed ??= performance.now(); },
                              {capture: true, once: true});
    const observer = new MutationObserver(() => window.__bench.states.push(
        [app.getAttribute("data-test-script-state"), performance.now()]));
    observer.observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
    window.__benchObserver = observer;
}"""

# Seconds from the press to the end of the last script run, once the state has settled; null until then.
SETTLED = """(settledMs) => {
    const {pressed, states} = window.__bench;
    const ran = states.findIndex(([state]) => state === "running");
    if (pressed === null || ran < 0) return null;
    const [state, at] = states[states.length - 1];
    if (state !== "notRunning" || performance.now() - at < settledMs) return null;
    window.__benchObserver.disconnect();
    return (at - pressed) / 1000;
}"""


def _metric(page, label: str) -> str:
    """A number the page shows: an st.metric's, or one under an instant chart (kit.instant_chart, in its shadow
    root, which Playwright's locators enter)."""
    box = page.locator("[data-testid='stMetric'], .instant-chart .number").filter(
        has=page.locator("[data-testid='stMetricLabel'], .label", has_text=label))
    return box.locator("[data-testid='stMetricValue'], .value").first.inner_text().strip()


def _press_answer_seconds(page, timeout_s: float = 60.0) -> float:
    """Press → on the σ₁ slider (a σ₁ never asked for before); seconds until the script run it started has
    finished, in the page's clock. Checks that the page now shows the new σ₁'s measured norm."""
    page.wait_for_selector(APP_IDLE)
    before = _metric(page, METRIC)
    thumb = page.locator("[data-testid='stSlider']").filter(has_text=SIGMA).get_by_role("slider")
    thumb.focus()
    page.evaluate(WATCH)
    thumb.press("ArrowRight")
    deadline = time.monotonic() + timeout_s
    while (elapsed := page.evaluate(SETTLED, SETTLED_MS)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the σ₁ press was not answered within {timeout_s:.0f} s")
        time.sleep(0.02)
    wait_idle(page)
    if _metric(page, METRIC) == before:
        raise RuntimeError("the press did not change the measured norm: it was not a new σ₁")
    return elapsed


def _pause_answer_seconds(page) -> float:
    start = time.perf_counter()
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_text("Paused at step").first.wait_for(timeout=60_000)
    return time.perf_counter() - start


def _start_training(page) -> None:
    page.get_by_role("button", name="Start", exact=True).click()
    page.get_by_text("Training.").first.wait_for(timeout=60_000)
    time.sleep(2.0)  # let it settle into chunks


def run() -> dict:
    from playwright.sync_api import sync_playwright

    with streamlit_server() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        trainer_page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        slider_page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        open_app_page(trainer_page, url, f"char-model-training?preset={quote('Quick demo (30 s)')}")
        trainer_page.locator("[data-testid='stSelectbox']").filter(has_text="Built-in corpus").click()
        trainer_page.get_by_role("option", name="Python standard library source (1 MB of code)").click()
        wait_idle(trainer_page)
        open_app_page(slider_page, url, "gradient-decay")
        _press_answer_seconds(slider_page)  # warm: the first press pays the page's first imports
        idle, training, pauses = [], [], []
        for i in range(ROUNDS):
            if i % 2:  # training first in odd rounds
                _start_training(trainer_page)
                training.append(_press_answer_seconds(slider_page))
                pauses.append(_pause_answer_seconds(trainer_page))
                wait_idle(trainer_page)
                idle.append(_press_answer_seconds(slider_page))
            else:
                idle.append(_press_answer_seconds(slider_page))
                _start_training(trainer_page)
                training.append(_press_answer_seconds(slider_page))
                pauses.append(_pause_answer_seconds(trainer_page))
                wait_idle(trainer_page)
        browser.close()
    med = {name: statistics.median(v) for name, v in (("idle", idle), ("training", training), ("pause", pauses))}
    within = {name: sum(t <= BUDGET_S for t in v) / len(v) for name, v in (("idle", idle), ("training", training))}
    print_table(
        f"live_responsiveness: seconds from a σ₁ press (a new value each time) until the script run is over, "
        f"{ROUNDS} alternating rounds (budget {BUDGET_S:g} s)",
        ["what", "median s", "max s", f"within {BUDGET_S:g} s", "all"],
        [["σ₁ press on another page, nobody training", f"{med['idle']:.2f}", f"{max(idle):.2f}",
          f"{within['idle']:.0%}", ", ".join(f"{t:.2f}" for t in idle)],
         ["σ₁ press on another page, one session training", f"{med['training']:.2f}", f"{max(training):.2f}",
          f"{within['training']:.0%}", ", ".join(f"{t:.2f}" for t in training)],
         ["ratio training / idle (medians)", f"{med['training'] / med['idle']:.2f}", "", "", ""],
         ["Pause click until 'Paused' shows", f"{med['pause']:.2f}", f"{max(pauses):.2f}", "",
          ", ".join(f"{t:.2f}" for t in pauses)]],
    )
    return {"slider_idle_s": round(med["idle"], 3), "slider_training_s": round(med["training"], 3),
            "slider_idle_max_s": round(max(idle), 3), "slider_training_max_s": round(max(training), 3),
            "share_within_1s_idle": round(within["idle"], 2), "share_within_1s_training": round(within["training"], 2),
            "ratio": round(med["training"] / med["idle"], 2), "pause_s": round(med["pause"], 3)}


if __name__ == "__main__":
    run()
