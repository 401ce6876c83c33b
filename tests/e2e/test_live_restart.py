"""A live run over a server restart, in a real browser against a real server process: killed with SIGKILL in the
middle of training, the restarted server's same address restores the run at the step of its last save with the
same weights bit for bit, and says how many steps were lost; stopped with SIGTERM, the server saves the run on its
way out and the restored run lost nothing. And a training tab that closes gives its slot to the next in the queue
at once, not after its lease.

Each test starts its own servers on one run folder of its own, saving every 2 s of training."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
import torch

from rnnviz.serving.durable import RunStore
from rnnviz.serving.settings import StoreSetting
from rnnviz.ui.app.server import LEASE_SECONDS
from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import ROOT, free_port, open_app_page, wait_healthy
from tests.e2e.test_live_reattach import checkpoint, run_token
from tests.e2e.test_live_training import choose, click, no_exception, number, wait_for

URL = "char-model-training"
TINY_RNN = quote("Tiny vanilla RNN")
SAVE_EVERY_S = 2


@contextmanager
def server_process(run_dir: Path, env: dict | None = None):
    """A server of its own on ``run_dir``: yields (base URL, process); stopped afterwards if still running."""
    port = free_port()
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "RNNVIZ_RUN_DIR": str(run_dir),
           "RNNVIZ_SAVE_EVERY_S": str(SAVE_EVERY_S), **(env or {})}
    log = open(run_dir.parent / f"server-{port}.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=15)
        log.close()


def saved(run_dir: Path, token: str):
    """The run as its server last saved it, read from disk as a restarted server reads it."""
    return RunStore(StoreSetting(run_dir)).restore(token)


def train_until_saved(page, url: str, run_dir: Path) -> str:
    open_app_page(page, url, f"{URL}?preset={TINY_RNN}")
    choose(page, "Built-in corpus", CORPUS_LABELS["python-stdlib"])
    click(page, "Start")
    # The page writes ?run= with history.replaceState, which Playwright's page.url may report late.
    token = wait_for(lambda: run_token(page.evaluate("() => location.href")), 60, "the run's address")
    # A save past the first chunk's, while the run trains on (its progress note runs ahead of the save).
    wait_for(lambda: (r := saved(run_dir, token)) is not None and r.saved_step >= 50, 120, "a save at step 50 or later")
    assert page.get_by_role("button", name="Pause", exact=True).is_enabled()  # still training
    return token


def reopen(page, url: str, token: str) -> None:
    open_app_page(page, url, f"{URL}?run={token}")
    page.get_by_text("This run was restored from disk").wait_for(timeout=30_000)


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_killed_server_s_run_comes_back_at_its_last_save_with_the_lost_steps_said(page, tmp_path):
    run_dir = tmp_path / "runs"
    with server_process(run_dir) as (url, proc):
        token = train_until_saved(page, url, run_dir)
        wait_for(lambda: (number(page, "Step") or 0) > saved(run_dir, token).saved_step, 60, "steps past the save")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
    on_disk = saved(run_dir, token)
    assert on_disk.reached_step is not None and on_disk.reached_step >= on_disk.saved_step

    with server_process(run_dir) as (url, _):
        reopen(page, url, token)
        assert number(page, "Step") == on_disk.saved_step
        assert page.get_by_role("button", name="Start", exact=True).is_enabled()
        notice = page.locator("[data-testid='stAlertContentWarning']").filter(has_text="restored from disk")
        text = notice.inner_text()
        assert f"saved at step {on_disk.saved_step:,}" in text
        assert on_disk.was_training and "No training was lost" not in text  # killed while it trained
        if on_disk.lost_steps:
            assert f"trained on to step {on_disk.reached_step:,} (or a chunk more" in text, text
            assert f"so the {on_disk.lost_steps:,} step" in text, text
        else:
            assert "at most one chunk of steps" in text, text
        assert same_weights(checkpoint(page).model.state_dict(), on_disk.run.trainer.model.state_dict())
        click(page, "Start")
        wait_for(lambda: (number(page, "Step") or 0) > on_disk.saved_step, 60, "training to go on")
        assert no_exception(page)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX")
def test_a_server_stopped_with_sigterm_saves_its_runs_on_the_way_out(page, tmp_path):
    run_dir = tmp_path / "runs"
    with server_process(run_dir) as (url, proc):
        token = train_until_saved(page, url, run_dir)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) is not None  # it stops by itself, within seconds
    on_disk = saved(run_dir, token)
    assert on_disk.lost_steps == 0 and on_disk.reached_step == on_disk.saved_step  # drained at exit
    assert on_disk.saved_step > 50

    with server_process(run_dir) as (url, _):
        reopen(page, url, token)
        assert number(page, "Step") == on_disk.saved_step
        assert "No training was lost" in page.get_by_text("This run was restored from disk").inner_text()


def test_a_closed_training_tab_gives_its_slot_to_the_next_in_the_queue_at_once(page, tmp_path):
    with server_process(tmp_path / "runs", env={"RNNVIZ_TRAINING_SLOTS": "1"}) as (url, _):
        tabs = [page, page.context.new_page()]
        for tab in tabs:
            open_app_page(tab, url, f"{URL}?preset={TINY_RNN}")
            choose(tab, "Built-in corpus", CORPUS_LABELS["hello"])
        click(tabs[0], "Start")
        wait_for(lambda: (number(tabs[0], "Step") or 0) > 0, 60, "the first tab to train")
        click(tabs[1], "Start")
        tabs[1].get_by_text("Waiting for a free training slot").wait_for(timeout=30_000)
        assert "number 1 in the queue" in tabs[1].get_by_text("Waiting for a free training slot").inner_text()
        tabs[0].close()
        # Well before the lease of a tab that merely stopped asking would have run out.
        wait_for(lambda: (number(tabs[1], "Step") or 0) > 0, LEASE_SECONDS * 0.6, "the queued tab to train")
        assert no_exception(tabs[1])
