"""Captioning's word t in a real browser: a move shows the caption line with its word marked and the top-k chart of
that word with no script run, the address follows, and the page opened anew at that address shows the same."""

import torch

from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from rnnviz.ui.captioning.scene import DEFAULT_SCENE
from tests.e2e.harness import open_app_page
from tests.e2e.test_instant import WATCH, opened_anew, read, reported, shows

FIRST_LOAD_MS = 120_000  # loads the shipped captioners and finds the boat example once per process


def test_word_t_moves_in_the_browser_as_the_server_would(page, base_url):
    open_app_page(page, base_url, "image-captioning?t=4", timeout_ms=FIRST_LOAD_MS)
    shows(page, "cap_t", "4", 1)
    page.evaluate(WATCH, "cap_t")
    slider = page.locator(".st-key-cap_t input[type='range']")
    slider.focus()
    slider.press("ArrowRight")  # word 4 → 5
    shows(page, "cap_t", "5", 1)
    (stop, states), *_ = page.evaluate("() => window.__instant.shown")
    assert stop == "5" and states == [], states  # shown before any script ran
    moved = read(page, "cap_t")
    # The default scene, greedy, v at every step: the captioner's own forward pass on <START> w_1 … w_4 gives
    # p(w_5 | w_<5, v); its six most probable words are the chart's bars, labelled with their probabilities.
    model = shipped.load("every")[0].eval()
    image = M.pixels(world.render(DEFAULT_SCENE, 0)[None])
    ids = M.greedy(model, image)[0]
    words = [M.VOCAB[i] for i in ids]
    with torch.no_grad():
        p5 = torch.softmax(model(image, torch.tensor([[M.START_ID, *ids[:4]]]))[0][0, -1], -1)
    top = torch.topk(p5, 6)
    assert int(top.indices[0]) == ids[4]  # greedy: word 5 is the most probable
    assert moved["words"] == " ".join([M.START, *words[:4], f"[{words[4]}]", *words[5:]])
    (chart,) = moved["charts"]
    assert chart["shown"] == "5"
    for index, p in zip(top.indices.tolist(), top.values.tolist()):
        assert M.VOCAB[index] in chart["texts"] and f"{p:.2f}" in chart["texts"], (M.VOCAB[index], p, chart["texts"])
    assert any("t = 5" in text for text in chart["texts"]), chart["texts"]
    reported(page, "t=5")
    assert read(page, "cap_t") == moved  # the server's run changed nothing the browser shows
    assert opened_anew(page, base_url, "cap_t", 1) == moved
