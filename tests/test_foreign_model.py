"""Plain PyTorch character models, written and trained here as a user would, load into rnnviz and compute the same.

Each model is trained a few steps, saved with ``torch.save(model.state_dict(), path)`` and its vocabulary with
``json.dump``; rnnviz's forward pass, both trace paths and its sampler must then agree with the plain model's own
forward pass and with a plain sampling loop. Every file rnnviz cannot use is refused in words.
"""

import json
import os
import pickle
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from rnnviz.charlm.checkpoint import Checkpoint, CheckpointError, load_checkpoint, resume_trainer
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.foreign import ImportedModel, import_state_dict, load_any, load_foreign, parse_vocab
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.charlm.sample import generate
from rnnviz.cli import inspect_main, sample_main
from rnnviz.interpret.finder import trace_cells

TEXT = "the cat sat on the mat.\nhe has a hat; she had a bat!\nwe see it.\n"
SORTED = sorted(set(TEXT))  # how most scripts build a vocabulary
FIRST_SEEN = list(dict.fromkeys(TEXT))  # and how some do: in order of first appearance
E, H = 8, 16


class EmbedLSTM(nn.Module):
    """Embedding → 2-layer LSTM (batch_first) → Linear."""

    def __init__(self, v, layers=2, bias=True):
        super().__init__()
        self.embedding = nn.Embedding(v, E)
        self.lstm = nn.LSTM(E, H, num_layers=layers, batch_first=True, bias=bias)
        self.fc = nn.Linear(H, v, bias=bias)

    def forward(self, x, state=None):  # x (N, T)
        out, state = self.lstm(self.embedding(x), state)
        return self.fc(out), out, state


class EmbedGRU(nn.Module):
    """Embedding → GRU (time first, torch's default) → Linear."""

    time_first = True

    def __init__(self, v):
        super().__init__()
        self.encoder = nn.Embedding(v, E)
        self.gru = nn.GRU(E, H)
        self.decoder = nn.Linear(H, v)

    def forward(self, x, state=None):  # x (T, N)
        out, state = self.gru(self.encoder(x), state)
        return self.decoder(out), out, state


class OneHotRNN(nn.Module):
    """One-hot characters → ReLU RNN → Linear."""

    def __init__(self, v):
        super().__init__()
        self.v = v
        self.rnn = nn.RNN(v, H, nonlinearity="relu", batch_first=True)
        self.out = nn.Linear(H, v)

    def forward(self, x, state=None):
        out, state = self.rnn(F.one_hot(x, self.v).float(), state)
        return self.out(out), out, state


