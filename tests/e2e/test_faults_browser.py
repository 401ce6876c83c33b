"""Interrupted and exploding training in a real browser.

A run interrupted mid-chunk by a rerun from another widget, by a visit to another page, or by Pause keeps
the weights of its last whole step, and Start continues the count: the checkpoint downloaded after each
pause equals a clean replay of the same number of steps. SGD at learning rate 50 without clipping blows
up; the page puts the last good weights back, says so, and trains on after a lower rate is applied.
"""

import re
from dataclasses import replace
from urllib.parse import quote

import torch
from playwright.sync_api import expect

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.train import Trainer
from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import open_app_page, screenshot, slider_thumb, wait_idle
from tests.e2e.test_live_training import choose, click, no_exception, number, wait_for

URL = "char-model-training"
TINY_RNN = quote("Tiny vanilla RNN")
ENGLISH = CORPUS_LABELS["english-docs"]


def step_now(page) -> int:
    return int(number(page, "Step") or 0)


def trains_on(page, timeout_s: float = 60) -> int:
    """Wait until the step counter moves on from where it is now; returns the new count."""
    start = step_now(page)
    return wait_for(lambda: (s := step_now(page)) > start and s, timeout_s, f"training to continue past {start}")


def pause(page) -> int:
    click(page, "Pause")
    wait_for(lambda: page.get_by_text("Paused at step").count() > 0, 30, "the pause")
    wait_idle(page)
    return step_now(page)


def downloaded(page):
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the checkpoint").click()
    return load_checkpoint(download.value.path())


def replays_exactly(checkpoint) -> None:
    """The checkpoint's weights are those a fresh trainer reaches in the same number of steps, in one go
    (and differ from one step fewer, so the comparison can tell a lost or extra step)."""
    trainer = Trainer(replace(checkpoint.config, device="cpu"), load_builtin(checkpoint.corpus))
    trainer.run(checkpoint.step - 1)
    one_short = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.run(1)
    saved = checkpoint.model.state_dict()
    for name, value in trainer.model.state_dict().items():
        torch.testing.assert_close(saved[name], value, rtol=1e-4, atol=1e-5, msg=name)
    assert any(not torch.allclose(saved[k], v, rtol=1e-4, atol=1e-5) for k, v in one_short.items())
    assert [r.step for r in checkpoint.history] == list(range(1, checkpoint.step + 1))


def test_interrupted_chunks_keep_whole_steps_and_resume_counts_on(page, base_url):
    open_app_page(page, base_url, f"{URL}?preset={TINY_RNN}")
    choose(page, "Built-in corpus", ENGLISH)
    click(page, "Start")
    trains_on(page)

    # A rerun from another widget, mid-chunk: the model's settings change (for the next run only).
    page.get_by_text("Learned embedding").click()
    wait_for(lambda: page.get_by_text("differ from the run below (embedding: False → True)").count() > 0, 30,
             "the rerun to draw the changed setting")
    trains_on(page)
    page.get_by_text("Learned embedding").click()
    trains_on(page)

    # A visit to another page, mid-chunk, and back: the run is there and trains on.
    nav = page.get_by_test_id("stSidebarNavLink")
    nav.filter(has_text="Home: the five shapes").click()
    page.wait_for_selector("h1:has-text('Home')")
    nav.filter(has_text="Character model — live training").click()
    page.wait_for_selector("h1:has-text('live training')")
    trains_on(page)

    # Pause mid-chunk: the checkpoint holds whole steps only.
    first = pause(page)
    saved = downloaded(page)
    assert saved.step == first and saved.corpus == "english-docs"
    replays_exactly(saved)

    # Start continues the count from there.
    click(page, "Start")
    trains_on(page)
    second = pause(page)
    assert second > first
    saved = downloaded(page)
    assert saved.step == second
    replays_exactly(saved)
    assert no_exception(page)


def test_sgd_at_learning_rate_50_without_clipping_rolls_back_and_explains(page, base_url):
    open_app_page(page, base_url, f"{URL}?preset={TINY_RNN}")
    choose(page, "Built-in corpus", ENGLISH)
    choose(page, "Optimizer", "sgd")
    rate = page.get_by_role("spinbutton", name="Exact learning rate")
    rate.fill("50")
    rate.press("Enter")
    # The server has taken the settings once it has drawn what follows from them: its callback moved the log-scale
    # slider to 50, and it greyed the threshold out. A Step sent before that trained the preset's settings, which
    # never blow up (the browser shows a typed value or a flipped switch before the server has it).
    expect(slider_thumb(page, "Learning rate (log scale)")).to_have_attribute("aria-valuetext", "50", timeout=30_000)
    clipping = page.get_by_role("switch", name="Clip the gradient norm")
    if clipping.is_checked():
        page.get_by_text("Clip the gradient norm").click()
    expect(slider_thumb(page, "Clipping threshold θ")).to_be_disabled(timeout=30_000)
    wait_idle(page)
    for _ in range(5):
        click(page, "Step")
        wait_idle(page)
        if page.get_by_text("Training stopped by itself").count():
            break
    assert page.get_by_text("sgd at learning rate 50, no clipping").count(), "the run trained other settings: " + \
        page.get_by_text("This run:").first.inner_text()
    message = page.get_by_text("Training stopped by itself").inner_text()
    restored = int(re.search(r"The weights from step ([\d,]+)", message).group(1).replace(",", ""))
    assert "the last ones known to be good, were put back, so the model is not lost" in message
    assert "lower the learning rate or turn gradient clipping on" in message
    # The link is drawn just after the message: wait for it rather than read it mid-run.
    page.get_by_role("link", name="Why gradients explode: the Gradient decay page").wait_for(state="visible",
                                                                                               timeout=10_000)
    assert no_exception(page)
    page.get_by_text("Training stopped by itself").scroll_into_view_if_needed()
    screenshot(page, "live-training-exploded")
    saved = downloaded(page)  # the weights really are those of the step named: a clean replay reaches them
    trainer = Trainer(replace(saved.config, device="cpu"), load_builtin(saved.corpus))
    trainer.run(restored)
    assert trainer.halt is None
    for name, value in trainer.model.state_dict().items():
        torch.testing.assert_close(saved.model.state_dict()[name], value, rtol=1e-4, atol=1e-5, msg=name)

    rate.fill("0.003")
    rate.press("Enter")
    wait_idle(page)
    click(page, "Apply the new learning rate and clipping to this run")
    wait_for(lambda: page.get_by_text("learning rate 0.003, no clipping. Start continues.").count() > 0, 30,
             "the new learning rate to apply")
    click(page, "Start")
    trains_on(page)
    assert page.get_by_text("Training stopped by itself").count() == 0
    assert no_exception(page)
