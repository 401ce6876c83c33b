"""Your own model and your own states in the app: ``rnnviz app --model/--states`` checks the files and names them for
the server, which selects the model in every model box, and the explorer shows states that came without a model.

The plain model here is written the way a user writes one (Embedding → nn.LSTM → Linear, saved as a state_dict with
a JSON vocabulary), and the page's numbers are compared with what that plain module computes."""

import json

import numpy as np
import pytest
import torch
from torch import nn

from rnnviz import launch
from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.interpret.finder import trace_cells
from rnnviz.interpret.states import states_file_bytes
from rnnviz.interpret.textfeatures import FEATURES, feature_tracks
from rnnviz.ui.hidden_cell_explorer import imports
from rnnviz.ui.hidden_state.sections import source_key
from rnnviz.ui.kit import models
from rnnviz.ui.kit.models import PRETRAINED_DIR, held_out_text
from tests.apptest_helpers import open_page, page_text

EXPLORER = "app_pages/hidden_cell_explorer.py"


class UsersLSTM(nn.Module):
    """A character model as people write it in their own scripts."""

    def __init__(self, vocab_size: int, embed: int = 12, hidden: int = 24):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, vocab_size)

    def forward(self, idx):
        out, _ = self.lstm(self.embedding(idx))
        return self.fc(out), out


@pytest.fixture(scope="module")
def text() -> str:
    return held_out_text(load_builtin("python-stdlib"), 2500)


@pytest.fixture(scope="module")
def users_model(tmp_path_factory, text):
    """(weights path, vocab path, the module, its vocabulary): trained for a few steps on the text."""
    folder = tmp_path_factory.mktemp("users_model")
    chars = sorted(set(text))
    ids = torch.tensor([[chars.index(c) for c in text]])
    torch.manual_seed(0)
    model = UsersLSTM(len(chars))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        logits, _ = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, len(chars)), ids[0, 1:])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    torch.save(model.state_dict(), folder / "my_lstm.pt")
    (folder / "vocab.json").write_text(json.dumps(chars))
    return folder / "my_lstm.pt", folder / "vocab.json", model.eval(), chars


@pytest.fixture(scope="module")
def shipped_states(tmp_path_factory, text):
    """(states path, text path, the trace they were written from): the shipped Python LSTM's h and c as an .npz."""
    folder = tmp_path_factory.mktemp("states")
    checkpoint = load_checkpoint(PRETRAINED_DIR / "lstm-python-stdlib.pt")
    trace = trace_cells(checkpoint.model, checkpoint.vocab.encode(text))
    (folder / "states.npz").write_bytes(states_file_bytes(trace, "npz"))
    (folder / "input.txt").write_text(text, encoding="utf-8")
    return folder / "states.npz", folder / "input.txt", trace


def test_the_launcher_and_the_server_read_the_same_variables():
    assert (launch.MODEL_ENV, launch.VOCAB_ENV, launch.NONLINEARITY_ENV) == (
        models.LAUNCHED_MODEL_ENV, models.LAUNCHED_VOCAB_ENV, models.LAUNCHED_NONLINEARITY_ENV)
    assert (launch.STATES_ENV, launch.TEXT_ENV) == (imports.LAUNCHED_STATES_ENV, imports.LAUNCHED_TEXT_ENV)


def test_rnnviz_app_checks_the_files_and_names_them_for_the_server(users_model, shipped_states, capsys):
    weights, vocab, _, chars = users_model
    states, text_file, trace = shipped_states
    assert launch.app_main(["--model", str(weights), "--vocab", str(vocab), "--states", str(states),
                            "--text", str(text_file), "--check"]) == 0
    out, err = capsys.readouterr()
    assert f"RNNVIZ_MODEL={weights.resolve()}" in out and f"RNNVIZ_VOCAB={vocab.resolve()}" in out
    assert f"RNNVIZ_STATES={states.resolve()}" in out and f"RNNVIZ_TEXT={text_file.resolve()}" in out
    assert "streamlit run" in out and str(launch.APP) in out
    assert "LSTM" in err and f"{trace.layers} layer(s) × {trace.hidden} units over {trace.length:,} characters" in err


@pytest.mark.parametrize("argv, words", [
    (["--states", "x.npz"], "--states and --text go together"),
    (["--vocab", "v.json"], "--vocab goes with --model"),
])
def test_rnnviz_app_refuses_half_a_pair_in_words(argv, words):
    with pytest.raises(SystemExit, match=words):
        launch.app_main([*argv, "--check"])


def test_rnnviz_app_refuses_states_that_do_not_fit_the_text(shipped_states, tmp_path):
    states, _, trace = shipped_states
    short = tmp_path / "short.txt"
    short.write_text("x" * 100)
    with pytest.raises(SystemExit, match=f"{trace.length:,}|{trace.length}"):
        launch.app_main(["--states", str(states), "--text", str(short), "--check"])


def test_rnnviz_app_refuses_a_plain_state_dict_without_its_vocabulary(users_model):
    weights, *_ = users_model
    with pytest.raises(SystemExit, match="(?i)vocab"):
        launch.app_main(["--model", str(weights), "--check"])


