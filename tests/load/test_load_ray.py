"""A class at once on Ray: the load test of test_load.py with training on a two-node Ray cluster on 127.0.0.1.

The cluster (ray.cluster_utils.Cluster: a head and a worker node, one CPU each) is started here; the server
joins it through RNNVIZ_RAY_ADDRESS, as a Streamlit replica of a class would. Eight browser sessions: two
train (one actor on each node), a third waits for a CPU and sees its place, and starts by itself when a
session pauses; five use other pages. /_stcore/health must answer as in test_load.py. Loopback only.
"""

from __future__ import annotations

import pytest

from tests.e2e.harness import open_app_page, streamlit_server
from tests.e2e.test_live_training import choose, click, number, wait_for
from tests.load.test_load import CORPUS_LABELS, TRAINING, Backend, run_class

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


ON_RAY = Backend("ray, 2 nodes × 1 CPU", {"Training on the cluster": "2 of 2", "Waiting for a CPU": "1",
                                         "Nodes": "2", "Live models in memory": "3"},
                 "the Ray cluster trains 2 models at a time", "load-ray-figures.json", patience_s=120.0,
                 status_text="Training runs on the Ray cluster at")


@pytest.mark.alone  # its health latencies would also measure whatever ran beside it
def test_eight_sessions_two_training_on_ray_and_one_waiting(class_tabs, ray_class_server):
    run_class(class_tabs, ray_class_server, ON_RAY)


def test_a_private_local_ray_inside_the_server_trains_a_run(page, tmp_path):
    """RNNVIZ_RAY_ADDRESS=local: the server starts Ray itself (from a script thread, once) and says so."""
    env = {"RNNVIZ_RAY_ADDRESS": "local", "RNNVIZ_CHECKPOINT_DIR": str(tmp_path)}
    with streamlit_server(env=env) as url:
        open_app_page(page, url, "server-status", timeout_ms=120_000)
        assert page.get_by_text("Training runs on a private Ray inside this server").count() > 0
        open_app_page(page, url, TRAINING, timeout_ms=120_000)
        choose(page, "Built-in corpus", CORPUS_LABELS["hello"])
        click(page, "Start")
        wait_for(lambda: (number(page, "Step") or 0) > 0, 120, "the run to train on the private Ray")
        click(page, "Pause")
        wait_for(lambda: page.get_by_text("Paused at step").count() > 0, 60, "the pause")
        assert page.locator("[data-testid='stException']").count() == 0
