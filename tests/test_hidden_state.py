"""Hidden state in an RNN, an LSTM, a minGRU and a Transformer: carried sizes from the tensors, memory probes on
the four shipped english-docs models, the context bottleneck against the ordinary loss, and the page."""

import html
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.charmodel import build_model
from rnnviz.core.config import ModelConfig
from rnnviz.interpret import hidden_state as hs
from rnnviz.ui.hidden_state.attending import readers_caption
from rnnviz.ui.hidden_state.sections import ATTENDED, DEFAULT_SENTENCE, SLOTS, STEP, STRIP
from tests.apptest_helpers import instant_control, instant_shown, move_instant, open_page, page_text
from tests.figure_helpers import numbers

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


def test_the_heat_strips_are_the_carried_tensors_coloured_by_their_own_largest_value():
    """One image per carried tensor: one pixel column block per unit, coloured by value ÷ max |value| on RdBu_r
    (−1 blue, 0 white, +1 red), the max in its label; a K or V has one row block per cached position."""
    from rnnviz.figures.hidden_state import carried_strips, diverging_rgb

    ids = torch.randint(0, 11, (12,), generator=torch.Generator().manual_seed(1))
    lstm = small("lstm")
    carried, (h, c) = hs.carried_state(lstm, ids, 5)
    strips = carried_strips(carried, width_px=40, block_px=30)
    assert [s.label.split(" · ")[0] for s in strips] == ["h (layer 1)", "h (layer 2)", "c (layer 1)", "c (layer 2)"]
    peak = float(c[1, 0].abs().max())
    assert strips[3].label == f"c (layer 2) · max |·| {peak:.2g}"
    unit_px = 5  # 40 px over H = 8 units
    row = strips[3].image[0, ::unit_px]  # one pixel per unit
    np.testing.assert_array_equal(row, diverging_rgb((c[1, 0] / peak).numpy()))
    assert diverging_rgb(np.array([-1.0, 0.0, 1.0])).tolist() == [[5, 48, 97], [247, 247, 247], [103, 0, 31]]
    gpt = small("transformer", n_head=2, block_size=8)
    carried, cache = hs.carried_state(gpt, ids, 5)
    strips = carried_strips(carried, width_px=40, block_px=30)
    assert [s.label.split(" · ")[0] for s in strips] == [f"{x} (layer {n}), s = 0…5" for n in (1, 2) for x in "KV"]
    assert strips[0].image.shape == (6 * 5, 8 * 5, 3)  # 6 positions of 30 // 6 px, 8 units of 5 px


def test_the_attention_table_is_each_heads_row_at_t_with_escaped_characters():
    from rnnviz.figures.hidden_state import attention_table

    gpt = small("transformer", n_head=2, block_size=8)
    text = "<b>&'x\n"
    ids = torch.tensor([ord(ch) % 11 for ch in text])
    start, weights = hs.attention_at(gpt, ids, 5)
    table = attention_table(weights, text, start)
    header = table.split("<tr>")[1]  # the characters s = 0…5 above the columns, each escaped
    assert "<b>" not in table and all(f">{html.escape(ch)}<" in header for ch in "<b>&'")
    assert table.count("<td ") == 2 * 2 * 6  # (layer, head) rows × the six characters s = 0…5
    for s, ch in enumerate(text[:6]):
        assert f"layer 2 head 1 reads {html.escape(repr(ch))} (s = {s}) with weight {weights[1, 0, s]:.3f}" in table


def test_a_mingru_carries_its_h_t_alone_flat_in_t():
    """The minGRU's state is h of every layer, (L, N, H): L·H fp32 numbers whatever t, nothing else (its gates
    read x_t only, so there is no c_t and no cache); the carried h equals the last step of its trace."""
    ids = torch.randint(0, 11, (12,), generator=torch.Generator().manual_seed(1))
    model = small("mingru")
    assert list(hs.carried_bytes_curve(model, ids)) == [2 * 8 * 4] * 12  # L = 2, H = 8, 4 bytes each
    for t in (0, 5, 11):
        carried, state = hs.carried_state(model, ids, t)
        assert isinstance(state, torch.Tensor) and tuple(state.shape) == (2, 1, 8)  # (L, N, H)
        assert [x.name for x in carried.tensors] == ["h (layer 1)", "h (layer 2)"]
        assert carried.numel == 16 and carried.nbytes == state.numel() * state.element_size() == 64
        _, trace = model.trace(ids[: t + 1].view(1, -1))
        np.testing.assert_allclose(np.stack([x.values for x in carried.tensors]), trace["h"][:, -1, 0].detach().numpy(),
                                   atol=1e-5)  # h_t of each layer at t, from the step path


