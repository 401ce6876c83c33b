"""Run one point of the shipped recall sweep here: one kind at one D, from the sidebar's seed, trained a chunk at a
time in a fragment that reruns itself, behind a progress bar.

The run (rnnviz.experiments.state_capacity.RecallRun) is the session's own, in ``st.session_state[POINT]``; it
holds one of the server's training slots (rnnviz.ui.app.server) while it trains, as a live run does, and queues
for one when they are all taken. Pause gives the slot back and keeps the run; a finished run's record joins the
session's table of points trained here, and only "Drop this run" lets an unfinished one go.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

import streamlit as st

from rnnviz.experiments.delay import torch_threads
from rnnviz.experiments.recall import RecallRecord
from rnnviz.experiments.sequence_models import SWEEP_KINDS, label
from rnnviz.experiments.state_capacity import RecallRun
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.app.server import training_slots
from rnnviz.ui.kit.widgets import seed, table
from rnnviz.ui.state_capacity.data import point_config, shipped_sweep
from rnnviz.ui.state_capacity.settings import (
    AS_SHIPPED,
    PAIRS,
    POINT_KIND,
    POINT_PAIRS,
    POINT_STEP_CHOICES,
    POINT_STEPS,
    page_key,
    steps_text,
)

POINT = page_key("point_run")  # the session's PointRun
DONE = page_key("points_done")  # the session's finished records, oldest first
OWNER = page_key("owner")  # this session, as a holder of a training slot
CHUNK_SECONDS = 0.4  # training per fragment rerun, as the live page's: a click waits at most this long
RERUN_EVERY = 0.25  # seconds between the training fragment's reruns
KEEP_DONE = 12  # finished points kept in the session's table, newest last
THREADS = 1  # as `rnnviz experiments recall` trains (its --threads default), so that the numbers agree


@dataclass
class PointRun:
    """A point being trained here, and what it is compared with."""

    run: RecallRun
    command: str  # the command line that repeats it
    shipped: float | None  # the shipped sweep's accuracy for this kind, D and seed, when it ran them with these steps
    paused: bool = False
    record: RecallRecord | None = None


def _owner() -> str:
    return st.session_state.setdefault(OWNER, f"capacity-{uuid.uuid4().hex}")


def _shipped_accuracy(kind: str, pairs: int, point_seed: int, steps: int) -> float | None:
    """The shipped sweep's accuracy for this point, when it ran this kind, D and seed with this many steps."""
    found = point_config(kind, pairs)
    if found is None or steps != found[0].steps:
        return None
    sweep = shipped_sweep("recall")
    block = sweep.records[sweep.commands.index(found[1])]
    return next((r.accuracy for r in block if (r.kind, r.pairs, r.seed) == (kind, pairs, point_seed)), None)


def _steps(config_steps: int) -> int:
    chosen = st.session_state[POINT_STEPS]
    return config_steps if chosen == AS_SHIPPED else chosen


def _on_run() -> None:
    found = point_config(st.session_state[POINT_KIND], st.session_state[POINT_PAIRS])
    if found is None:
        return
    config, _ = found
    kind, pairs, point_seed = st.session_state[POINT_KIND], st.session_state[POINT_PAIRS], seed()
    steps = _steps(config.steps)
    config = dataclasses.replace(config, kinds=(kind,), pairs=(pairs,), seeds=1, base_seed=point_seed, steps=steps)
    st.session_state[POINT] = PointRun(RecallRun(config, kind, pairs, point_seed),
                                       config.cli_command(kind, pairs, point_seed),
                                       _shipped_accuracy(kind, pairs, point_seed, steps))


def _on_pause() -> None:
    point = st.session_state.get(POINT)
    if point is not None:
        point.paused = True
        training_slots().release(_owner())


def _on_continue() -> None:
    point = st.session_state.get(POINT)
    if point is not None:
        point.paused = False


def _on_drop() -> None:
    training_slots().release(_owner())
    st.session_state.pop(POINT, None)


def _training(point: PointRun | None) -> bool:
    return point is not None and point.record is None and not point.paused


