"""What a class watches on the live-training page while a run trains: its status in words, the bar toward the
step budget with the latest losses, the loss and gradient-norm curves, and the samples along the way.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from rnnviz.charlm.measured import CORPUS as MEASURED_CORPUS
from rnnviz.charlm.measured import preset_marks, val_by_mark
from rnnviz.charlm.presets import ALL_PRESETS, matching_preset
from rnnviz.core.config import kind_label, shape_label
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.figures import live as figures
from rnnviz.serving.live import LiveRun, Status, leaves_training_text
from rnnviz.ui.kit.baselines import line_losses
from rnnviz.ui.kit.widgets import literal, plot, text_block
from rnnviz.ui.live_training.corpus import memorises
from rnnviz.ui.live_training.setup import key

HISTORY_SHOWN = 40  # samples listed, newest first
# While a run trains, its curves are redrawn at most this often. Streamlit gives a plotly chart a new identity
# whenever its data change, so the browser draws it from scratch, blank for a moment (about 0.3 s on 2 busy
# cores): redrawn on every chunk the curves blinked on the projector; the numbers above them still update.
CURVES_EVERY_S = 2.0
LEAVES_SHOWN = 60  # characters of the latest "hello" sample drawn split where it leaves the training text
LOSS_HEIGHT = 290  # px: the loss curve fits the first screen beside the latest sample
CURVES = key("curves")  # the CurvesDrawn of the last draw
BITS = key("bits")  # losses in bits/char
SECONDS_AXIS = key("seconds_axis")  # the loss curve against seconds of training instead of steps


def run_summary(run: LiveRun) -> str:
    config = run.trainer.config
    return (f"{shape_label(config)} on **{literal(run.corpus_name)}** (V = "
            f"{run.trainer.vocab.size}), {run.trainer.num_parameters:,} parameters, {config.optimizer} at "
            f"learning rate {config.lr:g}, " + (f"clipping at θ = {config.clip:g}" if config.clip else "no clipping")
            + (", forward pass in bfloat16 (weights in float32)" if run.trainer.bf16 else "") + _growth(run))


def _growth(run: LiveRun) -> str:
    """Where a run whose width grows stands: before its widening, or after it."""
    config = run.trainer.config
    if not config.grows:
        return ""
    if run.trainer.width < config.hidden:
        lr = f" at learning rate {config.grow_lr:g}" if config.grow_lr is not None else ""
        return (f"; {config.grow_from} units per layer{lr} until step {config.grow_at:,}, when it widens to "
                f"{config.hidden} without changing what it computes")
    return f"; widened from {config.grow_from} units per layer at step {config.grow_at:,}"


def cool_down_panel(run: LiveRun, bits: bool) -> None:
    """A stopped run's cool-down: its bar while it trains, then the cooled copy's val loss beside the run's own."""
    under_way = run.cool_down_progress()
    if under_way is not None and run.cools_down:
        done, steps = under_way
        st.progress(done / steps, text=f"Cooling a copy down: step {done:,} of {steps:,}, its learning rate "
                    f"falling to 0 · the run itself stays at step {run.step:,}")
        return
    cooled = run.cooled_copy()
    if cooled is None:
        return
    scale, unit = (1 / np.log(2), "bits/char") if bits else (1.0, "nats/char")
    st.success(f"**Cooled copy: val loss {cooled.val_loss * scale:.3f}** against {cooled.run_val_loss * scale:.3f} "
               f"for the run's own weights at step {cooled.from_step:,} ({unit}, on the val split's first "
               f"{run.settings.eval_chars:,} characters). The copy trained {cooled.steps:,} steps more "
               f"({_duration(cooled.seconds)}) with its learning rate falling from {cooled.start_lr:g} to 0, which "
               "settles weights that a steady rate keeps moving. Samples on this page come from it; Start goes on "
               "training the run from its own weights, and the next stop cools a new copy.",
               icon=":material/ac_unit:")


