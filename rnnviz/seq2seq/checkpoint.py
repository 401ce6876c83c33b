"""Saving and loading seq2seq models through torch.load(weights_only=True), and the shipped pair."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from rnnviz import pairs
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.limits import UPLOAD_LIMITS, FileLimits
from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import JOINS, Seq2Seq, Seq2SeqConfig

FORMAT = "rnnviz-seq2seq-1"
FILES = {"fixed": "seq2seq-reverse-fixed.pt", "attention": "seq2seq-reverse-attention.pt"}
MAX_BYTES = 2_000_000  # each shipped model


class Seq2SeqError(ValueError):
    """A file that is not a seq2seq model this code can load."""


def _config_from(payload: dict) -> Seq2SeqConfig:
    known = {f.name for f in fields(Seq2SeqConfig)}
    config = Seq2SeqConfig(**{k: v for k, v in payload["config"].items() if k in known})
    vocab = payload.get("vocab", ())
    if not isinstance(vocab, list | tuple) or tuple(vocab) != task.vocab(config.letters):
        raise Seq2SeqError("The checkpoint's vocabulary differs from its task's.")
    return config


SEQ2SEQ = pairs.CheckpointKind(FORMAT, "seq2seq model", Seq2SeqError, _config_from, Seq2Seq)


def save_model(model: Seq2Seq, path: str | Path | None = None, metrics: dict | None = None) -> bytes:
    """The model as bytes (config, vocabulary, fp32 weights, recorded metrics); also written to ``path``."""
    return pairs.checkpoint_bytes(SEQ2SEQ, model, asdict(model.config), task.vocab(model.letters), metrics, path)


def load_model(source: str | Path | bytes, *, limits: FileLimits = UPLOAD_LIMITS) -> tuple[Seq2Seq, dict]:
    """(model, recorded metrics) from a file or bytes, checked as ``rnnviz.pairs.load_checkpoint`` checks it;
    every failure is a Seq2SeqError in words."""
    return pairs.load_checkpoint(SEQ2SEQ, source, limits)


def save_pair(models: dict[str, Seq2Seq], folder: str | Path,
              metrics: dict[str, dict] | None = None) -> dict[str, Path]:
    """Each join to ``folder``/FILES[join]; returns the paths."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    paths = {}
    for join, model in models.items():
        paths[join] = folder / FILES[join]
        save_model(model, paths[join], (metrics or {}).get(join))
    return paths


def load_pair(folder: str | Path = MODELS_DIR) -> tuple[dict[str, Seq2Seq], dict[str, dict]]:
    """({"fixed": m, "attention": m}, their recorded metrics) from ``folder`` (default: the shipped pair)."""
    models, metrics = {}, {}
    for join in JOINS:
        models[join], metrics[join] = load_model(Path(folder) / FILES[join])
    return models, metrics


def load_shipped() -> tuple[dict[str, Seq2Seq], dict[str, dict]]:
    """The shipped pair (rnnviz/assets/models/seq2seq-reverse-*.pt) with the accuracy-by-length each recorded."""
    return load_pair(MODELS_DIR)
