"""A class at once on Ray: the load test of test_load.py with training on a two-node Ray cluster on 127.0.0.1.

The cluster (ray.cluster_utils.Cluster: a head and a worker node, one CPU each) is started here; the server
joins it through RNNVIZ_RAY_ADDRESS, as a Streamlit replica of a class would. Eight browser sessions: two
train (one actor on each node), a third waits for a CPU and sees its place, and starts by itself when a
session pauses; five use other pages. /_stcore/health must answer as in test_load.py. Loopback only.
"""

from __future__ import annotations

import json
import math
import statistics
import time

import pytest

from rnnviz.charlm.corpus import load_builtin
from tests.e2e.harness import SCREENSHOTS, open_app_page, streamlit_server, wait_idle
from tests.e2e.test_live_training import choose, click, number, wait_for
from tests.load.test_load import (
    CORPUS_LABELS,
    HEALTH_LIMIT_S,
    HEALTH_STALL_S,
    HEALTH_WITHIN_LIMIT_SHARE,
    OTHERS,
    SESSIONS,
    TRAINING,
    HealthPoller,
    Wire,
    front,
    scheduled_samples,
    server_status,
)

pytest.importorskip("ray", reason="Ray is in requirements-ray.txt (make install-dev installs it)")


@pytest.fixture(scope="module")
def ray_class_server(tmp_path_factory):
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80_000_000})
    cluster.add_node(num_cpus=1, object_store_memory=80_000_000)
    cluster.wait_for_nodes()
    env = {"RNNVIZ_RAY_ADDRESS": cluster.address, "RNNVIZ_CHECKPOINT_DIR": str(tmp_path_factory.mktemp("runs"))}
    try:
        with streamlit_server(env=env) as url:
            yield url
    finally:
        cluster.shutdown()


