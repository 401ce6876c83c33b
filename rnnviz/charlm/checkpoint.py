"""Checkpoints: one .pt per trained model, written atomically, read only through weights_only loading.

A checkpoint is a plain dict (tensors, str, int, float, bool, None, lists and dicts only), so that
``torch.load(..., weights_only=True)`` reads it without running any pickled code:

    format_version  int, FORMAT_VERSION
    corpus          str, the corpus name it was trained on
    config          dict, TrainConfig.to_dict() (files written before n_head, block_size, warmup_steps and
                    weight_decay existed lack them; they take TrainConfig's defaults)
    vocab           str, the vocabulary's characters in id order
    model           the CharModel state_dict (torch's parameter names: embed.weight, rnn.weight_ih_l0, …; the state
                    kinds' rnn.layers.0.…), or a CharTransformer's (embed.weight, pos_embed.weight, …)
    carried_state   None, or the state carried into the next chunk as a list of tensors: [h], [h, c], or every
                    field of every layer state of an sLSTM, mLSTM, selective SSM or linear attention, in order
    history, evals  lists of StepRecord / EvalRecord dicts
    optimizer … rng the rest of Trainer.state_dict(), for an exact resume (optimizer may be None)

``export_script`` writes a standalone training script that needs only torch (recurrent models only).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import BinaryIO

import torch

from rnnviz.bounded import load_torch_file, nonfinite_problem, times
from rnnviz.charlm.corpus import CorpusError, Vocab
from rnnviz.charlm.train import COOL_SHARE, EvalRecord, StepRecord, TrainConfig, Trainer
from rnnviz.core.charmodel import CharModel, build_model
from rnnviz.core.config import MODEL_KINDS, kind_label
from rnnviz.core.state_stack import STATE_KINDS
from rnnviz.core.transformer import CharTransformer
from rnnviz.limits import LONE_SURROGATES, MAX_RECORD_BYTES, UPLOAD_LIMITS, FileLimits, quoted

FORMAT_VERSION = 1
TRAINER_KEYS = (
    "config", "vocab", "model", "optimizer", "step", "seconds", "initial_loss", "position", "carried_state", "rng",
    "history", "evals",
)  # fmt: skip
KEYS = frozenset(("format_version", "corpus", *TRAINER_KEYS))


class CheckpointError(ValueError):
    """A file that is not a usable rnnviz checkpoint, with the reason in words."""


@dataclass(eq=False)
class Checkpoint:
    """A loaded checkpoint: the model (CPU, eval mode) and what it came with."""

    config: TrainConfig
    vocab: Vocab
    model: CharModel | CharTransformer
    corpus: str
    history: list[StepRecord]
    evals: list[EvalRecord]
    trainer_state: dict  # for Trainer.load_state_dict, to keep training

    @property
    def step(self) -> int:
        return self.trainer_state["step"]


def save_checkpoint(path: str | Path, trainer: Trainer, corpus_name: str | None = None,
                    include_optimizer: bool = True) -> Path:
    """Write ``trainer``'s model and training state to ``path`` atomically (temporary file, then rename).

    ``include_optimizer=False`` drops the optimizer moments (2× the weights for Adam) for a smaller file;
    training can still continue from it, with fresh moments.
    """
    payload = {"format_version": FORMAT_VERSION, "corpus": corpus_name or trainer.corpus.name,
               **trainer.state_dict()}
    if not include_optimizer:
        payload["optimizer"] = None
    to_cpu_inplace(payload)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            torch.save(payload, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, path)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return path


def checkpoint_bytes(trainer: Trainer, corpus_name: str | None = None, include_optimizer: bool = True) -> bytes:
    """The same file as ``save_checkpoint`` writes, in memory (for a download button)."""
    with tempfile.TemporaryDirectory() as folder:
        path = save_checkpoint(Path(folder) / "model.pt", trainer, corpus_name, include_optimizer)
        return path.read_bytes()


def load_checkpoint(source: str | Path | bytes | BinaryIO, kinds: Sequence[str] = MODEL_KINDS, *,
                    limits: FileLimits = UPLOAD_LIMITS) -> Checkpoint:
    """Read and validate a checkpoint from a path, bytes or a binary file object.

    ``kinds`` are the model kinds the caller can use (a page that reads recurrent cells passes
    rnnviz.core.recurrent.KINDS): any other kind is a CheckpointError that names both, before weights load.
    ``limits``: the largest model, records and history read (OWN_FILE_LIMITS for a file of the operator's own); the
    config's model is counted before anything is built.

    Always ``torch.load(..., weights_only=True, map_location="cpu")``: a pickle that would construct
    arbitrary objects or call functions is refused before any of it runs. Every field is checked, every tensor must
    own its values and every weight be finite, and the weights load into our own architecture with ``strict=True``.
    Every failure is a CheckpointError.
    """
    raw = read_source_bytes(source)
    if len(raw) < 4:
        raise CheckpointError("The file is empty or far too short to be a checkpoint.")
    if not raw.startswith(b"PK\x03\x04"):
        raise CheckpointError("This is not a PyTorch checkpoint (.pt) file.")
    payload = load_weights_only(raw, "checkpoint", max_record_bytes=limits.record_bytes)
    return validate_checkpoint(payload, tuple(kinds), limits)


def load_weights_only(raw: bytes, noun: str = "file", pickled_hint: str = "",
                      max_record_bytes: int | None = MAX_RECORD_BYTES):
    """``torch.load(..., weights_only=True, map_location="cpu")`` of a file's bytes, checked as
    ``rnnviz.bounded.load_torch_file`` checks it; every failure a CheckpointError that calls the file ``noun``."""
    return load_torch_file(raw, CheckpointError, noun, pickled_hint, max_record_bytes)


def read_source_bytes(source) -> bytes:
    """The bytes of a file given as bytes, a path or a binary file; a path that cannot be read is a CheckpointError."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    if isinstance(source, str | Path):
        try:
            return Path(source).read_bytes()
        except OSError as err:
            raise CheckpointError(f"Could not read {quoted(source)}: {err.strerror or err}.") from None
    return source.read()


def model_size_problem(count: int, max_parameters: int | None, what: str) -> str | None:
    """The refusal of a model of ``count`` parameters (``what`` describes where they were counted), or None."""
    if max_parameters is None or count <= max_parameters:
        return None
    return (f"{what} holds {count:,} parameters, {times(count, max_parameters)} the {max_parameters:,} a model may "
            "have here")


def validate_checkpoint(payload, kinds: tuple[str, ...] = MODEL_KINDS,
                        limits: FileLimits = UPLOAD_LIMITS) -> Checkpoint:
    """The Checkpoint in what ``load_weights_only`` read from a file, every field checked (see load_checkpoint)."""
    if not isinstance(payload, dict):
        raise CheckpointError("The file is a torch file but not an rnnviz checkpoint (no dict of fields).")
    version = payload.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        shown = repr(version) if isinstance(version, int | None) else f"a {type(version).__name__}"
        raise CheckpointError(f"The checkpoint's format version is {shown}; this rnnviz reads version "
                              f"{FORMAT_VERSION}.")
    missing, extra = sorted(KEYS - set(payload)), sorted(map(str, set(payload) - KEYS))
    if missing or extra:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unexpected {quoted(', '.join(extra))}"] if extra else []
        raise CheckpointError(f"The checkpoint's fields do not match: {'; '.join(parts)}.")
    if not isinstance(payload["corpus"], str):
        raise CheckpointError("The checkpoint's corpus name is not a string.")
    config = _config(payload["config"], kinds)
    vocab = _vocab(payload["vocab"])
    weights = payload["model"]
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise CheckpointError("The checkpoint's weights are not a dict of named tensors.")
    step = payload["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0 or not isinstance(payload["position"], int):
        raise CheckpointError("The checkpoint's step count or data position is malformed.")
    model = _model(config, vocab, step, weights, limits.parameters)
    history = _records(payload["history"], StepRecord, "training history", limits.history_records)
    evals = _records(payload["evals"], EvalRecord, "evaluations", limits.history_records)
    if payload["optimizer"] is not None and not isinstance(payload["optimizer"], dict):
        raise CheckpointError("The checkpoint's optimizer state is malformed.")
    _check_rng(payload["rng"])
    carried = payload["carried_state"]
    if carried is not None and not (isinstance(carried, list) and all(isinstance(t, torch.Tensor) for t in carried)
                                    and (config.kind in STATE_KINDS or 1 <= len(carried) <= 2)):
        raise CheckpointError("The checkpoint's carried state is malformed.")
    if carried is not None and config.kind in STATE_KINDS:
        try:
            model.state_from_tensors(carried)
        except ValueError as err:
            raise CheckpointError(f"The checkpoint's carried state does not fit its model: {quoted(err)}.") from None
    for k, tensor in enumerate(carried or ()):
        problem = nonfinite_problem(tensor)
        if problem:
            raise CheckpointError(f"The checkpoint's carried state (tensor {k}) cannot be used: {problem}.")
    trainer_state = {key: payload[key] for key in TRAINER_KEYS}
    return Checkpoint(config, vocab, model, quoted(payload["corpus"]), history, evals, trainer_state)


def _check_rng(rng) -> None:
    """CheckpointError unless ``rng`` holds a CPU random state torch takes (else training fails at its first step)."""
    cpu = rng.get("cpu") if isinstance(rng, dict) else None
    try:
        torch.Generator().set_state(cpu)
    except (TypeError, RuntimeError):
        raise CheckpointError("The checkpoint's random state is malformed.") from None


def _config(values, kinds: tuple[str, ...]) -> TrainConfig:
    """The TrainConfig a checkpoint's ``config`` dict describes, its values plain numbers, strings, None."""
    if not isinstance(values, dict):
        raise CheckpointError("The checkpoint's training config is not a dict.")
    odd = [str(k) for k, v in values.items() if not isinstance(v, bool | int | float | str | None)]
    if odd:
        raise CheckpointError(f"The checkpoint's training config is invalid: {quoted(', '.join(odd))} "
                              "should be plain values.")
    try:
        config = TrainConfig.from_dict(values)
    except (TypeError, ValueError, OverflowError) as err:
        raise CheckpointError(f"The checkpoint's training config is invalid: {quoted(err)}.") from None
    if config.kind not in kinds:
        readable = ", ".join(kind_label(k) for k in kinds)
        raise CheckpointError(f"The checkpoint holds a {kind_label(config.kind)}; only {readable} models can be "
                              "used here.")
    return config


def _vocab(chars) -> Vocab:
    if not isinstance(chars, str):
        raise CheckpointError("The checkpoint's vocabulary is not a string of characters.")
    if LONE_SURROGATES.search(chars):
        raise CheckpointError("The checkpoint's vocabulary holds half of a UTF-16 surrogate pair, which is no "
                              "character.")
    try:
        return Vocab(chars)
    except (CorpusError, ValueError) as err:
        raise CheckpointError(f"The checkpoint's vocabulary is invalid: {quoted(err)}.") from None


def _model(config: TrainConfig, vocab: Vocab, step: int, weights: dict[str, torch.Tensor],
           max_parameters: int | None) -> CharModel | CharTransformer:
    """The model of ``config`` holding ``weights``, counted on torch's meta device before it is built."""
    stored = sum(t.numel() for t in weights.values())
    problem = model_size_problem(stored, max_parameters, "Its weights")
    if problem:
        raise CheckpointError(f"The checkpoint is too large: {problem}.")
    if config.layers > len(weights):  # each layer has weights of its own: no need to build a million to see it
        raise CheckpointError(f"The checkpoint's config has {config.layers:,} layers but its weights only "
                              f"{len(weights):,} tensors: they do not fit a {kind_label(config.kind)}.")
    model_config = config.model_config(vocab.size, step=step)  # a run that grows: its width at that step
    try:
        with torch.device("meta"):
            expected = {k: tuple(v.shape) for k, v in build_model(model_config).state_dict().items()}
    except (ValueError, RuntimeError, OverflowError) as err:
        raise CheckpointError(f"The checkpoint's config describes no model rnnviz can build ({quoted(err)}).") from None
    problem = model_size_problem(sum(math.prod(shape) for shape in expected.values()), max_parameters,
                                 f"The model its config describes ({config.layers} × {config.hidden:,} "
                                 f"{kind_label(config.kind)})")
    if problem:
        raise CheckpointError(f"The checkpoint is too large: {problem}.")
    missing_w, extra_w = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing_w or extra_w:
        raise CheckpointError(
            f"The checkpoint's weights do not fit a {config.layers}-layer {kind_label(config.kind)}: "
            f"missing {quoted(missing_w)}, unexpected {quoted(extra_w)}."
        )
    wrong = [f"{k} is {tuple(v.shape)}, expected {expected[k]}" for k, v in weights.items()
             if tuple(v.shape) != expected[k]]
    if wrong:
        raise CheckpointError(f"The checkpoint's weight shapes do not match its config: {'; '.join(wrong[:3])}.")
    for name, tensor in weights.items():
        if not tensor.is_floating_point():
            raise CheckpointError(f"The checkpoint's weight {name} holds {str(tensor.dtype).removeprefix('torch.')} "
                                  "values, not floating-point weights.")
    model = build_model(model_config)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as err:
        raise CheckpointError(f"The checkpoint's weights do not load: {quoted(err)}.") from None
    model.eval()
    for name, tensor in model.state_dict().items():
        problem = nonfinite_problem(tensor)
        if problem:
            raise CheckpointError(f"The checkpoint's weight {name} cannot be used: {problem}; a model with such a "
                                  "weight computes NaN for every character. Load a checkpoint from before the run "
                                  "diverged.")
    return model


def _records(rows, record: type, what: str, limit: int | None) -> list:
    """``rows`` (dicts of numbers) as ``record`` instances, at most ``limit`` of them (None: any number)."""
    if not isinstance(rows, list):
        raise CheckpointError(f"The checkpoint's {what} is malformed.")
    if limit is not None and len(rows) > limit:
        raise CheckpointError(f"The checkpoint's {what} lists {len(rows):,} records, {times(len(rows), limit)} the "
                              f"{limit:,} read here.")
    names = {f.name for f in fields(record)}
    out = []
    for row in rows:
        if not (isinstance(row, dict) and row.keys() == names
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in row.values())):
            raise CheckpointError(f"The checkpoint's {what} is malformed.")
        out.append(record(**row))
    return out


def resume_trainer(checkpoint: Checkpoint, corpus) -> Trainer:
    """A Trainer that continues ``checkpoint`` on ``corpus`` (exactly, when the optimizer state was kept)."""
    trainer = Trainer(checkpoint.config, corpus, vocab=checkpoint.vocab)
    state = dict(checkpoint.trainer_state)
    if state["optimizer"] is None:
        state["optimizer"] = trainer.optimizer.state_dict()
    try:
        trainer.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"The checkpoint's training state cannot be resumed: {quoted(err)}") from None
    for param, moments in trainer.optimizer.state.items():  # a moment of another shape fails at the first step
        for name, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() and value.shape != param.shape:
                raise CheckpointError(f"The checkpoint's optimizer state cannot be resumed: its {quoted(name, 40)} "
                                      f"is {tuple(value.shape)} for a weight of {tuple(param.shape)}.")
    return trainer


