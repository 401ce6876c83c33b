"""rnnviz.api, the Python API of the views, against the engine and figure functions it calls."""

import html
import inspect
import json.decoder
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import rnnviz
from rnnviz import api
from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.pretrained import MODELS_DIR, shipped_models
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.charmodel import CharModel
from rnnviz.figures.gates import saturation_bars_figure, saturation_histograms_figure
from rnnviz.figures.hidden_state import attention_table
from rnnviz.interpret import colortext, prediction_strip
from rnnviz.interpret.finder import CellId, rank_cells, trace_cells
from rnnviz.interpret.hidden_state import attention_at
from rnnviz.interpret.surprisal import predictions
from rnnviz.interpret.textfeatures import feature_tracks
from rnnviz.interpret.trajectory import nearest, project
from rnnviz.lessons.gates import gate_saturation

TEXT = inspect.getsource(json.decoder)[:800]  # held out: the python-stdlib corpus ends inside asyncio/
SPAN = re.compile(r'<span style="background:rgb(\([^)]*\));[^"]*" title="([^"]*)">([^<]*)</span>')


@pytest.fixture(scope="module")
def model() -> api.Model:
    return rnnviz.load("lstm-python-stdlib")


@pytest.fixture(scope="module")
def traced(model) -> api.Trace:
    return rnnviz.trace(model, TEXT)


