"""Live runs on Ray, on the test session's local cluster (tests/ray_clusters.py): a run that comes back exact,
a killed worker and one that Ray restarts, the pages with Ray, an unreachable cluster and missing Ray. The
queue across nodes and a lost node are in test_ray_cluster.py.

A run is driven as the page drives it: ``tick`` from a loop (the fragment), which polls and never waits."""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.durable import RunKeys
from rnnviz.serving.live import LiveRun, LiveSettings, Status
from rnnviz.serving.ray_backend import LOOPBACK_ONLY_ENV
from rnnviz.serving.settings import BackendSetting
from rnnviz.serving.slots import TrainingSlots
from tests.ray_clusters import beyond_loopback, listening_sockets, local_cluster, ray, shutdown_all

TINY = TrainConfig(kind="lstm", hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu", seed=5)
ENDLESS = LiveSettings(step_budget=1_000_000, sample_every=50, sample_length=20, eval_chars=300)
RAY_INLINE_LIMIT = 100 * 1024  # Ray's max_direct_call_object_size: larger arguments go to the object store
UNUSED = TrainingSlots(1)  # a run on Ray polls; this process's slots are not asked


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:4000])


def setting(tmp_path, address="local", every=60, restarts=0) -> BackendSetting:
    return BackendSetting(address, tmp_path, every, restarts, "the test")


def ray_run(corpus, connection, settings=ENDLESS, config=TINY) -> LiveRun:
    from rnnviz.serving.ray_backend import train_on_ray

    run = LiveRun.create(config, corpus, settings)
    run.token = secrets.token_urlsafe(32)
    return train_on_ray(run, connection)


def tick_until(runs, condition, what: str, timeout: float = 90.0, chunk: float = 0.2) -> None:
    """The page's fragment: tick every run, a few times a second, until ``condition()``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}: " + " | ".join(r.message for r in runs)
        for run in runs:
            run.tick(UNUSED, "page", chunk)
        time.sleep(0.05)


def past_a_checkpoint(run: LiveRun) -> None:
    """Short chunks until the actor saved the run after some training and the page has seen steps after that."""
    tick_until([run], lambda: (run.remote.checkpoint_step or 0) > 0 and run.step > run.remote.checkpoint_step,
               "a checkpoint and steps after it", chunk=0.02)


def children_of(pid: int) -> dict[int, str]:
    """The child processes of ``pid`` and their states (R, S, …; Z for one that died), read from /proc."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            children[int(stat.parent.name)] = fields[0]
    return children


def saved_checkpoint(run: LiveRun):
    """The run's last save in its folder as it is now, read independently of the actor (and of ``RayRun``'s
    store)."""
    from rnnviz.serving.ray_backend import run_store

    return run_store(run.remote.root).saved_checkpoint(RunKeys.of(run.token))


def checkpoint_on_disk(run: LiveRun) -> int:
    return saved_checkpoint(run).step


def saved(run: LiveRun) -> bool:
    """Whether the run's folder holds a save (its ``state`` file)."""
    return os.path.exists(os.path.join(run.remote.run_folder, "state"))


def actor_info(run: LiveRun) -> dict:
    return ray.get(run.remote.actor.info.remote())


# --- on the local cluster --------------------------------------------------------------------------------------


def test_a_run_trains_on_an_actor_and_comes_back_exact(tmp_path, corpus):
    from rnnviz.serving.ray_backend import connect

    local_cluster()
    connection = connect(setting(tmp_path))
    assert connection.ok and "2 CPUs" in connection.message
    run = ray_run(corpus, connection)
    run.start()
    tick_until([run], lambda: run.step >= 30, "30 steps")
    state = run.trainer.state_dict()  # a checkpoint taken while the actor trains: the actor's exact state
    assert state["step"] >= 30 and len(state["history"]) == state["step"]
    assert {int(s["step"]) for s in state["optimizer"]["state"].values()} == {state["step"]}  # Adam's t
    run.pause()  # the chunks in flight come back, then the exact state; the actor is freed
    assert run.status == Status.PAUSED and run.remote.actor is None
    steps = run.step
    assert [r.step for r in run.trainer.history] == list(range(1, steps + 1))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # actors train on one thread
    try:
        expected = Trainer(TINY, corpus)
        expected.run(steps)
    finally:
        torch.set_num_threads(threads)
    assert_close(run.trainer.model.state_dict(), expected.model.state_dict(), rtol=0, atol=0)
    assert [s.step for s in run.samples][:1] == [0] and all(s.step % 50 == 0 for s in run.samples)
    run.release()


