"""The Sequence-to-sequence page in AppTest, on the shipped pair: both models' outputs, the alignment and each
step's attention row are the engine's; accuracy by length and the bytes read are the engine's numbers; bad input gets
words; a pair trained in this session replaces the shipped one."""

import json
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import pytest

from rnnviz.seq2seq.checkpoint import load_shipped
from rnnviz.seq2seq.decode import accuracy_by_length, bytes_read, greedy
from rnnviz.seq2seq.model import Seq2SeqConfig
from rnnviz.seq2seq.train import train_pair
from rnnviz.ui.sequence_to_sequence.sections import DEFAULT_INPUT, EVAL_PER_LENGTH, OWN, Pair
from tests.apptest_helpers import open_page, page_text
from tests.figure_helpers import numbers

PAGE = "app_pages/sequence_to_sequence.py"


@pytest.fixture(scope="module")
def opened():
    at = open_page(PAGE, timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def shipped():
    return load_shipped()[0]


def grid(field) -> np.ndarray:
    """A heatmap's z as a 2-D array: a list of rows, or plotly's base64 bytes with their shape."""
    if isinstance(field, dict):
        return numbers(field).reshape([int(n) for n in str(field["shape"]).split(",")])
    return np.array(field, dtype=float)


def chart(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


RIGHT, WRONG = "#d9f0d3", "#f4c7c3"  # backgrounds of a letter that matches the answer and of one that does not
ROW_NAMES = {"right answer": "answer", "fixed context": "fixed", "attention": "attention"}


class OutputTable(HTMLParser):
    """The output table read back: per row, its name, its letters with the background each is drawn on (None for
    plain text), and its verdict."""

    def __init__(self, drawn: str):
        super().__init__()
        self.rows: list[list] = []
        self._background = None
        self.feed(drawn)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.rows[-1].append([])
        elif tag == "span":
            style = dict(attrs).get("style", "")
            self._background = next((p.split(":")[1] for p in style.split(";") if p.startswith("background:")), None)

    def handle_endtag(self, tag):
        if tag == "span":
            self._background = None

    def handle_data(self, data):
        self.rows[-1][-1].extend((ch, self._background) for ch in data)

    def by_name(self) -> dict[str, tuple[list, str]]:
        return {ROW_NAMES["".join(ch for ch, _ in name)]: (letters, "".join(ch for ch, _ in verdict))
                for name, letters, verdict in self.rows}


def test_both_outputs_and_the_alignment_are_the_engines(opened, shipped):
    at = opened
    drawn = next(h.value for h in at.html if "right answer" in h.value)
    answer = DEFAULT_INPUT[::-1]  # the task: write the input reversed
    rows = OutputTable(drawn).by_name()
    assert "".join(ch for ch, _ in rows["answer"][0]) == answer
    for join, model in shipped.items():  # each model's own greedy output, each letter coloured against the answer
        output = greedy(model, DEFAULT_INPUT)[0].output
        letters, verdict = rows[join]
        n = max(len(output), len(answer))
        assert "".join(ch for ch, _ in letters) == output + "·" * (n - len(output)), join
        expected = [RIGHT if i < len(output) and i < len(answer) and output[i] == answer[i] else WRONG
                    for i in range(n)]
        assert [background for _, background in letters] == expected, join
        assert verdict.startswith("✓ exact" if output == answer else "✗ "), join
    assert any(background == RIGHT for _, background in rows["attention"][0])
    attention = greedy(shipped["attention"], DEFAULT_INPUT)[0]
    heat = chart(at, "seq2seq_alignment")["data"][0]
    np.testing.assert_allclose(grid(heat["z"]), np.round(attention.attention, 4), atol=1e-6)
    assert heat["x"][0] == f"1 {DEFAULT_INPUT[0]}"


def test_a_step_shows_that_steps_attention_row_and_names_where_it_looks(opened, shipped):
    at = opened
    at.slider(key="seq2seq_step").set_value(4).run()
    assert not at.exception, [e.value for e in at.exception]
    attention = greedy(shipped["attention"], DEFAULT_INPUT)[0].attention
    row = chart(at, "seq2seq_row")["data"][0]
    np.testing.assert_allclose(numbers(row["y"]), attention[3], rtol=1e-5)
    top = int(np.argmax(attention[3]))
    mirror = len(DEFAULT_INPUT) + 1 - 4  # token i of a reversal is the input's letter n + 1 − i (1-based)
    where = (f"the mirror position j = {mirror}, whose letter it must write" if top + 1 == mirror
             else f"position {top + 1}; the mirror position is {mirror}")
    assert (f"To write token 4 the attention model reads position {top + 1} ({DEFAULT_INPUT[top]!r}) most, "
            f"α = {attention[3, top]:.2f}: {where}.") in page_text(at)
    end = len(DEFAULT_INPUT) + 1  # the <END> token: past the last mirror position
    at.slider(key="seq2seq_step").set_value(end).run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"To write token {end} " in page_text(at)
    assert "the start of the input: every letter is written" in page_text(at)


def test_accuracy_by_length_and_bytes_read_are_the_engines(opened, shipped):
    at = opened
    table = next(frame.value for frame in at.dataframe if "letters right" in frame.value.columns)
    expected = {(r["model"], r["length"]): r for r in accuracy_by_length(shipped, [4, 20, 40], EVAL_PER_LENGTH)}
    names = {"fixed context": "fixed", "attention": "attention"}
    for _, row in table.iterrows():
        key = (names[row["model"]], row["length"])
        if key in expected:
            assert row["exact"] == pytest.approx(expected[key]["exact"])
            assert row["letters right"] == pytest.approx(expected[key]["char"])
    fixed = bytes_read(shipped["fixed"], "a")["context"]
    assert fixed == bytes_read(shipped["fixed"], "a" * 40)["context"]
    assert f"**{fixed:,} bytes**" in page_text(at)


def test_bad_input_is_explained_and_draws_no_decoding(opened):
    at = opened
    at.text_input(key="seq2seq_input").set_value("Hello!").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("outside the alphabet" in w.value for w in at.warning)
    assert not [c for c in at.get("plotly_chart") if c.key == "seq2seq_alignment"]
    at.text_input(key="seq2seq_input").set_value(DEFAULT_INPUT).run()


def test_the_input_box_holds_as_many_letters_as_its_label_and_the_models_read(opened, shipped):
    at = opened
    longest = shipped["attention"].config.max_input  # what the shipped models read: twice their longest training
    box = at.text_input(key="seq2seq_input")
    assert f"up to {longest} letters" in box.label
    assert box.max_chars == longest  # the box counts "n/40" under that label, and takes no more


def test_a_pair_trained_in_the_session_replaces_the_shipped_one():
    config = replace(Seq2SeqConfig(), steps=3, batch=8, train_max=6)
    models, history = train_pair(config)
    at = open_page(PAGE, timeout=180)
    at.session_state[OWN] = Pair(models, "trained here", history.seconds)
    at.text_input(key="seq2seq_input").set_value("abc").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "the pair trained here (3 steps" in page_text(at)
    decoded = greedy(models["attention"], "abc")[0]
    heat = chart(at, "seq2seq_alignment")["data"][0]
    np.testing.assert_allclose(grid(heat["z"]), np.round(decoded.attention, 4), atol=1e-6)
