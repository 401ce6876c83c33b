"""The four mechanics-of-recurrence pages in a real browser: they load, and stepping updates the DOM."""

import re

import pytest

from tests.e2e.harness import open_app_page, screenshot_whole_page, wait_idle

PAGES = ["hand-built-rnn", "unrolling-bptt", "truncated-bptt", "stacked-rnns"]


def _open(page, base_url, url_path):
    """Open the page and wait for its charts too: the plotly and KaTeX bundles load lazily after the script run."""
    open_app_page(page, base_url, url_path)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)


def _metric_values(page) -> list[str]:
    """The hand-built step's numbers, drawn under its stepper in the browser (rnnviz.ui.kit.instant)."""
    return [v.strip() for v in page.locator(".rnnviz-instant-metric-value").all_inner_texts()]


@pytest.mark.parametrize("url_path", PAGES)
def test_mechanics_page_loads(page, base_url, url_path):
    _open(page, base_url, url_path)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot_whole_page(page, f"mechanics-{url_path}")


def test_hand_built_step_shows_the_new_state(page, base_url):
    _open(page, base_url, "hand-built-rnn")
    assert _metric_values(page)[:2] == ["0", "(0, 0, 1)"]  # t = 0, h_0
    step = page.get_by_role("button", name=re.compile(r"^Step\b"))  # its name ends with its shortcut key
    expected = [("(0, 0, 1)", "0"), ("(1, 0, 1)", "0"), ("(0, 1, 1)", "0"), ("(1, 0, 1)", "0"), ("(1, 1, 1)", "1")]
    for t, (expected_h, expected_y) in enumerate(expected, start=1):
        step.click()
        # The caption names the step and the third metric is h_t: wait until both show step t.
        page.wait_for_function(
            """([t, h]) => {
                const values = [...document.querySelectorAll(".rnnviz-instant-metric-value")];
                const caption = [...document.querySelectorAll(".rnnviz-instant-control")]
                    .some(e => e.innerText.includes(`t = ${t} of 9`));
                return caption && values.length === 4 && values[2].innerText.trim() === h;
            }""",
            arg=[t, expected_h], timeout=30_000,
        )
        wait_idle(page)
        x_t, h_prev, h_t, y_t = _metric_values(page)
        assert (h_t, y_t) == (expected_h, expected_y)
    assert "t=5" in page.url and "bits=010111011" in page.url  # the step travels in the shareable link
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot_whole_page(page, "mechanics-hand-built-rnn-step-5")
    # First goes back to t = 0: the initial state alone, before any bit is read.
    page.get_by_role("button", name=re.compile(r"^First\b")).click()
    page.wait_for_function(
        """() => [...document.querySelectorAll(".rnnviz-instant-control")]
                 .some(e => e.innerText.includes("t = 0 of 9"))""",
        timeout=30_000,
    )
    wait_idle(page)
    assert _metric_values(page) == ["0", "(0, 0, 1)"]  # t = 0, h_0
    assert "t=0" in page.url