def test_the_shipped_four_carry_flat_flat_flat_linear(shipped):
    text = "The function returns a list of the values."
    curves = {name: hs.carried_bytes_curve(c.model, c.vocab.encode(text)) for name, c in shipped.items()}
    assert len(set(curves["RNN"])) == 1 and len(set(curves["LSTM"])) == 1
    mingru = shipped["minGRU"].model.config
    assert set(curves["minGRU"]) == {mingru.layers * mingru.hidden * 4}  # h of every layer, fp32, flat in t
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
    assert by_name["minGRU h_t"].accuracy[0] > 0.6 > 2 * chance  # measured 0.77: far above chance (0.24)
    assert by_name[hs.TOP_VECTOR].accuracy[0] > 0.6


def test_the_probe_reads_the_transformers_memory_from_its_kv_cache(shipped, val_text):
    """What the Transformer carries into t+1 is its K/V cache: the probe's features are the cache's own entries
    (prefill's keys and values, every layer), x_{t−k} is read from the entry of s = t − k, and it is read
    there as well k = 8 steps back as 1 (the recurrent states fade); the vector at t is labelled not carried."""
    gpt = shipped["Transformer"].model
    block = gpt.block_size
    ids = shipped["Transformer"].vocab.encode(val_text[:1200])
    features, position = hs.probe_features(gpt, ids)
    by_name = {f.name: f for f in features}
    cache = by_name[hs.KV_CACHE]
    assert cache.addressed and cache.carried and not by_name[hs.TOP_VECTOR].carried
    # row s of the second window is that window's cached K and V at s, layer by layer, heads side by side
    _, kv = gpt.prefill(ids[block : 2 * block].view(1, -1))
    s = 17
    expected = torch.cat([z[0, :, s].reshape(-1) for pair in zip(kv.keys, kv.values) for z in pair])
    np.testing.assert_allclose(cache.values[block + s].numpy(), expected.detach().numpy(), atol=1e-5)
    assert cache.values.shape[1] == 2 * gpt.config.layers * gpt.config.hidden  # 2·L·C numbers per position
    assert list(position[: block + 2]) == [*range(block), 0, 1]  # a window's first positions see nothing before
    curves = hs.probe_memory([gpt, shipped["RNN"].model], ids, hs.ProbeConfig(max_k=8, chars=1200, iterations=25))
    acc = {c.name: c.accuracy for c in curves}
    assert min(acc[hs.KV_CACHE]) > 0.9  # every k = 1…8: nothing fades inside the window
    assert acc[hs.KV_CACHE][-1] > acc["RNN h_t"][-1] + 0.3  # while the RNN's h_t has lost most of x_{t−8}
    assert {c.name: c.carried for c in curves} == {hs.KV_CACHE: True, hs.TOP_VECTOR: False, "RNN h_t": True}


def test_bottleneck_at_full_context_is_the_ordinary_loss(shipped, val_text):
    gpt = shipped["Transformer"]
    block = gpt.model.block_size
    ids = gpt.vocab.encode(val_text[: block + 40])
    logits = gpt.model.windowed_logits(ids.view(1, -1))[0]  # how the model ordinarily reads a long text
    t = torch.arange(block - 1, len(ids) - 1)
    expected = F.cross_entropy(logits[t].double(), ids[t + 1]).item()
    assert hs.context_loss(gpt.model, ids, block, block - 1) == pytest.approx(expected, abs=1e-6)
    for name in ("RNN", "LSTM", "minGRU"):  # read from the start of the text: n = the whole text
        model = shipped[name].model
        ids = shipped[name].vocab.encode(val_text[:50])
        logits = model(ids[:-1].view(1, -1))[0][0]
        expected = F.cross_entropy(logits[-1:].double(), ids[-1:]).item()
        assert hs.context_loss(model, ids, len(ids) - 1, len(ids) - 2) == pytest.approx(expected, abs=1e-5)


def test_the_readers_of_s_are_the_positions_after_it():
    """s reading itself is not a later reader; the strongest later reader is found among t > s only."""
    queries = np.arange(3, 7)  # t = 3 (s itself), 4, 5, 6
    weights = np.array([[[0.9, 0.1, 0.3, 0.2]], [[0.95, 0.05, 0.6, 0.1]]])  # (L = 2, h = 1, 4)
    caption = readers_caption(queries, weights, "abcdefg", 3)
    assert caption.startswith("3 later positions (t > s) can read s = 3 ('d')")
    assert "t = 5 ('f'), layer 2 head 1, weight 0.60" in caption  # not s itself, whose 0.95 is larger
    assert readers_caption(np.arange(6, 7), weights[:, :, :1], "abcdefg", 6).startswith("No later position")


