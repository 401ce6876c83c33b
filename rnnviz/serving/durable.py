"""Live runs that outlive the server: every run is saved to a run folder on disk, and its address finds it again
after a restart, a crash or a deploy.

A ``RunStore`` owns one folder (``RNNVIZ_RUN_DIR``, ``run_dir`` in ``.streamlit/rnnviz.toml``, else the
platform's per-user state directory), created with mode 0700. Each run has a folder of its own in it, named by
an HMAC-SHA-256 of the run's token, never by the token, so a listing of the folder leads to no address, and
every file in it is authenticated, together with its own name, with a key derived from the token: without the
token nothing can be found or opened, and a foreign, forged or damaged file, or one copied over another of the
run's files, is refused in words before any of it is unpickled.

    <store>/<name>/state       the run: its exact Trainer state (the checkpoint format of rnnviz.charlm.checkpoint),
                               settings, samples, snapshot steps, elapsed time, status, and its corpus (a
                               built-in one by name and SHA-256, other text in full)
    <store>/<name>/snap-<step> one weight snapshot (written once: snapshots never change); the state lists their steps
    <store>/<name>/progress    the step the run last reached (noted after every chunk) and whether it was still
                               training then, so a restore can say how many steps were lost

Every file is written to a temporary name, flushed to disk and renamed over the old one, so a reader (or a
restart after a crash between write and rename) only ever sees a whole file. A file is

    MAGIC (8 bytes) | HMAC-SHA-256(key, MAGIC | file name | 0x00 | body) (32 bytes) | body = torch.save(...)

and is read with ``torch.load(..., weights_only=True)`` after its tag checks out under the name it is read by, so
``snap-0`` copied over ``snap-800`` is no snapshot of step 800. A restore takes the snapshots the state lists whose
files check out, and says which it dropped: they only feed the hidden-cell explorer, while the state holds the
weights. A state that does not check out refuses the whole run. Runs written before the name was authenticated
(``LEGACY_MAGIC``: the tag covered MAGIC | body) are still read, whole, and their next save rewrites every file in
today's format.

``RunKeeper`` is what a LiveRun holds (``LiveRun.keep_on``): it saves the run every ``save_every_s`` seconds of
training or ``save_every_steps`` steps, whichever comes first, and when the run stops (Pause, the budget's end,
a halt, a Step), and remembers in words why a save failed (the run trains on). ``drain`` saves every run of
the process that has unsaved steps: the server calls it on the way out (SIGTERM).

Runs not opened for ``retention_s`` are deleted, and the oldest runs go first when the folder outgrows
``max_total_bytes``. No streamlit here.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from rnnviz.charlm.checkpoint import FORMAT_VERSION, Checkpoint, CheckpointError, to_cpu_inplace, validate_checkpoint
from rnnviz.charlm.corpus import BUILTIN_CORPORA, Corpus, CorpusError, load_builtin
from rnnviz.charlm.train import Trainer
from rnnviz.limits import FileLimits
from rnnviz.serving.live import LiveRun, LiveSettings, SampleRecord, Status, light_copy
from rnnviz.serving.settings import StoreSetting

STALE_TEMP_S = 3600.0  # a temporary file this old was left by a crash between write and rename

MAGIC = b"RNNVIZr2"  # the tag covers the file's name too
LEGACY_MAGIC = b"RNNVIZr1"  # the first format: the tag covered MAGIC | body, so a file's name was not authenticated
TAG_BYTES = 32
STATE_FORMAT = 1


def validate_saved_checkpoint(payload) -> Checkpoint:
    """``validate_checkpoint`` of a run this server saved itself: its history is as long as the run, which may be
    far longer than an upload's."""
    return validate_checkpoint(payload, limits=FileLimits(history_records=None))


class StoredRunError(ValueError):
    """A saved run that cannot be restored, with the reason in words."""


class SaveFailed(OSError):
    """Writing a run to disk failed (full disk, read-only or missing folder); the run itself is unharmed."""


@dataclass(frozen=True)
class Restored:
    """A run read back from disk: the run (paused), the step it was saved at, the step it had reached by its last
    progress note (None when unknown), whether it was still training then (the process stopped in the middle of
    training, so a chunk after the note may be lost too), when it was saved (Unix time), and the weight snapshots
    its state lists and those of them left out."""

    run: LiveRun
    saved_step: int
    reached_step: int | None
    was_training: bool
    saved_at: float
    listed_snapshots: int = 0  # the weight snapshots the saved state lists
    dropped: tuple[tuple[int, str], ...] = ()  # (step, why) of each listed snapshot whose file did not check out

    @property
    def lost_steps(self) -> int:
        return max(0, (self.reached_step or self.saved_step) - self.saved_step)


