"""The sLSTM, mLSTM, selective SSM and linear attention as character models (issue 64): the Trainer trains them with
their state carried across chunks, checkpoints keep them, sampling and beam search step them, the CLI trains and
samples each, the bounded reader refuses an oversized one before building it, and the Hidden state readers see
their whole state."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.charlm.checkpoint import CheckpointError, checkpoint_bytes, load_checkpoint, resume_trainer
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.presets import ALL_PRESETS
from rnnviz.charlm.sample import beam_search, generate
from rnnviz.charlm.speed import count_parameters
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import build_model
from rnnviz.core.config import ModelConfig
from rnnviz.interpret.hidden_state import carried_state, probe_features
from rnnviz.limits import MAX_PARAMETERS
from tests.upload_helpers import resaved, within_bounds

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("slstm", "mlstm", "selective", "linear_attention")
TINY = dict(hidden=16, embed_dim=8, n_head=4, batch=4, seq_len=16, device="cpu", forget_bias=None)
V = 13  # vocabulary of the model-level tests
HEADS, K, S = 4, 4, 16  # the layers' heads, short convolution width and selective state size as CharModel builds them


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


def tiny_model(kind: str, layers: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(V, kind=kind, layers=layers, hidden=16, embed_dim=8)).eval()


def ids(shape, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", KINDS)
def test_the_trainer_trains_each_kind_and_its_loss_falls(corpus, kind):
    trainer = Trainer(TrainConfig(kind=kind, lr=1e-2, **TINY), corpus)
    trainer.run(30)
    first, last = (sum(r.loss for r in part) / 5 for part in (trainer.history[:5], trainer.history[-5:]))
    assert first == pytest.approx(math.log(trainer.vocab.size), abs=0.5)  # near a uniform guess at the start
    assert last < first - 0.5 and trainer.halt is None


@pytest.mark.parametrize("kind", KINDS)
def test_the_trainer_carries_the_state_from_one_chunk_into_the_next(corpus, kind):
    trainer = Trainer(TrainConfig(kind=kind, **TINY), corpus)
    x0 = trainer.batcher.inputs[:, :16]
    x1, y1 = trainer.batcher.inputs[:, 16:32], trainer.batcher.targets[:, 16:32]
    with torch.no_grad():
        _, _, carried = trainer.model(x0)  # where chunk 0 ends, under the weights before the first step
    trainer.run(1)
    with torch.no_grad():
        _, expected, _ = trainer.model(x1, y1, carried)
        _, fresh, _ = trainer.model(x1, y1)
    assert trainer.run(1)[0].loss == pytest.approx(expected.item(), rel=1e-5)
    assert abs(expected.item() - fresh.item()) > 1e-4  # the carried state changes what the chunk costs


@pytest.mark.parametrize("kind", KINDS)
def test_a_state_carried_across_chunks_equals_one_long_forward(kind):
    model, x = tiny_model(kind), ids((3, 20))
    with torch.no_grad():
        whole, _, final = model(x)
        first, _, carried = model(x[:, :7])
        second, _, chunked = model(x[:, 7:], state=carried)
    assert_close(torch.cat([first, second], dim=1), whole, rtol=1e-5, atol=1e-5)
    for a, b in zip(sum(map(tuple, chunked), ()), sum(map(tuple, final), ())):
        assert_close(a, b, rtol=1e-5, atol=1e-5)
    rows = torch.tensor([2, 0])  # beam search keeps the states of some sequences: the same as running them alone
    with torch.no_grad():
        alone = model(x[rows, :7])[2]
    for a, b in zip(sum(map(tuple, model.select_rows(carried, rows)), ()), sum(map(tuple, alone), ())):
        assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_sampling_and_a_beam_of_one_follow_the_whole_forward_s_argmax(corpus, kind):
    model = tiny_model(kind, layers=1)
    vocab = Corpus("v", "abcdefghijklm").vocab  # 13 characters
    text = "abcab"
    written = generate(model, vocab, text, 8, temperature=0)
    expected = text
    with torch.no_grad():
        for _ in range(8):  # the whole text read again from a zero state for every character
            expected += vocab.chars[int(model(vocab.encode(expected).view(1, -1))[0][0, -1].argmax())]
    assert text + written == expected
    assert beam_search(model, vocab, text, 8, beam_width=1)[0].text == written
    beams = beam_search(model, vocab, text, 4, beam_width=3)
    with torch.no_grad():  # each beam's log-probability, scored by one forward over prime + beam
        for beam in beams:
            full = vocab.encode(text + beam.text).view(1, -1)
            log_p = F.log_softmax(model(full)[0][0].double(), -1)
            score = sum(log_p[len(text) - 1 + j, full[0, len(text) + j]] for j in range(4))
            assert beam.log_prob == pytest.approx(float(score), abs=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpoint_keeps_the_model_and_its_carried_state_and_resumes_exactly(corpus, kind):
    config = TrainConfig(kind=kind, layers=2, **TINY)
    whole = Trainer(config, corpus)
    whole.run(5)
    first = Trainer(config, corpus)
    first.run(3)
    raw = checkpoint_bytes(first)
    checkpoint = load_checkpoint(raw)
    x = ids((2, 12))
    with torch.no_grad():
        assert torch.equal(checkpoint.model(x)[0], first.model.eval()(x)[0])
    resumed = resume_trainer(checkpoint, corpus)
    for a, b in zip(sum(map(tuple, resumed.state), ()), sum(map(tuple, first.state), ())):
        assert torch.equal(a, b)
    resumed.run(2)
    assert [r.loss for r in resumed.history] == [r.loss for r in whole.history]
    lost = resaved(raw, lambda payload: payload["carried_state"].pop())
    with pytest.raises(CheckpointError, match="carried state does not fit its model"):
        load_checkpoint(lost)


def count_by_hand(kind: str, vocab: int, embed: int, hidden: int, layers: int) -> int:
    """Parameters of a CharModel of ``kind``, from the layers' equations: embedding V·E, readout H·V + V, and per
    layer reading D numbers (E, then H): the sLSTM's W (4H × D), b (4H) and block-diagonal R (4 gates × h heads of
    d × d); the short convolution's D·K weights and D biases; the mLSTM's q, k, ĩ, f̃ from x̃ and v, o from x; the
    selective SSM's u, Δ, B, C from x̃, the gate from x, A (H × S) and D (H); linear attention's q, k from x̃ and v."""
    total = vocab * embed + hidden * vocab + vocab
    d = hidden // HEADS
    for layer in range(layers):
        width = embed if layer == 0 else hidden
        conv = width * K + width
        total += {"slstm": 4 * hidden * width + 4 * hidden + 4 * HEADS * d * d,
                  "mlstm": conv + (width + 1) * (2 * hidden + 2 * HEADS) + (width + 1) * 2 * hidden,
                  "selective": conv + (width + 1) * (2 * hidden + 2 * S) + (width + 1) * hidden + hidden * S + hidden,
                  "linear_attention": conv + (width + 1) * 2 * hidden + (width + 1) * hidden}[kind]
    return total


@pytest.mark.parametrize("kind", KINDS)
def test_the_parameter_count_is_the_hand_count_and_an_oversized_config_is_refused_before_it_is_built(corpus, kind):
    assert count_parameters(TrainConfig(kind=kind, layers=2, hidden=32, embed_dim=8), 30) == \
        count_by_hand(kind, 30, 8, 32, 2)
    trainer = Trainer(TrainConfig(kind=kind, **TINY), corpus)
    trainer.run(1)

    def wide(payload):
        payload["config"]["hidden"] = 100_000

    with within_bounds(), pytest.raises(CheckpointError) as refusal:
        load_checkpoint(resaved(checkpoint_bytes(trainer), wide))
    match = re.search(rf"holds ([\d,]+) parameters, ([\d.,]+)× the {MAX_PARAMETERS:,} a model may have here",
                      str(refusal.value))
    assert int(match[1].replace(",", "")) == count_by_hand(kind, trainer.vocab.size, 8, 100_000, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_the_hidden_state_readers_see_every_tensor_of_the_state_at_every_step(kind):
    from rnnviz.interpret.hidden_state import state_steps

    model, x = tiny_model(kind), ids((12,), seed=2)
    d = 16 // HEADS
    per_layer = {"slstm": [16] * 4, "mlstm": [HEADS * d * d, HEADS * d, HEADS, (K - 1) * 8],
                 "selective": [16 * S, (K - 1) * 8], "linear_attention": [HEADS * d * d, HEADS * d, (K - 1) * 8]}[kind]
    second = [n if n != (K - 1) * 8 else (K - 1) * 16 for n in per_layer]  # layer 2 reads H = 16 numbers, not E = 8
    numbers = sum(per_layer) + sum(second)
    carried, _ = carried_state(model, x, 5)
    assert [t.numel for t in carried.tensors] == per_layer + second and carried.nbytes == 4 * numbers
    steps = state_steps(model, x)
    assert steps.nbytes == 4 * numbers and len(steps.layers) == 2
    with torch.no_grad():
        for t in (0, 5, 11):  # the state after character t, by the fast path (the parallel form or the scan)
            _, _, final = model(x[: t + 1].view(1, -1))
            for layer, layer_state in enumerate(final):
                for field, value in zip(layer_state._fields, layer_state):
                    assert_close(torch.from_numpy(steps.layers[layer][field][t]), value[0], rtol=1e-4, atol=1e-5,
                                 msg=f"{field} of layer {layer} after character {t}")
    features, _ = probe_features(model, x)
    assert tuple(features[0].values.shape) == (12, numbers)


def test_each_kind_s_preset_builds_within_the_live_parameter_limit():
    from rnnviz.charlm.presets import KIND_PRESETS

    for kind, name in KIND_PRESETS.items():
        preset = ALL_PRESETS[name]
        assert preset.config.kind == kind and preset.corpus == "tiny-shakespeare"
        assert count_parameters(preset.config, 65) < MAX_PARAMETERS


def test_the_cli_trains_and_samples_each_kind_in_one_process(tmp_path):
    (tmp_path / "notes.txt").write_text(english_docs_text()[:4000], encoding="utf-8")
    script = (
        "from rnnviz.__main__ import main\n"
        f"for kind in {KINDS!r}:\n"
        "    for argv in (['train', '--kind', kind, '--corpus', 'notes.txt', '--hidden', '16', '--embed-dim', '8',\n"
        "                  '--batch', '4', '--seq-len', '16', '--steps', '4', '--eval-every', '2', '--device', 'cpu',\n"
        "                  '--quiet', '--out', kind + '.pt'],\n"
        "                 ['sample', kind + '.pt', '--prime', 'The', '--length', '20', '--temperature', '0'],\n"
        "                 ['sample', kind + '.pt', '--prime', 'The', '--length', '3', '--beam', '2']):\n"
        "        print(f'exit {main(argv)}', flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RNNVIZ_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=180)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("exit 0") == 3 * len(KINDS), run.stdout + run.stderr
    for label in ("sLSTM", "mLSTM", "selective SSM", "linear attention"):  # each run's first line names its kind
        assert re.search(rf"; \d×16 {label}, [\d,]+ parameters", run.stderr), run.stderr
    assert run.stdout.count("--- beam") == 2 * len(KINDS)
    for kind in KINDS:
        checkpoint = load_checkpoint(tmp_path / f"{kind}.pt")
        assert checkpoint.config.kind == kind and checkpoint.step == 4
        assert "The" + generate(checkpoint.model, checkpoint.vocab, "The", 20, temperature=0) + "\n" in run.stdout