def test_nothing_of_the_local_cluster_listens_beyond_loopback(tmp_path, corpus):
    """The GCS, the raylet, the agents and the worker of a training run all listen on 127.0.0.1 only."""
    from rnnviz.serving.ray_backend import connect

    local_cluster()
    run = ray_run(corpus, connect(setting(tmp_path)))
    run.start()
    tick_until([run], lambda: run.step > 0, "training")
    sockets = listening_sockets(os.getpid())
    assert {"gcs_server", "raylet"} <= {name for _, _, name in sockets}  # Ray's own servers are among them
    assert beyond_loopback(os.getpid()) == []
    run.release()


def test_a_killed_actor_is_lost_with_the_steps_stated_and_resumes_from_its_checkpoint(tmp_path, corpus):
    from rnnviz.serving.ray_backend import connect

    local_cluster()
    connection = connect(setting(tmp_path, every=60, restarts=0))
    run = ray_run(corpus, connection)
    run.start()
    past_a_checkpoint(run)
    ray.kill(run.remote.actor, no_restart=True)  # mid-chunk: two chunks are in flight
    tick_until([run], lambda: run.status == Status.LOST, "the loss to be seen")
    shown = run.step  # what the page showed when it saw the loss (chunks done before the kill count)
    checkpoint = saved_checkpoint(run)
    lost = shown - checkpoint.step  # the actor may have written one more checkpoint than the page had seen
    assert f"lost at step {shown:,}" in run.message and f"from step {checkpoint.step:,}" in run.message
    if lost > 0:
        assert f"the {lost:,} step{'s' if lost != 1 else ''} trained since then are lost" in run.message
    else:
        assert "no step shown here is lost" in run.message
    run.start()  # resume: the checkpoint comes back here, then a new actor trains from it
    assert run.step == checkpoint.step
    assert_close(run.trainer.model.state_dict(), checkpoint.model.state_dict(), rtol=0, atol=0)
    assert all(s.step <= checkpoint.step for s in run.samples)
    tick_until([run], lambda: run.step > checkpoint.step + 5, "training after the resume")
    assert run.status == Status.RUNNING
    run.release()


def test_pause_saves_the_run_at_its_step_and_a_second_server_opens_it_there(tmp_path, corpus):
    """Pause writes the paused step to the run's folder (the disk had the step of the last scheduled save), and a
    second server opens the paused run from there by its address (it said "does not hold") and trains it on. The
    first server's copy then neither writes over that training on Start nor ends it when its session ends."""
    import gc

    from rnnviz.serving.ray_backend import RayRun, connect, find_run

    local_cluster()
    connection = connect(setting(tmp_path, every=1_000_000))  # no save on schedule: the folder has the launch's
    first_server = [ray_run(corpus, connection)]  # its session holds the run
    run = first_server[0]
    run.start()
    tick_until(first_server, lambda: first_server[0].step >= 20, "20 steps")
    run.pause()
    paused = run.step
    checkpoint = saved_checkpoint(run)
    assert checkpoint.step == paused
    assert_close(checkpoint.model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)
    found = find_run(run.token, connection)  # another server's tab, opened on the run's address
    assert found is not None and found is not run and isinstance(found.remote, RayRun)
    assert found.status == Status.PAUSED and found.step == paused
    assert_close(found.trainer.model.state_dict(), run.trainer.model.state_dict(), rtol=0, atol=0)
    assert [s.step for s in found.samples] == [s.step for s in run.samples]
    found.start()
    tick_until([found], lambda: found.step > paused + 5, "the second server to train it on")
    state_file = os.path.join(run.remote.run_folder, "state")
    written = os.stat(state_file).st_mtime_ns
    run.start()  # the first server's tab, still open on its paused copy
    run.tick(UNUSED, "page", 0.2)
    assert run.status == Status.PAUSED and run.remote.actor is None and run.step == paused
    assert run.message == ("This run is training in another tab, on another server of this class: follow it there. "
                           f"This tab's copy stays paused at step {paused:,}, so that it does not write over what "
                           "that tab trains.")
    assert os.stat(state_file).st_mtime_ns == written
    session_end = run.remote._finalizer
    del run
    first_server.clear()  # its tab was closed and its session ended: what that server started goes
    gc.collect()
    assert not session_end.alive and saved(found)
    at = found.step
    tick_until([found], lambda: found.step > at + 5, "the second server's training to go on")
    assert found.status == Status.RUNNING
    found.release()


