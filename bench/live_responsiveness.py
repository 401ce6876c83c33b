"""Does the app stay responsive while a model trains live? Measured in a real browser (Chromium).

Session A trains the quick preset on python-stdlib on the live-training page. Session B moves the σ₁ slider
on the Gradient decay page, and the time from the key press to the page showing the new number is taken,
alternately with A training and with A paused, so that both see the same load from other jobs. Also timed:
how long after a Pause click the live page says "Paused" (the chunk in flight must finish first).

Usage: python -m bench.live_responsiveness   (needs Debian's chromium; about two minutes)
"""

from __future__ import annotations

import statistics
import time
from urllib.parse import quote

from bench.common import print_table
from tests.e2e.harness import CHROMIUM_ARGS, find_chromium, open_app_page, streamlit_server, wait_idle

ROUNDS = 4
SIGMA = "σ₁, the largest singular value"
METRIC = "measured ‖W_hhᴷ v‖ after K = 150"


def _metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.locator("[data-testid='stMetricLabel']",
                                                                             has_text=label))
    return box.locator("[data-testid='stMetricValue']").first.inner_text().strip()


def _slider_answer_seconds(page, key: str) -> float:
    """Press an arrow key on the σ₁ slider; seconds until the measured norm on the page changes."""
    before = _metric(page, METRIC)
    thumb = page.locator("[data-testid='stSlider']").filter(has_text=SIGMA).get_by_role("slider")
    thumb.focus()
    start = time.perf_counter()
    thumb.press(key)
    while _metric(page, METRIC) == before:
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    wait_idle(page)
    return elapsed


def _pause_answer_seconds(page) -> float:
    start = time.perf_counter()
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_text("Paused at step").first.wait_for(timeout=60_000)
    return time.perf_counter() - start


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
        idle, training, pauses = [], [], []
        for i in range(ROUNDS):
            key = "ArrowLeft" if i % 2 else "ArrowRight"
            idle.append(_slider_answer_seconds(slider_page, key))
            trainer_page.get_by_role("button", name="Start", exact=True).click()
            trainer_page.get_by_text("Training.").first.wait_for(timeout=60_000)
            time.sleep(2.0)  # let it settle into chunks
            training.append(_slider_answer_seconds(slider_page, "ArrowLeft" if i % 2 == 0 else "ArrowRight"))
            pauses.append(_pause_answer_seconds(trainer_page))
            wait_idle(trainer_page)
        browser.close()
    med = {name: statistics.median(v) for name, v in (("idle", idle), ("training", training), ("pause", pauses))}
    print_table(
        f"live_responsiveness: seconds, median of {ROUNDS} alternating rounds (budget 1 s)",
        ["what", "median s", "all"],
        [["σ₁ slider on another page, nobody training", f"{med['idle']:.2f}", ", ".join(f"{t:.2f}" for t in idle)],
         ["σ₁ slider on another page, one session training", f"{med['training']:.2f}",
          ", ".join(f"{t:.2f}" for t in training)],
         ["ratio training / idle", f"{med['training'] / med['idle']:.2f}", ""],
         ["Pause click until 'Paused' shows", f"{med['pause']:.2f}", ", ".join(f"{t:.2f}" for t in pauses)]],
    )
    return {"slider_idle_s": round(med["idle"], 3), "slider_training_s": round(med["training"], 3),
            "ratio": round(med["training"] / med["idle"], 2), "pause_s": round(med["pause"], 3)}


if __name__ == "__main__":
    run()
