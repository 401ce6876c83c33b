"""The captioner: shapes, the two joins' shared start and batches, decoding, saliency, CHAIR, shipped models."""

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from rnnviz.captioning.world import Scene, SceneObject

TINY = M.CaptionConfig(channels=(4, 8, 8), v_dim=12, embed=8, hidden=16, n_train=64, steps=3, batch=16, seed=3)


@pytest.fixture(scope="module")
def trained():
    """Both joins after a few steps, so decoding is not uniform."""
    models, _ = M.train_pair(replace(TINY, steps=20))
    return models


@pytest.fixture(scope="module")
def scenes():
    return world.heldout(6, 42)


def test_shapes_and_the_trace_path_equals_the_fast_path(trained, scenes):
    images = M.pixels(scenes.images)
    tokens = M.caption_tensor(scenes.captions())
    for model in trained.values():
        v = model.encode(images)
        assert v.shape == (6, TINY.v_dim)
        logits, loss = model(images, tokens[:, :-1], tokens[:, 1:])
        assert logits.shape == (6, M.MAX_LEN, len(M.VOCAB)) and loss.dim() == 0
        trace = model.trace(images, tokens[:, :-1])
        out, _ = model.rnn(model.inputs(tokens[:, :-1], v), model.initial_state(v))
        torch.testing.assert_close(trace.output, out, atol=1e-5, rtol=1e-5)
        assert trace["c"].shape == (1, M.MAX_LEN, 6, TINY.hidden)
    every, h0 = trained["every"], trained["h0"]
    assert every.rnn.weight_ih_l0.shape[1] == TINY.embed + TINY.v_dim  # reads [x_t; v]
    assert h0.rnn.weight_ih_l0.shape[1] == TINY.embed and h0.init_h is not None and h0.init_c is not None
    assert every.init_h is None and every.init_c is None


def test_h0_join_puts_v_in_the_initial_state_only_and_every_join_starts_from_zeros(trained, scenes):
    h0 = trained["h0"]
    v = h0.encode(M.pixels(scenes.images))
    h, c = h0.initial_state(v)
    torch.testing.assert_close(h[0], torch.tanh(v @ h0.init_h.weight.T + h0.init_h.bias))  # h_0 = tanh(W_h v + b_h)
    torch.testing.assert_close(c[0], v @ h0.init_c.weight.T + h0.init_c.bias)  # c_0 = W_c v + b_c
    words = torch.zeros(6, 4, dtype=torch.long)
    assert h0.inputs(words, v).shape == (6, 4, TINY.embed)  # x_t only: v never enters after t = 0
    h, c = trained["every"].initial_state(v)
    assert torch.all(h == 0) and torch.all(c == 0)


def test_both_joins_start_from_the_same_weights():
    pair = M.init_pair(TINY)
    every, h0 = pair["every"].state_dict(), pair["h0"].state_dict()
    for name, tensor in h0.items():
        if name == "rnn.weight_ih_l0":
            torch.testing.assert_close(tensor, every[name][:, : TINY.embed], rtol=0, atol=0)
        elif name.startswith(("init_h", "init_c")):
            assert name not in every
        else:
            torch.testing.assert_close(tensor, every[name], rtol=0, atol=0)
    again = M.init_pair(TINY)  # deterministic from the seed
    for name, tensor in again["h0"].state_dict().items():
        assert torch.equal(tensor, h0[name])


def test_both_joins_see_the_same_batches_and_train_as_if_alone():
    assert np.array_equal(M.batch_order(TINY), M.batch_order(replace(TINY, join="h0")))
    seen = []
    pair, history = M.train_pair(TINY, lambda step, steps, loss: seen.append((step, steps, sorted(loss))))
    assert seen == [(s, 3, ["every", "h0"]) for s in (1, 2, 3)]
    for join in ("every", "h0"):
        alone, _ = M.train_one(replace(TINY, join=join))
        for name, tensor in alone.state_dict().items():
            torch.testing.assert_close(tensor, pair[join].state_dict()[name], rtol=0, atol=0)
        assert len(history.loss[join]) == 3