def train(model, chars, steps=8, seed=0):
    """A few Adam steps on TEXT, as a user's script would do them."""
    torch.manual_seed(seed)
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = torch.tensor([stoi[ch] for ch in TEXT])
    windows = torch.stack([ids[i : i + 17] for i in range(0, len(ids) - 17, 5)])  # (N, 17)
    time_first = getattr(model, "time_first", False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x, y = windows[:, :-1], windows[:, 1:]
        if time_first:
            x, y = x.T, y.T
        logits, _, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def save(model, chars, folder, name="m"):
    """The user's two files: the state_dict and the vocabulary as a JSON list."""
    weights, vocab = folder / f"{name}.pt", folder / f"{name}.json"
    torch.save(model.state_dict(), weights)
    with open(vocab, "w", encoding="utf-8") as f:
        json.dump(list(chars), f)
    return weights, vocab


@torch.no_grad()
def plain_run(model, chars, text):
    """The plain model on ``text`` from a zero state: logits (T, V), top-layer h_t (T, H), final state."""
    x = torch.tensor([[chars.index(ch) for ch in text]])  # (1, T)
    if getattr(model, "time_first", False):
        logits, out, state = model(x.T)
        return logits[:, 0], out[:, 0], state
    logits, out, state = model(x)
    return logits[0], out[0], state


@torch.no_grad()
def plain_generate(model, chars, prime, length, temperature, seed):
    """rnnviz.charlm.sample.generate's draws, written with the plain model: a torch.Generator seeded with ``seed``
    draws torch.multinomial(softmax(z / τ), 1) over the characters in code-point order (rnnviz's ids), after the
    prime and then after each drawn character, carrying the state."""
    generator = torch.Generator().manual_seed(seed)
    order = sorted(chars)
    user_id = torch.tensor([chars.index(ch) for ch in order])  # rnnviz's id j → the user's id
    time_first = getattr(model, "time_first", False)

    def step(ids, state):
        x = torch.tensor([ids]).T if time_first else torch.tensor([ids])
        logits, _, state = model(x, state)
        return logits[-1, 0] if time_first else logits[0, -1], state

    logits, state = step([chars.index(ch) for ch in prime], None)
    out = []
    for _ in range(length):
        probs = torch.softmax(logits[user_id].float() / temperature, dim=-1)
        j = int(torch.multinomial(probs, 1, generator=generator))
        out.append(order[j])
        logits, state = step([int(user_id[j])], state)
    return "".join(out)


def rnnviz_ids(checkpoint, text):
    return checkpoint.vocab.encode(text)


def assert_same_model(plain, chars, checkpoint, text=TEXT[:40]):
    """rnnviz's fast path, trace path and trace_cells against the plain model's forward pass."""
    model = checkpoint.model
    user_id = [chars.index(ch) for ch in checkpoint.vocab.chars]  # rnnviz's id j → the user's id
    want_logits, want_out, want_state = plain_run(plain, chars, text)
    ids = rnnviz_ids(checkpoint, text)
    with torch.no_grad():
        logits, _, state = model(ids[None])
        traced_logits, trace = model.trace(ids[None])
    torch.testing.assert_close(logits[0], want_logits[:, user_id], atol=1e-5, rtol=0)
    torch.testing.assert_close(traced_logits[0], want_logits[:, user_id], atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.output[0], want_out, atol=1e-5, rtol=0)
    want_h = want_state[0] if isinstance(want_state, tuple) else want_state  # (L, 1, H)
    got_h = state[0] if isinstance(state, tuple) else state
    torch.testing.assert_close(got_h, want_h, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.values["h"][:, -1], want_h, atol=1e-5, rtol=0)
    cells = trace_cells(model, ids)
    layers = checkpoint.config.layers
    torch.testing.assert_close(torch.from_numpy(cells.block(layers - 1, "h").copy()), want_out, atol=1e-5, rtol=0)
    for layer in range(layers):
        torch.testing.assert_close(torch.from_numpy(cells.block(layer, "h")[-1].copy()), want_h[layer, 0],
                                   atol=1e-5, rtol=0)
        if checkpoint.config.kind == "lstm":
            torch.testing.assert_close(torch.from_numpy(cells.block(layer, "c")[-1].copy()), want_state[1][layer, 0],
                                       atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def lstm():
    return train(EmbedLSTM(len(SORTED)), SORTED)


@pytest.fixture(scope="module")
def gru():
    return train(EmbedGRU(len(FIRST_SEEN)), FIRST_SEEN)


@pytest.fixture(scope="module")
def relu_rnn():
    return train(OneHotRNN(len(SORTED)), SORTED)


def test_the_text_has_about_twenty_characters():
    assert 15 <= len(SORTED) <= 25 and FIRST_SEEN != SORTED


def test_an_embedding_lstm_loads_and_computes_the_same(lstm, tmp_path):
    weights, vocab = save(lstm, SORTED, tmp_path)
    imported = load_foreign(weights, vocab)
    assert isinstance(imported, ImportedModel) and isinstance(imported.checkpoint, Checkpoint)
    checkpoint = imported.checkpoint
    config = checkpoint.config
    assert (config.kind, config.layers, config.hidden, config.embedding, config.embed_dim) == ("lstm", 2, H, True, E)
    assert checkpoint.vocab.chars == "".join(SORTED) and checkpoint.corpus == "imported" and checkpoint.step == 0
    assert checkpoint.history == [] and checkpoint.evals == [] and not checkpoint.model.training
    assert imported.report[:2] == [
        f"Read a 2 × {H} LSTM with an {E}-wide embedding over {len(SORTED)} characters.",
        "Placed 11 tensors: embedding.weight as the embedding, lstm.* (8 tensors) as the recurrent layers, fc.weight "
        "and fc.bias as the readout.",
    ]
    assert len(imported.report) == 2, imported.report
    assert_same_model(lstm, SORTED, checkpoint)


def test_a_time_first_gru_with_a_vocabulary_in_first_seen_order_computes_the_same(gru, tmp_path):
    weights, vocab = save(gru, FIRST_SEEN, tmp_path)
    checkpoint, report = load_any(weights, vocab, name="my gru")
    assert (checkpoint.config.kind, checkpoint.config.layers, checkpoint.corpus) == ("gru", 1, "my gru")
    assert checkpoint.vocab.chars == "".join(SORTED)  # renumbered in code-point order, as rnnviz keeps it
    assert any("not in code-point order" in line for line in report)
    assert_same_model(gru, FIRST_SEEN, checkpoint)


def test_a_one_hot_relu_rnn_computes_the_same_with_nonlinearity_relu(relu_rnn, tmp_path):
    weights, vocab = save(relu_rnn, SORTED, tmp_path)
    imported = load_foreign(weights, vocab, nonlinearity="relu")
    config = imported.checkpoint.config
    assert (config.kind, config.embedding) == ("rnn", False)
    assert imported.checkpoint.model.rnn.nonlinearity == "relu"
    assert imported.report[0] == f"Read a 1 × {H} RNN with one-hot input over {len(SORTED)} characters."
    assert any("runs with relu, as asked" in line for line in imported.report)
    assert_same_model(relu_rnn, SORTED, imported.checkpoint)
    # The weights cannot tell the nonlinearity: the default reads them as tanh, says so, and computes otherwise.
    as_tanh = load_foreign(weights, vocab)
    assert any("runs with tanh" in line and 'nonlinearity="relu"' in line for line in as_tanh.report)
    with pytest.raises(AssertionError):
        assert_same_model(relu_rnn, SORTED, as_tanh.checkpoint)


@pytest.mark.parametrize("which", ["lstm", "gru", "relu_rnn"])
def test_sampling_reproduces_a_plain_sampling_loop(which, request, tmp_path):
    plain = request.getfixturevalue(which)
    chars = FIRST_SEEN if which == "gru" else SORTED
    weights, vocab = save(plain, chars, tmp_path)
    checkpoint, _ = load_any(weights, vocab, nonlinearity="relu" if which == "relu_rnn" else "tanh")
    for seed, temperature in ((0, 1.0), (7, 0.7)):
        text = generate(checkpoint.model, checkpoint.vocab, "the ", 60, temperature=temperature, seed=seed)
        assert text == plain_generate(plain, chars, "the ", 60, temperature, seed)
    assert generate(checkpoint.model, checkpoint.vocab, "the ", 60, seed=0) != \
        generate(checkpoint.model, checkpoint.vocab, "the ", 60, seed=1)


def test_no_biases_and_float64_weights_load_as_zeros_and_float32(tmp_path):
    plain = train(EmbedLSTM(len(SORTED), layers=1, bias=False), SORTED, steps=3).double()
    weights, vocab = save(plain, SORTED, tmp_path)
    imported = load_foreign(weights, vocab)
    report = " ".join(imported.report)
    assert "no biases (bias=False)" in report and "fc.weight has no bias" in report
    assert "Converted its float64 weights to float32." in report
    plain.float()
    assert_same_model(plain, SORTED, imported.checkpoint)


def test_extra_tensors_are_reported_by_name(lstm, tmp_path):
    state = dict(lstm.state_dict())
    state["step_counter"] = torch.tensor(120)
    state["dropout_mask"] = torch.ones(3, H)
    imported = import_state_dict(state, "".join(SORTED))
    left = [line for line in imported.report if line.startswith("Left out")]
    assert left == ["Left out 2 tensors it could not place: step_counter (a scalar, int64), dropout_mask (shape "
                    f"(3, {H}), float32). If any of them takes part in the model's forward pass, rnnviz's model "
                    "computes something else than the original."]
    assert_same_model(lstm, SORTED, imported.checkpoint)


def test_a_file_that_wraps_the_weights_and_the_vocabulary_needs_no_vocabulary_file(lstm, tmp_path):
    path = tmp_path / "wrapped.pt"
    torch.save({"model_state_dict": lstm.state_dict(), "chars": "".join(SORTED), "epoch": 3}, path)
    checkpoint, report = load_any(path)
    assert report[-1] == 'Read the weights from the file\'s "model_state_dict", the vocabulary from its "chars", ' \
                         "and ignored its other entries (epoch)."
    assert_same_model(lstm, SORTED, checkpoint)
    with pytest.raises(CheckpointError, match="no vocabulary: give the vocabulary as well, as a JSON file"):
        load_foreign(save(lstm, SORTED, tmp_path)[0])


def test_an_imported_model_can_be_trained_further_in_rnnviz(lstm, tmp_path):
    before = torch.get_rng_state()
    checkpoint, _ = load_any(*save(lstm, SORTED, tmp_path))
    assert torch.equal(torch.get_rng_state(), before), "importing leaves the global random state alone"
    trainer = resume_trainer(checkpoint, Corpus("repeated", TEXT * 60))
    assert trainer.step == 0 and len(trainer.run(1)) == 1 and trainer.step == 1


def test_load_any_reads_an_rnnviz_checkpoint_as_load_checkpoint_does():
    path = MODELS_DIR / "lstm-python-stdlib.pt"
    checkpoint, report = load_any(path, vocab=None)
    assert report == []
    reference = load_checkpoint(path)
    assert checkpoint.config == reference.config and checkpoint.vocab == reference.vocab
    assert checkpoint.step == reference.step and checkpoint.corpus == reference.corpus


@pytest.mark.parametrize(
    ("data", "chars"),
    [
        (b'["\\n", " ", "a"]', "\n a"),
        ('"ba"', "ba"),
        (b'{"itos": ["x", "y"]}', "xy"),
        (b'{"chars": "xy"}', "xy"),
        (b'{"stoi": {"y": 1, "x": 0}}', "xy"),
        (b'{"y": 0, "x": 1}', "yx"),
        (b'{"1": "q", "0": "p"}', "pq"),
        ('\ufeff["a", "b"]'.encode(), "ab"),
    ],
)
def test_parse_vocab_reads_the_usual_forms(data, chars):
    assert parse_vocab(data) == chars


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'["a", "b"', "not valid JSON"),
        (b"\xff\xfe[", "not UTF-8 text"),
        (b'["a", "b", "a"]', "lists 'a' twice (ids 0 and 2)"),
        (b'["a", "bc"]', "Entry 1 of the vocabulary, 'bc', is 2 characters long"),
        (b'["a", 5]', "Entry 1 of the vocabulary is a number (5), not a character"),
        (b'["a"]', "has 1 character; a character model needs at least 2"),
        (b"5", "The vocabulary is a number (5)"),
        (b'{"words": ["a"]}', "none of itos, chars or stoi"),
        (b'{"stoi": {"a": 0, "b": 2}}', "ids must be the numbers 0 to 1"),
    ],
)
def test_parse_vocab_refuses_in_words(data, words):
    with pytest.raises(CheckpointError, match=re.escape(words)):
        parse_vocab(data)


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _with_readout(rnn_state, prefix, width=H):
    """A recurrent module's weights under ``prefix``, with an embedding and a readout over the characters."""
    v = len(SORTED)
    head = nn.Linear(width, v)
    return {**{prefix + k: t for k, t in rnn_state.items()}, "emb.weight": torch.randn(v, E),
            "fc.weight": head.weight.detach(), "fc.bias": head.bias.detach()}


