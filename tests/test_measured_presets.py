"""The presets' measured figures that a live Tiny Shakespeare run is read against (issue 37): the shipped file is
the race recorded in bench/results.json for the presets as they ship, and the page shows them beside the run's own
val loss at the same seconds."""

import json
import math
from pathlib import Path

import pytest

from rnnviz.charlm.measured import MARKS_FILE, PresetMarks, preset_marks, val_by_mark
from rnnviz.charlm.presets import ALL_PRESETS, BABY_GPT, KIND_PRESETS, STATE_PRESETS
from rnnviz.serving.live import LiveSettings
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from tests.apptest_helpers import open_page, page_text

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results.json"
PAGE = "app_pages/live_training.py"


def key(name: str) -> str:
    return f"live_training_{name}"


def test_a_run_s_value_at_a_mark_is_its_latest_evaluation_at_or_before_it():
    seconds, val = [0.0, 4.0, 9.5, 12.0, 31.0], [4.2, 3.1, 2.5, 2.4, 1.9]
    # clock 31.5 s: 10 s takes the evaluation at 9.5 s, 30 s the one at 12 s; 60 s is not reached yet
    assert val_by_mark(seconds, val, 31.5, (10, 30, 60)) == {10: (9.5, 2.5), 30: (12.0, 2.4)}
    assert val_by_mark(seconds, val, 9.9, (10,)) == {}  # the clock has not reached 10 s
    assert val_by_mark([11.0], [2.0], 12.0, (10,)) == {}  # nothing evaluated by 10 s
    assert val_by_mark([], [], 100.0, (10,)) == {}


def test_the_shipped_figures_are_the_recorded_race_of_the_presets_as_they_ship():
    shipped = json.loads(MARKS_FILE.read_text(encoding="utf-8"))
    marks = preset_marks()
    assert marks == PresetMarks.from_dict(shipped)
    live = [name for name, p in ALL_PRESETS.items() if p.corpus == "tiny-shakespeare" and name != BABY_GPT
            and name not in STATE_PRESETS]  # the sLSTM … linear attention presets were raced apart (kinds_150s)
    assert list(marks.val_at) == live  # every preset the live page offers on Tiny Shakespeare, in menu order
    # raced as each ships today: a preset changed since the race needs a new one (python -m bench.anytime 150 …)
    assert shipped["configs"] == {name: ALL_PRESETS[name].config.to_dict() for name in live}
    row = json.loads(RESULTS.read_text(encoding="utf-8"))["benchmarks"][marks.row]
    recorded = {}  # each preset's figures: those of the contender that trained with its config
    for name in live:
        figures = next(c for c in row["contenders"].values() if c["config"] == ALL_PRESETS[name].config.to_dict())
        scored_as_live = figures[f"val_first_{marks.eval_chars}_chars_at"]  # the same weights, the live page's way
        recorded[name] = {int(m.rstrip("s")): v for m, v in scored_as_live.items()}
    assert recorded == {name: dict(values) for name, values in marks.val_at.items()}
    assert marks.marks == (10, 30, 60, 90, 150)
    assert marks.eval_chars == LiveSettings().eval_chars  # scored as the live page scores its run
    for values in marks.val_at.values():  # nats/char between a good model's and the uniform guess over 65 chars
        assert all(1.0 < v < math.log(65) for v in values.values())


@pytest.fixture
def shakespeare_page(shakespeare_offered):
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value("Quick demo (30 s)").run()
    at.select_slider(key=key("hidden")).set_value(16).run()
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at) -> str:
    return next(m.value for m in at.markdown if str(m.value).startswith("| | 10 s"))


def test_a_tiny_shakespeare_run_shows_each_preset_s_figures_beside_its_own(shakespeare_page):
    at, marks = shakespeare_page, preset_marks()
    run = at.session_state[LIVE_RUN_KEY]
    assert run.corpus_name == "tiny-shakespeare"
    assert "Where the presets stood at the same seconds (nats/char)" in [e.label for e in at.expander]
    rows = _table(at).splitlines()
    assert rows[0] == "| | 10 s | 30 s | 60 s | 90 s | 150 s |"
    # one short chunk of a 16-unit model: its clock has passed no mark, and it is no preset (H = 16)
    assert run.trainer.seconds < 10 and rows[2] == "| **this run** | · | · | · | · | · |"
    for row, (name, values) in zip(rows[3:], marks.val_at.items(), strict=True):
        assert row == f"| {name} | " + " | ".join(f"{values[m]:.2f}" for m in marks.marks) + " |"
    assert f"{marks.measured} (bench/anytime.py)" in page_text(at)

    at.toggle(key=key("bits")).set_value(True).run()
    rows = _table(at).splitlines()
    first = next(iter(marks.val_at))
    assert rows[3].startswith(f"| {first} | {marks.val_at[first][10] / math.log(2):.2f} |")
    assert "Where the presets stood at the same seconds (bits/char)" in [e.label for e in at.expander]


def test_the_figures_stay_off_a_run_on_another_corpus():
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value("Quick demo (30 s)").run()
    at.selectbox(key=key("builtin")).set_value("hello").run()
    at.button(key=key("step")).click().run()
    assert not at.exception
    assert not any(str(m.value).startswith("| | 10 s") for m in at.markdown)
    assert "Where the presets stood" not in " ".join(e.label for e in at.expander)


def test_a_run_of_a_kind_the_race_left_out_says_it_has_no_figures_of_its_own(shakespeare_offered):
    """Issue 64: the sLSTM … linear attention presets were raced apart (bench/kinds_speed.py), not in the race whose
    figures ship; a run of one reads the table against the other presets and is told that none is its own kind."""
    at = open_page(PAGE)
    at.radio(key=key("kind")).set_value("selective").run()
    assert at.selectbox(key=key("preset")).value == KIND_PRESETS["selective"]
    at.select_slider(key=key("hidden")).set_value(16).run()
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    assert (run.corpus_name, run.trainer.config.kind) == ("tiny-shakespeare", "selective")
    rows = _table(at).splitlines()
    assert rows[2] == "| **this run** | · | · | · | · | · |" and len(rows) == 3 + len(preset_marks().val_at)
    assert not any("Selective" in row or "selective" in row for row in rows)
    assert "No selective SSM was in this race, so the table has no figures for this kind" in page_text(at)
