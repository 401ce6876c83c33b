"""What the captioning and seq2seq engines share: two joins trained side by side, their checkpoint bytes, their CLIs.

Each engine compares two joins of one model (v at every step against v only in h_0; a fixed context against
attention), drawn from one seed and stepped on the same batches, so that the join is the only difference. Each saves
a model as ``{format, config, vocab, state, metrics}`` through torch.save and reads it back through
``rnnviz.bounded.load_torch_file``; each command line answers bad input in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import torch
from torch import Tensor, nn

from rnnviz.bounded import load_torch_file, nonfinite_problem, times
from rnnviz.limits import FileLimits, quoted

Batch = TypeVar("Batch")
StepCallback = Callable[[int, int, dict[str, float]], None]  # (step, steps, loss per model)


class TrainingSettings(Protocol):
    steps: int  # optimizer steps
    lr: float  # Adam's learning rate at step 0
    clip: float  # gradient-norm clip


@dataclass
class History:
    """Training loss per step and model, and the wall time."""

    steps: list[int] = field(default_factory=list)
    loss: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0


def cosine_lr(lr: float, step: int, steps: int) -> float:
    """The learning rate at ``step`` of ``steps``: a cosine from ``lr`` down to lr/10."""
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(1, steps))))


def train_side_by_side(models: dict[str, nn.Module], batches: Iterable[Batch],
                       loss_of: Callable[[nn.Module, Batch], Tensor], settings: TrainingSettings,
                       on_step: StepCallback | None = None) -> History:
    """One clipped Adam step of every model on each batch, with the same learning rate (``cosine_lr``)."""
    opts = {k: torch.optim.Adam(m.parameters(), lr=settings.lr) for k, m in models.items()}
    history = History(loss={k: [] for k in models})
    start = time.perf_counter()
    for m in models.values():
        m.train()
    for step, batch in enumerate(batches):
        lr = cosine_lr(settings.lr, step, settings.steps)
        losses = {}
        for name, model in models.items():
            for group in opts[name].param_groups:
                group["lr"] = lr
            loss = loss_of(model, batch)
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), settings.clip)
            opts[name].step()
            losses[name] = float(loss.detach())
            history.loss[name].append(losses[name])
        history.steps.append(step + 1)
        if on_step is not None:
            on_step(step + 1, settings.steps, losses)
    for m in models.values():
        m.eval()
    history.seconds = time.perf_counter() - start
    return history


# ---------------------------------------------------------------------------------------------------------
# Checkpoints


@dataclass(frozen=True)
class CheckpointKind:
    """One engine's checkpoint: its format mark, its name in messages, its error, and how its model is built."""

    format: str  # the payload's "format" mark, e.g. "rnnviz-seq2seq-1"
    noun: str  # the model in messages: "captioner", "seq2seq model"
    error: type[ValueError]  # raised, with words, for every file that cannot be loaded
    config_from: Callable[[dict], Any]  # the config of a payload; may raise ``error``, ValueError, TypeError, KeyError
    build: Callable[[Any], nn.Module]  # the model of a config
    list_fields: tuple[str, ...] = ()  # config values that are lists (``config_from`` checks them)


