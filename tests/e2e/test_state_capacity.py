"""The page "What a state can hold" in a real browser: the memory charts follow the t slider moved by keyboard (the
Transformer's cache grows by two rows of K and V per block and token, the fixed states keep their bytes), and the
screenshot goes to docs/screenshots/state-capacity.png for the README."""

from playwright.sync_api import expect

from tests.e2e.harness import ROOT, open_app_page, screenshot_from
from tests.e2e.test_gradients_gates import nudge_slider

DOCS = ROOT / "docs" / "screenshots"


def cache_bytes(t: int) -> str:
    """K and V, 2 blocks, C = 32, float32, after tokens 0…t."""
    return f"{2 * 2 * (t + 1) * 32 * 4:,}"


def test_the_memory_follows_t_and_the_cache_grows(page, base_url):
    open_app_page(page, base_url, "state-capacity")
    titles = {kind: page.locator(f".st-key-capacity_memory_{kind} .gtitle") for kind in ("transformer", "mlstm")}
    first = int(page.locator("[data-testid='stSlider']").filter(has_text="Token t")
                .locator("[data-testid='stSliderThumbValue']").inner_text())
    expect(titles["transformer"]).to_have_text(f"Transformer: {cache_bytes(first)} bytes")
    expect(titles["mlstm"]).to_have_text("mLSTM: 2,376 bytes")
    nudge_slider(page, "Token t", "ArrowRight", presses=2)
    # A list: one title and only one, so the wait goes on while the chart of the last t still stands beside the
    # new one (it did, for a moment, on a loaded machine).
    expect(titles["transformer"]).to_have_text([f"Transformer: {cache_bytes(first + 2)} bytes"], timeout=20_000)
    expect(titles["mlstm"]).to_have_text(["mLSTM: 2,376 bytes"])
    expect(page.get_by_text(f"after token {first + 2}.", exact=False).first).to_be_visible()
    page.set_viewport_size({"width": 1400, "height": 1250})
    screenshot_from(page, "h3", "2 · The memory itself", DOCS / "state-capacity.png", margin_px=70)
    assert page.locator("[data-testid='stException']").count() == 0
