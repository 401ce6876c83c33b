"""The page "What a state can hold" without a browser: the shipped sweeps against the commands written beside them
(one point run again, number for number), a recall run trained in chunks against run_recall, the memory drawn for
each kind against the model's own fast path and hand-counted bytes, and the figures' numbers against the raw files."""

from __future__ import annotations

import base64
import dataclasses
import json
import statistics

import numpy as np
import pytest
import torch

from rnnviz.experiments.__main__ import main
from rnnviz.experiments.delay import torch_threads
from rnnviz.experiments.parity import ParityRecord, ParitySweepConfig
from rnnviz.experiments.recall import RecallRecord, RecallSweepConfig, run_recall
from rnnviz.experiments.sequence_models import label, parameter_count, state_bytes
from rnnviz.experiments.state_capacity import (
    LEARNED,
    MEMORY_RECIPES,
    NEAR_CHANCE,
    PARITY_FILE,
    RECALL_FILE,
    RecallRun,
    Spread,
    command_config,
    load_memory_models,
    memory_sequence,
    memory_trace,
    parity_sentence,
    parity_summary,
    recall_summary,
    train_memory_model,
)
from rnnviz.figures.state_capacity import memory_figure, parity_figure, recall_bytes_figure, recall_pairs_figure
from tests.figure_helpers import numbers