def test_eight_sessions_two_training_on_ray_and_one_waiting(browser, ray_class_server):
    url = ray_class_server
    poller = HealthPoller(url)
    contexts = [browser.new_context(viewport={"width": 1300, "height": 900}) for _ in range(SESSIONS)]
    names = ["train-hello", "train-english", "wait-stdlib", *OTHERS]
    try:
        pages = [context.new_page() for context in contexts]
        wires = [Wire(page, name) for page, name in zip(pages, names)]
        started = time.perf_counter()
        for page, address in zip(pages, [TRAINING] * 3 + OTHERS):
            page.goto(f"{url}/{'' if address == 'home' else address}", wait_until="commit")
        while not all(wire.finished for wire in wires):
            assert time.perf_counter() - started < 180, [w.name for w in wires if not w.finished]
            pages[0].wait_for_timeout(50)
        page_seconds = {wire.name: round(wire.finished[0] - started, 2) for wire in wires}
        for page in pages:
            front(page).wait_for_selector("h1")

        first, second, waiting = pages[:3]
        home, hand, decay, explorer, status = pages[3:]
        for page, corpus in ((first, "hello"), (second, "english-docs"), (waiting, "python-stdlib")):
            choose(front(page), "Built-in corpus", CORPUS_LABELS[corpus])
        for page in (first, second):
            click(front(page), "Start")
        for page in (first, second):
            wait_for(lambda p=page: (number(front(p), "Step") or 0) > 0, 120, "both sessions to train on Ray")
        click(front(waiting), "Start")
        wait_for(lambda: front(waiting).get_by_text("You are number 1 in the queue").count() > 0, 60,
                 "the third session to queue for a CPU of the cluster")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        assert front(waiting).get_by_text("the Ray cluster trains 2 models at a time").count() > 0
        waiting.screenshot(path=SCREENSHOTS / "load-ray-waiting.png")

        for _ in range(3):
            front(hand).get_by_role("button", name="Step", exact=True).click()
            wait_idle(hand)
        front(explorer).get_by_role("button", name="Show").nth(1).click()
        wait_idle(explorer, 120_000)
        front(home).get_by_role("link", name="Hand-built RNN").first.click()
        home.wait_for_selector("h1:has-text('Hand-built RNN')")
        expected = {"Training on the cluster": "2 of 2", "Waiting for a CPU": "1", "Nodes": "2",
                    "Live models in memory": "3"}
        seen: list = []
        try:
            wait_for(lambda: all(server_status(status, wires[names.index("server-status")], seen).get(label) == value
                                 for label, value in expected.items()), 30, "the server status page")
        finally:
            front(status).screenshot(path=SCREENSHOTS / "load-ray-status.png", full_page=True)
        assert front(status).get_by_text("Training runs on the Ray cluster at").count() > 0, seen

        click(front(first), "Pause")  # its actor is freed: the waiting session gets the CPU
        wait_for(lambda: (number(front(waiting), "Step") or 0) > 0, 120,
                 "the waiting session to start when a CPU frees")
        assert waiting.get_by_text("Waiting for a free training slot").count() == 0

        for page, corpus in ((first, "hello"), (second, "english-docs"), (waiting, "python-stdlib")):
            vocab = load_builtin(corpus).vocab
            samples = wait_for(lambda p=page: scheduled_samples(p), 60, f"a sample from the {corpus} model")
            assert number(page, "Uniform guess") == pytest.approx(math.log(vocab.size), abs=1e-3)
            assert set("".join(samples)) <= set(vocab.chars) | {"\n"}, corpus
        front(second).screenshot(path=SCREENSHOTS / "load-ray-training.png")
        for page in (second, waiting):
            click(front(page), "Pause")
        for page in pages:
            assert front(page).locator("[data-testid='stException']").count() == 0, page.url
        wall = time.perf_counter() - started
    finally:
        poller.stop()
        for context in contexts:
            context.close()

    assert [e for wire in wires for e in wire.exceptions] == []
    latencies = poller.latencies
    figures = {
        "sessions": SESSIONS, "backend": "ray, 2 nodes × 1 CPU", "first_script_run_s": page_seconds,
        "health_checks": len(latencies), "health_median_s": round(statistics.median(latencies), 4),
        "health_max_s": round(max(latencies), 4),
        "health_within_1s_share": round(sum(s < HEALTH_LIMIT_S for s in latencies) / len(latencies), 4),
        "wall_s": round(wall, 1),
    }
    (SCREENSHOTS / "load-ray-figures.json").write_text(json.dumps(figures, indent=2))
    print("load figures (Ray):", json.dumps(figures))
    assert not poller.failures, f"/_stcore/health did not answer: {poller.failures}"
    slow = sorted(((round(s, 3), round(t, 1)) for s, t in zip(latencies, poller.times)), reverse=True)[:8]
    assert figures["health_within_1s_share"] >= HEALTH_WITHIN_LIMIT_SHARE, f"slowest (s, at s): {slow}"
    assert max(latencies) < HEALTH_STALL_S, f"/_stcore/health stalled: slowest (s, at s): {slow}"


def test_a_private_local_ray_inside_the_server_trains_a_run(browser, tmp_path):
    """RNNVIZ_RAY_ADDRESS=local: the server starts Ray itself (from a script thread, once) and says so."""
    env = {"RNNVIZ_RAY_ADDRESS": "local", "RNNVIZ_CHECKPOINT_DIR": str(tmp_path)}
    with streamlit_server(env=env) as url:
        context = browser.new_context(viewport={"width": 1300, "height": 900})
        try:
            page = context.new_page()
            open_app_page(page, url, "server-status", timeout_ms=120_000)
            assert page.get_by_text("Training runs on a private Ray inside this server").count() > 0
            open_app_page(page, url, TRAINING, timeout_ms=120_000)
            choose(page, "Built-in corpus", CORPUS_LABELS["hello"])
            click(page, "Start")
            wait_for(lambda: (number(page, "Step") or 0) > 0, 120, "the run to train on the private Ray")
            click(page, "Pause")
            wait_for(lambda: page.get_by_text("Paused at step").count() > 0, 60, "the pause")
            assert page.locator("[data-testid='stException']").count() == 0
        finally:
            context.close()
