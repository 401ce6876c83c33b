"""The hidden-cell explorer page in AppTest: it opens on the shipped Python model with an interpretable cell,
its numbers equal the engine's, a ranked cell's button recolours the text, and bad input gets words."""

import html
import json
import re

import numpy as np
import pytest

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.sample import Intervention, generate
from rnnviz.interpret import colortext
from rnnviz.interpret.finder import CellId, trace_cells
from rnnviz.interpret.textfeatures import FEATURES, feature_tracks
from rnnviz.ui.hidden_cell_explorer.sections import short_label
from rnnviz.ui.kit.models import PRETRAINED_DIR, held_out_text
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/hidden_cell_explorer.py"
MODEL = PRETRAINED_DIR / "lstm-python-stdlib.pt"
XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


@pytest.fixture(scope="module")
def opened():
    at = open_page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def engine():
    """The same passage and trace computed here, outside the page."""
    checkpoint = load_checkpoint(MODEL)
    text = held_out_text(load_builtin("python-stdlib"), 10_000)
    return checkpoint, text, trace_cells(checkpoint.model, checkpoint.vocab.encode(text)), feature_tracks(text, "code")


def chosen_cell(at) -> CellId:
    state = at.session_state
    return CellId(int(state["explorer_layer"]), int(state["explorer_unit"]), state["explorer_quantity"])


def colouring(at) -> str:
    """The main coloured passage: where the window slides in the browser (a text longer than it), the words over it
    and each of its characters' glyph, colour and tooltip as the page sent them; else the HTML of the page's first
    st.html that draws something (legend and text; the app's own style blocks come before it)."""
    windows = [el for el in at.get("bidi_component") if el.proto.id.endswith("-explorer_window_instant")]
    if not windows:
        return drawn_html(at)[0]
    data = json.loads(windows[0].proto.json)
    (block,) = data["views"][data["index"]]
    chars = data["shared"][block["coloured"]]
    return "\n".join([block["label"], *(chars["glyphs"][t] + chars["palette"][chars["background"][t]] + chars["tips"][t]
                                         for t in range(block["start"], block["end"]))])


def drawn_html(at) -> list[str]:
    """The page's st.html blocks that draw something (the app's own style and script blocks left out)."""
    return [h.value for h in at.html if not h.value.lstrip().startswith(("<style>", "<script>"))]


def replayed(at) -> str:
    """The colouring of section 5, "Watch a cell emerge" (its legend names the snapshot's step)."""
    return next(h for h in drawn_html(at) if "training steps" in h)


def test_opens_on_the_python_model_with_a_cell_that_tracks_indentation_or_quotes(opened, engine):
    at = opened
    _, text, trace, tracks = engine
    assert at.session_state["explorer_source"] == "pretrained:lstm-python-stdlib"
    feature = at.session_state["explorer_feature"]
    assert feature in ("indent", "string")
    cell = chosen_cell(at)
    r = np.corrcoef(trace.cell(cell), tracks[feature])[0, 1]
    assert abs(r) >= 0.5, f"{cell.label} tracks {feature} only with r = {r:.3f}"
    others = [abs(np.corrcoef(trace.cell(cell), tracks[f])[0, 1]) for f in tracks if f != feature]
    assert abs(r) > max(others), "the opening cell tracks its feature more than any other feature"
    shown = page_text(at)
    assert f"**{cell.label}**: correlation with each feature" in shown
    assert f"{FEATURES[feature].label} r = {r:+.2f}" in shown
    # The finder's list is the engine's ranking: its first row prints the top cell's r.
    all_r = {(q, unit): np.corrcoef(trace.block(0, q)[:, unit], tracks[feature])[0, 1]
             for q in trace.quantities for unit in range(trace.hidden)}
    (q_top, unit_top), r_top = max(all_r.items(), key=lambda item: abs(np.nan_to_num(item[1])))
    assert f"**1. layer 0, unit {unit_top}, {q_top}**  \nr = {r_top:+.3f}" in shown
    table = next(frame.value for frame in at.dataframe if "feature" in frame.value.columns)
    row = table[table["feature"] == short_label(feature)].iloc[0]
    assert row["r"] == pytest.approx(r_top, abs=1e-3)
    assert row["clearest cell"] == f"{cell.label}: r = {r:+.3f}"
    # The colouring is of that cell over the window where the feature varies most; hovering a character shows
    # its exact value.
    start = at.session_state["explorer_window"]
    assert f"characters {start:,}–{start + 1999:,}" in colouring(at)
    assert f"position {start}: " in colouring(at)
    assert f"{cell.quantity} = {trace.cell(cell)[start]:+.4f}" in colouring(at)