def test_reset_in_a_second_server_s_tab_ends_the_run_for_its_owner(tmp_path, corpus):
    """Reset in a tab on a second server ends the run in the owner's tab too, and nothing brings it back (the owner's
    tab said that the worker was lost, and its Start brought the run back under the same address)."""
    from rnnviz.serving.ray_backend import connect, find_run

    local_cluster()
    connection = connect(setting(tmp_path, restarts=1))
    run = ray_run(corpus, connection)
    run.start()
    tick_until([run], lambda: run.step > 0, "training")
    elsewhere = find_run(run.token, connection)  # the second server's tab, on the run's address
    elsewhere.release()  # its Reset, as the page's: the remote part first, then the run
    elsewhere.discard()
    tick_until([run], lambda: not run.is_active, "the owner's tab to see the reset")
    assert run.discarded and run.status != Status.LOST, run.message
    assert run.message == ("This run was reset in another tab, which discards it for good. Press Start for a new "
                           "run.")
    run.start()
    run.tick(UNUSED, "page", 0.2)
    assert not run.is_active and run.remote.actor is None
    assert find_run(run.token, connection) is None and not saved(run)


def test_a_closed_tab_s_actor_keeps_its_cpu_in_the_queue(tmp_path, corpus):
    """Two CPUs, two runs training, then the first run's tab is closed: its page asks nothing any more, but its
    actor holds its CPU until the session ends. A third run waits, and still says so once the queue's lease of the
    first has run out; it said "a CPU is free" then, and the status page counted no run waiting."""
    from rnnviz.serving.ray_backend import NAMESPACE, RayConnection, RunQueueActor, connect

    local_cluster()
    lease_s = 0.5
    shared = connect(setting(tmp_path))
    queue = RunQueueActor().options(namespace=NAMESPACE, num_cpus=0).remote(lease_s=lease_s)
    connection = RayConnection(shared.setting, True, shared.message, queue, where=shared.where)
    closed, other, third = (ray_run(corpus, connection) for _ in range(3))
    closed.start()
    other.start()
    tick_until([closed, other], lambda: closed.step > 0 and other.step > 0, "two runs training")
    third.start()
    # The page of ``closed`` ticks no more. Tick the others (the third one asks its place at every tick) until the
    # queue has not heard of ``closed`` for well over its lease.
    past_the_lease = time.monotonic() + 3 * lease_s
    tick_until([other, third], lambda: time.monotonic() > past_the_lease, "the lease to run out")
    assert third.status == Status.WAITING and "You are number 1 in the queue" in third.message, third.message
    assert connection.cluster()["waiting"] == 1
    for run in (closed, other, third):
        run.release()


def test_a_sigkilled_worker_restarts_by_itself_from_the_checkpoint(tmp_path):
    """With a real corpus: its text is far above Ray's inline limit for arguments (100 KiB), so were it an
    argument of the actor's constructor, Ray would keep it in the object store and a restart could not get it
    back (it died with ReferenceCountingAssertionError, and the run waited for a click)."""
    from rnnviz.serving.ray_backend import connect

    text = english_docs_text()
    assert len(text.encode()) > 4 * RAY_INLINE_LIMIT
    local_cluster()
    connection = connect(setting(tmp_path, every=60, restarts=1))
    run = ray_run(Corpus("docs", text), connection)
    run.start()
    past_a_checkpoint(run)
    pid = actor_info(run)["pid"]
    os.kill(pid, signal.SIGKILL)
    on_disk = checkpoint_on_disk(run)  # read after the kill: no newer one can come until the restart trains on
    assert on_disk > 0
    tick_until([run], lambda: run.notice is not None and "Ray is restarting it" in run.notice, "the loss")
    shown = run.remote.lost_at
    tick_until([run], lambda: "restarted it by itself" in run.notice, "the restart")
    back = run.remote.exact_state["step"]
    assert back == on_disk  # the restarted actor resumed from the checkpoint on disk, not from its arguments
    assert run.step == back  # the page went back to the checkpoint, then trains on
    assert f"lost at step {shown:,}" in run.notice and f"checkpoint of step {back:,}" in run.notice
    assert back <= shown
    lost = shown - back  # 0 when the worker died right after saving: the notice says so in words
    assert (f"{lost:,} step" in run.notice) if lost else ("no step shown here was lost" in run.notice)
    tick_until([run], lambda: run.step > shown + 5, "training on the restarted worker")
    assert actor_info(run)["pid"] != pid and run.status == Status.RUNNING
    run.release()


