"""Runs saved on disk (rnnviz.serving.durable): what comes back is the run bit for bit, found only by its token,
written so that nothing half-written is ever read, and bounded in time and size."""

import hashlib
import hmac
import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch

from rnnviz.charlm.corpus import Corpus, english_docs_text, load_builtin
from rnnviz.charlm.train import TrainConfig
from rnnviz.serving.durable import (
    STALE_TEMP_S,
    RunKeys,
    RunStore,
    StoredRunError,
    drain,
)
from rnnviz.serving.live import LiveRun, LiveSettings, Status
from rnnviz.serving.settings import StoreSetting, default_run_dir, store_setting
from rnnviz.serving.slots import TrainingSlots

TINY = TrainConfig(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu")
SETTINGS = LiveSettings(step_budget=200, sample_every=7, sample_length=20, snapshot_every=3)


@pytest.fixture(scope="module")
def corpus():
    return Corpus("notes", english_docs_text()[:3000])


def new_store(folder: Path, **limits) -> RunStore:
    return RunStore(StoreSetting(folder, **limits))


def steps(run: LiveRun, n: int) -> None:
    """advance(0) takes exactly one optimizer step (and whatever falls due after it)."""
    for _ in range(n):
        run.advance(0.0)


def kept_run(store: RunStore, corpus: Corpus, token: str = "a-token-of-the-tests-0123456789abcdefghijkl") -> LiveRun:
    run = LiveRun.create(TINY, corpus, SETTINGS)
    run.token = token
    run.keep_on(store.keeper(run))
    return run


def same_tensors(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_tensors(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_tensors(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_a_restored_run_is_the_saved_run_bit_for_bit_and_trains_on_exactly_as_it_would_have(tmp_path, corpus):
    store = new_store(tmp_path)
    run = kept_run(store, corpus)
    steps(run, 23)
    run.pause()  # pausing a run that is not active saves nothing new: save explicitly, as the page's chunks do
    assert run.keeper.save(run)

    restored = new_store(tmp_path).restore(run.token)  # a new store: a restarted server
    back = restored.run
    assert restored.saved_step == back.step == 23 and back.status == Status.PAUSED
    # weights, Adam moments, data position, RNG
    assert same_tensors(run.trainer.state_dict(), back.trainer.state_dict())
    assert back.samples == run.samples and back.settings == run.settings and back.elapsed == run.elapsed
    assert [s for s, _ in back.snapshots] == [s for s, _ in run.snapshots] == [0, 3, 6, 9, 12, 15, 18, 21]
    assert all(same_tensors(a, b) for (_, a), (_, b) in zip(run.snapshots, back.snapshots, strict=True))
    assert back.token == run.token and back.corpus_name == "notes" and back.trainer.corpus.text == corpus.text

    steps(run, 9)
    steps(back, 9)
    assert same_tensors(run.trainer.model.state_dict(), back.trainer.model.state_dict())
    assert run.samples == back.samples  # the scheduled sample of step 28 too


def test_files_are_named_by_a_digest_in_a_private_folder_and_no_other_token_opens_them(tmp_path, corpus):
    store = new_store(tmp_path / "runs")
    first = kept_run(store, corpus, "first-token-" + "x" * 31)
    second = kept_run(store, corpus, "second-token-" + "y" * 30)
    steps(first, 2)
    steps(second, 2)
    assert first.keeper.save(first) and second.keeper.save(second)
    assert stat.S_IMODE((tmp_path / "runs").stat().st_mode) == 0o700
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(names) == 2 and all(len(n) == 64 and int(n, 16) >= 0 for n in names)  # two runs, two folders
    for path in (tmp_path / "runs").rglob("*"):
        assert "token" not in path.name
        assert not path.is_file() or first.token.encode() not in path.read_bytes()
    forged = first.token[:-1] + ("A" if first.token[-1] != "A" else "B")
    for guess in (forged, "", "nothing-like-it"):
        assert store.restore(guess) is None and not store.has(guess)
    assert store.restore(first.token).run.token == first.token


def test_an_altered_foreign_or_truncated_file_is_refused_in_words(tmp_path, corpus):
    store = new_store(tmp_path)
    mine, theirs = kept_run(store, corpus, "mine-" + "m" * 38), kept_run(store, corpus, "theirs-" + "t" * 36)
    for run in (mine, theirs):
        steps(run, 2)
        assert run.keeper.save(run)
    state = mine.keeper.folder / "state"
    original = state.read_bytes()

    state.write_bytes(original[:-40] + bytes(40))  # a few bytes changed on disk
    with pytest.raises(StoredRunError, match="altered on disk"):
        store.restore(mine.token)
    state.write_bytes((theirs.keeper.folder / "state").read_bytes())  # another run's file in its place
    with pytest.raises(StoredRunError, match="does not belong to this address"):
        store.restore(mine.token)
    state.write_bytes(original[:20])
    with pytest.raises(StoredRunError, match="not an rnnviz run file"):
        store.restore(mine.token)
    state.write_bytes(original)
    assert store.restore(mine.token).saved_step == 2


def saved_run(store: RunStore, corpus: Corpus) -> LiveRun:
    """A run of 23 steps saved whole: snapshots of steps 0, 3, …, 21."""
    run = kept_run(store, corpus)
    steps(run, 23)
    assert run.keeper.save(run)
    return run


def restored_snapshots_match(restored, run: LiveRun, expected_steps: list[int]) -> None:
    """The restored run holds the saved training state, and exactly these snapshots, each the run's own weights."""
    back = restored.run
    assert same_tensors(back.trainer.state_dict(), run.trainer.state_dict())
    assert [s for s, _ in back.snapshots] == expected_steps
    originals = dict(run.snapshots)
    assert all(same_tensors(weights, originals[step]) for step, weights in back.snapshots)


def test_a_snapshot_copied_over_another_is_dropped_by_name_and_the_rest_of_the_run_restores(tmp_path, corpus):
    store = new_store(tmp_path)
    run = saved_run(store, corpus)
    folder = run.keeper.folder
    (folder / "snap-12").write_bytes((folder / "snap-0").read_bytes())  # a whole, authentic file of the run

    restored = new_store(tmp_path).restore(run.token)
    restored_snapshots_match(restored, run, [0, 3, 6, 9, 15, 18, 21])
    notice = restored.run.notice
    assert "No training was lost" in notice
    assert ("The weight snapshot of step 12 (snap-12: another file was copied over it, or it was altered on disk) "
            "was dropped") in notice and "the other 7 came back" in notice

    steps(restored.run, 1)  # the next save takes the dropped file away, and the run restores whole again
    assert restored.run.keeper.save(restored.run) and not (folder / "snap-12").exists()
    again = new_store(tmp_path).restore(run.token)
    assert again.dropped == () and "dropped" not in again.run.notice


def test_a_missing_altered_or_truncated_snapshot_restores_the_run_with_the_rest_and_says_which(tmp_path, corpus):
    store = new_store(tmp_path)
    run = saved_run(store, corpus)
    folder = run.keeper.folder
    (folder / "snap-3").unlink()
    altered = (folder / "snap-9").read_bytes()
    (folder / "snap-9").write_bytes(altered[:-8] + bytes(8))
    (folder / "snap-21").write_bytes((folder / "snap-21").read_bytes()[:30])

    restored = new_store(tmp_path).restore(run.token)
    assert restored.saved_step == 23 and restored.run.status == Status.PAUSED
    restored_snapshots_match(restored, run, [0, 6, 12, 15, 18])
    assert [step for step, _ in restored.dropped] == [3, 9, 21]
    notice = restored.run.notice
    assert ("The weight snapshots of steps 3 (snap-3: missing), 9 (snap-9: another file was copied over it, or it "
            "was altered on disk), 21 (snap-21: truncated, or not an rnnviz run file) were dropped") in notice
    assert "the other 5 came back" in notice and "own weights and training state are whole" in notice

    for name in ("snap-0", "snap-6", "snap-12", "snap-15", "snap-18"):
        (folder / name).unlink()  # none left: the explorer starts again from the saved weights
    alone = new_store(tmp_path).restore(run.token)
    assert len(alone.dropped) == 8 and "none came back" in alone.run.notice
    assert alone.run.snapshots[0][0] == 23
    assert same_tensors(alone.run.snapshots[0][1], run.trainer.model.state_dict())


def test_a_damaged_state_file_still_refuses_the_run_even_with_every_snapshot_whole(tmp_path, corpus):
    store = new_store(tmp_path)
    run = saved_run(store, corpus)
    state = run.keeper.folder / "state"
    original = state.read_bytes()
    for other in ("snap-21", "progress"):  # the run's own files, authentic under their own names only
        state.write_bytes((run.keeper.folder / other).read_bytes())
        with pytest.raises(StoredRunError, match="does not belong to this address or was altered on disk"):
            new_store(tmp_path).restore(run.token)
    state.write_bytes(original[:-40] + bytes(40))
    with pytest.raises(StoredRunError, match="altered on disk"):
        new_store(tmp_path).restore(run.token)
    state.write_bytes(original[:30])
    with pytest.raises(StoredRunError, match="not an rnnviz run file"):
        new_store(tmp_path).restore(run.token)


def first_format(raw: bytes, key: bytes) -> bytes:
    """A run file as rnnviz first wrote it: b"RNNVIZr1" | HMAC-SHA-256(key, b"RNNVIZr1" | body) | body."""
    body = raw[8 + 32:]
    return b"RNNVIZr1" + hmac.new(key, b"RNNVIZr1" + body, hashlib.sha256).digest() + body


def test_a_run_saved_in_the_first_format_restores_and_its_next_save_authenticates_each_snapshot_s_step(
        tmp_path, corpus):
    store = new_store(tmp_path)
    run = saved_run(store, corpus)
    folder, key = run.keeper.folder, RunKeys.of(run.token).key
    for file in folder.iterdir():
        file.write_bytes(first_format(file.read_bytes(), key))
    old_snapshot = (folder / "snap-12").read_bytes()

    restored = new_store(tmp_path).restore(run.token)
    restored_snapshots_match(restored, run, [0, 3, 6, 9, 12, 15, 18, 21])
    assert "No training was lost" in restored.run.notice and "dropped" not in restored.run.notice
    steps(restored.run, 1)
    assert restored.run.keeper.save(restored.run)
    assert not any(file.read_bytes().startswith(b"RNNVIZr1") for file in folder.iterdir())

    (folder / "snap-12").write_bytes((folder / "snap-0").read_bytes())
    (folder / "snap-15").write_bytes(old_snapshot)  # a file of the first format, whose tag names no step
    again = new_store(tmp_path).restore(run.token)
    assert [step for step, _ in again.dropped] == [12, 15]
    assert [s for s, _ in again.run.snapshots] == [0, 3, 6, 9, 18, 21, 24]


def test_a_crash_between_write_and_rename_leaves_the_last_whole_save(tmp_path, corpus, monkeypatch):
    store = new_store(tmp_path)
    run = kept_run(store, corpus)
    steps(run, 4)
    assert run.keeper.save(run)
    steps(run, 3)

    def crash(*args):
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", crash)
        assert not run.keeper.save(run)
    assert "Saving this run to disk failed at step 7 (Input/output error)" in run.save_problem
    assert "would bring back step 4" in run.save_problem
    assert not list(run.keeper.folder.glob(".*.tmp"))  # the temporary file went with the failed save
    assert new_store(tmp_path).restore(run.token).saved_step == 4

    leftover = run.keeper.folder / ".state.999.1.tmp"  # a process killed after its write, before its rename
    leftover.write_bytes(b"half a file")
    os.utime(leftover, (time.time() - STALE_TEMP_S - 1,) * 2)
    assert new_store(tmp_path).restore(run.token).saved_step == 4
    assert not leftover.exists()  # a new store clears what a crash left behind
    assert run.keeper.save(run) and run.save_problem is None


def test_saves_and_restores_at_once_only_ever_read_whole_saves(tmp_path, corpus):
    store = new_store(tmp_path)
    run = kept_run(store, corpus)
    steps(run, 1)
    assert run.keeper.save(run)
    saved_steps, read_steps, errors = {1}, [], []
    done = threading.Event()

    def reader():
        reading = new_store(tmp_path)
        while not done.is_set():
            try:
                read_steps.append(reading.restore(run.token).saved_step)
            except Exception as err:  # noqa: BLE001 (any failure to read is the failure under test)
                errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(12):
            with run.lock:
                steps(run, 1)
                assert run.keeper.save(run)
                saved_steps.add(run.step)
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert not errors and read_steps and set(read_steps) <= saved_steps


def test_a_run_saves_on_schedule_when_it_stops_and_notes_the_step_it_reached(tmp_path, corpus):
    store = new_store(tmp_path, save_every_s=3600, save_every_steps=10)
    run = kept_run(store, corpus)
    slots = TrainingSlots(1)
    run.start()
    run.tick(slots, "me", 0.0)
    assert run.keeper.saved_step == 1  # a new run is on disk after its first chunk
    while run.step < 11:
        run.tick(slots, "me", 0.0)
        assert run.keeper.saved_step == (1 if run.step < 11 else 11)  # then every 10 steps
    run.tick(slots, "me", 0.0)
    run.tick(slots, "me", 0.0)
    assert run.keeper.saved_step == 11
    restored = new_store(tmp_path).restore(run.token)  # as if the server were killed now: every chunk is noted
    assert (restored.saved_step, restored.reached_step, restored.lost_steps) == (11, 13, 2)
    assert restored.was_training and "saved at step 11" in restored.run.notice
    assert "trained on to step 13 (or a chunk more: it was training when the server stopped), so the 2 steps after " \
           "that save were lost" in restored.run.notice

    run.pause()
    assert run.keeper.saved_step == 13  # Pause saves
    restored = new_store(tmp_path).restore(run.token)
    assert restored.lost_steps == 0 and "No training was lost" in restored.run.notice
    run.update_settings(LiveSettings(step_budget=13))  # the budget's end saves, finished
    assert new_store(tmp_path).restore(run.token).run.status == Status.FINISHED


def test_drain_saves_every_run_with_unsaved_steps(tmp_path, corpus):
    store = new_store(tmp_path, save_every_s=3600)
    runs = [kept_run(store, corpus, f"drain-{i}-" + "d" * 35) for i in range(3)]
    for run in runs:
        steps(run, 2)
        assert run.keeper.save(run)
    steps(runs[0], 3)
    steps(runs[2], 1)
    for run in runs:
        run.status = Status.RUNNING  # the server stops in the middle of training
        run.keeper.save_if_due(run)  # not due (an hour between saves): a progress note only
    assert drain(runs) == 2
    restored = [new_store(tmp_path).restore(r.token) for r in runs]
    assert [r.saved_step for r in restored] == [5, 2, 3]
    assert all(r.lost_steps == 0 and not r.was_training for r in restored)  # drained: nothing after the save
    assert all("No training was lost" in r.run.notice for r in restored)


def test_reset_deletes_the_run_and_nothing_is_written_after(tmp_path, corpus):
    store = new_store(tmp_path)
    run = kept_run(store, corpus)
    steps(run, 2)
    assert run.keeper.save(run)
    folder = run.keeper.folder
    run.forget()
    steps(run, 2)
    run.pause()
    assert not folder.exists() and store.restore(run.token) is None and store.summary().runs == 0


def test_old_runs_go_after_the_retention_period_and_the_oldest_beyond_the_size_cap(tmp_path, corpus):
    store = new_store(tmp_path, retention_s=7 * 86_400, max_total_bytes=10**9)
    runs = [kept_run(store, corpus, f"prune-{i}-" + "p" * 35) for i in range(4)]
    for run in runs:
        steps(run, 1)
        assert run.keeper.save(run)
    now = time.time()
    for age_days, run in zip((8, 3, 2, 1), runs, strict=True):
        os.utime(run.keeper.folder / "state", (now - age_days * 86_400,) * 2)
    tokens = [r.token for r in runs]
    assert store.prune(now) == []  # runs this process holds are never pruned
    store._held.clear()  # from here on they are other sessions' runs, long gone
    assert len(store.prune(now)) == 1 and store.restore(tokens[0]) is None  # 8 days unopened
    assert store.restore(tokens[1]) is not None  # opening a run starts its retention again
    store._held.clear()
    summary = store.summary()
    assert summary.runs == 3 and summary.bytes > 0
    store.setting = StoreSetting(store.folder, max_total_bytes=summary.bytes * 2 // 3)
    removed = store.prune(now)
    assert len(removed) == 1 and store.restore(tokens[2]) is None  # the oldest save (2 days) went first
    assert store.restore(tokens[1]) is not None and store.restore(tokens[3]) is not None
    assert store.summary().bytes <= summary.bytes * 2 // 3


def test_a_built_in_corpus_is_kept_by_name_and_other_text_in_full(tmp_path):
    store = new_store(tmp_path)
    builtin = load_builtin("python-stdlib", max_chars=200_000)
    store.builtin = lambda name: builtin  # the reader the app passes (its cache)
    mine = Corpus("python-stdlib", "an upload that happens to share the built-in's name " * 10)
    small, big = kept_run(store, builtin, "by-name-" + "n" * 35), kept_run(store, mine, "in-full-" + "f" * 35)
    for run in (small, big):
        steps(run, 1)
        assert run.keeper.save(run)
    assert (small.keeper.folder / "state").stat().st_size < len(builtin.text) // 2
    assert store.restore(small.token).run.trainer.corpus is builtin
    assert store.restore(big.token).run.trainer.corpus.text == mine.text
    store.builtin = lambda name: Corpus(name, builtin.text[:-1] + "!")  # Python updated: the text changed
    with pytest.raises(StoredRunError, match="not the text the run trained on"):
        store.restore(small.token)


def test_where_runs_are_kept():
    assert default_run_dir({"HOME": "/home/ada"}, "linux") == Path("/home/ada/.local/state/rnnviz/runs")
    assert default_run_dir({"HOME": "/h", "XDG_STATE_HOME": "/s"}, "linux") == Path("/s/rnnviz/runs")
    mac = default_run_dir({"HOME": "/Users/ada"}, "darwin")
    assert mac == Path("/Users/ada/Library/Application Support/rnnviz/runs")
    assert default_run_dir({"HOME": "C:/u", "LOCALAPPDATA": "C:/u/L"}, "win32") == Path("C:/u/L/rnnviz/runs")
    assert store_setting({"RNNVIZ_RUN_DIR": "/x/runs"}, Path("/nonexistent")).folder == Path("/x/runs")
    assert store_setting({"RNNVIZ_RUN_DIR": "off"}, Path("/nonexistent")).folder is None
    default = store_setting({"HOME": "/home/ada"}, Path("/nonexistent")).folder
    assert default == Path("/home/ada/.local/state/rnnviz/runs")


def test_the_settings_file_sets_the_folder_and_limits(tmp_path):
    file = tmp_path / "rnnviz.toml"
    file.write_text('[rnnviz]\nrun_dir = "/srv/runs"\nsave_every_s = 30\n'
                    'run_retention_days = 2\nrun_dir_max_mb = 100\n')
    setting = store_setting({}, file)
    assert (setting.folder, setting.save_every_s, setting.retention_s, setting.max_total_bytes) == (
        Path("/srv/runs"), 30.0, 2 * 86_400, 100_000_000)
    assert store_setting({"RNNVIZ_RUN_DIR": "/env", "RNNVIZ_SAVE_EVERY_S": "5"}, file).folder == Path("/env")


# -- a folder that cannot take the save: the run trains on, and the page's words say so -------------------------


def _mount_tmpfs(folder: Path, options: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def _unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB file system (a tmpfs, as root), else a folder whose files may not grow past 256 KiB."""
    folder = tmp_path / "small"
    if _mount_tmpfs(folder, "size=256k,mode=0700"):
        yield folder
        _unmount(folder)
    else:
        pytest.skip("needs root to mount a tiny tmpfs")


def test_a_full_disk_keeps_the_run_training_says_so_and_restores_the_last_whole_save(small_disk, corpus):
    store = new_store(small_disk)
    run = kept_run(store, corpus)
    steps(run, 2)
    assert run.keeper.save(run)
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out:  # the rest of the disk fills up
        try:
            while True:
                out.write(bytes(4096))
        except OSError:
            pass
    slots = TrainingSlots(1)
    run.start()
    before = run.step
    for _ in range(3):
        run.tick(slots, "me", 0.0)
    run.pause()
    assert run.step > before and run.status == Status.PAUSED  # training went on
    assert "Saving this run to disk failed" in run.save_problem and "No space left on device" in run.save_problem
    assert new_store(small_disk).restore(run.token).saved_step == 2
    filler.unlink()
    run.update_settings(run.settings)  # the next save, with room again, works and clears the problem
    assert run.save_problem is None and new_store(small_disk).restore(run.token).saved_step == run.step


def test_a_read_only_folder_keeps_the_run_training_and_says_so(tmp_path, corpus):
    folder = tmp_path / "ro"
    store = new_store(folder)
    run = kept_run(store, corpus)
    if os.geteuid() == 0:
        if not _mount_tmpfs(folder, "ro,size=64k"):
            pytest.skip("needs a read-only mount")
    else:
        folder.chmod(0o500)
    try:
        steps(run, 2)
        run.pause()
        assert not run.keeper.save(run)
        assert "Saving this run to disk failed at step 2" in run.save_problem
        assert "Read-only file system" in run.save_problem or "Permission denied" in run.save_problem
        steps(run, 1)
        assert run.step == 3
    finally:
        _unmount(folder) if os.geteuid() == 0 else folder.chmod(0o700)