def status_line(run: LiveRun) -> None:
    """The run's status in words: a halt, a wait or the end as a box (a halt also links to the page on
    exploding gradients); training and pauses as one quiet line, with what the run is."""
    about = f"This run: {run_summary(run)}. Its address finds it again after a reload."
    if run.notice:
        st.warning(run.notice, icon=":material/sync_problem:")
    if run.save_problem:
        st.warning(run.save_problem, icon=":material/save:")
    if run.status == Status.LOST:
        st.error(run.message, icon=":material/cloud_off:")
    elif run.status == Status.HALTED:
        st.error(run.message, icon=":material/error:")
        st.page_link("app_pages/gradient_decay.py", label="Why gradients explode: the Gradient decay page",
                     icon=":material/trending_down:")
    elif run.status == Status.WAITING:
        st.warning(run.message, icon=":material/hourglass_top:")
    elif run.status == Status.FINISHED:
        st.success(run.message, icon=":material/check_circle:")
    else:
        icon = ":material/play_circle:" if run.status == Status.RUNNING else ":material/info:"
        st.caption(f"{icon} {literal(run.message)} {about}")
        return
    st.caption(about)


# --- Progress, curves and samples -------------------------------------------------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


def bits() -> bool:
    """Losses in bits/char (the toggle is drawn below the charts it changes)."""
    return bool(st.session_state.get(BITS, False))


def progress_panel(run: LiveRun, bits: bool) -> None:
    """The bar toward the step budget with speed and time, and the latest losses beside the uniform guess."""
    progress = run.progress()
    st.progress(progress.fraction, text=f"Step {progress.step:,} of {progress.budget:,} · "
                f"{progress.steps_per_s:.1f} steps/s · elapsed {_duration(progress.elapsed_s)} · "
                f"ETA {_duration(progress.eta_s)}")
    scale, unit = (1 / np.log(2), "bits/char") if bits else (1.0, "nats/char")
    history = run.trainer.history
    recent = float(np.mean([r.loss for r in history[-10:]])) * scale if history else None
    held_out = ("On the held-out last 10% of the text" if run.holds_out
                else "On the training text itself: nothing of this corpus is held out")
    cols = st.columns(5)
    cols[0].metric("Step", f"{progress.step:,}")
    cols[1].metric("Train loss", f"{recent:.3f}" if recent is not None else "—",
                   help=f"Mean cross-entropy over the last 10 optimizer steps, in {unit}.")
    val_loss_tile(cols[2], run, scale, unit, held_out)
    cols[3].metric("Uniform guess", f"{run.uniform_loss * scale:.3f}",
                   help=f"{'log₂' if bits else 'ln'} V: the loss of a model that gives every one of the V characters "
                   f"probability 1/V, in {unit}.")
    cols[4].metric("Chars/s", f"{progress.chars_per_s:,.0f}",
                   help=f"Training throughput B·T per step (here B·T = {run.trainer.chars_per_step:,}), median of "
                   "the last 20 steps.")


def val_loss_tile(column, run: LiveRun, scale: float, unit: str, held_out: str) -> None:
    """One val loss a class can read: the cooled copy's while the samples come from it, else the last evaluation,
    labelled with its step when the run has moved on since."""
    cooled = run.cooled_copy()
    if cooled is not None:
        column.metric("Val loss, cooled copy", f"{cooled.val_loss * scale:.3f}",
                      delta=f"{(cooled.val_loss - cooled.run_val_loss) * scale:+.3f} vs step {cooled.from_step:,}",
                      delta_color="inverse",
                      help=f"The copy of step {cooled.from_step:,} cooled down over {cooled.steps:,} more steps, "
                      f"which the samples come from; the run's own weights at step {cooled.from_step:,} read "
                      f"{cooled.run_val_loss * scale:.3f}. {held_out}, in {unit}.")
        return
    last = run.trainer.evals[-1] if run.trainer.evals else None
    moved_on = last is not None and last.step != run.step
    column.metric(f"Val loss at step {last.step:,}" if moved_on else "Val loss",
                  f"{last.val_loss * scale:.3f}" if last is not None else "—",
                  help=f"{held_out}, measured with each sample, in {unit}.")


@dataclass(frozen=True)
class CurvesDrawn:
    """The curves last drawn, and for which run, step and view (bits, seconds axis)."""

    run_id: int
    step: int
    view: tuple[bool, bool]
    built_at: float  # time.monotonic()
    loss: go.Figure
    grad: go.Figure

    def still_fit(self, run: LiveRun, view: tuple[bool, bool], now: float) -> bool:
        """Whether to draw these again: the run stands where they were built, or it trains and they are fresh."""
        same = self.run_id == id(run) and self.view == view
        return same and (self.step == run.step or (run.is_active and now - self.built_at < CURVES_EVERY_S))


