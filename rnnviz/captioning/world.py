"""A procedural scene world for image captioning: NumPy only, deterministic from a seed, no download.

A scene is a background and 1–3 objects. Each object has a shape, a colour, a size and a position (one of
three columns: left, middle, right; its height in the column is a random jitter the caption does not name).
Images are 48×48 RGB (uint8). Captions follow one grammar, which ``parse_caption`` reads back::

    caption := object ("and" object)* "on" background
    object  := "a" size colour shape "at" position          (objects listed left to right)

for example "a small red circle at left and a large white boat at right on water".

The **co-occurrence knob** p: in a training set, a scene on water holds a boat with probability p, a scene
on any other background with probability BASE_RATE. At p = BASE_RATE boats and water are independent; the
larger p, the more "water" alone predicts "boat". The held-out set is drawn at p = BASE_RATE, so it holds
the counter-examples (water with no boat) a biased captioner gets wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIZE = 48  # image side in pixels
BACKGROUNDS = ("grass", "water", "sand", "snow")
SHAPES = ("circle", "square", "triangle", "boat")
COLOURS = ("red", "blue", "green", "yellow", "white", "black")
SIZES = ("small", "large")
POSITIONS = ("left", "middle", "right")
MAX_OBJECTS = len(POSITIONS)
BASE_RATE = 0.25  # P(a boat in the scene) off water, and on water when p = BASE_RATE
BIASED_SHAPE, BIASED_BACKGROUND = "boat", "water"  # the co-occurring pair the knob p controls

RGB = {  # object colours, uint8
    "red": (220, 30, 30), "blue": (40, 70, 230), "green": (30, 160, 50),
    "yellow": (250, 220, 30), "white": (250, 250, 250), "black": (15, 15, 15),
}
BACKGROUND_RGB = {"grass": (70, 150, 60), "water": (50, 100, 200), "sand": (215, 190, 120), "snow": (225, 230, 240)}
# An object of this colour on this background would hardly show: such a scene spec is refused.
INVISIBLE = {"grass": "green", "water": "blue", "sand": "yellow", "snow": "white"}
RADIUS = {"small": 4.5, "large": 7.5}
COLUMN_X = (8, 24, 39)  # centre x of each position's column
PATCH = 8  # objects are drawn in a (2·PATCH+1)² window around their centre

# Words of the grammar (the decoder's vocabulary adds <PAD>, <START>, <END>).
WORDS = ("a", "and", "at", "on", *SIZES, *COLOURS, *SHAPES, *POSITIONS, *BACKGROUNDS)


@dataclass(frozen=True)
class SceneObject:
    """One object: what it is and which column it stands in."""

    shape: str  # one of SHAPES
    colour: str  # one of COLOURS
    size: str  # one of SIZES
    position: str  # one of POSITIONS (left, middle, right)

    def words(self) -> list[str]:
        return ["a", self.size, self.colour, self.shape, "at", self.position]


@dataclass(frozen=True)
class Scene:
    """A background and 1–3 objects, at most one per position; ``validate`` says what is wrong."""

    background: str
    objects: tuple[SceneObject, ...]

    def validate(self) -> Scene:
        """The scene itself, or ValueError naming the first bad field."""
        if self.background not in BACKGROUNDS:
            raise ValueError(f"Unknown background {self.background!r}; choose from {', '.join(BACKGROUNDS)}.")
        if not 1 <= len(self.objects) <= MAX_OBJECTS:
            raise ValueError(f"A scene holds 1 to {MAX_OBJECTS} objects, not {len(self.objects)}.")
        for k, obj in enumerate(self.objects, start=1):
            for field, allowed in (("shape", SHAPES), ("colour", COLOURS), ("size", SIZES), ("position", POSITIONS)):
                if getattr(obj, field) not in allowed:
                    raise ValueError(f"Object {k}: unknown {field} {getattr(obj, field)!r}; "
                                     f"choose from {', '.join(allowed)}.")
            if INVISIBLE[self.background] == obj.colour:
                raise ValueError(f"Object {k}: a {obj.colour} object on {self.background} would be invisible; "
                                 "pick another colour or background.")
        taken = [o.position for o in self.objects]
        if len(set(taken)) != len(taken):
            twice = next(p for p in taken if taken.count(p) > 1)
            raise ValueError(f"Two objects stand at {twice}: each position holds at most one object.")
        return self

    def sorted(self) -> Scene:
        """The same scene with its objects left to right (the caption's order)."""
        return Scene(self.background, tuple(sorted(self.objects, key=lambda o: POSITIONS.index(o.position))))

    def shapes(self) -> set[str]:
        return {o.shape for o in self.objects}


def caption(scene: Scene) -> str:
    """The scene's one true caption in the world's grammar."""
    scene = scene.validate().sorted()
    words: list[str] = []
    for k, obj in enumerate(scene.objects):
        words += (["and"] if k else []) + obj.words()
    return " ".join(words + ["on", scene.background])


def parse_caption(text: str) -> Scene:
    """The scene a caption describes (its objects' height jitter aside); ValueError when it breaks the grammar."""
    words = text.split()
    if len(words) < 8 or words[-2] != "on":
        raise ValueError(f"A caption ends with 'on <background>': {text!r}")
    body, background = words[:-2], words[-1]
    objects = []
    while body:
        chunk, body = body[:6], body[6:]
        if len(chunk) < 6 or chunk[0] != "a" or chunk[4] != "at":
            raise ValueError(f"Expected 'a <size> <colour> <shape> at <position>' in {text!r}")
        objects.append(SceneObject(shape=chunk[3], colour=chunk[2], size=chunk[1], position=chunk[5]))
        if body:
            if body[0] != "and":
                raise ValueError(f"Objects are joined by 'and' in {text!r}")
            body = body[1:]
            if not body:
                raise ValueError(f"A caption cannot end with 'and': {text!r}")
    scene = Scene(background, tuple(objects)).validate()
    if scene.sorted() != scene:
        raise ValueError(f"Objects are listed left to right in {text!r}")
    return scene


# ---------------------------------------------------------------------------------------------------------
# Drawing


def _templates() -> np.ndarray:
    """Boolean masks of each (shape, size) in a (2·PATCH+1)² window: (len(SHAPES), len(SIZES), W, W)."""
    yy, xx = np.mgrid[-PATCH:PATCH + 1, -PATCH:PATCH + 1].astype(np.float32)
    out = np.zeros((len(SHAPES), len(SIZES), 2 * PATCH + 1, 2 * PATCH + 1), dtype=bool)
    for j, size in enumerate(SIZES):
        r = RADIUS[size]
        out[0, j] = xx ** 2 + yy ** 2 <= r ** 2
        out[1, j] = (np.abs(xx) <= 0.8 * r) & (np.abs(yy) <= 0.8 * r)
        out[2, j] = (yy >= -r) & (yy <= 0.8 * r) & (np.abs(xx) <= (yy + r) / (1.8 * r) * r)
        hull = (yy >= 0.3 * r) & (yy <= 0.9 * r) & (np.abs(xx) <= r * (1.0 - 0.45 * (yy - 0.3 * r) / (0.6 * r)))
        sail = (yy >= -r) & (yy <= 0.05 * r) & (xx >= 1.0) & (xx <= 0.8 * r * (yy + r) / (1.05 * r) + 1.0)
        mast = (np.abs(xx) <= 0.5) & (yy >= -r) & (yy < 0.3 * r)
        out[3, j] = hull | sail | mast
    return out


def _textures() -> np.ndarray:
    """One fixed texture per background, (len(BACKGROUNDS), SIZE, SIZE, 3) uint8."""
    rng = np.random.default_rng(20260)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    out = np.zeros((len(BACKGROUNDS), SIZE, SIZE, 3), dtype=np.float32)
    for b, name in enumerate(BACKGROUNDS):
        base = np.array(BACKGROUND_RGB[name], dtype=np.float32)
        if name == "water":  # horizontal ripples
            shade = 18 * np.sin(yy * 1.3 + 0.8 * np.sin(xx * 0.35)) + rng.normal(0, 4, (SIZE, SIZE))
        elif name == "grass":  # vertical blades
            shade = 16 * np.sin(xx * 2.1 + rng.normal(0, 0.4, (SIZE, SIZE))) + rng.normal(0, 6, (SIZE, SIZE))
        elif name == "sand":  # speckles
            shade = rng.normal(0, 12, (SIZE, SIZE))
        else:  # snow: faint drifts
            shade = 6 * np.sin(xx * 0.3 + yy * 0.2) + rng.normal(0, 3, (SIZE, SIZE))
        out[b] = base + shade[..., None]
    return np.clip(out, 0, 255).astype(np.uint8)


TEMPLATES = _templates()
TEXTURES = _textures()


@dataclass(eq=False)
class Scenes:
    """A batch of N scenes as index arrays (−1: an empty position), with their images.

    Object k of a scene stands at POSITIONS[k]; ``shape[n, k] == -1`` leaves that position empty."""

    background: np.ndarray  # (N,) index into BACKGROUNDS
    shape: np.ndarray  # (N, 3) index into SHAPES, −1 where empty
    colour: np.ndarray  # (N, 3) index into COLOURS
    size: np.ndarray  # (N, 3) index into SIZES
    dy: np.ndarray  # (N, 3) the object's centre row
    images: np.ndarray  # (N, SIZE, SIZE, 3) uint8

    def __len__(self) -> int:
        return len(self.background)

    def scene(self, n: int) -> Scene:
        objects = tuple(SceneObject(SHAPES[self.shape[n, k]], COLOURS[self.colour[n, k]], SIZES[self.size[n, k]],
                                    POSITIONS[k]) for k in range(MAX_OBJECTS) if self.shape[n, k] >= 0)
        return Scene(BACKGROUNDS[self.background[n]], objects)

    def captions(self) -> list[str]:
        return [caption(self.scene(n)) for n in range(len(self))]

    def object_masks(self) -> np.ndarray:
        """(N, SIZE, SIZE) bool: the pixels covered by an object."""
        return _draw(self, masks_only=True)

    def subset(self, idx) -> Scenes:
        return Scenes(self.background[idx], self.shape[idx], self.colour[idx], self.size[idx], self.dy[idx],
                      self.images[idx])


def _stripes() -> np.ndarray:
    """Each template placed at each centre row of a full-height stripe: (len(SHAPES) + 1, len(SIZES), rows,
    SIZE, W); the last shape index is an empty stripe, for a position with no object."""
    width = 2 * PATCH + 1
    centres = range(PATCH, SIZE - PATCH)
    out = np.zeros((len(SHAPES) + 1, len(SIZES), len(centres), SIZE, width), dtype=bool)
    for r, cy in enumerate(centres):
        out[:-1, :, r, cy - PATCH:cy + PATCH + 1] = TEMPLATES
    return out


STRIPES = _stripes()


def _draw(s: Scenes, masks_only: bool = False) -> np.ndarray:
    """Paint the objects of every scene over its background texture, vectorised over scenes."""
    n = len(s.background)
    canvas = np.zeros((n, SIZE, SIZE), dtype=bool) if masks_only else np.take(TEXTURES, s.background, axis=0)
    palette = np.array([RGB[c] for c in COLOURS], dtype=np.uint8)
    for k in range(MAX_OBJECTS):
        shape = np.where(s.shape[:, k] >= 0, s.shape[:, k], len(SHAPES))  # empty → the blank stripe
        mask = STRIPES[shape, s.size[:, k], s.dy[:, k] - PATCH]  # (N, SIZE, W)
        cols = slice(COLUMN_X[k] - PATCH, COLUMN_X[k] + PATCH + 1)
        if masks_only:
            canvas[:, :, cols] |= mask
        else:
            colour = palette[s.colour[:, k]][:, None, None, :]  # (N, 1, 1, 3)
            np.copyto(canvas[:, :, cols], colour, where=mask[..., None])
    return canvas


def _rows(rng: np.random.Generator, size: np.ndarray) -> np.ndarray:
    """A random centre row per object, keeping a large object inside the image."""
    return rng.integers(PATCH, SIZE - PATCH, size=size.shape)


def generate(n: int, seed: int, p: float = BASE_RATE, backgrounds: tuple[str, ...] = BACKGROUNDS,
             boat: bool | None = None) -> Scenes:
    """N random scenes: on water a boat with probability p, elsewhere with probability BASE_RATE.

    ``backgrounds`` limits the backgrounds drawn (uniformly); ``boat`` True/False forces a boat in every
    scene or in none (the counter-example set is ``backgrounds=("water",), boat=False``)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The co-occurrence p is a probability in [0, 1], not {p}")
    unknown = [b for b in backgrounds if b not in BACKGROUNDS]
    if unknown or not backgrounds:
        raise ValueError(f"Unknown background(s) {unknown}; choose from {', '.join(BACKGROUNDS)}.")
    rng = np.random.default_rng(seed)
    bg = np.array([BACKGROUNDS.index(b) for b in backgrounds])[rng.integers(0, len(backgrounds), n)]
    count = rng.integers(1, MAX_OBJECTS + 1, n)  # 1..3 objects
    # Which positions are filled: the `count` smallest of three random keys.
    keys = rng.random((n, MAX_OBJECTS))
    rank = keys.argsort(1).argsort(1)
    filled = rank < count[:, None]  # (N, 3)
    shape = rng.integers(0, len(SHAPES) - 1, (n, MAX_OBJECTS))  # any shape but the boat (SHAPES[-1])
    if boat is None:
        rate = np.where(bg == BACKGROUNDS.index(BIASED_BACKGROUND), p, BASE_RATE)
        has_boat = rng.random(n) < rate
    else:
        has_boat = np.full(n, bool(boat))
        rng.random(n)  # keep the stream aligned with the boat=None case
    boat_slot = np.where(filled, keys, np.inf).argmin(1)  # one filled position
    shape[np.arange(n)[has_boat], boat_slot[has_boat]] = SHAPES.index(BIASED_SHAPE)
    shape = np.where(filled, shape, -1)
    # Colours: uniform over the five that show on the scene's background.
    invisible = np.array([COLOURS.index(INVISIBLE[b]) for b in BACKGROUNDS])[bg]  # (N,)
    colour = rng.integers(0, len(COLOURS) - 1, (n, MAX_OBJECTS))
    colour = np.where(colour >= invisible[:, None], colour + 1, colour)
    size = rng.integers(0, len(SIZES), (n, MAX_OBJECTS))
    dy = _rows(rng, size)
    scenes = Scenes(bg, shape.astype(np.int8), colour.astype(np.int8), size.astype(np.int8), dy.astype(np.int16),
                    np.empty(0))
    scenes.images = _draw(scenes)
    return scenes


def from_scene(scene: Scene, seed: int = 0) -> Scenes:
    """One scene (validated) as a batch of one, its objects' rows drawn from ``seed``."""
    scene = scene.validate()
    shape = np.full((1, MAX_OBJECTS), -1, dtype=np.int8)
    colour = np.zeros((1, MAX_OBJECTS), dtype=np.int8)
    size = np.zeros((1, MAX_OBJECTS), dtype=np.int8)
    for obj in scene.objects:
        k = POSITIONS.index(obj.position)
        shape[0, k], colour[0, k] = SHAPES.index(obj.shape), COLOURS.index(obj.colour)
        size[0, k] = SIZES.index(obj.size)
    dy = _rows(np.random.default_rng(seed), size).astype(np.int16)
    scenes = Scenes(np.array([BACKGROUNDS.index(scene.background)]), shape, colour, size, dy, np.empty(0))
    scenes.images = _draw(scenes)
    return scenes


def render(scene: Scene, seed: int = 0) -> np.ndarray:
    """The image of one scene, (SIZE, SIZE, 3) uint8."""
    return from_scene(scene, seed).images[0]


def heldout(n: int, seed: int) -> Scenes:
    """The held-out set: boats and water independent (p = BASE_RATE), so it holds water without a boat."""
    return generate(n, seed, p=BASE_RATE)


def counterexamples(n: int, seed: int) -> Scenes:
    """Water with no boat: the scenes a captioner biased by co-occurrence names a boat in."""
    return generate(n, seed, backgrounds=(BIASED_BACKGROUND,), boat=False)
