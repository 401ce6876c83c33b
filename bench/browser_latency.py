"""How fast each lesson control answers in a real browser (Chromium, 1400 × 900), against a warm server.

One server is started; every page is opened once, untimed (the server's imports, shipped models and shared figures
are built then). Then, per control (every slider, number input, select box, radio, segmented control, switch and
stepper button of the lesson pages: CONTROLS), MOVES moves to values the session has not shown yet (→ on a slider, a
click on Step or +, the next option of a choice), so that no cache hides the work; a choice of a few options comes
round to its first again. A control that cannot be measured is a row that says why, and the others go on.
The clock runs in the page's own time from the key press or pointer
press to the page's last change: the app's script state back to not-running after a run that started after the
press, every chart drawn, and nothing changed under the document for SETTLED_MS (the quiet wait itself is not
counted). Each row has the median and the worst (p95 of 5 is the worst) beside the page's rerun with nothing
changed (the "r" shortcut), timed the same way, and the 100 ms target.

Each row also says where its time went, as the page saw it: the request (the press until the app reports a run),
the run (until the app reports the run over: the server's script and the deltas it sends, as they arrive), the
drawing after it, the number of plotly charts built anew (Streamlit 1.67 mounts a new chart whenever a figure
changes: the chart's identity is a hash of its figure), and the renderer's main-thread work over the move (CDP
``Performance.getMetrics``' TaskDuration, the sum of its tasks: script, style, layout and paint). "waits for" names
the larger of the browser's own work and the rest (waiting for the server). "figure shown" is the press to the
figure's first change: a new plotly drawing, which comes after the server's run, or an instant chart
(rnnviz.ui.kit.instant_chart) redrawing in the browser from the stops it holds, before the run begins; the run that
follows (for the link and the other sections) is still in "median". Then the page is opened anew and
PROFILED_MOVES more moves run under CDP's sampling profiler, untimed: "the renderer's work" is where the renderer's
main thread spent them (where_the_renderer_works), the evidence for what a row that misses the target waits for.

A control that answers in the browser (rnnviz.ui.kit.instant: the hand-built and stacked steppers, the LSTM gates'
step t, the clipping threshold) has "answered": the press to the frame after its view and every chart that follows
it show the new stop, with no script run; the run that follows a quarter second later is its report to the server,
counted in "median" (the page settled) but not waited for, and the row is on target by what was answered. A slider
with ``drag`` is also dragged, button held: "drag" is the time from each pointer move to the frame that shows the
redrawn figure, and the row says whether a script ran before the button was let go.

`--largest` is not offered: the controls' largest sizes are set by the page's links (e.g. ``?K=300&H=64``), and
CONTROLS names them where a row measures them.

Usage: python -m bench browser_latency   (needs Debian's chromium; a few minutes)
       python -m bench.browser_latency in-browser   (the controls that answer in the browser, and those that change
       what they hold: row browser_latency_instant; ``in-browser class``: with two live runs training, row
       browser_latency_instant_class)
"""

from __future__ import annotations

import os
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from urllib.parse import quote

from bench.common import print_table
from tests.e2e.harness import APP_IDLE, CHROMIUM_ARGS, find_chromium, streamlit_server, wait_idle

MOVES = 5
SETTLED_MS = 400  # the page must stay unchanged this long for the answer to count as complete
TARGET_MEDIAN_S, TARGET_P95_S = 0.100, 0.200
VIEWPORT = {"width": 1400, "height": 900}

# Installed before the page's own scripts: the time of the last change anywhere under the document, and of
# every change of the app's script state, in the page's clock (0 = start of the navigation).
WATCH = """() => {
    window.__bench = {pressed: null, last: performance.now(), states: []};
    const watch = () => {
        new MutationObserver(() => { window.__bench.last = performance.now(); })
            .observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                                characterData: true});
        const app = document.querySelector("[data-testid='stApp']");
        if (!app) return false;
        new MutationObserver(() => window.__bench.states.push(
            [app.getAttribute("data-test-script-state"), performance.now()]))
            .observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
        return true;
    };
    const poll = () => { if (!document.querySelector("[data-testid='stApp']")) return setTimeout(poll, 5);
                         watch(); };
    if (document.documentElement) poll(); else document.addEventListener("DOMContentLoaded", poll);
}"""


@dataclass(frozen=True)
class Control:
    page: str  # the page's address, with any query that sets it up
    name: str  # the row's name
    # "slider" (→ on it, or ``press``), "button" (a click), "number" (a number input's +), "select" (a select box:
    # the next option), "radio" (the next option), "choice" (a segmented control or pills: the next button),
    # "toggle" (a click on the switch or box); a control that answers in the browser (rnnviz.ui.kit.instant):
    # "stepper" (a click on its button ``press``: "step", "back", "first" or "end"; several, in turn, as "first,end")
    # or "instant" (its slider: → on it, or ``press``)
    kind: str
    # The widget's key: its block is ``.st-key-{key}``. Several keys, or a key ending in "*" (every key that starts
    # so), name a row of buttons (First and End, the presets, "Show"): one is clicked per move, in turn.
    key: str | tuple[str, ...]
    press: str = "ArrowRight"  # the key that moves a slider (ArrowLeft where the default sits near the top)
    drag: bool = False  # also drag the slider's thumb, button held: each move's time to the redrawn figure
    opens: str | None = None  # text of a popover's button or an expander's title, clicked (untimed) when it is shut
    skip: str | None = None  # a select box's options that hold this text are not chosen

    @property
    def answers_in_browser(self) -> bool:
        return self.kind in ("stepper", "instant")

    def block(self, page, move: int = 0):
        if isinstance(self.key, tuple) or self.key.endswith("*"):
            blocks = page.locator(", ".join(f".st-key-{key}" for key in self.key) if isinstance(self.key, tuple)
                                  else f"[class*='st-key-{self.key[:-1]}']")
            return blocks.nth(move % blocks.count())
        return page.locator(f".st-key-{self.key}").first


