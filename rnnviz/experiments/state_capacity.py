"""What the page "What a state can hold" reads: the shipped recall and parity sweeps with the commands that made
them, what their numbers say, one recall run trained a chunk at a time, and the memory of small trained models
stepped through one recall sequence.

- **Shipped sweeps** (rnnviz/assets/state_capacity/*.json): blocks of ``{"command", "records"}``, each block the
  records that its ``rnnviz experiments recall|parity … --json`` command wrote, as it wrote them.
- **RecallRun**: ``run_recall`` a chunk of steps at a time (a page's progress bar), with the same model, batches
  and Adam updates, so that it ends at the same accuracy.
- **Memory models**: an LSTM, an mLSTM, linear attention, a selective SSM and a Transformer trained on one small
  MQAR task (``MEMORY_TASK``), shipped in rnnviz/assets/state_capacity/memory-models.pt and made by
  ``python -m rnnviz.experiments.state_capacity models OUT``; ``memory_trace`` records what each holds after
  every token of one sequence, read from its trace path.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from rnnviz.core.layer_kit import state_nbytes, state_numel
from rnnviz.core.transformer import CharTransformer
from rnnviz.experiments.parity import ParityRecord, ParitySweepConfig
from rnnviz.experiments.recall import (
    Recall,
    RecallRecord,
    RecallSweepConfig,
    evaluation_set,
    query_accuracy,
    recall_batch,
)
from rnnviz.experiments.sequence_models import (
    ModelSpec,
    StateModel,
    build_model,
    label,
    parameter_count,
    predictions,
    state_bytes,
)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
RECALL_FILE = ASSETS / "state_capacity" / "recall.json"
PARITY_FILE = ASSETS / "state_capacity" / "parity.json"
MEMORY_FILE = ASSETS / "state_capacity" / "memory-models.pt"
MAX_SWEEP_BYTES = 2_000_000  # a shipped sweep is a few tens of kB; anything larger is not one

# -- the shipped sweeps -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShippedSweep:
    """A sweep as shipped: the commands that ran, each with the records it wrote, and where they were measured."""

    task: str  # "recall" or "parity"
    measured_on: str  # the machine and the day, in words
    commands: tuple[str, ...]  # "rnnviz experiments recall …", in the order they ran
    records: tuple[tuple[RecallRecord | ParityRecord, ...], ...]  # per command, what it wrote

    @property
    def all_records(self) -> list[RecallRecord | ParityRecord]:
        return [r for block in self.records for r in block]

    @property
    def kinds(self) -> list[str]:
        """Every kind in the sweep, in the order the commands first ran them."""
        return list(dict.fromkeys(r.kind for r in self.all_records))


def command_config(command: str) -> RecallSweepConfig | ParitySweepConfig:
    """The sweep config that an ``rnnviz experiments recall|parity …`` command line runs; ValueError in words if it
    is not one."""
    from rnnviz.experiments.__main__ import state_sweep_config

    words = shlex.split(command)
    if words[:2] != ["rnnviz", "experiments"] or len(words) < 3 or words[2] not in ("recall", "parity"):
        raise ValueError(f"not an `rnnviz experiments recall|parity` command: {command[:80]!r}")
    try:
        return state_sweep_config(words[2:])
    except SystemExit:  # argparse has printed why
        raise ValueError(f"the command does not parse: {command[:80]!r}") from None


def _record(task: str, row: dict) -> RecallRecord | ParityRecord:
    if task == "recall":
        return RecallRecord(**row)
    return ParityRecord(**{**row, "lengths": tuple(row["lengths"]), "accuracy": tuple(row["accuracy"])})


def load_sweep(path: Path) -> ShippedSweep:
    """A shipped sweep file, checked; ValueError in words when it is not one."""
    if path.stat().st_size > MAX_SWEEP_BYTES:
        raise ValueError(f"{path.name} is larger than a shipped sweep can be")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        task = data["task"]
        if task not in ("recall", "parity"):
            raise ValueError(f"unknown task {task!r}")
        blocks = [(block["command"], tuple(_record(task, row) for row in block["records"])) for block in data["runs"]]
        return ShippedSweep(task, str(data["measured_on"]), tuple(c for c, _ in blocks), tuple(r for _, r in blocks))
    except (KeyError, TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path.name} is not a shipped sweep ({err})") from None


def write_sweep(path: Path, task: str, measured_on: str, runs: Sequence[tuple[str, Path]]) -> None:
    """Write a shipped sweep from (command, the JSON file its --json wrote) pairs, in the order they ran."""
    blocks = []
    for command, written in runs:  # a record per line, as the CLI wrote it
        rows = ",\n".join(f"    {json.dumps(row)}" for row in json.loads(Path(written).read_text(encoding="utf-8")))
        blocks.append(f'  {{"command": {json.dumps(command)},\n   "records": [\n{rows}\n   ]}}')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"task": {json.dumps(task)},\n "measured_on": {json.dumps(measured_on)},\n "runs": [\n'
                    + ",\n".join(blocks) + "\n ]}\n", encoding="utf-8")


@dataclass(frozen=True)
class Spread:
    """The mean of some runs' accuracies with the lowest and the highest, and how many runs."""

    mean: float
    low: float
    high: float
    runs: int