@dataclass(frozen=True)
class StoreSummary:
    folder: Path
    runs: int
    bytes: int


@dataclass(frozen=True)
class RunKeys:
    """What a token gives: the run's folder name and the key its files are authenticated with. A Ray actor gets
    these (never the token, which is the run's address) to read and write its run's folder."""

    name: str
    key: bytes

    @classmethod
    def of(cls, token: str) -> RunKeys:
        secret = token.encode("utf-8", "surrogatepass")
        return cls(hmac.new(secret, b"rnnviz run folder", hashlib.sha256).hexdigest(),
                   hmac.new(secret, b"rnnviz run files", hashlib.sha256).digest())


def _tag(key: bytes, name: str, body: bytes) -> bytes:
    return hmac.new(key, MAGIC + name.encode("ascii") + b"\0" + body, hashlib.sha256).digest()


def _seal(key: bytes, value, name: str) -> bytes:
    """``value`` as the file ``name`` of a run folder: authentic under that name only."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    body = buffer.getvalue()
    return MAGIC + _tag(key, name, body) + body


def _snapshot_name(step: int) -> str:
    return f"snap-{step}"


class _Refused(StoredRunError):
    """A file that did not check out; ``why`` says so in a few words, for a list of dropped snapshots."""

    def __init__(self, message: str, why: str):
        super().__init__(message)
        self.why = why


def _unseal(key: bytes, raw: bytes, what: str, name: str, legacy: bool = False):
    """The value in the file ``name``, read only when its tag checks out under that name (or, with ``legacy``, is
    a whole file of the first format)."""
    magic = raw[:len(MAGIC)]
    if len(raw) < len(MAGIC) + TAG_BYTES or magic not in (MAGIC, LEGACY_MAGIC):
        raise _Refused(f"The saved {what} is not an rnnviz run file (or is truncated); it was not read.",
                       "truncated, or not an rnnviz run file")
    tag, body = raw[len(MAGIC):len(MAGIC) + TAG_BYTES], raw[len(MAGIC) + TAG_BYTES:]
    if magic == MAGIC:
        authentic = hmac.compare_digest(tag, _tag(key, name, body))
    else:  # a file of the first format, whose name no tag covers, is taken only among files of that format
        authentic = legacy and hmac.compare_digest(tag, hmac.new(key, LEGACY_MAGIC + body, hashlib.sha256).digest())
    if not authentic:
        raise _Refused(f"The saved {what} does not belong to this address or was altered on disk, so it was "
                       "refused without being read.",
                       "another file was copied over it, or it was altered on disk")
    try:
        return torch.load(io.BytesIO(body), weights_only=True, map_location="cpu")
    except Exception as err:  # a file we wrote and authenticated, but that torch cannot read: a newer format
        raise _Refused(f"The saved {what} could not be read ({type(err).__name__}).",
                       f"unreadable ({type(err).__name__})") from None


def _write_atomically(path: Path, data: bytes, sync: bool = True) -> None:
    """``data`` under ``path``: written to a temporary name in the same folder, flushed (to the disk too, unless
    ``sync`` is False: a killed process loses nothing the kernel holds, only a power cut does), then renamed."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            if sync:
                os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _folder_bytes(folder: Path) -> int:
    total = 0
    for entry in os.scandir(folder):
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            pass
    return total


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class RunStore:
    """Runs saved on disk by the token in their address (see the module docstring)."""

    def __init__(self, setting: StoreSetting, builtin: Callable[[str], Corpus] | None = None,
                 corpus_in_full: bool = False):
        if setting.folder is None:
            raise ValueError("this RunStore's setting keeps nothing (folder None)")
        self.setting = setting
        self.folder = setting.folder
        # Reads a built-in corpus by name (the app passes its shared, never-downloading reader).
        self.builtin = builtin or load_builtin
        # Every corpus kept as text, built-in ones too: a store that other machines read (a Ray cluster's folder),
        # where a node may not have the server's built-in corpora (Tiny Shakespeare is downloaded on demand).
        self.corpus_in_full = corpus_in_full
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.folder, 0o700)  # mkdir's mode is masked by umask, and an existing folder keeps its own
        self._builtin_digests: dict[str, str] = {}
        self._lock = threading.Lock()
        self._held: weakref.WeakValueDictionary[str, RunKeeper] = weakref.WeakValueDictionary()
        self._last_prune = 0.0
        self._remove_stale_temporaries()

    # -- saving ---------------------------------------------------------------------------------------------

    def keeper(self, run: LiveRun, keys: RunKeys | None = None) -> RunKeeper:
        """What keeps ``run`` saved here, under its token (or under ``keys`` where only they are known)."""
        keeper = RunKeeper(self, keys or RunKeys.of(run.token))
        with self._lock:
            earlier = self._held.get(keeper.keys.name)
            if earlier is not None:  # a copy of the run from before it was restored again: it must not write over
                earlier.forgotten = True  # the restored one (its session expired, the object is not collected yet)
            self._held[keeper.keys.name] = keeper
        return keeper

    def _corpus_record(self, corpus: Corpus) -> dict:
        """A built-in corpus is kept by name and digest (it is on every server); any other text in full."""
        digest = _sha256(corpus.text)
        if not self.corpus_in_full and corpus.name in BUILTIN_CORPORA and self._builtin_digest(corpus.name) == digest:
            return {"name": corpus.name, "sha256": digest, "text": None}
        return {"name": corpus.name, "sha256": digest, "text": corpus.text}

    def _builtin_digest(self, name: str) -> str | None:
        if name not in self._builtin_digests:
            try:
                self._builtin_digests[name] = _sha256(self.builtin(name).text)
            except (CorpusError, OSError):
                return None
        return self._builtin_digests[name]

    # -- restoring ------------------------------------------------------------------------------------------

    def has(self, token: str) -> bool:
        return (self.folder / RunKeys.of(token).name / "state").is_file()

    def restore(self, token: str) -> Restored | None:
        """The run saved under ``token``, paused, with the same token; None when nothing is saved under it.

        A file that is there but unusable (altered, foreign, damaged, a corpus that changed) is a StoredRunError
        in words."""
        restored = self.restore_keys(RunKeys.of(token))
        if restored is not None:
            restored.run.token = token
        return restored

    def _read_state(self, keys: RunKeys) -> tuple[dict, bool] | None:
        """(the run's state, whether it was written in the first format); None when nothing is saved."""
        try:
            raw = (self.folder / keys.name / "state").read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise StoredRunError(f"The saved run could not be read: {err.strerror or err}.") from None
        state = _unseal(keys.key, raw, "run", "state", legacy=True)
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise StoredRunError("The saved run was written by another version of rnnviz and cannot be restored.")
        return state, raw.startswith(LEGACY_MAGIC)

    def saved_checkpoint(self, keys: RunKeys):
        """The checkpoint (rnnviz.charlm.checkpoint.Checkpoint) of the run saved under ``keys``, without building
        the run: the step and exact state a lost Ray worker's run resumes from. None when nothing is saved."""
        read = self._read_state(keys)
        if read is None:
            return None
        state, _ = read
        try:
            return validate_saved_checkpoint(state["checkpoint"])
        except (CheckpointError, KeyError, TypeError, ValueError) as err:
            raise StoredRunError(f"The saved run cannot be restored: {err}") from None

    def restore_keys(self, keys: RunKeys) -> Restored | None:
        """``restore`` for whoever holds the run's keys but not its token (a Ray actor): the run has no token."""
        folder = self.folder / keys.name
        read = self._read_state(keys)
        if read is None:
            return None
        state, legacy = read
        try:
            checkpoint = validate_saved_checkpoint(state["checkpoint"])
            corpus = self._corpus(state["corpus"])
            if corpus.vocab.chars != checkpoint.vocab.chars:
                raise StoredRunError(f"The corpus {corpus.name!r} no longer has the characters the run was trained "
                                     "on, so the run cannot go on.")
            trainer = Trainer(checkpoint.config, corpus, vocab=checkpoint.vocab)
            trainer.load_state_dict(checkpoint.trainer_state)
            run = LiveRun(trainer, corpus.name, LiveSettings(**state["settings"]))
            run.samples = [SampleRecord(**s) for s in state["samples"]]
            listed = [int(step) for step in state["snapshot_steps"]]
            run.snapshots, dropped = self._snapshots(keys, listed, legacy)
            if not run.snapshots:  # the explorer needs one at least: the state's own weights, which checked out
                run.snapshots = [(run.step, light_copy(run.trainer.model))]
            run.snapshot_every = int(state["snapshot_every"])
            run.elapsed = float(state["elapsed"])
        except StoredRunError:
            raise
        except (CheckpointError, CorpusError) as err:
            raise StoredRunError(f"The saved run cannot be restored: {err}") from None
        except (KeyError, TypeError, ValueError, RuntimeError) as err:
            raise StoredRunError(f"The saved run is malformed ({type(err).__name__}: {err}).") from None
        saved_step, saved_at = run.step, float(state["saved_at"])
        reached, was_training = self._progress(keys, legacy)
        if run.step >= run.settings.step_budget:
            run.status = Status.FINISHED
        elif run.step > 0 or run.samples:
            run.status = Status.PAUSED
        known = reached is not None and reached >= saved_step
        restored = Restored(run, saved_step, reached if known else None, was_training or not known, saved_at,
                            len(listed), tuple(dropped))
        run.message = f"Paused at step {run.step:,}, as it was saved. Start continues from here."
        run.notice = restore_notice(restored)
        keeper = self.keeper(run, keys)
        keeper.saved_step, keeper.saved_elapsed = saved_step, run.elapsed
        # a first-format snapshot is written again, in today's format, by the next save
        keeper.written = {} if legacy else {step: id(weights) for step, weights in run.snapshots}
        run.keep_on(keeper)
        os.utime(folder / "state")  # opened now: the retention period starts again
        return restored

    def _corpus(self, record: dict) -> Corpus:
        name, digest, text = record["name"], record["sha256"], record["text"]
        if text is None:
            try:
                corpus = self.builtin(name)
            except (CorpusError, OSError) as err:
                raise StoredRunError(f"The run trained on the built-in corpus {name!r}, which this server cannot "
                                     f"read now: {err}") from None
            if _sha256(corpus.text) != digest:
                raise StoredRunError(f"The built-in corpus {name!r} on this server is not the text the run trained "
                                     "on (Python or rnnviz was updated since), so the run cannot go on.")
            return corpus
        return Corpus(name, text)

    def _snapshots(self, keys: RunKeys, steps: list[int], legacy: bool) -> tuple[list, list[tuple[int, str]]]:
        """([(step, weights)] of the listed snapshots whose files check out, [(step, why)] of the others)."""
        kept, dropped = [], []
        for step in steps:
            try:
                raw = (self.folder / keys.name / _snapshot_name(step)).read_bytes()
            except FileNotFoundError:
                dropped.append((step, "missing"))
                continue
            except OSError as err:
                dropped.append((step, f"unreadable ({err.strerror or err})"))
                continue
            try:
                weights = _unseal(keys.key, raw, f"snapshot of step {step:,}", _snapshot_name(step), legacy)
            except _Refused as refused:
                dropped.append((step, refused.why))
                continue
            if isinstance(weights, dict) and weights and all(isinstance(v, torch.Tensor) for v in weights.values()):
                kept.append((step, weights))
            else:
                dropped.append((step, "malformed"))
        return kept, dropped

    def _progress(self, keys: RunKeys, legacy: bool) -> tuple[int | None, bool]:
        """(the step of the run's last progress note, whether it was training then); (None, True) unknown."""
        try:
            note = _unseal(keys.key, (self.folder / keys.name / "progress").read_bytes(), "progress note", "progress",
                           legacy)
            return int(note["step"]), bool(note["training"])
        except (OSError, StoredRunError, KeyError, TypeError, ValueError):
            return None, True

    # -- housekeeping ---------------------------------------------------------------------------------------

    def delete(self, token: str) -> None:
        """Forget the run of ``token`` for good (Reset)."""
        shutil.rmtree(self.folder / RunKeys.of(token).name, ignore_errors=True)

    def summary(self) -> StoreSummary:
        runs, size = 0, 0
        for entry in self._run_folders():
            runs += 1
            size += _folder_bytes(entry)
        return StoreSummary(self.folder, runs, size)

    def prune(self, now: float | None = None) -> list[str]:
        """Delete runs not opened or saved for the retention period, then the oldest beyond the size cap (never a
        run this process holds). Returns the folder names deleted."""
        now = time.time() if now is None else now
        self._last_prune = now
        with self._lock:
            held = set(self._held.keys())
        dated = []
        for folder in self._run_folders():
            try:
                dated.append((folder.joinpath("state").stat().st_mtime, folder))
            except OSError:
                try:
                    dated.append((folder.stat().st_mtime, folder))  # a run whose first save never finished
                except OSError:
                    continue
        removed = []
        for changed, folder in dated:
            if now - changed > self.setting.retention_s and folder.name not in held:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.name)
        kept = sorted((changed, folder) for changed, folder in dated if folder.name not in removed)
        total = sum(_folder_bytes(folder) for _, folder in kept)
        for _, folder in kept:
            if total <= self.setting.max_total_bytes:
                break
            if folder.name in held:
                continue
            total -= _folder_bytes(folder)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
        return removed

    def prune_now_and_then(self, every_s: float = 600.0) -> None:
        if time.time() - self._last_prune >= every_s:
            self.prune()

    def _run_folders(self) -> list[Path]:
        try:
            return [Path(e.path) for e in os.scandir(self.folder) if e.is_dir(follow_symlinks=False)
                    and len(e.name) == 64]
        except OSError:
            return []

    def _remove_stale_temporaries(self) -> None:
        cutoff = time.time() - STALE_TEMP_S
        for folder in self._run_folders():
            for entry in folder.glob(".*.tmp"):
                try:
                    if entry.stat().st_mtime < cutoff:
                        entry.unlink()
                except OSError:
                    pass