def test_the_colouring_is_also_a_table_of_the_engines_values_with_downloads(opened, engine):
    """For a screen reader (and a spreadsheet): the coloured window's characters and values as a table, the CSV
    and the coloured HTML a download away."""
    at = opened
    checkpoint, text, trace, _ = engine
    cell, start = chosen_cell(at), at.session_state["explorer_window"]
    table = next(frame.value for frame in at.dataframe if "position" in frame.value.columns)
    assert list(table["position"]) == list(range(start, start + 2000))
    assert table["character"].iloc[0] == colortext.describe_char(text[start])
    np.testing.assert_allclose(table[cell.label].to_numpy(), trace.cell(cell)[start:start + 2000], rtol=0, atol=1e-6)
    first_guess = checkpoint.vocab.chars[int(trace.next_ids[start][0])]
    assert table["top guess for the next character"].iloc[0] == colortext.describe_char(first_guess)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the table (CSV)" in labels and "Download the coloured text (HTML)" in labels


def test_the_rankings_empty_cells_read_as_a_dash_not_none(opened):
    """A feature that is a count (indentation, line position) has no threshold to score: its accuracy and guessing
    cells are empty, and the table draws them as "—" rather than Streamlit's grey "None"."""
    at = opened
    frame = next(f for f in at.dataframe if "feature" in f.value.columns)
    counts = [short_label(name) for name, feature in FEATURES.items() if not feature.binary]
    rows = frame.value[frame.value["feature"].isin(counts)]
    assert len(rows) > 0 and rows["threshold accuracy"].isna().all() and rows["guessing"].isna().all()
    assert frame.proto.placeholder == "—"