def point_section() -> None:
    st.markdown("#### Run this point here")
    st.caption("One kind at one D with the sweep's settings for it, from the sidebar's seed: the sweep's seeds were "
               f"{_seed_list()}. It trains on one core, a chunk at a time, and the bar follows it; the result is "
               "scored on the same held-out sequences as the sweep's.")
    point = st.session_state.get(POINT)
    busy = point is not None and point.record is None
    cols = st.columns(3)
    cols[0].selectbox("Kind", SWEEP_KINDS, format_func=label, key=POINT_KIND, disabled=busy)
    cols[1].selectbox("Pairs D", PAIRS, key=POINT_PAIRS, disabled=busy)
    cols[2].selectbox("Training steps", POINT_STEP_CHOICES, format_func=steps_text, key=POINT_STEPS, disabled=busy,
                      help="Fewer steps give a first look in seconds; the sweep's own budget repeats its point.")
    found = point_config(st.session_state[POINT_KIND], st.session_state[POINT_PAIRS])
    if found is None:
        st.warning(f"The shipped sweep has no run of the {label(st.session_state[POINT_KIND])} at "
                   f"D = {st.session_state[POINT_PAIRS]}, so there are no settings to repeat.")
        return
    config, _ = found
    steps = _steps(config.steps)
    row = st.container(horizontal=True, vertical_alignment="center")
    if point is None or point.record is not None:
        row.button("Run this point here", key=page_key("run"), type="primary", icon=":material/play_arrow:",
                   on_click=_on_run)
        row.caption(f"{steps:,} steps × {config.batch} sequences of T = {config.length}, learning rate {config.lr:g}.")
    elif point.paused:
        row.button("Continue", key=page_key("continue"), type="primary", icon=":material/play_arrow:",
                   on_click=_on_continue)
        row.button("Drop this run", key=page_key("drop"), icon=":material/delete:", on_click=_on_drop)
        st.progress(point.run.step / point.run.config.steps,
                    text=f"Paused at step {point.run.step:,} of {point.run.config.steps:,}.")
    else:
        row.button("Pause", key=page_key("pause"), icon=":material/pause:", on_click=_on_pause)
    if _training(point):
        _training_panel()
    _results()


def _seed_list() -> str:
    seeds = sorted({r.seed for r in shipped_sweep("recall").all_records})
    return ", ".join(map(str, seeds))


@fragment(run_every=RERUN_EVERY)
def _training_panel() -> None:
    """Trains a chunk each rerun while this session holds a training slot; otherwise says its place in line."""
    point = st.session_state.get(POINT)
    if not _training(point):
        st.rerun()
    run, slots, owner = point.run, training_slots(), _owner()
    name = f"{label(run.kind)}, D = {run.pairs}, seed {run.seed}"
    if not slots.acquire(owner):
        place = slots.queue_position(owner)
        st.progress(run.step / run.config.steps, text=f"Waiting for a training slot ({name}): all {slots.capacity} "
                    f"are busy, and this run is number {place or 1} in line.")
        return
    with torch_threads(THREADS):
        run.advance(CHUNK_SECONDS)
        if run.finished:
            point.record = run.record()
    if point.record is not None:
        slots.release(owner)
        st.session_state[DONE] = [*st.session_state.get(DONE, []), point][-KEEP_DONE:]
        st.rerun()
    loss = sum(run.losses[-20:]) / len(run.losses[-20:])
    st.progress(run.step / run.config.steps, text=f"Training {name}: step {run.step:,} of {run.config.steps:,}, "
                f"training loss {loss:.3f} (mean of the last {min(20, run.step)} steps)")


def _results() -> None:
    done: list[PointRun] = st.session_state.get(DONE, [])
    if not done:
        return
    last = done[-1]
    record = last.record
    comparison = ("" if last.shipped is None else
                  f" The shipped sweep measured {last.shipped:.3f} for this kind, D, seed and budget"
                  + (": the same." if last.shipped == record.accuracy else
                     "; the difference is this machine's arithmetic or its torch (the sweep used one thread too)."))
    st.success(f"**{label(record.kind)}, D = {record.pairs}, seed {record.seed}**: held-out query accuracy "
               f"**{record.accuracy:.3f}** (chance {record.chance:.3f}) after {last.run.config.steps:,} steps, "
               f"{record.seconds:.1f} s of training here.{comparison}", icon=":material/check_circle:")
    st.caption("The same point from the command line prints the same accuracy:")
    st.code(last.command, language="bash")
    table([{"kind": label(p.record.kind), "D": p.record.pairs, "seed": p.record.seed, "steps": p.run.config.steps,
            "width": p.record.width, "state bytes": p.record.state_bytes, "accuracy": p.record.accuracy,
            "shipped": p.shipped, "seconds": p.record.seconds} for p in done],
          counts=("steps", "state bytes"), decimals={"accuracy": 3, "shipped": 3, "seconds": 1},
          key=page_key("points_table"))