def _second_layer_12_wide():
    weights = _with_readout(_state(nn.LSTM(E, H, 2)), "lstm.")
    return {**weights, **{f"lstm.{k[:-1]}1": v for k, v in _state(nn.LSTM(H, 12)).items()}}


def _two_modules():
    return {**_with_readout(_state(nn.LSTM(E, H)), "lstm1."),
            **{f"lstm2.{k}": v for k, v in _state(nn.LSTM(H, H)).items()}}


def _two_readouts():
    v = len(SORTED)
    return {**_with_readout(_state(nn.GRU(E, H)), "gru."), "aux.weight": torch.randn(v, H), "aux.bias": torch.zeros(v)}


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: _with_readout(_state(nn.LSTM(E, H, bidirectional=True)), "lstm."),
         "bidirectional (lstm.weight_ih_l0_reverse)"),
        (lambda: _with_readout(_state(nn.LSTM(E, H, proj_size=4)), "lstm.", width=4), "projects its h_t (proj_size"),
        (lambda: {k: v for k, v in _with_readout(_state(nn.GRU(E, H)), "gru.").items() if not k.startswith("fc.")},
         "Found no readout: no nn.Linear weight of shape"),
        (_two_readouts, "could be the readout (fc.weight and aux.weight"),
        (_second_layer_12_wide, "different widths: layer 0 has 16 units and layer 1 (lstm.weight_hh_l1) 12 units"),
        (_two_modules, "recurrent weights in 2 modules ('lstm1', 'lstm2')"),
        (lambda: {"fc.weight": torch.randn(len(SORTED), H), "fc.bias": torch.zeros(len(SORTED))},
         "Found no recurrent layer"),
    ],
    ids=["bidirectional", "proj_size", "no readout", "two readouts", "different widths", "two modules", "no rnn"],
)
def test_models_rnnviz_cannot_hold_are_refused_in_words(make, words):
    weights = make()
    with pytest.raises(CheckpointError, match=re.escape(words)):
        import_state_dict(weights, "".join(SORTED))


