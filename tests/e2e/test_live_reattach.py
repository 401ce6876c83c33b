"""The live page in a real browser, as a class uses it: a reload or a second tab finds the same run (step and
weights) through the token in the address, a stranger finds nothing, a forged token is said in words, an expired
session's address brings the run back from disk, the sample box names the step the counter shows after Pause, and
the first screen holds what the class watches.

One server of its own with a short disconnected-session TTL, so that an expired address takes seconds."""

from __future__ import annotations

import secrets
import time
from urllib.parse import parse_qs, quote, unquote_plus, urlparse

import pytest
import torch
from playwright.sync_api import expect

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import open_app_page, screenshot, streamlit_server, wait_idle
from tests.e2e.test_live_training import choose, click, no_exception, number, wait_for

URL = "char-model-training"
QUICK = quote("Quick demo (30 s)")
TINY_RNN = quote("Tiny vanilla RNN")
HELLO = CORPUS_LABELS["hello"]
PYTHON = CORPUS_LABELS["python-stdlib"]
TTL_S = 6
VIEW = {"width": 1400, "height": 900}  # a projector's first screen
TRAIN_TIMEOUT_S = 180
GONE = "does not hold, in memory or on disk"
# Elements the browser shows greyed out while a rerun replaces them (Streamlit also keeps some replaced ones
# hidden, with display: none; those are not seen).
VISIBLE_STALE = """() => [...document.querySelectorAll("[data-stale='true']")]
    .filter(e => e.getBoundingClientRect().height > 0).length"""


@pytest.fixture(scope="module")
def server():
    with streamlit_server(extra_args=("--server.disconnectedSessionTTL", str(TTL_S))) as url:
        yield url


def run_token(address: str) -> str | None:
    values = parse_qs(urlparse(address).query).get("run")
    return values[0] if values else None


def checkpoint(page):
    """The run's checkpoint, downloaded from its button. A rerun of the live panel replaces the button's file, and
    the browser cancels a download that asked for the replaced one: then the click is made once more."""
    for attempt in range(2):
        with page.expect_download() as download:
            page.get_by_role("button", name="Download the checkpoint").click()
        if download.value.failure() is None or attempt:
            return load_checkpoint(download.value.path())
        wait_idle(page)


def same_weights(a, b) -> bool:
    first, second = a.model.state_dict(), b.model.state_dict()
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def pause(page) -> int:
    click(page, "Pause")
    wait_for(lambda: page.get_by_text("Paused at step").count() > 0, 30, "the pause")
    wait_idle(page)
    return int(number(page, "Step"))


def live_address(page) -> str | None:
    """The tab's address once it names its run (the page writes it with history.replaceState, which Playwright's
    page.url may report late)."""
    address = page.evaluate("() => location.href")
    return address if run_token(address) else None


def has_run(page) -> bool:
    return page.locator("[data-testid='stMetricLabel']").filter(has_text="Train loss").count() > 0


