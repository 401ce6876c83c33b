"""The page "What a state can hold" in AppTest: its charts show the shipped files' numbers, its memory the models'
own states and bytes, and "Run this point here" trains the point and shows the accuracy the engine gives for it."""

from __future__ import annotations

import dataclasses
import json
import re
import statistics

import numpy as np
import pytest
import torch

from rnnviz.experiments.delay import torch_threads
from rnnviz.experiments.recall import run_recall
from rnnviz.experiments.sequence_models import label
from rnnviz.experiments.state_capacity import (
    PARITY_FILE,
    RECALL_FILE,
    command_config,
    load_memory_models,
    memory_sequence,
)
from rnnviz.experiments.tasks import IGNORE
from tests.apptest_helpers import open_page, page_text
from tests.figure_helpers import figure, numbers
from tests.test_state_capacity import z_values

PAGE = "app_pages/state_capacity.py"


def rows_of(path) -> list[dict]:
    return [r for block in json.loads(path.read_text(encoding="utf-8"))["runs"] for r in block["records"]]


def chart(at, key: str) -> dict:
    """The plotly chart drawn with widget key ``key``, as the browser receives it."""
    charts = at.get("plotly_chart")
    index = next(i for i, c in enumerate(charts) if c.proto.id.endswith(key) or key in c.proto.id)
    return figure(at, index)


@pytest.fixture
def page():
    at = open_page(PAGE, timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_charts_and_sentences_show_the_shipped_numbers(page):
    recall, parity = rows_of(RECALL_FILE), rows_of(PARITY_FILE)
    pairs_chart = chart(page, "capacity_pairs_fig")
    for trace in pairs_chart["data"]:
        kind = next(r["kind"] for r in recall if label(r["kind"]) == trace["name"])
        for d, y in zip(numbers(trace["x"]), numbers(trace["y"])):
            assert y == pytest.approx(statistics.fmean(
                r["accuracy"] for r in recall if r["kind"] == kind and r["pairs"] == d))
    assert {t["name"] for t in pairs_chart["data"]} == {label(r["kind"]) for r in recall}
    bytes_chart = chart(page, "capacity_bytes_fig")
    for trace in bytes_chart["data"]:
        (kind,) = {r["kind"] for r in recall if label(r["kind"]) == trace["name"]}
        assert numbers(trace["x"])[0] == next(r["state_bytes"] for r in recall if r["kind"] == kind)
    text = page_text(page)
    for command in {block["command"] for block in json.loads(RECALL_FILE.read_text())["runs"]}:
        assert command in text  # each command is on the page, as it ran
    assert "Measured with `rnnviz experiments recall …`" in text
    measured_on = json.loads(RECALL_FILE.read_text())["measured_on"]
    assert f"on {measured_on}" in text
    kinds = list(dict.fromkeys(r["kind"] for r in parity))
    bullets = [line[2:] for m in page.markdown for line in m.value.splitlines() if line.startswith("- The ")]
    assert [b.split(" ")[1] for b in bullets] == [label(k).split(" ")[0] for k in kinds]
    for kind, bullet in zip(kinds, bullets):
        trained = parity[0]["train_length"]
        own = [r for r in parity if r["kind"] == kind]
        at_trained = statistics.fmean(r["accuracy"][r["lengths"].index(trained)] for r in own)
        at_longest = statistics.fmean(r["accuracy"][-1] for r in own)
        assert f"{at_trained:.2f}" in bullet or f"{at_longest:.2f}" in bullet, bullet


def test_the_memory_at_t_is_each_models_state_and_its_bytes(page):
    """Sequence 7 at t = 10: the mLSTM's chart is its fast path's C after token 10, the table's answers are the
    held-out targets, and each caption gives the bytes counted by hand."""
    at = page.number_input(key="capacity_sequence").set_value(7).run()
    at = at.slider(key="capacity_t").set_value(10).run()
    assert not at.exception, [e.value for e in at.exception]
    ids, targets = memory_sequence(7)
    model = load_memory_models()["mlstm"]
    with torch.no_grad():
        C = model(ids[:11].view(1, -1))[2][0].C[0]  # (heads, d, d)
    drawn = z_values(chart(at, "capacity_memory_mlstm")["data"][0]["z"])
    np.testing.assert_allclose(drawn, torch.cat(list(C), dim=1).numpy(), atol=1e-4)
    tokens = next(df.value for df in at.dataframe if "" in df.value.columns)  # the sequence's table
    answers = tokens[tokens[""] == "answer"].iloc[0]
    shown = {int(col.replace("▶ ", "")): cell for col, cell in answers.items() if col != "" and cell}
    assert shown == {t: str(y) for t, y in enumerate(targets.tolist()) if y != IGNORE}
    assert "▶ 10" in tokens.columns
    captions = "\n".join(c.value for c in at.caption)
    for numbers_held in ("64 numbers, 256 bytes", "594 numbers, 2,376 bytes", "592 numbers, 2,368 bytes",
                         "304 numbers, 1,216 bytes", f"{2 * 2 * 11 * 32:,} numbers, {4 * 2 * 2 * 11 * 32:,} bytes"):
        assert f"**{numbers_held}** after token 10" in captions, numbers_held


def test_a_bad_link_is_said_and_the_page_stands(page):
    at = open_page(PAGE, timeout=120, query={"t": "99", "sequence": "-1", "kind": "<b>x</b>"})
    assert not at.exception
    warned = "\n".join(w.value for w in at.warning)
    assert "t=99" in warned and "sequence=-1" in warned


def test_run_this_point_here_trains_it_and_shows_the_engines_accuracy(page):
    """The GRU at D = 2 for 50 steps from the sidebar's seed 0: the page's accuracy is run_recall's for the same
    settings, and the command it prints repeats that run."""
    at = page.selectbox(key="capacity_point_kind").set_value("gru").run()
    at = at.selectbox(key="capacity_point_pairs").set_value(2).run()
    at = at.selectbox(key="capacity_point_steps").set_value(50).run()
    at.button(key="capacity_run").click().run()
    for _ in range(60):  # AppTest runs the training fragment only in full reruns: each trains one chunk
        if at.success:
            break
        assert not at.exception, [e.value for e in at.exception]
        at.run()
    (done,) = [s.value for s in at.success]
    shown = float(re.search(r"held-out query accuracy \*\*([0-9.]+)\*\*", done).group(1))
    command = next(c.value for c in at.code if c.value.startswith("rnnviz experiments recall --kinds gru"))
    config = command_config(command)
    assert (config.pairs, config.steps, config.base_seed) == ((2,), 50, 0)
    with torch_threads(1):
        engine = run_recall(dataclasses.replace(config), "gru", 2, seed=0)
    assert shown == pytest.approx(engine.accuracy, abs=5e-4)
    table = next(df.value for df in at.dataframe if "shipped" in df.value.columns)  # the points trained here
    assert table.iloc[-1]["accuracy"] == engine.accuracy and table.iloc[-1]["steps"] == 50
