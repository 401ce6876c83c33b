"""Live training on a Ray cluster: one actor per training session, the cluster's CPUs as the training slots.

Each run that trains is one actor (``TrainerActor``, ``num_cpus=1``), so Ray's CPU accounting is the limit on
sessions that train at once across the whole cluster; a run whose actor waits for a CPU is in the queue, and
``RunQueue`` (a tiny named actor of no CPU) tells it its place. The actor holds a LiveRun of its own and trains
it in chunks; the page's LiveRun is a mirror that ``RayRun.tick`` keeps up to date by polling with
``ray.wait(..., timeout=0)``: it never blocks the script thread. Two chunks stay in flight, so the actor
never idles while the page polls.

A run on Ray lives in its run folder under the checkpoint folder, which every node must see, in the format of
durable runs (rnnviz.serving.durable: one folder per run named by a digest of the token, every file
authenticated with a key from the token). The page writes the run there before it starts an actor; the actor's
constructor gets only where to find it (a RunPlace: small values, which Ray keeps to restart the actor) and
reads it back; then the actor saves it every ``checkpoint_every`` steps (or 60 s) and at every stop. When the
actor or its node dies, Ray restarts it with the same small arguments (``max_restarts``), it reads the newest
save, and the page says how many steps were lost and trains on; once the restarts are spent, the run is LOST
and Start resumes it from the folder. Pause, the budget's end and a halt save the run in its folder at that step,
bring the exact state back into the page's LiveRun and free the CPU.

Actors are named ``run-<digest of the run's token>`` in the namespace NAMESPACE: the token in a run's
address finds the actor again from another replica (``find_run``), or the run's folder when no actor trains it
(a paused run); without the token nobody reaches it. An actor belongs to the server process that made it and is
killed, and its folder deleted, when the run is garbage collected there (its session ended: Streamlit's
disconnected-session TTL, as for an in-process model); a replica that only reattached a run mirrors it and
deletes nothing. Reset in any replica ends the run everywhere: it leaves a mark (RESET_MARK) in the run's folder,
which a replica whose copy of the run sees its worker die, or is asked to Start it, reads there.

``connect`` joins (or starts) Ray once per process. Missing Ray, or a cluster that does not answer, is an
unusable RayConnection whose message says so in words; the app then trains in this process.

No streamlit here.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import logging
import os
import secrets
import shutil
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import EvalRecord, Halt, StepRecord, Trainer
from rnnviz.serving.durable import RunKeys, RunStore, StoredRunError
from rnnviz.serving.live import ACTIVE, LiveRun, LiveSettings, SampleRecord, Status, light_copy
from rnnviz.serving.settings import BackendSetting, StoreSetting

_LOGGER = logging.getLogger(__name__)

NAMESPACE = "rnnviz"  # every actor of the app lives here
QUEUE_NAME = "rnnviz-queue-3"  # -3: it forgets runs otherwise (a detached actor of an old kind may still run)
IN_FLIGHT = 2  # chunks queued on an actor: it starts the next while the page fetches the last
QUEUE_LEASE_S = 30.0  # a run silent this long leaves the queue, once its actor is gone (RunQueue)
TRAINING_NOTE_EVERY_S = 10.0  # how often a training run tells the queue that it holds a CPU
STOP_TIMEOUT_S = 60.0  # Pause waits this long at most for the chunks in flight
MIRROR_IDLE_S = 60.0  # a run nobody has trained for this long when a replica's mirror of it goes is an orphan
RESTART_WAIT_S = 120.0  # a worker that Ray restarts must answer within this, or the run counts as lost
CONNECT_TIMEOUT_S = 3.0  # a cluster address that does not accept a TCP connection in this time is unreachable
RESET_MARK = "reset"  # a file in a run's folder: the run was reset, and no replica may train it again


# --- the connection, once per process ---------------------------------------------------------------------------


@dataclass
class RayConnection:
    """Whether this process trains on Ray, and if not, why not (in words a page can show)."""

    setting: BackendSetting
    ok: bool
    message: str
    queue: object = None  # the RunQueue actor handle
    started_at: float = field(default_factory=time.time)
    where: str = ""  # "the Ray cluster at HOST:PORT", or "a private Ray inside this server"

    def banner(self, cluster: dict) -> str:
        """Where training runs and on how many CPUs, from ``cluster()`` as it is now (a node may have joined or been
        lost since the connection was made)."""
        if not self.ok or "cpus" not in cluster:
            return self.message
        cpus = cluster["cpus"]
        return f"Training runs on {self.where}: {cpus:g} CPU{'' if cpus == 1 else 's'}, one per training session."

    def cluster(self) -> dict:
        """CPUs in all and free, live nodes and runs waiting (the Server status page); {} when not connected."""
        if not self.ok:
            return {}
        import ray

        try:
            total, free = ray.cluster_resources(), ray.available_resources()
            nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
            cpus = int(total.get("CPU", 0))
            waiting = ray.get(self.queue.waiting.remote(cpus), timeout=5) if self.queue is not None else None
        except Exception as err:  # a cluster that went away: say it, do not raise on a status page
            return {"error": f"{type(err).__name__}: {err}"}
        return {"cpus": total.get("CPU", 0.0), "free": free.get("CPU", 0.0), "nodes": nodes, "waiting": waiting}


_connection: list[RayConnection | None] = [None]
_connect_lock = threading.Lock()


def _reachable(address: str) -> str | None:
    """None when HOST:PORT accepts a TCP connection, else the reason (ray.init would retry for minutes)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT_S):
            return None
    except ValueError:
        return f"“{address}” is not an address of the form HOST:PORT"
    except OSError as err:
        return f"nothing answers at {address} ({err.strerror or err})"