HAND_BUILT = "hand-built-rnn?bits=0,1,1,0,1,1,1,0,0,1"
SENTENCE_END = 51  # the hidden-state page's default sentence has 52 characters
# Every slider, number input, select box, radio, segmented control and stepper button of the lesson pages that
# answers at once (not the buttons that start seconds of training: a race, a sweep, probes), one row each; where
# several controls share one code path (the hand-built RNN's 15 weights, the LSTM gates' presets, the explorer's
# "Show" buttons), one row stands for them. The first thirteen are the rows of the first table.
CONTROLS = [
    Control(HAND_BUILT, "Hand-built RNN: Step", "stepper", "handbuilt_step", press="step"),
    Control("unrolling-bptt", "Unrolling: Steps T", "instant", "unroll_steps", drag=True),
    Control("unrolling-bptt", "Unrolling: Hidden size H", "slider", "unroll_hidden"),
    Control("truncated-bptt", "Truncated BPTT: Chunk length K", "slider", "tbptt_view_chunk"),
    Control("truncated-bptt", "Truncated BPTT: Loss at step t", "instant", "tbptt_position", drag=True),
    Control("stacked-rnns", "Stacked RNNs: Step", "stepper", "stacked_step", press="step"),
    Control("gradient-decay?section=powers", "Gradient decay (powers): σ₁", "slider", "gradient_decay_sigma",
            drag=True),
    Control("gradient-decay?section=tanh", "Gradient decay (tanh′): σ₁", "slider", "gradient_decay_sigma"),
    Control("gradient-decay?section=sum", "Gradient decay (per-step sum): K", "instant", "gradient_decay_steps",
            drag=True),
    Control("gradient-decay?section=lstm", "Gradient decay (LSTM path): b_f", "slider", "gradient_decay_forget_bias",
            press="ArrowLeft", drag=True),
    Control("lstm-gates", "LSTM gates: forget gate f", "slider", "lstm_gates_f"),
    Control("hidden-state", "Hidden state: t", "instant", "hidden_state_t", drag=True),
    Control("hidden-cell-explorer", "Explorer: Unit +", "number", "explorer_unit"),
    # Home: the shared sidebar's seed and the presenting switch at the top of every page
    Control("", "Home: Seed +", "number", "seed"),
    Control("", "Home: Presenting", "toggle", "presenting"),
    Control(f"{HAND_BUILT}&t=10", "Hand-built RNN: Back", "stepper", "handbuilt_step", press="back"),
    Control(f"{HAND_BUILT}&t=5", "Hand-built RNN: First, End", "stepper", "handbuilt_step", press="first,end"),
    Control(HAND_BUILT, "Hand-built RNN: Nonlinearity", "choice", "handbuilt_phi"),
    Control(HAND_BUILT, "Hand-built RNN: a weight + (any of 15)", "number", "handbuilt_w_xh_0",
            opens="Edit the weights"),
    Control(HAND_BUILT, "Hand-built RNN: Quiz mode", "toggle", "handbuilt_quiz"),
    Control("unrolling-bptt", "Unrolling: Scale of W_hh", "slider", "unroll_gain"),
    Control("unrolling-bptt", "Unrolling: Where the loss attaches", "choice", "unroll_attach"),
    Control("truncated-bptt", "Truncated BPTT: Delay D", "slider", "tbptt_delay"),
    Control("truncated-bptt", "Truncated BPTT: Sequence length L", "slider", "tbptt_length"),
    Control("truncated-bptt", "Truncated BPTT: Training steps per run", "slider", "tbptt_steps"),
    Control("truncated-bptt", "Truncated BPTT: Chunk lengths K to train", "choice", "tbptt_chunks"),
    # (six words, twelve cells: the timed and the profiled moves each step back)
    Control("stacked-rnns?words=the+cat+sat+on+the+mat&cell_step=12", "Stacked RNNs: Back", "stepper",
            "stacked_step", press="back"),
    Control("stacked-rnns", "Stacked RNNs: Cell", "choice", "stacked_kind"),
    Control("stacked-rnns", "Stacked RNNs: Layers", "slider", "stacked_layers"),
    Control("stacked-rnns", "Stacked RNNs: Computation order", "radio", "stacked_order"),
    Control("stacked-rnns", "Stacked RNNs: width d₁ +", "number", "stacked_d1"),
    Control("gradient-decay?section=powers", "Gradient decay: Section", "choice", "gradient_decay_section"),
    Control("gradient-decay?section=powers", "Gradient decay (powers): K", "slider", "gradient_decay_steps"),
    Control("gradient-decay?section=powers", "Gradient decay (powers): H", "slider", "gradient_decay_hidden",
            opens="More:"),
    Control("gradient-decay?section=powers", "Gradient decay (powers): W_hh", "radio", "gradient_decay_matrix",
            opens="More:"),
    Control("gradient-decay?section=powers", "Gradient decay (powers): Start vector v", "radio",
            "gradient_decay_vector", opens="More:"),
    Control("gradient-decay?section=tanh", "Gradient decay (tanh′): K", "slider", "gradient_decay_steps"),
    Control("gradient-decay?section=tanh", "Gradient decay (tanh′): input scale", "slider",
            "gradient_decay_input_scale", opens="More:"),
    Control("gradient-decay?section=tanh", "Gradient decay (tanh′): input weight scale", "slider",
            "gradient_decay_input_weight", opens="More:"),
    Control("gradient-decay?section=sum", "Gradient decay (per-step sum): log scale", "toggle",
            "gradient_decay_log_bars"),
    Control("gradient-decay?section=clipping", "Gradient decay (clipping): threshold θ", "instant",
            "gradient_decay_threshold", drag=True),
    Control("gradient-decay?section=clipping", "Gradient decay (clipping): learning rate", "slider",
            "gradient_decay_lr"),
    Control("lstm-gates", "LSTM gates: input gate i", "slider", "lstm_gates_i", press="ArrowLeft"),
    Control("lstm-gates", "LSTM gates: candidate g", "slider", "lstm_gates_g"),
    Control("lstm-gates", "LSTM gates: output gate o", "slider", "lstm_gates_o",
            press="ArrowLeft"),
    Control("lstm-gates", "LSTM gates: a preset (any of 4)", "button", "lstm_gates_preset_*"),
    Control("lstm-gates", "LSTM gates: H, hidden size", "slider", "lstm_gates_hidden"),
    Control("lstm-gates", "LSTM gates: step t", "instant", "lstm_gates_step", press="ArrowLeft", drag=True),
    # (not the Tiny Shakespeare model: without the corpus on disk, choosing it sends the box back to the model before)
    Control("lstm-gates", "LSTM gates: model", "select", "lstm_gates_model", skip="tiny-shakespeare"),
    Control("lstm-gates", "LSTM gates: text", "radio", "lstm_gates_text_source"),
    Control("hidden-state", "Hidden state: s, the character attended to", "instant", "hidden_state_s", drag=True),
    Control(f"hidden-state?ct={SENTENCE_END - 10}", "Hidden state: t of the connectivity", "instant",
            "hidden_state_connectivity_t", drag=True),
    Control("hidden-cell-explorer", "Explorer: Quantity", "select", "explorer_quantity"),
    Control("hidden-cell-explorer", "Explorer: a ranked cell's Show (any of 10)", "button", "explorer_show_*"),
    Control("hidden-cell-explorer", "Explorer: Window start", "instant", "explorer_window"),
    Control("image-captioning", "Captioning: Background", "select", "cap_bg"),
    Control("image-captioning", "Captioning: Shape at left", "select", "cap_shape_left"),
    Control("image-captioning", "Captioning: Colour at left", "select", "cap_colour_left"),
    Control("image-captioning", "Captioning: Size at left", "select", "cap_size_left"),
    Control("image-captioning", "Captioning: Random scene", "button", "cap_random"),
    Control("image-captioning", "Captioning: Decoding", "radio", "cap_method"),
    Control("image-captioning?decoding=beam%20search", "Captioning: Beam width", "slider", "cap_beam"),
    Control("image-captioning", "Captioning: Word t", "instant", "cap_t", drag=True),
]

