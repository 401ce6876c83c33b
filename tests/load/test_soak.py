"""Memory over a long day, compressed (a few minutes): rounds of light sessions open pages in waves of 15, two
of each wave train a live run and close with it, and after the disconnected-session TTL every model is freed,
the threads are back where they started, and the server's resident memory stops growing round over round.

One server of its own with a 5 s TTL. The first round warms the process up (imports, the pages' shared figures
and caches); from then on, RSS after the TTL may not grow by more than ``TOLERANCE_MB`` over the next rounds:
0.3 MB per session at this size, where a leak of the size the issue measured (0.2 MB per session, never returned)
over a day of a few hundred sessions would pass unseen by a single round but not by the trend."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import SHAKESPEARE
from tests.e2e.harness import streamlit_server
from tests.load.soak import server_pid_on, soak

TTL_S = 5
ROUNDS, SESSIONS = 4, 30
TOLERANCE_MB = 0.3 * SESSIONS * (ROUNDS - 2)  # growth allowed from the end of round 2 to the end of round 4


@pytest.fixture
def soak_server(tmp_path):
    if not SHAKESPEARE.exists():
        pytest.skip(f"{SHAKESPEARE} is missing: the tiny RNN preset trains on Tiny Shakespeare")
    shutil.copy(SHAKESPEARE, tmp_path / "tinyshakespeare.txt")  # the cache: nothing is downloaded
    with streamlit_server(extra_args=("--server.disconnectedSessionTTL", str(TTL_S)),
                          env={"RNNVIZ_CACHE": str(tmp_path), "RNNVIZ_RUN_DIR": str(tmp_path / "runs")}) as url:
        yield url, server_pid_on(int(url.rsplit(":", 1)[1]))


def test_memory_and_threads_come_back_after_rounds_of_sessions(soak_server):
    url, pid = soak_server
    rounds = soak(url, pid, ROUNDS, SESSIONS, wave=15, trainers_per_wave=2, ttl_s=TTL_S)
    curve = [(round(r.before.rss_mb), round(r.peak.rss_mb), round(r.after.rss_mb), r.after.threads) for r in rounds]
    print("RSS MB before / peak / after the TTL, threads after, per round:", curve)
    for r in rounds:
        assert not r.problems, r.problems
        assert r.live_models_after == 0, f"{r.live_models_after} models outlived their sessions' TTL"
        assert r.after.threads <= rounds[0].before.threads + 2, curve
    assert rounds[-1].after.rss_mb - rounds[1].after.rss_mb <= TOLERANCE_MB, curve
