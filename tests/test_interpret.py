"""Hidden-cell explorer engine: feature tracks by hand, the fast trace against the trace path, ranking on a
model wired to copy a feature, thresholds by brute force, pattern search on constructed activations, ablation
against a step-by-step run with the unit's state zeroed, and the coloured HTML's escaping."""

import copy
import html
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.sample import Intervention, generate
from rnnviz.core.cells import lstm_cell
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.interpret.colortext import Scale, colored_text_html, rgb, scale_for
from rnnviz.interpret.finder import (
    QUANTITIES,
    CellId,
    ablated_model,
    ablation_importance,
    best_thresholds,
    cell_correlations,
    correlations,
    match_ranges,
    pattern_cells,
    rank_cells,
    trace_cells,
)
from rnnviz.interpret.textfeatures import feature_tracks, showcase_window


def digits(track) -> str:
    return "".join(str(int(v)) for v in track)


# --- feature tracks --------------------------------------------------------------------------------------

CODE = 'x = "a(b"  # c)\nif (y[0]):\n    z = \'\'\'q\n"r\'\'\'\n'
#       x = "a(b"  # c)\n
#       if (y[0]):\n
#           z = '''q\n
#       "r'''\n


def test_code_tracks_strings_comments_brackets_and_indentation_exactly():
    tracks = feature_tracks(CODE, "code")
    # The string's opening quote counts as inside, its closing quote as outside; the ( inside it is ignored.
    assert digits(tracks["string"]) == "0000111100000000" + "00000000000" + "0000000011111" + "110000"
    # The comment runs from # to the line end; its ")" does not close a bracket.
    assert digits(tracks["comment"]) == "0000000000011110" + "0" * 11 + "0" * 13 + "0" * 6
    assert digits(tracks["bracket_depth"]) == "0" * 16 + "00011221000" + "0" * 13 + "0" * 6
    # Indentation counts the leading spaces read so far, and restarts at each newline.
    assert digits(tracks["indent"]) == "0" * 16 + "0" * 11 + "1234" + "4" * 8 + "0" + "0" * 6
    assert tracks["line_position"][:17].tolist() == list(range(1, 16)) + [0, 1]


def test_prose_quotes_brackets_case_digits_and_word_starts():
    text = 'He said "hi (there)" and.\n\n"Open\n\nNo \u201cx\u201d 2'
    tracks = feature_tracks(text, "prose")
    assert "comment" not in tracks
    # A blank line closes a quote left open; curly quotes open and close.
    assert digits(tracks["string"]) == "00000000" + "11111111111" + "0" + "00000" + "00" + "111111" + "0" + "00011000"
    assert digits(tracks["bracket_depth"]) == "0" * 12 + "1" * 6 + "0" * 24
    assert digits(tracks["uppercase"]) == "1" + "0" * 27 + "1" + "0" * 5 + "1" + "0" * 7
    assert digits(tracks["digit"]) == "0" * (len(text) - 1) + "1"
    assert digits(tracks["word_start"]).startswith("1001000001")


def test_unbalanced_closing_brackets_stay_at_zero_and_the_showcase_finds_the_busy_window():
    tracks = feature_tracks("))(a)", "prose")
    assert digits(tracks["bracket_depth"]) == "00110"
    track = np.zeros(100)
    track[60:70] = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
    start = showcase_window(track, 10)
    assert 55 <= start <= 60


# --- trace -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_fast_trace_equals_the_trace_path(kind):
    model = CharModel(ModelConfig(vocab_size=11, kind=kind, layers=2, hidden=9, embed_dim=5))
    ids = torch.randint(0, 11, (60,))
    fast = trace_cells(model, ids)
    _, slow = model.trace(ids.view(1, -1))
    for q, name in enumerate(QUANTITIES[kind]):
        np.testing.assert_allclose(fast.values[q], slow[name][:, :, 0].detach().numpy(), atol=2e-6)
    probs = torch.softmax(model.head(slow.output[0]), dim=-1)
    np.testing.assert_allclose(fast.next_probs, torch.topk(probs, 5).values.detach().numpy(), atol=2e-6)
    assert not fast.values.flags.writeable


# --- ranking ---------------------------------------------------------------------------------------------


