"""The image-captioning page in AppTest: build a scene, caption it, beam width, saliency, the joins, bad specs,
the p sweep and training (tiny configs patched in), with the numbers checked against the engine."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from rnnviz.figures import captioning as fig
from rnnviz.ui.captioning import scene as scene_builder
from rnnviz.ui.captioning import sections
from tests.apptest_helpers import column_formats, instant_control, move_instant, open_page, page_text
from tests.figure_helpers import numbers

PAGE = "app_pages/captioning.py"
TINY = M.CaptionConfig(channels=(4, 8, 8), v_dim=12, embed=8, hidden=16, n_train=64, batch=16)


@pytest.fixture(scope="module")
def page():
    return open_page(PAGE)


def chart(at, key: str) -> dict:
    """The plotly chart whose element key is ``key``, as the JSON spec the browser receives."""
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in c.proto.id)


def _scene(at) -> world.Scene:
    objects = []
    for pos in world.POSITIONS:
        shape = at.selectbox(key=f"cap_shape_{pos}").value
        if shape != scene_builder.NONE:
            objects.append(world.SceneObject(shape, at.selectbox(key=f"cap_colour_{pos}").value,
                                             at.selectbox(key=f"cap_size_{pos}").value, pos))
    return world.Scene(at.selectbox(key="cap_bg").value, tuple(objects))


def _image(at) -> np.ndarray:
    return world.render(_scene(at), int(at.session_state["cap_rows"]))


def test_page_opens_with_the_default_scene_its_true_caption_and_a_greedy_caption(page):
    assert not page.exception, [e.value for e in page.exception]
    assert [t.value for t in page.title] == ["Image captioning"]
    text = page_text(page)
    scene = _scene(page)
    assert scene == scene_builder.DEFAULT_SCENE
    assert world.caption(scene) in text
    model = shipped.load("every")[0]
    greedy = M.decode(M.greedy(model, M.pixels(_image(page)[None]))[0])
    assert f"### {greedy}" in [m.value for m in page.markdown]


def beam_rows(at) -> list[str]:
    """The rows of the beam table (a markdown table), as sent."""
    table = next(m.value for m in at.markdown if m.value.startswith("| rank | caption | total log p |"))
    return table.splitlines()[2:]


def test_beam_width_changes_the_beams_and_the_table_shows_whole_captions():
    """Each beam's whole caption and total log-prob, as the engine ranks them, in a table that wraps a long caption
    (st.dataframe cut it at the column's width: "…right on g")."""
    at = open_page(PAGE)
    at.radio(key="cap_method").set_value("beam search").run()
    at.slider(key="cap_beam").set_value(5).run()
    assert not at.exception
    beams, tree = M.beam_search(shipped.load("every")[0], M.pixels(_image(at)[None]), 5)
    assert all("caption" not in d.value.columns for d in at.dataframe)  # no grid that cuts its cells
    rows = beam_rows(at)
    assert 1 <= len(rows) <= 5
    ended = {True: "\\<END\\>", False: "the length limit"}
    assert rows == [f"| {k} | {b.text} | {b.logprob:.3f} | {ended[b.finished]} |" for k, b in enumerate(beams, start=1)]
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert any("cap_beam_fig" in k for k in keys)
    at.slider(key="cap_beam").set_value(1).run()
    assert len(beam_rows(at)) == 1


def reference_distributions(join: str, image: np.ndarray, ids: list[int]) -> torch.Tensor:
    """p(w_t | w_<t, v) for t = 1 … T: the shipped captioner's own forward pass on <START> w_1 … w_{T−1}, through
    torch's softmax (row t − 1 is word t's)."""
    model = shipped.load(join)[0].eval()
    with torch.no_grad():
        logits, _ = model(M.pixels(image[None]), torch.tensor([[M.START_ID, *ids[:-1]]]))
    return torch.softmax(logits[0], -1)


def check_word_stops(at, join: str) -> list[int]:
    """Every stop of the word slider the server sent: the caption line marks word t, and frame t of the top-k chart
    holds the six most probable words of p(w_t | w_<t, v) with their probabilities, word t highlighted."""
    image = _image(at)
    ids = M.greedy(shipped.load(join)[0], M.pixels(image[None]))[0]
    probs = reference_distributions(join, image, ids).numpy()
    words = [M.VOCAB[i] for i in ids]
    sent = instant_control(at, "cap_t")
    assert [stop[0]["text"] for stop in sent["views"]] == [
        " ".join(["<START>", *words[:t - 1], f"**[{words[t - 1]}]**", *words[t:]]) for t in range(1, len(ids) + 1)]
    frames = chart(at, "cap_t_figure_topk")["frames"]
    assert len(frames) == len(ids)
    for t, frame in enumerate(frames, start=1):
        assert int(np.argmax(probs[t - 1])) == ids[t - 1]  # greedy: word t is the most probable
        bars = frame["data"][0]
        shown_pairs = dict(zip(bars["y"], numbers(bars["x"])))
        assert len(shown_pairs) == 6
        for word, p in shown_pairs.items():
            assert p == pytest.approx(probs[t - 1][M.INDEX[word]], abs=1e-5), (t, word)
        assert sorted(shown_pairs.values(), reverse=True) == pytest.approx(np.sort(probs[t - 1])[::-1][:6], abs=1e-5)
        highlighted = [w for w, c in zip(bars["y"], bars["marker"]["color"]) if c == fig.CHOSEN]
        assert highlighted == [words[t - 1]], t
        title = frame["layout"]["title"]["text"]
        assert "p(w<sub>t</sub> | w<sub>&lt;t</sub>, v)" in title and f"t = {t}" in title, title
    return ids


def test_word_t_answers_in_the_browser_from_every_stop_the_engine_computed_and_the_address_follows():
    """Word t of the caption (w₀ = <START>, so ids[t − 1]) is drawn from p(w_t | w_<t, v): every stop is sent with
    the page, each marking its word and charting that distribution; a move lands in the session and the address,
    and the other captioner's caption brings its own stops (not the first one's, kept for another caption)."""
    at = open_page(PAGE)
    assert not at.exception
    ids = check_word_stops(at, "every")
    assert M.VOCAB[ids[3]] == "circle"  # "a large red circle ...": the default t = 4 is the shape word
    assert instant_control(at, "cap_t")["index"] == 3
    move_instant(at, "cap_t", 6)
    assert not at.exception
    assert at.session_state["cap_t"] == 6 and at.query_params["t"] == "6"
    assert instant_control(at, "cap_t")["index"] == 5
    at.radio(key="cap_join").set_value("h0").run()
    check_word_stops(at, "h0")


def test_saliency_of_a_chosen_word_reports_the_engine_share():
    at = open_page(PAGE)
    at.radio(key="cap_join").set_value("h0").run()
    at.selectbox(key="cap_sal_word").set_value(2).run()  # word t = 2, the engine's ids[1]
    assert not at.exception
    model = shipped.load("h0")[0]
    scene = _scene(at)
    image = _image(at)
    ids = M.greedy(model, M.pixels(image[None]))[0]
    heat = M.saliency(model, M.pixels(image[None]), ids, 1)
    assert f"saliency of “{M.VOCAB[ids[1]]}” (t = 2)" in chart(at, "cap_saliency_fig")["layout"]["title"]["text"]
    share = M.object_share(heat, world.from_scene(scene, int(at.session_state["cap_rows"])).object_masks()[0])
    assert f"**{share:.0%}** of the saliency lies on object pixels" in page_text(at)
    assert any("cap_saliency_fig" in c.proto.id for c in at.get("plotly_chart"))
    at.radio(key="cap_sal_method").set_value("occlusion").run()
    assert not at.exception


def _by_hand(model: M.Captioner, image, ids: list[int]) -> list[np.ndarray]:
    """p(w_t | w_<t, v) for t = 1 … len(ids), stepped by hand from the model's weights with the page's equations:
    a_t = W_xh x_t (+ W_vh v for "every") + W_hh h_{t−1} + b; i, f, g, o = σ, σ, tanh, σ of a_t in torch's order;
    c_t = f ⊙ c_{t−1} + i ⊙ g; h_t = o ⊙ tanh(c_t); x_t = E w_{t−1} with w_0 = <START>; softmax(W_hy h_t + b_y)."""
    import torch

    with torch.no_grad():
        model.eval()
        v = model.encode(image)[0]
        sd = {k: t.double() for k, t in model.state_dict().items()}
        v = v.double()
        if model.join == "every":
            h = c = torch.zeros(model.config.hidden, dtype=torch.float64)
        else:
            h = torch.tanh(sd["init_h.weight"] @ v + sd["init_h.bias"])
            c = sd["init_c.weight"] @ v + sd["init_c.bias"]
        out = []
        for previous in [M.START_ID, *ids[:-1]]:
            x = sd["embed.weight"][previous]
            read = torch.cat([x, v]) if model.join == "every" else x
            a = sd["rnn.weight_ih_l0"] @ read + sd["rnn.bias_ih_l0"] + sd["rnn.weight_hh_l0"] @ h + sd["rnn.bias_hh_l0"]
            i, f, g, o = a.chunk(4)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            out.append(torch.softmax(sd["out.weight"] @ h + sd["out.bias"], -1).numpy())
    return out


def test_the_page_states_the_two_joins_as_the_engine_computes_them_and_cites_no_missing_equation(page):
    """No "Eq. 8.11" (a textbook the class may not have): the equations themselves, checked against the engine by
    stepping both shipped captioners by hand; the join labels name no equation either."""
    image = M.pixels(_image(page)[None])
    for join in M.JOINS:
        model = shipped.load(join)[0]
        ids = M.greedy(model, image)[0]
        engine = M.step_distributions(model, image, ids).numpy()
        assert np.allclose(np.stack(_by_hand(model, image, ids)), engine, atol=1e-5), join
    text = page_text(page)
    assert "Eq. 8.11" not in text and "8.11" not in text
    assert "8.11" not in " ".join(str(r.options) for r in page.radio)
    latex = "\n".join(e.value for e in page.latex)
    for term in (r"a_t = W_{xh}\,x_t + W_{vh}\,v + W_{hh}\,h_{t-1} + b", r"h_0 = c_0 = 0",  # v at every step
                 r"a_t = W_{xh}\,x_t + W_{hh}\,h_{t-1} + b", r"h_0 = \tanh(W_h\,v + b_h)", r"c_0 = W_c\,v + b_c",
                 r"c_t = f_t \odot c_{t-1} + i_t \odot g_t", r"h_t = o_t \odot \tanh(c_t)",
                 r"x_t = E\,w_{t-1}", r"w_0 = \langle\mathrm{START}\rangle",
                 r"p(w_t \mid w_{<t}, v) = \mathrm{softmax}(W_{hy}\,h_t + b_y)"):
        assert term in latex, term


def test_the_models_table_is_on_the_page_not_a_file_name_the_class_cannot_open(page):
    """"(see MODELS.md)" pointed at a file a student does not have: the page shows that section of the shipped
    rnnviz/assets/models/MODELS.md (its table rows, read from disk) in an expander instead."""
    text = page_text(page)
    assert "see MODELS.md" not in text
    section = [e for e in page.expander if "how the shipped captioners were trained" in e.label.lower()]
    assert len(section) == 1
    shown_md = "\n".join(m.value for m in section[0].markdown)
    records = shipped.records()
    assert {r.join for r in records} == set(M.JOINS)
    for r in records:  # the rows the page's held-out table quotes, as the file records them
        assert f"| `{r.file}` | {r.join} | p = {r.p:g}, {r.steps} steps |" in shown_md
    assert "python -m rnnviz.captioning train" in shown_md  # the commands that made them
    assert "8.11" not in shown_md


def test_a_bad_scene_spec_gives_a_clear_message_and_the_rest_stays():
    at = open_page(PAGE)
    at.selectbox(key="cap_colour_middle").set_value("blue").run()  # blue on water
    assert not at.exception
    assert any("invisible" in e.value for e in at.error)
    assert "The join, side by side" in page_text(at)
    at.selectbox(key="cap_shape_middle").set_value(scene_builder.NONE).run()  # no object at all
    assert any("1 to 3 objects" in e.value for e in at.error)


def test_random_scene_and_preset_buttons_set_the_widgets():
    at = open_page(PAGE)
    at.button(key="cap_random").click().run()
    assert not at.exception
    assert _scene(at) == world.heldout(1, 1_001).scene(0)
    at.button(key="cap_empty_water").click().run()
    assert _scene(at) == scene_builder.DEFAULT_SCENE


def test_join_table_shows_the_recorded_figures(page):
    table = page.dataframe[0].value  # greedy decoding shows no beam table: the first is the joins'
    for join in M.JOINS:
        figures = shipped.load(join)[1]
        row = table[table["join"] == sections.JOIN_LABELS[join]].iloc[0]
        assert row["CHAIRi"] == figures["chair_i"] and row["exact match"] == figures["exact"]
    # Numbers, drawn as percentages and to 3 decimals; the CSV holds them whole.
    formats = column_formats(page.dataframe[0])
    assert formats["exact match"] == "percent" and formats["CHAIRi"] == "%.3f"


def test_per_object_table_and_the_h0_sentence_quote_the_engine(page):
    held = world.heldout(shipped.EVAL_N, shipped.EVAL_SEED)
    table = page.dataframe[1].value  # after the joins' figures
    text = page_text(page)
    for join in M.JOINS:
        model = shipped.load(join)[0]
        acc = M.object_accuracy([M.decode(i) for i in M.greedy(model, M.pixels(held.images))], M.scene_list(held))
        row = table[table["join"] == sections.JOIN_LABELS[join]].iloc[0]
        for a in acc:
            assert (row[f"object {a['object']}: shape"], row[f"object {a['object']}: colour"]) == (a["shape"],
                                                                                                  a["colour"])
        shapes = [f"{a['shape']:.0%}" for a in acc]
        if join == "h0":
            assert f"the second's {shapes[1]}, the third's {shapes[2]}" in text
        else:
            assert f"v at every step {shapes[0]}, {shapes[1]}, {shapes[2]}" in text


def test_the_boat_example_is_a_shipped_captioner_naming_a_boat_on_water_without_one(page):
    counter = world.counterexamples(sections.EXAMPLE_SCENES, shipped.COUNTER_SEED)
    model = shipped.load("h0")[0]  # the section's default
    texts = [M.decode(ids) for ids in M.greedy(model, M.pixels(counter.images))]
    n = next(k for k, text in enumerate(texts) if "boat" in text.split())
    assert "boat" not in world.caption(counter.scene(n)).split()
    text = page_text(page)
    assert f"The captioner says: **{texts[n]}**" in text and f"The scene is: {world.caption(counter.scene(n))}" in text
    ids = M.encode_caption(texts[n])[1:]
    mask = counter.subset([n]).object_masks()[0]
    heat = M.saliency(model, M.pixels(counter.images[n:n + 1]), ids, texts[n].split().index("boat"))
    share = M.object_share(heat, mask)
    assert (f"**{1 - share:.0%}** of the saliency of “boat” lies on the background (the water, "
            f"{1 - mask.mean():.0%} of the pixels), **{share:.0%}** on the objects") in text
    assert any("cap_example_fig" in c.proto.id for c in page.get("plotly_chart"))


def test_sweep_and_training_run_behind_buttons(monkeypatch):
    monkeypatch.setattr(sections, "SWEEP_BASE", replace(TINY, steps=3))
    monkeypatch.setattr(sections, "TRAIN_BASE", TINY)
    monkeypatch.setattr(sections, "EXAMPLE_SCENES", 20)
    at = open_page(PAGE)
    at.multiselect(key="cap_sweep_ps").set_value([0.25, 0.5]).run()
    assert any("3 to 5" in w.value for w in at.warning)
    at.multiselect(key="cap_sweep_ps").set_value([0.25, 0.5, 1.0]).run()
    at.button(key="cap_sweep_run").click().run()
    assert not at.exception
    points = chart(at, "cap_sweep_fig")["data"]
    assert list(numbers(points[0]["x"])) == [0.25, 0.5, 1.0]
    engine, _ = M.sweep((0.25, 0.5, 1.0), replace(sections.SWEEP_BASE, seed=0))  # the page's seed is 0
    drawn = {trace["name"]: list(numbers(trace["y"])) for trace in points}
    assert drawn["CHAIRi (held-out)"] == pytest.approx([pt.chair_i for pt in engine])
    assert drawn["CHAIRs (held-out)"] == pytest.approx([pt.chair_s for pt in engine])
    assert drawn["says “boat” on water without a boat"] == pytest.approx([pt.boat_on_empty_water for pt in engine])
    at.select_slider(key="cap_train_steps").set_value(100).run()
    at.button(key="cap_train").click().run()
    assert not at.exception
    assert at.toggle(key="cap_use_own").value is True
    assert "trained here" in page_text(at)
    at.toggle(key="cap_use_own").set_value(False).run()
    assert "shipped models" in page_text(at)
