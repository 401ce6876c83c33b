"""Training both joins on identical batches: teacher forcing, cross-entropy ignoring <PAD>, Adam with cosine decay."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import Seq2Seq, Seq2SeqConfig, init_pair

StepCallback = Callable[[int, int, dict[str, float]], None]  # (step, steps, loss per model)


@dataclass
class History:
    """Training loss per step and model, and the wall time."""

    steps: list[int] = field(default_factory=list)
    loss: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0


def batches(config: Seq2SeqConfig) -> Iterator[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """(src, lengths, decoder inputs, targets) per step, from seed + 1; the same for every join."""
    rng = np.random.default_rng(config.seed + 1)
    letters = config.letters
    for _ in range(config.steps):
        texts = task.random_strings(rng, config.batch, config.train_min, config.train_max, letters)
        src, lengths = task.source_tensor(texts, letters)
        tgt_in, targets = task.target_tensors(texts, letters)
        yield src, lengths, tgt_in, targets


def train_models(models: dict[str, Seq2Seq], config: Seq2SeqConfig, on_step: StepCallback | None = None) -> History:
    """One Adam step of each model per batch, on the same batches (``batches``)."""
    opts = {k: torch.optim.Adam(m.parameters(), lr=config.lr) for k, m in models.items()}
    history = History(loss={k: [] for k in models})
    start = time.perf_counter()
    for m in models.values():
        m.train()
    for step, (src, lengths, tgt_in, targets) in enumerate(batches(config)):
        lr = config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(1, config.steps))))
        losses = {}
        for name, model in models.items():
            for group in opts[name].param_groups:
                group["lr"] = lr
            loss = model(src, lengths, tgt_in, targets).loss
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            opts[name].step()
            losses[name] = float(loss.detach())
            history.loss[name].append(losses[name])
        history.steps.append(step + 1)
        if on_step is not None:
            on_step(step + 1, config.steps, losses)
    for m in models.values():
        m.eval()
    history.seconds = time.perf_counter() - start
    return history


def train_pair(config: Seq2SeqConfig, on_step: StepCallback | None = None) -> tuple[dict[str, Seq2Seq], History]:
    """Both joins from the same initial weights on the same batches: ({"fixed": m, "attention": m}, History).
    Call rnnviz.core.runtime.configure_cpu first (the CLI and the page do)."""
    models = init_pair(config.validate())
    return models, train_models(models, config, on_step)
