"""Presenting mode in a real browser: it hides the sidebar and the help icons, never a button a class needs."""

import pytest

from tests.e2e.harness import open_app_page, wait_idle

# The label of every button the main area shows (buttons inside a hidden control excluded).
VISIBLE_BUTTONS = """() => [...document.querySelectorAll('[data-testid="stMain"] button')]
    .filter(b => b.offsetParent !== null && b.getClientRects().length > 0 && b.innerText.trim())
    .map(b => b.innerText.replace(/\\s+/g, ' ').trim()).sort()"""

VISIBLE_HELP_ICONS = """() => [...document.querySelectorAll('[data-testid="stMain"] button[aria-label^="Help for"]')]
    .filter(b => b.offsetParent !== null).length"""


@pytest.mark.parametrize("url_path, needed", [
    ("char-model-training", ["Step", "Reset", "Start"]),
    ("sequence-to-sequence", ["New"]),
])
def test_presenting_keeps_every_button_and_hides_the_help_icons(page, base_url, url_path, needed):
    open_app_page(page, base_url, url_path)
    usual = page.evaluate(VISIBLE_BUTTONS)
    assert page.evaluate(VISIBLE_HELP_ICONS) > 0
    page.locator(".st-key-presenting_switch").get_by_text("Presenting").click()
    page.wait_for_function("() => getComputedStyle(document.documentElement).fontSize === '20px'")
    wait_idle(page)
    presenting = page.evaluate(VISIBLE_BUTTONS)
    assert all(any(label.endswith(name) for label in usual) for name in needed), usual
    assert presenting == usual, (usual, presenting)
    assert page.evaluate(VISIBLE_HELP_ICONS) == 0
