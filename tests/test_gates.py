"""LSTM gates: the one-number trace, the stacked W against nn.LSTM, saturation from the trace path, the page."""

import math

import pytest
import torch
from torch import nn

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.cells import CellWeights, lstm_cell
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.lessons import gates
from rnnviz.ui.kit.models import held_out_text
from tests.apptest_helpers import open_page, page_text

# --- One number through the gates ---------------------------------------------------------------------------


def test_the_classroom_trace():
    """0.8 with f = 0.5, i = 1, g = 0.2, o = 1 gives c = 0.6 and h = tanh(0.6)."""
    trace = gates.OneNumber(0.8, f=0.5, i=1.0, g=0.2, o=1.0)
    assert trace.kept == pytest.approx(0.4)
    assert trace.written == pytest.approx(0.2)
    assert trace.c_t == pytest.approx(0.6)
    assert trace.h_t == pytest.approx(math.tanh(0.6))


def test_the_trace_is_the_engines_lstm_cell_with_those_gate_values():
    """Pre-activations logit(f), logit(i), atanh(g), logit(o) through lstm_cell give the same c_t and h_t."""
    f, i, g, o = 0.3, 0.7, -0.4, 0.6
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    pre = torch.tensor([[logit(i), logit(f), math.atanh(g), logit(o)]], dtype=torch.float64)  # torch's i, f, g, o
    weights = CellWeights(torch.zeros(4, 1, dtype=torch.float64), torch.zeros(4, 1, dtype=torch.float64), pre[0])
    zero = torch.zeros(1, 1, dtype=torch.float64)
    step = lstm_cell(zero, (zero, torch.full((1, 1), 0.8, dtype=torch.float64)), weights)
    trace = gates.OneNumber(0.8, f, i, g, o)
    assert step.c_t.item() == pytest.approx(trace.c_t, abs=1e-12)
    assert step.h_t.item() == pytest.approx(trace.h_t, abs=1e-12)


def test_presets_teach_what_they_say():
    by_name = {name: gates.OneNumber(0.8, *values) for name, (values, _) in gates.PRESETS.items()}
    small_o = by_name["Small output gate"]
    assert small_o.c_t > 0.9 and abs(small_o.h_t) < 0.05  # the cell is kept, just not shown
    writing = by_name["Forget near 1, still writing"]
    assert writing.kept == pytest.approx(0.792) and writing.c_t == pytest.approx(0.792 - 0.63)
    assert by_name["Clear the cell"].c_t == 0.0
    assert by_name["Copy forward"].c_t == pytest.approx(0.8)


def test_gate_values_out_of_range_are_plain_errors():
    with pytest.raises(ValueError, match="sigmoid"):
        gates.OneNumber(0.8, 1.2, 0.5, 0.0, 0.5)
    with pytest.raises(ValueError, match="tanh"):
        gates.OneNumber(0.8, 0.5, 0.5, -1.5, 0.5)


# --- One full LSTM step -----------------------------------------------------------------------------------------


def _model_from_torch(reference: nn.LSTM, vocab: int) -> CharModel:
    """A one-hot CharModel whose LSTM holds the reference module's weights."""
    model = CharModel(ModelConfig(vocab_size=vocab, kind="lstm", hidden=reference.hidden_size, embedding=False))
    model.rnn.load_state_dict(reference.state_dict())
    return model


