"""Training both joins on identical batches: teacher forcing, cross-entropy ignoring <PAD>, Adam with cosine decay."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch import Tensor

from rnnviz.pairs import History, StepCallback, train_side_by_side
from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import Seq2Seq, Seq2SeqConfig, init_pair

SourceAndTarget = tuple[Tensor, Tensor, Tensor, Tensor]  # (src, lengths, decoder inputs, targets)


def batches(config: Seq2SeqConfig) -> Iterator[SourceAndTarget]:
    """(src, lengths, decoder inputs, targets) per step, from seed + 1; the same for every join."""
    rng = np.random.default_rng(config.seed + 1)
    letters = config.letters
    for _ in range(config.steps):
        texts = task.random_strings(rng, config.batch, config.train_min, config.train_max, letters)
        src, lengths = task.source_tensor(texts, letters)
        tgt_in, targets = task.target_tensors(texts, letters)
        yield src, lengths, tgt_in, targets


def _loss(model: Seq2Seq, batch: SourceAndTarget) -> Tensor:
    return model(*batch).loss


def train_models(models: dict[str, Seq2Seq], config: Seq2SeqConfig, on_step: StepCallback | None = None) -> History:
    """One Adam step of each model per batch, on the same batches (``batches``)."""
    return train_side_by_side(models, batches(config), _loss, config, on_step)


def train_pair(config: Seq2SeqConfig, on_step: StepCallback | None = None) -> tuple[dict[str, Seq2Seq], History]:
    """Both joins from the same initial weights on the same batches: ({"fixed": m, "attention": m}, History).
    Call rnnviz.core.runtime.configure_cpu first (the CLI and the page do)."""
    models = init_pair(config.validate())
    return models, train_models(models, config, on_step)