def _bootstrap_address(address: str) -> tuple[str | None, str | None]:
    """The HOST:PORT that ``ray.init`` dials for ``address``, or None and the reason. "auto" reads the running
    cluster's; Ray replaces a loopback host with this machine's interface address (unless Ray is kept on
    loopback, see LOOPBACK_ONLY_ENV), so the reachability check must test what Ray will dial, not the literal."""
    if address.startswith("ray://"):
        return None, "Ray Client addresses (ray://…) are not supported: give the cluster's HOST:6379"
    from ray._private.services import canonicalize_bootstrap_address

    if address != "auto":
        try:
            return canonicalize_bootstrap_address(address), None
        except Exception:
            return None, f"“{address}” is not an address of the form HOST:PORT"
    try:
        found = canonicalize_bootstrap_address("auto")
    except Exception as err:
        return None, f"no running Ray cluster was found for “auto” ({err})"
    if not found:
        return None, "no running Ray cluster was found for “auto” (start one with `ray start --head`)"
    return found, None


def connect(setting: BackendSetting) -> RayConnection:
    """Join the cluster at ``setting.address`` ("local" starts a private one), once per process.

    ``ray.init`` runs only when ``ray.is_initialized()`` is False; a process whose Ray is already up (a test,
    a second call) reuses it. Never raises: a connection that failed carries the reason."""
    with _connect_lock:
        held = _connection[0]
        if held is not None and held.setting == setting and (not held.ok or _initialized()):
            return held
        _connection[0] = connection = _connect(setting)
        return connection


def _initialized() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized()


def _connect(setting: BackendSetting) -> RayConnection:
    address = setting.address
    fallback = "Training runs in this server process instead, as without Ray."
    if address == "local":
        keep_ray_on_loopback()
    try:
        import ray
    except ImportError:
        return RayConnection(setting, False, f"{setting.source} asks for the Ray cluster “{address}”, but Ray is not "
                             "installed here: `pip install -r requirements-ray.txt`. " + fallback)
    try:
        if not ray.is_initialized():
            if address == "local":
                _init_in_a_lasting_thread(address="local", include_dashboard=False, namespace=NAMESPACE,
                                          log_to_driver=False)
            else:
                target, problem = _bootstrap_address(address)
                problem = problem or _reachable(target)
                if problem and target and target != address:
                    problem += f" (Ray dials {target} for “{address}”)"
                if problem:
                    return RayConnection(setting, False, f"The Ray cluster “{address}” ({setting.source}) cannot be "
                                         f"reached: {problem}. " + fallback)
                _init_in_a_lasting_thread(address=target, namespace=NAMESPACE, log_to_driver=False)
        queue = RunQueueActor().options(name=QUEUE_NAME, namespace=NAMESPACE, lifetime="detached",
                                        get_if_exists=True, num_cpus=0).remote()
    except Exception as err:  # ConnectionError, AuthenticationError, RuntimeError, …: all mean "not usable"
        _LOGGER.warning("Ray at %s is not usable", address, exc_info=True)
        return RayConnection(setting, False, f"The Ray cluster “{address}” ({setting.source}) could not be joined: "
                             f"{type(err).__name__}: {str(err)[:300]}. " + fallback)
    cpus = ray.cluster_resources().get("CPU", 0)
    where = "a private Ray inside this server" if address == "local" else f"the Ray cluster at {address}"
    return RayConnection(setting, True, f"Training runs on {where}: {cpus:g} CPUs, one per training session.",
                         queue, where=where)


# Ray's switch for a machine that is not part of a multi-node cluster (Ray reads it when it is first imported):
# with it, Ray takes 127.0.0.1 as the node's address and binds every socket there (GCS, raylet, workers, agents).
# Without it, Ray on Linux replaces 127.0.0.1 with the machine's interface address and listens on all interfaces.
# A private Ray inside this server ("local") is one machine by definition; the tests set it too (tests/conftest.py).
LOOPBACK_ONLY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def keep_ray_on_loopback() -> bool:
    """Keep a Ray that this process starts on 127.0.0.1 (False when Ray was imported before without the switch:
    then it is too late, and Ray listens where it chose). An operator's own setting of the variable wins."""
    import sys

    for name, value in LOOPBACK_ONLY_ENV.items():
        os.environ.setdefault(name, value)
    constants = sys.modules.get("ray._private.ray_constants")
    return constants is None or not constants.ENABLE_RAY_CLUSTER


def _init_in_a_lasting_thread(**options) -> None:
    """``ray.init(**options)`` from a thread that lives as long as the process, and wait for it.

    A local Ray's processes (GCS, raylet) are started with a parent-death signal, which Linux sends when the
    *thread* that started them ends. A Streamlit script thread ends after its run, which killed a private Ray
    a minute after it started; this thread never ends (a daemon, it goes with the process)."""
    import ray

    done = threading.Event()
    failure: list[BaseException] = []

    def keeper():
        try:
            ray.init(**options)
        except BaseException as err:  # handed to the caller below
            failure.append(err)
        done.set()
        if not failure:
            threading.Event().wait()  # keep the thread, and with it Ray's processes, alive

    threading.Thread(target=keeper, name="rnnviz-ray", daemon=True).start()
    done.wait()
    if failure:
        raise failure[0]