def test_stacked_w_row_blocks_are_nn_lstms_order():
    hidden, vocab = 3, 4
    reference = nn.LSTM(vocab, hidden, batch_first=True)
    with torch.no_grad():
        reference.bias_ih_l0[hidden : 2 * hidden] = 12.0  # torch documents b_ih as (b_ii | b_if | b_ig | b_io)
    model = _model_from_torch(reference, vocab)
    w, b = gates.stacked_weights(model.rnn)
    blocks = gates.gate_blocks(w)
    for k, gate in enumerate(("i", "f", "g", "o")):
        rows = slice(k * hidden, (k + 1) * hidden)
        expected_w = torch.cat([reference.weight_hh_l0[rows], reference.weight_ih_l0[rows]], dim=1)
        torch.testing.assert_close(blocks[gate], expected_w)
        torch.testing.assert_close(gates.gate_blocks(b)[gate], reference.bias_ih_l0[rows] + reference.bias_hh_l0[rows])
    idx = torch.tensor([0, 2, 1, 3, 2])
    out, _ = reference(nn.functional.one_hot(idx, vocab).float().unsqueeze(0))  # (1, T, H)
    for t in (1, 3, 5):
        detail = gates.lstm_step_detail(model, idx, t)
        assert detail.gates["f"] == pytest.approx(1.0, abs=1e-4)  # the block we biased is the one called f
        torch.testing.assert_close(torch.from_numpy(detail.h_t).float(), out[0, t - 1].detach(), rtol=1e-5,
                                   atol=1e-6)


def test_step_detail_matches_the_trace_path():
    model, idx = gates.seeded_step_model(gates.StepModelConfig("recurrent", hidden=5, seed=2))
    _, trace = model.trace(idx.unsqueeze(0))
    for t in (1, 4, 9):
        detail = gates.lstm_step_detail(model, idx, t)
        for gate in gates.GATES:
            torch.testing.assert_close(torch.from_numpy(detail.gates[gate]).float(), trace[gate][0, t - 1, 0])
        torch.testing.assert_close(torch.from_numpy(detail.c_t).float(), trace["c"][0, t - 1, 0])
        assert detail.w.shape == (4 * 5, 5 + len(set("recurrent")))
        assert detail.x_t.tolist() == [float(ch == "recurrent"[t - 1]) for ch in sorted(set("recurrent"))]
    with pytest.raises(ValueError, match="between 1 and 9"):
        gates.lstm_step_detail(model, idx, 10)


def test_lstm_has_four_times_the_parameters_of_an_rnn():
    for d, h in ((4, 4), (65, 128)):
        counts = gates.parameter_counts(d, h)
        assert counts["rnn"] == h * (h + d) + 2 * h == sum(p.numel() for p in nn.RNN(d, h).parameters())
        assert counts["lstm"] == 4 * counts["rnn"] == sum(p.numel() for p in nn.LSTM(d, h).parameters())


def test_step_model_settings_are_checked():
    with pytest.raises(ValueError, match="2 different characters"):
        gates.StepModelConfig("aaaa")
    with pytest.raises(ValueError, match="between 2 and 8"):
        gates.StepModelConfig("hello", hidden=9)


# --- Gate saturation ------------------------------------------------------------------------------------------


def test_saturation_fractions_are_counted_from_the_trace():
    torch.manual_seed(0)
    model = CharModel(ModelConfig(vocab_size=6, kind="lstm", layers=2, hidden=8, embed_dim=4))
    with torch.no_grad():
        model.rnn.bias_hh_l1[8:16] = 30.0  # layer 2's forget gate is wide open everywhere
    idx = torch.randint(0, 6, (50,))
    stats = gates.gate_saturation(model, idx)
    _, trace = model.trace(idx.unsqueeze(0))
    assert stats.characters == 50 and stats.layers == 2
    for s in stats.per_gate:
        values = trace[s.gate][s.layer].flatten()
        left, right = gates.saturation_thresholds(s.gate)
        assert s.left == pytest.approx((values < left).float().mean().item())
        assert s.right == pytest.approx((values > right).float().mean().item())
        assert s.left + s.middle + s.right == pytest.approx(1.0)
        assert s.counts.sum() == 50 * 8
    assert stats.get(1, "f").right == 1.0
    assert gates.saturation_thresholds("g") == pytest.approx((-0.8, 0.8))
    with pytest.raises(ValueError, match="no characters"):
        gates.gate_saturation(model, torch.tensor([], dtype=torch.long))


