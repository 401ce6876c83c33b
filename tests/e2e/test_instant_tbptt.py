"""Truncated BPTT's "Loss at step t" in a real browser: a move shows the stop's sentence and chunk figure with no script
run, the address follows, and the page opened anew at that address shows the same."""

import json

import numpy as np

from rnnviz.lessons.tbptt import SweepConfig
from tests.e2e.harness import open_app_page
from tests.e2e.test_instant import WATCH, opened_anew, read, reported, shows
from tests.test_tbptt import full_bptt_reach


def test_loss_at_step_t_moves_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "truncated-bptt?t=12")
    shows(page, "tbptt_position", "12", 1)
    page.evaluate(WATCH, "tbptt_position")
    slider = page.locator(".st-key-tbptt_position input[type='range']")
    slider.focus()
    slider.press("ArrowLeft")  # t 12 → 11
    shows(page, "tbptt_position", "11", 1)
    (stop, states), *_ = page.evaluate("() => window.__instant.shown")
    assert stop == "11" and states == [], states  # shown before any script ran
    moved = read(page, "tbptt_position")
    # Defaults D = 4, K = 6: L_11's chunk is 7 … 12 and holds its source x_7, so the gradient reaches it; inside the
    # chunk the norms are those of plain autograd over the whole sequence.
    reference = full_bptt_reach(SweepConfig(), 6, 11)
    assert "The source is inside the chunk" in moved["words"]
    assert any(f"\\rVert = {reference[6]:.3g}" in equation for equation in moved["equations"]), moved["equations"]
    (chart,) = moved["charts"]
    assert chart["shown"] == "11"
    (bars,) = (trace for trace in map(json.loads, chart["traces"]) if trace[0] == "bar")
    assert bars[1] == list(range(7, 12))  # u = 7 … 11: the gradient reaches no input before the chunk
    np.testing.assert_allclose(bars[2], reference[6:11], rtol=1e-5)
    reported(page, "t=11")
    assert read(page, "tbptt_position") == moved  # the server's run changed nothing the browser shows
    assert opened_anew(page, base_url, "tbptt_position", 1) == moved
