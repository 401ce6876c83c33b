"""The Sequence-to-sequence page in a real browser: both models reverse the default input, the alignment heatmap
and the step's attention row are drawn, a step moved by keyboard moves the row, a typed input is decoded, and the
accuracy curve is drawn. The screenshot goes to docs/screenshots/seq2seq.png for the README."""

from playwright.sync_api import expect

from tests.e2e.harness import ROOT, open_app_page, screenshot_from, wait_idle
from tests.e2e.test_gradients_gates import nudge_slider

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 180_000  # the first visit measures both models on the held-out set of every length


def test_both_models_reverse_a_string_and_the_alignment_follows_the_step(page, base_url):
    open_app_page(page, base_url, "sequence-to-sequence", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    outputs = main.locator("[data-testid='stHtml']").filter(has_text="right answer")
    expect(outputs).to_contain_text("ecneuqesotecneuqes")  # "sequencetosequence" reversed
    for name in ("fixed context", "attention"):
        expect(outputs).to_contain_text(name)
    expect(page.locator(".st-key-seq2seq_alignment .heatmaplayer")).to_have_count(1, timeout=60_000)
    caption = main.get_by_text("To write token 1 the attention model reads", exact=False)
    expect(caption).to_be_visible()
    nudge_slider(page, "Output step i", "ArrowRight", presses=2)
    expect(main.get_by_text("To write token 3 the attention model reads", exact=False)).to_be_visible()
    screenshot_from(page, "h2", "1. Reverse a string", DOCS / "seq2seq.png", margin_px=70)
    box = page.locator(".st-key-seq2seq_input input")
    box.fill("attention")
    box.press("Enter")
    expect(outputs).to_contain_text("noitnetta", timeout=60_000)
    wait_idle(page)
    expect(page.locator(".st-key-seq2seq_accuracy .scatterlayer .trace")).to_have_count(2)
    assert page.locator("[data-testid='stException']").count() == 0
