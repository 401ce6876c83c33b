"""Hallucination against co-occurrence: one captioner trained per P(boat | water), measured on the same sets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from rnnviz.captioning import world
from rnnviz.captioning.metrics import boat_rate, evaluate
from rnnviz.captioning.model import CaptionConfig
from rnnviz.captioning.train import train_one


@dataclass(frozen=True)
class SweepPoint:
    """One model trained at co-occurrence p, measured on the held-out and counter-example sets."""

    p: float
    chair_i: float
    chair_s: float
    exact: float
    boat_on_empty_water: float  # share of captions naming a boat on water-without-boat scenes


def sweep(ps: tuple[float, ...], config: CaptionConfig, n_eval: int = 400,
          on_progress: Callable[[int, int, str], None] | None = None) -> tuple[list[SweepPoint], dict]:
    """Train one captioner of ``config.join`` per p (same seed, so the same init and batch order) and measure
    CHAIR on the held-out set and the boat rate on water without a boat. Returns (points, models by p)."""
    held = world.heldout(n_eval, config.seed + 1000)
    counter = world.counterexamples(n_eval, config.seed + 2000)
    points, models = [], {}
    total = len(ps) * config.steps
    for k, p in enumerate(ps):
        def progress(step, steps, loss, k=k, p=p):
            if on_progress is not None:
                on_progress(k * config.steps + step, total, f"p = {p:.2f}: step {step}/{steps}")

        model, _ = train_one(replace(config, p=p), progress)
        m = evaluate(model, held)
        points.append(SweepPoint(p, m["chair_i"], m["chair_s"], m["exact"], boat_rate(model, counter)))
        models[p] = model
    return points, models