# Also notes when the figure first shows the move: a new plotly drawing (its .main-svg added under the document), or
# an instant chart (kit.instant_chart, in its own shadow root, which the document's observers do not see) naming a
# new stop. For a control that answers in the browser (kit.instant, its key given), also when it has answered: the
# frame after its view and every chart that follows it show the same new stop.
ARM = """(key) => { window.__bench.pressed = null; window.__bench.figure = null; window.__bench.answered = null;
    window.__bench.working = null;
    const figureNow = () => { if (window.__bench.pressed !== null) window.__bench.figure ??= performance.now(); };
    window.__benchFigureWatch?.forEach(watch => watch.disconnect());
    const plotly = new MutationObserver(records => {
        if (records.some(r => [...r.addedNodes].some(n => n.nodeType === 1
                && (n.matches('.main-svg') || n.querySelector('.main-svg'))))) figureNow(); });
    plotly.observe(document.body, {subtree: true, childList: true});
    window.__benchFigureWatch = [plotly, ...[...document.querySelectorAll('.stBidiComponent *')]
        .filter(host => host.shadowRoot && host.shadowRoot.querySelector('.instant-chart'))
        .map(host => { const watch = new MutationObserver(figureNow);
            watch.observe(host.shadowRoot.querySelector('.instant-chart'),
                          {attributes: true, attributeFilter: ['data-shown']});
            return watch; })];
    // The page marked as working (app.browser: a run that a move started), the first frame it shows it.
    const working = new MutationObserver(() => {
        if (window.__bench.pressed !== null && document.documentElement.dataset.rnnvizWorking)
            window.__bench.working ??= performance.now(); });
    working.observe(document.documentElement, {attributes: true, attributeFilter: ['data-rnnviz-working']});
    window.__benchFigureWatch.push(working);
    const root = key && document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
    if (root) {
        const before = root.dataset.shown;
        const charts = () => [...document.querySelectorAll(`[class*="st-key-${key}_figure_"] .stPlotlyChart`)];
        const answered = () => {
            const b = window.__bench;
            if (b.pressed === null || b.answered !== null || root.dataset.shown === before) return;
            if (charts().every(chart => chart.dataset.instantShown === root.dataset.shown)) {
                figureNow();
                requestAnimationFrame(() => { b.answered ??= performance.now(); });
            }
        };
        const watch = new MutationObserver(answered);
        watch.observe(root, {attributes: true, attributeFilter: ['data-shown']});
        charts().forEach(chart => watch.observe(chart, {attributes: true, attributeFilter: ['data-instant-shown']}));
        window.__benchFigureWatch.push(watch);
    }
    for (const chart of document.querySelectorAll('.js-plotly-plot')) chart.__benchSeen = true;
    for (const kind of ["keydown", "pointerdown"])
        document.addEventListener(kind, () => { window.__bench.pressed ??= performance.now(); },
                                  {capture: true, once: true}); }"""

