"""Closing a tab gives its model back: after Streamlit's disconnected-session TTL the live-trainer count,
as the Server status page shows it (LiveRun.count_alive), falls back. Loopback only, one server of its own
with a 4 s TTL so the test takes seconds rather than the default two minutes."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.e2e.harness import open_app_page, streamlit_server, wait_idle
from tests.e2e.test_live_training import choose, click, number, wait_for
from tests.load.test_load import CORPUS_LABELS

TTL_S = 4
TRAINING = f"char-model-training?preset={quote('Tiny vanilla RNN')}"


@pytest.fixture(scope="module")
def short_ttl_server():
    with streamlit_server(extra_args=("--server.disconnectedSessionTTL", str(TTL_S))) as url:
        yield url


def live_models(status_page) -> int:
    """Refresh the Server status page and read its "Live models in memory"."""
    status_page.get_by_role("button", name="Refresh").click()
    status_page.wait_for_timeout(300)
    wait_idle(status_page)
    return int(number(status_page, "Live models in memory"))


def test_a_closed_tab_frees_its_model_after_the_session_ttl(page, short_ttl_server):
    status = page
    open_app_page(status, short_ttl_server, "server-status")
    assert live_models(status) == 0
    # the limits table shows the TTL in force
    expect(status.get_by_text(f"{TTL_S} s", exact=True)).to_have_count(1)

    tabs = []
    for _ in range(2):
        tab = page.context.new_page()  # a tab of its own: a session of its own
        open_app_page(tab, short_ttl_server, TRAINING)
        choose(tab, "Built-in corpus", CORPUS_LABELS["hello"])
        click(tab, "Step")
        wait_for(lambda p=tab: (number(p, "Step") or 0) > 0, 60, "a chunk of training")
        tabs.append(tab)
    assert wait_for(lambda: live_models(status) == 2, 20, "two live models")

    # Timed from just before the close: the session cannot expire before its tab is gone, and reading the status
    # page below can take a second or two on a busy machine (CI once measured 2.0 s of a 4 s TTL from after it).
    closed_at = time.monotonic()
    tabs[0].close()  # one tab closed: its model stays for the TTL (a reload within it finds the run)...
    assert live_models(status) == 2
    # ...and is freed after it; the other tab's model stays.
    wait_for(lambda: live_models(status) == 1, TTL_S + 30, "the closed tab's model to be freed")
    assert time.monotonic() - closed_at >= TTL_S - 1
    tabs[1].close()
    wait_for(lambda: live_models(status) == 0, TTL_S + 30, "the second closed tab's model to be freed")


def test_a_closed_tab_is_freed_when_nobody_runs_a_script_any_more(page, tmp_path):
    """The last tab of a server closes and no other page runs: the session sweeper (a thread of the server) still
    frees its model after the TTL. Before, only a script run reaped, so a replica whose last tab had closed kept
    the model (and a mirrored Ray run) for good. This tab is also the server's first session, whose bookkeeping the
    warm-up's gc.freeze() made uncollectable: its model is freed only because an ended session is emptied. The
    server writes its count of live runs after each garbage collection (RNNVIZ_MEMORY_REPORT); this test reads
    that file and opens no page after the tab closed."""
    import json

    report = tmp_path / "memory.json"
    env = {"RNNVIZ_MEMORY_REPORT": str(report), "RNNVIZ_SWEEP_EVERY_S": "0.5"}
    with streamlit_server(extra_args=("--server.disconnectedSessionTTL", "2"), env=env) as url:
        tab = page.context.new_page()
        open_app_page(tab, url, TRAINING)
        choose(tab, "Built-in corpus", CORPUS_LABELS["hello"])
        click(tab, "Step")
        wait_for(lambda: (number(tab, "Step") or 0) > 0, 60, "a chunk of training")
        tab.close()
        closed_at = time.time()

        def freed() -> bool:
            try:
                state = json.loads(report.read_text())
            except (OSError, ValueError):
                return False
            return state["at"] > closed_at and state["live_runs"] == 0

        wait_for(freed, 2 + 30, "the sweeper to free the closed tab's model")