def restore_notice(restored: Restored) -> str:
    """What the page says about a run it took up from disk."""
    saved = time.strftime("%H:%M:%S", time.localtime(restored.saved_at))
    said = (f"This run was restored from disk, where it was saved at step {restored.saved_step:,} ({saved}): the "
            "server restarted, or the run's tab was closed for a while. ")
    if restored.reached_step is None:
        said += "How far it trained after that save is not known. Start continues from the saved step."
    elif restored.lost_steps:
        steps = f"{restored.lost_steps:,} step{'s' if restored.lost_steps != 1 else ''}"
        more = " (or a chunk more: it was training when the server stopped)" if restored.was_training else ""
        said += (f"It had trained on to step {restored.reached_step:,}{more}, so the {steps} after that save "
                 "were lost. Start continues from the saved step.")
    elif restored.was_training:
        said += ("It was training when the server stopped, so at most one chunk of steps (under a second) "
                 "after that save was lost. Start continues from the saved step.")
    else:
        said += "No training was lost. Start continues from here."
    return said + dropped_snapshots_notice(restored)


def dropped_snapshots_notice(restored: Restored) -> str:
    """The weight snapshots a restore left out, each with its file and why; "" when none was."""
    if not restored.dropped:
        return ""
    count = len(restored.dropped)
    which = ", ".join(f"{step:,} ({_snapshot_name(step)}: {why})" for step, why in restored.dropped)
    kept = restored.listed_snapshots - count
    rest = (f"the other {kept:,} came back" if kept else
            "none came back, so that history starts again from the run's weights as saved")
    return (f" The weight snapshot{'s' if count != 1 else ''} of step{'s' if count != 1 else ''} {which} "
            f"{'were' if count != 1 else 'was'} dropped from the hidden-cell explorer's history; {rest}. The run's "
            "own weights and training state are whole.")