# Seconds from the press to the page's last change, once a run has started after the press and ended, every chart
# is drawn and nothing has changed for settledMs; else null.
SETTLED = """(settledMs) => {
    const b = window.__bench;
    if (b.pressed === null) return null;
    // A quick run can go from "rerunRequested" straight back to "notRunning": either state counts as a start.
    const ran = b.states.some(([state, at]) => (state === "running" || state === "rerunRequested")
                                               && at >= b.pressed);
    const app = document.querySelector("[data-testid='stApp']");
    const idle = app.getAttribute("data-test-script-state") === "notRunning";
    const drawn = [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
        .every(chart => chart.querySelector('.main-svg') !== null);
    if (!ran || !idle || !drawn || performance.now() - b.last < settledMs) return null;
    const ended = b.states.filter(([state, at]) => state === "notRunning" && at >= b.pressed).map(([, at]) => at);
    const started = b.states.filter(([state, at]) => state !== "notRunning" && at >= b.pressed).map(([, at]) => at);
    const charts = [...document.querySelectorAll('.js-plotly-plot')];
    return [(b.last - b.pressed) / 1000, (Math.max(...ended) - b.pressed) / 1000,
            (Math.min(...started) - b.pressed) / 1000, charts.filter(chart => !chart.__benchSeen).length,
            b.figure === null ? null : (b.figure - b.pressed) / 1000,
            b.answered === null ? null : (b.answered - b.pressed) / 1000,
            b.working === null ? null : (b.working - b.pressed) / 1000];
}"""


@dataclass(frozen=True)
class Move:
    """One move, in seconds from the press (``charts``: plotly charts built anew; ``busy_s``: renderer work)."""
    settled_s: float
    run_ended_s: float
    run_started_s: float
    charts: int
    figure_s: float | None  # the press to the figure first showing the move (None: no figure changed)
    answered_s: float | None  # a control that answers in the browser: the press to its view and figures showing it
    working_s: float | None  # the press to the page marked as working for the move's run (None: never marked)
    busy_s: float


