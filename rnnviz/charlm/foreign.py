"""Load a character model trained outside rnnviz: a plain PyTorch state_dict and its vocabulary.

The model it reads is what a user writes in a few lines: ``nn.Embedding`` (or one-hot input) → ``nn.RNN``,
``nn.LSTM`` or ``nn.GRU`` (any layers, any width, batch-first or not, with or without biases) → ``nn.Linear``,
saved with ``torch.save(model.state_dict(), "m.pt")``, and the vocabulary as JSON (a list of characters in id
order, or a string). rnnviz's CharModel keeps torch's parameter names and gate order, so loading is a name
mapping, found from the shapes:

    embedding   a 2-D (V, E) tensor with no bias beside it, E = the first layer's input width
    recurrent   ``weight_ih_l{k}`` (G·H, D), ``weight_hh_l{k}`` (G·H, H), ``bias_ih_l{k}``, ``bias_hh_l{k}`` (G·H,)
                under one prefix; G = 4 is an LSTM, 3 a GRU, 1 an RNN
    readout     a ``*.weight`` (V, H) with its ``*.bias`` (V,)

Every step is said in ``ImportedModel.report``; everything it cannot use is a CheckpointError in words.
The file is read with ``torch.load(..., weights_only=True)`` only: pickled objects are refused unrun.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch import Tensor

from rnnviz.bounded import nonfinite_problem, storage_problem, times
from rnnviz.charlm.checkpoint import (
    Checkpoint,
    CheckpointError,
    load_weights_only,
    model_size_problem,
    read_source_bytes,
    validate_checkpoint,
)
from rnnviz.charlm.corpus import Vocab
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig, kind_label, shape_label
from rnnviz.limits import (
    LONE_SURROGATES,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    MAX_PARAMETERS,
    QUOTE_CHARS,
    UPLOAD_LIMITS,
    FileLimits,
    quoted,
)

STATE_DICT_KEYS = ("state_dict", "model_state_dict", "model")  # where a wrapping dict may hold the weights
VOCAB_KEYS = ("vocab", "chars", "itos", "stoi")  # where a wrapping dict may hold the vocabulary
KIND_BY_BLOCKS = {4: "lstm", 3: "gru", 1: "rnn"}  # gate blocks stacked in W_hh → kind
BLOCKS_BY_KIND = {kind: blocks for blocks, kind in KIND_BY_BLOCKS.items()}
RECURRENT = re.compile(r"^(?P<prefix>.*?)(?P<what>weight_ih|weight_hh|bias_ih|bias_hh|weight_hr)_l(?P<k>\d+)"
                       r"(?P<reverse>_reverse)?$")
NONLINEARITIES = ("tanh", "relu")
JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
OPENERS, CLOSERS = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)
LONG_NUMBER = re.compile(r"[0-9]{19,}")  # more digits than any id, or int64, has
ASCII_ID = re.compile(r"[0-9]+")  # str.isdigit() also takes "²", which int() refuses
VOCAB_WRAPPERS = 2  # {"itos": {"chars": …}}: dicts a vocabulary may sit in
SHOWN = 6  # names listed in a message before "and n more"


@dataclass(frozen=True)
class ImportedModel:
    """A model read from a plain state_dict, as an rnnviz Checkpoint, and what the reading did, in sentences."""

    checkpoint: Checkpoint
    report: list[str]


# ---------------------------------------------------------------------------------------------------------
# Vocabulary


def parse_vocab(data: bytes | str) -> str:
    """The characters in id order from JSON text: a list of one-character strings, or a string; also
    {"itos": [...]}, {"chars": ...}, {"stoi": {ch: id}}, a bare {ch: id} or {"0": ch, ...}.

    At most MAX_JSON_BYTES, nested at most MAX_JSON_DEPTH deep, checked before the JSON is parsed."""
    size = len(data)  # a str of more characters than the limit has more bytes too
    if isinstance(data, str) and size <= MAX_JSON_BYTES:
        size = len(data.encode("utf-8", "replace"))
    if size > MAX_JSON_BYTES:
        raise CheckpointError(f"The vocabulary file takes {size:,} bytes, {times(size, MAX_JSON_BYTES)} the "
                              f"{MAX_JSON_BYTES:,} read here; a vocabulary of characters takes a few kB.")
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CheckpointError("The vocabulary file is not UTF-8 text; give a JSON list of characters.") from None
    elif data.startswith("\ufeff"):
        data = data[1:]
    skeleton = JSON_STRING.sub('""', data)  # what strings hold is no structure
    depth = _depth(skeleton)
    if depth > MAX_JSON_DEPTH:
        raise CheckpointError(f"The vocabulary nests lists or objects {depth:,} deep, {times(depth, MAX_JSON_DEPTH)} "
                              f"the {MAX_JSON_DEPTH} read here; give a JSON list of characters in id order.")
    number = max((len(m) for m in LONG_NUMBER.findall(skeleton)), default=0)
    if number:
        raise CheckpointError(f"The vocabulary holds a number of {number:,} digits; its ids are 0 to V − 1.")
    try:
        value = json.loads(data)
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"The vocabulary is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); give a JSON list "
            'of characters in id order, such as ["\\n", " ", "a"], or a JSON string.'
        ) from None
    except (ValueError, RecursionError) as err:  # the skeleton missed what an unclosed string hid
        raise CheckpointError(f"The vocabulary cannot be read as JSON ({quoted(err)}).") from None
    return _vocab_from_value(value)


def _depth(skeleton: str) -> int:
    """How deep the lists and objects of JSON text without its strings' contents nest."""
    marks = np.frombuffer(skeleton.encode("utf-8", "replace"), dtype=np.uint8)
    steps = np.isin(marks, OPENERS).astype(np.int64) - np.isin(marks, CLOSERS)
    return int(np.cumsum(steps).max(initial=0))