def test_the_token_finds_the_actor_again_from_another_replica(tmp_path, corpus):
    import gc

    from rnnviz.serving.ray_backend import NAMESPACE, RESET_MARK, connect, find_run

    local_cluster()
    connection = connect(setting(tmp_path))
    run = ray_run(corpus, connection)
    run.start()
    tick_until([run], lambda: run.step >= 20 and len(run.samples) >= 1, "20 steps")
    assert find_run(secrets.token_urlsafe(32), connection) is None  # another token finds nothing

    def reattach_train_and_let_go() -> tuple[str, str, int]:
        """Another replica's tab: it finds the run by its token, trains it on, and its session ends."""
        found = find_run(run.token, connection)  # what a replica that holds only the address rebuilds
        assert found is not None and found is not run and found.token == run.token
        assert found.step >= run.step and found.corpus_name == "docs" and found.samples[0].step == 0
        at = found.step
        tick_until([found], lambda: found.step > at + 5, "the found run to train on")
        assert found.status == Status.RUNNING
        tick_until([found], lambda: saved(found), "a checkpoint on disk")
        return found.remote.name, found.remote.run_folder, at

    # That replica only mirrored the run: when its copy goes, the actor and the checkpoint stay for the replica
    # that owns the run. (It used to kill the one and delete the other.)
    name, path, at = reattach_train_and_let_go()
    gc.collect()
    assert os.path.exists(path)
    actor = ray.get_actor(name, namespace=NAMESPACE)
    assert ray.get(actor.info.remote(), timeout=30)["step"] >= at + 5
    run.release()  # Reset by the owner frees both; of the run's folder only the mark that it was reset stays
    assert os.listdir(path) == [RESET_MARK]


def test_a_mirror_of_a_run_nobody_trains_frees_the_orphan_actor_and_keeps_its_checkpoint(tmp_path, corpus,
                                                                                        monkeypatch):
    """After a replica restarts, its runs' actors have no owner: a tab that reattached one and then left frees
    the actor (and its CPU) once nobody trains it, and the checkpoint stays on disk."""
    import gc

    from rnnviz.serving import ray_backend
    from rnnviz.serving.ray_backend import NAMESPACE, connect, find_run

    monkeypatch.setattr(ray_backend, "MIRROR_IDLE_S", 0.5)
    local_cluster()
    connection = connect(setting(tmp_path))
    run = ray_run(corpus, connection)
    run.start()
    tick_until([run], lambda: saved(run), "a checkpoint on disk")
    name, path = run.remote.name, run.remote.run_folder
    run.remote._finalizer.detach()  # the replica that started it is gone: its copy stops asking, frees nothing

    def reattach_and_leave() -> None:
        assert find_run(run.token, connection) is not None  # another replica's tab finds it, then its session ends

    actor = ray.get_actor(name, namespace=NAMESPACE)
    deadline = time.monotonic() + 60
    while ray.get(actor.info.remote(), timeout=30)["idle_s"] < 0.5:  # the owner's last chunks have run
        assert time.monotonic() < deadline, "the actor kept training with nobody asking"
        time.sleep(0.1)
    reattach_and_leave()
    gc.collect()
    while True:
        try:
            ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:
            break  # freed
        assert time.monotonic() < deadline, "the orphan actor outlived the last mirror of its run"
        time.sleep(0.2)
    assert os.path.exists(os.path.join(path, "state"))  # the run's state stays on disk


def test_the_actor_of_a_run_whose_session_ended_is_killed(tmp_path, corpus):
    import gc

    from rnnviz.serving.ray_backend import NAMESPACE, connect

    local_cluster()
    connection = connect(setting(tmp_path))
    runs = [ray_run(corpus, connection)]
    runs[0].start()
    tick_until(runs, lambda: runs[0].step > 0, "training")
    name, path = runs[0].remote.name, runs[0].remote.run_folder
    assert ray.get_actor(name, namespace=NAMESPACE) is not None
    runs.clear()  # the session was dropped after the disconnected-session TTL: nothing refers to the run any more
    gc.collect()
    deadline = time.monotonic() + 30
    while True:
        try:
            ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:
            break  # no such actor any more
        assert time.monotonic() < deadline, "the actor outlived its run"
        time.sleep(0.2)
    assert not os.path.exists(path)


