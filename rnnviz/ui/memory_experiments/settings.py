"""The Memory experiments page's settings: each tab's widget keys, options and defaults, and the page's link
(every setting of the three tabs, and the open tab, in its address)."""

from __future__ import annotations

import streamlit as st

from rnnviz.experiments.delay import DEFAULT_RECIPE, SIZINGS, DelaySweepConfig
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, format_choices, parse_choice, parse_choices, parse_int_in, parse_text

DELAY, COND, COST = PageKeys("memory_delay"), PageKeys("memory_cond"), PageKeys("memory_cost")  # each tab's keys

def delay_widget_values(config: DelaySweepConfig) -> dict:
    """The delay tab's widget values (by key) that show ``config``; the seed comes from the sidebar."""
    return {DELAY("alphabet"): config.alphabet, DELAY("length"): config.length,
            DELAY("delays"): ", ".join(str(d) for d in config.delays), DELAY("sizing"): config.sizing,
            DELAY("hidden"): config.hidden, DELAY("seeds"): config.seeds,
            DELAY("steps"): config.steps, DELAY("batch"): config.batch, DELAY("lr"): config.lr,
            DELAY("forget"): config.forget_bias}


# The default is the measured recipe (rnnviz.experiments.delay.DEFAULT_RECIPE); the first look keeps its model
# and batch but is far too short for either model to learn a long delay.
DELAY_DEFAULTS = delay_widget_values(DEFAULT_RECIPE)
DELAY_QUICK = {**DELAY_DEFAULTS, DELAY("alphabet"): 4, DELAY("length"): 24,
               DELAY("delays"): "2, 8", DELAY("steps"): 40}
COND_DEFAULTS = {COND("hidden"): 128, COND("steps"): 400, COND("kind"): "lstm"}
COND_QUICK = {COND("hidden"): 32, COND("steps"): 30}
COST_DEFAULTS = {COST("max"): 8192, COST("repeats"): 3, COST("width"): 128, COST("time_cap"): 60,
                 COST("memory_cap"): 2.0}
COST_QUICK = {COST("max"): 512, COST("repeats"): 1}


DELAY_HIDDEN = (8, 16, 24, 32, 48, 64, 96, 128)
DELAY_STEPS = (20, 40, 60, 100, 150, 200, 300, 400, 600, 800)
DELAY_BATCHES = (8, 16, 32, 64)
DELAY_RATES = (1e-3, 3e-3, 1e-2, 3e-2)
FORGET_BIASES = (2.0, 1.0, 0.0, None)  # None: torch's default initialisation
COND_STYLES = ("python-stdlib", "english-docs", "tiny-shakespeare")
COND_KINDS = ("lstm", "gru", "rnn")
COND_HIDDEN = (32, 64, 128, 256)
COND_STEPS = (30, 60, 100, 200, 400, 600, 800)
COST_WIDTHS = (32, 64, 128, 256)
COST_LENGTHS = tuple(2**k for k in range(8, 17))
COST_REPEATS = (1, 3, 5)
COST_TIME_CAPS = (10, 20, 30, 60, 120)
COST_MEMORY_CAPS = (0.25, 0.5, 1.0, 2.0, 4.0)
TAB = "memory_tab"
TABS = {"delay": "1 · Delayed copy: RNN against LSTM", "conditioning": "2 · Conditioning on a vector",
        "cost": "3 · What recurrence costs"}


def _tab_name(label: str) -> str:
    """The tab's label → its short name in the address."""
    return next((name for name, shown in TABS.items() if shown == label), label)


def _parse_forget(text: str) -> float | None:
    """"default", or one of the biases written as a number ("2", "2.0"): the address writes them with :g."""
    if text == "default":
        return None
    choices = FORGET_BIASES[:-1]
    try:
        value = float(text)
    except ValueError:
        value = None
    if value not in choices:
        raise ValueError(f"{text!r} is not one of {', '.join(f'{b:g}' for b in choices)} or default")
    return value


# Every setting of the three tabs, and the tab, in the page's address (a link to "the delayed copy at D = 64").
LINK = (
    LinkParam("tab", TAB, lambda text: TABS[parse_choice(list(TABS))(text)], _tab_name, example="cost"),
    LinkParam("alphabet", DELAY("alphabet"), parse_int_in(2, 64), example="6"),
    LinkParam("L", DELAY("length"), parse_int_in(4, 256), example="64"),
    LinkParam("D", DELAY("delays"), parse_text(60), example="4, 12"),
    LinkParam("fair_by", DELAY("sizing"), parse_choice(list(SIZINGS)), example="hidden"),
    LinkParam("H", DELAY("hidden"), parse_choice(DELAY_HIDDEN), example="32"),
    LinkParam("seeds", DELAY("seeds"), parse_int_in(1, 8), example="2"),
    LinkParam("steps", DELAY("steps"), parse_choice(DELAY_STEPS), example="200"),
    LinkParam("batch", DELAY("batch"), parse_choice(DELAY_BATCHES), example="16"),
    LinkParam("lr", DELAY("lr"), parse_choice(DELAY_RATES), example="0.003"),
    LinkParam("b_f", DELAY("forget"), _parse_forget, lambda b: "default" if b is None else f"{b:g}",
              example="default"),
    LinkParam("styles", COND("styles"), parse_choices(COND_STYLES), format_choices,
              example="english-docs"),
    LinkParam("cell", COND("kind"), parse_choice(COND_KINDS), example="gru"),
    LinkParam("cond_H", COND("hidden"), parse_choice(COND_HIDDEN), example="64"),
    LinkParam("cond_steps", COND("steps"), parse_choice(COND_STEPS), example="100"),
    LinkParam("d", COST("width"), parse_choice(COST_WIDTHS), example="64"),
    LinkParam("max_T", COST("max"), parse_choice(COST_LENGTHS), example="2048"),
    LinkParam("timings", COST("repeats"), parse_choice(COST_REPEATS), example="5"),
    LinkParam("time_cap", COST("time_cap"), parse_choice(COST_TIME_CAPS), example="30"),
    LinkParam("memory_cap", COST("memory_cap"), parse_choice(COST_MEMORY_CAPS), example="1.0"),
)


def set_defaults() -> None:
    """Each tab's settings start at their full-length defaults, once per session."""
    for defaults in (DELAY_DEFAULTS, COND_DEFAULTS, COST_DEFAULTS):
        for key, value in defaults.items():
            st.session_state.setdefault(key, value)
    st.session_state.setdefault(TAB, TABS["delay"])