def test_the_title_names_all_four_models():
    at = open_page(PAGE, timeout=120)
    assert at.title[0].value == "Hidden state: RNN, LSTM, minGRU, Transformer"


def test_the_page_steps_through_a_sentence_and_fits_the_probe():
    at = open_page(PAGE, timeout=120)
    assert not at.exception
    text = page_text(at) + instant_shown(at, STEP)[1]
    for name in ("RNN", "LSTM", "minGRU", "Transformer"):
        assert f"**{name}**" in text
    assert text.count("bytes**") == 4  # four carried states with their sizes
    mingru = sum(p.numel() for p in load_checkpoint(MODELS_DIR / "mingru-english-docs.pt").model.parameters())
    assert f"**minGRU** ({mingru:,} parameters)" in text
    assert "never $h_{t-1}$: what it writes cannot depend on what it already holds" in text
    assert "attention at t" in text
    move_instant(at, STEP, 20)
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


def test_attention_to_s_is_column_s_of_every_later_positions_attention(shipped):
    """Who attends to s: for every t ≥ s whose window holds s, the weight equals attention_at(t)'s entry for s,
    also once the window slides (a text longer than the context)."""
    ckpt = shipped["Transformer"]
    model, block = ckpt.model, ckpt.model.block_size
    text = ("The function returns a list of the values, in order, and the list is sorted by key; " * 2)[: block + 40]
    ids = ckpt.vocab.encode(text)
    for s in (0, 5, block - 3, block + 10):
        queries, weights = hs.attention_to(model, ids, s)
        assert list(queries) == list(range(s, min(len(ids), s + block)))
        assert weights.shape == (model.config.layers, model.config.n_head, len(queries))
        for column, t in enumerate(queries):
            start, row = hs.attention_at(model, ids, int(t))
            np.testing.assert_allclose(weights[:, :, column], row[:, :, s - start], atol=1e-5)
    # position s reads itself among s′ ≤ s: at t = s the weight on s is the diagonal of the map
    _, trace = model.trace(ids[:10].view(1, -1))
    diagonal = trace.attention[:, 0, :, 3, 3].detach().numpy()  # (L, h): position 3 reading itself
    np.testing.assert_allclose(hs.attention_to(model, ids, 3)[1][:, :, 0], diagonal, atol=1e-5)
    with pytest.raises(ValueError, match="outside"):
        hs.attention_to(model, ids, len(ids))


@pytest.mark.parametrize("kind", ["rnn", "lstm", "mingru", "transformer"])
def test_the_one_pass_bottleneck_is_each_window_read_from_nothing(kind):
    """``bottleneck`` reads the text once from every start; each of its values equals ``context_loss``, which
    reads each window of n on its own."""
    extra = {"n_head": 2, "block_size": 16} if kind == "transformer" else {}
    model = small(kind, **extra)
    ids = torch.randint(0, 11, (60,), generator=torch.Generator().manual_seed(2))
    lengths = (1, 2, 5, 16)
    one_pass = hs.bottleneck(model, ids, lengths)
    assert one_pass == pytest.approx([hs.context_loss(model, ids, n, 15) for n in lengths], abs=1e-5)


def test_a_model_trained_with_its_state_carried_reads_worse_from_a_fresh_state():
    """The reason the page gives for the minGRU's point above ln V: the same minGRU trained with its state
    carried between chunks (as every recurrent model here) predicts worse from h_0 = 0 after 1 character than
    one trained from h_0 = 0 in every chunk, while with the whole context read the two are close."""
    from rnnviz.charlm.train import TrainConfig, Trainer

    corpus = load_builtin("english-docs")
    _, val = corpus.split()
    text = corpus.text[len(corpus) - len(val):][:400]
    losses = {}
    for reset in (False, True):
        config = TrainConfig(kind="mingru", layers=1, hidden=64, embed_dim=16, batch=16, seq_len=32, lr=1e-2,
                             reset_state=reset, device="cpu", seed=0)
        trainer = Trainer(config, corpus)
        trainer.run(300)
        losses[reset] = hs.bottleneck(trainer.model, trainer.vocab.encode(text), (1, 32))
    carried, fresh = losses[False], losses[True]
    assert carried[0] > fresh[0] + 0.15  # measured 3.33 against 2.99 nats after 1 character
    assert abs(carried[1] - fresh[1]) < 0.1  # with 32 characters read: 2.44 and 2.43