# --- The page ---------------------------------------------------------------------------------------------------


def _metric(at, label_start):
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_page_follows_the_gate_sliders_and_presets():
    at = open_page("app_pages/lstm_gates.py")
    assert not at.exception, [e.value for e in at.exception]
    assert (_metric(at, "c_t, the new cell"), _metric(at, "h_t, what is exposed")) == ("0.600", f"{math.tanh(0.6):.3f}")
    at.slider(key="lstm_gates_f").set_value(0.9).run()
    assert _metric(at, "c_t, the new cell") == "0.920"
    assert at.query_params["f"] == "0.90"
    at.button(key="lstm_gates_preset_Clear the cell").click().run()
    assert _metric(at, "c_t, the new cell") == "0.000"
    assert "f = 0 drops the old cell" in page_text(at)
    # One full step: the parameter counts follow H (D = 4 distinct letters in "hello").
    assert (_metric(at, "vanilla RNN layer"), _metric(at, "LSTM layer")) == ("40", "160")
    at.slider(key="lstm_gates_hidden").set_value(8).run()
    assert (_metric(at, "vanilla RNN layer"), _metric(at, "LSTM layer")) == ("112", "448")
    # Saturation of the shipped English LSTM, over held-out prose and over a too-short text of one's own.
    assert at.selectbox(key="lstm_gates_model").value == "pretrained:lstm-english-docs"
    shipped = load_checkpoint(MODELS_DIR / "lstm-english-docs.pt")
    prose = held_out_text(load_builtin("english-docs"), 2000)
    expected = gates.gate_saturation(shipped.model, shipped.vocab.encode(prose)).get(0, "f").right
    assert _metric(at, "forget gate, layer 1") == f"{expected:.1%}"
    at.radio(key="lstm_gates_text_source").set_value("your text").run()
    at.text_area(key="lstm_gates_text").input("hi ☃").run()
    assert not at.exception
    assert any("at least 20 characters" in e.value for e in at.error)
    assert any("1 kind of character the model never saw" in w.value for w in at.warning)


def test_page_restores_the_gates_from_a_link():
    at = open_page("app_pages/lstm_gates.py", query={"f": "0.25", "o": "0.50"})
    assert not at.exception
    assert at.slider(key="lstm_gates_f").value == 0.25
    assert _metric(at, "c_t, the new cell") == "0.400"  # 0.25·0.8 + 1·0.2
    assert _metric(at, "h_t, what is exposed") == f"{0.5 * math.tanh(0.4):.3f}"


# --- Figures ----------------------------------------------------------------------------------------------------


def test_step_figure_draws_the_steps_own_numbers_and_escapes_the_character():
    from rnnviz.figures.gates import lstm_step_figure, stacked_w_figure

    config = gates.StepModelConfig("a<b", hidden=3)
    model, idx = gates.seeded_step_model(config)
    detail = gates.lstm_step_detail(model, idx, 2)
    fig = lstm_step_figure(detail, "<")
    strips = {trace.name: [row[0] for row in trace.z] for trace in fig.data}
    assert strips["c_t"] == pytest.approx(detail.c_t.tolist())
    assert strips["h_t"] == pytest.approx(detail.h_t.tolist())
    assert strips[gates.GATE_NAMES["f"]] == pytest.approx(detail.gates["f"].tolist())
    texts = [a.text for a in fig.layout.annotations]
    assert "x<sub>t</sub> = one-hot('&lt;')" in texts
    assert "(W is 4H × (H+D) = 12 × 6)" in " ".join(texts)
    heatmap = stacked_w_figure(detail, list(config.vocabulary)).data[0]
    assert list(heatmap.x)[3:] == ["x:'&lt;'", "x:'a'", "x:'b'"]
    assert list(heatmap.y)[:4] == ["i1", "i2", "i3", "f1"]