def _curves(run: LiveRun, bits: bool):
    """The loss and gradient-norm figures, rebuilt at most every CURVES_EVERY_S while the run trains (the same
    figure again keeps the chart as it is drawn), and always for a run that stands still."""
    held = st.session_state.get(CURVES)
    now = time.monotonic()
    view = (bits, bool(st.session_state.get(SECONDS_AXIS, False)))
    if held is not None and held.still_fit(run, view, now):
        return held.loss, held.grad
    history, evals = run.trainer.history, run.trainer.evals
    seconds = view[1]
    loss = figures.loss_figure([r.seconds if seconds else r.step for r in history], [r.loss for r in history],
                               [e.seconds if seconds else e.step for e in evals], [e.val_loss for e in evals],
                               run.trainer.vocab.size, bits, seconds=seconds,
                               baselines=line_losses(run.trainer.corpus))
    loss.update_layout(height=LOSS_HEIGHT)
    grad = figures.grad_norm_figure([r.step for r in history], [r.grad_norm for r in history],
                                    run.trainer.config.clip)
    st.session_state[CURVES] = CurvesDrawn(id(run), run.step, view, now, loss, grad)
    return loss, grad


def loss_curve(run: LiveRun, bits: bool) -> None:
    if not run.trainer.history:
        st.caption("The loss curve appears after the first step.")
        return
    plot(_curves(run, bits)[0], key=key("loss_chart"))


def presets_at_the_same_seconds(run: LiveRun, bits: bool) -> None:
    """Under the loss curve of a Tiny Shakespeare run: its val loss at 10, 30, 60, 90 and 150 s of training
    beside what every preset reached at those seconds in one race on a 2-core machine (rnnviz.charlm.measured)."""
    marks = preset_marks()
    if marks is None or run.corpus_name != MEASURED_CORPUS:
        return
    scale, unit = (1 / np.log(2), "bits/char") if bits else (1.0, "nats/char")
    evals = run.trainer.evals
    ours = val_by_mark([e.seconds for e in evals], [e.val_loss for e in evals], run.trainer.seconds, marks.marks)
    preset = matching_preset(run.trainer.config)
    header = "| | " + " | ".join(f"{m} s" for m in marks.marks) + " |\n|---|" + "---|" * len(marks.marks) + "\n"
    cells = " | ".join(f"**{ours[m][1] * scale:.2f}**" if m in ours else "·" for m in marks.marks)
    rows = [f"| **this run**{f' ({literal(preset)})' if preset else ''} | {cells} |"]
    for name, values in marks.val_at.items():
        rows.append(f"| {literal(name)} | " + " | ".join(f"{values[m] * scale:.2f}" if m in values else ""
                                                         for m in marks.marks) + " |")
    with st.expander(f"Where the presets stood at the same seconds ({unit})", expanded=True):
        st.markdown(header + "\n".join(rows))
        same = marks.eval_chars == run.settings.eval_chars
        st.caption(f"Val loss at seconds of training (the trainer's own clock), on the val split's first "
                   f"{marks.eval_chars:,} characters" + ("" if same else " for the presets") + ". The presets: one "
                   f"race on Tiny Shakespeare on a {marks.machine}, {marks.measured} (bench/anytime.py). This run: "
                   "its latest evaluation at or before each mark"
                   + ("" if same else f", on the first {run.settings.eval_chars:,} characters")
                   + ". On a busy server, or without bfloat16 arithmetic, a run does less per second."
                   + (" A preset that cools a copy down when it stops is measured by that copy (cooled as here on "
                      "Pause), so this run's own weights, at their steady rate, read higher than its row; the box "
                      "above the curve gives the cooled copy's figure once you pause." if run.settings.cool_down
                      else ""))
        unraced = unraced_note(run.trainer.config.kind, preset, marks.val_at)
        if unraced:
            st.caption(unraced)


