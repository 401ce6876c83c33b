"""The live-training page's run: this session's LiveRun, its address, the server's training slots, the
control callbacks and the controls.

The panels that show progress, curves and samples are in ``watch``.

The run lives in ``st.session_state[LIVE_RUN_KEY]`` (the hidden-cell explorer reads it too). Buttons are
``on_click`` callbacks: they run before the page reruns and never while a chunk trains, so a click at
worst waits for the chunk in flight. Training takes one of the server's slots (``rnnviz.ui.app.server``).

Every run gets an unguessable token, kept in the page's address as ``?run=<token>`` (``RUN_ADDRESS``; how a
reload or a new tab finds it again is in ``rnnviz.ui.kit.address``). A run that trains here is saved to disk as it
trains (``rnnviz.ui.kit.runs``), so that its address finds it again after the server restarted, or after its
session expired: the run comes back paused, at the step of its last save.

With RNNVIZ_RAY_ADDRESS set (see rnnviz.serving.backend), a new run trains on a Ray actor
(rnnviz.serving.ray_backend) and the page's LiveRun mirrors it; a token this process does not know is looked
up as a named actor on the cluster (a reload that landed on another replica). Ray that is missing or does not
answer leaves training in this process, and the Server status page says why.
"""

from __future__ import annotations

import streamlit as st

from rnnviz.charlm.corpus import BUILTIN_CORPORA, Corpus
from rnnviz.serving.durable import StoredRunError
from rnnviz.serving.live import LiveRun, Status
from rnnviz.ui.app.server import ray_if_usable, run_registry, training_slots
from rnnviz.ui.kit.address import HeldInAddress
from rnnviz.ui.kit.corpora import download_shakespeare, needs_download
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from rnnviz.ui.kit.runs import run_store
from rnnviz.ui.kit.widgets import literal
from rnnviz.ui.live_training.corpus import take_up_builtin
from rnnviz.ui.live_training.pending import PendingRun, pending_run, retunable_changes
from rnnviz.ui.live_training.setup import REVERT_BUILTIN, SOURCES, active_corpus, adopt_run, key

CHUNK_SECONDS = 0.4  # training per fragment rerun: a click waits at most this long
RERUN_EVERY = 0.25  # seconds between the running fragment's reruns (a rerun that is due waits for the last)
FOLLOW_EVERY = 0.75  # seconds between a still tab's looks at its run: another tab of the run may have changed it
CONFIRM_RESET_AFTER_S = 60.0  # Reset asks first once the model has trained this long

PENDING_ACTION = key("pending_action")  # "start" or "step", waiting for Tiny Shakespeare's download
CONFIRM_RESET = key("confirm_reset")
RUN_PARAM = "run"  # ?run=<token>: the address that finds this session's run again


def gone_notice() -> str:
    store = run_store()
    if store is not None:
        days = store.setting.retention_s / 86_400
        return ("This address names a live run that this server does not hold, in memory or on disk: it was reset, "
                f"it was not opened for {days:g} days and was deleted, or the address is not whole. Nothing of it "
                "can be shown; press Start for a new run.")
    ttl = st.get_option("server.disconnectedSessionTTL")
    return (f"This address names a live run that this server does not hold (any more): its tab was closed more "
            f"than {ttl} s ago, it was reset, the server restarted (this server saves no runs to disk), or the "
            "address is not whole. Nothing of it can be shown; press Start for a new run.")


RUN_ADDRESS = HeldInAddress(param=RUN_PARAM, registry=run_registry, owner_key=key("owner"), notice_key=key("notice"),
                            let_go_key=key("let_go"), gone_text=gone_notice)


def owner() -> str:
    """Who queues for a slot: the run's token (two tabs on one run share its slot), else this session."""
    run = current_run()
    if run is not None and run.token:
        return run.token
    return RUN_ADDRESS.owner()


def current_run() -> LiveRun | None:
    """This session's run; a run that another tab of it reset is let go here too, with a notice."""
    run = st.session_state.get(LIVE_RUN_KEY)
    if run is not None and run.discarded:
        RUN_ADDRESS.let_go(run.token)
        st.session_state.pop(LIVE_RUN_KEY, None)
        st.session_state.pop(CONFIRM_RESET, None)
        _notice("warning", "This run was reset in another tab that had it open, which discards it for good. Press "
                "Start for a new run.")
        return None
    return run