def _vocab_from_value(value) -> str:
    """The characters in id order from a parsed JSON value (or a value stored beside the weights)."""
    if isinstance(value, str):
        chars = list(value)
    elif isinstance(value, list | tuple):
        chars = _entries(value)
    elif isinstance(value, dict):
        chars = _chars_from_dict(value)
    else:
        raise CheckpointError(f"The vocabulary is {_json_kind(value)}; give a list of characters in id order, or a "
                              "string.")
    seen: dict[str, int] = {}
    for i, ch in enumerate(chars):
        if ch in seen:
            raise CheckpointError(f"The vocabulary lists {ch!r} twice (ids {seen[ch]} and {i}); each character may "
                                  "appear once.")
        if LONE_SURROGATES.match(ch):
            raise CheckpointError(f"Entry {i} of the vocabulary, {ch!r}, is half of a UTF-16 surrogate pair, not a "
                                  "character; save the vocabulary from the text the model was trained on.")
        seen[ch] = i
    if len(chars) < 2:
        raise CheckpointError(f"The vocabulary has {len(chars)} character{'s' * (len(chars) != 1)}; a character model "
                              "needs at least 2.")
    return "".join(chars)


def _entries(items) -> list[str]:
    chars = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise CheckpointError(f"Entry {i} of the vocabulary is {_json_kind(item)}, not a character.")
        if len(item) != 1:
            raise CheckpointError(f"Entry {i} of the vocabulary, {_shown(item)}, is {len(item):,} characters long; "
                                  "each entry must be exactly one character.")
        chars.append(item)
    return chars


def _chars_from_dict(value: dict, depth: int = 0) -> list[str]:
    for key in ("itos", "chars"):
        if key in value:
            inner = value[key]
            if isinstance(inner, str):
                return list(inner)
            if isinstance(inner, list | tuple):
                return _entries(inner)
            if isinstance(inner, dict) and depth < VOCAB_WRAPPERS:
                return _chars_from_dict(inner, depth + 1)
            raise CheckpointError(f'The vocabulary\'s "{key}" is {_json_kind(inner)}, not a list of characters.')
    if "stoi" in value:
        return _from_stoi(value["stoi"])
    if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        return _from_stoi(value)  # a bare {ch: id}
    if value and all(isinstance(k, str) and k.isdigit() for k in value):  # {"0": ch, "1": ch, ...}
        ids = [int(k) if ASCII_ID.fullmatch(k) and len(k) <= len(str(len(value))) else -1 for k in value]
        if sorted(ids) != list(range(len(ids))):
            raise CheckpointError(f"The vocabulary's ids must be the numbers 0 to {len(ids) - 1}, each once.")
        chars = _entries([value[k] for k in value])
        return [ch for _, ch in sorted(zip(ids, chars))]
    raise CheckpointError("The vocabulary is a JSON object with none of itos, chars or stoi; give a list of "
                          "characters in id order.")