def test_the_bottleneck_draws_ln_v_and_says_why_the_mingru_is_above_it(shipped, val_text):
    """The dashed line sits at ln V of the models' vocabulary; the minGRU reading 1 character from h_0 = 0
    scores above it (the engine's own number), and the page names that point and gives the reason."""
    at = open_page(PAGE, timeout=180)
    assert not at.exception
    vocab_size = shipped["minGRU"].vocab.size
    uniform = math.log(vocab_size)
    spec = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "characters read (log scale)" in
                           c.proto.spec))
    lines = [shape for shape in spec["layout"]["shapes"] if shape.get("y0") == shape.get("y1")]
    assert [shape["y0"] for shape in lines] == [pytest.approx(uniform)]
    assert any(f"ln {vocab_size} = {uniform:.3f}" in a["text"] for a in spec["layout"]["annotations"])
    model, vocab = shipped["minGRU"].model, shipped["minGRU"].vocab
    one_char = hs.bottleneck(model, vocab.encode(val_text[:864]), (1, 64))[0]
    assert one_char > uniform  # the point the issue saw: worse than the uniform guess
    text = page_text(at)
    points = {t["name"]: t for t in spec["data"] if t["mode"] == "lines+markers"}
    assert points["minGRU"]["y"][0] == pytest.approx(one_char)
    above = [(name, n, y) for name, trace in points.items() for n, y in zip(trace["x"], trace["y"])
             if y is not None and y > uniform]
    assert above  # every point above ln V is named on the page with its loss
    for name, n, y in above:
        assert f"the {name} at n = {n}: {y:.3f} against ln {vocab_size} = {uniform:.3f}" in text
    assert "trained with their state carried from one chunk of text to the next" in text
    assert "a fresh h_0 = 0 is a start they met only at their very first step" in text


def test_the_probe_on_the_page_reads_the_kv_cache_and_says_the_vector_at_t_is_not_carried():
    at = open_page(PAGE, timeout=180)
    at.button(key="hidden_state_probe_button").click().run()
    assert not at.exception
    spec = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "held-out accuracy" in c.proto.spec))
    names = [t["name"] for t in spec["data"]]
    assert hs.KV_CACHE in names and f"{hs.TOP_VECTOR} (computed at t, not carried)" in names
    assert not any(name.startswith("Transformer layer") or "embedding" in name for name in names)
    text = page_text(at)
    assert "Attention does not forget inside its window" in text and "K/V cache" in text


def test_bottleneck_beyond_a_transformers_context_is_nan():
    torch.manual_seed(0)
    model = build_model(ModelConfig(vocab_size=11, kind="transformer", hidden=8, layers=1, n_head=2,
                                    block_size=4)).eval()
    ids = torch.randint(0, 11, (40,))
    losses = hs.bottleneck(model, ids, (1, 2, 4, 8))
    assert all(np.isfinite(losses[:3])) and np.isnan(losses[3])
    assert losses[2] == pytest.approx(hs.context_loss(model, ids, 4, 7))