def test_with_a_local_ray_the_status_page_shows_it_and_the_live_page_trains_there(monkeypatch):
    from rnnviz.serving.ray_backend import RayRun
    from rnnviz.ui.app.server import ray_connection
    from rnnviz.ui.kit.models import LIVE_RUN_KEY
    from tests.apptest_helpers import open_page, page_text

    local_cluster()
    monkeypatch.setenv("RNNVIZ_RAY_ADDRESS", "local")
    ray_connection.clear()
    status = open_page("app_pages/server_status.py")
    assert not status.exception
    assert "Training runs on a private Ray inside this server: 2 CPUs" in page_text(status)
    at = open_page("app_pages/live_training.py")
    at.selectbox(key="live_training_preset").set_value("Quick demo (30 s)").run()
    at.selectbox(key="live_training_builtin").set_value("hello").run()
    at.button(key="live_training_start").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert isinstance(run.remote, RayRun)
    deadline = time.monotonic() + 60
    while run.step == 0 and time.monotonic() < deadline:  # AppTest runs the fragment once per full rerun
        at.run()
        time.sleep(0.2)
    assert not at.exception and run.step > 0
    at.button(key="live_training_pause").click().run()
    assert run.status == Status.PAUSED and run.remote.actor is None
    at.button(key="live_training_start").click().run()  # a worker dies under a running page
    deadline = time.monotonic() + 60
    while run.remote.actor is None or run.remote.ready_ref is not None:
        assert time.monotonic() < deadline
        at.run()
    ray.kill(run.remote.actor, no_restart=True)
    while run.status != Status.LOST:
        assert time.monotonic() < deadline, run.message
        at.run()
    errors = " ".join(e.value for e in at.error)
    assert f"was lost at step {run.step:,}" in errors and "Start resumes from there" in errors
    assert not at.button(key="live_training_start").disabled and not at.exception
    at.button(key="live_training_start").click().run()
    assert run.status in (Status.RUNNING, Status.WAITING) and run.remote is not None
    at.button(key="live_training_reset").click().run()
    assert run.remote is None  # Reset let the actor go
    ray_connection.clear()


# --- no cluster --------------------------------------------------------------------------------------------------


def test_a_private_ray_started_from_a_script_thread_outlives_that_thread(tmp_path):
    """A Streamlit script thread ends after its run; the private Ray it started must not end with it."""
    import threading

    from rnnviz.serving.ray_backend import connect

    shutdown_all()
    made = []
    thread = threading.Thread(target=lambda: made.append(connect(setting(tmp_path, address="local"))))
    thread.start()
    thread.join()
    assert made[0].ok and ray.is_initialized()
    # Parent-death signals go out when the OS thread exits, which is a moment after join() returns: wait for
    # that, then every process the thread started must still run.
    task = Path(f"/proc/self/task/{thread.native_id}")
    deadline = time.monotonic() + 30
    while task.exists():
        assert time.monotonic() < deadline, "the starting thread never exited"
        time.sleep(0.01)
    started = children_of(os.getpid())
    assert started and all(state != "Z" for state in started.values()), started

    @ray.remote(num_cpus=0)
    def answer():
        return 42

    assert ray.get(answer.remote(), timeout=60) == 42 and ray.get(made[0].queue.waiting.remote(), timeout=30) == 0
    shutdown_all()


