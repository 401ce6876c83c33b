"""Checkpoints: round trip, exact resume from a file, atomic writes, every bad file refused, the exported script."""

import io
import os
import subprocess
import sys
import zipfile

import pytest
import torch

from rnnviz.charlm.checkpoint import (
    FORMAT_VERSION,
    CheckpointError,
    checkpoint_bytes,
    export_script,
    load_checkpoint,
    resume_trainer,
    save_checkpoint,
)
from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import CharModel

TINY = dict(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu")


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:3000])


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    trainer = Trainer(TrainConfig(**TINY), corpus)
    trainer.run(4)
    trainer.evaluate()
    path = save_checkpoint(tmp_path_factory.mktemp("ckpt") / "m.pt", trainer)
    return trainer, path


def _payload(path):
    return torch.load(path, weights_only=True, map_location="cpu")


def _resave(payload, tmp_path):
    path = tmp_path / "edited.pt"
    torch.save(payload, path)
    return path


def test_round_trip(trained):
    trainer, path = trained
    checkpoint = load_checkpoint(path)
    assert checkpoint.config == trainer.config and checkpoint.vocab == trainer.vocab
    assert checkpoint.corpus == "docs" and checkpoint.step == 4
    assert checkpoint.history == trainer.history and checkpoint.evals == trainer.evals
    assert not checkpoint.model.training
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(checkpoint.model.state_dict()[name], value), name
    assert load_checkpoint(path.read_bytes()).step == 4
    assert load_checkpoint(io.BytesIO(checkpoint_bytes(trainer))).step == 4


def test_resume_from_a_file_is_bit_identical(corpus, tmp_path):
    config = TrainConfig(lr_decay_steps=8, **TINY)
    whole = Trainer(config, corpus)
    whole.run(9)
    first = Trainer(config, corpus)
    first.run(4)
    path = save_checkpoint(tmp_path / "half.pt", first)
    resumed = resume_trainer(load_checkpoint(path), corpus)
    resumed.run(5)
    for name, value in whole.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name


def test_without_the_optimizer_training_still_continues(trained, corpus, tmp_path):
    trainer, _ = trained
    path = save_checkpoint(tmp_path / "small.pt", trainer, include_optimizer=False)
    resumed = resume_trainer(load_checkpoint(path), corpus)
    assert len(resumed.run(2)) == 2 and resumed.step == 6


def test_save_is_atomic(trained, tmp_path, monkeypatch):
    trainer, good = trained
    path = tmp_path / "m.pt"
    path.write_bytes(good.read_bytes())

    def failing_save(obj, f):
        f.write(b"PK\x03\x04 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, trainer)
    monkeypatch.undo()
    assert load_checkpoint(path).step == 4  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]  # no temporary file left