def test_a_vocabulary_of_the_wrong_size_is_refused(lstm, tmp_path):
    weights, _ = save(lstm, SORTED, tmp_path)
    v = len(SORTED)
    for chars, n in ((SORTED[:-1], v - 1), ([*SORTED, "z"], v + 1)):
        with pytest.raises(CheckpointError, match=f"The vocabulary has {n} characters, but the readout does not "
                                                  rf"\(fc.weight predicts {v}\): give the vocabulary the model was"):
            load_foreign(weights, json.dumps(chars).encode())


class Boom:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def test_pickled_objects_are_refused_without_running_them(lstm, tmp_path):
    marker = str(tmp_path / "ran")
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps({"state_dict": Boom(marker)}, protocol=2))
    whole = tmp_path / "whole.pt"
    torch.save(lstm, whole)  # the module itself, not its state_dict
    inside = tmp_path / "inside.pt"
    torch.save({"state_dict": lstm.state_dict(), "boom": Boom(marker)}, inside)
    for path in (evil, whole, inside):
        for load in (load_foreign, load_any):
            with pytest.raises(CheckpointError, match="refused without running it. Save the weights alone"):
                load(path, json.dumps(SORTED).encode())
    assert not os.path.exists(marker)


def test_other_files_are_refused_in_words(lstm, tmp_path):
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(SORTED), encoding="utf-8")
    with pytest.raises(CheckpointError, match="not a PyTorch .* It looks like JSON: give the weights"):
        load_any(vocab, vocab)
    with pytest.raises(CheckpointError, match="empty or far too short"):
        load_any(b"", vocab)
    with pytest.raises(CheckpointError, match="Could not read the vocabulary"):
        load_foreign(save(lstm, SORTED, tmp_path)[0], tmp_path / "missing.json")
    tensor = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), tensor)
    with pytest.raises(CheckpointError, match="holds a Tensor, not a state_dict"):
        load_any(tensor, vocab)


