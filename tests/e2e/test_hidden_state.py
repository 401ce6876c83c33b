"""The hidden-state page in a real browser at 1400 × 900: four carried states with their sizes (RNN, LSTM, minGRU,
Transformer, in two rows of two) right under the t slider that moves them, the Transformer's attention map, a step
of the slider, and the memory probe with its plot. The screenshot of the carried states goes to
docs/screenshots/hidden-state.png."""

from playwright.sync_api import expect

from tests.e2e.harness import ROOT, open_app_page, screenshot_from, screenshot_whole_page, wait_idle

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 120_000  # loads the shipped models and builds the bottleneck plot once per process
# The t slider answers in the browser: the four models' columns are drawn in its view (kit.instant), in this order.
T_SLIDER = ".st-key-hidden_state_t .rnnviz-instant-range"
COLUMNS = ".st-key-hidden_state_t_instant .rnnviz-instant-column"
MODELS = ("RNN", "LSTM", "minGRU", "Transformer")


def step_t(page, presses: int = 1) -> None:
    """Move t by keyboard, as a user would."""
    slider = page.locator(T_SLIDER)
    slider.focus()
    for _ in range(presses):
        slider.press("ArrowRight")


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def test_step_through_a_sentence_see_four_states_attention_and_the_probe(page, base_url):
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    assert no_exception(page)
    main = page.locator("[data-testid='stMain']")
    for name in ("RNN", "LSTM", "minGRU", "Transformer"):
        expect(main.locator("strong", has_text=name).first).to_be_visible()
    expect(main.get_by_text("bytes", exact=False).first).to_be_visible()
    # four carried states, each with its size in numbers and bytes, each with its heat strip
    expect(main.locator("strong").filter(has_text=" bytes")).to_have_count(4)
    expect(main.locator(COLUMNS)).to_have_count(4)
    expect(main.get_by_text("what it writes cannot depend on what it already holds", exact=False)).to_be_visible()
    # two rows of two: the minGRU sits under the RNN, the Transformer under the LSTM
    boxes = {name: main.locator(COLUMNS).nth(i).bounding_box() for i, name in enumerate(MODELS)}
    assert boxes["minGRU"]["y"] > boxes["RNN"]["y"] + boxes["RNN"]["height"] - 1
    assert abs(boxes["minGRU"]["x"] - boxes["RNN"]["x"]) < 2 and boxes["LSTM"]["x"] > boxes["RNN"]["x"] + 300
    assert boxes["RNN"]["width"] > 400  # half the main column at 1400 px (about 460 px), not a quarter
    expect(main.get_by_text("The Transformer's attention at t")).to_be_visible()
    step_t(page, presses=3)
    assert no_exception(page)
    expect(main.get_by_text("Row (layer, head): how much position t = 15")).to_be_visible()
    # the attention at t = 15 reads s = 0…15: one cell per (layer, head) and character, its weight on hover
    expect(main.locator(".st-key-hidden_state_t_figure_attention td")).to_have_count(2 * 4 * 16)
    wait_idle(page)
    page.get_by_role("button", name="Fit the probes").click()
    wait_idle(page, timeout_ms=120_000)
    expect(main.get_by_text("Dashed grey: always answering")).to_be_visible(timeout=120_000)
    assert no_exception(page)
    # What the class sees first: the carried states with their sizes, on a 1400 × 900 screen.
    main.get_by_text("What each model carries into step t+1", exact=True).scroll_into_view_if_needed()
    screenshot_from(page, "h3", "What each", DOCS / "hidden-state.png", margin_px=70)
    screenshot_whole_page(page, "hidden-state-whole")