def test_a_plain_pytorch_model_given_at_launch_is_the_explorers_and_the_gates_pages_model(
        users_model, text, monkeypatch):
    weights, vocab, model, chars = users_model
    monkeypatch.setenv("RNNVIZ_MODEL", str(weights))
    monkeypatch.setenv("RNNVIZ_VOCAB", str(vocab))
    at = open_page(EXPLORER)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "file:my_lstm.pt"
    assert "Your model: my_lstm.pt (1 × 24 LSTM)" in at.selectbox(key="explorer_source").options
    # The corpus it names is not this server's, so the explorer reads the model's own writing or your text: give it
    # the text it was trained on and compare the page's correlation with the plain module's own h_t.
    at.radio(key="explorer_text_mode").set_value("own").run()
    at.text_area(key="explorer_own_text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    layer, unit, quantity = (at.session_state[k] for k in ("explorer_layer", "explorer_unit", "explorer_quantity"))
    at.selectbox(key="explorer_quantity").set_value("h").run()
    with torch.no_grad():
        _, hidden = model(torch.tensor([[chars.index(c) for c in text]]))
    h = hidden[0, :, int(at.session_state["explorer_unit"])].numpy()
    tracks = feature_tracks(text, at.session_state["explorer_syntax"])
    shown = page_text(at)
    for feature in ("indent", "string"):
        r = np.corrcoef(h, tracks[feature])[0, 1]
        assert f"{FEATURES[feature].label} r = {r:+.2f}" in shown
    gates = open_page("app_pages/lstm_gates.py")
    assert not gates.exception, [e.value for e in gates.exception]
    assert gates.session_state["lstm_gates_model"] == "file:my_lstm.pt"
    side_by_side = open_page("app_pages/hidden_state.py")
    assert not side_by_side.exception, [e.value for e in side_by_side.exception]
    assert side_by_side.session_state[source_key("LSTM")] == "file"  # the LSTM slot; the others keep their models
    assert side_by_side.session_state[source_key("RNN")] == "shipped"


def test_states_given_at_launch_open_in_the_explorer_without_a_model(shipped_states, monkeypatch):
    states, text_file, trace = shipped_states
    text = text_file.read_text(encoding="utf-8")
    monkeypatch.setenv("RNNVIZ_STATES", str(states))
    monkeypatch.setenv("RNNVIZ_TEXT", str(text_file))
    at = open_page(EXPLORER)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "states:states.npz"
    shown = page_text(at)
    assert f"{len(text):,} characters from states.npz's text, one state per character" in shown
    headers = [h.value for h in at.header]
    assert any(h.startswith("1. Colour") for h in headers) and any(h.startswith("8. The state") for h in headers)
    assert not any(h.startswith(("4.", "5.", "6.", "7.")) for h in headers), headers
    assert "need the model itself" in shown
    # The numbers are the states' own: the chosen cell's correlations are those of the trace the file was written from.
    layer, unit, quantity = (at.session_state[k] for k in ("explorer_layer", "explorer_unit", "explorer_quantity"))
    values = trace.block(int(layer), quantity)[:, int(unit)]
    tracks = feature_tracks(text, at.session_state["explorer_syntax"])
    for feature in tracks:
        if np.std(tracks[feature]) > 0:
            assert f"{FEATURES[feature].label} r = {np.corrcoef(values, tracks[feature])[0, 1]:+.2f}" in shown
    assert any("each unit shifted in time" in e.label for e in at.expander)


def upload(at, key: str, name: str, data: bytes):
    return at.file_uploader(key=key).set_value((name, data, "application/octet-stream")).run()


def test_a_plain_state_dict_uploaded_with_its_vocabulary_is_explored(users_model, text):
    weights, vocab, model, chars = users_model
    at = open_page(EXPLORER)
    upload(at, "explorer_upload", "my_lstm.pt", weights.read_bytes())
    assert not at.exception, [e.value for e in at.exception]
    assert any("vocabulary" in e.value for e in at.error), [e.value for e in at.error]  # weights alone: say so
    upload(at, "explorer_vocab_upload", "vocab.json", vocab.read_bytes())
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "uploaded"
    assert not at.error, [e.value for e in at.error]
    assert any("Read a 1 × 24 LSTM with a 12-wide embedding" in s.value for s in at.success)
    # A state_dict carries no training record: the model box names it by what it is, with no "step 0".
    box = at.selectbox(key="explorer_source")
    assert box.options[box.index] == "Uploaded checkpoint (my_lstm, plain PyTorch)"
    at.radio(key="explorer_text_mode").set_value("own").run()
    at.text_area(key="explorer_own_text").set_value(text).run()
    at.selectbox(key="explorer_quantity").set_value("c").run()
    with torch.no_grad():  # the plain module's c_t, stepped by hand through its own nn.LSTM
        x = model.embedding(torch.tensor([[chars.index(ch) for ch in text]]))
        state, cells = None, []
        for t in range(x.size(1)):
            _, state = model.lstm(x[:, t:t + 1], state)
            cells.append(state[1][0, 0])
    c = torch.stack(cells)[:, int(at.session_state["explorer_unit"])].numpy()
    tracks = feature_tracks(text, at.session_state["explorer_syntax"])
    shown = page_text(at)
    r = np.corrcoef(c, tracks["indent"])[0, 1]
    assert f"{FEATURES['indent'].label} r = {r:+.2f}" in shown


def test_states_uploaded_with_their_text_are_explored_and_a_mismatch_is_explained(shipped_states):
    states, text_file, trace = shipped_states
    at = open_page(EXPLORER)
    upload(at, "explorer_states_upload", "states.npz", states.read_bytes())
    assert not at.error  # nothing to say until the text is there too
    upload(at, "explorer_states_text_upload", "short.txt", b"x" * 100)
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"{trace.length:,}" in e.value and "100" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["explorer_source"] == "pretrained:lstm-python-stdlib"  # the page stays as it was
    upload(at, "explorer_states_text_upload", "input.txt", text_file.read_bytes())
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["explorer_source"] == "states:uploaded"
    assert at.session_state["explorer_syntax"] == "code"  # Python source reads as code
    assert "characters from states.npz's text" in page_text(at)
    assert not any(h.value.startswith("4.") for h in at.header)
