"""What the next run of the live-training page would be: the widgets' values as a TrainConfig and LiveSettings,
or the problems with them in plain words; its estimated speed; and how it differs from the run in progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import streamlit as st

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.speed import count_parameters, effective_shape, estimate_chars_per_second, estimate_for_corpus
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.state_stack import HEADED_KINDS
from rnnviz.serving.live import MAX_PARAMETERS, MAX_STEP_BUDGET, LiveSettings
from rnnviz.ui.kit.widgets import literal, seed
from rnnviz.ui.live_training.kinds import KIND_LABELS
from rnnviz.ui.live_training.setup import (
    MAX_LR,
    TYPICAL_VOCAB,
    base_config,
    config_fields,
    key,
    matmul_flops,
)


@dataclass(frozen=True)
class PendingRun:
    """What Start or Reset would build from the widgets, or why it cannot."""

    config: TrainConfig | None
    settings: LiveSettings | None
    problems: tuple[str, ...]  # plain words, one sentence each
    parameters: int | None  # of the model the settings describe
    chars_per_s: float | None  # estimated training speed on this server
    shape: tuple[int, int] | None = None  # (B, T) the trainer will use on the corpus: a short text shrinks them


def _learning_rate_problem(lr) -> str | None:
    if lr is None or not math.isfinite(lr):
        return "Enter a learning rate."
    if lr <= 0:
        return (f"The learning rate must be a positive number, not {lr:g}: at 0 the weights never change, and "
                "below 0 every step climbs the loss instead of descending it.")
    if lr > MAX_LR:
        return (f"A learning rate of {lr:,g} is far too large: the first step would throw the weights to "
                f"infinity. The largest allowed here is {MAX_LR:g}.")
    return None


def pending_run(vocab_size: int | None, corpus: Corpus | None = None) -> PendingRun:
    """The TrainConfig and LiveSettings of the widgets for a corpus of ``vocab_size`` characters; with the
    corpus itself, the speed is estimated at the batch and length its text leaves the trainer."""
    state = st.session_state
    problems = []
    lr = state.get(key("lr"))
    lr_problem = _learning_rate_problem(lr)
    if lr_problem:
        problems.append(lr_problem)
    budget = state.get(key("budget"))
    if budget is None or not 1 <= budget <= MAX_STEP_BUDGET:
        problems.append(f"The step budget must be between 1 and {MAX_STEP_BUDGET:,} steps.")
    kind = state[key("kind")]
    base = base_config(kind)  # the schedule (warm-up, decay) of a preset of the same family
    values = {**config_fields(base), "seed": seed()}
    if lr_problem is not None:
        values["lr"] = 1e-3  # counted and estimated as a sane rate; the problem above stops the run
    shape_problems = (_transformer_problems(values["hidden"], values["n_head"], values["block_size"],
                                            values["seq_len"]) if kind == "transformer"
                      else _heads_problems(kind, values["hidden"], values["n_head"]))
    problems += shape_problems
    if shape_problems:  # a shape that cannot be built: count and estimate the nearest one that can
        values.update(n_head=1, seq_len=min(values["seq_len"], values["block_size"]))
    config = base.changed(**values)
    vocab = vocab_size or TYPICAL_VOCAB
    parameters = count_parameters(config, vocab)
    if parameters > MAX_PARAMETERS:
        problems.append(f"This model has {parameters:,} parameters; a session may train at most {MAX_PARAMETERS:,} "
                        "live. Use fewer layers or hidden units (or the command-line trainer, rnnviz train).")
    shape = effective_shape(config, corpus) if corpus is not None else None
    speed = (estimate_for_corpus(config, corpus, matmul_flops()) if corpus is not None
             else estimate_chars_per_second(config, vocab, matmul_flops()))
    if problems:
        return PendingRun(None, None, tuple(problems), parameters, speed, shape)
    settings = LiveSettings(step_budget=int(budget), sample_every=int(state[key("sample_every")]),
                            cool_down=bool(state.get(key("cool_down"), False)))
    return PendingRun(config, settings, (), parameters, speed, shape)


def _transformer_problems(width: int, n_head: int, block_size: int, seq_len: int) -> list[str]:
    problems = []
    if width % n_head:
        problems.append(f"The width C = {width} does not split into {n_head} attention heads of equal width: "
                        "choose a number of heads that divides C.")
    if seq_len > block_size:
        problems.append(f"A Transformer with a context of {block_size} characters trains on windows of at most "
                        f"{block_size}: lower the window T to {block_size} or raise the context.")
    return problems


def _heads_problems(kind: str, width: int, n_head: int) -> list[str]:
    if kind in HEADED_KINDS and width % n_head:
        return [f"The width H = {width} does not split into {n_head} heads of equal width: choose a number of heads "
                f"that divides H, so that every {KIND_LABELS[kind]} head is d = H / h wide."]
    return []


def speed_help(pending: PendingRun) -> str:
    """How the speed estimate is made, and the batch and length it assumes."""
    text = "From the model's size and this server's measured matmul rate; the run shows the real one."
    if pending.config is not None and pending.shape is not None:
        batch, seq_len = pending.shape
        if (batch, seq_len) != (pending.config.batch, pending.config.seq_len):
            text += (f" This text is too short for B = {pending.config.batch} streams of T = {pending.config.seq_len} "
                     f"characters, so the trainer uses B = {batch}, T = {seq_len}: {batch * seq_len:,} characters a "
                     "step, and the fixed cost of each step dominates.")
    return text


def retunable_changes(current: TrainConfig, pending: PendingRun) -> dict | None:
    """The learning rate and clipping of the widgets when they differ from the run's (None when they match)."""
    if pending.config is None:
        return None
    lr, clip = pending.config.lr, pending.config.clip
    return None if (lr, clip) == (current.lr, current.clip) else {"lr": lr, "clip": clip}


def differences_from_run(
    current: TrainConfig, run_corpus: str, pending: PendingRun, next_corpus: str | None
) -> list[str]:
    """The settings (beyond learning rate and clipping) in which the widgets differ from the run, as
    "name: run's → widgets'"."""
    changed = ([f"corpus: {literal(run_corpus)} → {literal(next_corpus)}"]
               if next_corpus and next_corpus != run_corpus else [])
    if pending.config is not None:
        changed += [f"{f.name.replace('_', ' ')}: {getattr(current, f.name)} → {getattr(pending.config, f.name)}"
                    for f in fields(TrainConfig) if f.name not in ("lr", "clip")
                    and getattr(current, f.name) != getattr(pending.config, f.name)]
    return changed
