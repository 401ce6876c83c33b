"""The live-training page's run: this session's LiveRun, its address, the server's training slots, the
control callbacks and the controls.

The panels that show progress, curves and samples are in ``live_watch``.

The run lives in ``st.session_state[LIVE_RUN_KEY]`` (the hidden-cell explorer reads it too). Buttons are
``on_click`` callbacks: they run before the page reruns and never while a chunk trains, so a click at
worst waits for the chunk in flight. The slots are one process-wide ``TrainingSlots`` (a coordination
object, not a model) in ``st.cache_resource``.

Every run gets an unguessable token, kept in the page's address as ``?run=<token>``. A reload or a new tab
is a new session: it finds the run again through the process's ``RunRegistry`` while a session that holds
the run is still alive (open, or closed less than ``server.disconnectedSessionTTL`` ago). Nothing else
leads to a run, so a student without the token sees none of another's.

With RNNVIZ_RAY_ADDRESS set (see rnnviz.charlm.backend), a new run trains on a Ray actor
(rnnviz.charlm.ray_backend) and the page's LiveRun mirrors it; a token this process does not know is looked
up as a named actor on the cluster (a reload that landed on another replica). Ray that is missing or does not
answer leaves training in this process, and the Server status page says why.
"""

from __future__ import annotations

import os
import uuid

import streamlit as st

from rnnviz.charlm.backend import backend_setting
from rnnviz.charlm.corpus import BUILTIN_CORPORA
from rnnviz.charlm.live import LiveRun, RunRegistry, Status
from rnnviz.charlm.slots import TrainingSlots
from rnnviz.core.runtime import physical_cores, share_cores
from rnnviz.ui.live_corpus import download_shakespeare, needs_download
from rnnviz.ui.live_pending import PendingRun, pending_run, retunable_changes
from rnnviz.ui.live_setup import REVERT_BUILTIN, SOURCES, active_corpus, adopt_run, key
from rnnviz.ui.models import LIVE_RUN_KEY
from rnnviz.ui.sessions import current_session_id, session_alive
from rnnviz.ui.widgets import literal

CHUNK_SECONDS = 0.4  # training per fragment rerun: a click waits at most this long
RERUN_EVERY = 0.25  # seconds between the running fragment's reruns (a rerun that is due waits for the last)
LEASE_SECONDS = 20.0  # a tab that stops asking for chunks gives its slot up after this long
CONFIRM_RESET_AFTER_S = 60.0  # Reset asks first once the model has trained this long

OWNER = key("owner")
PENDING_ACTION = key("pending_action")  # "start" or "step", waiting for Tiny Shakespeare's download
CONFIRM_RESET = key("confirm_reset")
NOTICE = key("notice")  # (kind, text) from a callback, shown once above the controls
RUN_PARAM = "run"  # ?run=<token>: the address that finds this session's run again
LET_GO = key("let_go")  # tokens of runs this session reset: never taken up again from its address


def slot_capacity() -> int:
    """Sessions that may train at once: the physical cores, or $RNNVIZ_TRAINING_SLOTS."""
    return int(os.environ.get("RNNVIZ_TRAINING_SLOTS", 0)) or physical_cores()


@st.cache_resource(show_spinner=False)
def training_slots() -> TrainingSlots:
    """The one TrainingSlots of this server process, shared by every session."""
    return TrainingSlots(slot_capacity(), lease_seconds=LEASE_SECONDS, on_change=share_cores)


@st.cache_resource(show_spinner=False)
def ray_connection():
    """This process's RayConnection (rnnviz.charlm.ray_backend), made once; None when no Ray address is set."""
    setting = backend_setting()
    if not setting.wants_ray:
        return None
    from rnnviz.charlm.ray_backend import connect

    return connect(setting)


def ray_if_usable():
    """The RayConnection when runs train on Ray, else None (not asked for, or not usable: then in-process)."""
    connection = ray_connection()
    return connection if connection is not None and connection.ok else None


