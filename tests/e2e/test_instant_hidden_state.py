"""The Hidden state page's s (who attends to a character) and the connectivity's t in a real browser: a move with the
keyboard shows the stop's words and figure with no script run, the address follows, and the page opened anew at that
address (a full server run at both settings) shows the same."""

from rnnviz.ui.hidden_state.connectivity import PREDICTION
from rnnviz.ui.hidden_state.sections import ATTENDED, DEFAULT_SENTENCE, STEP
from tests.e2e.harness import open_app_page
from tests.e2e.test_hidden_state import FIRST_LOAD_MS
from tests.e2e.test_instant import WATCH, read, reported, shows

# What the t slider's view and the attention that follows it draw beyond words: each strip's picture (its PNG, size,
# alt text and caption) and each heat table's cells (colour and hover text).
PICTURES = """(key) => {
    const scope = `[class*="st-key-${key}_"]`;
    return {
        images: [...document.querySelectorAll(`${scope} img.rnnviz-instant-image`)].map(img =>
            [img.getAttribute('src'), img.alt, img.width, img.height,
             img.closest('figure').querySelector('figcaption').textContent]),
        cells: [...document.querySelectorAll(`${scope} .rnnviz-instant-heat td`)].map(td =>
            [td.style.backgroundColor, td.title]),
        headers: [...document.querySelectorAll(`${scope} .rnnviz-instant-heat th`)].map(th => th.textContent),
    };
}"""


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



def test_t_moves_the_strips_and_the_attention_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "hidden-state?t=20", timeout_ms=FIRST_LOAD_MS)
    shows(page, STEP, "20", 0)
    page.evaluate(WATCH, STEP)
    slider = page.locator(f".st-key-{STEP} input[type='range']")
    slider.focus()
    slider.press("ArrowRight")
    shows(page, STEP, "21", 0)
    (shown, states), *_ = page.evaluate("() => window.__instant.shown")
    assert shown == "21" and states == [], states  # shown before any script ran
    assert page.evaluate("() => new URLSearchParams(window.location.search).get('t')") == "21"
    view, pictures = read(page, STEP), page.evaluate(PICTURES, STEP)
    assert f"Read so far (t = 21): “{DEFAULT_SENTENCE[:22]}”" in view["words"]
    (attention,) = view["followers"]
    assert "how much position t = 21 (" in attention["words"]
    # 5 vectors (RNN h, LSTM h and c, minGRU's two h) and the Transformer's K and V of its two layers, each drawn
    # at its full size from a PNG of one pixel per value; the table: (2 layers × 4 heads) rows of s = 0…21
    assert len(pictures["images"]) == 9 and all(src.startswith("data:image/png;base64,") and width > 100
                                                for src, _, width, _, _ in pictures["images"])
    assert any(caption.startswith("K (layer 1), s = 0…21") for *_, caption in pictures["images"])
    assert len(pictures["cells"]) == 2 * 4 * 22 and all(colour.startswith("rgb(") for colour, _ in pictures["cells"])
    assert pictures["cells"][0][1].startswith("layer 1 head 1 reads 'T' (s = 0) with weight 0.")
    reported(page, "t=21")

    fresh = page.context.new_page()  # the address the move left, in a new session: a full server run
    open_app_page(fresh, base_url, page.url.split("/", 3)[3], timeout_ms=FIRST_LOAD_MS)
    shows(fresh, STEP, "21", 0)
    assert read(fresh, STEP) == view
    assert fresh.evaluate(PICTURES, STEP) == pictures
    fresh.close()