def test_pause_names_the_step_and_a_reload_or_a_new_tab_finds_the_same_run(page, server):
    open_app_page(page, server, f"{URL}?preset={QUICK}")
    choose(page, "Built-in corpus", HELLO)
    click(page, "Start")
    wait_for(lambda: (number(page, "Step") or 0) >= 100, TRAIN_TIMEOUT_S, "a hundred steps")
    step = pause(page)
    # The sample box names the step the counter shows (it used to keep the step of its first draw).
    model_box = page.get_by_role("combobox", name="Model", exact=True)
    wait_for(lambda: model_box.input_value() == f"Live-trained (hello, step {step:,})", 10,
             f"the model box to name step {step:,}, as the counter does")
    token = run_token(page.url)
    assert token and len(token) >= 43, page.url
    # The latest sample spells "hello" from its prime "h", and shows where it leaves the training text.
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    assert page.get_by_text("past it: never seen in training").first.is_visible()
    assert page.get_by_text("Latest sample").first.is_visible()
    screenshot(page, "live-training-hello")
    before = checkpoint(page)
    assert before.step == step

    page.reload(wait_until="domcontentloaded")
    page.wait_for_selector("h1")
    wait_idle(page)
    wait_for(lambda: number(page, "Step") == step, 30, f"step {step:,} after the reload")
    assert run_token(page.url) == token and "preset=" in page.url  # the settings' link is kept beside it
    after = checkpoint(page)
    assert after.step == step and same_weights(before, after)
    assert page.get_by_role("combobox", name="Built-in corpus", exact=True).input_value() == HELLO
    assert page.get_by_text("These settings differ from the run below").count() == 0
    page.get_by_role("button", name="Copy link").click()
    link = unquote_plus(page.locator("[data-testid='stPopoverBody'] code").inner_text())
    assert "preset=Quick demo (30 s)" in link and "run=" not in link  # a shared link never hands out a run
    page.keyboard.press("Escape")

    tab = page.context.new_page()  # the same address in a new tab: another session, the same run
    tab.goto(page.url, wait_until="domcontentloaded")
    tab.wait_for_selector("h1")
    wait_idle(tab)
    wait_for(lambda: number(tab, "Step") == step, 30, f"step {step:,} in a new tab")
    assert same_weights(before, checkpoint(tab))

    click(page, "Start")  # the reloaded page trains the run on from where it was (to its budget of 500)
    wait_for(lambda: (number(page, "Step") or 0) > step, 60, "training to go on after the reload")
    assert no_exception(page) and no_exception(tab)


def test_a_stranger_sees_nothing_a_forged_address_is_refused_and_an_expired_one_comes_back_from_disk(
        page, browser, server):
    owner = page
    stranger_context = browser.new_context(viewport=VIEW)  # another browser: none of the owner's cookies
    try:
        open_app_page(owner, server, f"{URL}?preset={TINY_RNN}")
        choose(owner, "Built-in corpus", HELLO)
        click(owner, "Step")
        wait_for(lambda: (number(owner, "Step") or 0) > 0, 60, "the owner's run to train")
        address = owner.url
        token = run_token(address)
        assert token

        stranger = stranger_context.new_page()
        open_app_page(stranger, server, URL)  # another student's page, without the token
        assert not has_run(stranger) and run_token(stranger.url) is None
        main = stranger.locator("[data-testid='stMain']").inner_text()
        assert "Live-trained" not in main and token not in main

        forged = token[:-1] + ("A" if token[-1] != "A" else "B")
        for guess in (secrets.token_urlsafe(32), forged):
            open_app_page(stranger, server, f"{URL}?run={guess}")
            notice = stranger.locator("[data-testid='stAlertContentWarning']").filter(has_text=GONE)
            notice.wait_for(timeout=10_000)
            assert not has_run(stranger) and run_token(stranger.url) is None
        assert no_exception(stranger)

        step = int(number(owner, "Step"))
        owner.close()  # the tab closes: its run is kept in memory for the TTL, then freed; its save on disk stays
        time.sleep(TTL_S + 3)
        open_app_page(stranger, server, address[len(server) + 1:])  # the whole address restores it from disk
        stranger.get_by_text("This run was restored from disk").wait_for(timeout=10_000)
        # The notice lands before the run's panel in the same script run: wait for the panel, then read it.
        wait_for(lambda: has_run(stranger), 10, "the restored run's panel")
        assert number(stranger, "Step") == step and no_exception(stranger)
    finally:
        stranger_context.close()


def inside_first_screen(page, locator, what: str) -> None:
    # The running fragment replaces the panel four times a second: a look may fall between two drawings.
    box = wait_for(locator.bounding_box, 5, f"{what} to be shown", poll_s=0.1)
    assert box["y"] >= 0 and box["y"] + box["height"] <= VIEW["height"], f"{what} is off the first screen: {box}"


