"""Cached engine calls for the mechanics-of-recurrence pages, keyed by their frozen configs."""

from __future__ import annotations

import streamlit as st

from rnnviz.handbuilt import HandConfig, HandRun, HandWeights, TruthRow, run_handbuilt, truth_table
from rnnviz.unroll import UnrollConfig, UnrollResult, unroll


@st.cache_data(show_spinner=False, max_entries=256)
def hand_run(config: HandConfig) -> HandRun:
    return run_handbuilt(config)


@st.cache_data(show_spinner=False, max_entries=256)
def hand_truth_table(weights: HandWeights, nonlinearity: str) -> tuple[TruthRow, ...]:
    return truth_table(weights, nonlinearity)


@st.cache_data(show_spinner=False, max_entries=256)
def unroll_result(config: UnrollConfig) -> UnrollResult:
    return unroll(config)
