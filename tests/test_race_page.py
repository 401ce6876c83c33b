"""The race section of the hidden-state page (AppTest): start a short race, see two curves and two samples,
pause and continue, a fresh session (a reload) draws without an exception; the figure shows what the engine
recorded."""

import json
import os

import pytest

from rnnviz.figures.race import race_figure
from rnnviz.serving.race import RaceStatus
from rnnviz.ui.hidden_state import race as race_ui
from rnnviz.ui.hidden_state.sections import STEP
from tests.apptest_helpers import instant_shown, open_page, page_text

PAGE = "app_pages/hidden_state.py"


@pytest.fixture
def short_race(monkeypatch):
    """One second of training each, scored every half second: the real presets, a short clock."""
    monkeypatch.setattr(race_ui, "DURATIONS", (1, 20, 60))
    monkeypatch.setattr(race_ui, "DEFAULT_SECONDS", 1)
    monkeypatch.setattr(race_ui, "MARK_EVERY_S", 0.5)
    monkeypatch.setattr(race_ui, "SLICE_S", 0.25)
    monkeypatch.setattr(race_ui, "EVAL_CHARS", 2_000)
    monkeypatch.setattr(race_ui, "SAMPLE_CHARS", 40)


def _runner(at):
    return at.session_state[race_ui.RUNNER]


def test_a_race_shows_two_curves_and_two_samples_and_gives_its_slot_back(short_race):
    at = open_page(PAGE, timeout=120)
    assert not at.exception
    assert "The race: an LSTM against a small GPT" in page_text(at)
    assert at.selectbox(key=race_ui.CORPUS).value == "english-docs"
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    assert not at.exception
    runner = _runner(at)
    runner.join(120)
    assert runner.status == RaceStatus.FINISHED, runner.message
    at.run()
    assert not at.exception
    text = page_text(at)
    assert "Finished at 1 s of training each" in text
    race = runner.race
    assert set(race.trainers) == {"LSTM", "Transformer"}
    codes = [c.value for c in at.code]
    for name in race.trainers:
        assert [m.mark for m in race.curves[name]] == [0.5, 1.0]
        # each model's latest sample under the curves (st.code drops a final newline)
        assert race.samples[name][-1].text.rstrip("\n") in [c.rstrip("\n") for c in codes]
    spec = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "Val loss against training time" in
                           c.proto.spec))
    traces = {t["name"]: t for t in spec["data"]}
    for name in race.trainers:
        assert traces[name]["y"] == pytest.approx([m.val_loss for m in race.curves[name]])
    # each contender's loss with the steps it took to reach it, from the race's records, under and in the figure
    lines = " ".join(h.value for h in at.get("html"))
    labels = [a["text"] for a in spec["layout"]["annotations"]]
    for name in race.trainers:
        last = race.curves[name][-1]
        assert f"<b>{name}</b>: " in lines and f"val {last.val_loss:.3f} after {last.step:,} steps" in lines
        assert f"{last.val_loss:.3f} · {last.step:,} steps" in labels
    # the machine's load while the race ran, said when it was above the core count (else nothing is said)
    loads = [m.load for curve in race.curves.values() for m in curve]
    busy = max(loads) > (os.cpu_count() or 1)
    warnings = " ".join(w.value for w in at.warning)
    assert ("The machine was busy" in warnings) == busy
    if busy:
        assert f"load average reached {max(loads):.1f} on {os.cpu_count()} cores" in warnings
    assert runner.slots.busy == 0  # the slot is given back
    # the finished race keeps its models; Start is off until "New race"
    assert at.button(key=f"{race_ui.PAGE}_start").disabled
    assert not at.button(key=f"{race_ui.PAGE}_new").disabled


def test_the_raced_models_can_fill_the_pages_slots(short_race):
    at = open_page(PAGE, timeout=120)
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    runner = _runner(at)
    runner.join(120)
    at.run()
    gpt = runner.race.trainers["Transformer"]
    box = at.selectbox(key="hidden_state_source_Transformer")
    assert f"the race's Transformer, step {gpt.step:,}" in box.options
    box.set_value("race").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="hidden_state_source_LSTM").options[-1].startswith("the race's LSTM")
    text = instant_shown(at, STEP)[1]  # the slots' headings, under the t slider (kit.instant)
    assert f"**Transformer** ({gpt.num_parameters:,} parameters, from the race)" in text


def test_pause_keeps_the_models_and_continue_finishes_the_race(short_race):
    at = open_page(PAGE, timeout=120)
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    runner = _runner(at)
    at.button(key=f"{race_ui.PAGE}_pause").click().run()
    assert not at.exception
    runner.join(60)
    assert runner.status == RaceStatus.PAUSED
    trainers = dict(runner.race.trainers)
    assert at.button(key=f"{race_ui.PAGE}_start").label == "Continue"
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    assert _runner(at) is runner
    runner.join(120)
    assert runner.status == RaceStatus.FINISHED
    assert runner.race.trainers == trainers  # the same models trained on
    at.run()
    assert not at.exception


def test_a_reload_takes_up_the_race_and_its_models_from_the_address(short_race):
    at = open_page(PAGE, timeout=120)
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    runner = _runner(at)
    token = runner.token
    assert token and token in str(at.query_params[race_ui.RACE_PARAM])  # the address names the race
    runner.join(120)
    reloaded = open_page(PAGE, timeout=120, query={race_ui.RACE_PARAM: token})  # a new session, the same address
    assert not reloaded.exception
    assert _runner(reloaded) is runner  # the same race, the same trained models
    assert "Finished at 1 s of training each" in page_text(reloaded)
    stranger = open_page(PAGE, timeout=120, query={race_ui.RACE_PARAM: "not-a-token"})
    assert not stranger.exception and race_ui.RUNNER not in stranger.session_state
    assert any("does not hold" in w.value for w in stranger.warning)


