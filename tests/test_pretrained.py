"""The shipped models: each loads through the safe loader, is within the size limit, and scores the val loss
recorded in rnnviz/assets/models/MODELS.md to ±0.02 nats/char on the last 10% of its corpus."""

import pytest

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import TINY_SHAKESPEARE_FILE, Corpus, load_builtin
from rnnviz.charlm.pretrained import MAX_BYTES, MODELS_DIR, shipped_models, val_loss
from tests.apptest_helpers import ROOT

SHARED_SHAKESPEARE = ROOT.parent / "shared" / "data" / TINY_SHAKESPEARE_FILE


def recorded() -> list[dict]:
    rows = [vars(row) for row in shipped_models()]
    assert rows, "MODELS.md has no table of models"
    return rows


def test_every_shipped_file_is_recorded_and_small():
    rows = recorded()
    # captioner-*.pt and seq2seq-*.pt are recorded in tables of their own (tests/test_captioning_model.py and
    # tests/test_seq2seq.py)
    assert sorted(r["file"] for r in rows) == sorted(p.name for p in MODELS_DIR.glob("*.pt")
                                                     if not p.name.startswith(("captioner-", "seq2seq-")))
    assert {r["corpus"] for r in rows} == {"python-stdlib", "english-docs", "tiny-shakespeare"}
    for row in rows:
        size = (MODELS_DIR / row["file"]).stat().st_size
        assert size <= MAX_BYTES
        assert row["size"] == size


@pytest.mark.parametrize("row", recorded(), ids=lambda r: r["file"])
def test_val_loss_matches_the_recorded_value(row):
    checkpoint = load_checkpoint(MODELS_DIR / row["file"])
    assert checkpoint.corpus == row["corpus"]
    assert checkpoint.model.head.weight.dtype.is_floating_point and checkpoint.model.head.weight.itemsize == 4
    if row["corpus"] == "tiny-shakespeare":
        if not SHARED_SHAKESPEARE.exists():
            pytest.skip(f"{SHARED_SHAKESPEARE} is absent")
        corpus = Corpus("tiny-shakespeare", SHARED_SHAKESPEARE.read_text(encoding="utf-8"))
    else:
        corpus = load_builtin(row["corpus"])
    loss, chars = val_loss(MODELS_DIR / row["file"], corpus)
    assert chars == len(corpus.split()[1]) - 1  # every val character after the first is scored once
    assert loss == pytest.approx(row["val_loss"], abs=0.02)