def forget_connection() -> None:
    """Drop this process's connection (tests that start and stop clusters)."""
    with _connect_lock:
        _connection[0] = None


# --- the queue: places of runs whose actor waits for a CPU -------------------------------------------------------


class RunQueue:
    """The runs of every replica that train, and those whose actor is not training yet, first come first served.

    A run whose actor is not training yet is either starting (a CPU is free for it: Ray is placing its worker,
    which takes seconds) or really waiting (every CPU trains a run). Ray does not say which, so the queue counts:
    of the runs not training yet, as many as there are CPUs not training are starting, the rest wait.

    A run that stops saying where it stands for ``lease_s`` (its tab was closed, its replica went) is forgotten
    once its actor is gone: until its session ends, the actor of a closed tab still holds its CPU (or its place in
    Ray's line), and a queue that forgot it told the next run that a CPU was free. ``actor_exists`` says whether
    the actor of a run id still exists (``run_actor_exists``, asked of Ray)."""

    def __init__(self, lease_s: float = QUEUE_LEASE_S, actor_exists=None):
        self._waiting: dict[str, float] = {}  # run id → last seen, in arrival order
        self._training: dict[str, float] = {}  # run id → last seen
        self.lease_s = lease_s
        self.actor_exists = actor_exists or run_actor_exists

    def _expire(self):
        now = time.monotonic()
        for table in (self._waiting, self._training):
            for run_id in [r for r, seen in table.items() if now - seen > self.lease_s]:
                if self.actor_exists(run_id):
                    table[run_id] = now  # asked again a lease later; the run keeps its place in the line
                else:
                    del table[run_id]

    def place(self, run_id: str, cpus: int) -> int:
        """Join (or stay in) the line of runs not training yet, on a cluster of ``cpus`` CPUs: 0 while a CPU is
        free for this run (its worker is starting), else its place among those that wait, 1 for the next."""
        self._expire()
        self._waiting[run_id] = time.monotonic()
        ahead = list(self._waiting).index(run_id)
        return max(0, ahead + 1 - self._free(cpus))

    def training(self, run_id: str) -> None:
        """``run_id``'s actor trains (it holds a CPU); said again every TRAINING_NOTE_EVERY_S."""
        self._waiting.pop(run_id, None)
        self._training[run_id] = time.monotonic()

    def leave(self, run_id: str) -> None:
        self._waiting.pop(run_id, None)
        self._training.pop(run_id, None)

    def _free(self, cpus: int) -> int:
        return max(0, int(cpus) - len(self._training))

    def waiting(self, cpus: int | None = None) -> int:
        """How many runs wait for a CPU (those starting on a free one not counted when ``cpus`` is given)."""
        self._expire()
        return len(self._waiting) if cpus is None else max(0, len(self._waiting) - self._free(cpus))


def actor_name(run_id: str) -> str:
    return f"run-{run_id}"


def run_actor_exists(run_id: str) -> bool:
    """Whether the actor of ``run_id`` still exists: training, starting, waiting for a CPU or being restarted."""
    import ray

    if not ray.is_initialized():
        return False
    try:
        ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
    except ValueError:  # no actor of that name (any more)
        return False
    except Exception:  # Ray did not answer: keep the run rather than say that its CPU is free
        _LOGGER.debug("could not look up the actor of run %s", run_id, exc_info=True)
        return True
    return True


def RunQueueActor():  # noqa: N802 (a class, made remote when Ray is here)
    import ray

    return ray.remote(RunQueue)


# --- the actor --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPlace:
    """Where an actor finds its run, and all that its constructor takes.

    Small values only: Ray keeps arguments this small inline in the actor's creation task and gives them again
    when it restarts the actor. Larger ones (a corpus, the weights) would live in the object store, where they are
    freed once the caller drops its reference, and a restart then died with ReferenceCountingAssertionError
    (Ray cannot restart an actor whose constructor arguments are gone: ray-project/ray#53727). The run itself is
    in its folder under ``root``; ``keys`` open that folder (derived from the token, which stays on the page)."""

    root: str
    keys: RunKeys
    checkpoint_every: int


def run_store(root: str | Path, checkpoint_every: int = 200) -> RunStore:
    """The durable-run store of a Ray checkpoint folder: saves every ``checkpoint_every`` steps or 60 s of
    training, and every corpus in full (a node may lack the server's built-in ones)."""
    return RunStore(StoreSetting(Path(root), save_every_steps=max(1, int(checkpoint_every)),
                                 source="the Ray checkpoint folder"), corpus_in_full=True)


class RunFolderGone(RuntimeError):
    """The run's folder was deleted (Reset) or damaged before its actor could read it."""


@dataclass
class ChunkResult:
    """What one chunk on an actor changed, for the page's mirror."""

    records: list[StepRecord]
    evals: list[EvalRecord]
    samples: list[SampleRecord]
    new_snapshots: list  # [(step, state_dict)] taken in this chunk
    kept_snapshots: list[int]  # steps of every snapshot still kept
    snapshot_every: int
    weights: dict | None  # the model now (None when nothing trained)
    step: int
    seconds: float
    elapsed: float  # wall seconds of this chunk
    halt: Halt | None
    initial_loss: float | None
    status: str
    message: str
    checkpoint_step: int | None  # the newest checkpoint on disk


