"""Controls that answer in the browser (rnnviz.ui.kit.instant), in a real browser: a move shows its stop with no
script run, the address follows it, and the page opened anew at that address (a full server run at the setting)
shows the same numbers, equations and figures."""

import json

import numpy as np
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from rnnviz.charlm.corpus import load_builtin
from rnnviz.lessons import gradients
from rnnviz.lessons.stacked import StackConfig, computation_order, run_stack
from rnnviz.lessons.unroll import UnrollConfig, unroll
from rnnviz.ui.kit.models import held_out_text
from tests.e2e.harness import APP_IDLE, open_app_page, wait_idle
from tests.figure_helpers import numbers

# The app's script states from now on, and (a control's key given) each stop the control shows with the states
# seen before it.
WATCH = """(key) => {
    const app = document.querySelector("[data-testid='stApp']");
    const seen = window.__instant = {states: [], shown: []};
    new MutationObserver(() => seen.states.push(app.getAttribute('data-test-script-state')))
        .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
    const root = key && document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
    if (root) new MutationObserver(() => seen.shown.push([root.dataset.shown, [...seen.states]]))
        .observe(root, {attributes: true, attributeFilter: ['data-shown']});
}"""

# What the control's view and its charts show: the stop, the stepper's caption, the numbers under their labels' TeX,
# every equation's TeX, the sentences' words, each coloured window's legend, characters, colours and tooltips, what
# the blocks that follow the control elsewhere show (kit.instant.instant_blocks), and per chart the stop it draws,
# every text drawn in its SVG, and its traces, annotations and shapes.
READ = """(key) => {
    const tex = el => [...el.querySelectorAll('annotation[encoding="application/x-tex"]')].map(a => a.textContent);
    const words = el => { const copy = el.cloneNode(true); copy.querySelectorAll('.katex').forEach(k => k.remove());
                          return copy.textContent.replace(/\\s+/g, ' ').trim(); };
    const root = document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
    const view = root.querySelector('.rnnviz-instant-view');
    const charts = [...document.querySelectorAll(`[class*="st-key-${key}_figure_"] [data-testid='stPlotlyChart']`)];
    const metrics = el => [...el.querySelectorAll('.rnnviz-instant-metric')].map(m => [
        tex(m).join(' ') || m.querySelector('.rnnviz-instant-metric-label').textContent,
        m.querySelector('.rnnviz-instant-metric-value').textContent]);
    const followers = [...document.querySelectorAll(`[class*="st-key-${key}_figure_"] .rnnviz-instant-follower`)];
    return {
        shown: root.dataset.shown,
        caption: words(root.querySelector('.rnnviz-instant-control')),
        metrics: metrics(view),
        equations: tex(view),
        words: words(view),
        colourings: [...view.querySelectorAll('.rnnviz-instant-colouring')].map(box => {
            const spans = [...box.querySelectorAll('.rnnviz-instant-coloured span')];
            return {legend: box.querySelector('.rnnviz-instant-legend').textContent,
                    text: box.querySelector('.rnnviz-instant-coloured').textContent,
                    colours: spans.map(span => `${span.style.background}/${span.style.color}`),
                    titles: spans.map(span => span.title)};
        }),
        followers: followers.map(f => ({shown: f.dataset.index, metrics: metrics(f), equations: tex(f),
                                         words: words(f)})),
        charts: charts.map(chart => {
            const gd = chart.querySelector('.js-plotly-plot');
            const plain = v => v && ArrayBuffer.isView(v) ? Array.from(v) : v;
            return {shown: chart.dataset.instantShown, alt: chart.getAttribute('aria-label'),
                    // plotly may draw a table's cells in another order of its SVG elements: compared as a set
                    texts: [...chart.querySelectorAll('.main-svg text')].map(t => t.textContent).sort(),
                    traces: gd.data.map(t => JSON.stringify([t.type, plain(t.x), plain(t.y), plain(t.z), t.text,
                                                            t.cells && t.cells.values])),
                    annotations: (gd.layout.annotations || []).map(a => a.text),
                    shapes: JSON.stringify(gd.layout.shapes || [])};
        }),
    };
}"""


# Presses the stepper's buttons and keys in one task of the page, reading after each what the control shows, the
# app's script state and the address: a move the browser answers is drawn before its handler returns.
PRESS = """([key, moves]) => {
    const app = document.querySelector("[data-testid='stApp']");
    const root = document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
    return moves.map(move => {
        if (move.startsWith('button:')) root.querySelector(`button[data-move='${move.slice(7)}']`).click();
        else document.body.dispatchEvent(new KeyboardEvent('keydown', {key: move, bubbles: true}));
        return [root.dataset.shown, app.getAttribute('data-test-script-state'), window.location.search];
    });
}"""


def read(page, key: str) -> dict:
    return page.evaluate(READ, key)