def test_cli_sample_reads_a_plain_model_with_vocab(lstm, gru, tmp_path, capsys):
    weights, vocab = save(lstm, SORTED, tmp_path)
    argv = [str(weights), "--vocab", str(vocab), "--prime", "the ", "--length", "50", "--temperature", "1",
            "--seed", "5"]
    assert sample_main(argv) == 0
    out, err = capsys.readouterr()
    assert out == "the " + plain_generate(lstm, SORTED, "the ", 50, 1.0, 5) + "\n"
    assert err.splitlines()[0] == f"Read a 2 × {H} LSTM with an {E}-wide embedding over {len(SORTED)} characters."
    weights, vocab = save(gru, FIRST_SEEN, tmp_path, "g")
    assert sample_main([str(weights), "--vocab", str(vocab), "--prime", "a", "--length", "30", "--seed", "2",
                        "--temperature", "0.8"]) == 0
    assert capsys.readouterr().out == "a" + plain_generate(gru, FIRST_SEEN, "a", 30, 0.8, 2) + "\n"
    assert sample_main([str(weights)]) == 2
    assert "no vocabulary" in capsys.readouterr().err


def test_cli_sample_relu_rnn_with_nonlinearity(relu_rnn, tmp_path, capsys):
    weights, vocab = save(relu_rnn, SORTED, tmp_path)
    argv = [str(weights), "--vocab", str(vocab), "--prime", "he", "--length", "40", "--temperature", "1"]
    assert sample_main([*argv, "--nonlinearity", "relu"]) == 0
    assert capsys.readouterr().out == "he" + plain_generate(relu_rnn, SORTED, "he", 40, 1.0, 0) + "\n"