class TrainerActor:
    """One session's run inside a Ray worker; ``ray.remote(num_cpus=1)`` makes it an actor (see ``actor_class``).

    Built from a RunPlace: it reads the run from its folder, trains it, and saves it there on schedule. When Ray
    restarts it after a crash, the same RunPlace comes again and the newest save is read, so it resumes there."""

    def __init__(self, place: RunPlace):
        torch.set_num_threads(1)  # one CPU per actor: Ray's accounting, and the same numbers as one thread here
        torch.set_flush_denormal(True)
        self.place = place
        try:
            restored = run_store(place.root, place.checkpoint_every).restore_keys(place.keys)
        except StoredRunError as err:
            raise RunFolderGone(str(err)) from None
        if restored is None:
            raise RunFolderGone("the run's folder is gone (the run was reset)")
        self.run = restored.run
        self.run.notice = None
        self.started_at_step = self.run.step
        self.run.start()
        self.last_chunk_at = time.monotonic()

    @property
    def checkpoint_step(self) -> int | None:
        keeper = self.run.keeper
        return keeper.saved_step if keeper is not None else None

    # -- the page's calls -------------------------------------------------------------------------------------

    def info(self) -> dict:
        """Where this actor stands (and whether it resumed from a checkpoint after a restart)."""
        import ray

        context = ray.get_runtime_context()
        return {"step": self.run.step, "started_at_step": self.started_at_step, "pid": _pid(),
                "node": context.get_node_id(), "checkpoint_step": self.checkpoint_step,
                "idle_s": time.monotonic() - self.last_chunk_at}

    def chunk(self, max_seconds: float) -> ChunkResult:
        """Train about ``max_seconds`` with the run's schedule; what changed."""
        self.last_chunk_at = time.monotonic()
        run, trainer = self.run, self.run.trainer
        if not run.is_active:
            return self._result([], len(trainer.evals), len(run.samples), {s for s, _ in run.snapshots}, 0.0)
        evals, samples, snaps = len(trainer.evals), len(run.samples), {s for s, _ in run.snapshots}
        start = time.perf_counter()
        records = run.advance(max_seconds)
        elapsed = time.perf_counter() - start
        run.save_if_due()  # to the run's folder, every checkpoint_every steps or 60 s, and at a stop
        return self._result(records, evals, samples, snaps, elapsed)

    def _result(self, records, evals, samples, snaps, elapsed) -> ChunkResult:
        run, trainer = self.run, self.run.trainer
        return ChunkResult(
            records, trainer.evals[evals:], run.samples[samples:],
            [(s, w) for s, w in run.snapshots if s not in snaps and w is not None],
            [s for s, _ in run.snapshots], run.snapshot_every, light_copy(trainer.model) if records else None,
            trainer.step, trainer.seconds, elapsed, trainer.halt, trainer.initial_loss, str(run.status), run.message,
            self.checkpoint_step,
        )

    def update_settings(self, settings: LiveSettings) -> None:
        self.run.update_settings(settings)
        with self.run.lock:
            self.run.keeper.save(self.run)  # a restart after a crash goes on with the new settings
        if self.run.status == Status.PAUSED:  # a finished run with a larger budget: the page keeps it going
            self.run.start()

    def retune(self, lr: float, clip: float | None) -> None:
        self.run.trainer.retune(lr=lr, clip=clip)

    def export(self) -> dict:
        """The exact training state (Trainer.state_dict), to continue anywhere."""
        return self.run.trainer.state_dict()

    def stop(self) -> dict:
        """Pause: the run saved in its folder at this step (a replica opens it from there), then its exact state."""
        self.run.pause()
        return self.export()

    def mirror(self) -> dict:
        """What a page's copy of the run is made equal to: the exact state, samples, snapshots and time."""
        run = self.run
        return {"settings": run.settings, "state": run.trainer.state_dict(), "samples": list(run.samples),
                "snapshot_every": run.snapshot_every, "snapshots": list(run.snapshots), "elapsed": run.elapsed}

    def describe(self) -> dict:
        """Everything a replica that holds only the token rebuilds the run's mirror from."""
        run = self.run
        return {"config": run.trainer.config, "corpus_name": run.corpus_name, "corpus_text": run.trainer.corpus.text,
                **self.mirror()}


def _pid() -> int:
    return os.getpid()


_actor_class: list = [None]


def actor_class():
    """TrainerActor as a Ray actor class of one CPU (made once per process)."""
    if _actor_class[0] is None:
        import ray

        _actor_class[0] = ray.remote(num_cpus=1)(TrainerActor)
    return _actor_class[0]


# --- a page's run on Ray --------------------------------------------------------------------------------------------


def run_id_for(token: str | None) -> str:
    """The actor's name part: a digest of the run's token (never the token), or a random id without one."""
    if not token:
        return uuid.uuid4().hex[:32]
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _wait_until_gone(actor, timeout_s: float = 5.0) -> None:
    """Return once Ray reports ``actor`` dead (or after ``timeout_s``). ``ray.kill`` returns before the worker
    has stopped, and a worker in the middle of a chunk may still write its checkpoint: a file deleted before
    that write would come back."""
    import ray

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=max(0.01, deadline - time.monotonic()))
        except ray.exceptions.GetTimeoutError:
            return
        except ray.exceptions.RayError:
            return  # the actor is dead
        time.sleep(0.05)  # still answering: the kill has not reached it yet


def _was_reset(folder: str) -> bool:
    return os.path.exists(os.path.join(folder, RESET_MARK))