def test_s_and_the_connectivity_t_send_every_stop_from_torch_and_follow_a_move(shipped):
    """Who attends to s, and the connectivity's t, answer in the browser: each sends every stop, and a stop's words
    and figure are the Transformer's own attention weights on s, or the RNN's gradient norms as torch.autograd gives
    them; a move lands in the session and the address, and the strip's mark or the coloured rows follow it."""
    from rnnviz.ui.hidden_state.connectivity import PREDICTION, SHARE

    at = open_page(PAGE, timeout=120)
    assert not at.exception
    sentence = at.text_input(key="hidden_state_sentence").value
    sent = instant_control(at, ATTENDED)
    assert sent["labels"] == [f"{i}: {c!r}" for i, c in enumerate(sentence)]
    # The reference: one trace of the sentence (shorter than the context, so every t reads it from its start).
    model, vocab = shipped["Transformer"].model.eval(), shipped["Transformer"].vocab
    assert len(sentence) <= model.block_size
    with torch.no_grad():
        _, trace = model.trace(vocab.encode(sentence).view(1, -1))
    on_s = trace.attention[:, 0, :, 4:, 4].numpy()  # (L, h, t = 4 … end): each t's weight on s = 4
    later = on_s[:, :, 1:]
    layer, head, t = (int(i) for i in np.unravel_index(int(later.argmax()), later.shape))
    words = " ".join(block["caption"] for block in sent["views"][4])
    assert f"{len(sentence) - 5} later positions (t > s) can read s = 4 ('f')" in words  # by hand: t = 5 … end
    assert (f"The strongest later reader: t = {t + 5} ({sentence[t + 5]!r}), layer {layer + 1} head {head + 1}, "
            f"weight {later.max():.2f}.") in words
    spec = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if c.proto.id.endswith("_figure_attended")))
    heat = spec["frames"][4]["data"][0]
    assert list(numbers(heat["x"])) == list(range(len(sentence) - 4))
    assert np.allclose(numbers(heat["z"]), on_s.reshape(-1), atol=1e-4)
    move_instant(at, ATTENDED, 9)  # as the browser reports a move
    assert not at.exception
    assert instant_control(at, ATTENDED)["index"] == 9 and at.query_params["s"] == "9"
    strip = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if c.proto.id.endswith(STRIP)))
    colours = strip["data"][0]["marker"]["color"]
    assert [i for i, colour in enumerate(colours) if colour != colours[0]] == [9]

    sent = instant_control(at, PREDICTION)
    assert sent["index"] == len(sentence) - 2 and sent["labels"][10] == f"10: {sentence[10]!r}"
    # The reference at t = 10: ‖∂ log p(x_11 | x_≤10) / ∂ x_s‖ of the shipped RNN, by torch.autograd.
    model, vocab = shipped["RNN"].model.eval(), shipped["RNN"].vocab
    ids = vocab.encode(sentence)
    x = model.inputs(ids[None, :11]).detach().requires_grad_(True)
    out, _ = model.rnn(x)
    log_p = F.log_softmax(model.head(out[0, -1]).double(), dim=-1)[int(ids[11])]
    (grad,) = torch.autograd.grad(log_p, x)
    relative = (grad[0].norm(dim=-1) / grad[0].norm(dim=-1).max()).double().numpy()
    reach = max(10 - s for s in range(11) if relative[s] >= SHARE)
    words = " ".join(block.get("text", block.get("caption", "")) for block in sent["views"][10])
    assert f"the gradient is of log p({sentence[11]!r}), the sentence's next character" in words
    assert f"RNN {reach} character{'s' if reach != 1 else ''} back" in words
    spec = json.loads(next(c.proto.spec for c in at.get("plotly_chart")
                           if c.proto.id.endswith("_figure_connectivity")))
    line = next(trace for trace in spec["frames"][10]["data"] if trace["name"] == "RNN")
    assert list(numbers(line["x"])) == list(range(10, -1, -1))  # d = t − s for s = 0 … 10
    assert np.allclose(numbers(line["y"]), relative, rtol=1e-4)
    move_instant(at, PREDICTION, 10)  # as the browser reports a move
    assert not at.exception
    assert instant_control(at, PREDICTION)["index"] == 10 and at.query_params["ct"] == "10"
    rows = " ".join(h.value for h in at.html)
    norm = float(grad[0, 10].norm())
    assert f"RNN: s = 10 ({sentence[10]}), 0 back: ‖∂ log p / ∂ x_s‖ = {norm:.3g}" in html.unescape(rows)


def test_a_sentence_longer_than_the_browser_takes_ahead_is_drawn_by_the_server_stop_by_stop(shipped):
    """Past INSTANT_CHARS characters s and the connectivity's t are server sliders (every stop's figure would be
    megabytes): the stop picked is drawn, with the same words."""
    from rnnviz.ui.hidden_state.connectivity import PREDICTION
    from rnnviz.ui.hidden_state.sections import INSTANT_CHARS

    sentence = "The function returns a list of the values, in order, and then it stops reading the file at once."
    assert len(sentence) == 96 > INSTANT_CHARS
    at = open_page(PAGE, timeout=120)
    at.text_input(key="hidden_state_sentence").set_value(sentence).run()
    assert not at.exception
    assert not [el for el in at.get("bidi_component") if el.proto.id.endswith((f"-{ATTENDED}_instant",
                                                                                 f"-{PREDICTION}_instant"))]
    at.select_slider(key=ATTENDED).set_value(90).run()
    assert not at.exception and at.query_params["s"] == "90"
    # By hand: the Transformer's 64-character windows that hold s = 90 are those of t = 90 … 95, so 5 later ones.
    assert "5 later positions (t > s) can read s = 90 (' ')" in page_text(at).replace("\\", "")  # (markdown's escapes)
    at.select_slider(key=PREDICTION).set_value(30).run()
    assert not at.exception and at.query_params["ct"] == "30"
    assert f"Read so far: “{sentence[:31]}”; the gradient is of log p('t')" in page_text(at).replace("\\", "")


