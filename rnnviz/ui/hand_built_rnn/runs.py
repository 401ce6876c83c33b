"""Cached engine calls of the Hand-built RNN page, keyed by their frozen configs."""

from __future__ import annotations

import streamlit as st

from rnnviz.lessons.handbuilt import HandConfig, HandRun, HandWeights, TruthRow, run_handbuilt, truth_table


@st.cache_data(show_spinner=False, max_entries=256)
def hand_run(config: HandConfig) -> HandRun:
    return run_handbuilt(config)


@st.cache_data(show_spinner=False, max_entries=256)
def hand_truth_table(weights: HandWeights, nonlinearity: str) -> tuple[TruthRow, ...]:
    return truth_table(weights, nonlinearity)