def test_cli_inspect_reads_a_plain_model_with_vocab(lstm, tmp_path, capsys):
    weights, vocab = save(lstm, SORTED, tmp_path)
    text = tmp_path / "passage.txt"
    text.write_text(TEXT, encoding="utf-8")
    prefix = tmp_path / "passage"
    assert inspect_main([str(weights), "--vocab", str(vocab), "--text", str(text), "--out", str(prefix)]) == 0
    out, err = capsys.readouterr()
    assert "Read a 2 × 16 LSTM" in err and "wrote" in out
    rows = (tmp_path / "passage.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + len(TEXT)
    want_logits, _, _ = plain_run(lstm, SORTED, TEXT)
    surprisal = -torch.log_softmax(want_logits[:-1], dim=-1)[torch.arange(len(TEXT) - 1),
                                                               [SORTED.index(c) for c in TEXT[1:]]]
    got = torch.tensor([float(row.split(",")[2]) for row in rows[2:]])
    torch.testing.assert_close(got, surprisal, atol=1e-4, rtol=0)


def test_an_embedding_as_wide_as_the_layer_is_told_from_a_bias_less_readout_by_its_name():
    torch.manual_seed(0)
    v = len(SORTED)
    embedding, gru, fc = nn.Embedding(v, H), nn.GRU(H, H, 3), nn.Linear(H, v, bias=False)
    weights = {"emb.weight": embedding.weight, **{f"gru.{k}": t for k, t in gru.state_dict().items()},
               "fc.weight": fc.weight}
    imported = import_state_dict({k: t.detach() for k, t in weights.items()}, "".join(SORTED))
    assert imported.report[1] == "Placed 14 tensors: emb.weight as the embedding, gru.* (12 tensors) as the " \
                                 "recurrent layers, fc.weight as the readout."
    x = torch.tensor([[SORTED.index(ch)] for ch in TEXT[:20]])  # (T, 1): the GRU is time first
    with torch.no_grad():
        want = fc(gru(embedding(x))[0])[:, 0]  # (T, V)
        got = imported.checkpoint.model(x.T)[0][0]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    unnamed = {"a.weight" if k == "emb.weight" else "b.weight" if k == "fc.weight" else k: t
               for k, t in weights.items()}
    with pytest.raises(CheckpointError, match=r"\(a.weight and b.weight\); rnnviz cannot tell the embedding from"):
        import_state_dict({k: t.detach() for k, t in unnamed.items()}, "".join(SORTED))