def _from_stoi(stoi) -> list[str]:
    """Characters in id order from {ch: id}, the ids 0…V−1 each once."""
    if not isinstance(stoi, dict):
        raise CheckpointError(f"The vocabulary's stoi is {_json_kind(stoi)}, not an object of character → id.")
    chars = _entries(list(stoi))
    ids = list(stoi.values())
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids) or sorted(ids) != list(range(len(ids))):
        raise CheckpointError(f"The vocabulary's ids must be the numbers 0 to {len(ids) - 1}, each once.")
    return [ch for _, ch in sorted(zip(ids, chars))]


def _json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, int | float):
        return f"a number ({quoted(value)})"  # JSON's have at most 18 digits here (LONG_NUMBER), a .pt's 19
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------------------------------------------
# The state_dict → CharModel mapping


@dataclass(frozen=True)
class _Recurrent:
    """What the recurrent tensors say: kind, L, H, the first layer's input width D, their names."""

    prefix: str
    kind: str
    layers: int
    hidden: int
    input_size: int
    bias: bool
    names: dict[str, str]  # our name (rnn.weight_ih_l0, …) → theirs


def import_state_dict(weights: Mapping[str, Tensor], vocab: str, *, nonlinearity: str = "tanh",
                      name: str = "imported", max_parameters: int | None = MAX_PARAMETERS) -> ImportedModel:
    """Map a plain torch char model's state_dict onto a CharModel (V = len(vocab), ids in ``vocab``'s order).

    ``nonlinearity`` is an RNN's φ ("tanh" or "relu"), which its weights cannot tell. The vocabulary is reordered
    by code point, as rnnviz keeps it, with the embedding and readout rows permuted to match. Every tensor must own
    its values, the model have at most ``max_parameters`` (None: any number) and every weight it uses be finite.
    Every refusal is a CheckpointError in words; ``report`` says what was read, placed, filled in and left out.
    """
    if nonlinearity not in NONLINEARITIES:
        raise CheckpointError(f"nonlinearity must be 'tanh' or 'relu', not {_shown(str(nonlinearity))}.")
    if not isinstance(vocab, str):
        raise CheckpointError("The vocabulary must be a string of characters in id order.")
    _vocab_from_value(vocab)  # distinct, at least 2
    _check_tensors(weights)
    size = len(vocab)
    rec = _find_recurrent(weights)
    readout_w, readout_b = _find_readout(weights, rec, size)
    embed = _find_embedding(weights, rec, size, exclude={readout_w})
    used = [key for key in (embed, readout_w, readout_b, *rec.names.values()) if key is not None]
    count = sum(weights[k].numel() for k in used) + (readout_b is None) * size \
        + (not rec.bias) * 2 * rec.layers * BLOCKS_BY_KIND[rec.kind] * rec.hidden  # the biases it fills in
    problem = model_size_problem(count, max_parameters, f"The {rec.layers} × {rec.hidden:,} {kind_label(rec.kind)}")
    if problem:
        raise CheckpointError(f"The model is too large: {problem}.")
    for key in used:
        tensor = weights[key]
        if not tensor.is_floating_point():
            raise CheckpointError(f"{key} holds {str(tensor.dtype).removeprefix('torch.')} values, not "
                                  "floating-point weights.")
        with torch.no_grad():
            problem = nonfinite_problem(tensor.detach().to(torch.float32))  # float64 beyond float32's range: ±inf
        if problem:
            raise CheckpointError(f"{key} cannot be used: {problem}. A model with such a weight computes NaN for "
                                  "every character; save the weights from before the training diverged.")

    report = []
    mapped: dict[str, Tensor] = {}
    if embed is not None:
        mapped["embed.weight"] = weights[embed]
        what = f"{_article(rec.input_size)} {rec.input_size}-wide embedding"
    else:
        what = "one-hot input"
    for ours, theirs in rec.names.items():
        mapped[ours] = weights[theirs]
    mapped["head.weight"] = weights[readout_w]
    placed = len(mapped) + (readout_b is not None)
    config = TrainConfig(kind=rec.kind, layers=rec.layers, hidden=rec.hidden, embedding=embed is not None,
                         embed_dim=rec.input_size if embed is not None else TrainConfig.embed_dim, dropout=0.0,
                         forget_bias=None)
    report.append(f"Read a {shape_label(config)} with {what} over {size} characters.")
    parts = [f"{embed} as the embedding"] if embed is not None else []
    parts.append(f"{rec.prefix}* ({len(rec.names)} tensors) as the recurrent layers")
    parts.append(f"{readout_w} and {readout_b} as the readout" if readout_b else f"{readout_w} as the readout")
    report.append(f"Placed {placed} tensors: {', '.join(parts)}.")

    hidden_rows = BLOCKS_BY_KIND[rec.kind] * rec.hidden
    if not rec.bias:
        for k in range(rec.layers):
            mapped[f"rnn.bias_ih_l{k}"] = torch.zeros(hidden_rows)
            mapped[f"rnn.bias_hh_l{k}"] = torch.zeros(hidden_rows)
        report.append("Its recurrent layers have no biases (bias=False); rnnviz holds them as zeros, which computes "
                      "the same.")
    if readout_b is None:
        mapped["head.bias"] = torch.zeros(size)
        report.append(f"Its readout {readout_w} has no bias; rnnviz holds it as zeros, which computes the same.")
    else:
        mapped["head.bias"] = weights[readout_b]
    if rec.kind == "rnn":
        other = "relu" if nonlinearity == "tanh" else "tanh"
        report.append(f"An RNN's nonlinearity cannot be read from its weights: it runs with {nonlinearity}, as asked "
                      f"(load it with nonlinearity=\"{other}\" if it was trained with {other}).")
        if nonlinearity == "relu":
            report.append("rnnviz's training settings have no field for the nonlinearity: training it further in "
                          "rnnviz would run it with tanh.")

    chars, order = _sorted_vocab(vocab)
    if order is not None:
        mapped["head.weight"] = mapped["head.weight"][order]
        mapped["head.bias"] = mapped["head.bias"][order]
        if embed is not None:
            mapped["embed.weight"] = mapped["embed.weight"][order]
        else:
            mapped["rnn.weight_ih_l0"] = mapped["rnn.weight_ih_l0"][:, order]
        report.append("Its vocabulary is not in code-point order, which rnnviz keeps: the characters' ids were "
                      "renumbered, with the embedding and readout rows moved to match (the model computes the same).")
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in mapped.values()} - {"float32"})
    if dtypes:
        report.append(f"Converted its {' and '.join(dtypes)} weights to float32.")

    placed_names = set(used)
    left = [k for k in weights if k not in placed_names]
    if left:
        listed = ", ".join(f"{k} ({_describe(weights[k])})" for k in left[:SHOWN])
        listed += f" and {len(left) - SHOWN:,} more" if len(left) > SHOWN else ""
        report.append(f"Left out {len(left)} tensor{'s' * (len(left) != 1)} it could not place: {listed}. If "
                      f"{'any of them takes' if len(left) > 1 else 'it takes'} part in the model's forward pass, "
                      "rnnviz's model computes something else than the original.")

    model_config = ModelConfig(vocab_size=size, kind=rec.kind, layers=rec.layers, hidden=rec.hidden,
                               embedding=config.embedding, embed_dim=config.embed_dim, nonlinearity=nonlinearity)
    with torch.random.fork_rng(devices=[]):  # the init is overwritten: leave the caller's random state alone
        model = CharModel(model_config)
    try:
        model.load_state_dict({k: v.detach().to("cpu", torch.float32) for k, v in mapped.items()}, strict=True)
    except RuntimeError as err:  # the shapes were checked above; this is a safety net
        raise CheckpointError(f"The weights do not load into a {shape_label(config)}: {quoted(err)}") from None
    model.eval()
    trainer_state = {
        "config": config.to_dict(), "vocab": chars, "optimizer": None, "step": 0,
        "seconds": 0.0, "initial_loss": None, "position": 0, "carried_state": None,
        "rng": {"cpu": torch.Generator().manual_seed(config.seed).get_state(), "cuda": None},
        "history": [], "evals": [], "model": {k: v.clone() for k, v in model.state_dict().items()},
    }  # fmt: skip
    checkpoint = Checkpoint(config, Vocab(chars), model, name, [], [], trainer_state)
    return ImportedModel(checkpoint, report)


