"""Live training in a real browser: the loss falls below ln V, Pause stops the counter, the run survives a
visit to another page; and a server with two training slots queues a third session until a slot frees."""

import re
import time
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.core.runtime import has_native_bf16
from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import open_app_page, screenshot, streamlit_server, wait_idle

URL = "char-model-training"
QUICK = quote("Quick demo (30 s)")
TINY_RNN = quote("Tiny vanilla RNN")
TRAIN_TIMEOUT_S = 240  # two busy cores: a 1 × 256 LSTM may take a second per step when other jobs run


def metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(
        has=page.locator("[data-testid='stMetricLabel']", has_text=label)
    )
    return box.locator("[data-testid='stMetricValue']").first.inner_text().strip()


def number(page, label: str) -> float | None:
    text = metric(page, label).replace(",", "")
    match = re.search(r"-?\d+(\.\d+)?", text)
    return float(match.group()) if match else None


def wait_for(condition, timeout_s: float, what: str, poll_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # the element is being redrawn by the running fragment
            value = None
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def choose(page, select_label: str, option: str) -> None:
    page.locator("[data-testid='stSelectbox']").filter(has_text=select_label).click()
    page.get_by_role("option", name=option).click()
    wait_idle(page)


def click(page, name: str) -> None:
    """Click the app's button named ``name``, never Streamlit's own: its header shows a "Stop" button while a script
    runs, which a busy server's race or live page may be doing at that moment."""
    ours = page.locator("button:not([data-testid='stBaseButton-header'])")
    page.get_by_role("button", name=name, exact=True).and_(ours).click()


def no_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() == 0


def test_quick_preset_learns_pauses_and_survives_navigation(page, base_url):
    open_app_page(page, base_url, f"{URL}?preset={QUICK}")
    choose(page, "Built-in corpus", CORPUS_LABELS["python-stdlib"])
    expect(page.get_by_text("Next run trains on python-stdlib")).to_be_visible()
    click(page, "Start")
    uniform = wait_for(lambda: number(page, "Uniform guess"), 60, "the run to start")
    wait_for(lambda: (loss := number(page, "Train loss")) is not None and loss < uniform - 0.3,
             TRAIN_TIMEOUT_S, f"the train loss to fall below ln V = {uniform:.3f}")
    assert no_exception(page)
    click(page, "Pause")
    wait_for(lambda: page.get_by_text("Paused at step").count() > 0, 30, "the pause")
    wait_idle(page)
    paused_at = number(page, "Step")
    time.sleep(2.0)
    assert number(page, "Step") == paused_at, "the counter stops while paused"
    screenshot(page, "live-training-paused")
    assert page.get_by_text("forward pass in bfloat16").count() == (1 if has_native_bf16("cpu") else 0)
    page.get_by_text("Loss against seconds of training instead of steps").click()
    wait_idle(page)
    # The click's rerun may not have begun when wait_idle looks: wait for the axis itself.
    expect(page.locator("[data-testid='stPlotlyChart'] .xtitle", has_text="seconds of training")).to_have_count(1)
    screenshot(page, "live-training-seconds")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the checkpoint").click()
    saved = load_checkpoint(download.value.path())
    assert saved.step == paused_at and saved.corpus == "python-stdlib"

    nav = page.get_by_test_id("stSidebarNavLink")
    nav.filter(has_text="Home: the five shapes").click()
    page.wait_for_selector("h1:has-text('Home')")
    wait_idle(page)
    nav.filter(has_text="Character model — live training").click()
    page.wait_for_selector("h1:has-text('live training')")
    wait_idle(page)
    assert number(page, "Step") == paused_at, "the run is kept across pages"
    expect(page.get_by_text("Next run trains on python-stdlib")).to_be_visible(), "and so are the settings"
    assert no_exception(page)


@pytest.fixture(scope="module")
def two_slot_server():
    with streamlit_server(env={"RNNVIZ_TRAINING_SLOTS": "2"}) as url:
        yield url


def test_two_sessions_train_and_a_third_waits_for_a_slot(page, two_slot_server):
    pages = [page, page.context.new_page(), page.context.new_page()]  # three tabs: three sessions of the server
    for tab in pages:
        open_app_page(tab, two_slot_server, f"{URL}?preset={TINY_RNN}")
        choose(tab, "Built-in corpus", CORPUS_LABELS["english-docs"])
    for tab in pages[:2]:
        click(tab, "Start")
        wait_for(lambda p=tab: (number(p, "Step") or 0) > 0, 120, "a first session to train")
    click(pages[2], "Start")
    waiting = pages[2]
    wait_for(lambda: waiting.get_by_text("Waiting for a free training slot").count() > 0, 60,
             "the third session to wait")
    assert waiting.get_by_text("You are number 1 in the queue").count() > 0
    time.sleep(1.0)
    assert waiting.locator("[data-testid='stMetric']").count() == 0 or number(waiting, "Step") == 0
    for tab in pages[:2]:
        step = number(tab, "Step")
        wait_for(lambda p=tab, s=step: number(p, "Step") > s, 60, "both holders to keep training")
    screenshot(waiting, "live-training-waiting")
    click(pages[0], "Pause")
    wait_for(lambda: (number(waiting, "Step") or 0) > 0, 60, "the waiting session to start when a slot frees")
    assert waiting.get_by_text("Waiting for a free training slot").count() == 0
    for tab in pages:
        assert no_exception(tab)


def test_every_built_in_corpus_label_shows_whole_in_its_box(page, base_url):
    """At 1,400 px the corpus box is a third of the settings: a label longer than it was cut ("downloac")."""
    open_app_page(page, base_url, URL)
    box = page.get_by_role("combobox", name="Built-in corpus", exact=True)
    for name, label in CORPUS_LABELS.items():
        choose(page, "Built-in corpus", label)
        assert box.input_value() == label
        shown, room = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert shown <= room, f"{name}: the label needs {shown} px, the box shows {room}"
