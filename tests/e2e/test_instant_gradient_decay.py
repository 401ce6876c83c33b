"""Gradient decay's per-step sum in a real browser: a K move shows the stop's shares and bars with no script run, the
address follows, and the page opened anew at that address shows the same."""

import json

import numpy as np

from rnnviz.lessons import gradients
from tests.e2e.harness import open_app_page
from tests.e2e.test_instant import WATCH, opened_anew, read, reported, shows
from tests.figure_helpers import numbers
from tests.test_gradients import _autograd_step_terms

STEPS = "gradient_decay_steps"


def values(field) -> list:
    """A trace's array as READ gives it: a list, plotly's {dtype, bdata}, or a typed array that JSON made a dict."""
    if isinstance(field, dict) and "bdata" in field:
        return numbers(field).tolist()
    if isinstance(field, dict):
        return [field[key] for key in sorted((k for k in field if k.isdigit()), key=int)]
    return list(field)


def test_the_per_step_sums_k_moves_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "gradient-decay?section=sum&H=8&log=0")
    shows(page, STEPS, "150", 1)
    page.evaluate(WATCH, STEPS)
    slider = page.locator(f".st-key-{STEPS} input[type='range']")
    slider.focus()
    slider.press("ArrowLeft")  # K 150 → 140
    shows(page, STEPS, "140", 1)
    (stop, states), *_ = page.evaluate("() => window.__instant.shown")
    assert stop == "140" and states == [], states  # shown before any script ran
    moved = read(page, STEPS)
    terms = _autograd_step_terms(gradients.TanhRNNConfig(hidden=8, steps=140))
    assert dict(moved["metrics"])["share of the last 10 steps"] == f"{terms[-10:].sum() / terms.sum():.1%}"
    (chart,) = moved["charts"]
    assert chart["shown"] == "140"
    (bars,) = (trace for trace in map(json.loads, chart["traces"]) if trace[0] == "bar")
    assert values(bars[1]) == list(range(1, 141))  # t = 1 … K
    np.testing.assert_allclose(values(bars[2]), terms, rtol=1e-9, atol=1e-300)  # linear axis: every term, the zero too
    reported(page, "K=140")
    assert read(page, STEPS) == moved  # the server's run changed nothing the browser shows
    assert opened_anew(page, base_url, STEPS, 1) == moved
