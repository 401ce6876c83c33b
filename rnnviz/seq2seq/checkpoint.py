"""Saving and loading seq2seq models through torch.load(weights_only=True), and the shipped pair."""

from __future__ import annotations

import io
from dataclasses import asdict, fields
from pathlib import Path

import torch

from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import JOINS, Seq2Seq, Seq2SeqConfig

FORMAT = "rnnviz-seq2seq-1"
FILES = {"fixed": "seq2seq-reverse-fixed.pt", "attention": "seq2seq-reverse-attention.pt"}
MAX_BYTES = 2_000_000  # each shipped model


class Seq2SeqError(ValueError):
    """A file that is not a seq2seq model this code can load."""


def save_model(model: Seq2Seq, path: str | Path | None = None, metrics: dict | None = None) -> bytes:
    """The model as bytes (config, vocabulary, fp32 weights, recorded metrics); also written to ``path``."""
    payload = {"format": FORMAT, "config": asdict(model.config), "vocab": list(task.vocab(model.letters)),
               "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
               "metrics": dict(metrics or {})}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def load_model(source: str | Path | bytes) -> tuple[Seq2Seq, dict]:
    """(model, recorded metrics) from a file or bytes, through torch.load(weights_only=True), strict."""
    if isinstance(source, bytes):
        raw = source
    else:
        path = Path(source)
        if not path.is_file():
            raise Seq2SeqError(f"No such seq2seq model file: {source}")
        raw = path.read_bytes()
    try:
        payload = torch.load(io.BytesIO(raw), weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - any unpickling failure is a bad file
        raise Seq2SeqError(f"Not a seq2seq checkpoint ({type(err).__name__}).") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise Seq2SeqError(f"Not a seq2seq checkpoint (no {FORMAT} format mark).")
    try:
        known = {f.name for f in fields(Seq2SeqConfig)}
        config = Seq2SeqConfig(**{k: v for k, v in payload["config"].items() if k in known})
        if tuple(payload.get("vocab", ())) != task.vocab(config.letters):
            raise Seq2SeqError("The checkpoint's vocabulary differs from its task's.")
        model = Seq2Seq(config)
        model.load_state_dict({k: v.float() for k, v in payload["state"].items()}, strict=True)
    except Seq2SeqError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as err:
        raise Seq2SeqError(f"The checkpoint does not fit the seq2seq model: {err}") from None
    model.eval()
    return model, dict(payload.get("metrics", {}))


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
