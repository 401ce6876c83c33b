"""Live runs on a two-node Ray cluster on 127.0.0.1 (one CPU per node): three students on two CPUs queue
across the cluster, and a run whose node is removed comes back on the other node."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.serving.live import Status
from tests.ray_clusters import beyond_loopback, listening_sockets, ray, shutdown_all, two_nodes
from tests.test_ray_backend import (
    RAY_INLINE_LIMIT,
    TINY,
    actor_info,
    checkpoint_on_disk,
    past_a_checkpoint,
    ray_run,
    saved_checkpoint,
    setting,
    tick_until,
)

# Its chunks' results (the weights among them) are above Ray's inline limit, so Ray keeps them in the object store
# of the node that trained them until the page fetches them.
WIDE = replace(TINY, hidden=128, embed_dim=16)


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:4000])


@pytest.fixture(scope="module")
def cluster():
    """One two-node cluster for this module, shut down after it."""
    yield two_nodes()
    shutdown_all()


# --- on two nodes --------------------------------------------------------------------------------------------------


def test_three_students_on_two_cpus_queue_across_the_cluster(tmp_path, corpus, cluster, caplog, monkeypatch):
    from rnnviz.serving import ray_backend
    from rnnviz.serving.ray_backend import connect

    connection = connect(setting(tmp_path, address=cluster.address))
    assert connection.ok and "2 CPUs" in connection.message
    first, second, third = (ray_run(corpus, connection) for _ in range(3))
    first.start()
    second.start()
    said = set()  # while their workers start, on two free CPUs, neither says that it waits in a queue
    tick_until([first, second], lambda: said.update((first.message, second.message)) or (
        first.step > 0 and second.step > 0), "two runs training")
    assert any(m.startswith("Starting on the Ray cluster: a CPU is free") for m in said), said
    assert not any("queue" in m for m in said), said
    third.start()
    # Its actor waits for a CPU and answers nothing: no tick of its page may wait on it. Its launch once asked it
    # for the state to mirror and froze the page for STOP_TIMEOUT_S (60 s), then said "could not be fetched".
    monkeypatch.setattr(ray_backend, "STOP_TIMEOUT_S", 2.0)
    with caplog.at_level(logging.WARNING, logger=ray_backend.__name__):
        tick_until([first, second, third], lambda: "number 1 in the queue" in third.message, "the third's place")
    monkeypatch.undo()
    assert not [r.getMessage() for r in caplog.records if "could not be fetched" in r.getMessage()]
    assert third.status == Status.WAITING and third.step == 0
    assert "the Ray cluster trains 2 models at a time" in third.message
    assert {actor_info(first)["node"], actor_info(second)["node"]} == {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    first.update_settings(replace(first.settings, step_budget=first.step + 3))  # the first one finishes
    tick_until([first, second, third], lambda: third.step > 0, "the third to start")
    assert first.status == Status.FINISHED and first.remote.actor is None
    assert third.status == Status.RUNNING
    second.update_settings(replace(second.settings, step_budget=second.step))  # a budget already spent
    assert second.status == Status.FINISHED and second.remote.actor is None  # its CPU is free at once
    for run in (first, second, third):
        run.release()


def test_nothing_of_the_two_node_cluster_listens_beyond_loopback(tmp_path, corpus, cluster):
    import os

    from rnnviz.serving.ray_backend import connect

    run = ray_run(corpus, connect(setting(tmp_path, address=cluster.address)))
    run.start()
    tick_until([run], lambda: run.step > 0, "training")
    names = [name for _, _, name in listening_sockets(os.getpid())]
    assert names.count("raylet") >= 2 * 2 and "gcs_server" in names  # both nodes' raylets (two servers each)
    assert beyond_loopback(os.getpid()) == []
    run.release()


def test_a_run_whose_node_is_removed_comes_back_on_the_other_node(tmp_path, corpus, cluster):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from rnnviz.serving.ray_backend import connect

    connection = connect(setting(tmp_path, address=cluster.address, every=60, restarts=1))
    head = cluster.head_node.node_id

    @ray.remote(num_cpus=1)
    class Blocker:  # holds the head's CPU, so that the run's actor goes to the worker node
        def ready(self):
            return True

    blocker = Blocker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)).remote()
    ray.get(blocker.ready.remote())
    run = ray_run(corpus, connection)
    run.start()
    past_a_checkpoint(run)
    worker = next(node for node in cluster.worker_nodes)
    assert actor_info(run)["node"] == worker.node_id != head
    ray.kill(blocker)  # the head's CPU is free for the restart
    cluster.remove_node(worker)
    on_disk = checkpoint_on_disk(run)  # read once the node is gone: nothing writes a newer one until the restart
    assert on_disk > 0
    tick_until([run], lambda: run.notice is not None and "restarted it by itself" in run.notice, "the restart",
               timeout=120)
    back = run.remote.exact_state["step"]
    assert back == on_disk and run.step == back  # resumed from the checkpoint on disk, not from the start
    tick_until([run], lambda: run.step > back + 5, "training on the other node")
    assert actor_info(run)["node"] == head and run.status == Status.RUNNING
    run.release()


def test_a_node_lost_after_its_chunks_saved_the_run_loses_no_step(tmp_path, corpus, cluster):
    """The worker's node is removed after its chunks in flight trained and saved the run, before the page fetched
    their results, which go with the node: the checkpoint is newer than the page. Ray restarts the worker from it,
    and the page goes forward to it and says that no step was lost (it raised ObjectReconstructionFailedError, and
    with a chunk cut short after its save it said "-25 steps were lost")."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from rnnviz.serving.ray_backend import connect

    connection = connect(setting(tmp_path, address=cluster.address, every=1, restarts=1))  # every chunk saves
    head = cluster.head_node.node_id
    if not list(cluster.worker_nodes):  # the test before removed the cluster's worker node
        cluster.add_node(num_cpus=1, object_store_memory=80_000_000)
        cluster.wait_for_nodes()

    @ray.remote(num_cpus=1)
    class Blocker:  # holds the head's CPU, so that the run's actor goes to a worker node
        def ready(self):
            return True

    blocker = Blocker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)).remote()
    ray.get(blocker.ready.remote())
    run = ray_run(corpus, connection, config=WIDE)
    run.start()
    tick_until([run], lambda: run.step > 0, "training")
    in_flight = list(run.remote.chunks)  # the page ticks no more: these run, and their results stay on the node
    assert len(ray.wait(in_flight, num_returns=len(in_flight), timeout=60, fetch_local=False)[0]) == len(in_flight)
    node = next(node for node in cluster.worker_nodes if node.node_id == actor_info(run)["node"])
    shown, saved = run.step, saved_checkpoint(run)
    assert saved.step > shown and sum(v.nbytes for v in saved.model.state_dict().values()) > RAY_INLINE_LIMIT
    ray.kill(blocker)  # the head's CPU is free for the restart
    cluster.remove_node(node)
    tick_until([run], lambda: run.notice is not None and "restarted it by itself" in run.notice, "the restart",
               timeout=120)
    assert run.step == saved.step and run.status == Status.RUNNING
    assert (f"lost at step {shown:,} (its process or node died). Ray restarted it by itself from the checkpoint of "
            f"step {saved.step:,}: no step shown here was lost.") in run.notice
    assert [r.step for r in run.trainer.history] == list(range(1, saved.step + 1))
    tick_until([run], lambda: run.step > saved.step + 3, "training on the head node")
    assert actor_info(run)["node"] == head
    run.release()
