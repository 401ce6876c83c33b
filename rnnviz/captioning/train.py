"""Training captioners on identical batches: teacher forcing, cross-entropy ignoring <PAD>, Adam with cosine decay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rnnviz.captioning import world
from rnnviz.captioning.model import CaptionConfig, Captioner, caption_tensor, init_pair
from rnnviz.pairs import History, StepCallback, train_side_by_side

ImagesAndTokens = tuple[Tensor, Tensor]  # images (B, 3, 48, 48) in [0, 1], tokens (B, MAX_LEN + 1)


@dataclass(frozen=True)
class TrainingData:
    """The training scenes as tensors."""

    images: Tensor  # (N, 3, 48, 48) uint8
    tokens: Tensor  # (N, MAX_LEN + 1)

    @staticmethod
    def make(config: CaptionConfig) -> TrainingData:
        scenes = world.generate(config.n_train, config.seed, p=config.p)
        return TrainingData(torch.from_numpy(scenes.images).permute(0, 3, 1, 2).contiguous(),
                            caption_tensor(scenes.captions()))


def batch_order(config: CaptionConfig) -> np.ndarray:
    """(steps, batch) indices of the training scenes each step reads; depends on the seed, not the join."""
    rng = np.random.default_rng(config.seed + 1)
    per_epoch = config.n_train // min(config.batch, config.n_train)
    rows = []
    while len(rows) < config.steps:
        perm = rng.permutation(config.n_train)
        rows += [perm[i * config.batch:(i + 1) * config.batch] for i in range(per_epoch)]
    return np.stack(rows[: config.steps])


def batches(data: TrainingData, config: CaptionConfig) -> Iterator[ImagesAndTokens]:
    """(images, tokens) per step, in ``batch_order``."""
    for idx in batch_order(config):
        idx = torch.from_numpy(idx)
        yield data.images[idx].float().div_(255.0), data.tokens[idx]


def _loss(model: Captioner, batch: ImagesAndTokens) -> Tensor:
    images, tokens = batch
    return model(images, tokens[:, :-1], tokens[:, 1:])[1]


def train_models(models: dict[str, Captioner], config: CaptionConfig, on_step: StepCallback | None = None,
                 data: TrainingData | None = None) -> History:
    """Train each model in ``models`` on the same batches (batch_order), one Adam step each per batch."""
    data = data or TrainingData.make(config)
    return train_side_by_side(models, batches(data, config), _loss, config, on_step)


def train_pair(config: CaptionConfig, on_step: StepCallback | None = None) -> tuple[dict[str, Captioner], History]:
    """Both joins from the same initial weights on the same batches: ({"every": m, "h0": m}, History)."""
    models = init_pair(config.validate())
    return models, train_models(models, config, on_step)


def train_one(config: CaptionConfig, on_step: StepCallback | None = None) -> tuple[Captioner, History]:
    """One captioner of ``config.join``, from the same initial weights as its pair: (model, History)."""
    model = init_pair(config.validate())[config.join]
    model.config = config
    return model, train_models({config.join: model}, config, on_step)
