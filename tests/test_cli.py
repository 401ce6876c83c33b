"""The installed ``rnnviz`` command: it works from any folder, finds the shipped models through the package,
and installs from a wheel into a fresh environment."""

import csv
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import english_docs_text
from rnnviz.charlm.pretrained import MODELS_DIR, shipped_models
from rnnviz.cli import inspect_main, sample_main
from rnnviz.interpret.colortext import describe_char
from rnnviz.interpret.surprisal import predictions
from tests.apptest_helpers import ROOT

RNNVIZ = Path(sys.executable).parent / "rnnviz"  # the console script that make installs into .venv


def _run(command: list, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing but the install finds rnnviz
    return subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True,
                          env={**env, "RNNVIZ_THREADS": "1"}, timeout=timeout)


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A user's own folder, outside the repository."""
    assert not tmp_path.is_relative_to(ROOT)
    return tmp_path


def test_the_command_is_installed():
    assert RNNVIZ.is_file(), "make installs the project into .venv (pip install -e .), which puts rnnviz on its PATH"


def test_train_then_sample_from_a_folder_outside_the_repository(elsewhere):
    (elsewhere / "notes.txt").write_text(english_docs_text()[:4000], encoding="utf-8")
    run = _run([RNNVIZ, "train", "--corpus", "notes.txt", "--hidden", "16", "--embed-dim", "8", "--batch", "4",
                "--seq-len", "16", "--steps", "6", "--eval-every", "3", "--device", "cpu", "--quiet",
                "--out", "notes.pt"], cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    assert "notes.txt: 4,000 chars" in run.stderr and "saved notes.pt" in run.stderr
    assert (elsewhere / "notes.pt").is_file()  # relative to the user's folder, not the repository's

    sample = _run([RNNVIZ, "sample", "notes.pt", "--prime", "The", "--length", "30", "--temperature", "0"],
                  cwd=elsewhere)
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.startswith("The") and len(sample.stdout.rstrip("\n")) == 33


def test_models_lists_the_shipped_models_with_their_val_loss(elsewhere):
    run = _run([RNNVIZ, "models"], cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    for shipped in shipped_models():
        line = next(line for line in run.stdout.splitlines() if shipped.file in line)
        assert shipped.corpus in line and f"val {shipped.val_loss:.4f}" in line


def test_a_shipped_model_samples_by_name_from_anywhere(elsewhere):
    run = _run([RNNVIZ, "sample", "lstm-python-stdlib.pt", "--prime", "def ", "--length", "20",
                "--temperature", "0"], cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("def ") and len(run.stdout.rstrip("\n")) == 24


def test_sample_top_p_reaches_the_engine(elsewhere, capsys):
    """The installed command takes --top-p; in process, --top-p 1 is off (the same draws as without it), a tiny
    nucleus keeps only the most likely character (greedy), and bad values are argparse errors (exit 2)."""
    run = _run([RNNVIZ, "sample", "lstm-python-stdlib.pt", "--prime", "def ", "--length", "40", "--temperature",
                "1.5", "--top-k", "20", "--top-p", "0.5"], cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("def ") and len(run.stdout.rstrip("\n")) == 44

    def sample(*extra):
        assert sample_main(["lstm-python-stdlib.pt", "--prime", "def ", "--length", "40", "--seed", "3", *extra]) == 0
        return capsys.readouterr().out

    hot = sample("--temperature", "1.5")
    assert sample("--temperature", "1.5", "--top-p", "1") == hot
    assert sample("--temperature", "1.5", "--top-p", "1e-9") == sample("--temperature", "0")
    assert sample("--temperature", "1.5", "--top-p", "0.5") != hot
    for bad, words in (("1.5", "1.5 is not in (0, 1]"), ("nan", "nan is not in (0, 1]"),
                       ("most", "'most' is not a number")):
        with pytest.raises(SystemExit) as exit_info:
            sample("--top-p", bad)
        assert exit_info.value.code == 2 and f"argument --top-p: {words}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--corpus", "missing.txt"], "or a text file; 'missing.txt' is neither"),
        (["train", "--corpus", "binary.dat"], "binary file"),
        (["train", "--preset", "nope"], "invalid choice: 'nope'"),
        (["sample", "missing.pt"], "error:"),
        (["sample", "lstm-python-stdlib.pt", "--top-p", "0"], "argument --top-p: 0 is not in (0, 1]"),
        (["models", "evaluate", "missing.pt"], "error:"),
        (["inspect", "lstm-python-stdlib.pt", "--text", "snowman.txt"], "Or pass --drop-unknown"),
        (["no-such-command"], "unknown command 'no-such-command'"),
    ],
    ids=["missing corpus", "binary corpus", "unknown preset", "missing checkpoint", "top-p 0",
         "evaluate missing", "inspect unknown characters", "unknown command"],
)
def test_bad_input_exits_2_with_words_and_no_traceback(elsewhere, args, message):
    (elsewhere / "binary.dat").write_bytes(bytes(range(256)) * 4)
    (elsewhere / "snowman.txt").write_text("def f(☃): pass\n", encoding="utf-8")
    run = _run([RNNVIZ, *args], cwd=elsewhere)
    assert run.returncode == 2
    assert message in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_inspect_writes_every_characters_surprisal_and_guesses_as_csv_and_the_strip_as_html(elsewhere, capsys,
                                                                                             monkeypatch):
    text = 'def add(a, b):\n    """Add <b>two</b> numbers."""\n    return a + b\n'
    (elsewhere / "add.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    assert inspect_main(["lstm-python-stdlib.pt", "--text", "add.py", "--top", "3"]) == 0
    checkpoint = load_checkpoint(MODELS_DIR / "lstm-python-stdlib.pt")
    found = predictions(checkpoint.model, checkpoint.vocab.encode(text), 3)
    assert f"mean surprisal {found.loss():.4f} nats/char" in capsys.readouterr().out
    with (elsewhere / "add-surprisal.csv").open(encoding="utf-8") as rows:
        table = list(csv.DictReader(rows))
    assert len(table) == len(text) and table[0]["surprisal_nats"] == ""
    for t in (1, 20, len(text) - 1):
        row = table[t]
        assert row["character"] == describe_char(text[t]) and int(row["rank"]) == found.rank[t]
        assert float(row["surprisal_nats"]) == pytest.approx(found.surprisal[t], abs=1e-6)
        assert row["guess_1"] == describe_char(checkpoint.vocab.chars[found.guess_ids[t, 0]])
        assert float(row["p_3"]) == pytest.approx(found.guess_probs[t, 2], abs=1e-6)
    page = (elsewhere / "add-surprisal.html").read_text(encoding="utf-8")
    assert ">&lt;</span>" in page and "<b>" not in page  # the text's "<b>" is shown, character by character
    assert page.count("surprisal ") >= len(text) - 1  # a tooltip per predicted character


def test_python_dash_m_rnnviz_is_the_same_command(elsewhere):
    run = _run([sys.executable, "-m", "rnnviz", "experiments", "--help"], cwd=elsewhere)
    assert run.returncode == 0 and run.stdout.startswith("usage: rnnviz experiments")


@pytest.mark.slow
def test_a_wheel_installs_into_a_fresh_environment_and_finds_its_models(tmp_path):
    """Build a wheel from a copy of the sources, install it (without dependencies) into a new virtual
    environment that borrows .venv's installed packages, and list the models from there."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements.txt"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "rnnviz", source / "rnnviz", ignore=shutil.ignore_patterns("__pycache__"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist",
                  source], cwd=tmp_path, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("rnnviz-*.whl")

    fresh = tmp_path / "fresh"
    made = _run([sys.executable, "-m", "venv", "--without-pip", fresh], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    fresh_python = fresh / "bin" / "python"
    fresh_site = Path(_run([fresh_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           cwd=tmp_path).stdout.strip())
    # Borrow torch, streamlit and the rest from .venv: a plain path line, so .venv's own .pth files (the
    # editable install of this repository among them) are not read.
    (fresh_site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run([sys.executable, "-m", "pip", "--python", fresh_python, "install", "--no-deps", "--no-index",
                      wheel], cwd=tmp_path, timeout=300)
    assert installed.returncode == 0, installed.stderr

    where = _run([fresh_python, "-c", "import rnnviz; print(rnnviz.__file__)"], cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(fresh_site), where.stdout + where.stderr
    models = _run([fresh / "bin" / "rnnviz", "models"], cwd=tmp_path)
    assert models.returncode == 0, models.stderr
    assert str(fresh_site / "rnnviz" / "assets" / "models") in models.stdout
    assert all(shipped.file in models.stdout for shipped in shipped_models())
    for shipped in shipped_models():
        assert (fresh_site / "rnnviz" / "assets" / "models" / shipped.file).stat().st_size == shipped.size