def spread(values: Sequence[float]) -> Spread:
    return Spread(statistics.fmean(values), min(values), max(values), len(values))


def recall_summary(records: Sequence[RecallRecord]) -> dict[tuple[str, int], Spread]:
    """Accuracy over the seeds of every (kind, D)."""
    by_point: dict[tuple[str, int], list[float]] = {}
    for r in records:
        by_point.setdefault((r.kind, r.pairs), []).append(r.accuracy)
    return {point: spread(values) for point, values in by_point.items()}


def parity_summary(records: Sequence[ParityRecord]) -> dict[str, dict[int, Spread]]:
    """Per kind, the accuracy over the seeds after every test length L."""
    by_kind: dict[str, dict[int, list[float]]] = {}
    for r in records:
        for length, accuracy in zip(r.lengths, r.accuracy):
            by_kind.setdefault(r.kind, {}).setdefault(length, []).append(accuracy)
    return {kind: {length: spread(v) for length, v in sorted(lengths.items())} for kind, lengths in by_kind.items()}


LEARNED = 0.95  # accuracy at which a length counts as solved
NEAR_CHANCE = 0.6  # below this a parity answer is close to a coin's (chance ½)


def _seed_range(spread: Spread) -> str:
    """" (seeds from 0.51 to 0.93)" when the seeds disagree by a tenth or more, else ""."""
    return f" (seeds from {spread.low:.2f} to {spread.high:.2f})" if spread.high - spread.low >= 0.1 else ""


def parity_sentence(kind: str, curve: dict[int, Spread], train_length: int) -> str:
    """One sentence on what ``kind``'s parity curve shows, with its numbers: learned the rule, fitted the training
    length only, learned it partly, or never learned it."""
    name = label(kind)
    trained = curve.get(train_length) or curve[min(curve)]
    longest = max(curve)
    last = curve[longest]
    seeds = f" (mean of {last.runs} seeds)" if last.runs > 1 else ""
    if trained.mean < NEAR_CHANCE:
        return (f"The {name} did not learn parity even at its training length: {trained.mean:.2f} right after "
                f"{train_length} bits{seeds}, where a coin gets 0.5.")
    if all(s.mean >= LEARNED for s in curve.values()):
        return (f"The {name} learned the rule, not the lengths: {last.mean:.2f} right after {longest} bits, "
                f"{longest // train_length}× the {train_length} it was trained on{seeds}.")
    if last.mean < NEAR_CHANCE and trained.mean >= LEARNED:
        first_miss = next(length for length, s in curve.items() if length > train_length and s.mean < LEARNED)
        return (f"The {name} fits its training length ({trained.mean:.2f} after {train_length} bits) but not the "
                f"rule: from {first_miss} bits it falls, to {last.mean:.2f} after {longest}, near chance{seeds}.")
    if last.mean < NEAR_CHANCE:
        return (f"The {name} learned parity only partly where it was trained, {trained.mean:.2f} right after "
                f"{train_length} bits{_seed_range(trained)}, and not at all beyond: {last.mean:.2f} after {longest}, "
                f"near chance{seeds}.")
    return (f"The {name} gets {trained.mean:.2f} right after {train_length} bits and {last.mean:.2f} after "
            f"{longest}{seeds}: part of the rule, not all of it.")