def raw(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def memory_models():
    return load_memory_models()


# -- the shipped sweeps -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [RECALL_FILE, PARITY_FILE], ids=["recall", "parity"])
def test_each_shipped_block_is_exactly_the_runs_its_command_makes(path):
    """Every block's records are the runs its command plans, no more and no fewer, and each record's model is the
    one the command builds: its width, parameters and state bytes counted from that model."""
    data = raw(path)
    assert data["measured_on"] and data["runs"]
    for block in data["runs"]:
        config = command_config(block["command"])
        records = block["records"]
        if data["task"] == "recall":
            assert isinstance(config, RecallSweepConfig)
            assert sorted((r["kind"], r["pairs"], r["seed"]) for r in records) == sorted(config.runs())
            length = config.length
        else:
            assert isinstance(config, ParitySweepConfig)
            assert sorted((r["kind"], r["seed"]) for r in records) == sorted(config.runs())
            length = config.train_length
        for r in records:
            spec = config.spec(r["kind"])
            assert (r["width"], r["parameters"], r["state_bytes"]) == (
                spec.width, parameter_count(spec), state_bytes(spec, length)), r
            assert all(0.0 <= a <= 1.0 for a in np.atleast_1d(r["accuracy"]))


def test_a_shipped_parity_point_comes_out_again_from_its_command(tmp_path):
    """The LSTM's parity run of seed 0, repeated by the command line its block names (narrowed to that kind and
    seed), prints the shipped accuracies at every length."""
    block = next(b for b in raw(PARITY_FILE)["runs"] if any(r["kind"] == "lstm" for r in b["records"]))
    shipped = next(r for r in block["records"] if r["kind"] == "lstm" and r["seed"] == 0)
    config = command_config(block["command"])
    one = dataclasses.replace(config, kinds=("lstm",), seeds=1, base_seed=0)
    command = one.cli_command("lstm", 0)
    assert command_config(command) == one  # the narrowed command parses back to the same run
    out = tmp_path / "again.json"
    assert main([*command.split()[2:], "--json", str(out)]) == 0
    (again,) = json.loads(out.read_text())
    assert again["accuracy"] == shipped["accuracy"] and again["lengths"] == shipped["lengths"]
    # the accuracies of a solved run are all 1: the training loss tells two recipes apart
    assert again["final_loss"] == pytest.approx(shipped["final_loss"], rel=0.05, abs=1e-7)


def test_a_recall_command_at_a_tiny_size_builds_the_shipped_models(tmp_path):
    """Each recall command, cut to two steps and a few sequences, builds the very models its records describe."""
    for block in raw(RECALL_FILE)["runs"]:
        kind = block["records"][0]["kind"]
        shipped = next(r for r in block["records"] if r["kind"] == kind)
        out = tmp_path / f"{kind}.json"
        command = block["command"].split()[2:]
        cut = command[: command.index("--json")] if "--json" in command else command
        assert main([*cut, "--kinds", kind, "--pairs", str(shipped["pairs"]), "--seeds", "1", "--steps", "2",
                     "--eval-batch", "8",
                     "--json", str(out)]) == 0
        (tiny,) = json.loads(out.read_text())
        assert (tiny["width"], tiny["parameters"], tiny["state_bytes"]) == (
            shipped["width"], shipped["parameters"], shipped["state_bytes"])


def test_a_command_that_is_not_an_experiment_is_refused_in_words():
    with pytest.raises(ValueError, match="not an `rnnviz experiments"):
        command_config("rm -rf /")
    with pytest.raises(ValueError, match="does not parse"):
        command_config("rnnviz experiments recall --pairs many")


# -- a recall run in chunks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lstm", "mlstm", "transformer"])
def test_a_recall_run_trained_in_chunks_ends_where_run_recall_ends(kind):
    config = RecallSweepConfig(kinds=(kind,), pairs=(2,), width=16, layers=1, steps=12, eval_batch=64)
    with torch_threads(1):
        whole = run_recall(config, kind, 2, seed=3)
        chunked = RecallRun(config, kind, 2, seed=3)
        chunks = 0
        while not chunked.finished:
            chunked.advance(0.0)  # one step at a time
            chunks += 1
        record = chunked.record()
    assert chunks == config.steps
    assert record.accuracy == whole.accuracy and record.final_loss == whole.final_loss
    assert (record.width, record.parameters, record.state_bytes) == (whole.width, whole.parameters,
                                                                     whole.state_bytes)


def test_an_unfinished_run_has_no_record():
    run = RecallRun(RecallSweepConfig(pairs=(1,), width=8, layers=1, steps=3), "gru", 1, seed=0)
    run.advance(0.0)
    with pytest.raises(ValueError, match="trained 1 of its 3 steps"):
        run.record()


# -- the memory, drawn ---------------------------------------------------------------------------------------------


def fast_state(model, ids, t):
    """The state after tokens 0…t by the model's fast path (the parallel form or the scan, not the trace)."""
    with torch.no_grad():
        return model(ids[: t + 1].view(1, -1))[2]


def z_values(z) -> np.ndarray:
    """A heat map's z as the browser gets it: nested lists, or NumPy's bytes in base64 with their shape."""
    if isinstance(z, dict):
        flat = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"])
        return flat.reshape([int(n) for n in z["shape"].split(",")]) if "shape" in z else flat
    return np.array([numbers(row) for row in z])


def heatmaps(fig) -> list[np.ndarray]:
    return [z_values(trace["z"]) for trace in json.loads(fig.to_json())["data"]]


@pytest.mark.parametrize("t", [3, 11])
def test_each_drawn_memory_is_the_fast_paths_state_after_token_t(memory_models, t):
    """The first heat map of each kind's figure is its state after token t, read from its fast path: h and c of the
    LSTM's nn.LSTM, every head's C (mLSTM) or S (linear attention) with row i of each head side by side, the
    selective SSM's s (one column per channel), and the Transformer's K and V of every position so far."""
    ids, targets = memory_sequence(5)
    drawn = {kind: heatmaps(memory_figure(memory_trace(model, ids, targets), t))
             for kind, model in memory_models.items()}
    h, c = fast_state(memory_models["lstm"], ids, t)
    np.testing.assert_allclose(drawn["lstm"][0], h[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(drawn["lstm"][1], c[0].numpy(), atol=1e-4)
    for kind, field in (("mlstm", "C"), ("linear_attention", "S")):
        matrix = getattr(fast_state(memory_models[kind], ids, t)[0], field)[0]  # (heads, d, d)
        heads, d, _ = matrix.shape
        expected = np.concatenate([matrix[h].numpy() for h in range(heads)], axis=1)  # (d, heads·d)
        np.testing.assert_allclose(drawn[kind][0], expected, atol=1e-4)
    s = fast_state(memory_models["selective"], ids, t)[0].s[0]  # (H, S)
    np.testing.assert_allclose(drawn["selective"][0], s.numpy().T, atol=1e-4)
    model = memory_models["transformer"]
    with torch.no_grad():
        _, trace = model.trace(ids.view(1, -1))
        block = model.blocks[-1]
        _, k, v = block.attn.qkv(block.ln_1(trace.residual[-2]))  # (1, h, T, d)
    for z, expected in zip(drawn["transformer"][:2], (k, v)):
        rows = expected[0, :, : t + 1].transpose(0, 1).reshape(t + 1, -1)  # (t + 1, C), heads side by side
        np.testing.assert_allclose(z, rows.numpy(), atol=1e-4)


def test_the_shipped_linear_attention_comes_out_again_from_its_recipe(memory_models):
    """The cheapest memory model, trained again by its recipe on one thread (what
    ``python -m rnnviz.experiments.state_capacity models`` does), has the shipped weights."""
    with torch_threads(1):
        again = train_memory_model(MEMORY_RECIPES["linear_attention"])
    shipped = memory_models["linear_attention"].state_dict()
    for name, value in again.state_dict().items():
        torch.testing.assert_close(value, shipped[name], atol=1e-5, rtol=1e-4, msg=name)


def test_each_kinds_bytes_are_its_state_counted_by_hand(memory_models):
    """H = 32, E = 16, 2 heads of d = 16, S = 8, a convolution of K = 4, float32."""
    ids, targets = memory_sequence(0)
    held = {kind: memory_trace(model, ids, targets) for kind, model in memory_models.items()}
    by_hand = {"lstm": 2 * 32,  # h and c
               "mlstm": 2 * 16 * 16 + 2 * 16 + 2 + 3 * 16,  # C, n, m, the convolution's last 3 inputs
               "linear_attention": 2 * 16 * 16 + 2 * 16 + 3 * 16,  # S, z, the convolution's inputs
               "selective": 32 * 8 + 3 * 16}  # s, the convolution's inputs
    for kind, count in by_hand.items():
        assert {(s.numel, s.nbytes) for s in held[kind].steps} == {(count, 4 * count)}, kind
    cache = [(s.numel, s.nbytes) for s in held["transformer"].steps]
    assert cache == [(2 * 2 * (t + 1) * 32, 4 * 2 * 2 * (t + 1) * 32) for t in range(16)]  # K, V × 2 blocks


# -- the figures and sentences against the raw files --------------------------------------------------------------


def test_the_recall_figures_draw_the_files_means():
    data = raw(RECALL_FILE)
    rows = [r for block in data["runs"] for r in block["records"]]
    sweep_summary = recall_summary([RecallRecord(**r) for r in rows])
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    fig = json.loads(recall_pairs_figure(sweep_summary, kinds, rows[0]["chance"]).to_json())
    for trace in fig["data"]:
        kind = next(k for k in kinds if label(k) == trace["name"])
        for d, y in zip(numbers(trace["x"]), numbers(trace["y"])):
            mean = statistics.fmean(r["accuracy"] for r in rows if r["kind"] == kind and r["pairs"] == d)
            assert y == pytest.approx(mean)
    at_d = max(r["pairs"] for r in rows)
    fig = json.loads(recall_bytes_figure(sweep_summary, {r["kind"]: r["state_bytes"] for r in rows}, at_d,
                                         rows[0]["chance"]).to_json())
    assert len(fig["data"]) == len(kinds)
    for trace in fig["data"]:
        kind = next(k for k in kinds if label(k) == trace["name"])
        assert numbers(trace["x"])[0] == next(r["state_bytes"] for r in rows if r["kind"] == kind)
        assert numbers(trace["y"])[0] == pytest.approx(statistics.fmean(
            r["accuracy"] for r in rows if r["kind"] == kind and r["pairs"] == at_d))


def parity_rows():
    return [r for block in raw(PARITY_FILE)["runs"] for r in block["records"]]


def test_the_parity_figure_draws_the_files_means():
    rows = parity_rows()
    records = [ParityRecord(**{**r, "lengths": tuple(r["lengths"]), "accuracy": tuple(r["accuracy"])}) for r in rows]
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    fig = json.loads(parity_figure(parity_summary(records), kinds, rows[0]["train_length"]).to_json())
    assert [t["name"] for t in fig["data"]] == [label(k) for k in kinds]
    for kind, trace in zip(kinds, fig["data"]):
        for length, y in zip(numbers(trace["x"]), numbers(trace["y"])):
            at = [r["accuracy"][r["lengths"].index(length)] for r in rows if r["kind"] == kind]
            assert y == pytest.approx(statistics.fmean(at))


def test_each_parity_sentence_says_what_its_numbers_show():
    """The sentence's verdict follows the file's means (solved at every length; solved only where trained; never
    above chance), and its numbers are those means."""
    rows = parity_rows()
    records = [ParityRecord(**{**r, "lengths": tuple(r["lengths"]), "accuracy": tuple(r["accuracy"])}) for r in rows]
    summary = parity_summary(records)
    trained = rows[0]["train_length"]
    for kind in dict.fromkeys(r["kind"] for r in rows):
        own = [r for r in rows if r["kind"] == kind]
        lengths = own[0]["lengths"]
        means = {n: statistics.fmean(r["accuracy"][i] for r in own) for i, n in enumerate(lengths)}
        sentence = parity_sentence(kind, summary[kind], trained)
        assert sentence.startswith(f"The {label(kind)} ")
        if means[trained] < NEAR_CHANCE:
            assert "did not learn parity" in sentence and f"{means[trained]:.2f}" in sentence
        elif min(means.values()) >= LEARNED:
            assert "learned the rule" in sentence
            assert f"{means[max(lengths)]:.2f} right after {max(lengths)}" in sentence
        else:
            assert f"{means[max(lengths)]:.2f}" in sentence and "learned the rule" not in sentence


def test_parity_sentences_for_made_up_curves():
    """Each verdict from a curve written by hand: solved everywhere, fitted only where trained, never learned."""
    def curve(*values):
        return {n: Spread(v, v, v, 1) for n, v in zip((8, 16, 32, 64), values)}

    assert "learned the rule" in parity_sentence("lstm", curve(1.0, 1.0, 0.99, 0.97), 8)
    fitted = parity_sentence("selective", curve(1.0, 0.8, 0.55, 0.5), 8)
    assert "fits its training length (1.00 after 8 bits)" in fitted and "from 16 bits" in fitted and "0.50" in fitted
    assert "did not learn parity" in parity_sentence("mlstm", curve(0.52, 0.5, 0.5, 0.49), 8)
    assert "part of the rule" in parity_sentence("gru", curve(0.97, 0.9, 0.8, 0.75), 8)
    assert "part of the rule" in parity_sentence("gru", curve(0.8, 0.75, 0.7, 0.65), 8)
    partly = parity_sentence("transformer", {8: Spread(0.72, 0.51, 0.93, 3), 64: Spread(0.49, 0.47, 0.5, 3)}, 8)
    assert partly == ("The Transformer learned parity only partly where it was trained, 0.72 right after 8 bits "
                      "(seeds from 0.51 to 0.93), and not at all beyond: 0.49 after 64, near chance (mean of 3 seeds).")