def wired_counter_model(vocab: Vocab, unit: int = 3, hidden: int = 6) -> CharModel:
    """A ReLU RNN with one-hot inputs whose unit ``unit`` counts open brackets: h_t = relu(h_{t−1} ± 1)."""
    model = CharModel(ModelConfig(vocab_size=vocab.size, kind="rnn", hidden=hidden, embedding=False,
                                  nonlinearity="relu"))
    with torch.no_grad():
        model.rnn.weight_ih_l0.mul_(0.3)
        model.rnn.weight_hh_l0.mul_(0.3)
        model.rnn.weight_ih_l0[unit] = 0.0
        model.rnn.weight_hh_l0[unit] = 0.0
        model.rnn.weight_hh_l0[:, unit] = 0.0  # the counter's value stays unmixed into the other units' input
        model.rnn.bias_ih_l0[unit] = 0.0
        model.rnn.bias_hh_l0[unit] = 0.0
        model.rnn.weight_hh_l0[unit, unit] = 1.0
        for ch in "([{":
            model.rnn.weight_ih_l0[unit, vocab.chars.index(ch)] = 1.0
        for ch in ")]}":
            model.rnn.weight_ih_l0[unit, vocab.chars.index(ch)] = -1.0
    return model


def test_ranking_finds_the_unit_wired_to_count_brackets_first():
    text = "f(a[b(c)]d) + {x: (y, [z])} (((q))) " * 6
    vocab = Vocab.from_text(text)
    model = wired_counter_model(vocab, unit=3)
    trace = trace_cells(model, vocab.encode(text))
    tracks = feature_tracks(text, "prose")
    np.testing.assert_allclose(trace.cell(CellId(0, 3, "h")), tracks["bracket_depth"], atol=1e-6)
    rankings = rank_cells(trace, tracks)
    best = rankings["bracket_depth"].best
    assert best.cell == CellId(0, 3, "h")
    assert best.r == pytest.approx(1.0, abs=1e-5)
    assert abs(rankings["bracket_depth"].by_correlation[1].r) < 0.99
    assert rankings["bracket_depth"].clearest == best  # it tracks depth more than any other feature


def test_correlations_match_numpy_corrcoef():
    model = CharModel(ModelConfig(vocab_size=7, kind="gru", layers=2, hidden=5, embed_dim=4))
    text = "abcab cba\nab(c)" * 5
    vocab = Vocab.from_text(text)
    trace = trace_cells(model, vocab.encode(text))
    tracks = feature_tracks(text, "prose")
    r = correlations(trace, tracks)  # (Q, L, H, F)
    for q, layer, unit, (j, name) in [(0, 1, 4, (3, "line_position")), (2, 0, 1, (1, "bracket_depth"))]:
        expected = np.corrcoef(trace.values[q, layer, :, unit], tracks[name])[0, 1]
        assert r[q, layer, unit, j] == pytest.approx(expected, abs=1e-5)
        assert list(tracks)[j] == name
    cell = CellId(1, 2, "z")
    assert cell_correlations(trace.cell(cell), tracks)["line_position"] == pytest.approx(
        np.corrcoef(trace.cell(cell), tracks["line_position"])[0, 1], abs=1e-9)
    assert r[:, :, :, list(tracks).index("digit")].max() == 0.0  # no digit in the text: r is 0, not nan


def test_best_threshold_by_hand_and_by_brute_force():
    accuracy, theta, above = best_thresholds(np.array([[0.1, 0.4, 0.35, 0.8]]), np.array([0, 1, 0, 1]))
    assert (accuracy[0], theta[0], above[0]) == (pytest.approx(1.0), pytest.approx(0.375), True)
    accuracy, theta, above = best_thresholds(np.array([[0.9, 0.2, 0.8, 0.1]]), np.array([0, 1, 0, 1]))
    assert accuracy[0] == pytest.approx(1.0) and not above[0] and 0.2 < theta[0] < 0.8
    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=(6, 40)), 1)  # rounded: ties are common
    labels = (rng.random(40) < 0.3).astype(float)
    accuracy, theta, above = best_thresholds(values, labels)
    for k in range(6):
        cuts = np.concatenate([[values[k].min() - 1], np.unique(values[k])])
        brute = max(max(np.mean((values[k] > c) == labels), np.mean((values[k] <= c) == labels)) for c in cuts)
        assert accuracy[k] == pytest.approx(brute)
        rule = values[k] > theta[k] if above[k] else values[k] < theta[k]
        assert np.mean(rule == labels) == pytest.approx(accuracy[k])
        assert accuracy[k] >= max(labels.mean(), 1 - labels.mean())


# --- pattern search --------------------------------------------------------------------------------------


def constructed_block() -> np.ndarray:
    """12 steps × 4 units: unit 0 on only over [4, 7); unit 1 over [4, 7) and [9, 11); unit 2 always on."""
    block = np.full((12, 4), -0.5)
    block[4:7, 0] = 0.8
    block[4:7, 1] = 0.6
    block[9:11, 1] = 0.9
    block[:, 2] = 0.5
    return block