def test_not_a_torch_file(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("just some text, not a checkpoint")
    with pytest.raises(CheckpointError, match="not a PyTorch checkpoint"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="empty"):
        load_checkpoint(b"")


def test_truncated_file(trained):
    _, path = trained
    raw = path.read_bytes()
    with pytest.raises(CheckpointError, match="truncated or damaged"):
        load_checkpoint(raw[: len(raw) // 2])


def test_wrong_format_version(trained, tmp_path):
    payload = _payload(trained[1])
    payload["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(CheckpointError, match="format version"):
        load_checkpoint(_resave(payload, tmp_path))


@pytest.mark.parametrize("change", ["missing", "extra"])
def test_missing_or_extra_key(trained, tmp_path, change):
    payload = _payload(trained[1])
    if change == "missing":
        del payload["vocab"]
    else:
        payload["surprise"] = 1
    with pytest.raises(CheckpointError, match="missing vocab" if change == "missing" else "unexpected surprise"):
        load_checkpoint(_resave(payload, tmp_path))


def test_shape_mismatch(trained, tmp_path):
    payload = _payload(trained[1])
    payload["config"]["hidden"] = 10
    with pytest.raises(CheckpointError, match="shapes do not match"):
        load_checkpoint(_resave(payload, tmp_path))
    payload = _payload(trained[1])
    payload["model"]["rnn.weight_ih_l1"] = torch.zeros(3)
    with pytest.raises(CheckpointError, match="unexpected"):
        load_checkpoint(_resave(payload, tmp_path))


class _Payload:
    """Unpickling this calls open(marker, "w"): code that runs at load time and leaves a file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_that_runs_code_is_refused_and_does_not_run(trained, tmp_path):
    marker = tmp_path / "pwned"
    payload = _payload(trained[1])
    payload["history"] = _Payload(marker)
    path = tmp_path / "evil.pt"
    torch.save(payload, path)
    assert zipfile.is_zipfile(path)
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(path)
    assert not marker.exists()
    # The payload is live: an unsafe load would have run it.
    control = tmp_path / "control"
    torch.save({"x": _Payload(control)}, tmp_path / "control.pt")
    torch.load(tmp_path / "control.pt", weights_only=False)  # noqa: S614 - deliberately unsafe, in a test
    assert control.exists()


def test_exported_script_trains_in_a_subprocess(trained, tmp_path):
    trainer, checkpoint_path = trained
    script = tmp_path / "train_lstm.py"
    source = export_script(trainer.config, trainer.vocab, script)
    imports = {line.split()[1].split(".")[0] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"argparse", "math", "os", "torch"}  # standalone: torch and the standard library only
    text = tmp_path / "text.txt"
    text.write_text(english_docs_text()[:2000])
    out = tmp_path / "weights.pt"
    run = subprocess.run(
        [sys.executable, str(script), str(text), "--steps", "3", "--init", str(checkpoint_path), "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "step 1: loss" in run.stdout and "step 3: loss" in run.stdout
    weights = torch.load(out, weights_only=True, map_location="cpu")
    model = CharModel(trainer.config.model_config(trainer.vocab.size))
    model.load_state_dict(weights, strict=True)  # the same architecture, parameter for parameter
    changed = any(not torch.equal(weights[k], v) for k, v in trainer.model.state_dict().items())
    assert changed  # it trained from the checkpoint's weights


def _script_module(config: TrainConfig, vocab, **options) -> dict:
    """The exported script's definitions (its main() is not run)."""
    namespace = {"__name__": "exported"}
    exec(compile(export_script(config, vocab, **options), "train_char_rnn.py", "exec"), namespace)  # noqa: S102
    return namespace


def test_the_exported_script_uses_the_runs_optimizer_adamw_with_its_weight_decay_groups(corpus):
    from rnnviz.charlm.train import make_optimizer

    config = TrainConfig(hidden=16, embed_dim=8, optimizer="adamw", lr=5e-3, weight_decay=0.1)
    script = _script_module(config, corpus.vocab)
    model = script["CharModel"]()
    exported = script["make_optimizer"](model.parameters())
    engine = make_optimizer("adamw", CharModel(config.model_config(corpus.vocab.size)).parameters(), config.lr,
                            config.weight_decay)
    assert type(exported) is type(engine) is torch.optim.AdamW
    shape = [(len(g["params"]), g["weight_decay"], g["betas"], g["lr"]) for g in exported.param_groups]
    assert shape == [(len(g["params"]), g["weight_decay"], g["betas"], g["lr"]) for g in engine.param_groups]


def test_the_exported_script_follows_the_runs_schedule_and_cools_down_at_its_end_when_the_run_would(corpus):
    cosine = TrainConfig(hidden=16, embed_dim=8, lr=1e-2, lr_decay_steps=100, warmup_steps=10)
    lr_at = _script_module(cosine, corpus.vocab)["lr_at"]
    assert [lr_at(s, 1000) for s in (0, 9, 10, 55, 100, 500)] == pytest.approx(
        [cosine.lr_at(s) for s in (0, 9, 10, 55, 100, 500)])
    steady = TrainConfig(hidden=16, embed_dim=8, lr=1e-2)  # the anytime preset's kind of schedule: no decay
    assert _script_module(steady, corpus.vocab)["lr_at"](999, 1000) == 1e-2  # without the cool-down: steady
    lr_at = _script_module(steady, corpus.vocab, cool_down=True)["lr_at"]
    # --steps 1000: steady for 800 steps, then 1e-2 · (1000 − step)/200 down to 1e-2/200 at the last step
    assert [lr_at(s, 1000) for s in (0, 799, 800, 900, 999)] == pytest.approx([1e-2, 1e-2, 1e-2, 5e-3, 5e-5])
    # a run with its own decay keeps it: the cool-down is for a steady rate only
    assert _script_module(cosine, corpus.vocab, cool_down=True)["lr_at"](500, 1000) == pytest.approx(cosine.lr_at(500))


def test_an_optimizer_moment_of_another_shape_is_refused_when_resumed_not_at_the_first_step(trained, corpus,
                                                                                           tmp_path):
    payload = _payload(trained[1])
    first = next(iter(payload["optimizer"]["state"]))
    payload["optimizer"]["state"][first]["exp_avg"] = torch.zeros(3)
    checkpoint = load_checkpoint(_resave(payload, tmp_path))
    with pytest.raises(CheckpointError, match=r"optimizer state cannot be resumed: its exp_avg is \(3,\) for a "
                                              r"weight of \("):
        resume_trainer(checkpoint, corpus)


def test_a_random_state_torch_cannot_take_is_refused_on_load(trained, tmp_path):
    payload = _payload(trained[1])
    payload["rng"]["cpu"] = torch.zeros(3, dtype=torch.uint8)  # torch's CPU state is 5,056 bytes
    with pytest.raises(CheckpointError, match="random state is malformed"):
        load_checkpoint(_resave(payload, tmp_path))