def _check_tensors(weights: Mapping[str, Tensor]) -> None:
    """CheckpointError unless ``weights`` are tensors, each owning its values, under printable names."""
    bad = [k if isinstance(k, str) else type(k).__name__ for k, v in weights.items()
           if not isinstance(k, str) or not isinstance(v, Tensor)]
    if bad:
        raise CheckpointError(f"The weights are not a dict of named tensors (look at {_keys(bad[:3])}).")
    for key, tensor in weights.items():
        if len(key) > QUOTE_CHARS or not key.isprintable():
            what = (f"is {len(key):,} characters long" if len(key) > QUOTE_CHARS
                    else "holds characters that cannot be shown")
            raise CheckpointError(f"The tensor name {_shown(key)} {what}; the names of a state_dict are its modules' "
                                  f"(at most {QUOTE_CHARS} printable characters here).")
        problem = storage_problem(tensor)
        if problem:
            raise CheckpointError(f"{key} cannot be used: {problem}.")


def _find_recurrent(weights: Mapping[str, Tensor]) -> _Recurrent:
    found: dict[str, dict[tuple[str, int], str]] = {}
    for key in weights:
        match = RECURRENT.match(key)
        if match is None:
            continue
        if match["reverse"]:
            raise CheckpointError(f"The model is bidirectional ({key}): it reads the text backwards too, which a "
                                  "model that predicts the next character cannot; rnnviz reads one direction only.")
        if match["what"] == "weight_hr":
            raise CheckpointError(f"The LSTM projects its h_t (proj_size, {key}); rnnviz reads LSTMs without a "
                                  "projection.")
        found.setdefault(match["prefix"], {})[match["what"], int(match["k"])] = key
    if not found:
        raise CheckpointError("Found no recurrent layer: no tensor named like an nn.RNN, nn.LSTM or nn.GRU's "
                              "weight_ih_l0 and weight_hh_l0.")
    if len(found) > 1:
        modules = ", ".join(repr(p.rstrip(".") or "(top level)") for p in found)
        raise CheckpointError(f"Found recurrent weights in {len(found)} modules ({modules}); rnnviz reads one "
                              "stacked nn.RNN, nn.LSTM or nn.GRU (num_layers=L), not several in a row.")
    prefix, tensors = next(iter(found.items()))
    layers = 1 + max(k for _, k in tensors)
    for k in range(layers):
        for what in ("weight_ih", "weight_hh"):
            if (what, k) not in tensors:
                raise CheckpointError(f"The recurrent layers are incomplete: {prefix}{what}_l{k} is missing.")
    w_hh = weights[tensors["weight_hh", 0]]
    if w_hh.dim() != 2 or w_hh.size(1) < 1 or w_hh.size(0) % w_hh.size(1):
        raise CheckpointError(f"{prefix}weight_hh_l0 has shape {tuple(w_hh.shape)}, which is no recurrent layer's "
                              "(G·H, H).")
    hidden, blocks = w_hh.size(1), w_hh.size(0) // w_hh.size(1)
    if blocks not in KIND_BY_BLOCKS:
        raise CheckpointError(f"{prefix}weight_hh_l0 stacks {blocks} blocks of {hidden} rows; an RNN has 1, a GRU 3 "
                              "and an LSTM 4.")
    kind = KIND_BY_BLOCKS[blocks]
    rows = blocks * hidden
    biases = [{k for (what, k) in tensors if what == name} for name in ("bias_ih", "bias_hh")]
    biased = bool(biases[0] or biases[1])
    if biased and not biases[0] == biases[1] == set(range(layers)):
        raise CheckpointError(f"The recurrent layers are incomplete: some of {prefix}bias_ih_l… and {prefix}bias_hh_l… "
                              "are there and others not.")
    input_size = weights[tensors["weight_ih", 0]].size(-1)
    label = kind_label(kind)
    names = {}
    for k in range(layers):
        layer_hh = tuple(weights[tensors["weight_hh", k]].shape)
        if k and layer_hh != (rows, hidden):
            widths = f"{layer_hh[1]} units" if len(layer_hh) == 2 else f"the shape {layer_hh}"
            raise CheckpointError(f"The layers have different widths: layer 0 has {hidden} units and layer {k} "
                                  f"({tensors['weight_hh', k]}) {widths}; rnnviz's stacked layers are all one width.")
        width = hidden if k else input_size
        expected = {"weight_ih": (rows, width), "weight_hh": (rows, hidden), "bias_ih": (rows,), "bias_hh": (rows,)}
        for what, shape in expected.items():
            if (what, k) not in tensors:
                continue
            theirs = tensors[what, k]
            actual = tuple(weights[theirs].shape)
            if actual != shape:
                raise CheckpointError(f"{theirs} has shape {actual}; layer {k} of a {hidden}-wide {label} needs "
                                      f"{shape}.")
            names[f"rnn.{what}_l{k}"] = theirs
    return _Recurrent(prefix, kind, layers, hidden, input_size, biased, names)


