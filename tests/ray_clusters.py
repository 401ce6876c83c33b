"""Ray clusters for the tests, one at a time per test process: a local one (started once per test session) and
a two-node one on 127.0.0.1 (ray.cluster_utils.Cluster, one CPU per node). Switching shuts the other down.

Loopback only; the dashboard stays off and the object store small, so that a cluster starts in seconds."""

from __future__ import annotations

import atexit

import pytest

ray = pytest.importorskip("ray", reason="Ray is in requirements-ray.txt (make install-dev installs it)")

OBJECT_STORE = 150_000_000
# A removed node counts as dead after about 2 s instead of Ray's default (much longer).
FAST_NODE_DEATH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                   "health_check_timeout_ms": 500, "health_check_failure_threshold": 4}
_held: dict = {"kind": None, "cluster": None}


def _shutdown() -> None:
    from rnnviz.charlm.ray_backend import forget_connection

    if ray.is_initialized():
        ray.shutdown()
    if _held["cluster"] is not None:
        _held["cluster"].shutdown()
    _held.update(kind=None, cluster=None)
    forget_connection()


def local_cluster() -> None:
    """The local two-CPU cluster of this test session (started when first needed)."""
    if _held["kind"] == "local" and ray.is_initialized():
        return
    _shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=OBJECT_STORE,
             namespace="rnnviz", log_to_driver=False)
    _held["kind"] = "local"


def two_nodes():
    """A head and a worker node on 127.0.0.1, one CPU each; returns the Cluster (tests add and remove nodes)."""
    from ray.cluster_utils import Cluster

    _shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80_000_000,
        "_system_config": FAST_NODE_DEATH})
    cluster.add_node(num_cpus=1, object_store_memory=80_000_000)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="rnnviz", log_to_driver=False)
    _held.update(kind="two", cluster=cluster)
    return cluster


def shutdown_all() -> None:
    _shutdown()


atexit.register(shutdown_all)  # a cluster still up when the test session ends (the local one) goes with it