def recall_sentence(summary: dict[tuple[str, int], Spread], pairs: int) -> str:
    """Which kinds answer nearly every query at D = ``pairs`` and where the others stand, from the numbers."""
    points = sorted(((kind, s) for (kind, d), s in summary.items() if d == pairs), key=lambda p: -p[1].mean)
    held = [label(kind) for kind, s in points if s.mean >= LEARNED]
    rest = ", ".join(f"the {label(kind)} {s.mean:.2f}" for kind, s in points if s.mean < LEARNED)
    if not held:
        return f"At D = {pairs} no kind answers {LEARNED:.0%} of the queries: {rest}."
    names = ", ".join(held[:-1]) + (" and " if len(held) > 1 else "") + held[-1]
    if not rest:
        return f"At D = {pairs} every kind answers at least {LEARNED:.0%} of the queries."
    return f"At D = {pairs} the {names} answer at least {LEARNED:.0%} of the queries; {rest}."


# -- one recall run, a chunk at a time ----------------------------------------------------------------------------


class RecallRun:
    """``run_recall(config, kind, pairs, seed)`` trained a few steps at a time: the same seeds, model, batches, Adam
    updates and clipping, so that ``record()`` after the last step gives the same accuracy."""

    CLIP = 1.0  # as rnnviz.experiments.sequence_models.train

    def __init__(self, config: RecallSweepConfig, kind: str, pairs: int, seed: int):
        self.config, self.kind, self.pairs, self.seed = config, kind, pairs, seed
        self.task = Recall(pairs, config.length, config.vocab)
        self.spec = config.spec(kind)
        torch.manual_seed(seed)
        self.model = build_model(self.spec)
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.losses: list[float] = []
        self.seconds = 0.0  # training time so far, summed over the chunks

    @property
    def step(self) -> int:
        return len(self.losses)

    @property
    def finished(self) -> bool:
        return self.step >= self.config.steps

    def advance(self, seconds: float) -> None:
        """Train for about ``seconds`` (at least one step, never past the last)."""
        start = time.perf_counter()
        self.model.train()
        while not self.finished:
            inputs, targets = recall_batch(self.task, self.config.batch, self.generator)
            _, loss, _ = self.model(inputs, targets)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.CLIP)
            self.optimizer.step()
            self.losses.append(loss.item())
            if time.perf_counter() - start >= seconds:
                break
        self.model.eval()
        self.seconds += time.perf_counter() - start

    def record(self) -> RecallRecord:
        """The finished run scored on the held-out set, as ``run_recall`` scores it."""
        if not self.finished:
            raise ValueError(f"the run has trained {self.step} of its {self.config.steps} steps")
        inputs, targets = evaluation_set(self.task, self.config.eval_batch, self.seed)
        accuracy = query_accuracy(predictions(self.model, inputs), targets)
        tail = self.losses[-max(1, len(self.losses) // 10):]
        return RecallRecord(kind=self.kind, pairs=self.pairs, length=self.config.length, seed=self.seed,
                            width=self.spec.width, parameters=parameter_count(self.spec),
                            state_bytes=state_bytes(self.spec, self.config.length), accuracy=accuracy,
                            chance=self.task.chance, final_loss=sum(tail) / len(tail), seconds=self.seconds)


# -- the memory models --------------------------------------------------------------------------------------------

MEMORY_TASK = Recall(pairs=4, length=16, vocab=16)  # keys 1…7, values 8…15: four pairs, then four queries
MEMORY_KINDS = ("lstm", "mlstm", "linear_attention", "selective", "transformer")
MEMORY_SEED = 0
MEMORY_EVAL = 256  # held-out sequences each model is scored on


@dataclass(frozen=True)
class MemoryRecipe:
    """How one memory model is trained; frozen so that it keys a cache."""

    spec: ModelSpec
    steps: int
    batch: int
    lr: float


def _memory_spec(kind: str, layers: int = 1) -> ModelSpec:
    return ModelSpec(kind=kind, vocab=MEMORY_TASK.vocab, width=32, layers=layers, embed_dim=16, heads=2,
                     state_size=8, context=MEMORY_TASK.length)


# One layer each, so that what is drawn is the whole memory; the Transformer needs two blocks to look a key up (one
# to bind each value to its key, one to find the key) and a smaller rate and larger batches to learn it.
MEMORY_RECIPES = {
    **{kind: MemoryRecipe(_memory_spec(kind), steps=600, batch=32, lr=1e-2)
       for kind in ("lstm", "mlstm", "linear_attention", "selective")},
    "transformer": MemoryRecipe(_memory_spec("transformer", layers=2), steps=1500, batch=128, lr=1e-3),
}


def train_memory_model(recipe: MemoryRecipe, seed: int = MEMORY_SEED) -> nn.Module:
    """A memory model trained on MEMORY_TASK by its recipe, as run_recall trains (one torch thread gives the shipped
    weights)."""
    config = RecallSweepConfig(kinds=(recipe.spec.kind,), pairs=(MEMORY_TASK.pairs,), length=MEMORY_TASK.length,
                               vocab=MEMORY_TASK.vocab, width=recipe.spec.width, layers=recipe.spec.layers,
                               embed_dim=recipe.spec.embed_dim, heads=recipe.spec.heads,
                               state_size=recipe.spec.state_size, steps=recipe.steps, batch=recipe.batch,
                               lr=recipe.lr)
    run = RecallRun(config, recipe.spec.kind, MEMORY_TASK.pairs, seed)
    while not run.finished:
        run.advance(60.0)
    return run.model


def save_memory_models(models: dict[str, nn.Module], path: Path) -> None:
    """The models' weights (float32) and their recipes' specs, in one file that loads with weights_only."""
    payload = {kind: {"spec": dataclasses.asdict(MEMORY_RECIPES[kind].spec), "state_dict": model.state_dict()}
               for kind, model in models.items()}
    torch.save(payload, path)


def load_memory_models(path: Path = MEMORY_FILE) -> dict[str, nn.Module]:
    """The shipped memory models, in eval mode; ValueError in words when the file does not hold them."""
    payload = torch.load(path, weights_only=True, map_location="cpu")
    models = {}
    for kind in MEMORY_KINDS:
        try:
            spec = ModelSpec(**payload[kind]["spec"])
            if spec != MEMORY_RECIPES[kind].spec:
                raise ValueError(f"its {label(kind)} is not the recipe's model")
            model = build_model(spec)
            model.load_state_dict(payload[kind]["state_dict"], strict=True)
        except (KeyError, TypeError, RuntimeError) as err:
            raise ValueError(f"{path.name} does not hold the {label(kind)} memory model ({err})") from None
        models[kind] = model.eval()
    return models


def memory_accuracy(model: nn.Module, seed: int = MEMORY_SEED) -> float:
    """Held-out query accuracy of a memory model on MEMORY_TASK."""
    inputs, targets = evaluation_set(MEMORY_TASK, MEMORY_EVAL, seed)
    return query_accuracy(predictions(model, inputs), targets)


def memory_sequence(index: int) -> tuple[Tensor, Tensor]:
    """Sequence ``index`` of MEMORY_TASK's held-out set: inputs (T,) and targets (T,)."""
    inputs, targets = evaluation_set(MEMORY_TASK, MEMORY_EVAL, MEMORY_SEED)
    if not 0 <= index < MEMORY_EVAL:
        raise ValueError(f"choose a sequence from 0 to {MEMORY_EVAL - 1}, not {index}")
    return inputs[index], targets[index]


# -- the memory, step by step -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    """One array a memory step shows: a matrix (rows × columns) or a vector (1 × n)."""

    name: str  # "C_t", "Δ_t", "K (block 2)"
    values: np.ndarray  # 2-D
    rows: str  # what a row is ("row i of each head's d × d matrix", "position s")
    columns: str  # what a column is


@dataclass(frozen=True)
class MemoryStep:
    """What one model holds after reading token t, and what it computed on the way."""

    memory: tuple[Panel, ...]  # what it carries into step t + 1 (the part drawn)
    step: tuple[Panel, ...]  # this step's writes, reads and gates
    numel: int  # numbers carried into step t + 1, all of them (the drawn part and the rest)
    nbytes: int


@dataclass(frozen=True)
class MemoryTrace:
    """One model stepped through one recall sequence."""

    kind: str
    shape: str  # "1 × 32 mLSTM, 2 heads"
    carried: str  # what it carries, in words
    tokens: tuple[int, ...]
    targets: tuple[int, ...]  # the value asked for at a query, -100 elsewhere
    predicted: tuple[int, ...]  # its argmax at every position
    steps: tuple[MemoryStep, ...]  # one per t
    scale: dict[str, float]  # per panel name, the largest |value| over every t: a colour scale that holds still


def _heads_side_by_side(matrix: Tensor) -> np.ndarray:
    """(heads, d, d) → (d, heads·d): row i of every head's matrix, heads left to right."""
    return matrix.permute(1, 0, 2).reshape(matrix.size(1), -1).numpy()


def _row(vector: Tensor) -> np.ndarray:
    return vector.reshape(1, -1).numpy()


CARRIED = {
    "lstm": "h_t and c_t",
    "mlstm": "the matrix memory C_t (d × d per head), its normaliser n_t, m_t and the convolution's last inputs",
    "linear_attention": "the matrix memory S_t (d × d per head), z_t and the convolution's last inputs",
    "selective": "the state s_t (S numbers per channel) and the convolution's last inputs",
    "transformer": "K and V of every position read so far, in every block: a cache that grows with t",
}


def _recurrent_steps(model: nn.Module, kind: str, ids: Tensor) -> list[MemoryStep]:
    _, traces = model.trace(ids.view(1, -1))
    if kind == "lstm":
        v = {name: value[0, :, 0] for name, value in traces.values.items()}  # (T, H), the one layer
        _, _, state = model(ids.view(1, -1))  # (h, c), each (L, 1, H)
        numel, nbytes = state_numel(state), state_nbytes(state)
        hidden = "unit j"
        return [MemoryStep(
            memory=(Panel("h_t", _row(v["h"][t]), "", hidden), Panel("c_t", _row(v["c"][t]), "", hidden)),
            step=(Panel("f_t (forget gate)", _row(v["f"][t]), "", hidden),
                  Panel("i_t (input gate)", _row(v["i"][t]), "", hidden)),
            numel=numel, nbytes=nbytes) for t in range(ids.numel())]
    (trace,) = traces
    v = {name: value[:, 0] for name, value in trace.values.items()}  # (T, …)
    zero = model.rnn.zero_state(1)
    numel, nbytes = state_numel(zero), state_nbytes(zero)
    per_head = "row i of each head's d × d matrix"
    columns = "column j, heads side by side"
    steps = []
    for t in range(ids.numel()):
        if kind == "mlstm":
            memory = (Panel("C_t", _heads_side_by_side(v["C"][t]), per_head, columns),)
            step = (Panel("k_t", _row(v["k"][t]), "", "heads side by side"),
                    Panel("v_t", _row(v["v"][t]), "", "heads side by side"),
                    Panel("i′_t per head", _row(v["i"][t]), "", "head"),
                    Panel("f′_t per head", _row(v["f"][t]), "", "head"),
                    Panel("q_t", _row(v["q"][t]), "", "heads side by side"),
                    Panel("read C_t q_t / norm", _row(v["h_tilde"][t]), "",
                          "heads side by side"))
        elif kind == "linear_attention":
            memory = (Panel("S_t", _heads_side_by_side(v["S"][t]), per_head, columns),)
            step = (Panel("φ(k_t)", _row(v["phi_k"][t]), "", "heads side by side"),
                    Panel("v_t", _row(v["v"][t]), "", "heads side by side"),
                    Panel("φ(q_t)", _row(v["phi_q"][t]), "", "heads side by side"),
                    Panel("read S_t φ(q_t) / norm", _row(v["y"][t]), "", "heads side by side"))
        else:
            memory = (Panel("s_t", v["s"][t].t().numpy(), "state number n (of S)", "channel j"),)
            step = (Panel("Δ_t", _row(v["delta"][t]), "",
                          "channel j"),
                    Panel("B_t", _row(v["B"][t]), "", "state number n"),
                    Panel("C_t (readout)", _row(v["C"][t]), "", "state number n"))
        steps.append(MemoryStep(memory, step, numel, nbytes))
    return steps


def _transformer_steps(model: CharTransformer, ids: Tensor) -> list[MemoryStep]:
    _, trace = model.trace(ids.view(1, -1))
    last = len(model.blocks)
    steps = []
    for t in range(ids.numel()):
        _, cache = model.prefill(ids[: t + 1].view(1, -1))
        k, v = cache.keys[-1][0], cache.values[-1][0]  # (h, t + 1, d)
        memory = tuple(Panel(f"{name}, block {last} of {last}", z.transpose(0, 1).reshape(t + 1, -1).numpy(),
                             "position s", "channel, heads side by side") for name, z in (("K", k), ("V", v)))
        step = tuple(Panel(f"attention of t, head {head + 1}",
                           _row(trace.attention[-1, 0, head, t, : t + 1]), "", "position s")
                     for head in range(trace.attention.size(2)))
        steps.append(MemoryStep(memory, step, cache.numel, cache.nbytes))
    return steps


@torch.no_grad()
def memory_trace(model: nn.Module, ids: Tensor, targets: Tensor) -> MemoryTrace:
    """What ``model`` (a memory model) holds after every token of ``ids`` (T,), on its trace path."""
    model.eval()
    kind = model.spec.kind if isinstance(model, StateModel) else model.config.kind
    steps = _transformer_steps(model, ids) if kind == "transformer" else _recurrent_steps(model, kind, ids)
    scale: dict[str, float] = {}
    for step in steps:
        for panel in (*step.memory, *step.step):
            scale[panel.name] = max(scale.get(panel.name, 0.0), float(np.abs(panel.values).max(initial=0.0)))
    recipe = MEMORY_RECIPES[kind].spec
    heads = f", {recipe.heads} heads" if kind in ("mlstm", "linear_attention", "transformer") else ""
    size = f", S = {recipe.state_size}" if kind == "selective" else ""
    return MemoryTrace(
        kind=kind, shape=f"{recipe.shape_label()}{heads}{size}", carried=CARRIED[kind], tokens=tuple(ids.tolist()),
        targets=tuple(targets.tolist()), predicted=tuple(predictions(model, ids.view(1, -1))[0].tolist()),
        steps=tuple(steps), scale=scale)


# -- the command that makes the shipped files ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``models OUT``: train the memory models and write them; ``sweep TASK OUT --measured-on … --run CMD FILE …``:
    write a shipped sweep from commands and the JSON each wrote."""
    from rnnviz.experiments.delay import torch_threads

    parser = argparse.ArgumentParser(prog="python -m rnnviz.experiments.state_capacity", description=__doc__.split(
        "\n")[0])
    commands = parser.add_subparsers(dest="what", required=True)
    models = commands.add_parser("models", help="train the memory models (one thread) and write them to OUT")
    models.add_argument("out")
    sweep = commands.add_parser("sweep", help="write a shipped sweep file")
    sweep.add_argument("task", choices=["recall", "parity"])
    sweep.add_argument("out")
    sweep.add_argument("--measured-on", required=True)
    sweep.add_argument("--run", nargs=2, action="append", metavar=("COMMAND", "JSON"), required=True)
    args = parser.parse_args(argv)
    if args.what == "sweep":
        for command, _ in args.run:
            command_config(command)  # refuses a command that is not one
        write_sweep(Path(args.out), args.task, args.measured_on, [(c, Path(f)) for c, f in args.run])
        return 0
    trained = {}
    with torch_threads(1):
        for kind in MEMORY_KINDS:
            start = time.perf_counter()
            trained[kind] = train_memory_model(MEMORY_RECIPES[kind])
            print(f"{label(kind):17s} held-out accuracy {memory_accuracy(trained[kind]):.3f} "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    save_memory_models(trained, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