def test_a_race_let_go_by_new_race_is_never_taken_up_again_from_the_address(short_race):
    """New race lets the old race go: the address names the new one, and the old token, put back in the address
    (the browser's back button), is dropped without a word instead of bringing the old race back."""
    at = open_page(PAGE, timeout=120)
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    old = _runner(at)
    old.join(120)
    at.run()  # the finished race offers New race
    at.button(key=f"{race_ui.PAGE}_new").click().run()
    new = _runner(at)
    assert new is not old and new.token in str(at.query_params[race_ui.RACE_PARAM])
    new.join(120)
    at.query_params[race_ui.RACE_PARAM] = old.token
    at.run()
    assert not at.exception and _runner(at) is new
    address = str(at.query_params[race_ui.RACE_PARAM])
    assert new.token in address and old.token not in address  # the stale token dropped, the new one named
    assert not any("does not hold" in w.value for w in at.warning)


def test_a_new_session_draws_the_section_without_a_race():
    at = open_page(PAGE, timeout=120)
    assert not at.exception
    assert race_ui.RUNNER not in at.session_state
    assert "Press **Start race**" in page_text(at)


def test_the_intro_gives_each_contenders_parameters_counted_from_its_model():
    """973,927 for the LSTM to 233,191 for the GPT on english-docs (V = 103): the counts of the models the
    presets build, here built for real (not on the meta device) and summed."""
    from rnnviz.charlm.corpus import load_builtin
    from rnnviz.charlm.presets import ALL_PRESETS
    from rnnviz.core.charmodel import build_model

    at = open_page(PAGE, timeout=120)
    text = page_text(at)
    vocab_size = load_builtin("english-docs").vocab.size
    counts = {}
    for label, preset in {**race_ui.CONTENDERS, **race_ui.OPTIONAL}.items():
        model = build_model(ALL_PRESETS[preset].config.model_config(vocab_size))
        counts[label] = sum(p.numel() for p in model.parameters())
    assert f"(V = {vocab_size} characters) the LSTM has **{counts['LSTM']:,} parameters** to the GPT's " \
           f"**{counts['Transformer']:,}**" in text
    assert f"{counts['minGRU']:,} parameters, trained by a parallel scan" in text


def test_the_load_note_speaks_only_above_the_core_count():
    assert race_ui.load_note([], 2) is None
    assert race_ui.load_note([1.2, 2.0], 2) is None  # two cores both busy is not overloaded
    note = race_ui.load_note([1.2, 10.26, 3.0], 2)
    assert "load average reached 10.3 on 2 cores" in note and "step count" in note


def test_the_figure_draws_what_the_engine_recorded():
    from rnnviz.serving.race import Mark

    curves = {"LSTM": [Mark("LSTM", 5.0, 5.03, 120, 2.1, 1000), Mark("LSTM", 10.0, 10.01, 250, 1.9, 1000)],
              "Transformer": [Mark("Transformer", 5.0, 5.05, 80, 2.4, 1000)]}
    fig = race_figure(curves, 10.0, 65, reference=(1.906, "nanoGPT"))
    lstm, gpt = fig.data
    assert list(lstm.x) == [5.03, 10.01] and list(lstm.y) == [2.1, 1.9] and list(lstm.customdata) == [120, 250]
    assert list(gpt.y) == [2.4]
    labels = [a.text for a in fig.layout.annotations]
    assert "1.900 · 250 steps" in labels and "2.400 · 80 steps" in labels and any("ln V = 4.17" in t for t in labels)


def test_end_labels_of_close_losses_do_not_overlap():
    """Two races ended at 1.653 and 1.655: the two end labels are moved apart by at least a line of text, each
    still joined to its own curve's end, and a label far from the others stays at its curve's end."""
    from rnnviz.figures import FONT_SIZE
    from rnnviz.serving.race import Mark

    curves = {"LSTM": [Mark("LSTM", 20.0, 20.01, 98, 1.653, 1000)],
              "Transformer": [Mark("Transformer", 20.0, 20.02, 310, 1.655, 1000)],
              "minGRU": [Mark("minGRU", 20.0, 20.03, 40, 2.9, 1000)]}
    height = 380
    fig = race_figure(curves, 20.0, 65, height=height)
    ends = {a.text.split(" ")[0]: a for a in fig.layout.annotations if a.text[:5] in ("1.653", "1.655", "2.900")}
    span = fig.layout.yaxis.range[1]
    plot_px = height - fig.layout.margin.t - fig.layout.margin.b
    # where each label's text sits, in pixels up from the axis: its point, moved by its offset (ay points down)
    centres = {loss: a.y / span * plot_px - (a.ay or 0) for loss, a in ends.items()}
    assert [ends[loss].y for loss in ("1.653", "1.655", "2.900")] == [1.653, 1.655, 2.9]  # at its curve's end
    assert centres["1.655"] - centres["1.653"] >= FONT_SIZE  # apart by a line, the higher loss above
    assert abs(centres["2.900"] - 2.9 / span * plot_px) < 1  # alone: not moved
    assert [ends[loss].text for loss in ("1.653", "1.655")] == ["1.653 · 98 steps", "1.655 · 310 steps"]