def _find_readout(weights: Mapping[str, Tensor], rec: _Recurrent, size: int) -> tuple[str, str | None]:
    """The (V, H) readout weight and its bias's name (None when it has none)."""
    outside = {k: v for k, v in weights.items() if RECURRENT.match(k) is None}
    biased = [k for k, v in outside.items() if _is_linear_weight(k, v, outside) and v.size(1) == rec.hidden]
    fits = [k for k in biased if weights[k].size(0) == size]
    if len(fits) > 1:
        raise CheckpointError(f"Found {len(fits)} tensors that could be the readout ({' and '.join(fits)}, each "
                              f"({size}, {rec.hidden}) with a bias); rnnviz reads one nn.Linear after the recurrent "
                              "layers.")
    if fits:
        return fits[0], _bias_name(fits[0])
    # A bias-less nn.Linear: a (V, H) weight alone. When E = H the embedding is one too, told apart by its name.
    unbiased = [k for k, v in outside.items() if k.endswith("weight") and v.dim() == 2 and v.is_floating_point()
                and tuple(v.shape) == (size, rec.hidden) and _bias_name(k) not in outside]
    if rec.input_size == rec.hidden and unbiased:
        readout_like = [k for k in unbiased if not _looks_like_embedding(k)]
        if len(unbiased) == 2 and len(readout_like) == 1:
            return readout_like[0], None
        if len(unbiased) > 1:
            raise CheckpointError(f"Found {len(unbiased)} tensors of shape ({size}, {rec.hidden}) and no bias "
                                  f"({' and '.join(unbiased)}); rnnviz cannot tell the embedding from the readout.")
    elif len(unbiased) == 1:
        return unbiased[0], None
    elif len(unbiased) > 1:
        raise CheckpointError(f"Found {len(unbiased)} tensors that could be the readout ({' and '.join(unbiased)}, "
                              f"each ({size}, {rec.hidden})); rnnviz reads one nn.Linear after the recurrent layers.")
    others = [k for k in biased if weights[k].size(0) != size]
    if others:
        shown = ", ".join(f"{k} predicts {weights[k].size(0)}" for k in others)
        raise CheckpointError(f"The vocabulary has {size} characters, but the readout does not ({shown}): give the "
                              "vocabulary the model was trained with.")
    raise CheckpointError(f"Found no readout: no nn.Linear weight of shape ({size}, {rec.hidden}) (characters × "
                          f"hidden units) with its bias of ({size},) after the recurrent layers.")


