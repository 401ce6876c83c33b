"""The shipped models in rnnviz/assets/models/: make a trained checkpoint small, and measure its val loss.

A checkpoint from ``rnnviz train`` carries Adam's two moment tensors (twice the weights) and
fp32 weights. ``compact`` drops the optimizer state and stores the weights as fp16; ``load_checkpoint``
reads them back into the fp32 model (``load_state_dict`` casts), so a shipped file is about a sixth of the
original. The val loss recorded in MODELS.md is that of the fp16-stored weights, as loaded.

The CLI: ``rnnviz models`` lists them, ``rnnviz models compact IN OUT`` and ``rnnviz models evaluate FILE``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import torch

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import Corpus, load_corpus
from rnnviz.charlm.train import sequence_loss
from rnnviz.limits import OWN_FILE_LIMITS

# Package data: found through the installed package, never through the current folder.
MODELS_DIR = Path(str(files("rnnviz").joinpath("assets", "models")))
MAX_BYTES = 5_000_000  # each shipped file
_RECORD_ROW = re.compile(  # | `file.pt` | corpus | model | size | val loss |
    r"^\| `(?P<file>[\w.-]+\.pt)` \| (?P<corpus>[\w-]+) \| (?P<model>[^|]+) \| (?P<size>[\d,]+) \| "
    r"(?P<loss>\d\.\d{4}) \|$"
)


@dataclass(frozen=True)
class ShippedModel:
    """One row of MODELS.md: a shipped checkpoint and the val loss measured when it was made."""

    file: str  # file name inside MODELS_DIR
    corpus: str  # the corpus it was trained on, a BUILTIN_CORPORA name
    model: str  # the architecture in words, as MODELS.md gives it
    size: int  # bytes on disk, as recorded
    val_loss: float  # nats/char on the last 10% of its corpus, as recorded


def shipped_models() -> list[ShippedModel]:
    """The models recorded in MODELS.md's table, in its order."""
    rows = map(_RECORD_ROW.match, (MODELS_DIR / "MODELS.md").read_text(encoding="utf-8").splitlines())
    return [ShippedModel(m["file"], m["corpus"], m["model"].strip(), int(m["size"].replace(",", "")),
                         float(m["loss"])) for m in rows if m]


def compact_bytes(raw: bytes, dtype: torch.dtype = torch.float16) -> bytes:
    """The checkpoint in ``raw`` without optimizer state, its weights stored as ``dtype``; validated first."""
    load_checkpoint(raw)  # refuse anything the app would refuse
    payload = torch.load(io.BytesIO(raw), weights_only=True, map_location="cpu")
    payload["optimizer"] = None
    payload["carried_state"] = None
    payload["model"] = {name: tensor.to(dtype) if tensor.is_floating_point() else tensor
                        for name, tensor in payload["model"].items()}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    load_checkpoint(data)  # and the result must load through the safe loader
    return data


def val_loss(path: str | Path, corpus: Corpus | None = None) -> tuple[float, int]:
    """(mean nats/char, characters scored) of a checkpoint on the val split of its corpus (or ``corpus``)."""
    checkpoint = load_checkpoint(path, limits=OWN_FILE_LIMITS)  # a file of the operator's own
    corpus = corpus or load_corpus(checkpoint.corpus)
    _, val = corpus.split()
    return sequence_loss(checkpoint.model, checkpoint.vocab.encode(corpus.text[len(corpus) - len(val):]))