def unraced_note(kind: str, preset: str | None, raced: Collection[str]) -> str:
    """Why this run has no row of its own in the table: its preset, or any preset of its kind, was not in the race
    (the sLSTM … linear attention presets were raced apart, beside the LSTM preset)."""
    raced_kinds = {ALL_PRESETS[name].config.kind for name in raced if name in ALL_PRESETS}
    if preset in raced:
        return ""
    where = (f" The {kind_label(kind)} preset's own race, 150 s beside the LSTM preset, is in bench/README.md "
             "(kinds_speed, row kinds_150s)." if kind in STATE_KINDS else "")
    if kind not in raced_kinds:
        return (f"No {kind_label(kind)} was in this race, so the table has no figures for this kind: its rows are "
                f"other kinds' presets, to read this run against.{where}")
    if preset is not None:
        return f"The preset {literal(preset)} was not in this race, so it has no row of its own here.{where}"
    return ""


def grad_curve(run: LiveRun, bits: bool) -> None:
    if run.trainer.history:
        plot(_curves(run, bits)[1], key=key("grad_chart"))


def _sample_label(record, bits: bool) -> str:
    loss = record.val_loss / np.log(2) if bits else record.val_loss
    return f"**Step {record.step:,}** · val loss {loss:.3f} {'bits' if bits else 'nats'}/char"


def where_it_leaves(text: str, training: str, shown: int | None = None) -> None:
    """For a corpus with nothing held out: the sample split where it leaves the training text (its first
    ``shown`` characters, when given, and how many there are in all)."""
    inside = leaves_training_text(text, training)
    cut = text if shown is None or len(text) <= shown else text[:max(shown, inside + 1)]
    st.html(figures.training_text_html(cut, min(inside, len(cut)), training))
    if len(cut) < len(text):
        st.caption(f"Its first {len(cut)} of {len(text):,} characters.")


def latest_sample(run: LiveRun, bits: bool) -> None:
    """The newest scheduled sample, what the class reads while the model trains."""
    if not run.samples:
        st.caption("The first sample is drawn when training starts.")
        return
    cooled = run.cooled_copy()
    record = cooled.sample if cooled is not None else run.samples[-1]
    if cooled is not None:
        loss = record.val_loss / np.log(2) if bits else record.val_loss
        st.markdown(f"Cooled copy of **step {cooled.from_step:,}** (+{cooled.steps:,} cool-down steps) · val loss "
                    f"{loss:.3f} {'bits' if bits else 'nats'}/char")
    else:
        st.markdown(f"Latest sample · {_sample_label(record, bits)}")
    primed = f" after the prime “{literal(record.prime)}”" if record.prime else ""
    if run.holds_out:
        text_block(record.text)
    else:  # the text it was trained on is all there is: show where the sample leaves it, and why
        where_it_leaves(record.text, run.trainer.corpus.text, shown=LEAVES_SHOWN)
        st.caption(memorises(run.corpus_name, run.trainer.corpus.text))
    st.caption(f"τ = {run.settings.temperature:g}, the same seed every time{primed}: only the weights differ.")


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
                text_block(record.text, col)
    with st.container(height=420):
        for record in reversed(run.samples[-HISTORY_SHOWN:]):
            st.markdown(_sample_label(record, bits))
            text_block(record.text)


def watch_panel(run: LiveRun) -> None:
    """What a class watches, on the first screen: the status, the progress, the loss curve beside the latest
    sample; then the gradient norm and every sample so far."""
    in_bits = bits()
    status_line(run)
    progress_panel(run, in_bits)
    cool_down_panel(run, in_bits)
    curve_col, sample_col = st.columns([3, 2], gap="medium")
    with curve_col:
        loss_curve(run, in_bits)
        presets_at_the_same_seconds(run, in_bits)
    with sample_col:
        latest_sample(run, in_bits)
    st.subheader("Samples along the way")
    st.caption(f"Every {run.settings.sample_every} steps the model writes {run.settings.sample_length} characters "
               f"from the same seed at τ = {run.settings.temperature:g}, so only its weights differ. Newest first.")
    grad_col, history_col = st.columns(2, gap="medium")
    with grad_col:
        st.toggle("Losses in bits/char (÷ ln 2) instead of nats/char", key=BITS, persist_state="session")
        st.toggle("Loss against seconds of training instead of steps", key=SECONDS_AXIS, persist_state="session",
                  help="The trainer's clock: only its own steps count, not sampling or evaluation. Models of "
                       "different speeds compare fairly on it (a step of a wider model costs more).")
        grad_curve(run, in_bits)
    with history_col:
        sample_history(run, in_bits)