def shows(page, key: str, stop: str, charts: int) -> None:
    """Wait until the control and each of its ``charts`` charts show ``stop``."""
    page.wait_for_function(
        """([key, stop, charts]) => {
            const root = document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
            const drawn = [...document.querySelectorAll(`[class*="st-key-${key}_figure_"] .stPlotlyChart`)]
                .filter(chart => chart.dataset.instantShown === stop);
            return root && root.dataset.shown === stop && drawn.length === charts;
        }""", arg=[key, stop, charts], timeout=30_000)


def reported(page, query: str) -> None:
    """The server has heard of the moves: its run is over, the address holds ``query``, and every control's session
    value (the stop the server's last run drew it at) is the stop it shows."""
    try:
        page.wait_for_function(
            """(query) => window.__instant.states.includes('notRunning') && window.location.search.includes(query)
                && [...document.querySelectorAll('.rnnviz-instant:not(.rnnviz-instant-follower)')]
                    .every(root => root.dataset.server === root.dataset.shown)""",
            arg=query, timeout=30_000)
    except PlaywrightTimeout:
        raise AssertionError(f"no report: {page.evaluate('() => window.__instant')} at {page.url}") from None
    page.wait_for_selector(APP_IDLE)


def opened_anew(page, base_url: str, key: str, charts: int) -> dict:
    """The page at the address the moves left, opened in a new tab (a new session: a full server run)."""
    fresh = page.context.new_page()
    address = page.url.split("/", 3)[3]
    open_app_page(fresh, base_url, address)
    shown = read(page, key)["shown"]
    shows(fresh, key, shown, charts)
    seen = read(fresh, key)
    fresh.close()
    return seen


def test_the_hand_built_stepper_answers_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "hand-built-rnn?bits=0110")
    shows(page, "handbuilt_step", "0", 1)
    page.evaluate(WATCH)
    pressed = page.evaluate(PRESS, ["handbuilt_step", ["button:step", "button:step", "End", "ArrowLeft"]])
    # Each move is drawn, and written into the address, before its handler returns: no script run between.
    assert [stop for stop, _, _ in pressed] == ["1", "2", "4", "3"]
    assert all(state == "notRunning" for _, state, _ in pressed), pressed
    assert [search.split("t=")[-1] for _, _, search in pressed] == ["1", "2", "4", "3"]
    shows(page, "handbuilt_step", "3", 1)  # the timeline table too, in plotly's next drawing
    moved = read(page, "handbuilt_step")
    # Bits 0110 by hand: unit 1 holds x_3 = 1, unit 2 holds x_2 = 1, unit 3 the constant 1; y_3 = 1 AND 1.
    assert moved["metrics"] == [["x_{3}", "1"], ["h_{2}", "(1, 0, 1)"], ["h_{3}", "(1, 1, 1)"], ["y_{3}", "1"]]
    assert "time step t = 3 of 4" in moved["caption"]
    assert any(r"\operatorname{ReLU}(1) = 1" in equation for equation in moved["equations"])
    assert "(1, 1, 1)" in moved["charts"][0]["texts"] and moved["charts"][0]["texts"].count("✓") == 3
    reported(page, "t=3")
    assert read(page, "handbuilt_step") == moved  # the server's run changed nothing the browser shows
    assert opened_anew(page, base_url, "handbuilt_step", 1) == moved


def test_the_stacked_grid_steps_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "stacked-rnns")
    shows(page, "stacked_step", "1", 1)
    page.evaluate(WATCH)
    pressed = page.evaluate(PRESS, ["stacked_step", ["button:step"] * 3])
    assert [stop for stop, _, _ in pressed] == ["2", "3", "4"]
    assert all(state == "notRunning" for _, state, _ in pressed), pressed
    shows(page, "stacked_step", "4", 1)
    moved = read(page, "stacked_step")
    run = run_stack(StackConfig())
    layer, t = computation_order(2, 3, "layer by layer")[3]  # layer by layer: the 4th cell is layer 2, t = 1
    assert (layer, t) == (1, 0) and "Cell (layer 2, t = 1)" in moved["words"]
    written = "h_{1}^{(2)} = (" + ", ".join(f"{v:.2f}" for v in run.h[1][0]) + ")"
    assert written in moved["equations"]
    # The grid draws the numbers of the four cells computed so far (h and c of each LSTM cell), none of the rest.
    texts = " ".join(moved["charts"][0]["texts"])
    assert f"{run.h[1][0][0]:+.2f}".replace("-", "−") in texts
    assert f"{run.h[1][1][0]:+.2f}".replace("-", "−") not in texts  # cell (layer 2, t = 2) comes later
    reported(page, "cell_step=4")
    assert opened_anew(page, base_url, "stacked_step", 1) == moved


