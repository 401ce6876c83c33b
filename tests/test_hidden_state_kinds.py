"""The sLSTM, mLSTM, selective SSM and linear attention on the Hidden state page (issue 64): a slot of its own takes a
session's live-trained or uploaded model of the kind and shows what it carries, with its size counted by hand, and
a matrix memory is drawn row by row, each head's matrix beside the next."""

import re

import numpy as np
import torch

from rnnviz.charlm.checkpoint import checkpoint_bytes
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import build_model
from rnnviz.core.config import ModelConfig
from rnnviz.figures.hidden_state import carried_strips, diverging_rgb
from rnnviz.interpret import hidden_state as hs
from rnnviz.serving.live import LiveRun
from rnnviz.ui.hidden_state.sections import STEP
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from tests.apptest_helpers import instant_control, instant_shown, open_page, page_text

PAGE = "app_pages/hidden_state.py"
L, H, HEADS, E, K = 2, 16, 2, 8, 4  # tiny: layers, width, heads, embedding, the short convolution's width
D = H // HEADS


def carried_numbers(kind: str) -> int:
    """What a kind carries into the next step, counted by hand from the issue's table: per layer, the state's fields,
    and the short convolution's last K − 1 inputs (E wide into layer 1, H into the next)."""
    conv = (K - 1) * E + (K - 1) * H * (L - 1)
    per_layer = {"slstm": 4 * H,  # h, c, n, m
                 "mlstm": H * D + H + HEADS,  # C: a d × d matrix per head; n: d per head; m: one per head
                 "selective": H * 16,  # s: S = 16 numbers per channel
                 "linear_attention": H * D + H}[kind]  # S: a d × d matrix per head; z: d per head
    return L * per_layer + (0 if kind == "slstm" else conv)


def tiny(kind: str, corpus, **extra) -> TrainConfig:
    return TrainConfig(kind=kind, layers=L, hidden=H, n_head=HEADS, embed_dim=E, batch=2, seq_len=8, device="cpu",
                       forget_bias=None, **extra)


def shown_state(text: str, slot: str) -> tuple[int, int]:
    """(numbers, bytes) the page says the slot carries: the first sizes line after the slot's heading."""
    after = text[text.index(f"**{slot}** ("):]
    numbers, nbytes = re.search(r"\*\*([\d,]+) numbers, ([\d,]+) bytes\*\*", after).groups()
    return int(numbers.replace(",", "")), int(nbytes.replace(",", ""))


def strip_captions(at) -> list[str]:
    """The strips' captions at the t slider's stop (it answers in the browser: its view holds them)."""
    data = instant_control(at, STEP)
    parts = [inner for block in data["views"][data["index"]] for part in block.get("columns", []) for inner in part]
    return [block["caption"] for block in parts if "image" in block]


def test_each_state_kind_fills_a_slot_of_its_own_from_a_live_run_or_an_upload():
    corpus = load_builtin("english-docs")
    at = open_page(PAGE, timeout=120)
    assert not any(f"**{slot}** (" in instant_shown(at, STEP)[1] for slot in ("sLSTM", "mLSTM", "Selective SSM",
                                                                 "Linear attention"))  # none shipped: no slot
    rounds = ((("sLSTM", "slstm", {}), ("mLSTM", "mlstm", {})),
              (("Linear attention", "linear_attention", {"reset_state": True}), ("Selective SSM", "selective", {})))
    for (live_slot, live_kind, live_extra), (upload_slot, upload_kind, upload_extra) in rounds:
        run = LiveRun.create(tiny(live_kind, corpus, **live_extra), corpus)
        run.trainer.run(2)
        uploaded = Trainer(tiny(upload_kind, corpus, **upload_extra), corpus)
        uploaded.run(2)
        at.session_state[LIVE_RUN_KEY] = run
        at.file_uploader(key="hidden_state_upload").set_value(
            (f"{upload_kind}.pt", checkpoint_bytes(uploaded, "english-docs"), "application/octet-stream")).run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        text = page_text(at) + instant_shown(at, STEP)[1]
        for slot, kind, model, origin in ((live_slot, live_kind, run.trainer.model, "live-trained"),
                                          (upload_slot, upload_kind, uploaded.model, "uploaded")):
            parameters = sum(p.numel() for p in model.parameters())
            assert f"**{slot}** ({parameters:,} parameters, {origin}): what it carries" in text
            assert shown_state(text, slot) == (carried_numbers(kind), 4 * carried_numbers(kind)), slot  # float32
            assert at.selectbox(key=f"hidden_state_source_{slot}").value == ("live" if origin == "live-trained"
                                                                            else "uploaded")
        captions = strip_captions(at)
        for field in {"slstm": "hcnm", "mlstm": "Cnm", "selective": "s", "linear_attention": "Sz"}[live_kind]:
            assert any(c.startswith(f"{field} (layer {L}) · max") for c in captions), (live_kind, field)
        assert any(c.startswith(f"conv (layer {L}) · max") for c in captions)  # the mLSTM's or the SSM's inputs
        assert not any(re.match(r"(C|S|s|conv) \(layer \d\), s = ", c) for c in captions)  # rows, not positions
        assert any(rf"\text{{{'sLSTM' if live_kind == 'slstm' else 'linear attention'}:}}" in e.value
                   for e in at.latex)  # its update beside the other models'
    why = next(line for line in page_text(at).splitlines() if line.startswith("Why: "))
    assert "the Selective SSM" in why and "Linear attention" not in why  # trained from zero every chunk


def test_a_matrix_memory_is_drawn_row_by_row_with_each_heads_matrix_beside_the_next():
    torch.manual_seed(0)
    model = build_model(ModelConfig(vocab_size=11, kind="mlstm", layers=1, hidden=H, n_head=HEADS,
                                    embed_dim=E)).eval()
    ids = torch.randint(0, 11, (9,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        _, _, state = model(ids.view(1, -1))  # the model's own state after the text: C (1, heads, d, d)
    memory = state[0].C[0].numpy()
    carried, _ = hs.carried_state(model, ids, len(ids) - 1)
    strip = next(s for s in carried_strips(carried) if s.label.startswith("C (layer 1)"))
    assert strip.label == f"C (layer 1) · max |·| {np.abs(memory).max():.2g}"  # no positions: a matrix's rows
    height, width, _ = strip.image.shape
    row_px, unit_px = height // D, width // H
    assert height == D * row_px and row_px >= 2 and width == H * unit_px
    peak = np.abs(memory).max()
    for head in range(HEADS):
        for i in range(D):
            for j in range(D):
                pixel = strip.image[i * row_px, (head * D + j) * unit_px]
                expected = diverging_rgb(np.array([memory[head, i, j] / peak]))[0]
                assert np.array_equal(pixel, expected), (head, i, j)
