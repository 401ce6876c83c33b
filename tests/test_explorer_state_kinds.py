"""The sLSTM, mLSTM, selective SSM and linear attention in the Hidden-cell explorer (issue 64): a live run or an
uploaded checkpoint of one is explored by each unit of each layer's h_t, the values those of the model's own forward
pass, and holding or ablating a cell, which only an RNN's, LSTM's or GRU's step allows, is refused in words; a kind
whose cells it does not read (a minGRU) is refused at the upload."""

import numpy as np
import torch
from streamlit.testing.v1 import AppTest

from rnnviz.charlm.checkpoint import checkpoint_bytes
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.live import LiveRun, LiveSettings
from rnnviz.ui.kit.models import LIVE_RUN_KEY, held_out_text
from tests.apptest_helpers import APP, TIMEOUT, page_text

PAGE = "app_pages/hidden_cell_explorer.py"
CHARS = 2000  # the fewest the page traces


def tiny(kind: str) -> TrainConfig:
    return TrainConfig(kind=kind, layers=2, hidden=16, n_head=2, embed_dim=8, batch=4, seq_len=16, device="cpu",
                       forget_bias=None)


@torch.no_grad()
def layer_outputs(model, ids: torch.Tensor) -> list[np.ndarray]:
    """Each layer's h_t over the text, as the model's own forward pass (from a zero state, eval mode) computes it on
    the way to its prediction: caught by a hook on each layer."""
    caught = []
    hooks = [layer.register_forward_hook(lambda module, args, output: caught.append(output[0][0].numpy()))
             for layer in model.rnn.layers]
    model.eval()
    model(ids.view(1, -1))
    for hook in hooks:
        hook.remove()
    return caught


def shown_values(at, layer: int, unit: int) -> np.ndarray:
    """The coloured window's values for the cell (layer, unit, h), from the table under the colouring."""
    at.selectbox(key="explorer_layer").set_value(layer)
    at.number_input(key="explorer_unit").set_value(unit)
    at.selectbox(key="explorer_quantity").set_value("h").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(frame.value for frame in at.dataframe if "position" in frame.value.columns)
    assert list(table["position"]) == list(range(CHARS))
    return table[f"layer {layer}, unit {unit}, h"].to_numpy()


def test_a_live_run_and_an_upload_of_the_new_kinds_are_explored_by_each_unit_of_h_and_never_ablated():
    corpus = load_builtin("python-stdlib")
    text = held_out_text(corpus, CHARS)
    run = LiveRun.create(tiny("linear_attention"), corpus,
                         LiveSettings(step_budget=4, snapshot_every=2, sample_every=100, eval_chars=500))
    run.advance(60.0)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[LIVE_RUN_KEY] = run
    at.session_state["explorer_source"], at.session_state["explorer_length"] = "live", CHARS
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="explorer_source").value == "live"
    assert list(at.selectbox(key="explorer_quantity").options) == ["h_t, hidden output"]  # h only: one per unit
    expected = layer_outputs(run.trainer.model, run.trainer.vocab.encode(text))
    np.testing.assert_allclose(shown_values(at, 1, 5), expected[1][:, 5], rtol=0, atol=1e-5)
    np.testing.assert_allclose(shown_values(at, 0, 3), expected[0][:, 3], rtol=0, atol=1e-5)
    refused = "Holding a cell fixed, and ablating the top cells, are not available for this linear attention model"
    assert refused in page_text(at)
    assert not any(w.key in ("explorer_iv_on", "explorer_iv_value") for w in at.radio)
    assert not any(b.key == "explorer_importance_button" for b in at.button)
    replay = at.select_slider(key="explorer_snapshot_step")  # its snapshots replay the same cell
    assert list(replay.options) == ["0", "2", "4"]
    replay.set_value(0).run()
    assert not at.exception and any("after 0 training steps" in h.value for h in at.html)

    uploaded = Trainer(tiny("mlstm"), corpus)
    uploaded.run(3)
    at.file_uploader(key="explorer_upload").set_value(
        ("mlstm.pt", checkpoint_bytes(uploaded, "python-stdlib"), "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "uploaded" and not at.error
    at.slider(key="explorer_length").set_value(CHARS).run()
    expected = layer_outputs(uploaded.model, uploaded.vocab.encode(text))
    np.testing.assert_allclose(shown_values(at, 1, 7), expected[1][:, 7], rtol=0, atol=1e-5)
    text_shown = page_text(at)
    assert "not available for this mLSTM model" in text_shown
    assert any(e.label == "The same ranking for a randomly initialised mLSTM of the same shape" for e in at.expander)

    # a kind whose cells the page does not read is refused in words, and the model explored stays
    mingru = Trainer(TrainConfig(kind="mingru", hidden=8, embed_dim=4, batch=2, seq_len=8, device="cpu"), corpus)
    mingru.run(1)
    at.file_uploader(key="explorer_upload").set_value(
        ("mingru.pt", checkpoint_bytes(mingru, "python-stdlib"), "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("This is a minGRU model, whose cells this page does not read" in e.value for e in at.error)
    assert at.session_state["explorer_source"] == "uploaded" and not at.warning
    np.testing.assert_allclose(shown_values(at, 1, 7), expected[1][:, 7], rtol=0, atol=1e-5)