def _remove_run_files(folder: str) -> None:
    """Delete a run's folder; that of a run that was reset keeps its mark, so that no replica brings it back."""
    if not _was_reset(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in os.scandir(folder):
        if entry.name == RESET_MARK:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _kill_quietly(name: str, run_id: str, queue, folder: str | None, launched: list | None = None) -> None:
    """Kill the actor called ``name`` and delete its run's folder (a finalizer: must never raise).

    ``launched`` (when the owner's session ended) holds the handle of the actor that the owner started, or None:
    an actor of the run that another replica started (it opened the paused run from its folder) trains for that
    replica's tab, so it and its folder stay."""
    try:
        import ray

        if ray.is_initialized():
            try:
                actor = ray.get_actor(name, namespace=NAMESPACE)
            except ValueError:
                actor = None  # no such actor (any more)
            if actor is not None and launched is not None and (launched[0] is None or actor != launched[0]):
                return
            if actor is not None:
                ray.kill(actor, no_restart=True)
                _wait_until_gone(actor)
            if queue is not None:
                queue.leave.remote(run_id)
        if folder:
            _remove_run_files(folder)
    except Exception:  # during interpreter shutdown, or a cluster gone: nothing left to free
        _LOGGER.debug("could not free Ray run %s", name, exc_info=True)


def _let_go_of_a_mirror(name: str, run_id: str, queue, idle_limit_s: float) -> None:
    """A replica's mirror of a run it only reattached goes (a finalizer: must never raise). The actor stays while
    anyone else trains it (its owner replica); an actor nobody has trained for ``idle_limit_s`` is an orphan (its
    owner replica restarted or stopped) and is freed, so that it gives its CPU back. The checkpoint stays."""
    try:
        import ray

        if not ray.is_initialized():
            return
        try:
            actor = ray.get_actor(name, namespace=NAMESPACE)
            idle_s = ray.get(actor.info.remote(), timeout=10)["idle_s"]
        except (ValueError, ray.exceptions.RayError):
            return  # no such actor any more, or it does not answer: nothing to free here
        if idle_s >= idle_limit_s:
            ray.kill(actor, no_restart=True)
            _wait_until_gone(actor)
            if queue is not None:
                queue.leave.remote(run_id)
    except Exception:  # during interpreter shutdown, or a cluster gone
        _LOGGER.debug("could not let go of the mirror of %s", name, exc_info=True)


class RayRun:
    """Trains one LiveRun on a Ray actor (a RemoteTraining of rnnviz.serving.backend); the LiveRun is the mirror.

    Invariant: while no actor exists, the LiveRun's trainer holds the exact training state, so a new actor
    starts from it (Start after Pause, or after a loss once ``restore`` put the checkpoint back)."""

    def __init__(self, run: LiveRun, connection: RayConnection, run_id: str | None = None, owner: bool = True):
        self.connection = connection
        self.run_id = run_id or run_id_for(run.token)
        self.name = actor_name(self.run_id)
        self.root = str(connection.setting.checkpoint_dir)
        self.keys = RunKeys.of(run.token or secrets.token_urlsafe(32))
        self.run_folder = str(Path(self.root) / self.keys.name)  # the run's files, for every node to read
        self._store: RunStore | None = None
        self.actor = None
        self.ready_ref = None
        self.place_ref = None
        self.place: int | None = None  # 0: starting on a free CPU; N: number N in the queue; None: not asked yet
        self.training_noted_at = -1e9
        self.recover_ref = None  # info() of an actor that Ray is restarting
        self.chunks: collections.deque = collections.deque()
        self.exact_state: dict | None = None  # what the actor started from (the last exact state here)
        self.checkpoint_step: int | None = None
        self.launched_at: float | None = None
        self.first_step_s: float | None = None  # from the actor's creation to its first chunk back
        self.node: str | None = None
        self.lost_at: int | None = None  # the step shown when the worker died
        self.recover_since = 0.0
        self.launched = [None]  # the handle of the actor this replica started, while it lives
        self.killed = None  # the handle of the actor this copy killed last (Pause, a loss)
        self._free_everything = functools.partial(_kill_quietly, self.name, self.run_id, connection.queue,
                                                  self.run_folder)
        if owner:
            self._finalizer = weakref.finalize(run, self._free_everything, launched=self.launched)
        else:
            # A replica that only reattached the run (find_run) mirrors it: when its session ends, the actor the
            # owner trains on and the checkpoint it resumes from must stay. Reset in its tab still frees them.
            self._finalizer = weakref.finalize(run, _let_go_of_a_mirror, self.name, self.run_id, connection.queue,
                                               MIRROR_IDLE_S)
        run.trainer.state_dict = self._exact_state_dict(run.trainer.state_dict)

    def _exact_state_dict(self, here):
        """The mirror trainer's ``state_dict``: while an actor trains, the actor's exact state (after its chunks
        in flight), so that a checkpoint downloaded mid-run resumes exactly; else the state here, exact then."""

        def state_dict() -> dict:
            import ray

            if self.actor is not None and self.ready_ref is None and self.recover_ref is None:
                try:
                    return ray.get(self.actor.export.remote(), timeout=STOP_TIMEOUT_S)
                except ray.exceptions.RayError:
                    _LOGGER.warning("the actor's state could not be fetched; the state here is used", exc_info=True)
            return here()

        return state_dict

    # -- RemoteTraining ----------------------------------------------------------------------------------------

    def tick(self, run: LiveRun, max_seconds: float) -> list[StepRecord]:
        import ray

        if self.actor is None and not self._launch(run):
            return []
        if self.recover_ref is not None:
            return self._recovering(run)
        if self.ready_ref is not None:
            done, _ = ray.wait([self.ready_ref], timeout=0)
            if not done:
                self._wait_in_queue(run)
                return []
            try:
                self.node = ray.get(self.ready_ref)["node"]
            except _worker_gone() as err:
                return self._lost(run, err)
            self.ready_ref = None
            self._note_training()
            if run.status == Status.WAITING:
                run.status = Status.RUNNING
                run.message = f"A CPU of the Ray cluster is free: training from step {run.step:,}."
            else:
                run.message = f"Training on the Ray cluster from step {run.step:,}."
        records: list[StepRecord] = []
        while self.chunks:
            done, _ = ray.wait([self.chunks[0]], timeout=0)
            if not done:
                break
            try:
                result = ray.get(self.chunks.popleft())
            except _worker_gone() as err:  # its actor died, or its node with the chunk's result
                return records + self._actor_failed(run, err)
            records += self._apply(run, result)
            if time.monotonic() - self.training_noted_at >= TRAINING_NOTE_EVERY_S:
                self._note_training()
            if result.status not in ACTIVE:
                self._bring_back(run)
                return records
        while len(self.chunks) < IN_FLIGHT:
            self.chunks.append(self.actor.chunk.remote(max_seconds))
        return records

    def stop(self, run: LiveRun) -> None:
        """Pause: the chunks in flight come back (the click waits for them, about a chunk), then the run is saved
        at its step and its state comes back."""
        import ray

        if self.actor is None:
            return
        if self.ready_ref is not None and not ray.wait([self.ready_ref], timeout=0)[0]:
            self._free()  # still waiting for a CPU: nothing trained remotely, the state here is exact
            return
        try:
            while self.chunks:
                result = ray.get(self.chunks.popleft(), timeout=STOP_TIMEOUT_S)
                self._apply(run, result)
            self._bring_back(run)
        except (*_worker_gone(), ray.exceptions.GetTimeoutError) as err:
            self._lost(run, err)

    def store(self) -> RunStore:
        """The durable-run store of the checkpoint folder (made when first needed: it creates the folder)."""
        if self._store is None:
            self._store = run_store(self.root, self.connection.setting.checkpoint_every)
        return self._store

    def newest_checkpoint(self) -> tuple[dict | None, int]:
        """The newest exact state to resume from: the run's last save in its folder, or the state the actor
        started from."""
        state = self.exact_state
        step = state["step"] if state is not None else 0
        try:
            checkpoint = self.store().saved_checkpoint(self.keys)
        except (StoredRunError, OSError):
            _LOGGER.warning("the run folder %s is unusable", self.run_folder, exc_info=True)
            checkpoint = None
        if checkpoint is not None and (state is None or checkpoint.step >= step):
            state, step = checkpoint.trainer_state, checkpoint.step
        return state, step

    def restore(self, run: LiveRun) -> None:
        """Put the newest checkpoint back into ``run``: its records, samples and snapshots after it go."""
        state, step = self.newest_checkpoint()
        if state is None:
            return
        _rewind(run, state)
        run.status = Status.PAUSED
        run.message = f"Back at the checkpoint of step {step:,}."

    def update_settings(self, settings: LiveSettings) -> None:
        if self.actor is not None:
            self.actor.update_settings.remote(settings)

    def retune(self, lr: float, clip: float | None) -> None:
        if self.actor is not None:
            self.actor.retune.remote(lr, clip)

    def release(self) -> None:
        """Reset, whichever replica the tab is on: the run's folder marked as reset (every replica that holds the
        run reads it there), the actor killed and the run's files removed."""
        self._mark_reset()
        self._free()
        self._finalizer.detach()
        self._free_everything()

    def _mark_reset(self) -> None:
        """A run never written to the cluster's folder has no copy on another replica: nothing to mark."""
        try:
            if os.path.isdir(self.run_folder):
                Path(self.run_folder, RESET_MARK).touch()
        except OSError:
            _LOGGER.warning("could not mark the run folder %s as reset", self.run_folder, exc_info=True)

    def _reset_elsewhere(self, run: LiveRun) -> list[StepRecord]:
        """The run was reset in a tab on another replica: it ends here as after a Reset here."""
        self._free()
        run.discard()
        run.notice = None
        run.message = "This run was reset in another tab, which discards it for good. Press Start for a new run."
        return []

    # -- inside ------------------------------------------------------------------------------------------------------

    def _launch(self, run: LiveRun) -> bool:
        """A new actor from the exact state here, written to the run's folder first (the actor reads it there, and
        so does Ray's restart of it); it waits for a CPU in Ray's queue (and ours). A run that was reset in another
        replica starts nothing and ends here too; one that another replica trains now stays paused here."""
        if _was_reset(self.run_folder):
            self._reset_elsewhere(run)
            return False
        if self._trained_elsewhere():
            run.status = Status.PAUSED
            run.message = (f"This run is training in another tab, on another server of this class: follow it there. "
                           f"This tab's copy stays paused at step {run.step:,}, so that it does not write over what "
                           "that tab trains.")
            return False
        every = self.connection.setting.checkpoint_every
        try:
            keeper = self.store().keeper(run, self.keys)
            written = keeper.save(run)
        except OSError as err:
            written, keeper = False, None
            reason = err.strerror or str(err)
        if not written:
            reason = keeper.error if keeper is not None else reason
            run.status = Status.PAUSED
            run.message = (f"Training on the Ray cluster could not start: the run could not be written to the "
                           f"checkpoint folder {self.root} ({reason}), which its worker reads it from. Ask the "
                           "server's operator to check that folder; nothing of the run here is lost.")
            return False
        # Taken before the actor exists: once it does, the mirror's state_dict asks the actor for its state, and an
        # actor that waits for a CPU does not answer (the page froze for STOP_TIMEOUT_S, the worker start besides).
        state = run.trainer.state_dict()
        options = dict(name=self.name, namespace=NAMESPACE, max_restarts=self.connection.setting.max_restarts)
        try:
            self.actor = actor_class().options(**options).remote(RunPlace(self.root, self.keys, every))
        except ValueError:  # the name is still taken by the actor just killed: try again on the next tick
            run.message = "Starting a worker on the Ray cluster…"
            return False
        self.launched[0] = self.actor
        self.exact_state = state
        self.checkpoint_step = None
        self.launched_at = time.perf_counter()
        self.ready_ref = self.actor.info.remote()
        self.place = None
        return True

    def _trained_elsewhere(self) -> bool:
        """Whether an actor of this run lives that this copy did not start (another replica opened the paused run
        from its folder and started it); the actor this copy just killed may still be there for a moment."""
        import ray

        try:
            actor = ray.get_actor(self.name, namespace=NAMESPACE)
        except (ValueError, ray.exceptions.RayError):
            return False
        return actor != self.killed

    def _note_training(self) -> None:
        self.connection.queue.training.remote(self.run_id)
        self.training_noted_at = time.monotonic()

    def _wait_in_queue(self, run: LiveRun) -> None:
        """The actor is not training yet: say whether it is starting on a free CPU or waits for one, and where."""
        import ray

        queue, cpus = self.connection.queue, self._cpus()
        if self.place_ref is not None and ray.wait([self.place_ref], timeout=0)[0]:
            try:
                self.place = ray.get(self.place_ref)
            except ray.exceptions.RayError:
                self.place = None
            self.place_ref = None
        if self.place_ref is None:
            self.place_ref = queue.place.remote(self.run_id, cpus)
        if self.place:
            run.wait_for_slot(self.place, cpus, where="the Ray cluster")
            return
        since = time.perf_counter() - self.launched_at if self.launched_at is not None else 0.0
        run.status = Status.RUNNING  # not in a queue: a CPU is free for it
        run.message = (f"Starting on the Ray cluster: a CPU is free, and Ray is starting a worker for this run "
                       f"({since:.0f} s so far; the first start on a node takes a few seconds).")

    def _cpus(self) -> int:
        import ray

        return int(ray.cluster_resources().get("CPU", 0))

    def _apply(self, run: LiveRun, result: ChunkResult) -> list[StepRecord]:
        """Merge one chunk's result into the mirror."""
        trainer = run.trainer
        if self.first_step_s is None and result.records and self.launched_at is not None:
            self.first_step_s = time.perf_counter() - self.launched_at
        trainer.history += result.records
        trainer.evals += result.evals
        run.samples += result.samples
        if result.weights is not None:
            trainer.load_weights(result.weights)  # at the width the run has now (a run that grows widens)
        trainer.step, trainer.seconds, trainer.halt = result.step, result.seconds, result.halt
        trainer.initial_loss = result.initial_loss
        held = dict(run.snapshots)
        held.update(result.new_snapshots)
        run.snapshots = [(s, held[s]) for s in result.kept_snapshots if held.get(s) is not None] or run.snapshots
        run.snapshot_every = result.snapshot_every
        run.elapsed += result.elapsed
        if result.checkpoint_step is not None:
            self.checkpoint_step = result.checkpoint_step
        if result.status not in ACTIVE:
            run.status, run.message = Status(result.status), result.message
        return result.records

    def _bring_back(self, run: LiveRun) -> None:
        """The run saved by the actor at its step, its exact state into the mirror, then free the actor (and its
        CPU)."""
        import ray

        halt = run.trainer.halt
        state = ray.get(self.actor.stop.remote(), timeout=STOP_TIMEOUT_S)
        run.trainer.load_state_dict(state)
        run.trainer.halt = halt
        self._free()

    def _free(self) -> None:
        import ray

        if self.actor is not None:
            try:
                ray.kill(self.actor, no_restart=True)
            except Exception:
                _LOGGER.debug("kill failed", exc_info=True)
            self.connection.queue.leave.remote(self.run_id)
            self.killed = self.actor
        self.actor, self.ready_ref, self.place_ref, self.recover_ref = None, None, None, None
        self.launched[0] = None
        self.chunks.clear()

    def _actor_failed(self, run: LiveRun, err: Exception) -> list[StepRecord]:
        """A chunk died with its actor: Ray may be restarting it; ask it where it stands (without waiting)."""
        self.chunks.clear()
        if _was_reset(self.run_folder):
            return self._reset_elsewhere(run)
        if self.connection.setting.max_restarts > 0:
            self.lost_at = run.step
            self.recover_since = time.monotonic()
            self.recover_ref = self.actor.info.remote()
            run.notice = (f"The Ray worker training this run was lost at step {run.step:,}; Ray is restarting it "
                          "from the last checkpoint.")
            return []
        return self._lost(run, err)

    def _recovering(self, run: LiveRun) -> list[StepRecord]:
        import ray

        if not ray.wait([self.recover_ref], timeout=0)[0]:
            return []
        try:
            info = ray.get(self.recover_ref)
            self.recover_ref = None
            mirrored = ray.get(self.actor.mirror.remote(), timeout=STOP_TIMEOUT_S)
        except ray.exceptions.ActorUnavailableError as err:  # restarting: ask again on the next tick
            if time.monotonic() - self.recover_since > RESTART_WAIT_S:
                return self._lost(run, err)
            self.recover_ref = self.actor.info.remote()
            return []
        except (*_worker_gone(), ray.exceptions.GetTimeoutError) as err:
            return self._lost(run, err)
        at, back = self.lost_at, mirrored["state"]["step"]
        # The checkpoint may be newer than the page's step: the worker saved it at the end of a chunk whose result
        # was lost with it (its node died before the page fetched it).
        lost = max(0, at - back)
        _take_mirror(run, mirrored)
        self.node = info["node"]
        self.exact_state = mirrored["state"]
        self.lost_at = None
        said = ("no step shown here was lost" if not lost else "1 step was lost and is trained again" if lost == 1
                else f"{lost:,} steps were lost and are trained again")
        run.notice = (f"The Ray worker training this run was lost at step {at:,} (its process or node died). Ray "
                      f"restarted it by itself from the checkpoint of step {back:,}: {said}.")
        run.status = Status.RUNNING
        run.message = f"Training again from step {run.step:,}, on a restarted worker."
        return []

    def _lost(self, run: LiveRun, err: Exception) -> list[StepRecord]:
        """The actor is gone for good: say so, and what Start brings back."""
        import ray

        if _was_reset(self.run_folder):
            return self._reset_elsewhere(run)
        at = self.lost_at if self.lost_at is not None else run.step
        self.lost_at = None
        self._free()
        back = self.newest_checkpoint()[1]
        lost = max(0, at - back)
        timed_out = isinstance(err, ray.exceptions.GetTimeoutError)
        cause = "its worker stopped answering" if timed_out else "its worker process or node died"
        run.status = Status.LOST
        run.notice = None
        since = (f"the {lost:,} step{'s' if lost != 1 else ''} trained since then are lost" if lost
                 else "no step shown here is lost")
        run.message = (f"The Ray worker that trained this run was lost at step {at:,} ({cause}). The last checkpoint "
                       f"is from step {back:,}: Start resumes from there, and {since}.")
        return []


def _worker_gone() -> tuple[type[Exception], ...]:
    """What ``ray.get`` of an actor's call raises when the worker died: with the actor, or, for a result kept in
    the object store of the worker's node (above Ray's inline limit), with that node."""
    import ray

    return ray.exceptions.RayActorError, ray.exceptions.ObjectLostError


def _take_mirror(run: LiveRun, mirrored: dict) -> None:
    """``run`` made equal to the actor's run (``TrainerActor.mirror``), but for its settings (the page's are newer)."""
    run.trainer.load_state_dict(mirrored["state"])
    run.samples = list(mirrored["samples"])
    run.snapshot_every = mirrored["snapshot_every"]
    run.elapsed = mirrored["elapsed"]
    run.snapshots = ([(s, w) for s, w in mirrored["snapshots"] if w is not None]
                     or [(run.step, light_copy(run.trainer.model))])


def _rewind(run: LiveRun, state: dict) -> None:
    """``run`` back to the exact ``state``: its records, samples and snapshots after that step go."""
    run.trainer.load_state_dict(state)
    step = run.step
    run.samples = [s for s in run.samples if s.step <= step]
    run.snapshots = [(s, w) for s, w in run.snapshots if s <= step] or [(step, light_copy(run.trainer.model))]


def train_on_ray(run: LiveRun, connection: RayConnection) -> LiveRun:
    """Make ``run`` train on the Ray cluster from its next Start (its token names the actor)."""
    run.remote = RayRun(run, connection)
    return run


def find_run(token: str, connection: RayConnection) -> LiveRun | None:
    """The run of ``token``, rebuilt here as a mirror (another replica, or after a restart of this one): from its
    actor while one trains it, else paused from its folder (a paused run has no actor); None when neither is there,
    or when the run was reset."""
    import ray

    run_id = run_id_for(token)
    if _was_reset(str(Path(connection.setting.checkpoint_dir) / RunKeys.of(token).name)):
        return None
    try:
        actor = ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
    except ValueError:  # no actor trains it
        return _open_from_folder(token, connection, run_id)
    except ray.exceptions.RayError:
        return None
    try:
        described = ray.get(actor.describe.remote(), timeout=10)
    except ray.exceptions.RayError:
        return None
    corpus = Corpus(described["corpus_name"], described["corpus_text"])
    run = LiveRun(Trainer(described["config"], corpus), described["corpus_name"], described["settings"])
    _take_mirror(run, described)
    run.token = token
    remote = RayRun(run, connection, run_id, owner=False)
    remote.actor, remote.exact_state = actor, described["state"]
    remote.ready_ref = actor.info.remote()
    run.remote = remote
    run.status = Status.RUNNING
    run.message = f"Your run is back from the Ray cluster, at step {run.step:,}."
    return run


def _open_from_folder(token: str, connection: RayConnection, run_id: str) -> LiveRun | None:
    """The run as last saved in its folder, paused, as a mirror that Start trains on the cluster; None when
    nothing is saved there or the save is unusable."""
    setting = connection.setting
    try:
        restored = run_store(setting.checkpoint_dir, setting.checkpoint_every).restore(token)
    except (StoredRunError, OSError):
        _LOGGER.warning("the run folder of run %s could not be read", run_id, exc_info=True)
        return None
    if restored is None:
        return None
    run = restored.run
    run.keeper = None  # its RayRun writes the folder; a keeper's Reset would delete the folder's reset mark too
    run.remote = RayRun(run, connection, run_id, owner=False)
    return run
