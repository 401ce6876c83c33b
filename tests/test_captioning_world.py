"""The captioning scene world: determinism, the caption grammar round trip, the co-occurrence knob, bad specs."""

import math

import numpy as np
import pytest

from rnnviz.captioning import world
from rnnviz.captioning.world import Scene, SceneObject


def test_same_seed_same_scenes_and_images_other_seed_differs():
    a, b, c = world.generate(300, 7, p=0.8), world.generate(300, 7, p=0.8), world.generate(300, 8, p=0.8)
    for name in ("background", "shape", "colour", "size", "dy", "images"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.captions() == b.captions()
    assert a.captions() != c.captions()
    assert a.images.shape == (300, world.SIZE, world.SIZE, 3) and a.images.dtype == np.uint8


def test_every_scene_is_valid_with_one_to_three_objects():
    s = world.generate(2000, 3, p=0.5)
    counts = (s.shape >= 0).sum(1)
    assert counts.min() == 1 and counts.max() == 3
    assert set(np.unique(counts)) == {1, 2, 3}
    for n in range(200):
        s.scene(n).validate()  # no invisible colour, one object per position


def test_caption_parses_back_to_the_scene_and_to_the_same_caption():
    s = world.generate(500, 11, p=0.9)
    for n, text in enumerate(s.captions()):
        scene = world.parse_caption(text)
        assert scene == s.scene(n)
        assert world.caption(scene) == text
        assert world.caption(world.parse_caption(world.caption(scene))) == text


def test_caption_reads_objects_left_to_right_in_the_grammar():
    scene = Scene("water", (SceneObject("boat", "white", "large", "right"),
                            SceneObject("circle", "red", "small", "left")))
    assert world.caption(scene) == "a small red circle at left and a large white boat at right on water"


@pytest.mark.parametrize("p", [0.25, 0.6, 0.95])
def test_boat_on_water_rate_is_p_within_sampling_error(p):
    s = world.generate(8000, 5, p=p)
    water = s.background == world.BACKGROUNDS.index("water")
    boat = (s.shape == world.SHAPES.index("boat")).any(1)
    n = int(water.sum())
    rate = boat[water].mean()
    assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-9
    off = boat[~water].mean()  # off water: BASE_RATE whatever p is
    assert abs(off - world.BASE_RATE) < 4 * math.sqrt(0.25 * 0.75 / (~water).sum())


def test_heldout_holds_water_without_a_boat_and_counterexamples_are_all_such():
    held = world.heldout(4000, 1)
    water = held.background == world.BACKGROUNDS.index("water")
    boat = (held.shape == world.SHAPES.index("boat")).any(1)
    assert (water & ~boat).mean() > 0.1
    counter = world.counterexamples(300, 2)
    assert all(sc.background == "water" and "boat" not in sc.shapes() for sc in map(counter.scene, range(300)))


def test_pixels_show_the_scene_colours_and_masks_cover_the_objects():
    scene = Scene("grass", (SceneObject("square", "red", "large", "middle"),))
    one = world.from_scene(scene, seed=3)
    mask = one.object_masks()[0]
    image = one.images[0]
    assert np.all(image[mask] == world.RGB["red"])
    assert not np.any(np.all(image[~mask] == world.RGB["red"], axis=-1))
    assert abs(mask.sum() - (2 * int(0.8 * 7.5) + 1) ** 2) == 0
    assert mask[:, 16:33].sum() == mask.sum()  # the middle column
    assert np.array_equal(world.render(scene, seed=3), image)


@pytest.mark.parametrize("scene, message", [
    (Scene("lava", (SceneObject("circle", "red", "small", "left"),)), "Unknown background"),
    (Scene("grass", ()), "1 to 3 objects"),
    (Scene("water", (SceneObject("circle", "blue", "small", "left"),)), "invisible"),
    (Scene("grass", (SceneObject("circle", "red", "small", "left"), SceneObject("boat", "red", "large", "left"))),
     "Two objects stand at left"),
    (Scene("sand", (SceneObject("hexagon", "red", "small", "left"),)), "unknown shape"),
    (Scene("sand", (SceneObject("circle", "red", "huge", "left"),)), "unknown size"),
])
def test_bad_scene_specs_raise_a_clear_value_error(scene, message):
    with pytest.raises(ValueError, match=message):
        world.render(scene)


@pytest.mark.parametrize("text", ["", "a red circle on grass", "a small red circle at left on",
                                  "a small red circle at left and on grass",
                                  "a large red boat at right and a small red circle at left on grass",
                                  "a small blue circle at left on water"])
def test_parse_refuses_captions_outside_the_grammar(text):
    with pytest.raises(ValueError):
        world.parse_caption(text)


def test_generate_refuses_bad_arguments():
    with pytest.raises(ValueError, match="probability"):
        world.generate(10, 0, p=1.5)
    with pytest.raises(ValueError, match="at least 1"):
        world.generate(0, 0)
    with pytest.raises(ValueError, match="Unknown background"):
        world.generate(10, 0, backgrounds=("moon",))
