"""A class opens the app at once, measured with light clients: N websocket sessions on Streamlit's own
protocol (no browser), one page at a time, against a server of their own. Every session's first run of the
page must finish with no exception element. The times are printed, not asserted: the targets (Home within
1.5 s for 30 sessions, every page within 3 s) are measured by ``python -m bench class_load`` on a quiet
machine. Loopback only; each wait is bounded."""

from __future__ import annotations

import pytest

from rnnviz.ui.app.registry import PAGES
from tests.e2e.harness import streamlit_server
from tests.load.light_clients import class_opens_page, summary, visit

SESSIONS = 8


@pytest.fixture(scope="module")
def light_server():
    with streamlit_server() as url:
        yield url


@pytest.mark.parametrize("url_path", [spec.url_path for spec in PAGES])
def test_sessions_opening_a_page_at_once_all_finish_without_an_exception(light_server, url_path):
    warm_up = visit(light_server, url_path)  # the first visit of a process imports and loads what it shares
    assert warm_up.status == "FINISHED_SUCCESSFULLY" and not warm_up.exceptions, warm_up
    records = class_opens_page(light_server, url_path, SESSIONS)
    result = summary(records)
    print(f"\n{url_path}: {SESSIONS} sessions at once, first run median {result['median_s']} s, "
          f"max {result['max_s']} s (alone after warm-up: {warm_up.seconds:.2f} s)")
    assert result["problems"] == [] and result["finished"] == SESSIONS, result
    assert result["exceptions"] == [], result
    assert all(record.elements > 3 for record in records), "each session received its page, not an empty run"
