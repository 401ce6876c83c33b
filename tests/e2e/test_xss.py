"""Hostile text in every place a page shows user text: it appears as literal characters, runs nothing and
injects no element.

The places: an uploaded file's name (corpus summary, run summary, the sampler's model label, the
explorer's model label), the corpus preview, samples along the way, the prime and sample, beams, the
"what comes next" context, pasted text, the gates page's word, the hand-built page's bits, the explorer's
substring search and its colouring of a live model. A ``dialog`` listener catches any alert().
"""

from urllib.parse import quote

from tests.e2e.harness import open_app_page, screenshot, wait_idle
from tests.e2e.test_live_training import click, no_exception, number, wait_for

URL = "char-model-training"
TINY_RNN = quote("Tiny vanilla RNN")
IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
LINK = "[click me](javascript:alert(3))"
ANCHOR = '<a href="javascript:alert(4)">a</a>'
HOSTILE = f"{IMG} {SCRIPT} {LINK} {ANCHOR}\n"
NAME = f"{IMG}{LINK}.txt"


def watch_dialogs(page) -> list[str]:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    return dialogs


def nothing_injected(page) -> None:
    """No element that the hostile text could have created, and no script that mentions alert."""
    assert page.locator("img[src='x'], [onerror], a[href^='javascript'], a[href*='alert']").count() == 0
    scripts = page.evaluate("() => [...document.scripts].map(s => s.textContent).filter(t => t.includes('alert('))")
    assert scripts == []


def choose_model(page, starting: str, timeout_ms: int = 60_000) -> None:
    """Pick the option of the "Model" box whose label starts with ``starting``."""
    box = page.get_by_role("combobox", name="Model", exact=True)
    box.scroll_into_view_if_needed()
    wait_idle(page, timeout_ms)
    options = page.get_by_role("option")
    wait_for(lambda: box.click() or options.count() > 0, 30, "the model list to open", poll_s=1.0)
    labels = options.all_inner_texts()
    options.nth(next(i for i, label in enumerate(labels) if label.startswith(starting))).click()
    wait_idle(page, timeout_ms)


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def test_hostile_text_on_the_live_training_page(page, base_url):
    dialogs = watch_dialogs(page)
    open_app_page(page, base_url, f"{URL}?preset={TINY_RNN}")
    page.get_by_text("Upload a .txt file").click()
    wait_idle(page)
    uploader = page.locator("[data-testid='stFileUploader']").filter(has_text="A UTF-8 text file")
    uploader.locator("input[type='file']").set_input_files(
        files=[{"name": NAME, "mimeType": "text/plain", "buffer": (HOSTILE * 40).encode()}])
    wait_for(lambda: page.get_by_text("Next run trains on").count() > 0 and NAME in main_text(page), 30,
             "the corpus summary to name the upload")
    page.get_by_text("Preview: the first 500 characters").click()
    wait_for(lambda: HOSTILE.strip() in main_text(page), 10, "the preview to show the text as it is")

    for _ in range(2):
        click(page, "Step")
        wait_idle(page)
    wait_for(lambda: (number(page, "Step") or 0) > 0, 60, "the model to train")
    assert f"on {NAME} (V = " in main_text(page)  # the run summary names the upload as it is
    choose_model(page, f"Live-trained ({NAME}, step")
    sampler = page.get_by_role("combobox", name="Model", exact=True)
    prime = page.get_by_role("textbox", name="Prime text")
    prime.fill(IMG)
    prime.press("Enter")
    wait_idle(page)
    text = main_text(page)
    assert IMG in text and "What comes next?" in text
    page.get_by_text("Beam search").click()
    wait_idle(page)
    wait_for(lambda: "The most probable continuations" in main_text(page), 30, "the beams")
    assert main_text(page).count(IMG) >= 3  # the sample, and each beam, start with the prime as typed
    assert sampler.input_value().startswith(f"Live-trained ({NAME}, step")  # the sampler's model label
    nothing_injected(page)
    assert dialogs == [] and no_exception(page)
    page.get_by_text("The most probable continuations").scroll_into_view_if_needed()
    screenshot(page, "xss-live-training")

    # Paste: the same text, pasted and used.
    page.get_by_text("Paste text").click()
    wait_idle(page)
    page.get_by_role("textbox", name="Paste a text").fill(HOSTILE * 10)
    page.get_by_role("button", name="Use this text").click()
    wait_for(lambda: "Next run trains on pasted text" in main_text(page), 30, "the pasted corpus")
    nothing_injected(page)
    assert dialogs == [] and no_exception(page)

    # The explorer colours the live model's own text and names the upload in its model box.
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Hidden-cell explorer").click()
    page.wait_for_selector("h1:has-text('Hidden-cell explorer')")
    wait_idle(page, 180_000)
    choose_model(page, f"Live-trained ({NAME}, step", timeout_ms=180_000)
    # The model writes the characters it learned, drawn as text (waited for: until the rerun for the chosen
    # model lands, the previous model's colouring is still shown).
    colouring = page.locator(  # drawn in the browser where the window slides (kit.instant), else by st.html
        ".st-key-explorer_window .rnnviz-instant-coloured, [data-testid='stMain'] [data-testid='stHtml']").first
    wait_for(lambda: "<" in colouring.inner_text() and ">" in colouring.inner_text(), 60,
             "the explorer to colour the live model's own text")
    nothing_injected(page)
    assert dialogs == [] and no_exception(page)