def _find_embedding(weights: Mapping[str, Tensor], rec: _Recurrent, size: int, exclude: set[str]) -> str | None:
    """The (V, E) embedding's name, E the first layer's input width; None for one-hot input (E = V, none found)."""
    outside = {k: v for k, v in weights.items() if RECURRENT.match(k) is None and k not in exclude}
    candidates = [k for k, v in outside.items() if v.dim() == 2 and v.is_floating_point()
                  and v.size(1) == rec.input_size and _bias_name(k) not in outside]
    fits = [k for k in candidates if weights[k].size(0) == size]
    if len(fits) > 1:
        named = [k for k in fits if _looks_like_embedding(k)]
        if len(named) != 1:
            raise CheckpointError(f"Found {len(fits)} tensors that could be the embedding ({' and '.join(fits)}, each "
                                  f"({size}, {rec.input_size})); rnnviz reads one nn.Embedding before the recurrent "
                                  "layers.")
        fits = named
    if fits:
        return fits[0]
    if rec.input_size == size:
        return None  # one-hot x_t: W_ih has a column per character
    wrong = [k for k in candidates if _looks_like_embedding(k) or len(candidates) == 1]
    if wrong:
        shown = ", ".join(f"{k} has {weights[k].size(0)} rows" for k in wrong)
        raise CheckpointError(f"The vocabulary has {size} characters, but the embedding does not ({shown}): give the "
                              "vocabulary the model was trained with.")
    raise CheckpointError(f"The first recurrent layer reads inputs {rec.input_size} wide, but found no embedding of "
                          f"shape ({size}, {rec.input_size}), and the input is not one-hot ({size} characters).")


