"""Saving and loading seq2seq models through torch.load(weights_only=True), and the shipped pair."""

from __future__ import annotations

import io
import math
from dataclasses import asdict, fields
from pathlib import Path

import torch

from rnnviz.bounded import load_torch_file, nonfinite_problem, times
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.limits import UPLOAD_LIMITS, FileLimits, quoted
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


def load_model(source: str | Path | bytes, *, limits: FileLimits = UPLOAD_LIMITS) -> tuple[Seq2Seq, dict]:
    """(model, recorded metrics) from a file or bytes, through torch.load(weights_only=True), strict.

    The file is checked as ``rnnviz.bounded.load_torch_file`` checks it; the model its config describes is counted
    on torch's meta device and refused beyond ``limits.parameters`` before it is built, and every weight must be
    finite. Every failure is a Seq2SeqError in words.
    """
    if isinstance(source, bytes):
        raw = source
    else:
        path = Path(source)
        if not path.is_file():
            raise Seq2SeqError(f"No such seq2seq model file: {quoted(source)}")
        raw = path.read_bytes()
    payload = load_torch_file(raw, Seq2SeqError, "seq2seq model", max_record_bytes=limits.record_bytes)
    if not isinstance(payload, dict) or type(payload.get("format")) is not str or payload["format"] != FORMAT:
        raise Seq2SeqError(f"Not a seq2seq checkpoint (no {FORMAT} format mark).")
    values, state = payload.get("config"), payload.get("state")
    if not isinstance(values, dict) or not all(isinstance(v, bool | int | float | str) for v in values.values()):
        raise Seq2SeqError("The checkpoint's config is not a dict of plain values.")
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              and not v.is_complex() for k, v in state.items()):
        raise Seq2SeqError("The checkpoint's weights are not a dict of named real-valued tensors.")
    metrics = payload.get("metrics", {})
    if not isinstance(metrics, dict):
        raise Seq2SeqError("The checkpoint's recorded metrics are not a dict.")
    try:
        known = {f.name for f in fields(Seq2SeqConfig)}
        config = Seq2SeqConfig(**{k: v for k, v in values.items() if k in known})
        vocab = payload.get("vocab", ())
        if not isinstance(vocab, list | tuple) or tuple(vocab) != task.vocab(config.letters):
            raise Seq2SeqError("The checkpoint's vocabulary differs from its task's.")
        with torch.device("meta"):  # shapes only: the size is known before anything is allocated
            expected = {k: tuple(v.shape) for k, v in Seq2Seq(config).state_dict().items()}
    except Seq2SeqError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, OverflowError) as err:
        raise Seq2SeqError(f"The checkpoint does not fit the seq2seq model: {quoted(err)}") from None
    count = sum(math.prod(shape) for shape in expected.values())
    most = limits.parameters
    if most is not None and count > most:
        raise Seq2SeqError(f"The model its config describes holds {count:,} parameters, {times(count, most)} the "
                           f"{most:,} a model may have here.")
    wrong = sorted(set(expected) ^ set(state)) + [k for k in expected.keys() & state.keys()
                                                  if tuple(state[k].shape) != expected[k]]
    if wrong:
        raise Seq2SeqError(f"The checkpoint's weights do not fit its config: look at {quoted(', '.join(wrong))}.")
    model = Seq2Seq(config)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    model.eval()
    for name, tensor in model.state_dict().items():
        problem = nonfinite_problem(tensor)
        if problem:
            raise Seq2SeqError(f"The checkpoint's weight {name} cannot be used: {problem}.")
    return model, dict(metrics)


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
