"""The live page over a server restart (AppTest): the address restores the run from disk, paused at its saved
step with the same weights, and says how many steps were lost; a damaged file is refused in words; a folder that
cannot be written is said on the page while the run trains on."""

import os

import torch

from rnnviz.serving.durable import RunStore
from rnnviz.ui.app.server import run_registry
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from rnnviz.ui.kit.runs import run_store
from tests.apptest_helpers import open_page, page_text
from tests.test_live_teacher import PAGE, hello_page, key, step_until


def restart_the_server() -> None:
    """What a restart loses: every run held in memory (the registry); what is on disk stays."""
    run_registry.clear()


def token_of(at) -> str:
    token = at.query_params["run"]
    return token[0] if isinstance(token, list) else token


def test_after_a_restart_the_address_restores_the_run_paused_with_its_weights_and_the_lost_steps():
    owner = hello_page()
    run = step_until(owner, 40)
    token = token_of(owner)
    assert run.keeper is not None and run.keeper.saved_step == run.step  # every Step chunk saves
    saved = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    saved_step = run.step
    restart_the_server()

    later = open_page(PAGE, query={"run": token})
    assert not later.exception, [e.value for e in later.exception]
    back = later.session_state[LIVE_RUN_KEY]
    assert back is not run and back.token == token == token_of(later)
    assert back.step == saved_step and back.status == "paused"
    assert all(torch.equal(saved[k], v) for k, v in back.trainer.model.state_dict().items())
    assert next(m.value for m in later.metric if m.label == "Step") == f"{saved_step:,}"
    notice = " ".join(w.value for w in later.warning)
    assert f"restored from disk, where it was saved at step {saved_step:,}" in notice
    assert "No training was lost" in notice
    assert later.selectbox(key=key("builtin")).value == "hello"

    later.button(key=key("step")).click().run()  # and it trains on from there
    assert later.session_state[LIVE_RUN_KEY].step > saved_step


def test_a_damaged_saved_run_is_refused_in_words():
    owner = hello_page()
    run = step_until(owner, 1)
    token = token_of(owner)
    state = run.keeper.folder / "state"
    state.write_bytes(state.read_bytes()[:-10] + b"0123456789")
    restart_the_server()
    later = open_page(PAGE, query={"run": token})
    assert not later.exception and LIVE_RUN_KEY not in later.session_state
    errors = " ".join(e.value for e in later.error)
    assert "was altered on disk, so it was refused without being read" in errors and "Press Start" in errors
    assert not any("does not hold" in w.value for w in later.warning)  # one message, the one that says why


def test_a_snapshot_copied_over_another_is_named_on_the_page_and_the_run_comes_back_without_it():
    owner = hello_page()
    run = step_until(owner, 1)
    with run.lock:  # on to the run's second snapshot without a page rerun per chunk
        while len(run.snapshots) < 2:
            run.advance(0.0)
        assert run.keeper.save(run)
    token, (first, _), (last, _) = token_of(owner), run.snapshots[0], run.snapshots[-1]
    (run.keeper.folder / f"snap-{last}").write_bytes((run.keeper.folder / f"snap-{first}").read_bytes())
    restart_the_server()

    later = open_page(PAGE, query={"run": token})
    assert not later.exception, [e.value for e in later.exception]
    back = later.session_state[LIVE_RUN_KEY]
    assert back.step == run.step and [s for s, _ in back.snapshots] == [s for s, _ in run.snapshots[:-1]]
    notice = " ".join(w.value for w in later.warning)
    assert f"snapshot of step {last:,} (snap-{last}: another file was copied over it" in notice
    assert "was dropped" in notice


def test_a_folder_that_cannot_be_written_is_said_while_the_run_trains_on(monkeypatch):
    owner = hello_page()
    run = step_until(owner, 1)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", refuse)
        owner.button(key=key("step")).click().run()
    assert run.step > 1
    assert "Saving this run to disk failed" in page_text(owner) and "Permission denied" in page_text(owner)
    owner.button(key=key("step")).click().run()  # the folder works again: the next save clears the warning
    assert "Saving this run to disk failed" not in page_text(owner)


def test_the_store_is_the_test_folder_not_the_users():
    store = run_store()
    assert isinstance(store, RunStore) and str(store.folder) == os.environ["RNNVIZ_RUN_DIR"]


def test_server_status_counts_the_saved_runs_and_names_their_folder():
    owner = hello_page()
    step_until(owner, 1)
    folder = os.environ["RNNVIZ_RUN_DIR"]
    on_disk = [e for e in os.scandir(folder) if e.is_dir() and len(e.name) == 64]
    size = sum(f.stat().st_size for e in on_disk for f in os.scandir(e.path))
    status = open_page("app_pages/server_status.py")
    assert not status.exception
    metrics = {m.label: m.value for m in status.metric}
    assert metrics["Runs on disk"] == f"{len(on_disk):,}" and len(on_disk) >= 1
    assert metrics["Their size"] == f"{size / 1e6:,.1f} MB"
    assert metrics["Saved every"] == "60 s of training"
    assert f"Folder: `{folder}`" in page_text(status) and "7 days" in page_text(status)
