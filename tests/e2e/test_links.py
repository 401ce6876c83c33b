"""Shareable links in a real browser: an address with settings opens each page with them, a bad or unknown
value falls back to its default with a notice, and "Copy link" offers the address of what is shown."""

import math
from urllib.parse import parse_qs, quote, unquote_plus, urlsplit

from playwright.sync_api import expect

from rnnviz.figures.gradients import sci
from rnnviz.figures.handbuilt import fmt, fmt_vector
from rnnviz.lessons import gates, gradients
from rnnviz.lessons.handbuilt import HandConfig, format_bits, run_handbuilt
from tests.e2e.harness import ROOT, open_app_page, wait_idle
from tests.e2e.test_gradients_gates import metric, no_exception, shows


def slider_value(page, label: str) -> str:
    """The value a slider shows above its thumb."""
    slider = page.locator("[data-testid='stSlider']").filter(has_text=label)
    return slider.locator("[data-testid='stSliderThumbValue']").inner_text().strip()


def copied_link(page, raw: bool = False) -> str:
    """Open the "Copy link" popover and read the address it offers (decoded, unless ``raw``)."""
    page.get_by_role("button", name="Copy link").click()
    code = page.locator("[data-testid='stPopoverBody'] code")
    code.wait_for()
    text = code.inner_text().strip()
    return text if raw else unquote_plus(text)


def test_hand_built_link_restores_the_bits_and_the_step(page, base_url):
    open_app_page(page, base_url, "hand-built-rnn?bits=0110&t=3")
    step = run_handbuilt(HandConfig(bits=(0, 1, 1, 0))).steps[2]
    values = page.locator(".rnnviz-instant-metric-value")  # x_3, h_2, h_3 and y_3, drawn under the stepper
    expect(values).to_have_text([str(step.x_t), fmt_vector(step.h_prev, 2), fmt_vector(step.h_t, 2),
                                 fmt(step.y_t, 2)])
    expect(page.locator(".rnnviz-instant-control").get_by_text("time step t = 3 of 4")).to_be_visible()
    assert page.get_by_role("textbox", name="Input bits").input_value() == format_bits((0, 1, 1, 0))
    assert copied_link(page).endswith("/hand-built-rnn?bits=0110&t=3")
    assert no_exception(page)


def test_gradient_decay_link_restores_sigma_and_k_and_a_bad_one_is_noticed(page, base_url):
    open_app_page(page, base_url, "gradient-decay?sigma=0.95&K=100")
    curve = gradients.power_curve(gradients.PowerConfig(hidden=64, sigma=0.95, steps=100))
    shows(page, "measured ‖W_hhᴷ v‖ after K = 100", sci(curve.measured[-1]))
    assert slider_value(page, "σ₁, the largest singular value") == "0.95"
    copied = urlsplit(copied_link(page))
    assert copied.path == "/gradient-decay"
    assert parse_qs(copied.query) == parse_qs(
        "section=powers&sigma=0.95&K=100&H=64&matrix=symmetric&v=top&x_scale=1&w_ih=1&overlay=0.95,1.0&log=1&theta=1.0"
        "&lr=1.0&b_f=5")  # every setting of every section, at the page's defaults but σ₁ and K

    open_app_page(page, base_url, "gradient-decay?sigma=7&K=ten")
    notice = page.locator("[data-testid='stAlertContentWarning']").filter(has_text="not valid")
    expect(notice).to_contain_text("sigma=7")
    expect(notice).to_contain_text("K=ten")
    assert slider_value(page, "σ₁, the largest singular value") == "1.05"
    assert slider_value(page, "K = T, the number of steps") == "150"
    assert no_exception(page)


def test_gates_link_restores_the_gate_sliders(page, base_url):
    open_app_page(page, base_url, "lstm-gates?f=0.25&i=1.00&g=0.20&o=0.50", timeout_ms=180_000)
    trace = gates.OneNumber(0.8, 0.25, 1.0, 0.2, 0.5)
    shows(page, "c_t, the new cell", f"{trace.c_t:.3f}")  # 0.25·0.8 + 1·0.2 = 0.400
    shows(page, "h_t, what is exposed", f"{trace.h_t:.3f}")  # 0.5·tanh(0.4)
    assert math.isclose(trace.h_t, 0.5 * math.tanh(0.4))
    assert slider_value(page, "forget gate f") == "0.25"
    assert "f=0.25" in copied_link(page)
    assert no_exception(page)


def test_explorer_link_restores_the_model_and_the_cell(page, base_url):
    open_app_page(page, base_url, "hidden-cell-explorer?model=pretrained:lstm-english-docs&layer=0&unit=7&q=c",
                  timeout_ms=180_000)
    assert page.get_by_role("combobox", name="Model", exact=True).input_value().startswith(
        "Shipped: lstm-english-docs")
    assert page.get_by_role("spinbutton", name="Unit", exact=True).input_value() == "7"
    expect(page.get_by_text("layer 0, unit 7, c", exact=True).first).to_be_visible()
    link = copied_link(page)
    assert "model=pretrained:lstm-english-docs" in link and "unit=7" in link and "q=c" in link
    assert parse_qs(urlsplit(link).query)["window"][0].isdigit(), link  # the colouring's window start
    assert no_exception(page)


