"""Train a character model in chunks with truncated BPTT; the trainer reports through ``on_step`` only.

One optimizer step reads a (B, T) chunk from B parallel streams of the train split, runs the fused
recurrent layers from the state carried over from the previous chunk (detached: the gradient stops at the
chunk boundary), and minimises the mean cross-entropy −(1/BT) Σ log p(x_{t+1} | x_{≤t}) in nats/char.

A Transformer (``kind="transformer"``) reads the same (B, T) chunks as windows with no carried state: every
window starts from nothing, and position t attends to the positions before it in its window (T ≤ its
context). ``TrainConfig.describe()`` says which of the two a run does, in words.

``Trainer`` is built to be driven a few steps at a time (from a Streamlit fragment or a CLI loop):
``run(steps)``, ``evaluate()``, and ``state_dict()`` / ``load_state_dict()`` for an exact resume. A
non-finite loss or gradient, or a loss above 3× the first one, halts the run and puts back the last
weights known to be good, with the reason in ``trainer.halt``.

The CLI lives in ``rnnviz.cli``: ``rnnviz train --help``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace

import torch

from rnnviz.charlm.corpus import Corpus, TBPTTBatcher, Vocab
from rnnviz.core.charmodel import CharModel, build_model
from rnnviz.core.config import MODEL_KINDS, ModelConfig, check_heads, check_transformer_shape, kind_label
from rnnviz.core.layer_kit import flat_tensors, map_tensors
from rnnviz.core.recurrent import KINDS, State, detach_state
from rnnviz.core.runtime import has_native_bf16, pick_device
from rnnviz.core.state_stack import CARRIED_WORDS
from rnnviz.core.transformer import CharTransformer

OPTIMIZERS = ("adam", "rmsprop", "sgd", "adagrad", "adamw")
ADAMW_BETAS = (0.9, 0.99)  # nanoGPT's for characters: β₂ 0.99, since each step sees few tokens
EXPLODE_FACTOR = 3.0  # a loss above this multiple of the first step's loss counts as exploding
# Warmup–stable–decay's cool-down: the share of a run's steps over which the learning rate falls linearly to 0
# (Hägele et al. 2024's 20%, which matches a cosine tuned for the same time): a live run cools a copy of itself
# down when it stops, an exported script at the end of its --steps.
COOL_SHARE = 0.2
SNAPSHOT_EVERY = 25  # steps between copies of the last good weights (and optimizer state)
EVAL_STREAMS, EVAL_T = 16, 256  # evaluation reads the val split as 16 streams, 256 characters at a time
LN2 = math.log(2.0)
RETUNABLE = ("lr", "lr_decay_steps", "lr_floor", "clip", "reset_state", "warmup_steps")  # a run may change these
# Fields added after checkpoint format 1 was fixed: a saved config without them takes these defaults.
LATER_FIELDS = ("n_head", "block_size", "warmup_steps", "weight_decay", "precision", "grow_from", "grow_at",
                "grow_lr")
GATE_BLOCKS = {"rnn": 1, "gru": 3, "lstm": 4}  # row blocks of H in torch's W_ih, W_hh and biases: i f g o, r z n
PRECISIONS = ("fp32", "bf16", "auto")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run; frozen and hashable, so it can key caches and travel."""

    kind: str = "lstm"  # one of MODEL_KINDS: "rnn", "lstm", "gru", "mingru", "slstm", "mlstm", "selective", …
    layers: int = 1  # L, stacked recurrent layers (Transformer: blocks)
    hidden: int = 256  # H, units per layer (Transformer: C, the residual stream's width, also its embedding's)
    embedding: bool = True  # False feeds one-hot x_t: an embedding is a column lookup of W_xh (recurrent only)
    embed_dim: int = 64  # E, embedding width when ``embedding`` is on (Transformer: unused, E = C = hidden)
    dropout: float = 0.0  # between stacked layers, training only (Transformer: attention, residuals, embeddings)
    optimizer: str = "adam"  # "adam", "rmsprop", "sgd", "adagrad" or "adamw"
    lr: float = 2e-3  # peak learning rate
    lr_decay_steps: int = 0  # cosine decay to lr × lr_floor, ending at this step (from step 0); 0 keeps lr constant
    lr_floor: float = 0.1  # final learning rate as a fraction of lr
    batch: int = 32  # B, parallel streams per step
    seq_len: int = 64  # T, characters per chunk: the gradient flows back at most T steps (Transformer: ≤ block_size)
    clip: float | None = 1.0  # θ: rescale the gradient when ‖∇‖₂ > θ; None for off
    forget_bias: float | None = 1.0  # LSTM: initial b_f; None keeps torch's init
    reset_state: bool = False  # start every chunk from h_0 = 0 instead of carrying the state (Transformer: always)
    seed: int = 0  # weights and dropout
    device: str = "auto"  # "auto" (CUDA when available), "cpu" or "cuda"
    n_head: int = 4  # Transformer, sLSTM, mLSTM, linear attention: h heads (per block); hidden must divide by it
    block_size: int = 64  # Transformer only: the context, the most characters one position can see
    warmup_steps: int = 0  # linear warm-up: lr × (step + 1)/(warmup_steps + 1) for the first steps; 0 for none
    weight_decay: float = 0.1  # "adamw" only: decoupled decay λ on matrices and embeddings (not biases, LayerNorm)
    # "bf16": the training forward runs under torch.autocast(bfloat16) (matmuls and torch's fused LSTM in
    # bfloat16, the loss in float32); the weights, Adam's moments, evaluation and sampling stay float32.
    # "auto": bf16 where the hardware has bfloat16 arithmetic (runtime.has_native_bf16), else fp32.
    # RNN, LSTM and GRU only (a minGRU's log-space scan and a Transformer train in fp32; "auto" keeps them there).
    precision: str = "fp32"
    # Width that grows during the run (Net2Net, Chen et al. 2016; RNN, LSTM and GRU): the first ``grow_at`` steps
    # train ``grow_from`` units per layer (fast steps while the first words form), at ``grow_lr`` when it is set;
    # then every layer widens to ``hidden`` without changing what the model computes (Trainer.widen). 0: ``hidden``
    # from the first step.
    grow_from: int = 0
    grow_at: int = 0
    grow_lr: float | None = None

    def __post_init__(self):
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MODEL_KINDS)}, not {self.kind!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        if self.layers < 1 or self.hidden < 1 or self.embed_dim < 1 or self.batch < 1 or self.seq_len < 1:
            raise ValueError("layers, hidden, embed_dim, batch and seq_len must all be at least 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"the learning rate must be a positive number, not {self.lr}")
        if not 0 < self.lr_floor <= 1 or self.lr_decay_steps < 0:
            raise ValueError("lr_floor must be in (0, 1] and lr_decay_steps at least 0")
        if self.clip is not None and not self.clip > 0:
            raise ValueError(f"clip θ must be positive, or None for off (got {self.clip})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {self.dropout}")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', not {self.device!r}")
        if self.warmup_steps < 0 or (0 < self.lr_decay_steps <= self.warmup_steps):
            raise ValueError("warmup_steps must be at least 0, and shorter than lr_decay_steps when that is set")
        if not 0.0 <= self.weight_decay < 1.0:
            raise ValueError(f"weight_decay must be in [0, 1), not {self.weight_decay}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.precision == "bf16" and self.kind not in KINDS:
            raise ValueError(f"bfloat16 training is for RNN, LSTM and GRU; a {kind_label(self.kind)} trains in fp32")
        if self.grow_from:
            if self.kind not in GATE_BLOCKS:
                raise ValueError(f"a width that grows is for RNN, LSTM and GRU layers, not a {kind_label(self.kind)}")
            if not 1 <= self.grow_from < self.hidden or self.grow_at < 1:
                raise ValueError(f"a run that grows starts with 1 to {self.hidden - 1} units (fewer than H = "
                                 f"{self.hidden}) and widens after 1 or more steps, not {self.grow_from} units at "
                                 f"step {self.grow_at}")
            if self.grow_lr is not None and not (self.grow_lr > 0 and math.isfinite(self.grow_lr)):
                raise ValueError(f"the learning rate before widening must be a positive number, not {self.grow_lr}")
        elif self.grow_at or self.grow_lr is not None:
            raise ValueError("grow_at and grow_lr belong to a run that grows: set grow_from, the width it starts at")
        check_heads(self.kind, self.hidden, self.n_head)
        if self.kind == "transformer":
            check_transformer_shape(self.hidden, self.n_head, self.block_size, self.embedding)
            if self.seq_len > self.block_size:
                raise ValueError(f"a Transformer with a context of {self.block_size} reads windows of at most "
                                 f"{self.block_size} characters, not T = {self.seq_len}")

    @property
    def carries_state(self) -> bool:
        """Whether each chunk starts from the state the previous one ended with (recurrent, not reset)."""
        return self.kind != "transformer" and not self.reset_state

    @property
    def grows(self) -> bool:
        """Whether the run starts narrower than ``hidden`` and widens during the run."""
        return self.grow_from > 0

    def hidden_at(self, step: int) -> int:
        """H, units per layer, of the model after ``step`` optimizer steps: ``grow_from`` before ``grow_at``."""
        return self.grow_from if self.grows and step < self.grow_at else self.hidden

    def without_growth(self) -> TrainConfig:
        """The same run with ``hidden`` units from the first step."""
        return replace(self, grow_from=0, grow_at=0, grow_lr=None)

    def changed(self, **changes) -> TrainConfig:
        """``replace(self, **changes)``, where a width that grows and no longer can (another kind than RNN, LSTM
        or GRU, or a width at or under the one it starts with) is dropped: the run has its width from the start."""
        fits = self.growth_fits(changes.get("kind", self.kind), changes.get("hidden", self.hidden))
        return replace(self if fits or "grow_from" in changes else self.without_growth(), **changes)

    def growth_fits(self, kind: str, hidden: int) -> bool:
        """Whether this run's growth still can with another kind or width: RNN, LSTM or GRU, wider than grow_from."""
        return kind in GATE_BLOCKS and hidden > self.grow_from

    def describe_growth(self) -> str:
        """The widening in words ("" for a run that does not grow), for a page."""
        if not self.grows:
            return ""
        lr = f" at lr {self.grow_lr:g}" if self.grow_lr is not None else ""
        return (f"It starts with {self.grow_from} units per layer{lr} and widens to {self.hidden} at step "
                f"{self.grow_at:,} without changing what it computes: the new units start with their own input "
                "weights and nothing to send, and learn from there.")

    def describe(self) -> str:
        """One or two sentences on what the model is and what crosses a chunk boundary, for a page."""
        if self.kind == "transformer":
            return (
                f"{self.layers} × {self.hidden} Transformer ({self.n_head} heads, context {self.block_size}). "
                f"Each step reads {self.batch} windows of T = {self.seq_len} characters with no carried state: a "
                "Transformer has no hidden state to pass on, so every window starts from nothing and each "
                f"character attends to at most the {self.seq_len - 1} before it in its window."
            )
        name = kind_label(self.kind)
        what = f"{self.layers} × {self.hidden} {name}. Each step reads {self.batch} chunks of " \
               f"T = {self.seq_len} characters (truncated BPTT): "
        state = "h_t and c_t" if self.kind == "lstm" else CARRIED_WORDS.get(self.kind, "h_t")
        if self.reset_state:
            zero = "h_0 = c_0 = 0" if self.kind == "lstm" else "h_0 = 0" if self.kind not in CARRIED_WORDS \
                else "zeros"
            return what + f"every chunk starts from {zero}, so nothing is carried from one chunk to the next."
        verb = "carry" if " and " in state else "carries"
        growth = f" {self.describe_growth()}" if self.grows else ""
        return what + (f"the final {state} {verb} into the next chunk as its starting state, detached, so the "
                       f"state remembers across chunks while the gradient flows back at most {self.seq_len} steps."
                       + growth)

    def model_config(self, vocab_size: int, step: int | None = None) -> ModelConfig:
        """The CharModel shape this run trains (after ``step`` optimizer steps, for a run that grows; its final
        shape when ``step`` is None)."""
        return ModelConfig(
            vocab_size=vocab_size,
            kind=self.kind,
            layers=self.layers,
            hidden=self.hidden if step is None else self.hidden_at(step),
            embedding=self.embedding,
            embed_dim=self.embed_dim,
            dropout=self.dropout,
            forget_bias=self.forget_bias if self.kind == "lstm" else None,
            n_head=self.n_head,
            block_size=self.block_size,
        )

    def lr_at(self, step: int) -> float:
        """Learning rate for optimizer step ``step`` (0-based), as nanoGPT's ``get_lr``.

        With W = warmup_steps and D = lr_decay_steps: lr · (step + 1)/(W + 1) while step < W, then a cosine
        from lr down to lr · lr_floor at step D, constant after it (D = 0: lr stays after the warm-up). A run that
        grows with a ``grow_lr`` takes that constant rate before it widens, and the schedule's from there.
        """
        if self.grow_lr is not None and step < self.grow_at:
            return self.grow_lr
        warmup = self.warmup_steps
        if step < warmup:
            return self.lr * (step + 1) / (warmup + 1)
        if self.lr_decay_steps <= 0:
            return self.lr
        progress = min(step - warmup, self.lr_decay_steps - warmup) / (self.lr_decay_steps - warmup)
        return self.lr * (self.lr_floor + (1 - self.lr_floor) * 0.5 * (1 + math.cos(math.pi * progress)))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> TrainConfig:
        """Inverse of ``to_dict``; unknown or missing keys are a clear ValueError, except that the fields added
        later (LATER_FIELDS) take their defaults, so that older checkpoints still load."""
        names = {f.name for f in fields(cls)}
        extra, missing = sorted(set(values) - names), sorted(names - set(values) - set(LATER_FIELDS))
        if extra or missing:
            raise ValueError(f"training config keys do not match: unknown {extra}, missing {missing}")
        return cls(**values)


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step as the trainer saw it."""

    step: int  # optimizer steps taken so far, this one included (1-based)
    loss: float  # train loss of the chunk, nats/char
    grad_norm: float  # ‖∇‖₂ over all parameters, before clipping
    lr: float  # learning rate used for this step
    chars_per_s: float  # B·T characters over this step's wall time
    seconds: float  # training wall time so far, this step included

    @property
    def bits_per_char(self) -> float:
        return self.loss / LN2


@dataclass(frozen=True)
class EvalRecord:
    """A validation pass."""

    step: int  # optimizer steps taken when it ran
    val_loss: float  # mean cross-entropy over the val split, nats/char
    seconds: float  # training wall time at that point (evaluation time not counted)
    chars: int  # characters scored

    @property
    def bits_per_char(self) -> float:
        return self.val_loss / LN2


@dataclass(frozen=True)
class Halt:
    """Why a run stopped by itself, and which weights were put back."""

    step: int  # the step at which the problem showed
    reason: str  # a sentence for the page
    restored_step: int  # the weights now loaded are those after this many steps


def make_optimizer(name: str, params, lr: float, weight_decay: float = 0.1) -> torch.optim.Optimizer:
    """The named optimizer with its usual defaults (SGD with momentum 0.9).

    "adamw" is nanoGPT's: AdamW with β = (0.9, 0.99), decoupled weight decay λ = ``weight_decay`` on
    parameters with 2 or more dimensions (matrices, embeddings) and none on biases and LayerNorm gains.
    """
    params = list(params)
    if name == "adamw":
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=ADAMW_BETAS)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr)
    raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {name!r}")


@torch.no_grad()
def sequence_loss(
    model: CharModel | CharTransformer, ids: torch.Tensor, streams: int = EVAL_STREAMS, seq_len: int = EVAL_T
) -> tuple[float, int]:
    """(mean nats/char, characters scored) of predicting every ids[t+1] from ids[≤t], in eval mode.

    The text is read as ``streams`` contiguous streams with the state carried through each, plus one
    short stream for the remainder, so every one of the n − 1 next characters is scored exactly once.
    A Transformer carries no state: it reads each stream in consecutive windows of min(seq_len, its
    context), each from nothing, so position t of a window sees t earlier characters (nanoGPT's estimate).
    """
    pairs = len(ids) - 1
    if pairs < 1:
        raise ValueError("need at least 2 characters to score a prediction")
    if not getattr(model, "carries_state", True):  # any model with CharModel's forward may be scored
        seq_len = min(seq_len, model.config.block_size)
    device = model.head.weight.device
    ids = ids.to(device)
    streams = max(1, min(streams, pairs // seq_len))  # every stream at least T long, so context builds up
    width = pairs // streams
    rows = [(ids[: streams * width].view(streams, width), ids[1 : streams * width + 1].view(streams, width))]
    if pairs > streams * width:
        start = streams * width
        rows.append((ids[start:pairs].view(1, -1), ids[start + 1 :].view(1, -1)))
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    try:
        for inputs, targets in rows:
            state = None
            for start in range(0, inputs.size(1), seq_len):
                x, y = inputs[:, start : start + seq_len], targets[:, start : start + seq_len]
                logits, _, state = model(x, state=state)
                total += torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum"
                ).double()
    finally:
        model.train(was_training)
    return total.item() / pairs, pairs


class Trainer:
    """Trains a CharModel on a corpus, a few steps per call; reports through ``on_step`` and records.

    Pages read ``model``, ``vocab``, ``step``, ``history`` (StepRecords), ``evals`` (EvalRecords),
    ``halt``, ``num_parameters`` and ``chars_per_second``. The trainer never touches torch's global
    random state or thread settings: the host (CLI, app) calls ``rnnviz.core.runtime.configure_cpu``.
    """

    def __init__(self, config: TrainConfig, corpus: Corpus, vocab: Vocab | None = None):
        """``vocab`` defaults to the corpus's own; pass a checkpoint's vocab to continue training it."""
        self.config = config
        self.corpus = corpus
        self.vocab = vocab or corpus.vocab
        self.device = pick_device() if config.device == "auto" else torch.device(config.device)
        ids = corpus.ids if vocab is None else self.vocab.encode(corpus.text)
        self.train_ids, self.val_ids = _split(corpus, ids)
        self.batcher = TBPTTBatcher(self.train_ids, config.batch, config.seq_len).to(self.device)
        with self._own_rng(seed=config.seed):
            self.model = build_model(config.model_config(self.vocab.size, step=0)).to(self.device)
            self._rng_state = self._get_rng()
        self.optimizer = make_optimizer(config.optimizer, self.model.parameters(), config.lr_at(0),
                                        config.weight_decay)
        self.step = 0
        self.seconds = 0.0
        self.history: list[StepRecord] = []
        self.evals: list[EvalRecord] = []
        self.halt: Halt | None = None
        self.initial_loss: float | None = None
        self.state = None  # hidden state carried into the next chunk (detached); always None for a Transformer
        self._snapshot = None  # (step, model state, optimizer state) last known good

    # -- what pages show --------------------------------------------------------------------------------

    @property
    def num_parameters(self) -> int:
        return self.model.num_parameters()

    @property
    def carries_state(self) -> bool:
        """Whether a chunk starts from the previous chunk's final state (see TrainConfig.describe)."""
        return self.config.carries_state

    @property
    def bf16(self) -> bool:
        """Whether the training forward runs in bfloat16 mixed precision (the config's precision, resolved)."""
        return uses_bf16(self.config, self.device)

    def describe(self) -> str:
        """The run in words: the model, its parameter count, and what crosses a chunk boundary."""
        precision = " The forward pass runs in bfloat16 (weights kept in float32)." if self.bf16 else ""
        return f"{self.config.describe()} {self.num_parameters:,} parameters.{precision}"

    @property
    def chars_per_step(self) -> int:
        """B·T actually used (a short text shrinks them; see TBPTTBatcher)."""
        return self.batcher.chars_per_batch

    @property
    def chars_seen(self) -> int:
        return self.step * self.chars_per_step

    @property
    def chars_per_second(self) -> float:
        """Median throughput over the last 20 steps; 0 before the first."""
        recent = sorted(r.chars_per_s for r in self.history[-20:])
        return recent[len(recent) // 2] if recent else 0.0

    @property
    def epoch(self) -> float:
        """Passes over the train split so far."""
        return self.step / self.batcher.chunks_per_epoch

    # -- training --------------------------------------------------------------------------------------------

    def run(
        self, steps: int, on_step: Callable[[StepRecord], None] | None = None, max_seconds: float | None = None
    ) -> list[StepRecord]:
        """Take up to ``steps`` optimizer steps, or fewer once ``max_seconds`` of wall time have passed;
        returns their records. Stops early, with ``halt`` set, when the loss or gradient is not finite or
        the loss exceeds 3× the first step's loss."""
        self.halt = None
        records = []
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        model, optimizer, batcher, config = self.model, self.optimizer, self.batcher, self.config
        params = [p for p in model.parameters()]
        bf16 = self.bf16
        model.train()
        with self._own_rng():
            for _ in range(steps):
                start = time.perf_counter()
                x, y, starts_epoch = batcher.next_batch()  # (B, T), (B, T)
                if starts_epoch or not config.carries_state:
                    self.state = None  # a Transformer, or reset_state: every chunk starts from nothing
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16):
                    _, loss, state = model(x, y, self.state)
                loss_value = loss.item()
                if self.initial_loss is None and math.isfinite(loss_value):
                    self.initial_loss = loss_value
                problem = self._loss_problem(loss_value)
                if problem:
                    self._halt(problem, restore=True)
                    break
                if self.step % SNAPSHOT_EVERY == 0:
                    self._take_snapshot()
                lr = self.lr_at(self.step)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grads = [p.grad for p in params if p.grad is not None]
                total_norm = torch.nn.utils.get_total_norm(grads)
                grad_norm = total_norm.item()
                if not math.isfinite(grad_norm):
                    optimizer.zero_grad(set_to_none=True)
                    self._halt(
                        f"the gradient is not finite (‖∇‖ = {grad_norm}); the step was skipped. "
                        "Try clipping or a lower learning rate.",
                        restore=False,
                    )
                    break
                if config.clip is not None and grad_norm > config.clip:
                    # g ← g · θ / ‖g‖, as clip_grad_norm_ does; skipped when it would multiply by 1.
                    torch.nn.utils.clip_grads_with_norm_(params, config.clip, total_norm)
                optimizer.step()
                self.state = float32_state(detach_state(state))
                self.step += 1
                elapsed = time.perf_counter() - start
                self.seconds += elapsed
                record = StepRecord(self.step, loss_value, grad_norm, lr, self.chars_per_step / elapsed, self.seconds)
                self.history.append(record)
                records.append(record)
                if on_step is not None:
                    on_step(record)
                if self.widens_now():  # a run that grows, at its grow_at-th step
                    self.widen()
                    model, optimizer = self.model, self.optimizer
                    params = [p for p in model.parameters()]
                if deadline is not None and time.perf_counter() >= deadline:
                    break
        return records

    def lr_at(self, step: int) -> float:
        """The learning rate of optimizer step ``step``: the config's schedule (a cool-down branch has its own)."""
        return self.config.lr_at(step)

    def widens_now(self) -> bool:
        """Whether the model must widen after the step just taken: a run that grows, at its grow_at-th step."""
        return self.width != self.config.hidden_at(self.step)

    @property
    def width(self) -> int:
        """H of the model as it is now (fewer units than ``config.hidden`` before a growing run widens)."""
        return self.model.config.hidden

    @torch.no_grad()
    def widen(self) -> None:
        """Widen every layer to ``config.hidden`` units without changing what the model computes (Net2Net's
        function-preserving widening, Chen et al. 2016).

        Every old weight keeps its place (in each gate block of W_ih, W_hh and the biases: rows; in W_hh, the next
        layer's W_ih and the readout: columns). The new units get fresh input weights and biases (torch's init,
        b_f as configured) and send nothing yet: their columns of W_hh, of the next layer's W_ih and of the readout
        are 0. So h_t and c_t of the old units and the logits are those of the narrow model, and the new units
        learn from the next step. The optimizer's state grows with the weights: 0 for a new entry's momentum, the
        tensor's mean for its second moment (so its first steps are of the usual size). The carried state gains
        zeros for the new units. The new weights are drawn from the run's own random state (an exact resume
        widens to the same model)."""
        narrow, wide = self.width, self.config.hidden
        old_model, old_optimizer = self.model, self.optimizer
        self.model = build_model(self.config.model_config(self.vocab.size, step=None)).to(self.device)
        blocks = GATE_BLOCKS[self.config.kind]
        grown_state = {}
        new_params = dict(self.model.named_parameters())
        for name, old in old_model.named_parameters():
            new = new_params[name]
            if _sends_from_units(name):
                new[:, narrow:] = 0.0
            index = widened_index(name, old.shape, narrow, wide, blocks)
            new[index] = old
            grown_state[name] = {key: _grown_moment(key, value, old.shape, new, index)
                                 for key, value in old_optimizer.state.get(old, {}).items()}
        self.optimizer = make_optimizer(self.config.optimizer, self.model.parameters(), self.config.lr_at(self.step),
                                        self.config.weight_decay)
        for name, p in self.model.named_parameters():
            if grown_state.get(name):
                self.optimizer.state[p] = grown_state[name]
        if self.state is not None:
            self.state = _pad_units(self.state, wide)
        self._take_snapshot()  # a halt after this point rolls back to wide weights

    def _rebuild_at(self, step: int) -> None:
        """A fresh model and optimizer of the width the run has after ``step`` steps, to load a saved state into."""
        with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            self.model = build_model(self.config.model_config(self.vocab.size, step=step)).to(self.device)
        self.optimizer = make_optimizer(self.config.optimizer, self.model.parameters(), self.config.lr_at(step),
                                        self.config.weight_decay)

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Put ``weights`` (a state_dict of this run's model, at any width it has had) into the model, rebuilding
        it at their width first when the run has widened since (a mirror of a run trained elsewhere)."""
        width = width_of(weights)
        if width != self.width:
            self._rebuild_at(0 if width == self.config.hidden_at(0) else self.config.grow_at)
        self.model.load_state_dict(weights)

    def evaluate(self, max_chars: int | None = None) -> EvalRecord:
        """Validation loss over the whole val split (or its first ``max_chars``), recorded in ``evals``."""
        ids = self.val_ids if max_chars is None else self.val_ids[: max_chars + 1]
        with self._own_rng():
            loss, chars = sequence_loss(self.model, ids)
        record = EvalRecord(self.step, loss, self.seconds, chars)
        self.evals.append(record)
        return record

    def retune(self, **changes) -> None:
        """Change lr, lr_decay_steps, lr_floor, clip or reset_state mid-run (e.g. after a halt)."""
        unknown = sorted(set(changes) - set(RETUNABLE))
        if unknown:
            raise ValueError(f"only {', '.join(RETUNABLE)} can change during a run, not {unknown}")
        self.config = replace(self.config, **changes)

    def _loss_problem(self, loss_value: float) -> str | None:
        if not math.isfinite(loss_value):
            return f"the loss is not a finite number ({loss_value}): try clipping or a lower learning rate"
        if self.initial_loss is not None and loss_value > EXPLODE_FACTOR * self.initial_loss:
            return (
                f"loss exploded ({loss_value:.3g} > {EXPLODE_FACTOR:g} × the first loss {self.initial_loss:.3g}): "
                "try clipping or a lower learning rate"
            )
        return None

    def _halt(self, reason: str, restore: bool) -> None:
        restored = self.step
        if restore and self._snapshot is not None:
            restored, model_state, optimizer_state = self._snapshot
            self.model.load_state_dict(model_state)
            self.optimizer.load_state_dict(copy.deepcopy(optimizer_state))
        self.state = None
        self.halt = Halt(step=self.step + 1, reason=reason, restored_step=restored)

    def _take_snapshot(self) -> None:
        model_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self._snapshot = (self.step, model_state, copy.deepcopy(self.optimizer.state_dict()))

    # -- random state: the trainer's own, so that other sessions in the process are not disturbed ------------

    def _get_rng(self):
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return torch.get_rng_state(), cuda

    @contextlib.contextmanager
    def _own_rng(self, seed: int | None = None):
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, device_type="cuda" if devices else "cpu"):
            if seed is not None:
                torch.manual_seed(seed)
            else:
                cpu, cuda = self._rng_state
                torch.set_rng_state(cpu)
                if cuda is not None:
                    torch.cuda.set_rng_state(cuda, self.device)
            yield
            if seed is None:
                self._rng_state = self._get_rng()

    # -- exact resume ----------------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue bit for bit: weights, optimizer, data position, carried state,
        random state and history. Plain tensors and Python values only (loads with weights_only=True)."""
        state = None if self.state is None else flat_tensors(self.state)  # plain tensors: no NamedTuple in a file
        cpu_rng, cuda_rng = self._rng_state
        return copy.deepcopy(
            {
                "config": self.config.to_dict(),
                "vocab": self.vocab.chars,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "step": self.step,
                "seconds": self.seconds,
                "initial_loss": self.initial_loss,
                "position": self.batcher.position,
                "carried_state": state,
                "rng": {"cpu": cpu_rng, "cuda": cuda_rng},
                "history": [asdict(r) for r in self.history],
                "evals": [asdict(r) for r in self.evals],
            }
        )

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` captured; the config's model shape and the vocab must match."""
        saved = TrainConfig.from_dict(state["config"])
        fixed = [f.name for f in fields(TrainConfig) if f.name not in RETUNABLE]
        differing = [name for name in fixed if getattr(saved, name) != getattr(self.config, name)]
        if differing or state["vocab"] != self.vocab.chars:
            what = f"settings {differing}" if differing else "vocabulary"
            raise ValueError(f"this training state belongs to a run with other {what}")
        if self.width != saved.hidden_at(int(state["step"])):  # a run that grows, saved on the other side of it
            self._rebuild_at(int(state["step"]))
        self.model.load_state_dict(state["model"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        self.config = saved
        self.step = int(state["step"])
        self.seconds = float(state["seconds"])
        self.initial_loss = state["initial_loss"]
        self.batcher.position = int(state["position"]) % self.batcher.chunks_per_epoch
        carried = state["carried_state"]
        if carried is not None:
            carried = self.model.state_from_tensors([t.to(self.device) for t in carried])
        self.state = carried
        cuda_rng = state["rng"]["cuda"] if self.device.type == "cuda" else None
        self._rng_state = (state["rng"]["cpu"], cuda_rng if cuda_rng is not None else self._rng_state[1])
        self.history = [StepRecord(**r) for r in state["history"]]
        self.evals = [EvalRecord(**r) for r in state["evals"]]
        self.halt = None
        self._snapshot = None


def width_of(weights: dict[str, torch.Tensor]) -> int:
    """H of a character model's state_dict: the readout's input width."""
    return weights["head.weight"].shape[1]


def _sends_from_units(name: str) -> bool:
    """Whether a parameter's columns are what the units send: W_hh, the layers' W_ih after the first, the readout."""
    return name.startswith("rnn.weight_hh") or (name.startswith("rnn.weight_ih") and not name.endswith("_l0")) \
        or name == "head.weight"


def widened_index(name: str, shape, narrow: int, wide: int, blocks: int):
    """Where a narrow model's tensor ``name`` sits in the wide one: in each of the ``blocks`` gate blocks of H rows
    (LSTM i f g o, GRU r z n, RNN one) its first ``narrow`` rows; in what the units send (W_hh, a later layer's
    W_ih, the readout) its first ``narrow`` columns. The embedding and the readout's bias do not change."""
    if name.startswith("rnn."):
        rows = torch.cat([torch.arange(k * wide, k * wide + narrow) for k in range(blocks)])
        if len(shape) == 1:
            return (rows,)
        columns = torch.arange(narrow) if _sends_from_units(name) else torch.arange(shape[1])
        return rows[:, None], columns[None, :]
    if name == "head.weight":
        return slice(None), slice(0, narrow)
    return tuple(slice(None) for _ in shape)


SECOND_MOMENTS = ("exp_avg_sq", "max_exp_avg_sq", "square_avg", "sum")  # Adam(W), RMSprop, Adagrad


def _grown_moment(key: str, value, narrow_shape, new: torch.Tensor, index):
    """One optimizer state entry of a widened parameter: the old values in place, the new entries 0 (momentum)
    or the old tensor's mean (second moments); anything not of the parameter's shape (Adam's step) as it was."""
    if not isinstance(value, torch.Tensor) or value.shape != narrow_shape:
        return value.clone() if isinstance(value, torch.Tensor) else value
    grown = torch.full_like(new, value.mean().item() if key in SECOND_MOMENTS else 0.0)
    grown[index] = value
    return grown


def _pad_units(state: State, wide: int) -> State:
    """A carried (layers, B, H) state, or an LSTM's (h, c), with zeros for the units beyond the old H."""
    def pad(s: torch.Tensor) -> torch.Tensor:
        return torch.cat([s, s.new_zeros(*s.shape[:-1], wide - s.shape[-1])], dim=-1)

    return tuple(pad(s) for s in state) if isinstance(state, tuple) else pad(state)


def uses_bf16(config: TrainConfig, device: torch.device) -> bool:
    """Whether ``config`` trains under bfloat16 autocast on ``device``: "bf16", or "auto" on hardware with
    bfloat16 arithmetic, for the kinds torch's fused cells cover (RNN, LSTM, GRU)."""
    if config.kind not in KINDS or config.precision == "fp32":
        return False
    return config.precision == "bf16" or has_native_bf16(device)


def float32_state(state: State | tuple | None) -> State | tuple | None:
    """The carried state in float32: under bf16 autocast torch's LSTM returns h and c in bfloat16."""
    return map_tensors(torch.Tensor.float, state)


def _split(corpus: Corpus, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The corpus's train/val rule applied to ``ids`` (which may be encoded with another vocab)."""
    if ids is corpus.ids:
        return corpus.split()
    train, val = corpus.split()
    return ids[: len(train)], ids[len(ids) - len(val) :]