def _busy_s(cdp) -> float:
    """The renderer's main-thread task time so far, in seconds."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


# The wait runs in the page (a 10 ms timer), not as a poll from Python: a CDP call every 20 ms would itself add
# 20–30 ms of main-thread work to every move's figure.
WAIT_SETTLED = f"""async ([settledMs, timeoutMs]) => {{
    const settled = {SETTLED};
    const start = performance.now();
    for (;;) {{
        const elapsed = settled(settledMs);
        if (elapsed !== null || performance.now() - start > timeoutMs) return elapsed;
        await new Promise(resolve => setTimeout(resolve, 10));
    }}
}}"""


# What the page is waiting for, for the message of a move that never settled.
WHY_NOT_SETTLED = """() => {
    const b = window.__bench, app = document.querySelector("[data-testid='stApp']");
    return JSON.stringify({pressed: b.pressed, states: b.states.filter(([, at]) => at >= (b.pressed ?? 0)).slice(-6),
        now: app.getAttribute("data-test-script-state"), quiet_ms: Math.round(performance.now() - b.last),
        undrawn: [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
            .filter(chart => chart.querySelector('.main-svg') === null).length});
}"""


def _settled(page, cdp, busy_before: float, timeout_s: float = 60.0) -> Move:
    """The move that was pressed: when the page settled, the run's start and end, charts built, renderer work."""
    elapsed = page.evaluate(WAIT_SETTLED, [SETTLED_MS, timeout_s * 1000])
    if elapsed is None:
        raise TimeoutError(f"the page did not settle within {timeout_s:.0f} s: {page.evaluate(WHY_NOT_SETTLED)}")
    # The quiet wait's timer adds a little task time of its own (about 1 ms): counted, not subtracted.
    return Move(*elapsed, busy_s=_busy_s(cdp) - busy_before)


def _open(page, url: str, address: str) -> None:
    page.goto(f"{url}/{address}", wait_until="commit")
    page.wait_for_selector(APP_IDLE, timeout=240_000)
    wait_idle(page, 240_000)
    page.wait_for_timeout(SETTLED_MS)
    if page.locator("[data-testid='stException']").count():
        raise RuntimeError(f"{address} raised an exception")


def _next_of(options, chosen) -> int:
    """The index of the option after the chosen one (wrapping round), so that moves cycle through the options."""
    return (chosen + 1) % options if chosen >= 0 else 0


# Resolves once the main block's scroll position has held for two frames in a row.
SCROLL_STILL = """() => new Promise(resolve => {
    const main = document.querySelector('[data-testid=stMain]');
    let last = main.scrollTop, still = 0;
    const look = () => { still = main.scrollTop === last ? still + 1 : 0; last = main.scrollTop;
                         still >= 2 ? resolve() : requestAnimationFrame(look); };
    requestAnimationFrame(look);
})"""


def _bring_into_view(page, block) -> None:
    """Scroll the control into view and let the scroll end, untimed, as a user's wheel does before the click. A
    scroll event arriving just after a select box opened its list closed the list again (Playwright scrolls and
    clicks in one go): the LSTM gates' model box, far down its page, then never got its choice."""
    block.scroll_into_view_if_needed()
    page.evaluate(SCROLL_STILL)


def _move(page, cdp, control: Control, move: int = 0) -> Move:
    """One move of the control to a value it has not had (or, for a choice of a few, the next one round), timed
    until the page has settled. The clock starts at the press that changes the value: opening a select box's list
    is not timed, choosing from it is."""
    page.wait_for_selector(APP_IDLE)
    watched = control.key if control.answers_in_browser else None
    block = control.block(page, move)
    if control.opens and not block.is_visible():
        page.locator("button, summary").filter(has_text=control.opens).first.click()
        block.wait_for(state="visible")
    _bring_into_view(page, block)
    page.evaluate(ARM, watched)
    if control.kind == "stepper":
        presses = control.press.split(",")
        button = block.locator(f"button[data-move='{presses[move % len(presses)]}']")
        busy_before = _busy_s(cdp)
        button.click()
    elif control.kind in ("slider", "instant"):
        thumb = block.get_by_role("slider").first
        thumb.focus()
        page.evaluate(ARM, watched)  # focusing can itself be a key or pointer event in some builds: arm again
        now, low, high = (float(x) for x in thumb.evaluate("range => [range.value, range.min, range.max]"))
        press = control.press
        if (press == "ArrowRight" and now >= high) or (press == "ArrowLeft" and now <= low):  # at its end: back
            press = "ArrowLeft" if press == "ArrowRight" else "ArrowRight"
        busy_before = _busy_s(cdp)
        thumb.press(press)
    elif control.kind == "button":
        busy_before = _busy_s(cdp)
        block.locator("button").first.click()
    elif control.kind == "number":
        busy_before = _busy_s(cdp)
        up = block.locator("[data-testid='stNumberInputStepUp']")
        if up.count() and up.is_visible():
            (up if up.is_enabled() else block.locator("[data-testid='stNumberInputStepDown']")).click()
        else:  # a narrow input without + and −: a new value typed in, sent with Enter (the press timed)
            field = block.locator("input")
            value, step, high = (float(x or "inf") for x in field.evaluate("box => [box.value, box.step, box.max]"))
            field.fill(f"{value + step if value + step <= high else value - step:g}")
            page.evaluate(ARM, watched)
            busy_before = _busy_s(cdp)
            field.press("Enter")
    elif control.kind == "select":
        box = block.get_by_role("combobox")
        current = box.input_value().strip()
        block.locator("[data-testid='stSelectbox']").click()  # opens the whole list (untimed: armed again below)
        options = page.get_by_role("option")
        options.first.wait_for()
        page.wait_for_timeout(100)  # the list is drawn in a frame or two: read it whole
        texts = [text for text in dict.fromkeys(text.strip() for text in options.all_inner_texts())
                 if not (control.skip and control.skip in text) or text == current]
        following = texts[_next_of(len(texts), texts.index(current) if current in texts else -1)]
        if following == current:
            raise RuntimeError(f"{control.name}: no other option than {current!r} in {texts}")
        option = page.get_by_role("option", name=following, exact=True).first
        page.evaluate(ARM, watched)
        busy_before = _busy_s(cdp)
        option.click()
    elif control.kind == "radio":
        radios = block.get_by_role("radio")
        chosen = next((i for i in range(radios.count()) if radios.nth(i).is_checked()), -1)
        target = block.locator("label").filter(has=page.get_by_role("radio")).nth(_next_of(radios.count(), chosen))
        busy_before = _busy_s(cdp)
        target.click()
    elif control.kind == "choice":
        buttons = block.locator("button")
        chosen = next((i for i in range(buttons.count())
                       if buttons.nth(i).get_attribute("aria-checked") == "true"
                       or "Active" in (buttons.nth(i).get_attribute("data-testid") or "")), -1)
        busy_before = _busy_s(cdp)
        buttons.nth(_next_of(buttons.count(), chosen)).click()
    elif control.kind == "toggle":
        busy_before = _busy_s(cdp)
        block.locator("label").first.click()
    else:
        raise ValueError(f"unknown kind of control: {control.kind}")
    return _settled(page, cdp, busy_before)


def _idle_rerun(page, cdp) -> Move:
    """The page's rerun with nothing changed: the "r" shortcut, with the focus on no control."""
    page.wait_for_selector(APP_IDLE)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.evaluate(ARM, None)
    busy_before = _busy_s(cdp)
    page.keyboard.press("r")
    return _settled(page, cdp, busy_before)


# While a slider's thumb is dragged, button held: when each pointer move came, when the figure showed a new stop (the
# frame after: a control of kit.instant with its view and charts agreeing, or an instant chart naming a new stop),
# and the app's script states meanwhile.
DRAG_WATCH = """(key) => {
    const d = window.__drag = {moves: [], redraws: [], states: []};
    document.addEventListener('pointermove', () => d.moves.push(performance.now()), {capture: true});
    const app = document.querySelector("[data-testid='stApp']");
    new MutationObserver(() => d.states.push(app.getAttribute('data-test-script-state')))
        .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
    const redrawn = () => requestAnimationFrame(() => d.redraws.push(performance.now()));
    const root = key && document.querySelector(`.st-key-${key}_instant .rnnviz-instant`);
    if (root) {
        const charts = [...document.querySelectorAll(`[class*="st-key-${key}_figure_"] .stPlotlyChart`)];
        let last = root.dataset.shown;
        const watch = new MutationObserver(() => {
            if (root.dataset.shown !== last && charts.every(c => c.dataset.instantShown === root.dataset.shown)) {
                last = root.dataset.shown;
                redrawn();
            }
        });
        watch.observe(root, {attributes: true, attributeFilter: ['data-shown']});
        charts.forEach(chart => watch.observe(chart, {attributes: true, attributeFilter: ['data-instant-shown']}));
        return;
    }
    [...document.querySelectorAll('.stBidiComponent *')]
        .filter(host => host.shadowRoot && host.shadowRoot.querySelector('.instant-chart'))
        .forEach(host => new MutationObserver(redrawn).observe(host.shadowRoot.querySelector('.instant-chart'),
                                                               {attributes: true, attributeFilter: ['data-shown']}));
}"""
DRAG_MOVES = 6


def _drag(page, control: Control) -> dict:
    """Drag the control's slider thumb over DRAG_MOVES pointer moves, button held: for each move that changed the
    stop, the time from the pointer move to the frame that shows the redrawn figure; and whether a script ran
    before the button was let go (a Streamlit slider sends its value only then; kit.instant reports it then)."""
    page.wait_for_selector(APP_IDLE)
    block = control.block(page)
    _bring_into_view(page, block)
    page.evaluate(DRAG_WATCH, control.key if control.answers_in_browser else None)
    # kit.instant's slider is a range input the pointer drags along its whole width; a Streamlit slider's range input
    # is hidden inside the thumb it draws (react-aria), which the pointer takes hold of.
    geometry = block.get_by_role("slider").first.evaluate("""input => {
        const mine = input.classList.contains('rnnviz-instant-range');
        const thumb = mine ? input : input.parentElement.parentElement;
        const r = thumb.getBoundingClientRect(), track = (mine ? input : thumb.parentElement).getBoundingClientRect();
        return {x: r.x, y: r.y, width: r.width, height: r.height, mine, left: track.left, right: track.right,
                value: +input.value, low: +input.min, high: +input.max}; }""")
    now, low, high = geometry["value"], geometry["low"], geometry["high"]
    if geometry["mine"]:  # one stop per move; the thumb's centre runs from half a thumb (8 px) in from either end
        stops = max(high - low, 1)
        x = geometry["x"] + 8 + (geometry["width"] - 16) * (now - low) / stops
        step = (geometry["width"] - 16) / stops
    else:  # a few stops per move
        x = geometry["x"] + geometry["width"] / 2
        step = 12
    direction = 1 if now - low <= high - now else -1
    y = geometry["y"] + geometry["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    latencies = []
    for _ in range(DRAG_MOVES):
        if not geometry["left"] < x + direction * step < geometry["right"]:  # at an end of the track: back
            direction = -direction
        x += direction * step
        seen = page.evaluate("() => window.__drag.redraws.length")
        page.mouse.move(x, y)
        try:
            page.wait_for_function(f"() => window.__drag.redraws.length > {seen}", timeout=2_000)
        except Exception:  # noqa: BLE001 (a move within the same stop redraws nothing)
            continue
        drag = page.evaluate("() => window.__drag")
        redraw = drag["redraws"][-1]
        moved = max(t for t in drag["moves"] if t <= redraw)
        latencies.append((redraw - moved) / 1000)
    held = page.evaluate("() => window.__drag.states")
    page.mouse.up()
    page.wait_for_timeout(100)
    page.wait_for_selector(APP_IDLE, timeout=60_000)
    if not latencies:
        return {"error": "no redraw while dragging"}
    return {"median_s": round(statistics.median(latencies), 3), "worst_s": round(max(latencies), 3),
            "redraws": len(latencies), "runs_while_held": held.count("running")}


PROFILED_MOVES = 3  # after the timed moves, with the sampling profiler on (it slows the renderer: not timed)
PROFILE_INTERVAL_US = 250
# What the renderer's main thread does, from a CDP CPU profile's self time: V8 names the renderer's own work (style,
# layout, paint, parsing) "(program)"; a built-in called from script (getBoundingClientRect, setAttribute,
# pushState) has no script address of its own; the rest is named by the Streamlit chunk it runs in (React,
# Streamlit's main bundle, plotly.js in PlotlyChart), or else it is the app's own components' script (the instant
# chart, rnnviz.ui.kit.instant_chart.js, served from an address of its own).
NATIVE = {"(program)": "style, layout, paint", "(garbage collector)": "garbage collection"}
CHUNK = re.compile(r"/static/js/([^/.]+)(?:\.[^/]*)?\.js")
CHUNK_NAMES = {"index": "Streamlit", "react-dom": "React", "PlotlyChart": "plotly"}
MIN_SHARE = 0.01


def where_the_renderer_works(profile: dict, top: int = 3) -> tuple[dict[str, float], str]:
    """Shares of a CDP ``Profiler.stop`` profile's busy self time (idle left out) by kind of work, and the ``top``
    largest as one line ("style, layout, paint 50%, DOM calls 14%, React 8%")."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    busy: Counter = Counter()
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[node_id]["callFrame"]
        name = frame["functionName"]
        if name == "(idle)":
            continue
        if name in NATIVE:
            kind = NATIVE[name]
        else:
            url = frame.get("url", "")
            chunk = CHUNK.search(url)
            kind = (CHUNK_NAMES.get(chunk.group(1), chunk.group(1)) if chunk else "DOM calls" if not url
                    else "the app's components")
        busy[kind] += delta
    total = sum(busy.values()) or 1
    shares = {kind: round(us / total, 3) for kind, us in busy.most_common() if us / total >= MIN_SHARE}
    if len(shares) < len(busy):  # the long tail of small chunks (Streamlit's widgets, hooks, formatters) as one
        shares["other script"] = round(1 - sum(shares.values()), 3)
    return shares, ", ".join(f"{kind} {share:.0%}" for kind, share in list(shares.items())[:top])


def _profiled_moves(page, cdp, control: Control, first_move: int) -> tuple[dict[str, float], str]:
    """Up to PROFILED_MOVES more moves under the sampling profiler: where the renderer's main thread spent them. A
    stepper can reach its end within them (Back from the last cell): the profile then holds the moves made before."""
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": PROFILE_INTERVAL_US})
    cdp.send("Profiler.start")
    made = 0
    try:
        for move in range(first_move, first_move + PROFILED_MOVES):
            _move(page, cdp, control, move)
            made += 1
    except Exception as err:  # noqa: BLE001 (the timed moves stand; the profile says what it holds)
        if not made:
            cdp.send("Profiler.stop")
            return {}, f"not profiled: {type(err).__name__}"
    profile = cdp.send("Profiler.stop")["profile"]
    shares, line = where_the_renderer_works(profile)
    return shares, line if made == PROFILED_MOVES else f"{line} ({made} moves)"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def _drag_cell(drag: dict | None) -> str:
    if drag is None:
        return "–"
    if "error" in drag:
        return drag["error"]
    return f"{_ms(drag['median_s'])} ({_ms(drag['worst_s'])})"


def _step_of_live_run(tab) -> int:
    """The step a session's live run has reached, read on its live page."""
    metric = tab.locator("[data-testid='stMetric']").filter(has_text="Step").first
    metric.wait_for(timeout=120_000)
    return int(metric.locator("[data-testid='stMetricValue']").inner_text().replace(",", ""))


def _start_live_runs(browser, url: str, count: int) -> list:
    """``count`` sessions each start the live page's default preset on python-stdlib, in tabs of their own browser
    context. A live run trains while its page is open (the page's fragment asks for each chunk), so the tabs stay
    on the live page, and their drawing shares this machine's two cores with the measured tab: in a class it runs
    on the students' machines, so the figures here are an upper bound on the class case."""
    from rnnviz.charlm.presets import DEFAULT_PRESET
    from rnnviz.ui.kit.corpora import CORPUS_LABELS

    tabs = []
    for _ in range(count):
        tab = browser.new_context(viewport=VIEWPORT).new_page()
        _open(tab, url, f"char-model-training?preset={quote(DEFAULT_PRESET)}")
        box = tab.get_by_role("combobox", name="Built-in corpus", exact=True)
        box.click()
        if tab.get_by_role("listbox").count() == 0:
            box.press("ArrowDown")  # a box that kept the focus through the page's last run can stay shut on a click
        tab.get_by_role("option", name=CORPUS_LABELS["python-stdlib"]).click()
        tab.get_by_text("Next run trains on python-stdlib").wait_for()
        tab.get_by_role("button", name="Start", exact=True).click()
        tab.get_by_role("button", name="Pause", exact=True).wait_for(timeout=120_000)
        tab.locator("[data-testid='stMetric']").filter(has_text="Step").first.wait_for(timeout=120_000)
        tabs.append(tab)
    return tabs


def measure(controls=CONTROLS, training: int = 0) -> dict:
    """Every control's moves and the page's idle reruns, on one warm server, with the table printed; with
    ``training``, while that many live runs train on the same server."""
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    results, rows = {}, []
    with streamlit_server() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=VIEWPORT)
        for address in dict.fromkeys(c.page for c in controls):  # warm the server: every page once
            warm = context.new_page()
            _open(warm, url, address)
            warm.close()
        trainers = _start_live_runs(browser, url, training)
        for control in controls:
            page = context.new_page()
            page.add_init_script(f"({WATCH})()")
            _open(page, url, control.page)
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            reruns = [_idle_rerun(page, cdp) for _ in range(3)]
            idle = statistics.median(m.settled_s for m in reruns)
            idle_busy = statistics.median(m.busy_s for m in reruns)
            try:
                moves = [_move(page, cdp, control, move) for move in range(MOVES)]
                drag = _drag(page, control) if control.drag else None
                if page.locator("[data-testid='stException']").count():
                    raise RuntimeError(f"{control.name} raised an exception")
                # On the page opened anew: a stepper has used its range in the timed moves (Back from the last cell).
                _open(page, url, control.page)
                shares, profile_line = _profiled_moves(page, cdp, control, 0)
            except Exception as err:  # noqa: BLE001 (one control that cannot be measured is a row that says so)
                results[control.name] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
                rows.append([control.name, "error", "", "", "", "", "", "", "", "", "", "",
                             results[control.name]["error"], "", "no"])
                print(f"  {control.name}: {results[control.name]['error']}", flush=True)
                page.close()
                continue
            page.close()

            def median(field: str, moves=moves) -> float:
                return statistics.median(getattr(m, field) for m in moves)

            settled, worst = median("settled_s"), max(m.settled_s for m in moves)
            started, ended = median("run_started_s"), median("run_ended_s")
            busy, charts = median("busy_s"), median("charts")
            figures = [m.figure_s for m in moves if m.figure_s is not None]
            figure = statistics.median(figures) if len(figures) == len(moves) else None
            waits = "the browser" if busy >= settled - busy else "the server"
            answers = [m.answered_s for m in moves if m.answered_s is not None]
            answered = statistics.median(answers) if control.answers_in_browser and len(answers) == len(moves) \
                else None
            # What a user waits for: the move answered in the browser, or else the page settled after the run.
            waited, waited_worst = (answered, max(answers)) if answered is not None else (settled, worst)
            results[control.name] = {
                "median_s": round(settled, 3), "worst_s": round(worst, 3), "idle_rerun_s": round(idle, 3),
                "idle_rerun_busy_s": round(idle_busy, 3),
                "run_started_s": round(started, 3), "run_ended_s": round(ended, 3),
                "drawing_after_run_s": round(max(0.0, settled - ended), 3), "charts_built": charts,
                "browser_busy_s": round(busy, 3), "waits_for": waits,
                "figure_shown_s": None if figure is None else round(figure, 3),
                "renderer_work": shares,
                "moves_s": [round(m.settled_s, 3) for m in moves]}
            working = [m.working_s for m in moves if m.working_s is not None]
            if working:  # a move that waits for the server: when the page first said it was working
                results[control.name].update(working_shown_s=round(statistics.median(working), 3),
                                             working_shown_worst_s=round(max(working), 3),
                                             moves_marked_working=len(working))
            if answered is not None:  # the run that follows is the report of the move, afterwards
                results[control.name].update(answered_s=round(answered, 3), answered_worst_s=round(max(answers), 3),
                                             answered_moves_s=[round(a, 3) for a in answers])
            if drag is not None:
                results[control.name]["drag"] = drag
            rows.append([control.name, "–" if figure is None else _ms(figure),
                         "–" if answered is None else f"{_ms(answered)} ({_ms(max(answers))})",
                         _drag_cell(drag), _ms(settled), _ms(worst),
                         f"{_ms(idle)} ({_ms(idle_busy)})",
                         _ms(started), _ms(ended - started), _ms(max(0.0, settled - ended)),
                         f"{charts:g}", _ms(busy), waits, profile_line,
                         "yes" if waited <= TARGET_MEDIAN_S and waited_worst <= TARGET_P95_S else "no"])
            print(f"  {control.name}: {waited * 1000:.0f} ms median"
                  f"{' (answered in the browser)' if answered is not None else ''}", flush=True)
        steps = [_step_of_live_run(tab) for tab in trainers]  # the runs trained all along, or this says not
        browser.close()
    print_table(f"Lesson controls in Chromium{f' while {training} live runs train' if training else ''}: ms from the "
                f"press to the figure first showing the move, and to the page settled ({MOVES} moves to new values; "
                f"target median ≤ {TARGET_MEDIAN_S * 1000:.0f}, p95 ≤ {TARGET_P95_S * 1000:.0f}); medians of the "
                "request, the run, the drawing after it, the charts built anew and the browser's main-thread work",
                ["control", "figure shown", "answered (worst)", "drag (worst)", "median", "worst",
                 "page rerun (busy)", "request", "run", "drawn after",
                 "charts",
                 "browser busy", "waits for", "renderer's work (profile)", "on target"], rows)
    if training:
        print(f"the {training} live runs had reached steps {steps} by the end")
    return {"controls": results, "moves": MOVES, "live_runs_training": training,
            "live_run_steps_at_end": steps,
            "target_median_s": TARGET_MEDIAN_S, "target_p95_s": TARGET_P95_S,
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}


def run() -> dict:
    return measure()


# The controls that answer in the browser (kit.instant, kit.instant_chart), and those that change what such a control
# holds (their server run now makes every stop): the row browser_latency_instant.
RESTOPPING = {"Hand-built RNN: Nonlinearity", "Hand-built RNN: a weight + (any of 15)", "Stacked RNNs: Cell",
              "Stacked RNNs: Layers", "LSTM gates: H, hidden size", "Gradient decay (clipping): learning rate",
              "Unrolling: Hidden size H", "Unrolling: Scale of W_hh", "Truncated BPTT: Chunk length K",
              "Captioning: Decoding", "Captioning: Beam width", "Gradient decay (per-step sum): log scale"}
IN_BROWSER = [control for control in CONTROLS
              if control.answers_in_browser or control.drag or control.name in RESTOPPING]


def run_in_browser() -> dict:
    return measure(IN_BROWSER)


LIVE_RUNS = 2  # the class case: two live runs training on the same server (bench.browser_latency_class)

if __name__ == "__main__":  # python -m bench.browser_latency in-browser [class]: those controls, in their own row
    import sys

    from bench.__main__ import write_row

    if sys.argv[1:] not in (["in-browser"], ["in-browser", "class"]):
        raise SystemExit("usage: python -m bench.browser_latency in-browser [class]   (all controls: python -m bench "
                         "browser_latency)")
    load = os.getloadavg()[0]
    if sys.argv[2:] == ["class"]:
        write_row("browser_latency_instant_class", measure(IN_BROWSER, training=LIVE_RUNS), load)
    else:
        write_row("browser_latency_instant", run_in_browser(), load)