def test_live_training_link_restores_the_preset_and_offers_its_own(page, base_url):
    preset = "Python code (3 min)"
    open_app_page(page, base_url, f"char-model-training?preset={quote(preset)}")
    assert page.get_by_role("combobox", name="Preset", exact=True).input_value() == preset
    assert page.get_by_role("combobox", name="Built-in corpus", exact=True).input_value().startswith(
        "Python stdlib code")
    link = copied_link(page, raw=True)
    assert unquote_plus(link).endswith(f"/char-model-training?preset={preset}")
    fresh = page.context.new_page()  # the copied address as it is, in a new tab (a new session)
    fresh.goto(link)
    fresh.wait_for_selector("h1")
    wait_idle(fresh)
    assert fresh.get_by_role("combobox", name="Preset", exact=True).input_value() == preset
    assert metric(fresh, "Parameters").inner_text() != "—"
    assert no_exception(page) and no_exception(fresh)


# The sizes of each kind of text in section 1's chart (kit.instant_chart, drawn in the browser): its axes' and
# note's (SVG text), its legend's and the numbers' under it.
TEXT_SIZES = """() => Object.fromEntries(
    [['svg text', '.instant-chart svg[role=img] text'], ['legend', '.instant-chart .legend'],
     ['number labels', '.instant-chart .number .label'], ['numbers', '.instant-chart .number .value']]
    .map(([kind, selector]) => [kind, [...new Set([...document.querySelectorAll('.stBidiComponent *')]
        .filter(host => host.shadowRoot).flatMap(host => [...host.shadowRoot.querySelectorAll(selector)])
        .map(t => parseFloat(getComputedStyle(t).fontSize)).filter(size => size > 0))].sort((a, b) => a - b)]))"""


def test_a_presenting_link_draws_the_page_for_a_room_with_the_named_control_hidden(page, base_url):
    """?present=1&hide=sigma at a projector's 1400 × 900: no sidebar, text and figure labels 1.25 times larger, the σ₁
    slider hidden (K stays), and the Presenting switch at the top brings the usual page back."""
    page.set_viewport_size({"width": 1400, "height": 900})
    open_app_page(page, base_url, "gradient-decay?sigma=1.1")
    page.locator(".instant-chart[data-shown='1.1']").wait_for()
    usual_sizes = page.evaluate(TEXT_SIZES)
    page.goto(f"{base_url}/gradient-decay?present=1&hide=sigma&sigma=1.1", wait_until="domcontentloaded")
    page.wait_for_selector("h1")
    wait_idle(page)
    switch = page.locator(".st-key-presenting_switch").get_by_role("switch")
    expect(switch).to_be_checked()
    expect(page.locator("[data-testid='stSidebar']")).to_be_hidden()
    assert page.evaluate("() => getComputedStyle(document.documentElement).fontSize") == "20px"
    sliders = page.locator("[data-testid='stSlider']")
    expect(sliders.filter(has_text="σ₁, the largest singular value")).to_be_hidden()
    expect(sliders.filter(has_text="K = T, the number of steps")).to_be_visible()
    # The hidden slider's value still applies (the link set it), and every label of the figure is 1.25 times the
    # size it has on the usual page.
    curve = gradients.power_curve(gradients.PowerConfig(hidden=64, sigma=1.1, steps=150))
    shows(page, "measured ‖W_hhᴷ v‖ after K = 150", sci(curve.measured[-1]))
    room_sizes = page.evaluate(TEXT_SIZES)
    assert all(usual_sizes.values()), usual_sizes  # axes and note, legend and numbers each have a size
    assert room_sizes == {kind: [size * 1.25 for size in sizes] for kind, sizes in usual_sizes.items()}, (
        usual_sizes, room_sizes)
    page.screenshot(path=str(ROOT / "docs" / "screenshots" / "presenting-gradient-decay.png"))  # the README's
    link = copied_link(page)
    assert "hide=sigma" in link and "present" not in link, link
    page.keyboard.press("Escape")
    assert no_exception(page)

    page.locator(".st-key-presenting_switch").get_by_text("Presenting").click()
    expect(page.locator("[data-testid='stSidebar']")).to_be_visible()
    expect(switch).not_to_be_checked()
    assert page.evaluate("() => getComputedStyle(document.documentElement).fontSize") == "16px"
    expect(sliders.filter(has_text="σ₁, the largest singular value")).to_be_hidden()  # hide= still in the link
    page.wait_for_function("() => !location.search.includes('present=')")


def test_memory_experiments_takes_back_the_address_it_writes(page, base_url):
    """The address the page writes (what F5 reloads and a copied link holds) reopens it with no notice."""
    open_app_page(page, base_url, "memory-experiments")
    page.wait_for_function("() => location.search.includes('b_f=')")
    written = page.evaluate("() => location.href")
    open_app_page(page, base_url, written.split("/", 3)[3])
    expect(page.get_by_text("not valid")).to_have_count(0)
    assert no_exception(page) and "b_f=2" in copied_link(page)
