"""Saving and loading captioners through torch.load(weights_only=True)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from rnnviz import pairs
from rnnviz.captioning.model import VOCAB, CaptionConfig, Captioner
from rnnviz.limits import UPLOAD_LIMITS, FileLimits

FORMAT = "rnnviz-captioner-1"


class CaptionerError(ValueError):
    """A file that is not a captioner this code can load."""


def _config_from(payload: dict) -> CaptionConfig:
    vocab = payload.get("vocab", ())
    if not isinstance(vocab, list | tuple) or tuple(vocab) != VOCAB:
        raise CaptionerError("The checkpoint's vocabulary differs from this world's.")
    config = payload["config"]
    channels = config["channels"]
    if not isinstance(channels, list | tuple) or not all(type(c) is int for c in channels):
        raise CaptionerError("The checkpoint's conv widths (channels) are not a list of whole numbers.")
    return CaptionConfig(**{**config, "channels": tuple(channels)})


CAPTIONER = pairs.CheckpointKind(FORMAT, "captioner", CaptionerError, _config_from, Captioner,
                                 list_fields=("channels",))


def save_captioner(model: Captioner, path: str | Path | None = None, metrics: dict | None = None) -> bytes:
    """The model as bytes (config, vocabulary, weights, recorded metrics); also written to ``path``."""
    config = asdict(model.config)
    config["channels"] = list(config["channels"])
    return pairs.checkpoint_bytes(CAPTIONER, model, config, VOCAB, metrics, path)


def load_captioner(source: str | Path | bytes, *, limits: FileLimits = UPLOAD_LIMITS) -> tuple[Captioner, dict]:
    """(model, recorded metrics) from a file or bytes, checked as ``rnnviz.pairs.load_checkpoint`` checks it;
    every failure is a CaptionerError in words."""
    return pairs.load_checkpoint(CAPTIONER, source, limits)