def test_a_slot_takes_this_sessions_live_trained_model():
    from rnnviz.charlm.train import TrainConfig
    from rnnviz.serving.live import LiveRun
    from rnnviz.ui.kit.models import LIVE_RUN_KEY

    corpus = load_builtin("english-docs")
    run = LiveRun.create(TrainConfig(kind="transformer", layers=1, hidden=32, n_head=2, block_size=32, seq_len=32,
                                     batch=4, optimizer="adamw", lr=1e-3, forget_bias=None, device="cpu"), corpus)
    run.trainer.run(3)
    at = open_page(PAGE, timeout=120)
    at.session_state[LIVE_RUN_KEY] = run
    at.run()
    slot_box = at.selectbox(key="hidden_state_source_Transformer")
    assert slot_box.options == ["shipped: transformer-english-docs.pt", "live-trained on english-docs, step 3"]
    slot_box.set_value("live").run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at) + instant_shown(at, STEP)[1]
    assert "**Transformer** (" in text and "live-trained)" in text
    live_params = sum(p.numel() for p in run.trainer.model.parameters())
    assert f"{live_params:,} parameters, live-trained" in text
    # its context is 32: a sentence of 53 characters slides its window; the page says where it starts
    move_instant(at, STEP, 40)
    assert "window starts at position 9" in instant_shown(at, STEP)[1]
    assert not at.exception
    # the RNN and LSTM slots keep their shipped models
    assert at.selectbox(key="hidden_state_source_LSTM").value == "shipped"



def test_the_race_takes_a_mingru_as_a_third_contender_when_ticked(monkeypatch):
    from rnnviz.charlm.presets import ALL_PRESETS, MINGRU_PRESET
    from rnnviz.serving.race import RaceStatus
    from rnnviz.ui.hidden_state import race as race_ui

    for name, value in (("DURATIONS", (1, 20, 60)), ("DEFAULT_SECONDS", 1), ("MARK_EVERY_S", 0.5),
                        ("SLICE_S", 0.25), ("EVAL_CHARS", 2_000), ("SAMPLE_CHARS", 40)):
        monkeypatch.setattr(race_ui, name, value)  # the real presets, a short clock
    at = open_page(PAGE, timeout=120)
    at.checkbox(key=race_ui.WITH_OPTIONAL).check().run()
    at.button(key=f"{race_ui.PAGE}_start").click().run()
    assert not at.exception
    runner = at.session_state[race_ui.RUNNER]
    runner.join(120)
    assert runner.status == RaceStatus.FINISHED, runner.message
    at.run()
    assert not at.exception
    race = runner.race
    assert list(race.trainers) == ["LSTM", "Transformer", "minGRU"]
    assert race.trainers["minGRU"].config == ALL_PRESETS[MINGRU_PRESET].config
    assert [m.mark for m in race.curves["minGRU"]] == [0.5, 1.0]
    assert "minGRU" in page_text(at)
    # the finished race's minGRU may fill the minGRU slot of the page
    slot_box = at.selectbox(key="hidden_state_source_minGRU")
    assert slot_box.options[-1].startswith("the race's minGRU, step ")
    slot_box.set_value("race").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "parameters, from the race)" in instant_shown(at, STEP)[1]


