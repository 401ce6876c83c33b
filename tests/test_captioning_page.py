"""The image-captioning page in AppTest: build a scene, caption it, beam width, saliency, the joins, bad specs,
the p sweep and training (tiny configs patched in), with the numbers checked against the engine."""

import json
from dataclasses import replace

import numpy as np
import pytest

from rnnviz.captioning import model as M
from rnnviz.captioning import shipped, world
from rnnviz.ui import captioning as sections
from tests.apptest_helpers import open_page, page_text
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
        if shape != sections.NONE:
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
    assert scene == sections.DEFAULT_SCENE
    assert world.caption(scene) in text
    model = shipped.load("every")[0]
    greedy = M.decode(M.greedy(model, M.pixels(_image(page)[None]))[0])
    assert f"### {greedy}" in [m.value for m in page.markdown]
    assert "Eq. 8.11" in text


def test_beam_width_changes_the_beams_and_the_tree_matches_the_engine():
    at = open_page(PAGE)
    at.radio(key="cap_method").set_value("beam search").run()
    at.slider(key="cap_beam").set_value(5).run()
    assert not at.exception
    beams, tree = M.beam_search(shipped.load("every")[0], M.pixels(_image(at)[None]), 5)
    table = at.dataframe[0].value
    assert list(table["caption"]) == [b.text for b in beams]
    assert np.allclose(table["total log p"], [round(b.logprob, 3) for b in beams])
    assert 1 <= len(table) <= 5
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert any("cap_beam_fig" in k for k in keys)
    at.slider(key="cap_beam").set_value(1).run()
    assert len(at.dataframe[0].value) == 1


def test_topk_bars_are_the_engine_distribution_at_step_t():
    at = open_page(PAGE)
    at.slider(key="cap_t").set_value(2).run()
    model = shipped.load("every")[0]
    x = M.pixels(_image(at)[None])
    ids = M.greedy(model, x)[0]
    probs = M.step_distributions(model, x, ids)[2].numpy()
    bars = chart(at, "cap_topk_fig")["data"][0]
    top = np.sort(probs)[::-1][:6]
    assert np.allclose(sorted(numbers(bars["x"]), reverse=True), top, atol=1e-6)


def test_saliency_of_a_chosen_word_reports_the_engine_share():
    at = open_page(PAGE)
    at.radio(key="cap_join").set_value("h0").run()
    at.selectbox(key="cap_sal_word").set_value(1).run()
    assert not at.exception
    model = shipped.load("h0")[0]
    scene = _scene(at)
    image = _image(at)
    ids = M.greedy(model, M.pixels(image[None]))[0]
    heat = M.saliency(model, M.pixels(image[None]), ids, 1)
    share = M.object_share(heat, world.from_scene(scene, int(at.session_state["cap_rows"])).object_masks()[0])
    assert f"**{share:.0%}** of the saliency lies on object pixels" in page_text(at)
    assert any("cap_saliency_fig" in c.proto.id for c in at.get("plotly_chart"))
    at.radio(key="cap_sal_method").set_value("occlusion").run()
    assert not at.exception


def test_a_bad_scene_spec_gives_a_clear_message_and_the_rest_stays():
    at = open_page(PAGE)
    at.selectbox(key="cap_colour_middle").set_value("blue").run()  # blue on water
    assert not at.exception
    assert any("invisible" in e.value for e in at.error)
    assert "The join, side by side" in page_text(at)
    at.selectbox(key="cap_shape_middle").set_value(sections.NONE).run()  # no object at all
    assert any("1 to 3 objects" in e.value for e in at.error)


def test_random_scene_and_preset_buttons_set_the_widgets():
    at = open_page(PAGE)
    at.button(key="cap_random").click().run()
    assert not at.exception
    assert _scene(at) == world.heldout(1, 1_001).scene(0)
    at.button(key="cap_empty_water").click().run()
    assert _scene(at) == sections.DEFAULT_SCENE


def test_join_table_shows_the_recorded_figures(page):
    table = page.dataframe[0].value  # greedy decoding shows no beam table: the first is the joins'
    for join in M.JOINS:
        figures = shipped.load(join)[1]
        row = table[table["join"] == M.JOINS[join]].iloc[0]
        assert row["CHAIRi"] == f"{figures['chair_i']:.3f}" and row["exact match"] == f"{figures['exact']:.1%}"


def test_per_object_table_and_the_h0_sentence_quote_the_engine(page):
    held = world.heldout(shipped.EVAL_N, shipped.EVAL_SEED)
    table = page.dataframe[1].value  # after the joins' figures
    text = page_text(page)
    for join in M.JOINS:
        model = shipped.load(join)[0]
        acc = M.object_accuracy([M.decode(i) for i in M.greedy(model, M.pixels(held.images))], M.scene_list(held))
        row = table[table["join"] == M.JOINS[join]].iloc[0]
        for a in acc:
            assert row[f"object {a['object']}: shape, colour"] == f"{a['shape']:.0%}, {a['colour']:.0%}"
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
    at.select_slider(key="cap_train_steps").set_value(100).run()
    at.button(key="cap_train").click().run()
    assert not at.exception
    assert at.toggle(key="cap_use_own").value is True
    assert "trained here" in page_text(at)
    at.toggle(key="cap_use_own").set_value(False).run()
    assert "shipped models" in page_text(at)
