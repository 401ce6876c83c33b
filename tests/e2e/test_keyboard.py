"""The lesson's main controls with a keyboard only: the first Tab reaches Streamlit's "Skip to main content" link,
Enter on it skips the sidebar's navigation, and a few Tabs later the page's main button has the focus; Enter
presses it (issue 32: Start was 20 Tab presses away through the navigation, Step 26)."""

import re

from playwright.sync_api import expect

from rnnviz.figures.handbuilt import fmt, fmt_vector
from rnnviz.lessons.handbuilt import HandConfig, run_handbuilt
from tests.e2e.harness import open_app_page, wait_drawn, wait_idle

# After the skip link: the Presenting switch, its help, the title's anchor, then the page's own controls in their
# order (the hand-built page's Step comes after the bits, the nonlinearity, the quiz, Copy link and the weights: 11;
# the live page's Start is 4). README.md and docs/pages.md say "at most 12".
MAX_TABS_AFTER_SKIP = 12


def focused_text(page) -> str:
    return page.evaluate("() => (document.activeElement?.innerText || document.activeElement?.ariaLabel || '')")


def tab_to_button(page, name: str) -> int:
    """Skip the navigation, then Tab until the button called ``name`` has the focus; returns the Tabs after the
    skip link."""
    # The Tab order is read from the page as drawn: every control, none of them still a placeholder.
    wait_drawn(page)
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to main content")
    page.keyboard.press("Enter")
    for tabs in range(1, MAX_TABS_AFTER_SKIP + 1):
        page.keyboard.press("Tab")
        # A button with a shortcut ends its text with the key's sign (Step →): the name comes before it.
        if page.evaluate("() => document.activeElement?.tagName") == "BUTTON" and re.sub(
                r"[^\w)]+$", "", focused_text(page)).endswith(name):
            return tabs
    raise AssertionError(f"{name} not reached within {MAX_TABS_AFTER_SKIP} Tabs after the skip link")


def test_tab_reaches_and_enter_presses_the_hand_built_step(page, base_url):
    open_app_page(page, base_url, "hand-built-rnn?bits=1101")
    tab_to_button(page, "Step")
    page.keyboard.press("Enter")
    step = run_handbuilt(HandConfig(bits=(1, 1, 0, 1))).steps[0]  # t = 1: x_1, h_0, h_1 and y_1 (labels are KaTeX)
    # The step's numbers are drawn under the stepper in the browser (rnnviz.ui.kit.instant).
    expect(page.locator(".rnnviz-instant-metric-value")).to_have_text(
        [str(step.x_t), fmt_vector(step.h_prev, 2), fmt_vector(step.h_t, 2), fmt(step.y_t, 2)])
    # The stepper answers the arrow keys, Home and End too.
    page.keyboard.press("ArrowRight")
    step = run_handbuilt(HandConfig(bits=(1, 1, 0, 1))).steps[1]
    expect(page.locator(".rnnviz-instant-metric-value")).to_have_text(
        [str(step.x_t), fmt_vector(step.h_prev, 2), fmt_vector(step.h_t, 2), fmt(step.y_t, 2)])
    main = page.locator("[data-testid='stMain']")
    page.keyboard.press("End")
    expect(main.get_by_text("time step t = 4 of 4")).to_be_visible()
    page.keyboard.press("ArrowLeft")
    expect(main.get_by_text("time step t = 3 of 4")).to_be_visible()
    page.keyboard.press("Home")
    expect(main.get_by_text("time step t = 0 of 4")).to_be_visible()


FOCUS_RING = """() => { const style = getComputedStyle(document.activeElement);
    return [style.outlineStyle, style.outlineWidth, style.outlineColor]; }"""


def test_tab_reaches_and_enter_presses_the_live_start(page, base_url):
    open_app_page(page, base_url, "char-model-training?preset=Python+code+%283+min%29")  # a built-in corpus: offline
    tab_to_button(page, "Start")
    # The red primary button shows where the focus is: a dark ring, not Streamlit's faint red glow.
    assert page.evaluate(FOCUS_RING) == ["solid", "2px", "rgb(26, 26, 26)"]
    page.keyboard.press("Enter")
    pause = page.get_by_role("button", name="Pause")
    expect(pause).to_be_enabled(timeout=60_000)  # the run trains
    # Start turned itself off: the focus moved on to Pause in its row (not to the page, which would send the next
    # Tab back to the top), so Enter pauses.
    expect(pause).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Start")).to_be_enabled(timeout=60_000)
    # Pause turned itself off in turn: the focus went on to Step, and one Shift+Tab (over the disabled Pause) is
    # Start again.
    expect(page.get_by_role("button", name=re.compile(r"^Step\b"))).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("button", name="Start")).to_be_focused()
    page.keyboard.press("Enter")
    expect(pause).to_be_enabled(timeout=60_000)
    pause.click()  # stop it: the next test has the server's cores
    expect(page.get_by_role("button", name="Start")).to_be_enabled(timeout=60_000)
    wait_idle(page)