def test_hostile_text_on_the_mechanics_pages_and_the_explorer_search(page, base_url):
    dialogs = watch_dialogs(page)
    open_app_page(page, base_url, "hand-built-rnn")
    bits = page.get_by_role("textbox", name="Input bits")
    bits.fill(IMG)
    bits.press("Enter")
    wait_idle(page)
    error = page.locator("[data-testid='stAlertContentError']").inner_text()
    assert "may only hold the bits 0 and 1" in error and "<img" in error
    nothing_injected(page)

    open_app_page(page, base_url, "lstm-gates", timeout_ms=180_000)
    typed = "<img src=x onerror=a()>"
    word = page.get_by_role("textbox", name="word", exact=True)
    word.fill(typed)
    word.press("Enter")
    wait_idle(page)
    # The stacked W's columns are the word's own characters, as typed, one per distinct character, sorted
    # (plotly draws text through its own markup, so an unescaped "<" would vanish or become an element).
    # Waiting for them also waits for the word's rerun, which redraws the t slider below.
    expected_columns = [f"x:{c!r}" for c in sorted(set(typed))]
    wait_for(lambda: [t for t in page.locator(".js-plotly-plot .xtick text").all_text_contents()
                      if t.startswith("x:")] == expected_columns, 30, "the stacked W's columns of the typed word")
    # Step t = 1 reads the word's first character, "<": the drawing names it as typed.
    thumb = page.locator(".st-key-lstm_gates_step input[type='range']")  # it answers in the browser (kit.instant)
    charts = page.locator("[data-testid='stPlotlyChart']")

    def at_step_one() -> bool:
        if any("One LSTM step at t = 1" in text for text in charts.all_text_contents()):
            return True
        thumb.focus()
        thumb.press("Home")  # again if a rerun redrew the slider under the first press
        wait_idle(page)
        return False

    wait_for(at_step_one, 30, "the step drawing at t = 1")
    step_drawing = next(text for text in charts.all_text_contents() if "One LSTM step at t = 1" in text)
    assert "one-hot('<')" in step_drawing
    columns = [t for t in page.locator(".js-plotly-plot .xtick text").all_text_contents() if t.startswith("x:")]
    assert columns == expected_columns
    nothing_injected(page)

    open_app_page(page, base_url, "hidden-cell-explorer", timeout_ms=180_000)
    page.get_by_text("substring", exact=True).click()
    wait_idle(page)
    search = page.get_by_role("textbox", name="Substring")
    search.fill(IMG + LINK)
    search.press("Enter")
    wait_idle(page)
    warning = page.locator("[data-testid='stAlertContentWarning']").filter(has_text="does not").inner_text()
    assert f"; {(IMG + LINK)[:40]} does not." in warning  # its first 40 characters, as typed: no markup, no entities
    nothing_injected(page)
    assert dialogs == [] and no_exception(page)