def _is_linear_weight(key: str, value: Tensor, tensors: Mapping[str, Tensor]) -> bool:
    """A 2-D ``*.weight`` with a ``*.bias`` of as many rows beside it."""
    bias = tensors.get(_bias_name(key))
    return (key.endswith("weight") and value.dim() == 2 and value.is_floating_point() and bias is not None
            and tuple(bias.shape) == (value.size(0),))


def _bias_name(key: str) -> str:
    return key[: -len("weight")] + "bias" if key.endswith("weight") else key + ".bias"


def _looks_like_embedding(key: str) -> bool:
    return bool(re.search(r"emb|encoder|wte|tok", key, re.IGNORECASE))


def _sorted_vocab(vocab: str) -> tuple[str, Tensor | None]:
    """The characters in code-point order, and the old ids in that order (None when already sorted)."""
    chars = "".join(sorted(vocab))
    if chars == vocab:
        return chars, None
    position = {ch: i for i, ch in enumerate(vocab)}
    return chars, torch.tensor([position[ch] for ch in chars])


def _describe(value: Tensor) -> str:
    shape = f"shape {tuple(value.shape)}" if value.dim() else "a scalar"
    return f"{shape}, {str(value.dtype).removeprefix('torch.')}"


def _article(number: int) -> str:
    """ "a" or "an" before a number written in digits: an 8, an 11, an 18, an 80, a 128."""
    return "an" if str(number).startswith("8") or number in (11, 18) else "a"


# ---------------------------------------------------------------------------------------------------------
# Files


def load_foreign(model: str | Path | bytes | BinaryIO, vocab: str | Path | bytes | None = None, *,
                 limits: FileLimits = UPLOAD_LIMITS, **kw) -> ImportedModel:
    """Read a plain state_dict file (``model``: a path, bytes or a binary file) and its vocabulary.

    ``vocab`` is a path to the vocabulary JSON (str or Path) or its bytes; it may be None when the file stores
    the vocabulary beside the weights ({"state_dict": ..., "vocab": ...}). ``limits``: what is read at most
    (OWN_FILE_LIMITS for a file of the operator's own). ``kw`` go to ``import_state_dict``.
    """
    return _import_payload(_torch_load(read_source_bytes(model), limits), vocab, max_parameters=limits.parameters, **kw)


def load_any(model: str | Path | bytes | BinaryIO, vocab: str | Path | bytes | None = None, *,
             limits: FileLimits = UPLOAD_LIMITS, **kw) -> tuple[Checkpoint, list[str]]:
    """An rnnviz checkpoint as ``load_checkpoint`` reads it (report []), or any plain char model as
    ``load_foreign`` reads it (its report), within ``limits`` (OWN_FILE_LIMITS for a file of the operator's own)."""
    raw = read_source_bytes(model)
    payload = _torch_load(raw, limits)
    if isinstance(payload, dict) and "format_version" in payload:
        return validate_checkpoint(payload, limits=limits), []
    kw["max_parameters"] = limits.parameters
    imported = _import_payload(payload, vocab, **kw)
    return imported.checkpoint, imported.report