def run_state(run: LiveRun | None) -> tuple:
    """What the controls and the status line are drawn from: when it changes, a tab redraws them (another tab of
    the same run pressed Start, Pause, Step or Reset)."""
    return (None,) if run is None else (id(run), run.status, run.step, run.discarded, run.cools_down)


def _run_elsewhere(token: str) -> LiveRun | None:
    """A run this process does not hold: its actor on the Ray cluster, when runs train there (a reload that landed
    on another replica), else its last save on disk (the server restarted, or its session expired)."""
    connection = ray_if_usable()
    if connection is not None:
        from rnnviz.serving.ray_backend import find_run

        return find_run(token, connection)
    store = run_store()
    if store is None:
        return None
    try:
        restored = store.restore(token)
    except StoredRunError as err:
        _notice("error", f"{literal(str(err))} Press Start for a new run.")
        return None
    return restored.run if restored is not None else None


def take_up_run_from_address() -> None:
    """Before anything is drawn: a session opened on ``?run=<token>`` takes up that run, with its settings.

    An unknown or expired token is said in words and dropped from the address. A run this session holds
    without a token yet (put there by a test, or before this page had addresses) gets one."""
    run = current_run()
    if run is not None and run.token is None:
        RUN_ADDRESS.register(run)
    found = RUN_ADDRESS.take_up(run.token if run is not None else None, elsewhere=_run_elsewhere)
    if found is None:
        return
    if run is not None:
        run_registry().release(run.token, RUN_ADDRESS.holder())
    st.session_state[LIVE_RUN_KEY] = found
    st.session_state.pop(CONFIRM_RESET, None)
    adopt_run(found)
    st.toast(f"Your run is back: step {found.step:,} on {literal(found.corpus_name)}.", icon=":material/restore:")


def keep_run_in_address(run: LiveRun | None) -> None:
    """``?run=<token>`` names this session's run (beside the settings' own link parameters); none without one."""
    RUN_ADDRESS.keep(run.token if run is not None else None)


def _selected_builtin_needs_download() -> bool:
    state = st.session_state
    return state.get(key("source")) == SOURCES[0] and needs_download(state.get(key("builtin"), ""))


def _notice(kind: str, text: str) -> None:
    RUN_ADDRESS.notice(kind, text)


def _chosen_corpus() -> Corpus | None:
    """The corpus a new run trains on: a built-in one as its box shows it now (corpus.take_up_builtin)."""
    name = st.session_state.get(key("builtin"))
    if st.session_state.get(key("source")) == SOURCES[0] and name in BUILTIN_CORPORA:
        take_up_builtin(name)
    return active_corpus()


def _create_run() -> LiveRun | None:
    """A fresh run from the widgets and the chosen corpus, or None with the reason noted."""
    corpus = _chosen_corpus()
    if corpus is None:
        _notice("error", "Choose a corpus first.")
        return None
    pending = pending_run(corpus.vocab.size)
    if pending.problems:
        _notice("error", " ".join(pending.problems))
        return None
    run = LiveRun.create(pending.config, corpus, pending.settings)
    RUN_ADDRESS.register(run)
    connection = ray_if_usable()
    if connection is not None:
        from rnnviz.serving.ray_backend import train_on_ray

        train_on_ray(run, connection)  # its chunks train on an actor named by the token
    elif (store := run_store()) is not None:
        run.keep_on(store.keeper(run))  # saved as it trains: a restart or an expired session loses at most a minute
    st.session_state[LIVE_RUN_KEY] = run
    return run


def _run_for(action: str) -> LiveRun | None:
    """The session's run, or a new one; None when the corpus must be downloaded first (action deferred)."""
    run = current_run()
    if run is not None:
        return run
    if _selected_builtin_needs_download():
        st.session_state[PENDING_ACTION] = action
        return None
    return _create_run()


def on_start() -> None:
    run = _run_for("start")
    if run is not None:
        run.start()


def on_pause() -> None:
    run = current_run()
    if run is not None:
        run.pause()
    training_slots().release(owner())


