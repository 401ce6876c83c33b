"""The shipped models in assets/models/: make a trained checkpoint small, and measure its val loss.

A checkpoint from ``python -m rnnviz.train`` carries Adam's two moment tensors (twice the weights) and
fp32 weights. ``compact`` drops the optimizer state and stores the weights as fp16; ``load_checkpoint``
reads them back into the fp32 model (``load_state_dict`` casts), so a shipped file is about a sixth of the
original. The val loss recorded in MODELS.md is that of the fp16-stored weights, as loaded.

The CLI: ``python -m rnnviz.pretrained compact IN OUT`` and ``python -m rnnviz.pretrained evaluate FILE``.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import torch

from rnnviz.checkpoint import CheckpointError, load_checkpoint
from rnnviz.corpus import Corpus, CorpusError
from rnnviz.train import load_corpus, sequence_loss

MODELS_DIR = Path(__file__).resolve().parents[1] / "assets" / "models"
MAX_BYTES = 5_000_000  # each shipped file


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
    checkpoint = load_checkpoint(path)
    corpus = corpus or load_corpus(checkpoint.corpus)
    _, val = corpus.split()
    return sequence_loss(checkpoint.model, checkpoint.vocab.encode(corpus.text[len(corpus) - len(val):]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rnnviz.pretrained",
                                     description="Prepare and check the models shipped in assets/models/.")
    commands = parser.add_subparsers(dest="command", required=True)
    compact = commands.add_parser("compact", help="drop the optimizer state and store the weights as fp16")
    compact.add_argument("source", help="a checkpoint written by python -m rnnviz.train")
    compact.add_argument("target", help="where to write the compact checkpoint")
    evaluate = commands.add_parser("evaluate", help="print the val loss on the checkpoint's own corpus")
    evaluate.add_argument("checkpoint")
    args = parser.parse_args(argv)
    try:
        if args.command == "compact":
            data = compact_bytes(Path(args.source).read_bytes())
            Path(args.target).write_bytes(data)
            note = "" if len(data) <= MAX_BYTES else f" (over the {MAX_BYTES:,}-byte limit for shipped models)"
            print(f"wrote {args.target}: {len(data):,} bytes{note}")
        else:
            loss, chars = val_loss(args.checkpoint)
            checkpoint = load_checkpoint(args.checkpoint)
            config = checkpoint.config
            print(f"{args.checkpoint}: {config.layers}×{config.hidden} {config.kind.upper()} on {checkpoint.corpus}, "
                  f"step {checkpoint.step}, {checkpoint.model.num_parameters():,} parameters; "
                  f"val loss {loss:.4f} nats/char over {chars:,} characters")
    except (CheckpointError, CorpusError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