def _torch_load(raw: bytes, limits: FileLimits):
    """``torch.load`` of a weights-only file, every failure a CheckpointError in words."""
    if len(raw) < 4:
        raise CheckpointError("The file is empty or far too short to be a model.")
    if not raw.startswith((b"PK\x03\x04", b"\x80")):
        hint = " It looks like JSON: give the weights (.pt) file as the model and the JSON as the vocabulary." \
            if raw.lstrip()[:1] in (b"[", b"{", b'"') else ""
        raise CheckpointError("This is not a PyTorch checkpoint (.pt) file: neither an rnnviz checkpoint nor a "
                              f"state_dict of weights.{hint}")
    return load_weights_only(raw, pickled_hint=" Save the weights alone: torch.save(model.state_dict(), path).",
                             max_record_bytes=limits.record_bytes)


def _import_payload(payload, vocab: str | Path | bytes | None, **kw) -> ImportedModel:
    if not isinstance(payload, dict):
        raise CheckpointError(f"The file holds {_json_kind(payload)}, not a state_dict (a dict of named tensors).")
    if "format_version" in payload:
        raise CheckpointError("This is an rnnviz checkpoint, not a plain state_dict: read it with load_checkpoint "
                              "(or load_any).")
    notes = []
    weights, stored_vocab = payload, None
    if not all(isinstance(v, Tensor) for v in payload.values()):
        holder = next((k for k in STATE_DICT_KEYS if isinstance(payload.get(k), dict)), None)
        if holder is None:
            raise CheckpointError("The file holds a dict that is not a state_dict: it has no tensors under "
                                  f"{', '.join(STATE_DICT_KEYS)}, and its entries are {_keys(payload)}.")
        weights = payload[holder]
        if not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in weights.items()):
            raise CheckpointError(f'The file\'s "{holder}" is not a dict of named tensors.')
        stored = next((k for k in VOCAB_KEYS if k in payload), None)
        if stored is not None:
            stored_vocab = payload[stored]
        other = [k for k in payload if k not in (holder, stored)]
        notes.append(f'Read the weights from the file\'s "{holder}"'
                     + (f', the vocabulary from its "{stored}"' if stored and vocab is None else "")
                     + (f", and ignored its other entries ({_keys(other)})." if other else "."))
    if vocab is not None:
        chars = parse_vocab(_read_vocab(vocab))
        if stored_vocab is not None:
            notes.append("The vocabulary given was used, not the one stored in the file.")
    elif stored_vocab is not None:
        chars = _vocab_from_value(stored_vocab)
    else:
        raise CheckpointError("The file holds weights but no vocabulary: give the vocabulary as well, as a JSON file "
                              'listing the characters in id order (["\\n", " ", "a", ...]) or a JSON string.')
    imported = import_state_dict(weights, chars, **kw)
    return ImportedModel(imported.checkpoint, imported.report + notes)


def _read_vocab(vocab: str | Path | bytes) -> bytes:
    if isinstance(vocab, bytes | bytearray | memoryview):
        return bytes(vocab)
    try:
        return Path(vocab).read_bytes()
    except OSError as err:
        raise CheckpointError(f"Could not read the vocabulary {quoted(vocab)}: {err.strerror or err}.") from None


def _keys(keys) -> str:
    keys = [quoted(k, 40) if isinstance(k, str | int) else type(k).__name__ for k in keys]
    return ", ".join(keys[:SHOWN]) + (f" and {len(keys) - SHOWN:,} more" if len(keys) > SHOWN else "")


def _shown(text: str) -> str:
    """``repr`` of user text cut to QUOTE_CHARS characters, saying how much more there was."""
    if len(text) <= QUOTE_CHARS:
        return repr(text)
    return f"{text[:QUOTE_CHARS]!r}… ({len(text) - QUOTE_CHARS:,} more characters)"