def on_step() -> None:
    run = _run_for("step")
    if run is not None:
        run.step_once(training_slots(), owner(), CHUNK_SECONDS)


def on_reset() -> None:
    run = current_run()
    if run is not None and run.trainer.seconds > CONFIRM_RESET_AFTER_S and not st.session_state.get(CONFIRM_RESET):
        st.session_state[CONFIRM_RESET] = True
        return
    _reset()


def _reset() -> None:
    training_slots().release(owner())
    run = current_run()
    if run is not None:
        run.release()  # a Ray actor is killed at once, not when the run is collected
        run.discard()  # for every tab that holds it, and its files on disk go: Reset discards the run for good
        RUN_ADDRESS.let_go(run.token)
    st.session_state.pop(LIVE_RUN_KEY, None)
    st.session_state.pop(CONFIRM_RESET, None)
    st.session_state.pop(PENDING_ACTION, None)


def on_cancel_reset() -> None:
    st.session_state.pop(CONFIRM_RESET, None)


def on_retune() -> None:
    run = current_run()
    if run is None:
        return
    pending = pending_run(run.trainer.vocab.size)
    changes = retunable_changes(run.trainer.config, pending)
    if pending.config is None:
        _notice("error", " ".join(pending.problems))
    elif changes:
        run.retune(**changes)


def on_budget_change() -> None:
    """The step budget and sample spacing apply to the live run at once."""
    run = current_run()
    pending = pending_run(run.trainer.vocab.size if run else None)
    if run is not None and pending.settings is not None:
        run.update_settings(pending.settings)
        if not run.is_active and not run.cools_down:  # a cool-down turned off midway gives its slot back
            training_slots().release(owner())


def run_pending_download() -> None:
    """Start or Step pressed before Tiny Shakespeare was here: download it now (progress bar), then act."""
    action = st.session_state.pop(PENDING_ACTION, None)
    if action is None:
        return
    corpus, error = download_shakespeare()
    if corpus is None:
        # No run was made: say why, and select the previous built-in corpus again.
        previous = active_corpus()
        if previous is not None and previous.name in BUILTIN_CORPORA:
            st.session_state[REVERT_BUILTIN] = previous.name
        _notice("error", error)
        st.rerun()
    st.session_state[key("corpus")] = corpus
    (on_start if action == "start" else on_step)()
    st.rerun()  # section 1 still shows the corpus as waiting for its download: draw it again


# --- Controls ---------------------------------------------------------------------------------------------


def controls(run: LiveRun | None, pending: PendingRun) -> None:
    """Start, Pause, Step and Reset, a confirmation when Reset would discard a long run, and notices."""
    active = run is not None and run.is_active
    blocked = run is None and bool(pending.problems)
    finished = run is not None and run.status == Status.FINISHED
    cols = st.columns(4)
    cols[0].button("Start", key=key("start"), icon=":material/play_arrow:", type="primary", on_click=on_start,
                   disabled=active or blocked or finished, width="stretch")
    cols[1].button("Pause", key=key("pause"), icon=":material/pause:", on_click=on_pause, disabled=not active,
                   width="stretch")
    cols[2].button("Step", key=key("step"), icon=":material/skip_next:", on_click=on_step,
                   disabled=active or blocked or finished, width="stretch",
                   help=f"Train one chunk of about {CHUNK_SECONDS:g} s, then stop.")
    cols[3].button("Reset", key=key("reset"), icon=":material/restart_alt:", on_click=on_reset,
                   disabled=run is None, width="stretch",
                   help="Discard this model; the next Start or Step builds a new one from the settings above.")
    if st.session_state.get(CONFIRM_RESET) and run is not None:
        minutes = run.trainer.seconds / 60
        st.warning(f"This model has trained for {minutes:.1f} minutes. Reset discards it for good.",
                   icon=":material/warning:")
        confirm = st.columns(2)
        confirm[0].button("Yes, discard it", key=key("confirm_reset_yes"), on_click=_reset, type="primary")
        confirm[1].button("Keep it", key=key("confirm_reset_no"), on_click=on_cancel_reset)
    RUN_ADDRESS.show_notice()
