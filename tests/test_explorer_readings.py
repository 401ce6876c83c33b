"""The explorer's readings of the whole model in AppTest, on the shipped Python model: the prediction strip's
numbers are the engine's surprisal and guesses, the n-gram section's losses and error breakdown are the engine's,
and the state's path is the engine's PCA with its nearest states."""

import html
import json
import math
import re
from collections import Counter

import numpy as np
import pytest
import torch

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.interpret import colortext
from rnnviz.interpret.finder import trace_cells
from rnnviz.interpret.ngram import BUCKETS, WORD, error_breakdown, fit_ngrams, innermost_openings
from rnnviz.interpret.surprisal import predictions
from rnnviz.interpret.trajectory import nearest, project
from rnnviz.ui.hidden_cell_explorer.readings import BUCKET_LABELS
from rnnviz.ui.hidden_cell_explorer.sections import SECTIONS
from rnnviz.ui.kit.models import PRETRAINED_DIR, held_out_text
from tests.apptest_helpers import open_page, page_text
from tests.figure_helpers import numbers

PAGE = "app_pages/hidden_cell_explorer.py"
MODEL = PRETRAINED_DIR / "lstm-python-stdlib.pt"


@pytest.fixture(scope="module")
def opened():
    at = open_page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def engine():
    checkpoint = load_checkpoint(MODEL)
    text = held_out_text(load_builtin("python-stdlib"), 10_000)
    ids = checkpoint.vocab.encode(text)
    return checkpoint, text, predictions(checkpoint.model, ids), trace_cells(checkpoint.model, ids)


def strip(at) -> str:
    """The prediction strip's HTML: the st.html block with a column per character (its tooltips say "surprisal")."""
    return next(h.value for h in at.html if "guesses:" in h.value and "Top row" in h.value)


def test_the_strip_prints_the_engines_loss_accuracy_and_guesses(opened, engine):
    at = opened
    checkpoint, text, found, _ = engine
    shown = page_text(at)
    assert f"the mean surprisal is **{found.loss():.3f} nats/char** ({found.loss() / math.log(2):.2f} bits)" in shown
    assert f"Its top guess was right for **{found.top1_accuracy():.1%}**" in shown
    drawn = html.unescape(strip(at))
    chars = checkpoint.vocab.chars
    for t in (1, 57, 199):  # the strip opens at character 0 and draws 200
        s = found.surprisal[t]
        guesses = ", ".join(f"{colortext.describe_char(chars[i])} {p:.0%}"
                            for i, p in zip(found.guess_ids[t], found.guess_probs[t]))
        assert (f"position {t}: {colortext.describe_char(text[t])}\nsurprisal {s:.2f} nats ({s / math.log(2):.2f} "
                f"bits), p = {math.exp(-s):.1%}, rank {found.rank[t]}\nguesses: {guesses}") in drawn
    assert "position 200:" not in drawn
    # The most surprising character of the whole text is listed first.
    worst = found.most_surprising(1)[0]
    assert f"{found.surprisal[worst]:.1f} nats at {worst:,}; guessed" in html.unescape(
        next(h.value for h in at.html if "nats at" in h.value and "guessed" in h.value))


def test_moving_the_strip_draws_those_characters_and_its_table_holds_the_engines_values(opened, engine):
    at = opened
    _, text, found, _ = engine
    at.slider(key="explorer_strip_start").set_value(3000).run()
    assert not at.exception, [e.value for e in at.exception]
    drawn = html.unescape(strip(at))
    assert "position 3000:" in drawn and "position 3199:" in drawn and "position 2999:" not in drawn
    table = next(frame.value for frame in at.dataframe if "surprisal (nats)" in frame.value.columns)
    assert list(table["position"]) == list(range(3000, 3200))
    np.testing.assert_allclose(table["surprisal (nats)"], found.surprisal[3000:3200], rtol=1e-6)
    assert list(table["rank"]) == list(found.rank[3000:3200])


def test_the_path_is_the_engines_projection_and_nearest_states(opened, engine):
    at = opened
    _, text, _, trace = engine
    start = int(at.session_state["explorer_window"])
    end = min(start + 2000, len(text))
    states = trace.block(0, "h")[start:end]
    projection = project(states)
    assert f"The two axes hold {projection.explained[:2].sum():.0%} of the states' variance" in page_text(at)
    at.number_input(key="explorer_path_at").set_value(start + 300).run()
    assert not at.exception, [e.value for e in at.exception]
    listed = html.unescape(next(h.value for h in at.html if f"chosen, {start + 300:,}" in h.value))
    near = nearest(states, 300, 5, 20)
    found = [int(p.replace(",", "")) for p in re.findall(r"[\d.]+ at ([\d,]+)", listed)]
    assert found == [start + p for p in near]
    figure = next(c for c in at.get("plotly_chart") if "PC 1" in c.proto.spec)
    assert f"PC 1 ({100 * projection.explained[0]:.0f}% of variance)" in figure.proto.spec


@pytest.fixture(scope="module")
def ngrams():
    corpus = load_builtin("python-stdlib")
    train, _ = corpus.split()
    return corpus, fit_ngrams(train, corpus.vocab.size, 6), Counter(WORD.findall(corpus.text[: len(train)]))


def breakdown_bars(at) -> dict[str, int]:
    chart = next(c for c in at.get("plotly_chart") if c.key == "explorer_breakdown")
    bars = json.loads(chart.proto.spec)["data"][0]
    return dict(zip(bars["y"], numbers(bars["x"])))