def test_the_first_screen_shows_what_the_class_watches(page, server):
    page.set_viewport_size(VIEW)
    open_app_page(page, server, f"{URL}?preset={TINY_RNN}")
    choose(page, "Built-in corpus", PYTHON)
    click(page, "Start")
    # What the class watches is there once the run has made its first sample (every 100 steps): wait for that,
    # not for a count of steps that a loaded machine may take minutes to reach.
    wait_for(lambda: page.get_by_text("Latest sample").count() > 0 and (number(page, "Step") or 0) >= 100,
             TRAIN_TIMEOUT_S, "the first sample (step 100)")
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    loss_chart = page.locator("[data-testid='stPlotlyChart']").filter(has_text="Loss").first
    wait_for(lambda: loss_chart.locator(".main-svg").count() > 0, 30, "the loss curve to be drawn")
    # While it trains: the controls, the progress, the loss curve and the latest sample on one screen.
    for name in ("Start", "Pause", "Step", "Reset"):
        inside_first_screen(page, page.get_by_role("button", name=name, exact=True), f"the {name} button")
    inside_first_screen(page, page.locator("[data-testid='stProgress']").first, "the progress bar")
    inside_first_screen(page, loss_chart, "the loss curve")
    latest = page.get_by_text("Latest sample")
    inside_first_screen(page, latest, "the latest sample's label")
    inside_first_screen(page, page.locator("[data-testid='stCode']").first, "the latest sample")
    # Drawn before each chunk trains, the panel is not greyed out as "stale" while the class watches (it
    # was, most of the time, when it was drawn after the chunk): most looks find nothing stale.
    # Twenty looks over four seconds: a burst of greyed-out looks while a busy machine catches up does not decide.
    looks = []
    for _ in range(20):
        looks.append(page.evaluate(VISIBLE_STALE) == 0)
        page.wait_for_timeout(200)
    assert sum(looks) >= 14, f"greyed out in {looks.count(False)} of 20 looks: {looks}"
    screenshot(page, "live-training-first-screen")

    # The settings fold away and reopen on demand; training goes on meanwhile.
    settings = page.get_by_text("Settings: preset, corpus, model and training")
    corpus = page.get_by_role("combobox", name="Built-in corpus", exact=True)
    assert corpus.is_visible()
    settings.click()
    wait_for(lambda: not corpus.is_visible(), 10, "the settings to fold")
    step = number(page, "Step")
    wait_for(lambda: number(page, "Step") > step, 60, "training to go on with the settings folded")
    assert not corpus.is_visible(), "they stay folded while the run trains"
    settings.click()
    wait_for(lambda: corpus.is_visible(), 10, "the settings to reopen")
    pause(page)
    assert no_exception(page)


def test_two_tabs_of_one_run_follow_each_other_and_reset_in_one_ends_it_in_both(page, server):
    open_app_page(page, server, f"{URL}?preset={TINY_RNN}")
    choose(page, "Built-in corpus", HELLO)
    click(page, "Step")
    wait_for(lambda: (number(page, "Step") or 0) > 0, 60, "the first chunk")
    address = wait_for(lambda: live_address(page), 30, "the run's address")
    other = page.context.new_page()  # the same run in a second tab
    other.goto(address, wait_until="domcontentloaded")
    other.wait_for_selector("h1")
    wait_idle(other)
    assert number(other, "Step") == number(page, "Step")

    click(other, "Start")  # the second tab starts it; the first, standing still, follows by itself
    expect(page.get_by_role("button", name="Pause", exact=True)).to_be_enabled(timeout=10_000)
    wait_for(lambda: (number(page, "Step") or 0) > (number(other, "Step") or 0) - 200, 10, "the first tab's count")
    click(page, "Pause")  # the first tab pauses it; the second shows the same pause, with Start ready
    for tab in (page, other):
        expect(tab.get_by_role("button", name="Start", exact=True)).to_be_enabled(timeout=10_000)
        tab.get_by_text("Paused at step").first.wait_for(timeout=10_000)
    wait_for(lambda: number(page, "Step") == number(other, "Step"), 10, "both tabs at the same step")

    click(page, "Reset")  # trained for seconds: no confirmation; the second tab lets the run go too
    other.get_by_text("This run was reset in another tab").wait_for(timeout=10_000)
    assert not has_run(other) and not has_run(page)
    assert run_token(other.evaluate("() => location.href")) is None
    assert no_exception(page) and no_exception(other)