@pytest.mark.parametrize("join", ["every", "h0"])
def test_beam_width_one_is_greedy_and_scores_are_sums_of_word_logprobs(trained, scenes, join):
    model = trained[join]
    for n in range(len(scenes)):
        image = M.pixels(scenes.images[n:n + 1])
        beams, tree = M.beam_search(model, image, width=1)
        assert list(beams[0].ids) == M.greedy(model, image)[0]
        for width in (3, 7):
            beams, tree = M.beam_search(model, image, width=width)
            assert 1 <= len(beams) <= width
            scores = [b.logprob for b in beams]
            assert scores == sorted(scores, reverse=True)
            for beam in beams:
                lp = M.word_logprobs(model, image, list(beam.ids))
                assert beam.logprob == pytest.approx(float(lp.double().sum()), abs=1e-4)
                assert beam.finished == (beam.ids[-1] == M.END_ID)
                assert len(beam.ids) <= M.MAX_LEN
            assert any(node.kept for node in tree[0])
            assert all(len(step) <= width for step in tree)


def test_beam_search_refuses_a_width_outside_one_to_ten(trained, scenes):
    with pytest.raises(ValueError, match="1 to 10"):
        M.beam_search(trained["every"], M.pixels(scenes.images[:1]), width=11)


def test_decoding_stops_at_end_or_the_length_cap(trained, scenes):
    images = M.pixels(scenes.images)
    for ids in M.greedy(trained["every"], images, max_len=5):
        assert len(ids) <= 5
    for ids in M.sample(trained["h0"], images, temperature=2.0, seed=1):
        assert M.END_ID not in ids[:-1] and len(ids) <= M.MAX_LEN
    a = M.sample(trained["h0"], images, temperature=0.8, seed=4)
    assert a == M.sample(trained["h0"], images, temperature=0.8, seed=4)
    with pytest.raises(ValueError, match="temperature"):
        M.sample(trained["h0"], images, temperature=0)


def test_gradient_saliency_matches_a_finite_difference(trained, scenes):
    model = M.init_pair(TINY)["every"].double()
    image = M.pixels(scenes.images[:1]).double()
    ids = M.encode_caption(scenes.captions()[0])[1:]
    t = 3
    heat = M.saliency(model, image, ids, t)
    assert heat.shape == (48, 48) and (heat >= 0).all()

    @torch.no_grad()
    def log_p(x):
        logits, _ = model(x, torch.tensor([[M.START_ID, *ids[:t]]]))
        return float(F.log_softmax(logits[0, -1], -1)[ids[t]])

    for y, x in [(10, 10), (24, 30), (40, 5)]:
        grads = []
        for ch in range(3):
            plus, minus = image.clone(), image.clone()
            plus[0, ch, y, x] += 1e-6
            minus[0, ch, y, x] -= 1e-6
            grads.append(abs(log_p(plus) - log_p(minus)) / 2e-6)
        assert heat[y, x] == pytest.approx(max(grads), rel=1e-3, abs=1e-7)
    occl = M.saliency(model, image, ids, t, method="occlusion")
    assert occl.shape == (48, 48) and (occl >= 0).all()
    with pytest.raises(ValueError, match="method"):
        M.saliency(model, image, ids, t, method="lime")


def test_object_share_is_the_mass_on_object_pixels():
    heat = np.zeros((48, 48))
    heat[0, 0], heat[10, 10] = 3.0, 1.0
    mask = np.zeros((48, 48), dtype=bool)
    mask[10, 10] = True
    assert M.object_share(heat, mask) == 0.25


def _scene(background, *objects):
    return Scene(background, tuple(SceneObject(*o) for o in objects))