class RunKeeper:
    """Keeps one LiveRun saved in a RunStore; the run calls ``save_if_due`` after each chunk (holding its lock)."""

    def __init__(self, store: RunStore, keys: RunKeys):
        self.store = store
        self.keys = keys
        self.folder = store.folder / self.keys.name
        self.saved_step: int | None = None
        self.saved_elapsed = 0.0
        self.written: dict[int, int] = {}  # snapshot step → id of the weights dict written for it
        self.problem: str | None = None  # why the last save failed, in words; None after a good save
        self.error: str | None = None  # the system's reason for that failure ("Permission denied", …)
        self.failed_at = -1e9  # run.elapsed when a save last failed: retried a save interval later
        self._noted: tuple[int, bool] | None = None  # (step, training) of the last progress note written
        self.forgotten = False

    def due(self, run: LiveRun) -> bool:
        if self.forgotten or run.step == self.saved_step:
            return False
        if not run.is_active:
            return True  # a stop saves (a failed save is tried again at every stop: stops are rare)
        setting = self.store.setting
        if self.problem is not None and run.elapsed - self.failed_at < setting.save_every_s:
            return False
        return (self.saved_step is None or run.elapsed - self.saved_elapsed >= setting.save_every_s
                or run.step - self.saved_step >= setting.save_every_steps)

    def save_if_due(self, run: LiveRun) -> None:
        if self.due(run):
            self.save(run)
        else:
            self._note_progress(run, run.is_active)

    def save(self, run: LiveRun, final: bool = False) -> bool:
        """Write ``run`` now (its lock held by the caller); False, with ``problem`` in words, when it failed.
        ``final``: the process stops after this save, so nothing the run does is lost even while it trains."""
        if self.forgotten:
            return False
        try:
            self.folder.mkdir(exist_ok=True, mode=0o700)
            for step, weights in run.snapshots:
                if self.written.get(step) != id(weights):
                    name = _snapshot_name(step)
                    _write_atomically(self.folder / name, _seal(self.keys.key, weights, name))
                    self.written[step] = id(weights)
            _write_atomically(self.folder / "state", _seal(self.keys.key, self._state(run), "state"))
            self._note_progress(run, run.is_active and not final)
            kept = {_snapshot_name(step) for step, _ in run.snapshots}
            for entry in self.folder.glob("snap-*"):
                if entry.name not in kept:  # thinned out, or a file a restore dropped
                    entry.unlink(missing_ok=True)
            self.written = {step: written for step, written in self.written.items() if _snapshot_name(step) in kept}
        except OSError as err:
            self.failed_at = run.elapsed
            self.error = err.strerror or str(err)
            last = f"step {self.saved_step:,}" if self.saved_step is not None else "nothing of it"
            self.problem = (f"Saving this run to disk failed at step {run.step:,} ({err.strerror or err}). It trains "
                            f"on, but a server restart now would bring back {last}. The server's operator can see "
                            "the run folder on the Server status page.")
            return False
        self.saved_step, self.saved_elapsed, self.problem = run.step, run.elapsed, None
        self.store.prune_now_and_then()
        return True

    def _state(self, run: LiveRun) -> dict:
        checkpoint = {"format_version": FORMAT_VERSION, "corpus": run.corpus_name, **run.trainer.state_dict()}
        to_cpu_inplace(checkpoint)
        return {
            "format": STATE_FORMAT,
            "checkpoint": checkpoint,
            "corpus": self.store._corpus_record(run.trainer.corpus),
            "settings": asdict(run.settings),
            "samples": [asdict(s) for s in run.samples],
            "snapshot_steps": [step for step, _ in run.snapshots],
            "snapshot_every": run.snapshot_every,
            "elapsed": run.elapsed,
            "status": str(run.status),
            "saved_at": time.time(),
        }

    def _note_progress(self, run: LiveRun, training: bool) -> None:
        """Note the step the run reached and whether it trains on (a few hundred bytes, after every chunk)."""
        if (run.step, training) == self._noted:
            return
        try:
            note = _seal(self.keys.key, {"step": run.step, "training": training}, "progress")
            _write_atomically(self.folder / "progress", note, sync=False)  # after every chunk: kept light
            self._noted = (run.step, training)
        except OSError:
            pass  # the next save says what is wrong with the folder

    def forget(self) -> None:
        """Reset: the run's files go, and nothing more is written."""
        self.forgotten = True
        shutil.rmtree(self.folder, ignore_errors=True)


def drain(runs: Iterable[LiveRun] | None = None, wait_s: float = 5.0) -> int:
    """Save every run (of this process, by default) that has steps its last save lacks; a run whose chunk is in
    flight is waited for up to ``wait_s`` in all. Returns how many were saved. For the server's way out."""
    deadline = time.monotonic() + wait_s
    saved = 0
    for run in list(LiveRun._alive if runs is None else runs):
        keeper = run.keeper
        if keeper is None or keeper.forgotten or keeper.saved_step is None:
            continue
        if not run.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            continue
        try:
            if run.step == keeper.saved_step:
                keeper._note_progress(run, training=False)  # saved already: say that nothing after it is lost
            else:
                saved += keeper.save(run, final=True)
        finally:
            run.lock.release()
    return saved