def test_the_n_gram_section_prints_the_engines_losses_and_breakdown(opened, engine, ngrams):
    at = opened
    checkpoint, text, found, _ = engine
    corpus, models, words = ngrams
    ids = corpus.vocab.encode(text)
    five = models.loss(ids, 5)
    shown = page_text(at)
    assert (f"On this passage the 1 × 256 LSTM loses **{found.loss():.3f} nats/char**, the 5-gram **{five:.3f}**"
            in shown)
    for order in (5, 2):
        if order != 5:
            at.select_slider(key="explorer_ngram_order").set_value(order).run()
            assert not at.exception, [e.value for e in at.exception]
        expected = error_breakdown(text, found.true_prob[1:], models.prob_of_true(ids, order), order, words,
                                   syntax="code").counts()
        bars = breakdown_bars(at)
        assert [int(bars[BUCKET_LABELS[b]]) for b in BUCKETS] == [expected[b] for b in BUCKETS], (order, bars)
        fixed = expected["long_range"] + expected["ngram_other"]
        shown = page_text(at)
        assert f"It **fixes {fixed:,}** of the {order}-gram's errors" in shown
        # the words follow the numbers: the fixed errors' long-range share against all characters' share
        position = np.arange(1, len(text))
        opening = innermost_openings(text, "code")[position - 1]
        rate = float(np.mean((opening >= 0) & (position - opening >= order)))
        share = expected["long_range"] / fixed
        assert f"**{share:.0%}** of those sit inside" in shown and f"against **{rate:.0%}** of all" in shown
        verdict = ("the long-range errors the recurrence fixes" if share > rate + 0.05 else
                   "about as often as such characters occur" if share >= rate - 0.05 else "mostly short-range")
        assert verdict in shown


def test_the_contents_line_links_every_sections_anchor(opened):
    at = opened
    line = next(m.value for m in at.markdown if m.value.startswith("**On this page:**"))
    headers = {h.value: h.proto.anchor for h in at.header}
    for anchor, (title, short) in SECTIONS.items():
        assert f"[{title.split('.')[0]}. {short}](#{anchor})" in line
        assert headers[title] == anchor


def test_a_long_passages_surprisal_figure_draws_each_buckets_lowest_to_highest_character(engine):
    from rnnviz.figures.explorer import MAX_LINE_POINTS, MAX_SURPRISAL_DOTS, SURPRISAL_BUCKETS, surprisal_figure

    _, _, found, _ = engine
    values = np.tile(found.surprisal, 2)  # 20,000 characters: more than the figure draws one by one
    low, high, line = surprisal_figure(values, (0, 2000)).data
    known = np.flatnonzero(np.isfinite(values))  # the first character has no surprisal (nothing before it)
    assert len(known) == len(values) - 2 > MAX_SURPRISAL_DOTS
    size = int(high.name.split("every ")[1].split()[0])
    assert size == -(-len(known) // SURPRISAL_BUCKETS) and len(numbers(high.y)) <= SURPRISAL_BUCKETS
    for k, first in enumerate(range(0, len(known), size)):  # each run of `size` known characters, by hand
        members = known[first:first + size]
        assert numbers(low.y)[k] == values[members].min() and numbers(high.y)[k] == values[members].max()
        assert numbers(high.customdata)[k] == members[np.argmax(values[members])]  # where its spike is
    assert high.fill == "tonexty"  # the band between the two
    # The line is the 25-character mean, read at its own positions.
    at = numbers(line.x).astype(int)
    assert len(at) <= MAX_LINE_POINTS
    for t in at[1:-1:97]:
        np.testing.assert_allclose(numbers(line.y)[list(at).index(t)], values[t - 12:t + 13].mean(), rtol=1e-9)
    dots = surprisal_figure(found.surprisal[:1000], (0, 500)).data[0]
    assert dots.name == "one character"  # a short passage: every known character, a dot each
    np.testing.assert_array_equal(numbers(dots.x), np.arange(1, 1000))
    np.testing.assert_array_equal(numbers(dots.y), found.surprisal[1:1000])


def test_the_breakdowns_examples_print_each_characters_own_p_under_the_model_and_the_n_gram(opened, engine, ngrams):
    """Each example "t: model p, n-gram q" gives the probability each assigned to character t itself, after the
    characters before it: here softmax of the model's logits after character t − 1, taken by hand."""
    at = opened
    checkpoint, text, _, _ = engine
    corpus, models, _ = ngrams
    at.selectbox(key="explorer_ngram_bucket").set_value("ngram_other").run()
    assert not at.exception, [e.value for e in at.exception]
    order = int(at.session_state["explorer_ngram_order"])
    ids = checkpoint.vocab.encode(text)
    with torch.no_grad():
        logits, _, _ = checkpoint.model.eval()(ids[None])  # (1, T, V): the prediction after each character
    p_model = torch.softmax(logits[0].double(), dim=-1)[:-1].gather(1, ids[1:, None])[:, 0].numpy()  # p of t at t − 1
    p_ngram = models.prob_of_true(corpus.vocab.encode(text), order)
    listed = html.unescape(next(h.value for h in at.html if f"{order}-gram " in h.value and ": model " in h.value))
    examples = re.findall(rf"([\d,]+): model ([\d.]+), {order}-gram ([\d.]+)", listed)
    assert len(examples) >= 4, listed
    for position, model_p, ngram_p in examples:
        t = int(position.replace(",", ""))
        assert float(model_p) == pytest.approx(p_model[t - 1], abs=0.005 + 1e-9), (t, model_p)
        assert float(ngram_p) == pytest.approx(p_ngram[t - 1], abs=0.005 + 1e-9), (t, ngram_p)
        assert p_model[t - 1] >= 0.5 > p_ngram[t - 1]  # the bucket's own rule: the n-gram wrong, the model right