def test_chair_on_hand_made_captions():
    water = _scene("water", ("circle", "red", "small", "left"))
    two = _scene("grass", ("circle", "red", "small", "left"), ("square", "blue", "large", "right"))
    captions = [
        "a small red circle at left and a large white boat at right on water",  # boat hallucinated: 1 of 2
        "a small red circle at left and a large blue square at right on grass",  # right
        "a small red square at left and a large blue square at right on grass",  # 2 square mentions, both present
    ]
    c = M.chair(captions, [water, two, two])
    assert (c.mentions, c.hallucinated, c.bad_captions, c.captions) == (6, 1, 1, 3)
    assert c.chair_i == pytest.approx(1 / 6) and c.chair_s == pytest.approx(1 / 3)
    c = M.chair(["a small red boat at left and a small red triangle at middle on water"], [water])
    assert (c.chair_i, c.chair_s) == (1.0, 1.0)
    assert M.chair([], []).chair_i == 0.0


def test_attribute_accuracy_on_hand_made_captions():
    two = _scene("grass", ("circle", "red", "small", "left"), ("square", "blue", "large", "right"))
    acc = M.attribute_accuracy(["a small red circle at left and a small blue boat at middle on sand", "gibberish"],
                               [two, two])
    # Two captions, four true objects: only the left circle is named at its position, with all its attributes.
    assert acc["exact"] == 0 and acc["unparsed"] == 0.5
    assert acc["position"] == 0.25 and acc["shape"] == 0.25 and acc["colour"] == 0.25 and acc["size"] == 0.25
    assert acc["background"] == 0.0
    perfect = M.attribute_accuracy([world.caption(two)], [two])
    assert all(perfect[k] == 1.0 for k in ("exact", *M.ATTRIBUTES))


def test_image_influence_is_zero_when_v_is_cut_off(trained, scenes):
    model = trained["every"]
    kl, counts = M.image_influence(model, scenes)
    assert kl.shape == counts.shape == (M.MAX_LEN,) and (kl >= -1e-6).all() and kl.max() > 0
    cut = M.Captioner(model.config)
    cut.load_state_dict(model.state_dict())
    with torch.no_grad():
        cut.rnn.weight_ih_l0[:, TINY.embed:] = 0  # W_ih v = 0: the image never enters
    kl, _ = M.image_influence(cut, scenes)
    assert np.allclose(kl, 0, atol=1e-6)


def test_h0_join_reads_the_image_only_through_h0_and_c0_and_its_gradient_reaches_w_and_the_cnn(trained, scenes):
    model = trained["h0"]
    kl, _ = M.image_influence(model, scenes)
    assert kl.max() > 0
    cut = M.Captioner(model.config)
    cut.load_state_dict(model.state_dict())
    with torch.no_grad():
        cut.init_h.weight.zero_()  # h_0 = tanh(b_h), c_0 = b_c: the same for every image
        cut.init_c.weight.zero_()
    kl, _ = M.image_influence(cut, scenes)
    assert np.allclose(kl, 0, atol=1e-6)
    fresh = M.init_pair(TINY)["h0"]  # at the initial weights, the loss's gradient flows back through h_0 and c_0
    images, tokens = M.pixels(scenes.images), M.caption_tensor(scenes.captions())
    fresh(images, tokens[:, :-1], tokens[:, 1:])[1].backward()
    for param in (fresh.init_h.weight, fresh.init_c.weight, fresh.cnn[0].weight):
        assert param.grad is not None and param.grad.abs().sum() > 0


def test_object_accuracy_on_hand_made_captions():
    two = _scene("grass", ("circle", "red", "small", "left"), ("square", "blue", "large", "right"))
    one = _scene("water", ("boat", "white", "large", "middle"))
    acc = M.object_accuracy(["a small red circle at left and a large red square at right on grass",  # 2nd: colour off
                             "a large white triangle at middle on water",  # shape off
                             "gibberish"], [two, one, two])
    assert [a["objects"] for a in acc] == [3, 2, 0]
    assert acc[0]["shape"] == pytest.approx(1 / 3) and acc[0]["colour"] == pytest.approx(2 / 3)
    assert acc[1]["shape"] == 0.5 and acc[1]["colour"] == 0.0
    assert acc[2] == {"object": 3, "shape": 0.0, "colour": 0.0, "objects": 0}


