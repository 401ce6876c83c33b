"""Your own model and your own states in the explorer, in a real browser: a plain PyTorch state_dict is refused
until its vocabulary comes, then explored; states with their text open without a model. The screenshot goes to
docs/screenshots/explorer-states.png for the README."""

import json
import re

import numpy as np
import pytest
import torch
from playwright.sync_api import expect
from torch import nn

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.interpret.finder import trace_cells
from rnnviz.ui.kit.models import PRETRAINED_DIR, held_out_text
from tests.e2e.harness import ROOT, open_app_page, screenshot_from, wait_idle

DOCS = ROOT / "docs" / "screenshots"
FIRST_LOAD_MS = 180_000  # the first visit traces and ranks 10k characters twice (trained and random model)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A plain LSTM's state_dict and vocabulary, and the shipped Python LSTM's h and c over 3,000 held-out
    characters as an .npz with its text."""
    folder = tmp_path_factory.mktemp("own")
    text = held_out_text(load_builtin("python-stdlib"), 3000)
    chars = sorted(set(text))
    torch.manual_seed(0)
    plain = nn.ModuleDict({"embedding": nn.Embedding(len(chars), 8), "lstm": nn.LSTM(8, 16, batch_first=True),
                           "fc": nn.Linear(16, len(chars))})
    torch.save(plain.state_dict(), folder / "my_lstm.pt")
    (folder / "vocab.json").write_text(json.dumps(chars))
    checkpoint = load_checkpoint(PRETRAINED_DIR / "lstm-python-stdlib.pt")
    trace = trace_cells(checkpoint.model, checkpoint.vocab.encode(text))
    np.savez(folder / "states.npz", h=trace.block(0, "h"), c=trace.block(0, "c"))  # as a user's script saves them
    (folder / "input.txt").write_text(text, encoding="utf-8")
    return folder


def test_a_plain_model_and_states_without_a_model_are_explored(page, base_url, files):
    open_app_page(page, base_url, "hidden-cell-explorer", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("Upload a model, or states without one").click()
    uploads = main.locator("[data-testid='stFileUploaderDropzoneInput']")
    uploads.nth(0).set_input_files(str(files / "my_lstm.pt"))
    expect(main.locator("[data-testid='stAlertContentError']")).to_contain_text("vocabulary", timeout=60_000)
    uploads.nth(1).set_input_files(str(files / "vocab.json"))
    expect(main.get_by_text("Read a 1 × 16 LSTM with an 8-wide embedding", exact=False)).to_be_visible(timeout=60_000)
    model_box = main.locator(".st-key-explorer_source").get_by_role("combobox")
    expect(model_box).to_have_value(re.compile(r"^Uploaded checkpoint \(my_lstm"))
    wait_idle(page)
    main.get_by_role("tab", name="States without a model").click()
    uploads.nth(2).set_input_files(str(files / "states.npz"))
    wait_idle(page)
    uploads.nth(3).set_input_files(str(files / "input.txt"))
    expect(model_box).to_have_value("States from a file: states.npz (no model)", timeout=60_000)
    wait_idle(page)
    expect(main.get_by_text("3,000 characters from states.npz's text, one state per character")).to_be_visible()
    expect(main.get_by_role("heading", name="2. Find cells automatically")).to_be_visible()
    expect(main.get_by_role("heading", name="8. The state's path through the text")).to_be_visible()
    expect(main.get_by_role("heading", name="4. Intervene")).to_have_count(0)
    expect(main.get_by_text("The same ranking for the same states, each unit shifted in time")).to_be_visible()
    main.get_by_text("Upload a model, or states without one").click()  # folded away for the picture
    wait_idle(page)
    screenshot_from(page, "[data-testid='stWidgetLabel']", "Model", DOCS / "explorer-states.png", margin_px=70)
    assert page.locator("[data-testid='stException']").count() == 0


def test_crafted_uploads_are_refused_in_words_within_seconds(page, base_url, tmp_path):
    """Issue 60's probe in the browser: a 2 KB state_dict of zero-stride views (a 64 M-parameter LSTM) and an HDF5
    states file whose gzip chunk inflates to 1 GB are each refused in words, quickly, and the page goes on."""
    from tests.test_upload_bounds import GIB, h5_with_one_chunk
    from tests.upload_helpers import CHARS, torch_bytes, vocab_json, zlib_zeros

    views = {"lstm.weight_ih_l0": torch.zeros(1).expand(16000, len(CHARS)),
             "lstm.weight_hh_l0": torch.zeros(1).expand(16000, 4000),
             "lstm.bias_ih_l0": torch.zeros(1).expand(16000), "lstm.bias_hh_l0": torch.zeros(1).expand(16000),
             "fc.weight": torch.zeros(1).expand(len(CHARS), 4000), "fc.bias": torch.zeros(len(CHARS))}
    (tmp_path / "views.pt").write_bytes(torch_bytes(views))
    (tmp_path / "vocab.json").write_bytes(vocab_json())
    (tmp_path / "bomb.h5").write_bytes(h5_with_one_chunk((200, 16), zlib_zeros(GIB)))
    (tmp_path / "text.txt").write_text("x" * 200, encoding="utf-8")
    open_app_page(page, base_url, "hidden-cell-explorer", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("Upload a model, or states without one").click()
    uploads = main.locator("[data-testid='stFileUploaderDropzoneInput']")
    uploads.nth(1).set_input_files(str(tmp_path / "vocab.json"))
    wait_idle(page)
    uploads.nth(0).set_input_files(str(tmp_path / "views.pt"))
    expect(main.locator("[data-testid='stAlertContentError']")).to_contain_text("a stride of 0", timeout=5_000)
    wait_idle(page)
    main.get_by_role("tab", name="States without a model").click()
    uploads.nth(3).set_input_files(str(tmp_path / "text.txt"))
    wait_idle(page)
    uploads.nth(2).set_input_files(str(tmp_path / "bomb.h5"))
    expect(main.locator("[data-testid='stAlertContentError']").filter(has_text="bomb.h5")).to_contain_text(
        "inflates to more than", timeout=5_000)
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