def test_selecting_a_top_ranked_cell_changes_the_colouring(opened):
    at = opened
    before_cell, before_html = chosen_cell(at), colouring(at)
    rows = re.findall(r"\*\*(\d+)\. (layer \d+, unit \d+, \w+)\*\*", page_text(at))
    rank, label = next((int(n), lab) for n, lab in rows if lab != before_cell.label)
    at.button(key=f"explorer_show_{rank}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert chosen_cell(at).label == label
    assert colouring(at) != before_html
    assert f"**{label}**: correlation with each feature" in page_text(at)


def test_an_empty_pattern_range_gives_a_clear_warning(opened):
    at = opened
    start = at.slider(key="explorer_range").value[0]
    at.slider(key="explorer_range").set_value((start, start)).run()
    assert not at.exception
    assert any("The selected range is empty" in w.value for w in at.warning)
    at.radio(key="explorer_pattern_mode").set_value("substring").run()
    at.text_input(key="explorer_substring").set_value("zzqqzz-not-there").run()
    assert any("does not" in w.value for w in at.warning)


def test_the_samples_shown_are_the_engines(opened, engine):
    at = opened
    checkpoint = engine[0]
    cell = chosen_cell(at)
    prime = at.text_area(key="explorer_prime").value
    on = at.radio(key="explorer_iv_on").value
    expected = generate(checkpoint.model, checkpoint.vocab, prime, 300, temperature=0.7, seed=0)
    held = generate(checkpoint.model, checkpoint.vocab, prime, 300, temperature=0.7, seed=0,
                    interventions=[Intervention(cell.layer, cell.unit, 0.0, on)])
    shown = [c.value for c in at.code]
    assert prime + expected in shown and prime + held in shown


def test_own_text_is_shown_as_literal_characters(opened):
    at = opened
    at.radio(key="explorer_text_mode").set_value("own").run()
    at.text_area(key="explorer_own_text").set_value(f"x = '{XSS}'\nprint(x)\n").run()
    assert not at.exception, [e.value for e in at.exception]
    body = colouring(at)
    assert "<script" not in body and "<img" not in body
    glyphs = re.findall(r'<span style="[^"]*" title="[^"]*">(.*?)</span>', body)
    assert XSS.replace(" ", "·") in "".join(html.unescape(g) for g in glyphs)  # one escaped span per character


def test_too_short_own_text_gets_a_warning(opened):
    at = opened
    at.radio(key="explorer_text_mode").set_value("own").run()  # also when no test before chose it
    at.text_area(key="explorer_own_text").set_value("x = 1").run()
    assert any("at least 20 characters" in w.value for w in at.warning)


def test_the_link_restores_the_model_and_the_cell():
    at = open_page(PAGE, query={"model": "pretrained:lstm-python-stdlib", "layer": "0", "unit": "7", "q": "h"})
    assert not at.exception
    assert chosen_cell(at) == CellId(0, 7, "h")
    assert "**layer 0, unit 7, h**: correlation" in page_text(at)
    assert at.query_params["unit"] == ["7"] or at.query_params["unit"] == "7"


@pytest.fixture(scope="module")
def live_run():
    """A tiny live run, trained 6 steps with a snapshot every 2, as the live-training page keeps it."""
    from rnnviz.charlm.corpus import corpus_from_user_text
    from rnnviz.charlm.train import TrainConfig
    from rnnviz.serving.live import LiveRun, LiveSettings

    code = "".join(f"def f{i}(a, b=[1, (2, {i})]):\n    return {{'k': (a + b[0]) * {i}}}\n\n" for i in range(300))
    corpus = corpus_from_user_text(code, name="brackets.py")
    run = LiveRun.create(TrainConfig(hidden=16, embed_dim=8, batch=4, seq_len=32, device="cpu"), corpus,
                         LiveSettings(step_budget=6, snapshot_every=2, sample_every=100, eval_chars=500))
    run.advance(60.0)
    assert [step for step, _ in run.snapshots] == [0, 2, 4, 6]
    return run


def test_three_clicks_from_a_live_model_to_its_bracket_cell_and_its_snapshots(live_run):
    from streamlit.testing.v1 import AppTest

    from rnnviz.interpret.finder import rank_cells
    from rnnviz.ui.kit.models import LIVE_RUN_KEY
    from tests.apptest_helpers import APP, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[LIVE_RUN_KEY] = live_run
    at.run()
    at.switch_page(PAGE).run()
    at.selectbox(key="explorer_source").set_value("live").run()  # click 1: the model I trained
    at.selectbox(key="explorer_feature").set_value("bracket_depth").run()  # click 2: the feature
    at.button(key="explorer_show_1").click().run()  # click 3: its top cell
    assert not at.exception, [e.value for e in at.exception]
    trainer = live_run.trainer
    text = held_out_text(trainer.corpus, 10_000)
    trace = trace_cells(trainer.model, trainer.vocab.encode(text))
    best = rank_cells(trace, feature_tracks(text, "code"))["bracket_depth"].best
    assert chosen_cell(at) == best.cell
    assert f"**1. {best.cell.label}**  \nr = {best.r:+.3f}" in page_text(at)
    # Watch it emerge: the replay colours the passage with the weights of each snapshot.
    replay = at.select_slider(key="explorer_snapshot_step")
    assert list(replay.options) == ["0", "2", "4", "6"]
    replay.set_value(0).run()
    first = replayed(at)
    assert "after 0 training steps" in first
    at.select_slider(key="explorer_snapshot_step").set_value(6).run()
    assert replayed(at) != first and "after 6 training steps" in replayed(at)


def test_importance_bars_are_the_engines_ablation_losses(opened, engine):
    import json

    from rnnviz.interpret.finder import ablation_importance

    at = opened
    at.radio(key="explorer_text_mode").set_value("corpus").run()
    at.button(key="explorer_importance_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    figures = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    figure = next(f for f in figures if "no ablation" in f["layout"]["xaxis"]["title"]["text"])
    bars = figure["data"][0]
    shown = dict(zip(bars["y"], bars["x"]))
    rows = re.findall(r"\*\*(\d+)\. layer (\d+), unit (\d+), (\w+)\*\*", page_text(at))
    cells = list(dict.fromkeys(CellId(int(layer), int(unit), q) for _, layer, unit, q in rows))
    checkpoint = engine[0]
    held_out = held_out_text(load_builtin("python-stdlib"), 30_000)
    assert sorted(shown) == sorted(c.label for c in cells)
    base, deltas = ablation_importance(checkpoint.model, checkpoint.vocab.encode(held_out), cells[:3])
    assert f"no ablation: {base:.4f}" in figure["layout"]["xaxis"]["title"]["text"]
    for cell, delta in zip(cells[:3], deltas):  # three of the ten bars, recomputed here, are enough
        assert shown[cell.label] == pytest.approx(delta, abs=1e-6)


def test_an_uploaded_checkpoint_is_checked_and_explored():
    at = open_page(PAGE)
    junk = ("model.pt", b"not a checkpoint", "application/octet-stream")
    at.file_uploader(key="explorer_upload").set_value(junk).run()
    assert not at.exception
    assert any("not a PyTorch checkpoint" in e.value for e in at.error)
    english = (PRETRAINED_DIR / "lstm-english-docs.pt").read_bytes()
    at.file_uploader(key="explorer_upload").set_value(("english.pt", english, "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "uploaded"
    assert at.selectbox(key="explorer_syntax").value == "prose"
    assert "held-out 10% of english-docs" in page_text(at)


def test_the_replay_of_a_run_that_grew_says_when_a_new_unit_did_not_exist_yet():
    """Issue 37's default widens during its run: its snapshots before the widening are narrow. A unit the widening
    added has nothing to replay at those steps, and the page says so; at later steps it is coloured."""
    from streamlit.testing.v1 import AppTest

    from rnnviz.charlm.corpus import corpus_from_user_text
    from rnnviz.charlm.train import TrainConfig
    from rnnviz.serving.live import LiveRun, LiveSettings
    from rnnviz.ui.kit.models import LIVE_RUN_KEY
    from tests.apptest_helpers import APP, TIMEOUT

    text = "".join(f"def f{i}(a, b=[1, (2, {i})]):\n    return a\n\n" for i in range(200))
    run = LiveRun.create(TrainConfig(hidden=16, embed_dim=8, batch=4, seq_len=32, device="cpu", grow_from=8,
                                     grow_at=4), corpus_from_user_text(text, name="grows.py"),
                         LiveSettings(step_budget=6, snapshot_every=2, sample_every=100, eval_chars=500))
    run.advance(60.0)
    assert [(step, w["head.weight"].shape[1]) for step, w in run.snapshots] == [(0, 8), (2, 8), (4, 16), (6, 16)]
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[LIVE_RUN_KEY] = run
    at.run()
    at.switch_page(PAGE).run()
    at.selectbox(key="explorer_source").set_value("live").run()
    at.number_input(key="explorer_unit").set_value(12).run()
    at.select_slider(key="explorer_snapshot_step").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Unit 12 did not exist yet after 2 steps" in page_text(at) and "by step 4" in page_text(at)
    at.select_slider(key="explorer_snapshot_step").set_value(6).run()
    assert "after 6 training steps" in replayed(at) and "did not exist yet" not in page_text(at)