def test_the_gates_step_slider_redraws_while_it_is_dragged_and_reports_when_let_go(page, base_url):
    open_app_page(page, base_url, "lstm-gates?t=1", timeout_ms=180_000)
    shows(page, "lstm_gates_step", "1", 2)
    page.evaluate(WATCH)
    slider = page.locator(".st-key-lstm_gates_step input[type='range']")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 4, y, steps=8)  # to the last of "hello"'s five steps, button held
    shows(page, "lstm_gates_step", "5", 2)
    page.wait_for_timeout(400)  # longer than the report's quiet time: a held button still holds it back
    assert page.evaluate("() => window.__instant.states") == []
    page.mouse.up()
    moved = read(page, "lstm_gates_step")
    assert any(text.startswith("One LSTM step at t = 5") for text in moved["charts"][0]["texts"])
    reported(page, "t=5")
    expect(page.locator("[data-testid='stException']")).to_have_count(0)
    wait_idle(page)
    assert opened_anew(page, base_url, "lstm_gates_step", 2) == moved


def test_the_clipping_threshold_answers_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "gradient-decay?section=clipping")
    shows(page, "gradient_decay_threshold", "1", 1)
    page.evaluate(WATCH, "gradient_decay_threshold")
    slider = page.locator(".st-key-gradient_decay_threshold input[type='range']")
    slider.focus()
    slider.press("ArrowLeft")  # θ 1 → 0.5
    shows(page, "gradient_decay_threshold", "0.5", 1)
    (stop, states), *_ = page.evaluate("() => window.__instant.shown")
    assert stop == "0.5" and states == [], states  # shown before any script ran
    moved = read(page, "gradient_decay_threshold")
    run = gradients.train_for_clipping(gradients.ClipConfig(lr=1.0), 0.5)  # the engine's run at θ = 0.5
    assert dict(moved["metrics"])["steps clipped"] == f"{run.clipped_steps} of {len(run.grad_norms)}"
    assert "With clipping at θ = 0.5" in moved["words"]
    reported(page, "theta=0.5")
    assert opened_anew(page, base_url, "gradient_decay_threshold", 1) == moved


def test_the_explorers_window_slides_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "hidden-cell-explorer?layer=0&unit=167&q=c&window=1000", timeout_ms=180_000)
    shows(page, "explorer_window", "1,000", 0)
    page.evaluate(WATCH, "explorer_window")
    slider = page.locator(".st-key-explorer_window input[type='range']")
    slider.focus()
    slider.press("ArrowRight")  # the window's start 1,000 → 1,050
    shows(page, "explorer_window", "1,050", 0)
    (stop, states), *_ = page.evaluate("() => window.__instant.shown")
    assert stop == "1,050" and states == [], states  # shown before any script ran
    moved = read(page, "explorer_window")
    (colouring,) = moved["colourings"]
    text = held_out_text(load_builtin("python-stdlib"), 10_000)  # the text the explorer opens on
    drawn = {" ": "·", "\n": "↵", "\t": "→"}
    assert colouring["text"] == "".join(drawn.get(ch, ch) for ch in text[1050:3050])
    assert colouring["titles"][0].startswith("position 1050: ") and colouring["titles"][-1].startswith("position 3049")
    assert "characters 1,050–3,049" in colouring["legend"]
    reported(page, "window=1050")
    assert opened_anew(page, base_url, "explorer_window", 0) == moved


def test_unrollings_t_redraws_the_network_the_bars_and_the_check_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "unrolling-bptt")
    shows(page, "unroll_steps", "6", 2)
    page.evaluate(WATCH, "unroll_steps")
    slider = page.locator(".st-key-unroll_steps input[type='range']")
    slider.focus()
    for _ in range(3):
        slider.press("ArrowRight")  # T 6 → 9
    shows(page, "unroll_steps", "9", 2)
    assert all(states == [] for _, states in page.evaluate("() => window.__instant.shown"))  # no script ran
    moved = read(page, "unroll_steps")
    result = unroll(UnrollConfig(steps=9))  # the engine's network at T = 9 (checked against autograd in test_unroll)
    (check,) = moved["followers"]
    assert check["shown"] == "7" and dict(check["metrics"])["loss L"] == f"{result.loss:.4f}"
    assert any(r"\text{(autograd)}" in equation for equation in check["equations"])
    graph, bars = moved["charts"]
    assert all(f"{norm:.2f}" in graph["texts"] for norm in result.jacobian_norms)
    (trace,) = (json.loads(trace) for trace in bars["traces"])
    np.testing.assert_allclose(numbers(trace[2]), result.step_grad_norms, rtol=1e-9)  # y: each step's ‖∂L/∂W_hh|_t‖
    reported(page, "T=9")
    assert opened_anew(page, base_url, "unroll_steps", 2) == moved