def test_the_package_exposes_the_api_lazily_and_nothing_on_the_path_imports_streamlit():
    script = (
        "import sys, rnnviz\n"
        "assert 'torch' not in sys.modules and 'rnnviz.api' not in sys.modules, 'import rnnviz must stay light'\n"
        "import rnnviz.api\n"
        "assert rnnviz.load is rnnviz.api.load and rnnviz.trace is rnnviz.api.trace\n"
        "t = rnnviz.trace(rnnviz.load('lstm-python-stdlib'), 'def f(x):\\n    return [x, \"y\"]\\n')\n"
        "t.colour(0, 1); t.find(); t.predictions(); t.prediction_strip(); t.surprisal(); t.gates(); t.path()\n"
        "rnnviz.attention('transformer-english-docs', 'The cat sat.')\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'streamlit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        rnnviz.nothing_here  # noqa: B018
    assert {"load", "trace", "attention", "models"} <= set(dir(rnnviz))


def test_load_names_the_shipped_models_when_a_name_is_unknown():
    names = [m.file.removesuffix(".pt") for m in shipped_models()]
    assert rnnviz.models() == names and "lstm-python-stdlib" in names
    with pytest.raises(ValueError, match="neither a shipped model nor a file") as err:
        rnnviz.load("lstm-python-stdlb")
    assert all(name in str(err.value) for name in names)


def test_a_model_reads_in_words_and_samples_as_the_engine_does(model):
    assert repr(model) == "1 × 256 LSTM over 96 characters, trained on python-stdlib"
    assert model.name == "lstm-python-stdlib" and model.kind == "lstm" and not model.model.training
    assert model.sample("def ", 60, temperature=0.5, seed=3) == generate(
        model.model, model.vocab, "def ", 60, temperature=0.5, seed=3)


def test_load_takes_a_path_to_a_checkpoint(model):
    from_path = rnnviz.load(MODELS_DIR / "lstm-python-stdlib.pt")
    assert from_path.name == "lstm-python-stdlib" and from_path.vocab == model.vocab
    for name, tensor in model.model.state_dict().items():
        assert torch.equal(from_path.model.state_dict()[name], tensor)


def test_trace_is_the_engines_trace(model, traced):
    expected = trace_cells(model.model, model.vocab.encode(TEXT))
    np.testing.assert_array_equal(traced.cells.values, expected.values)
    np.testing.assert_array_equal(traced.cells.next_ids, expected.next_ids)
    assert traced.text == TEXT and traced.syntax == "code" and traced.dropped == ()
    np.testing.assert_array_equal(traced.values(0, 12, "c"), expected.cell(CellId(0, 12, "c")))


def test_unknown_characters_are_named_or_dropped(model):
    with pytest.raises(ValueError, match="'é'"):
        rnnviz.trace(model, "x = 'café'\n")
    dropped = rnnviz.trace(model, "x = 'café€'\n", drop_unknown=True)
    assert dropped.text == "x = 'caf'\n" and dropped.dropped == ("é", "€")
    with pytest.raises(ValueError, match="empty"):
        rnnviz.trace(model, "é", drop_unknown=True)


def test_colour_holds_colortexts_colours_and_the_explorers_tooltips(model, traced):
    start, end = 100, 400
    html_ = traced.colour(0, 12, "c", start=start, end=end)
    values = traced.cells.cell(CellId(0, 12, "c"))
    scale = colortext.scale_for("c", values)
    spans = SPAN.findall(str(html_))
    assert len(spans) == end - start
    next_chars = [[model.vocab.chars[i] for i in row] for row in traced.cells.next_ids[start:end]]
    tips = colortext.cell_tooltips(TEXT[start:end], values[start:end], "c", next_chars,
                                   traced.cells.next_probs[start:end], offset=start)
    for t, (background, title, glyph) in enumerate(spans):
        assert background == str(scale.colour(float(values[start + t])))
        assert html.unescape(title) == tips[t]
        assert html.unescape(glyph) == colortext.visible_char(TEXT[start + t])
    assert str(html_).startswith(colortext.legend_html(scale, "layer 0, unit 12, c", observed=(
        float(values.min()), float(values.max())))[:40])
    assert html_.data == str(html_) == html_._repr_html_()
    with pytest.raises(ValueError, match="no quantity 'z'"):
        traced.colour(0, 1, "z")
    with pytest.raises(ValueError, match="outside"):
        traced.colour(0, 256)


def test_find_is_rank_cells(traced):
    rankings = rank_cells(traced.cells, feature_tracks(TEXT, "code"))
    found = traced.find()
    for name, ranking in rankings.items():
        rows = found[found.feature == name]
        assert [(r.layer, r.unit, r.quantity) for r in rows.itertuples()] == [
            (c.cell.layer, c.cell.unit, c.cell.quantity) for c in ranking.by_correlation]
        assert rows.r.tolist() == [c.r for c in ranking.by_correlation]
        assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
    by_accuracy = traced.find("string", by="accuracy")
    assert set(by_accuracy.feature) == {"string"}
    assert by_accuracy.accuracy.tolist() == [c.accuracy for c in rankings["string"].by_accuracy]
    prose = traced.find(syntax="prose")
    assert "comment" not in set(prose.feature)
    with pytest.raises(ValueError, match="no feature 'strings'"):
        traced.find("strings")


def test_predictions_are_the_engines(model, traced):
    expected = predictions(model.model, model.vocab.encode(TEXT))
    table = traced.predictions()
    np.testing.assert_array_equal(table.surprisal, expected.surprisal[1:])
    np.testing.assert_array_equal(table["rank"], expected.rank[1:])
    assert table["guess 1"].tolist() == [model.vocab.chars[i] for i in expected.guess_ids[1:, 0]]
    assert table.character.tolist() == list(TEXT[1:])
    assert traced.loss() == pytest.approx(expected.loss())
    strip = traced.prediction_strip(10, 60)
    assert strip.data == prediction_strip.legends_html(expected.surprisal[10:60]) + prediction_strip.strip_html(
        TEXT, expected, model.vocab.chars, 10, 60)
    assert strip.data.count('<div title="position ') == 50
    assert traced.prediction_strip().data.count('<div title="position ') == api.STRIP_CHARS


def test_gates_are_the_lstm_gates_pages_figures(model, traced):
    stats = gate_saturation(model.model, model.vocab.encode(TEXT))
    assert traced.gates().to_plotly_json() == saturation_bars_figure(stats).to_plotly_json()
    assert traced.gates(histograms=True).to_plotly_json() == saturation_histograms_figure(stats).to_plotly_json()


def test_gates_need_an_lstm():
    config = TrainConfig(kind="gru", hidden=8)
    vocab = Vocab(" ab")
    gru = api.Model(CharModel(config.model_config(len(vocab))), vocab, config, "tiny-gru", "toy")
    traced = rnnviz.trace(gru, "ab ba ab")
    assert traced.cells.quantities == ("h", "r", "z", "n")
    traced.colour(0, 3, "z")
    with pytest.raises(ValueError, match="needs an LSTM"):
        traced.gates()


def test_path_is_the_projection_of_the_states(traced):
    states = traced.cells.block(0, "h")[50:450]
    figure = traced.path(start=50, end=450, at=200, feature="bracket_depth")
    points = next(trace for trace in figure.data if trace.name == "characters")
    np.testing.assert_allclose(points.x, project(states).coords[:, 0])
    np.testing.assert_array_equal(points.customdata, np.arange(50, 450))
    near = next(trace for trace in figure.data if trace.name.startswith("nearest"))
    assert list(near.customdata) == [50 + p for p in nearest(states, 150, api.PATH_NEIGHBOURS, api.PATH_EXCLUDE)]
    with pytest.raises(ValueError, match='"h" or "c"'):
        traced.path(quantity="f")


def test_a_transformer_has_predictions_and_attention_but_no_cells():
    transformer = rnnviz.load("transformer-english-docs")
    text = "The model reads every character of this sentence."
    traced = rnnviz.trace(transformer, text)
    assert traced.cells is None and traced.syntax == "prose"
    assert len(traced.predictions()) == len(text) - 1
    with pytest.raises(ValueError, match="no recurrent cells"):
        traced.colour(0, 1)
    start, weights = attention_at(transformer.model, transformer.vocab.encode(text), 20)
    assert rnnviz.attention(transformer, text, t=20).data == attention_table(weights, text, start)
    assert "layer 2 head 4" in rnnviz.attention(transformer, text).data
    with pytest.raises(ValueError, match="needs a Transformer"):
        rnnviz.attention("lstm-python-stdlib", text)


def test_load_reads_a_plain_state_dict_with_a_json_vocabulary(tmp_path):
    config = TrainConfig(kind="gru", hidden=8)
    network = CharModel(config.model_config(3))
    torch.save(network.state_dict(), tmp_path / "weights.pt")
    (tmp_path / "vocab.json").write_text('[" ", "a", "b"]', encoding="utf-8")
    loaded = rnnviz.load(tmp_path / "weights.pt", vocab=tmp_path / "vocab.json")
    assert repr(loaded).startswith("1 × 8 GRU over 3 characters") and loaded.name == "weights" and loaded.report
    for name, tensor in network.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor)
    rnnviz.trace(loaded, "ab ba").colour(0, 7, "r")
