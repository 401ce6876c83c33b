"""The image-captioning page's scene builder: a background and an object per position, drawn beside the
widgets, with a random scene and the "water, no boat" scene a click away."""

from __future__ import annotations

import numpy as np
import streamlit as st

from rnnviz.captioning import world
from rnnviz.figures import captioning as fig
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_choice, parse_int_in
from rnnviz.ui.kit.widgets import literal, plot

PAGE = "cap"
page_key = PageKeys(PAGE)
NONE = "(none)"
DEFAULT_SCENE = world.Scene("water", (world.SceneObject("circle", "red", "large", "middle"),))


def _set_scene(scene: world.Scene, seed: int) -> None:
    st.session_state[page_key("bg")] = scene.background
    at = {o.position: o for o in scene.objects}
    for pos in world.POSITIONS:
        obj = at.get(pos)
        st.session_state[page_key("shape", pos)] = obj.shape if obj else NONE
        if obj:
            st.session_state[page_key("colour", pos)] = obj.colour
            st.session_state[page_key("size", pos)] = obj.size
    st.session_state[page_key("rows")] = seed


def _random_scene() -> None:
    draw = int(st.session_state.get(page_key("draws"), 0)) + 1
    st.session_state[page_key("draws")] = draw
    _set_scene(world.heldout(1, 1_000 + draw).scene(0), draw)


def _preset_empty_water() -> None:
    _set_scene(DEFAULT_SCENE, 0)


def set_defaults() -> None:
    """The default scene, setting by setting: a link may have set some of them already."""
    st.session_state.setdefault(page_key("bg"), DEFAULT_SCENE.background)
    at = {o.position: o for o in DEFAULT_SCENE.objects}
    for pos in world.POSITIONS:
        obj = at.get(pos)
        st.session_state.setdefault(page_key("shape", pos), obj.shape if obj else NONE)
        st.session_state.setdefault(page_key("colour", pos), obj.colour if obj else "red")
        st.session_state.setdefault(page_key("size", pos), obj.size if obj else "small")
    st.session_state.setdefault(page_key("rows"), 0)


def _parse_shape(text: str) -> str:
    return NONE if text == "none" else parse_choice(world.SHAPES)(text)


# The scene in the page's address: ?bg=sand&left=boat&left_colour=blue&left_size=large&middle=none…
EXAMPLE_SCENE = {"left": ("triangle", "blue", "large"), "middle": ("none", "green", "small"),
                 "right": ("square", "yellow", "large")}
LINK = (
    LinkParam("bg", page_key("bg"), parse_choice(world.BACKGROUNDS), example="sand"),
    *(param for pos in world.POSITIONS for param in (
        LinkParam(pos, page_key("shape", pos), _parse_shape, lambda v: "none" if v == NONE else v,
                  example=EXAMPLE_SCENE[pos][0]),
        LinkParam(f"{pos}_colour", page_key("colour", pos), parse_choice(world.COLOURS), example=EXAMPLE_SCENE[pos][1]),
        LinkParam(f"{pos}_size", page_key("size", pos), parse_choice(world.SIZES), example=EXAMPLE_SCENE[pos][2]),
    )),
    LinkParam("variant", page_key("rows"), parse_int_in(0, 1_000_000), example="3"),
)


def build_scene() -> tuple[world.Scene, np.ndarray] | None:
    """Widgets for the background and an object per position beside the image; the scene and its image, or
    None (said why)."""
    set_defaults()
    st.header("Build a scene")
    left, right = st.columns([2, 3], gap="large")
    with right:
        c1, c2 = st.columns([1.6, 3], vertical_alignment="bottom")
        c1.selectbox("Background", world.BACKGROUNDS, key=page_key("bg"))
        with c2, st.container(horizontal=True):  # the two buttons wrap onto two rows where they do not fit
            st.button("Random scene", key=page_key("random"), on_click=_random_scene, icon=":material/casino:")
            st.button("Water, no boat", key=page_key("empty_water"), on_click=_preset_empty_water,
                      icon=":material/sailing:")
        objects = []
        for pos in world.POSITIONS:
            cols = st.columns(3)
            shape = cols[0].selectbox(f"Shape at {pos}", (NONE, *world.SHAPES), key=page_key("shape", pos))
            colour = cols[1].selectbox(f"Colour at {pos}", world.COLOURS, key=page_key("colour", pos))
            size = cols[2].selectbox(f"Size at {pos}", world.SIZES, key=page_key("size", pos))
            if shape != NONE:
                objects.append(world.SceneObject(shape, colour, size, pos))
    scene = world.Scene(st.session_state[page_key("bg")], tuple(objects))
    try:
        image = world.render(scene, int(st.session_state.get(page_key("rows"), 0)))
    except ValueError as err:
        right.error(f"This scene cannot be drawn: {literal(err)}", icon=":material/block:")
        return None
    with left:
        plot(fig.scene_figure(image, height=400), key=page_key("scene_fig"))
    right.markdown(f"**The true caption:** {world.caption(scene)}")
    right.caption("48 × 48 pixels, drawn in NumPy. The captioner sees only the pixels; the true caption is what a "
                  "perfect captioner would write.")
    return scene, image
