"""The Hidden state page's s (who attends to a character) and the connectivity's t in a real browser: a move with the
keyboard shows the stop's words and figure with no script run, the address follows, and the page opened anew at that
address (a full server run at both settings) shows the same."""

from rnnviz.ui.hidden_state.connectivity import PREDICTION
from rnnviz.ui.hidden_state.sections import ATTENDED, DEFAULT_SENTENCE
from tests.e2e.harness import open_app_page
from tests.e2e.test_hidden_state import FIRST_LOAD_MS
from tests.e2e.test_instant import WATCH, read, reported, shows


def label(i: int) -> str:
    return f"{i}: {DEFAULT_SENTENCE[i]!r}"


def press(page, key: str, arrow: str, stop: int, param: str) -> dict:
    """Move the control ``key`` one stop with the keyboard; what it shows, which it showed before any script ran and
    wrote into the address (?``param``=) at once."""
    page.evaluate(WATCH, key)
    slider = page.locator(f".st-key-{key} input[type='range']")
    slider.focus()
    slider.press(arrow)
    shows(page, key, label(stop), 1)
    (shown, states), *_ = page.evaluate("() => window.__instant.shown")
    assert shown == label(stop) and states == [], states  # shown before any script ran
    assert page.evaluate("(name) => new URLSearchParams(window.location.search).get(name)", param) == str(stop)
    return read(page, key)


def test_who_attends_and_the_connectivity_t_move_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "hidden-state?s=4&ct=20", timeout_ms=FIRST_LOAD_MS)
    shows(page, ATTENDED, label(4), 1)
    shows(page, PREDICTION, label(20), 1)

    attended = press(page, ATTENDED, "ArrowRight", 5, "s")
    # by hand: the sentence is shorter than the context, so every t after s = 5 reads it
    assert f"{len(DEFAULT_SENTENCE) - 6} later positions (t > s) can read s = 5 ('u')" in attended["words"]
    (chart,) = attended["charts"]
    assert chart["shown"] == label(5) and "later character t that reads s = 5 (its position below it)" in chart["texts"]
    reported(page, "s=5")

    predicted = press(page, PREDICTION, "ArrowLeft", 19, "ct")
    assert f"the gradient is of log p({DEFAULT_SENTENCE[20]!r}), the sentence's next character" in predicted["words"]
    (chart,) = predicted["charts"]
    assert chart["shown"] == label(19) and "d = t − s: characters back from the prediction" in chart["texts"]
    reported(page, "ct=19")

    fresh = page.context.new_page()  # the address the moves left, in a new session: a full server run
    open_app_page(fresh, base_url, page.url.split("/", 3)[3], timeout_ms=FIRST_LOAD_MS)
    shows(fresh, ATTENDED, label(5), 1)
    shows(fresh, PREDICTION, label(19), 1)
    assert read(fresh, ATTENDED) == attended
    assert read(fresh, PREDICTION) == predicted
    fresh.close()