def test_the_connectivity_section_shows_each_models_gradient_norms_and_reach(shipped):
    """The page's connectivity of the prediction after t: the reach it prints and the norms on hover are the engine's
    for each shipped model; a Transformer's context cuts it off exactly; the link carries t."""
    from rnnviz.interpret.connectivity import connectivity
    from rnnviz.ui.hidden_state.connectivity import PREDICTION, SHARE

    long = "A sentence much longer than the context of the small Transformer, so that its window slides on."
    t = long.index(" on.") + 1  # has read "…slides o"; next comes "n"
    at = open_page(PAGE, timeout=120, query={"sentence": long, "ct": str(t)})
    # (longer than INSTANT_CHARS: the server draws the t picked)
    assert not at.exception and at.select_slider(key=PREDICTION).value == t
    text, html_rows = page_text(at).replace("\\", ""), " ".join(h.value for h in at.html)
    assert "the gradient is of log p('n'), the sentence's next character" in text
    for name, checkpoint in shipped.items():
        result = connectivity(checkpoint.model, checkpoint.vocab.encode(long), t)
        assert checkpoint.vocab.decode([result.target]) == "n"
        reach = result.reach(SHARE)
        assert f"{name} {reach} character{'s' if reach != 1 else ''} back" in text
        # The character read last: the hover names its exact norm.
        assert f"{name}: s = {t} (o), 0 back: ‖∂ log p / ∂ x_s‖ = {result.norms[t]:.3g}" in html_rows
    context = shipped["Transformer"].model.block_size
    transformer = connectivity(shipped["Transformer"].model, shipped["Transformer"].vocab.encode(long), t)
    assert transformer.first_read == t + 1 - context
    assert f"nothing before its context (from s = {t + 1 - context})" in text
    assert at.query_params["ct"] == str(t)


def test_the_mean_connectivity_figure_draws_the_engines_mean_per_model_and_leaves_out_zeros():
    """One line per model in its kind's colour, at the engine's mean for each d; the Transformer's exact 0 beyond its
    context is left out of the log axis; the legend sits below the plot."""
    from rnnviz.figures.hidden_state import MODEL_COLOURS, mean_connectivity_figure
    from rnnviz.interpret.connectivity import mean_connectivity

    ids = torch.randint(0, 11, (30,), generator=torch.Generator().manual_seed(2))
    lstm, gpt = small("lstm").double(), small("transformer", block_size=6).double()
    results = {"LSTM": mean_connectivity(lstm, ids, max_distance=9), "Transformer": mean_connectivity(gpt, ids,
                                                                                                      max_distance=9)}
    figure = mean_connectivity_figure(results, {"LSTM": "lstm", "Transformer": "transformer"})
    lines = {trace.name: trace for trace in figure.data}
    np.testing.assert_allclose(lines["LSTM"].y, results["LSTM"].mean())
    assert list(lines["LSTM"].x) == list(range(10))
    assert list(lines["Transformer"].x) == list(range(6))  # d ≥ 6 is outside a context of 6: exactly 0
    np.testing.assert_allclose(lines["Transformer"].y, results["Transformer"].mean()[:6])
    np.testing.assert_allclose(lines["Transformer"].customdata, results["Transformer"].median()[:6])
    assert lines["LSTM"].line.color == MODEL_COLOURS["lstm"]
    assert lines["Transformer"].line.color == MODEL_COLOURS["transformer"]
    assert figure.layout.yaxis.type == "log" and figure.layout.legend.orientation == "h"
    assert figure.layout.legend.y < 0


def test_the_passage_connectivity_prints_the_engines_shares_for_the_shipped_models(shipped):
    """After the click, the sentence under the curves quotes mean_connectivity of each shipped model over the
    held-out passage at 20 back, and its reach; what it says of the RNN against the LSTM follows those numbers."""
    from rnnviz.interpret.connectivity import mean_connectivity
    from rnnviz.ui.hidden_state.connectivity import (
        DISTANCE,
        EVERY,
        FAR,
        MAX_DISTANCE,
        SHARE,
        passage,
        passage_caption,
        percent,
    )

    text = passage()
    results = {name: mean_connectivity(c.model, c.vocab.encode(text), max_distance=MAX_DISTANCE, every=EVERY)
               for name, c in shipped.items()}
    at = open_page(PAGE, timeout=180)
    assert not at.exception
    at.button(key="hidden_state_passage_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = page_text(at)
    rnn = results["RNN"].at(DISTANCE)
    assert f"At {DISTANCE} characters back, the RNN's prediction keeps on average {percent(rnn)}" in shown
    for name in ("LSTM", "minGRU", "Transformer"):
        assert f"the {name}'s {percent(results[name].at(DISTANCE))}" in shown
    reaches = ", ".join(f"{name} {results[name].reach(SHARE)}" for name in SLOTS)
    assert f"still at least {SHARE:.0%}: {reaches} characters" in shown
    assert passage_caption(results) in shown
    # further back: each one's mean factor per character from DISTANCE to FAR characters back
    for name in ("RNN", "LSTM"):
        factor = (results[name].at(FAR) / results[name].at(DISTANCE)) ** (1 / (FAR - DISTANCE))
        assert f"{factor:.2f}" in shown
    lstm = results["LSTM"].at(DISTANCE)
    if rnn >= lstm:  # the measurement does not show the RNN shorter: the page must not claim it is
        assert "fades faster than the LSTM's" not in shown
        assert "opposite of the usual picture" in shown or "does not measurably fade faster" in shown
    context = shipped["Transformer"].model.block_size
    assert results["Transformer"].mean()[context:].max() == 0
    assert f"The Transformer's line stops at d = {context - 1}" in shown


def _strip(data: dict, t: int, slot: str, label: str) -> dict:
    """The image block ``label`` of ``slot``'s column at stop t (the grid's columns, in rows of two)."""
    parts = [part for block in data["views"][t] if "columns" in block for part in block["columns"]]
    column = next(part for part in parts if part[0]["text"].startswith(f"**{slot}**"))
    return next(block for block in column if "image" in block and block["caption"].startswith(label))


def _pixels(block: dict) -> np.ndarray:
    import base64
    import io

    from PIL import Image

    prefix = "data:image/png;base64,"
    assert block["image"].startswith(prefix)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(block["image"][len(prefix):]))).convert("RGB"))


