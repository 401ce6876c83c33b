"""Pasted text that ends in half of a character (a lone UTF-16 surrogate: a copy cut inside an emoji) is said in
words, with U+FFFD in its place, and the tab goes on answering (it used to lose its connection without a word)."""

from urllib.parse import quote

from tests.e2e.harness import open_app_page, wait_idle
from tests.e2e.test_live_training import no_exception

URL = f"char-model-training?preset={quote('Tiny vanilla RNN')}"
PASTED = "A paragraph copied from a chat, cut in the middle of its last emoji. " * 2
HALF_AN_EMOJI = 0xD83D  # the first half of 😀 (U+1F600), without its second


def test_pasted_text_ending_in_half_a_character_is_said_and_the_tab_still_answers(page, base_url):
    open_app_page(page, base_url, URL)
    page.get_by_text("Paste text").click()
    wait_idle(page)
    box = page.get_by_role("textbox", name="Paste a text")
    box.fill(PASTED)
    box.press("End")
    # The half character goes in as typed text does, by the browser (Playwright's own transport refuses it).
    box.evaluate("(box, half) => document.execCommand('insertText', false, String.fromCharCode(half))", HALF_AN_EMOJI)
    page.get_by_role("button", name="Use this text").click()
    # The tab answers: the text (with U+FFFD in its place) became the corpus, and it says why it holds U+FFFD.
    page.get_by_text(f"Next run trains on pasted text: {len(PASTED) + 1} characters").wait_for(timeout=30_000)
    toast = page.get_by_test_id("stToast").filter(has_text="where your text holds half of a character")
    toast.wait_for(timeout=10_000)
    assert f"{PASTED.strip()[-40:]} \ufffd”" in toast.inner_text()
    # A later click is answered too.
    page.get_by_text("Upload a .txt file").click()
    page.locator("[data-testid='stFileUploader']").filter(has_text="A UTF-8 text file").wait_for(timeout=30_000)
    assert no_exception(page)
