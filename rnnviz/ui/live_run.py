"""The live-training page's run: this session's LiveRun, the server's training slots, the control callbacks
and the panels that show progress, curves and samples.

The run lives in ``st.session_state[LIVE_RUN_KEY]`` (the hidden-cell explorer reads it too). Buttons are
``on_click`` callbacks: they run before the page reruns and never while a chunk trains, so a click at
worst waits for the chunk in flight. The slots are one process-wide ``TrainingSlots`` (a coordination
object, not a model) in ``st.cache_resource``.
"""

from __future__ import annotations

import os
import uuid

import numpy as np
import streamlit as st

from rnnviz.charlm.corpus import BUILTIN_CORPORA
from rnnviz.charlm.live import LiveRun, Status
from rnnviz.charlm.slots import TrainingSlots
from rnnviz.core.runtime import physical_cores
from rnnviz.figures import live as figures
from rnnviz.ui.live_setup import (
    REVERT_BUILTIN,
    SOURCES,
    PendingRun,
    active_corpus,
    download_shakespeare,
    key,
    needs_download,
    pending_run,
    retunable_changes,
)
from rnnviz.ui.models import LIVE_RUN_KEY
from rnnviz.ui.widgets import literal, plot

CHUNK_SECONDS = 0.4  # training per fragment rerun: a click waits at most this long
RERUN_EVERY = 0.25  # seconds between the running fragment's reruns (a rerun that is due waits for the last)
LEASE_SECONDS = 20.0  # a tab that stops asking for chunks gives its slot up after this long
CONFIRM_RESET_AFTER_S = 60.0  # Reset asks first once the model has trained this long
HISTORY_SHOWN = 40  # samples listed, newest first

OWNER = key("owner")
PENDING_ACTION = key("pending_action")  # "start" or "step", waiting for Tiny Shakespeare's download
CONFIRM_RESET = key("confirm_reset")
NOTICE = key("notice")  # (kind, text) from a callback, shown once above the controls


def slot_capacity() -> int:
    """Sessions that may train at once: the physical cores, or $RNNVIZ_TRAINING_SLOTS."""
    return int(os.environ.get("RNNVIZ_TRAINING_SLOTS", 0)) or physical_cores()


@st.cache_resource(show_spinner=False)
def training_slots() -> TrainingSlots:
    """The one TrainingSlots of this server process, shared by every session."""
    return TrainingSlots(slot_capacity(), lease_seconds=LEASE_SECONDS)


def owner() -> str:
    """This session's id in the slot queue."""
    return st.session_state.setdefault(OWNER, uuid.uuid4().hex)


def current_run() -> LiveRun | None:
    return st.session_state.get(LIVE_RUN_KEY)


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
        (st.error if kind == "error" else st.info)(text)


def run_summary(run: LiveRun) -> str:
    config = run.trainer.config
    return (f"{config.layers} × {config.hidden} {config.kind.upper()} on **{literal(run.corpus_name)}** (V = "
            f"{run.trainer.vocab.size}), {run.trainer.num_parameters:,} parameters, {config.optimizer} at "
            f"learning rate {config.lr:g}, " + (f"clipping at θ = {config.clip:g}" if config.clip else "no clipping"))


def status_line(run: LiveRun) -> None:
    """The run's status in words; a halt also links to the page on exploding gradients."""
    if run.status == Status.HALTED:
        st.error(run.message, icon=":material/error:")
        st.page_link("app_pages/gradient_decay.py", label="Why gradients explode: the Gradient decay page",
                     icon=":material/trending_down:")
    elif run.status == Status.WAITING:
        st.warning(run.message, icon=":material/hourglass_top:")
    elif run.status == Status.FINISHED:
        st.success(run.message, icon=":material/check_circle:")
    else:
        st.info(run.message, icon=":material/info:")


# --- Progress, curves and samples -------------------------------------------------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


def progress_panel(run: LiveRun, bits: bool) -> None:
    """The bar toward the step budget with speed and time, and the latest losses beside the uniform guess."""
    progress = run.progress()
    st.progress(progress.fraction, text=f"Step {progress.step:,} of {progress.budget:,} · "
                f"{progress.steps_per_s:.1f} steps/s · elapsed {_duration(progress.elapsed_s)} · "
                f"ETA {_duration(progress.eta_s)}")
    scale, unit = (1 / np.log(2), "bits/char") if bits else (1.0, "nats/char")
    history = run.trainer.history
    recent = float(np.mean([r.loss for r in history[-10:]])) * scale if history else None
    val = run.trainer.evals[-1].val_loss * scale if run.trainer.evals else None
    cols = st.columns(5)
    cols[0].metric("Step", f"{progress.step:,}")
    cols[1].metric("Train loss", f"{recent:.3f}" if recent is not None else "—",
                   help=f"Mean cross-entropy over the last 10 optimizer steps, in {unit}.")
    cols[2].metric("Val loss", f"{val:.3f}" if val is not None else "—",
                   help=f"On the held-out last 10% of the text, at the last sample, in {unit}.")
    cols[3].metric("Uniform guess", f"{run.uniform_loss * scale:.3f}",
                   help=f"{'log₂' if bits else 'ln'} V: the loss of a model that gives every one of the V characters "
                   f"probability 1/V, in {unit}.")
    cols[4].metric("Chars/s", f"{progress.chars_per_s:,.0f}",
                   help="Training throughput B·T per step, median of the last 20 steps.")


def curves(run: LiveRun, bits: bool) -> None:
    history, evals = run.trainer.history, run.trainer.evals
    if not history:
        st.caption("The curves appear after the first step.")
        return
    cols = st.columns(2)
    with cols[0]:
        plot(figures.loss_figure([r.step for r in history], [r.loss for r in history], [e.step for e in evals],
                                 [e.val_loss for e in evals], run.trainer.vocab.size, bits), key=key("loss_chart"))
    with cols[1]:
        plot(figures.grad_norm_figure([r.step for r in history], [r.grad_norm for r in history],
                                      run.trainer.config.clip), key=key("grad_chart"))


def _sample_label(record, bits: bool) -> str:
    loss = record.val_loss / np.log(2) if bits else record.val_loss
    return f"**Step {record.step:,}** · val loss {loss:.3f} {'bits' if bits else 'nats'}/char"


def compare_sample(run: LiveRun, step: int = 100):
    """The sample drawn at ``step`` (or the first after it, or the earliest trained one)."""
    trained = [s for s in run.samples if s.step > 0]
    return next((s for s in trained if s.step >= step), trained[0] if trained else None)


def sample_history(run: LiveRun, bits: bool) -> None:
    """Every scheduled sample, newest first, in a box that scrolls; Compare puts step 100 beside the latest."""
    if not run.samples:
        st.caption("The first sample is drawn when training starts.")
        return
    latest = run.samples[-1]
    if st.toggle("Compare: step 100 beside the latest", key=key("compare"), persist_state="session"):
        early = compare_sample(run)
        if early is None or early.step == latest.step:
            st.caption("Train past step 100 and a second sample to compare with appears.")
        else:
            cols = st.columns(2)
            for col, record in zip(cols, (early, latest)):
                col.markdown(_sample_label(record, bits))
                col.code(record.text, language=None, wrap_lines=True)
    with st.container(height=420):
        for record in reversed(run.samples[-HISTORY_SHOWN:]):
            st.markdown(_sample_label(record, bits))
            st.code(record.text, language=None, wrap_lines=True)