def to_cpu_inplace(value):
    """Move every tensor in a nested dict/list to the CPU, so the file loads anywhere."""
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = to_cpu_inplace(item)
        return value
    if isinstance(value, list):
        return [to_cpu_inplace(item) for item in value]
    if isinstance(value, torch.Tensor):
        return value.cpu()
    return value


# ---------------------------------------------------------------------------------------------------------
# Standalone script


def export_script(config: TrainConfig, vocab: Vocab, path: str | Path | None = None, cool_down: bool = False) -> str:
    """Source of a standalone .py (torch only) that rebuilds this model and trains it on a text file.

    Its module names match CharModel's (embed, rnn, head), so it can start from a checkpoint's weights
    (``--init m.pt``) and its saved weights load back into rnnviz. Written to ``path`` when given.
    Recurrent models only: a Transformer is a ValueError that says so. The script trains the model at the config's
    final width (a run that grows widens in rnnviz only). With ``cool_down`` (a live run that cools a copy down when it
    stops) and no decay of its own, the script knows its ``--steps`` and takes warmup–stable–decay's cool-down at the
    end: its learning rate falls linearly to 0 over the last COOL_SHARE of the steps.
    """
    if config.kind == "transformer":
        raise ValueError("Exporting a standalone script covers RNN, LSTM and GRU models; a Transformer cannot be "
                         "exported yet. Download its checkpoint (.pt) instead: rnnviz sample reads it.")
    if config.kind not in ("rnn", "lstm", "gru"):
        raise ValueError(f"Exporting a standalone script covers RNN, LSTM and GRU models, which torch has built in; "
                         f"a {kind_label(config.kind)} is rnnviz's own layer. Download its checkpoint (.pt) instead: "
                         "rnnviz sample reads it.")
    source = _SCRIPT.format(
        vocab=repr(vocab.chars),
        kind=repr(config.kind),
        torch_class={"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}[config.kind],
        layers=config.layers,
        hidden=config.hidden,
        embedding=config.embedding,
        embed_dim=config.embed_dim,
        dropout=config.dropout if config.layers > 1 else 0.0,
        forget_bias=repr(config.forget_bias if config.kind == "lstm" else None),
        optimizer=repr(config.optimizer),
        lr=config.lr,
        lr_decay_steps=config.lr_decay_steps,
        lr_floor=config.lr_floor,
        warmup_steps=config.warmup_steps,
        weight_decay=config.weight_decay,
        cool_share=COOL_SHARE if cool_down and config.lr_decay_steps <= 0 else 0.0,
        batch=config.batch,
        seq_len=config.seq_len,
        clip=repr(config.clip),
        seed=config.seed,
    )
    if path is not None:
        Path(path).write_text(source, encoding="utf-8")
    return source


_SCRIPT = '''"""A character-level {torch_class} exported from rnnviz: rebuilds the model, trains it with truncated BPTT.

Needs only PyTorch. Usage:
    python this_script.py input.txt [--steps 2000] [--init checkpoint.pt] [--out weights.pt]
Characters of input.txt outside the vocabulary below are dropped.
"""

import argparse
import math
import os

if "OMP_WAIT_POLICY" not in os.environ:  # before torch loads: idle OpenMP threads spin ~10 µs, then sleep
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

VOCAB = {vocab}
KIND = {kind}
LAYERS, HIDDEN = {layers}, {hidden}
EMBEDDING, EMBED_DIM = {embedding}, {embed_dim}
DROPOUT = {dropout}
FORGET_BIAS = {forget_bias}
OPTIMIZER, LR, LR_DECAY_STEPS, LR_FLOOR = {optimizer}, {lr!r}, {lr_decay_steps}, {lr_floor!r}
WARMUP_STEPS, WEIGHT_DECAY = {warmup_steps}, {weight_decay!r}
COOL_SHARE = {cool_share!r}  # > 0: the lr falls linearly to 0 over this share of the last --steps
BATCH, SEQ_LEN, CLIP, SEED = {batch}, {seq_len}, {clip}, {seed}


class CharModel(nn.Module):
    """Embedding (or one-hot) -> stacked nn.{torch_class} -> linear readout."""

    def __init__(self):
        super().__init__()
        V = len(VOCAB)
        self.embed = nn.Embedding(V, EMBED_DIM) if EMBEDDING else None
        self.rnn = nn.{torch_class}(EMBED_DIM if EMBEDDING else V, HIDDEN, LAYERS, batch_first=True, dropout=DROPOUT)
        self.head = nn.Linear(HIDDEN, V)
        if FORGET_BIAS is not None:
            with torch.no_grad():  # gates are stacked (i, f, g, o): b_ih,f + b_hh,f = FORGET_BIAS
                for k in range(LAYERS):
                    getattr(self.rnn, f"bias_ih_l{{k}}")[HIDDEN : 2 * HIDDEN] = FORGET_BIAS
                    getattr(self.rnn, f"bias_hh_l{{k}}")[HIDDEN : 2 * HIDDEN] = 0.0

    def forward(self, idx, targets, state=None):
        x = self.embed(idx) if self.embed is not None else F.one_hot(idx, len(VOCAB)).float()
        out, state = self.rnn(x, state)
        logits = self.head(out)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1)), state


def make_optimizer(params):
    params = list(params)
    if OPTIMIZER == "adamw":  # decoupled weight decay on matrices and embeddings, none on biases
        groups = [{{"params": [p for p in params if p.dim() >= 2], "weight_decay": WEIGHT_DECAY}},
                  {{"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}}]
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=LR, betas=(0.9, 0.99))
    if OPTIMIZER == "adam":
        return torch.optim.Adam(params, lr=LR)
    if OPTIMIZER == "rmsprop":
        return torch.optim.RMSprop(params, lr=LR)
    if OPTIMIZER == "sgd":
        return torch.optim.SGD(params, lr=LR, momentum=0.9)
    if OPTIMIZER == "adagrad":
        return torch.optim.Adagrad(params, lr=LR)
    raise ValueError(f"unknown optimizer {{OPTIMIZER!r}}")


def lr_at(step, steps):
    """The learning rate of step ``step`` (0-based) of ``steps``: a linear warm-up, then a cosine to LR * LR_FLOOR
    at LR_DECAY_STEPS, or, with COOL_SHARE, a steady LR that falls linearly to 0 over the last steps."""
    if step < WARMUP_STEPS:
        return LR * (step + 1) / (WARMUP_STEPS + 1)
    if COOL_SHARE > 0:
        cool_steps = max(1, round(COOL_SHARE * steps))
        return LR * min(1.0, (steps - step) / cool_steps)
    if LR_DECAY_STEPS <= 0:
        return LR
    progress = min(step - WARMUP_STEPS, LR_DECAY_STEPS - WARMUP_STEPS) / (LR_DECAY_STEPS - WARMUP_STEPS)
    return LR * (LR_FLOOR + (1 - LR_FLOOR) * 0.5 * (1 + math.cos(math.pi * progress)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("text", help="a UTF-8 text file to train on")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--init", help="start from the weights of an rnnviz checkpoint")
    parser.add_argument("--out", default="weights.pt", help="where to save the trained state_dict")
    args = parser.parse_args()

    torch.manual_seed(SEED)
    stoi = {{ch: i for i, ch in enumerate(VOCAB)}}
    text = open(args.text, encoding="utf-8").read()
    data = torch.tensor([stoi[ch] for ch in text if ch in stoi], dtype=torch.long)
    split = int(len(data) * 0.9)
    train = data[:split] if len(data) >= 100 else data
    batch = max(1, min(BATCH, (len(train) - 1) // SEQ_LEN))
    stream = (len(train) - 1) // batch
    seq_len = min(SEQ_LEN, stream)
    chunks = stream // seq_len
    inputs = train[: batch * stream].view(batch, stream)
    targets = train[1 : batch * stream + 1].view(batch, stream)

    model = CharModel()
    if args.init:
        checkpoint = torch.load(args.init, weights_only=True, map_location="cpu")
        model.load_state_dict(checkpoint["model"], strict=True)
    optimizer = make_optimizer(model.parameters())
    state = None
    for step in range(args.steps):
        k = step % chunks
        if k == 0:
            state = None  # the streams start over: the carried state no longer matches the text
        x = inputs[:, k * seq_len : (k + 1) * seq_len]
        y = targets[:, k * seq_len : (k + 1) * seq_len]
        loss, state = model(x, y, state)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, args.steps)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if CLIP is not None:
            nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
        state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {{step + 1}}: loss {{loss.item():.4f}}")
    torch.save(model.state_dict(), args.out)
    print(f"saved {{args.out}}")


if __name__ == "__main__":
    main()
'''
