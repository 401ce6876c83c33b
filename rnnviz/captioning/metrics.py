"""How good captions are: CHAIR (hallucinated objects), exact match and per-attribute accuracy, the boat rate on
water without a boat, and how much the image still moves each next word."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from rnnviz.captioning import world
from rnnviz.captioning.decode import greedy
from rnnviz.captioning.model import OBJECT_WORDS, PAD_ID, Captioner, caption_tensor, decode, pixels


@dataclass(frozen=True)
class Chair:
    """CHAIR (Rohrbach et al. 2018) on the world's object words."""

    chair_i: float  # hallucinated object mentions ÷ all object mentions
    chair_s: float  # captions with at least one hallucinated object ÷ all captions
    mentions: int
    hallucinated: int
    captions: int
    bad_captions: int


def chair(captions: list[str], scenes: list[world.Scene]) -> Chair:
    """CHAIRi and CHAIRs: an object word (a shape) is hallucinated when no object of that shape is in the scene."""
    mentions = hallucinated = bad = 0
    for text, scene in zip(captions, scenes, strict=True):
        present = scene.shapes()
        named = [w for w in text.split() if w in OBJECT_WORDS]
        wrong = sum(w not in present for w in named)
        mentions += len(named)
        hallucinated += wrong
        bad += wrong > 0
    n = len(captions)
    return Chair(hallucinated / mentions if mentions else 0.0, bad / n if n else 0.0, mentions, hallucinated, n, bad)


ATTRIBUTES = ("shape", "colour", "size", "position", "background")


def attribute_accuracy(captions: list[str], scenes: list[world.Scene]) -> dict[str, float]:
    """Exact match, and per attribute the share of true objects the caption gets right at their position
    (position: an object is named at that position); background per caption; unparsed: captions off-grammar."""
    exact = unparsed = 0
    hits = dict.fromkeys(ATTRIBUTES, 0)
    objects = 0
    for text, scene in zip(captions, scenes, strict=True):
        exact += text == world.caption(scene)
        try:
            guess = world.parse_caption(text)
        except ValueError:
            guess = None
            unparsed += 1
        at = {o.position: o for o in guess.objects} if guess else {}
        hits["background"] += bool(guess) and guess.background == scene.background
        for obj in scene.objects:
            objects += 1
            other = at.get(obj.position)
            if other is None:
                continue
            hits["position"] += 1
            for name in ("shape", "colour", "size"):
                hits[name] += getattr(other, name) == getattr(obj, name)
    n = max(1, len(captions))
    out = {"exact": exact / n, "unparsed": unparsed / n}
    out.update({k: v / (n if k == "background" else max(1, objects)) for k, v in hits.items()})
    return out


def object_accuracy(captions: list[str], scenes: list[world.Scene]) -> list[dict[str, float]]:
    """Per place k in the true caption (1st, 2nd, 3rd object): the share of those objects that the caption names
    at their position with the right shape, and with the right colour. Unparsed captions count as wrong.
    Returns one dict per k with objects: how many true objects are k-th."""
    hits = [[0, 0, 0] for _ in range(world.MAX_OBJECTS)]
    for text, scene in zip(captions, scenes, strict=True):
        try:
            at = {o.position: o for o in world.parse_caption(text).objects}
        except ValueError:
            at = {}
        for k, obj in enumerate(scene.sorted().objects):
            other = at.get(obj.position)
            hits[k][2] += 1
            hits[k][0] += other is not None and other.shape == obj.shape
            hits[k][1] += other is not None and other.colour == obj.colour
    return [{"object": k + 1, "shape": s / max(1, n), "colour": c / max(1, n), "objects": n}
            for k, (s, c, n) in enumerate(hits)]


def scene_list(scenes: world.Scenes) -> list[world.Scene]:
    return [scenes.scene(i) for i in range(len(scenes))]


def evaluate(model: Captioner, scenes: world.Scenes, batch: int = 500) -> dict[str, float]:
    """Greedy captions of ``scenes``: exact match, per-attribute accuracy, CHAIRi and CHAIRs."""
    texts = []
    for i in range(0, len(scenes), batch):
        texts += [decode(ids) for ids in greedy(model, pixels(scenes.images[i:i + batch]))]
    truth = scene_list(scenes)
    c = chair(texts, truth)
    return {**attribute_accuracy(texts, truth), "chair_i": c.chair_i, "chair_s": c.chair_s}


def boat_rate(model: Captioner, scenes: world.Scenes) -> float:
    """The share of greedy captions that name a boat."""
    texts = [decode(ids) for ids in greedy(model, pixels(scenes.images))]
    return sum("boat" in t.split() for t in texts) / len(texts)


@torch.no_grad()
def image_influence(model: Captioner, scenes: world.Scenes, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """How much the image still changes the next-word distribution at step t: the mean over scenes of
    KL(p(· | w_{≤t}, v) ‖ p(· | w_{≤t}, v′)), v′ the v of another scene (a shuffle), teacher-forced on the
    true captions. Returns (KL per t, scenes counted per t), each (MAX_LEN,)."""
    model.eval()
    tokens = caption_tensor(scenes.captions())
    v = model.encode(pixels(scenes.images))
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(len(scenes)))
    log_p = F.log_softmax(model.logits(v, tokens[:, :-1]), -1)  # (N, T, V)
    log_q = F.log_softmax(model.logits(v[perm], tokens[:, :-1]), -1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)  # (N, T)
    live = tokens[:, 1:] != PAD_ID  # (N, T): a word is predicted here
    counts = live.sum(0)
    return ((kl * live).sum(0) / counts.clamp(min=1)).numpy(), counts.numpy()