def test_the_t_slider_sits_right_above_the_four_strips_it_moves(page, base_url):
    """At 1400 × 900, with the section's heading at the top of the screen, the t slider and all four carried
    states are on the screen together, the slider above them; a step of t changes the strips in place."""
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                  " const h = [...m.querySelectorAll('h3')].find(e => e.textContent.startsWith('What each'));"
                  " m.scrollTop += h.getBoundingClientRect().top - 70; }")
    page.wait_for_timeout(300)
    slider = main.locator(".st-key-hidden_state_t .rnnviz-instant-control").bounding_box()
    height = page.viewport_size["height"]
    assert 0 <= slider["y"] and slider["y"] + slider["height"] <= height
    for i, name in enumerate(MODELS):
        box = main.locator(COLUMNS).nth(i).bounding_box()
        assert box["y"] > slider["y"] + slider["height"], name  # below the slider
        assert box["y"] + box["height"] <= height, f"the {name}'s strips run off the screen"
    before = main.locator(COLUMNS).nth(3).locator("img").first.get_attribute("src")
    step_t(page)
    expect(main.get_by_text("Read so far (t = 13)")).to_be_visible()
    expect(main.locator(COLUMNS).nth(3).locator("img").first).not_to_have_attribute("src", before)
    assert no_exception(page)


def test_click_a_character_to_see_who_attends_to_it(page, base_url):
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    strip = page.locator(".st-key-hidden_state_strip")
    strip.scroll_into_view_if_needed()
    expect(strip.locator(".points path").first).to_be_attached(timeout=60_000)
    box = strip.locator(".points path").nth(4).bounding_box()  # "The function…": s = 4 is the "f"
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(main.get_by_text("can read s = 4 ('f')", exact=False)).to_be_visible(timeout=60_000)
    # the click goes through the server, and the s slider, which answers in the browser, takes it
    expect(page.locator(".st-key-hidden_state_s_instant .rnnviz-instant")).to_have_attribute("data-shown", "4: 'f'")
    wait_idle(page, timeout_ms=60_000)
    expect(main.get_by_text("later character t that reads s = 4", exact=False)).to_be_attached()
    assert no_exception(page)
    # a slot takes another model: the slot menus are in the models' expander
    main.get_by_text("The models: shipped, live-trained, uploaded or raced").click()
    expect(main.get_by_text("Transformer slot")).to_be_visible()
    uploader = page.locator(".st-key-hidden_state_upload input[type='file']")
    uploader.set_input_files(files=[{"name": "not-a-model.pt", "mimeType": "application/octet-stream",
                                     "buffer": b"PK\x03\x04 not a checkpoint"}])
    expect(main.locator("[data-testid='stAlertContentError']").first).to_be_visible(timeout=60_000)
    assert no_exception(page)
    uploader.set_input_files(str(ROOT / "rnnviz" / "assets" / "models" / "rnn-english-docs.pt"))
    expect(main.get_by_text("parameters, uploaded)", exact=False)).to_be_visible(timeout=60_000)  # the RNN column
    wait_idle(page, timeout_ms=60_000)
    expect(main.locator("[data-testid='stAlertContentError']")).to_have_count(0)
    assert no_exception(page)


def test_connectivity_over_a_held_out_passage_draws_a_line_per_model_and_says_what_it_shows(page, base_url):
    """The button measures every 4th prediction of the passage for the four shipped models: one line each, and the
    sentence under them. Writes docs/screenshots/connectivity.png for the README."""
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    button = main.get_by_role("button", name="Measure over the passage")
    button.scroll_into_view_if_needed()
    button.click()
    caption = main.get_by_text("characters back, the RNN's prediction keeps on average", exact=False)
    expect(caption).to_be_visible(timeout=240_000)
    wait_idle(page)
    chart = page.locator(".st-key-hidden_state_passage_connectivity")
    for name in ("RNN", "LSTM", "minGRU", "Transformer"):
        expect(chart.locator(".legendtext", has_text=name)).to_have_count(1)
    assert no_exception(page)
    screenshot_from(page, "[data-testid='stMarkdownContainer'] p", "Over a held-out passage.",
                    DOCS / "connectivity.png", margin_px=70)