def test_pattern_cells_need_the_whole_range_on_and_the_padding_off():
    block = constructed_block()
    assert pattern_cells(block, 4, 7, threshold=0.3, pad_before=1, pad_after=1).tolist() == [0, 1]
    assert pattern_cells(block, 4, 7, threshold=0.3).tolist() == [0, 1, 2]  # no padding: always-on counts
    assert pattern_cells(block, 3, 7, threshold=0.3).tolist() == [2]  # step 3 is off for units 0 and 1
    assert pattern_cells(block, 4, 7, threshold=0.7).tolist() == [0]
    with pytest.raises(ValueError, match="range"):
        pattern_cells(block, 5, 5)


def test_match_ranges_find_the_other_place_and_score_the_share_of_cells_on():
    block = constructed_block()
    matches = match_ranges(block, [1], threshold=0.3, exclude=(4, 7))
    assert [(m.start, m.end) for m in matches] == [(9, 11)]
    assert matches[0].score == pytest.approx(0.5)  # units 1 and 2 are on there: 1 of 2 belongs to the selection
    assert match_ranges(block, [0, 1], threshold=0.3, exclude=(4, 7)) == []
    ranked = match_ranges(block, [2], threshold=0.3)
    assert len(ranked) == 1 and (ranked[0].start, ranked[0].end) == (0, 12)
    assert ranked[0].score == pytest.approx(np.mean([1 / 3] * 3 + [1] * 2 + [1 / 2] * 2 + [1] * 5))


# --- ablation --------------------------------------------------------------------------------------------


def logits_with_unit_zeroed(model: CharModel, ids: torch.Tensor, layer: int, unit: int) -> torch.Tensor:
    """Reference: step the LSTM through cells.py and set h_t[layer, unit] = 0 after every step."""
    rnn, config = model.rnn, model.config
    x_all = model.inputs(ids.view(1, -1))  # (1, T, D)
    h = [torch.zeros(1, config.hidden) for _ in range(config.layers)]
    c = [torch.zeros(1, config.hidden) for _ in range(config.layers)]
    out = []
    for t in range(ids.numel()):
        x = x_all[:, t]
        for k in range(config.layers):
            step = lstm_cell(x, (h[k], c[k]), rnn.layer_weights(k))
            h_k = step.h_t.clone()
            if k == layer:
                h_k[:, unit] = 0.0
            h[k], c[k] = h_k, step.c_t
            x = h_k
        out.append(model.head(x))
    return torch.cat(out)  # (T, V)


@pytest.mark.parametrize("layer", [0, 1])
def test_ablation_equals_zeroing_the_units_row_of_the_state(layer):
    model = CharModel(ModelConfig(vocab_size=9, kind="lstm", layers=2, hidden=7, embed_dim=4)).eval()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    ids = torch.randint(0, 9, (30,))
    with torch.no_grad():
        reference = logits_with_unit_zeroed(model, ids, layer, unit=2)
        ablated, _, _ = ablated_model(model, layer, 2)(ids.view(1, -1))
        untouched, _, _ = model(ids.view(1, -1))
    torch.testing.assert_close(ablated[0], reference, atol=1e-5, rtol=1e-5)
    assert (untouched[0] - reference).abs().max() > 1e-3  # the unit mattered: the test can tell
    after = model.state_dict()  # not in place: every parameter of every layer, and the readout, as it was
    assert list(after) == list(before)
    for name, value in before.items():
        assert torch.equal(after[name], value), f"ablated_model changed {name} of the model it copied"


def test_ablated_model_writes_what_sample_intervention_writes():
    text = "the cat sat on the mat; the dog sat on the log. " * 3
    vocab = Vocab.from_text(text)
    torch.manual_seed(1)
    model = CharModel(ModelConfig(vocab_size=vocab.size, layers=2, hidden=16, embed_dim=8)).eval()
    held = generate(model, vocab, "the ", 40, temperature=0, interventions=[Intervention(1, 5, 0.0)])
    assert generate(ablated_model(model, 1, 5), vocab, "the ", 40, temperature=0) == held


def logits_with_cell_zeroed(model: CharModel, ids: torch.Tensor, unit: int, quantity: str) -> torch.Tensor:
    """Reference for a one-layer LSTM: step through cells.py in a copy of the model and zero the unit's row of h_t
    after every step, or of c_t (then h_t = o_t ⊙ tanh(0) = 0 as well). (T, V)"""
    copy_ = copy.deepcopy(model)
    x_all = copy_.inputs(ids.view(1, -1))  # (1, T, D)
    h, c = torch.zeros(1, copy_.config.hidden), torch.zeros(1, copy_.config.hidden)
    out = []
    for t in range(ids.numel()):
        step = lstm_cell(x_all[:, t], (h, c), copy_.rnn.layer_weights(0))
        h, c = step.h_t.clone(), step.c_t.clone()
        if quantity == "c":
            c[:, unit] = 0.0
            h = step.o_t * torch.tanh(c)
        else:
            h[:, unit] = 0.0
        out.append(copy_.head(h))
    return torch.cat(out)