def test_t_answers_in_the_browser_with_every_ts_strips_and_attention(shipped):
    """Every t is a stop of the t slider: its RNN strip is coloured by h_t from PyTorch's own recurrence run by
    hand over the sentence (red where h > 0, blue where h < 0, darker the larger |h|), and its attention table holds
    the Transformer's own attention row at t; a move lands in the session and the address."""
    at = open_page(PAGE, timeout=120)
    data = instant_control(at, STEP)
    assert data["labels"] == [str(t) for t in range(len(DEFAULT_SENTENCE))] and data["index"] == 12
    t = 20
    assert f"Read so far (t = {t}): “{DEFAULT_SENTENCE[: t + 1]}”" in data["views"][t][0]["text"]
    # h_t by hand: h = tanh(W_ih x + b_ih + W_hh h + b_hh) over x_0 … x_t
    rnn = shipped["RNN"]
    ids = rnn.vocab.encode(DEFAULT_SENTENCE)
    cell = rnn.model.rnn
    h = torch.zeros(cell.hidden_size)
    with torch.no_grad():
        inputs = rnn.model.inputs(ids.view(1, -1))[0]
        for x in inputs[: t + 1]:
            h = torch.tanh(cell.weight_ih_l0 @ x + cell.bias_ih_l0 + cell.weight_hh_l0 @ h + cell.bias_hh_l0)
    h = h.numpy()
    strip = _strip(data, t, "RNN", "h (layer 1)")
    assert f"max |·| {np.abs(h).max():.2g}" in strip["caption"]
    pixels = _pixels(strip)[0].astype(int)  # one pixel per unit
    assert pixels.shape == (len(h), 3) and strip["width"] >= len(h)
    red, blue = pixels[:, 0] - pixels[:, 2], pixels[:, 2] - pixels[:, 0]
    clear = np.abs(h) > 0.2 * np.abs(h).max()
    assert (red[clear & (h > 0)] > 0).all() and (blue[clear & (h < 0)] > 0).all()
    darkness = 765 - pixels.sum(axis=1)
    order = np.argsort(np.abs(h))
    assert np.corrcoef(np.abs(h)[order], darkness[order])[0, 1] > 0.9
    peak = int(np.argmax(np.abs(h)))  # drawn in RdBu_r's end: dark red rgb(103,0,31) or dark blue rgb(5,48,97)
    assert np.abs(pixels[peak] - ((103, 0, 31) if h[peak] > 0 else (5, 48, 97))).max() <= 2
    # the attention table at t: the Transformer's own trace, row t
    gpt = shipped["Transformer"]
    _, trace = gpt.model.trace(gpt.vocab.encode(DEFAULT_SENTENCE[: t + 1]).view(1, -1))
    row = trace.attention[:, 0, :, t, : t + 1].detach().numpy()  # (L, heads, s ≤ t)
    table = instant_control(at, f"{STEP}_figure_attention")["views"][t][1]["heat_table"]
    assert [c[0] for c in table["columns"]] == [c if c != " " else "·" for c in DEFAULT_SENTENCE[: t + 1]]
    shown = np.array([[float(value) for _, value in r["cells"]] for r in table["rows"]])
    np.testing.assert_allclose(shown, row.reshape(-1, t + 1), atol=6e-4)
    assert table["rows"][1]["label"] == "layer 1 head 2"
    move_instant(at, STEP, 30)
    assert not at.exception
    assert instant_control(at, STEP)["index"] == 30 and at.query_params["t"] == "30"