def checkpoint_bytes(kind: CheckpointKind, model: nn.Module, config: dict, vocab: Sequence[str],
                     metrics: dict | None = None, path: str | Path | None = None) -> bytes:
    """The model as torch.save bytes of {format, config, vocab, fp32 weights, recorded metrics}; also written to
    ``path``."""
    payload = {"format": kind.format, "config": config, "vocab": list(vocab),
               "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
               "metrics": dict(metrics or {})}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def load_checkpoint(kind: CheckpointKind, source: str | Path | bytes, limits: FileLimits) -> tuple[nn.Module, dict]:
    """(model, recorded metrics) from a file or bytes that ``checkpoint_bytes`` wrote, strict.

    The file is checked as ``load_torch_file`` checks it; the model its config describes is counted on torch's meta
    device and refused beyond ``limits.parameters`` before it is built, and every weight must be finite. Every
    failure is a ``kind.error`` in words.
    """
    error, noun = kind.error, kind.noun
    if isinstance(source, bytes):
        raw = source
    else:
        path = Path(source)
        if not path.is_file():
            raise error(f"No such {noun} file: {quoted(source)}")
        raw = path.read_bytes()
    payload = load_torch_file(raw, error, noun, max_record_bytes=limits.record_bytes)
    if not isinstance(payload, dict) or type(payload.get("format")) is not str or payload["format"] != kind.format:
        raise error(f"Not a {noun} checkpoint (no {kind.format} format mark).")
    values, state, metrics = payload.get("config"), payload.get("state"), payload.get("metrics", {})
    if not isinstance(values, dict) or not all(isinstance(v, bool | int | float | str) or k in kind.list_fields
                                               for k, v in values.items()):
        raise error("The checkpoint's config is not a dict of plain values.")
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) and not v.is_complex()
                                              for k, v in state.items()):
        raise error("The checkpoint's weights are not a dict of named real-valued tensors.")
    if not isinstance(metrics, dict):
        raise error("The checkpoint's recorded metrics are not a dict.")
    try:
        config = kind.config_from(payload)
        with torch.device("meta"):  # shapes only: the size is known before anything is allocated
            expected = {k: tuple(v.shape) for k, v in kind.build(config).state_dict().items()}
    except error:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, OverflowError) as err:
        raise error(f"The checkpoint does not fit the {noun}: {quoted(err)}") from None
    count = sum(math.prod(shape) for shape in expected.values())
    most = limits.parameters
    if most is not None and count > most:
        raise error(f"The {noun} its config describes holds {count:,} parameters, {times(count, most)} the "
                    f"{most:,} a model may have here.")
    wrong = sorted(set(expected) ^ set(state)) + [k for k in expected.keys() & state.keys()
                                                  if tuple(state[k].shape) != expected[k]]
    if wrong:
        raise error(f"The checkpoint's weights do not fit its config: look at {quoted(', '.join(wrong))}.")
    model = kind.build(config)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    model.eval()
    for name, tensor in model.state_dict().items():
        problem = nonfinite_problem(tensor)
        if problem:
            raise error(f"The checkpoint's weight {name} cannot be used: {problem}.")
    return model, dict(metrics)


# ---------------------------------------------------------------------------------------------------------
# Command lines

Command = Callable[[list[str], str], int]  # (arguments after its name, prog) -> exit code


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose bad options raise ValueError, so that ``run_command`` says them in one line."""

    def error(self, message: str):
        raise ValueError(message)


def print_progress(step: int, steps: int, loss: dict[str, float]) -> None:
    """A training's loss per model on one stderr line, redrawn about 20 times."""
    if step % max(1, steps // 20) == 0 or step == steps:
        losses = ", ".join(f"{k} {v:.3f}" for k, v in loss.items())
        print(f"\rstep {step}/{steps}  loss {losses}", end="" if step < steps else "\n", file=sys.stderr, flush=True)


def output_folder(spec: str) -> Path:
    """``--out-dir``, which must be an existing folder."""
    folder = Path(spec)
    if not folder.is_dir():
        raise ValueError(f"--out-dir {spec} is not a folder")
    return folder


def run_command(commands: dict[str, Command], argv: list[str] | None, prog: str) -> int:
    """Run ``argv[0]``'s command; bad input (ValueError, OSError) is one line on stderr and exit code 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in commands:
        print(f"usage: {prog} {{{'|'.join(commands)}}} [options]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    name = argv[0]
    try:
        return commands[name](argv[1:], f"{prog} {name}")
    except (ValueError, OSError) as err:
        print(f"{prog} {name}: {err}", file=sys.stderr)
        return 2