def test_checkpoint_round_trip_and_bad_files(tmp_path, trained, scenes):
    model = trained["h0"]
    M.save_captioner(model, tmp_path / "m.pt", {"exact": 0.5})
    back, metrics = M.load_captioner(tmp_path / "m.pt")
    assert metrics == {"exact": 0.5} and back.config == model.config
    images = M.pixels(scenes.images)
    assert M.greedy(back, images) == M.greedy(model, images)
    with pytest.raises(M.CaptionerError):
        M.load_captioner(b"not a checkpoint")
    torch.save({"format": "other"}, tmp_path / "x.pt")
    with pytest.raises(M.CaptionerError, match="format"):
        M.load_captioner(tmp_path / "x.pt")


def test_config_refuses_bad_values():
    with pytest.raises(ValueError, match="join"):
        M.CaptionConfig(join="middle").validate()
    with pytest.raises(ValueError, match="probability"):
        M.Captioner(M.CaptionConfig(p=2.0))
    with pytest.raises(ValueError, match="Unknown word"):
        M.encode_caption("a small red dragon")


@pytest.mark.parametrize("record", shipped.records(), ids=lambda r: r.file)
def test_shipped_captioners_reload_and_reach_their_recorded_figures(record):
    model, metrics = M.load_captioner(shipped.MODELS_DIR / record.file)
    assert (shipped.MODELS_DIR / record.file).stat().st_size <= shipped.MAX_BYTES
    assert model.join == record.join
    measured = shipped.measure(model)
    for key in ("exact", "chair_i", "chair_s", "boat"):
        assert measured[key] == pytest.approx(getattr(record, key), abs=0.01), key


def test_cli_train_caption_and_chair(tmp_path, capsys):
    from rnnviz.captioning.__main__ import main

    assert main(["train", "--steps", "2", "--n-train", "64", "--batch", "16", "--hidden", "16", "--quiet",
                 "--out-dir", str(tmp_path)]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert [r.split("`")[1] for r in rows] == ["captioner-every.pt", "captioner-h0.pt"]
    assert all(shipped._ROW.match(r) for r in rows)  # the printed rows are MODELS.md rows
    model_file = str(tmp_path / "captioner-h0.pt")
    assert main(["caption", "--scene", "water; large red circle middle", "--model", model_file, "--beam", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "scene: a large red circle at middle on water" and 2 <= len(out) <= 4
    assert main(["chair", model_file, "--n", "20"]) == 0
    assert "chair_i" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["caption", "--scene", "water; small blue circle left"], "invisible"),
    (["caption", "--scene", "water; small red circle"], "four words"),
    (["caption", "--scene", "water; large red circle middle", "--beam", "11"], "1 to 10"),
    (["chair", "no-such-file.pt"], "No such captioner"),
    (["train", "--p", "1.5"], "probability"),
    (["fly"], "usage"),
])
def test_cli_bad_input_exits_2_with_one_line(argv, message, capsys):
    from rnnviz.captioning.__main__ import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_sweep_trains_each_p_and_the_boat_rate_on_empty_water_rises_with_p():
    """A seeded small sweep: with boats never on water (p = 0) no caption of empty water names a boat; with a boat
    on every water scene (p = 1) about half of them do. A sweep that ignored p would give one rate for both."""
    config = M.CaptionConfig(channels=(8, 16, 16), v_dim=16, embed=16, hidden=32, n_train=600, steps=120, batch=32,
                             seed=3)
    points, models = M.sweep((0.0, 1.0), config, n_eval=100)
    assert [pt.p for pt in points] == [0.0, 1.0] and set(models) == {0.0, 1.0}
    never, always = points
    assert never.boat_on_empty_water == 0.0
    assert always.boat_on_empty_water > 0.25
    counter = world.counterexamples(100, config.seed + 2000)  # what sweep measures, measured here on its models
    assert [M.boat_rate(models[p], counter) for p in (0.0, 1.0)] == [pt.boat_on_empty_water for pt in points]