def test_a_private_ray_of_the_app_keeps_to_loopback_by_itself(tmp_path):
    """RNNVIZ_RAY_ADDRESS=local in a server started without Ray's loopback switch (as `make run` starts it): the
    private Ray that it starts listens on 127.0.0.1 only. Without the switch, Ray on Linux takes this machine's
    interface address and listens on all interfaces."""
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k not in LOOPBACK_ONLY_ENV}
    script = ("import sys; from rnnviz.serving.settings import BackendSetting; "
              "from rnnviz.serving.ray_backend import connect; "
              f"c = connect(BackendSetting('local', {str(tmp_path)!r}, 60, 0, 'the test')); "
              "print('ok' if c.ok else c.message, flush=True); sys.stdin.read()")
    server = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=environ, cwd=Path(__file__).resolve().parents[1])
    try:
        assert server.stdout.readline().strip() == "ok"
        sockets = listening_sockets(server.pid)
        assert {"gcs_server", "raylet"} <= {name for _, _, name in sockets}
        assert beyond_loopback(server.pid) == []
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def test_an_unreachable_cluster_is_said_in_words_and_training_stays_here(tmp_path, corpus):
    from rnnviz.serving.ray_backend import connect

    shutdown_all()
    connection = connect(setting(tmp_path, address="127.0.0.1:9"))
    assert not connection.ok and not ray.is_initialized()
    assert "cannot be reached: nothing answers at 127.0.0.1:9" in connection.message
    assert "Training runs in this server process instead" in connection.message
    run = LiveRun.create(TINY, corpus, LiveSettings(step_budget=5, sample_every=5))  # what the page then makes
    run.start()
    run.tick(TrainingSlots(1), "me", 5.0)
    assert run.remote is None and run.status == Status.FINISHED and run.step == 5


def test_missing_ray_is_said_in_words(tmp_path, monkeypatch):
    import sys

    from rnnviz.serving.ray_backend import connect, forget_connection

    forget_connection()
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    connection = connect(setting(tmp_path, address="auto"))
    forget_connection()
    assert not connection.ok and "Ray is not installed here" in connection.message
    assert "requirements-ray.txt" in connection.message


def test_the_status_page_says_an_unreachable_cluster_and_the_live_page_trains_here(monkeypatch):
    from rnnviz.ui.app.server import ray_connection
    from rnnviz.ui.kit.models import LIVE_RUN_KEY
    from tests.apptest_helpers import open_page, page_text

    shutdown_all()
    monkeypatch.setenv("RNNVIZ_RAY_ADDRESS", "127.0.0.1:9")
    ray_connection.clear()
    status = open_page("app_pages/server_status.py")
    assert not status.exception
    error = " ".join(e.value for e in status.error)
    assert "The Ray cluster “127.0.0.1:9” ($RNNVIZ_RAY_ADDRESS) cannot be reached" in error
    assert "Training runs in this server process instead" in error and "127.0.0.1:9" in page_text(status)
    at = open_page("app_pages/live_training.py")
    at.selectbox(key="live_training_preset").set_value("Quick demo (30 s)").run()
    at.selectbox(key="live_training_builtin").set_value("hello").run()
    at.button(key="live_training_step").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert not at.exception and run.remote is None and run.step > 0
    ray_connection.clear()


def test_the_queue_tells_a_run_starting_on_a_free_cpu_from_one_that_waits():
    """Two CPUs. Three runs press Start at once: two start (place 0), the third waits (number 1). Once the first
    two train, a fourth waits behind the third; when a run stops, the third starts; the status page counts only
    the runs that really wait."""
    from rnnviz.serving.ray_backend import RunQueue

    queue = RunQueue()
    assert [queue.place(run, 2) for run in ("a", "b", "c")] == [0, 0, 1]
    assert queue.waiting(2) == 1 and queue.waiting() == 3
    queue.training("a")
    queue.training("b")
    assert queue.place("c", 2) == 1 and queue.place("d", 2) == 2 and queue.waiting(2) == 2
    queue.leave("a")  # its run paused: its CPU is free
    assert queue.place("c", 2) == 0 and queue.place("d", 2) == 1 and queue.waiting(2) == 1
    assert queue.place("d", 3) == 0  # a node joined


def test_the_status_banner_counts_the_cpus_the_cluster_has_now(tmp_path):
    """A node lost after the connection was made: the banner says the CPUs left, not those at connect time."""
    from rnnviz.serving.ray_backend import RayConnection

    connection = RayConnection(setting(tmp_path), True, "Training runs on the Ray cluster at h:6379: 2 CPUs, one per "
                               "training session.", where="the Ray cluster at h:6379")
    assert connection.banner({"cpus": 1.0, "free": 0.0, "nodes": 1, "waiting": 0}) == (
        "Training runs on the Ray cluster at h:6379: 1 CPU, one per training session.")
    assert "3 CPUs" in connection.banner({"cpus": 3.0, "free": 3.0, "nodes": 2, "waiting": 0})
    assert connection.banner({"error": "ConnectionError: gone"}) == connection.message
