"""Hidden state in an RNN, an LSTM and a Transformer: carried sizes from the tensors, memory probes on the
three shipped english-docs models, the context bottleneck against the ordinary loss, and the page."""

import pytest
import torch
import torch.nn.functional as F

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.charmodel import ModelConfig, build_model
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.hidden_state import SLOTS
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/hidden_state.py"


@pytest.fixture(scope="module")
def shipped():
    return {name: load_checkpoint(MODELS_DIR / f"{stem}.pt") for name, stem in SLOTS.items()}


@pytest.fixture(scope="module")
def val_text():
    corpus = load_builtin("english-docs")
    _, val = corpus.split()
    return corpus.text[len(corpus) - len(val):]


def small(kind: str, **extra):
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=11, kind=kind, hidden=8, layers=2, embed_dim=4, **extra)
    return build_model(config).eval()


def test_carried_bytes_are_the_tensors_sizes_flat_flat_linear():
    ids = torch.randint(0, 11, (12,), generator=torch.Generator().manual_seed(1))
    rnn, lstm = small("rnn"), small("lstm")
    gpt = small("transformer", n_head=2, block_size=8)
    # By hand: fp32 is 4 bytes; RNN h (L·H), LSTM h and c (2·L·H), Transformer K and V (2·L·(t+1)·C).
    assert list(hs.carried_bytes_curve(rnn, ids)) == [2 * 8 * 4] * 12
    assert list(hs.carried_bytes_curve(lstm, ids)) == [2 * 2 * 8 * 4] * 12
    gpt_curve = hs.carried_bytes_curve(gpt, ids)
    assert list(gpt_curve) == [2 * 2 * min(t + 1, 8) * 8 * 4 for t in range(12)]  # linear, then the window is full
    for model in (rnn, lstm, gpt):
        carried, state = hs.carried_state(model, ids, 5)
        tensors = state if isinstance(state, tuple) else (state,)
        if model is gpt:
            tensors = (*state.keys, *state.values)
        assert carried.nbytes == sum(x.numel() * x.element_size() for x in tensors)
        assert carried.numel == sum(x.numel() for x in tensors)
    carried, _ = hs.carried_state(gpt, ids, 10)
    assert carried.window_start == 3  # positions 3…10: the last 8 characters


def test_the_shipped_three_carry_flat_flat_linear(shipped):
    text = "The function returns a list of the values."
    curves = {name: hs.carried_bytes_curve(c.model, c.vocab.encode(text)) for name, c in shipped.items()}
    assert len(set(curves["RNN"])) == 1 and len(set(curves["LSTM"])) == 1
    steps = set(torch.tensor(curves["Transformer"]).diff().tolist())
    config = shipped["Transformer"].model.config
    assert steps == {2 * config.layers * config.hidden * 4}  # 2·L·C fp32 numbers per character


def test_probe_reads_the_previous_character_far_above_chance(shipped, val_text):
    ids = shipped["RNN"].vocab.encode(val_text[:1200])
    for ckpt in shipped.values():
        assert ckpt.vocab.chars == shipped["RNN"].vocab.chars
    curves = hs.probe_memory([c.model for c in shipped.values()], ids, hs.ProbeConfig(max_k=1, chars=1200))
    by_name = {c.name: c for c in curves}
    chance = curves[0].chance[0]
    assert chance < 0.3
    assert by_name["RNN h_t"].accuracy[0] > 0.8
    assert by_name["LSTM [h_t; c_t]"].accuracy[0] > 0.8
    top = max(name for name in by_name if name.startswith("Transformer layer"))
    assert by_name[top].accuracy[0] > 0.6


def test_bottleneck_at_full_context_is_the_ordinary_loss(shipped, val_text):
    gpt = shipped["Transformer"]
    block = gpt.model.block_size
    ids = gpt.vocab.encode(val_text[: block + 40])
    logits = gpt.model.windowed_logits(ids.view(1, -1))[0]  # how the model ordinarily reads a long text
    t = torch.arange(block - 1, len(ids) - 1)
    expected = F.cross_entropy(logits[t].double(), ids[t + 1]).item()
    assert hs.context_loss(gpt.model, ids, block, block - 1) == pytest.approx(expected, abs=1e-6)
    for name in ("RNN", "LSTM"):  # read from the start of the text: n = the whole text
        model = shipped[name].model
        ids = shipped[name].vocab.encode(val_text[:50])
        logits = model(ids[:-1].view(1, -1))[0][0]
        expected = F.cross_entropy(logits[-1:].double(), ids[-1:]).item()
        assert hs.context_loss(model, ids, len(ids) - 1, len(ids) - 2) == pytest.approx(expected, abs=1e-5)


def test_the_page_steps_through_a_sentence_and_fits_the_probe():
    at = open_page(PAGE, timeout=120)
    assert not at.exception
    text = page_text(at)
    for name in ("RNN", "LSTM", "Transformer"):
        assert f"**{name}**" in text
    assert text.count("bytes**") == 3  # three carried states with their sizes
    assert "attention at t" in text
    at.slider(key="hidden_state_t").set_value(20).run()
    assert not at.exception
    at.button(key="hidden_state_probe_button").click().run()
    assert not at.exception
    charts = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("held-out accuracy" in spec for spec in charts)


def test_a_character_outside_a_vocabulary_is_named_and_the_sentence_stays():
    at = open_page(PAGE, timeout=120)
    sentence = "Snow ☃ falls."
    at.text_input(key="hidden_state_sentence").set_value(sentence).run()
    assert not at.exception
    assert at.text_input(key="hidden_state_sentence").value == sentence
    errors = " ".join(e.value for e in at.error)
    assert "'☃'" in errors and "vocabulary" in errors
    # A sentence longer than the Transformer's context: the page says where its window starts.
    long = "A sentence much longer than the context of the small Transformer, so that its window slides on."
    at.text_input(key="hidden_state_sentence").set_value(long).run()
    at.slider(key="hidden_state_t").set_value(len(long) - 1).run()
    assert not at.exception
    start = len(long) - 64
    assert any(f"window starts at position {start}" in w.value for w in at.warning)