def test_importance_is_the_rise_in_loss_of_each_ablated_copy():
    text = "abcabcabd" * 40  # 359 predictions: one evaluation stream, the state carried throughout
    vocab = Vocab.from_text(text)
    torch.manual_seed(0)
    model = CharModel(ModelConfig(vocab_size=vocab.size, hidden=6, embed_dim=3)).eval()
    ids = vocab.encode(text)
    cells = [CellId(0, 1, "c"), CellId(0, 4, "h")]
    base, deltas = ablation_importance(model, ids, cells)
    with torch.no_grad():
        logits, _, _ = model(ids[:-1].view(1, -1))
        expected_base = F.cross_entropy(logits[0].double(), ids[1:]).item()
        assert base == pytest.approx(expected_base, rel=1e-6)
        for cell, delta in zip(cells, deltas):
            zeroed = logits_with_cell_zeroed(model, ids[:-1], cell.unit, cell.quantity)
            expected = F.cross_entropy(zeroed.double(), ids[1:]).item() - expected_base
            assert abs(expected) > 1e-3  # the cell matters to the loss, so a wrong delta shows
            assert delta == pytest.approx(expected, rel=1e-4, abs=1e-6)


# --- coloured text ---------------------------------------------------------------------------------------

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_coloured_text_escapes_every_character_and_keeps_whitespace_visible():
    text = XSS + ' "q"\n\tend'
    values = np.linspace(-1, 1, len(text))
    tips = [f"tip <b>{i}</b> \"x\"" for i in range(len(text))]
    out = colored_text_html(text, values, Scale(-1.0, 0.0, 1.0), tips)
    assert "<script" not in out and "<img" not in out and "<b>" not in out
    assert "\n" not in out  # one line of HTML: nothing for pre-wrap to turn into stray breaks
    glyphs = re.findall(r"<span style=\"[^\"]*\"(?: title=\"[^\"]*\")?>(.*?)</span>", out)
    assert "".join(html.unescape(g) for g in glyphs) == XSS.replace(" ", "·") + '·"q"↵→end'
    assert out.count("<br>") == 1
    styles = re.findall(r'style="([^"]*)"', out)
    assert all(re.fullmatch(r"[a-z\-]+:[a-zA-Z0-9(), .%\-]+(;[a-z\-]+:[a-zA-Z0-9(), .%\-]+)*", s) for s in styles[1:])
    assert f'title="{html.escape(tips[0], quote=True)}"' in out


def test_colour_scale_ends_and_centre():
    scale = Scale(0.0, 0.5, 1.0)
    assert scale.position(1.0) == 1.0 and scale.position(0.5) == 0.0 and scale.position(-3.0) == -1.0
    assert rgb(0.0) == (247, 247, 247) and rgb(1.0) == (178, 24, 43) and rgb(-1.0) == (33, 102, 172)
    assert scale_for("c", np.array([-3.0, 2.0, 1.0])) == Scale(-3.0, 0.0, 3.0)  # centred on 0, symmetric
    assert scale_for("f", np.array([0.2])) == Scale(0.0, 0.5, 1.0, sequential=True)


def test_explorer_figures_carry_the_numbers_they_are_given():
    from rnnviz.figures.explorer import heatmap_figure, importance_figure, pattern_lines_figure

    fig = importance_figure(["a", "b", "c"], [0.02, -0.001, 0.005], 1.25)
    assert list(fig.data[0].y) == ["b", "c", "a"] and list(fig.data[0].x) == [-0.001, 0.005, 0.02]
    assert fig.layout.xaxis.range[1] > 0.02 and fig.layout.xaxis.range[0] < -0.001
    assert "1.2500" in fig.layout.xaxis.title.text
    block = np.arange(12.0).reshape(4, 3) / 12
    heat = heatmap_figure(block, [2, 0], "ab\nc", 10, Scale(-1.0, 0.0, 1.0), "h", "by |r|")
    np.testing.assert_allclose(heat.data[0].z, np.round(block[:, [2, 0]].T, 4))
    assert list(heat.data[0].x) == [10, 11, 12, 13] and list(heat.data[0].y) == ["unit 2", "unit 0"]
    lines = pattern_lines_figure(block, [1], "ab\nc", 10, (11, 13), 0.3)
    np.testing.assert_allclose(lines.data[0].y, block[:, 1])
