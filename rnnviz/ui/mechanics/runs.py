"""Cached engine calls for the mechanics-of-recurrence pages, keyed by their frozen configs."""

from __future__ import annotations

import numpy as np
import streamlit as st

from rnnviz.lessons.handbuilt import HandConfig, HandRun, HandWeights, TruthRow, run_handbuilt, truth_table
from rnnviz.lessons.stacked import DepthRow, StackConfig, StackRun, depth_table, run_stack
from rnnviz.lessons.tbptt import SweepConfig, gradient_reach_example
from rnnviz.lessons.unroll import UnrollConfig, UnrollResult, unroll


@st.cache_data(show_spinner=False, max_entries=256)
def hand_run(config: HandConfig) -> HandRun:
    return run_handbuilt(config)


@st.cache_data(show_spinner=False, max_entries=256)
def hand_truth_table(weights: HandWeights, nonlinearity: str) -> tuple[TruthRow, ...]:
    return truth_table(weights, nonlinearity)


@st.cache_data(show_spinner=False, max_entries=256)
def unroll_result(config: UnrollConfig) -> UnrollResult:
    return unroll(config)


@st.cache_data(show_spinner=False, max_entries=256)
def tbptt_reach(config: SweepConfig, chunk: int, position: int) -> np.ndarray:
    return gradient_reach_example(config, chunk, position)


@st.cache_data(show_spinner=False, max_entries=256)
def stack_run(config: StackConfig) -> StackRun:
    return run_stack(config)


@st.cache_data(show_spinner=False, max_entries=64)
def stack_depth_table(kind: str, input_size: int, hidden: int) -> list[DepthRow]:
    return depth_table(kind, input_size, hidden)