@st.cache_resource(show_spinner=False)
def run_registry() -> RunRegistry:
    """The one RunRegistry of this server process: runs by token, held weakly, listed nowhere."""
    return RunRegistry()


def owner() -> str:
    """Who queues for a slot: the run's token (two tabs on one run share its slot), else this session."""
    run = current_run()
    if run is not None and run.token:
        return run.token
    return st.session_state.setdefault(OWNER, uuid.uuid4().hex)


def _holder() -> str:
    """This session, as a holder of runs in the registry."""
    return current_session_id() or st.session_state.setdefault(OWNER, uuid.uuid4().hex)


def current_run() -> LiveRun | None:
    return st.session_state.get(LIVE_RUN_KEY)


def gone_notice() -> str:
    ttl = st.get_option("server.disconnectedSessionTTL")
    return (f"This address names a live run that this server does not hold (any more): its tab was closed more "
            f"than {ttl} s ago, it was reset, the server restarted, or the address is not whole. Nothing of it "
            "can be shown; press Start for a new run.")


def take_up_run_from_address() -> None:
    """Before anything is drawn: a session opened on ``?run=<token>`` takes up that run, with its settings.

    An unknown or expired token is said in words and dropped from the address. A run this session holds
    without a token yet (put there by a test, or before this page had addresses) gets one."""
    run = current_run()
    registry = run_registry()
    if run is not None and run.token is None:
        registry.register(run, _holder())
    token = st.query_params.get(RUN_PARAM)
    if not token or (run is not None and token == run.token):
        return
    let_go = token in st.session_state.get(LET_GO, ())
    found = None if let_go else registry.attach(token, _holder(), session_alive)
    if found is None and not let_go and ray_if_usable() is not None:
        from rnnviz.charlm.ray_backend import find_run

        found = find_run(token, ray_if_usable())  # its actor on the cluster: a reload on another replica
        if found is not None:
            registry.adopt(found, _holder())
    if found is None:
        del st.query_params[RUN_PARAM]
        if not let_go:
            _notice("warning", gone_notice())
        return
    if run is not None:
        registry.release(run.token, _holder())
    st.session_state[LIVE_RUN_KEY] = found
    st.session_state.pop(CONFIRM_RESET, None)
    adopt_run(found)
    st.toast(f"Your run is back: step {found.step:,} on {literal(found.corpus_name)}.", icon=":material/restore:")


def keep_run_in_address(run: LiveRun | None) -> None:
    """``?run=<token>`` names this session's run (beside the settings' own link parameters); none without one."""
    token = run.token if run is not None else None
    if token and st.query_params.get(RUN_PARAM) != token:
        st.query_params[RUN_PARAM] = token
    elif token is None and RUN_PARAM in st.query_params:
        del st.query_params[RUN_PARAM]


def _selected_builtin_needs_download() -> bool:
    state = st.session_state
    return state.get(key("source")) == SOURCES[0] and needs_download(state.get(key("builtin"), ""))


def _notice(kind: str, text: str) -> None:
    st.session_state[NOTICE] = (kind, text)


def _create_run() -> LiveRun | None:
    """A fresh run from the widgets and the active corpus, or None with the reason noted."""
    corpus = active_corpus()
    if corpus is None:
        _notice("error", "Choose a corpus first.")
        return None
    pending = pending_run(corpus.vocab.size)
    if pending.problems:
        _notice("error", " ".join(pending.problems))
        return None
    run = LiveRun.create(pending.config, corpus, pending.settings)
    run_registry().register(run, _holder())
    connection = ray_if_usable()
    if connection is not None:
        from rnnviz.charlm.ray_backend import train_on_ray

        train_on_ray(run, connection)  # its chunks train on an actor named by the token
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
    if run is not None and run.token:
        run_registry().release(run.token, _holder())
        st.session_state[LET_GO] = (*st.session_state.get(LET_GO, ()), run.token)
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
    notice = st.session_state.pop(NOTICE, None)
    if notice is not None:
        kind, text = notice
        {"error": st.error, "warning": st.warning}.get(kind, st.info)(text)
