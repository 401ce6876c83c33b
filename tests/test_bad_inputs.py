"""The bad-input matrix: every page answers a bad input with a plain-words st.error or st.warning, shows no
exception, and leaves the session's trained model, corpus, uploaded checkpoint and history as they were.

Each row opens a fresh session that already holds a live run (a small LSTM trained on "hello") and an
uploaded checkpoint, as a student's session would, then drives one bad value through the path a user has:
a widget, an upload, or the query string of a shared link. Where a widget cannot produce the bad value at
all (a bounded slider or number input), ``test_bounded_widgets_refuse_the_value`` asserts the bound instead.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from rnnviz.charlm.checkpoint import checkpoint_bytes, load_checkpoint
from rnnviz.charlm.corpus import TINY_SHAKESPEARE_BYTES, TINY_SHAKESPEARE_FILE, load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.live import LiveRun, LiveSettings
from rnnviz.serving.slots import TrainingSlots
from rnnviz.ui.kit.corpora import builtin_corpus
from rnnviz.ui.kit.models import LIVE_RUN_KEY, UPLOADED_KEY
from tests.apptest_helpers import APP, TIMEOUT, page_text
from tests.conftest import serve_on_loopback

HAND, GRADIENTS, GATES, STACKED = ("app_pages/hand_built_rnn.py", "app_pages/gradient_decay.py",
                                   "app_pages/lstm_gates.py", "app_pages/stacked_rnns.py")
LIVE, EXPLORER, MEMORY = ("app_pages/live_training.py", "app_pages/hidden_cell_explorer.py",
                          "app_pages/memory_experiments.py")
ACTIVE_CORPUS = "live_training_corpus"
SHAKESPEARE = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"
CLOSED_PORT_URL = "http://127.0.0.1:9/input.txt"  # nothing listens on the discard port: "offline"


def key(name: str) -> str:
    return f"live_training_{name}"


# --- the session a student has built up --------------------------------------------------------------------


def small_trainer(kind: str = "lstm", steps: int = 30) -> Trainer:
    trainer = Trainer(TrainConfig(kind=kind, hidden=16, embed_dim=8, batch=1, seq_len=4, lr=0.03, device="cpu"),
                      load_builtin("hello"))
    trainer.run(steps)
    return trainer


@pytest.fixture(scope="module")
def live_run() -> LiveRun:
    """A paused run on "hello" (V = 4) with a few chunks behind it, as the page leaves one after Step."""
    run = LiveRun.create(TrainConfig(hidden=16, embed_dim=8, batch=1, seq_len=4, lr=0.03, device="cpu"),
                         load_builtin("hello"), LiveSettings(step_budget=500, sample_every=10, eval_chars=100))
    while run.step < 30:
        run.step_once(TrainingSlots(1), "me", 0.2)
    return run


@pytest.fixture(scope="module")
def good_checkpoint() -> bytes:
    return checkpoint_bytes(small_trainer(), "hello")


@pytest.fixture(scope="module")
def uploaded(good_checkpoint):
    return load_checkpoint(good_checkpoint)


def weights_digest(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def snapshot(state) -> dict:
    """What must survive a bad input: the live run (its step, weights, history, samples, status), the
    uploaded checkpoint and the corpus the next run would train on."""
    shot = {}
    run = state[LIVE_RUN_KEY] if LIVE_RUN_KEY in state else None
    if run is not None:
        shot["run"] = (id(run), run.step, weights_digest(run.trainer.model), len(run.trainer.history),
                       [s.step for s in run.samples], [s for s, _ in run.snapshots], str(run.status))
    checkpoint = state[UPLOADED_KEY] if UPLOADED_KEY in state else None
    if checkpoint is not None:
        shot["uploaded"] = (id(checkpoint), checkpoint.step, weights_digest(checkpoint.model))
    corpus = state[ACTIVE_CORPUS] if ACTIVE_CORPUS in state else None
    shot["corpus"] = None if corpus is None else (id(corpus), corpus.name, len(corpus))
    return shot


# --- the rows ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """One bad input: where it goes in, how, and the words the page must answer with."""

    page: str
    says: str  # a phrase of the st.error or st.warning expected
    act: Callable | None = None  # act(at, ctx) drives the bad value in and reruns; None: the link does it
    prepare: Callable | None = None  # good steps before the bad one (choose a corpus, open the uploader)
    query: dict = field(default_factory=dict)  # query string of a shared link
    env: dict = field(default_factory=dict)  # environment for the row ({garbage} is filled in)
    with_run: bool = True  # False: a session that has not trained yet (only the corpus must survive)
    loads: bool = False  # True: the upload itself is good and becomes the uploaded model (the rest stays)


def widget(kind: str, name: str, value):
    def act(at, ctx):
        getattr(at, kind)(key=name).set_value(value(ctx) if callable(value) else value).run()
    return act


def click(name: str):
    def act(at, ctx):
        at.button(key=name).click().run()
    return act


def steps(*acts):
    def act(at, ctx):
        for a in acts:
            a(at, ctx)
    return act


def upload(name: str, make: Callable, filename: str = "bad.txt"):
    def act(at, ctx):
        at.file_uploader(key=name).set_value((filename, make(ctx), "application/octet-stream")).run()
    return act


def use_text_upload(at, ctx):
    at.radio(key=key("source")).set_value("Upload a .txt file").run()


def use_paste(at, ctx):
    at.radio(key=key("source")).set_value("Paste text").run()


def use_hello(at, ctx):
    at.selectbox(key=key("builtin")).set_value("hello").run()


def sample_with(**values):
    """The sampling widgets of the live page set one by one, in order (the live "hello" model is sampled)."""
    def act(at, ctx):
        for name, value in values.items():
            next(w for w in at.main if getattr(w, "key", None) == key(name)).set_value(value)
            at.run()
    return act


def checkpoint_variant(change: Callable[[dict], object]):
    """A real checkpoint's fields, changed by ``change``, saved again as a .pt file."""
    def make(ctx):
        payload = torch.load(io.BytesIO(ctx["checkpoint"]), weights_only=True)
        payload = change(payload) or payload
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        return buffer.getvalue()
    return make


def with_config(**changes):
    def change(payload):
        payload["config"] = {**payload["config"], **changes}
    return change


def gru_weights_in_an_lstm(payload):
    gru = checkpoint_variant(lambda p: None)({"checkpoint": checkpoint_bytes(small_trainer("gru", 1), "hello")})
    payload["model"] = torch.load(io.BytesIO(gru), weights_only=True)["model"]


class Evil:
    """Unpickling this creates the marker file: what a malicious checkpoint would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def malicious(ctx):
    buffer = io.BytesIO()
    torch.save({"format_version": 1, "corpus": "hello", "payload": Evil(ctx["marker"])}, buffer)
    return buffer.getvalue()


def truncated(ctx):
    return ctx["checkpoint"][: len(ctx["checkpoint"]) // 2]


def bare_lstm_state_dict(ctx):
    buffer = io.BytesIO()
    torch.save(torch.nn.LSTM(4, 8).state_dict(), buffer)
    return buffer.getvalue()


def damaged_cache(ctx):
    """A Tiny Shakespeare of the right size whose bytes are not the published ones."""
    folder = ctx["tmp"] / "cache"
    folder.mkdir(exist_ok=True)
    (folder / TINY_SHAKESPEARE_FILE).write_bytes(b"x" * TINY_SHAKESPEARE_BYTES)


EMOJI = "".join(chr(0x1F300 + i) for i in range(5000))  # 5,000 distinct characters from the emoji blocks on
HELLO_UPLOAD = steps(use_hello, use_text_upload)  # the run's corpus chosen, then the uploader opened
CHOOSE_SHAKESPEARE = steps(use_hello, widget("selectbox", key("builtin"), "tiny-shakespeare"))

ROWS: dict[str, Bad] = {
    # --- the hand-built AND network
    "and-bit-2": Bad(HAND, "may only hold the bits 0 and 1", widget("text_input", "handbuilt_bits", "0,2,1")),
    "and-letters": Bad(HAND, "may only hold the bits 0 and 1", widget("text_input", "handbuilt_bits", "1 x 1")),
    "and-empty": Bad(HAND, "Enter at least one bit", widget("text_input", "handbuilt_bits", "")),
    "and-25-bits": Bad(HAND, "Enter at most 24 bits", widget("text_input", "handbuilt_bits", "1" * 25)),
    # The text box holds at most 96 characters, so 10,000 bits can only arrive through a link.
    "and-10000-bits-link": Bad(HAND, "not valid", query={"bits": "1" * 10_000}),
    "and-step-link": Bad(HAND, "not valid", query={"t": "minus one"}),
    # NaN or inf in a weight field: Streamlit itself refuses them (test_bounded_widgets_refuse_the_value).
    # --- gradient decay: the sliders stop at 0.5 and 10, a link can say anything
    "sigma-0-link": Bad(GRADIENTS, "sigma=0", query={"sigma": "0"}),
    "sigma-nan-link": Bad(GRADIENTS, "sigma=nan", query={"sigma": "nan"}),
    "k-0-link": Bad(GRADIENTS, "K=0", query={"K": "0"}),
    # --- LSTM gates and stacked RNNs
    "gate-link": Bad(GATES, "f=2", query={"f": "2"}),
    "gates-one-char-word": Bad(GATES, "between 2 and 24 characters", widget("text_input", "lstm_gates_word", "a")),
    "gates-one-letter-word": Bad(GATES, "2 different characters", widget("text_input", "lstm_gates_word", "aaaa")),
    "stacked-no-words": Bad(STACKED, "at least one word", widget("text_input", "stacked_words", "   ")),
    # --- live training: settings
    "lr-0": Bad(LIVE, "must be a positive number", widget("number_input", key("lr"), 0.0)),
    "lr-negative": Bad(LIVE, "must be a positive number", widget("number_input", key("lr"), -0.1)),
    "lr-1e6": Bad(LIVE, "far too large", widget("number_input", key("lr"), 1e6)),
    "budget-0": Bad(LIVE, "step budget must be between 1", widget("number_input", key("budget"), 0)),
    "model-over-2M-parameters": Bad(LIVE, "a session may train at most 2,000,000", steps(
        widget("slider", key("layers"), 3), widget("select_slider", key("hidden"), 512))),
    "preset-link": Bad(LIVE, "not valid", query={"preset": "Skynet"}),
    # --- live training: uploads and pasted text (the previous corpus stays)
    "upload-empty": Bad(LIVE, "at least 100", upload(key("upload"), lambda c: b""), HELLO_UPLOAD),
    "upload-png-as-txt": Bad(LIVE, "binary file", upload(
        key("upload"), lambda c: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(300), "picture.txt"), HELLO_UPLOAD),
    "upload-utf16": Bad(LIVE, "UTF-16", upload(
        key("upload"), lambda c: ("To be, or not to be: that is the question. " * 5).encode("utf-16")), HELLO_UPLOAD),
    "upload-one-character": Bad(LIVE, "single distinct character", upload(key("upload"), lambda c: b"a" * 1000),
                                HELLO_UPLOAD),
    # The browser's uploader stops files over 4 MB before sending them; a file that gets through anyway is
    # refused by the engine's own limit.
    "upload-over-4MB": Bad(LIVE, "the limit is 4,000,000", upload(key("upload"), lambda c: b"ab cd\n" * 700_000),
                           HELLO_UPLOAD),
    "upload-5000-emoji": Bad(LIVE, "5,000 distinct characters", upload(key("upload"), lambda c: (EMOJI * 2).encode()),
                             HELLO_UPLOAD),
    "paste-over-4MB": Bad(LIVE, "the limit is 4,000,000", steps(
        widget("text_area", key("paste"), "é" * 2_100_000), click(key("use_paste"))), steps(use_hello, use_paste)),
    "paste-too-short": Bad(LIVE, "at least 100", steps(
        widget("text_area", key("paste"), "hello"), click(key("use_paste"))), steps(use_hello, use_paste)),
    # --- live training: sampling the live "hello" model (V = 4)
    "prime-unknown-chars": Bad(LIVE, "not in the model's vocabulary", sample_with(prime="hello, world ☃")),
    "top-k-over-V": Bad(LIVE, "more than the 4 characters", sample_with(strategy="temperature", top_k=50)),
    "top-k-negative": Bad(LIVE, "keep at least 1 character", sample_with(strategy="temperature", top_k=-3)),
    "top-p-0": Bad(LIVE, "Top-p must be more than 0", sample_with(strategy="temperature", top_p=0.0)),
    "top-p-over-1": Bad(LIVE, "at most 1 (1 keeps every character), not 1.5",
                        sample_with(strategy="temperature", top_p=1.5)),
    "beam-over-V": Bad(LIVE, "beam width of 10 is more than the 4", sample_with(strategy="beam", beam_width=10)),
    "length-0": Bad(LIVE, "at least 1 character", sample_with(length=0)),
    "length-1e6": Bad(LIVE, "capped at 2,000", sample_with(length=10**6)),
    # --- checkpoints (the live page's loader; the explorer's is the same engine call)
    "checkpoint-truncated": Bad(LIVE, "truncated or damaged", upload(key("checkpoint"), truncated, "m.pt")),
    "checkpoint-not-torch": Bad(LIVE, "not a PyTorch checkpoint", upload(key("checkpoint"), lambda c: b"junk" * 9,
                                                                          "m.pt")),
    "checkpoint-bare-lstm": Bad(LIVE, "format version", upload(key("checkpoint"), bare_lstm_state_dict, "m.pt")),
    "checkpoint-gru-weights-lstm-config": Bad(LIVE, "do not match its config", upload(
        key("checkpoint"), checkpoint_variant(gru_weights_in_an_lstm), "m.pt")),
    "checkpoint-hidden-0": Bad(LIVE, "must all be at least 1", upload(
        key("checkpoint"), checkpoint_variant(with_config(hidden=0)), "m.pt")),
    "checkpoint-layers-0": Bad(LIVE, "must all be at least 1", upload(
        key("checkpoint"), checkpoint_variant(with_config(layers=0)), "m.pt")),
    "checkpoint-malicious-pickle": Bad(LIVE, "refused without running it", upload(key("checkpoint"), malicious,
                                                                                   "m.pt")),
    # A good checkpoint whose vocabulary does not fit the corpus it names: it loads (and replaces the uploaded
    # model), and the explorer says why it cannot read that corpus's text with it.
    "checkpoint-vocab-not-its-corpus": Bad(EXPLORER, "does not match python-stdlib", upload(
        "explorer_upload", checkpoint_variant(lambda p: p.update(corpus="python-stdlib")), "m.pt"), loads=True),
    # --- Tiny Shakespeare offline, from a server sending garbage, and from a damaged cache
    "download-offline": Bad(LIVE, "Could not download Tiny Shakespeare", click(key("start")), CHOOSE_SHAKESPEARE,
                            with_run=False),
    "download-garbage": Bad(LIVE, "not 1,115,394", click(key("step")), CHOOSE_SHAKESPEARE,
                            env={"RNNVIZ_TINY_SHAKESPEARE_URL": "{garbage}"}, with_run=False),
    "cache-damaged-offline": Bad(LIVE, "does not match its published sha256", steps(
        lambda at, ctx: damaged_cache(ctx), widget("selectbox", key("builtin"), "tiny-shakespeare")), use_hello),
    "cache-damaged-offline-start": Bad(LIVE, "Could not download Tiny Shakespeare", click(key("start")), steps(
        lambda at, ctx: damaged_cache(ctx), use_hello, widget("selectbox", key("builtin"), "tiny-shakespeare")),
        with_run=False),
    "explorer-download-offline": Bad(EXPLORER, "Could not download Tiny Shakespeare", click("explorer_download"),
                                     widget("selectbox", "explorer_source", "pretrained:lstm-tiny-shakespeare")),
    # --- memory experiments
    "delay-at-least-L": Bad(MEMORY, "with D ≥ L there is nothing left to copy",
                            widget("text_input", "memory_delay_delays", "2, 8, 96")),
    "delays-not-numbers": Bad(MEMORY, "whole numbers", widget("text_input", "memory_delay_delays", "two, eight")),
    # --- the explorer
    "pattern-empty-range": Bad(EXPLORER, "The selected range is empty", lambda at, ctx: at.slider(
        key="explorer_range").set_value((at.slider(key="explorer_range").value[0],) * 2).run()),
    "pattern-substring-absent": Bad(EXPLORER, "does not", widget("text_input", "explorer_substring", "<b>qq</b>"),
                                    widget("radio", "explorer_pattern_mode", "substring")),
    "explorer-own-text-too-short": Bad(EXPLORER, "at least 20 characters", widget(
        "text_area", "explorer_own_text", "x = 1"), widget("radio", "explorer_text_mode", "own")),
    "explorer-unit-link": Bad(EXPLORER, "not valid", query={"unit": "seven"}),
    "explorer-model-link": Bad(EXPLORER, "not available here", query={"model": "pretrained:gpt-5"}),
}  # fmt: skip


@pytest.fixture(scope="module")
def garbage_url():
    """A loopback server that answers every request with 300 kB of noise (never the internet)."""

    server = serve_on_loopback(bytes(range(256)) * 1200)
    yield f"http://127.0.0.1:{server.server_address[1]}/input.txt"
    server.shutdown()


@pytest.fixture(autouse=True)
def no_real_cache_or_network(tmp_path, monkeypatch):
    """Every row: an empty corpus cache of its own, and a download URL where nothing listens."""
    monkeypatch.setenv("RNNVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RNNVIZ_TINY_SHAKESPEARE_URL", CLOSED_PORT_URL)
    builtin_corpus.clear()  # a corpus an earlier test of this process read is not on this row's empty disk


def open_session(page: str, live_run, uploaded, row: Bad, ctx: dict) -> tuple[AppTest, dict]:
    """A session holding the run and the checkpoint, on ``page`` and prepared; returns it with its state
    just before the bad input (a link's value acts on the very first run)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(row.query)
    if row.with_run:
        at.session_state[LIVE_RUN_KEY] = live_run
        at.session_state[UPLOADED_KEY] = uploaded
    before = snapshot(at.session_state)
    at.run()
    at.switch_page(page).run()
    if row.prepare is not None:
        row.prepare(at, ctx)
    if row.act is not None:
        before = snapshot(at.session_state)
    return at, before


@pytest.mark.parametrize("name", list(ROWS))
def test_bad_input_is_explained_and_loses_nothing(name, live_run, uploaded, good_checkpoint, garbage_url, tmp_path,
                                                  monkeypatch):
    row = ROWS[name]
    for variable, value in row.env.items():
        monkeypatch.setenv(variable, value.format(garbage=garbage_url))
    ctx = {"tmp": tmp_path, "checkpoint": good_checkpoint, "marker": tmp_path / "pwned"}
    at, before = open_session(row.page, live_run, uploaded, row, ctx)
    if row.act is not None:
        assert not at.exception, [e.value for e in at.exception]
        row.act(at, ctx)
    assert not at.exception, [e.value for e in at.exception]
    said = [e.value for e in at.error] + [w.value for w in at.warning]
    assert any(row.says in message for message in said), (row.says, said)
    assert "Traceback" not in page_text(at)
    after = snapshot(at.session_state)
    if row.loads:
        assert after.pop("uploaded") != before.pop("uploaded")
    assert after == before, "the bad input changed the session's model, corpus or history"
    assert not ctx["marker"].exists(), "a checkpoint ran code while it was read"


def test_the_malicious_checkpoint_would_have_run_code_under_a_plain_pickle_load(tmp_path):
    """The payload of the malicious-checkpoint row is live: an unsafe load runs it. The app never does that."""
    marker = tmp_path / "pwned"
    data = malicious({"marker": marker})
    torch.load(io.BytesIO(data), weights_only=False)
    assert marker.exists()


def test_a_good_upload_after_bad_ones_replaces_the_corpus_and_keeps_the_run(live_run, uploaded):
    """The rows above leave everything alone; a good input still works, and only touches the corpus."""
    at, _ = open_session(LIVE, live_run, uploaded, Bad(LIVE, "", prepare=HELLO_UPLOAD), {})
    run_before = snapshot(at.session_state)["run"]
    upload(key("upload"), lambda c: b"")(at, {})
    good = ("It was the best of times, it was the worst of times. " * 4).encode()
    upload(key("upload"), lambda c: good, "dickens.txt")(at, {})
    assert not at.exception and not at.error
    assert at.session_state[ACTIVE_CORPUS].name == "dickens.txt"
    assert snapshot(at.session_state)["run"] == run_before


def test_a_damaged_cache_is_downloaded_again_when_the_server_answers(tmp_path, monkeypatch, shakespeare_url):
    monkeypatch.setenv("RNNVIZ_TINY_SHAKESPEARE_URL", shakespeare_url)
    damaged_cache({"tmp": tmp_path})
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(LIVE).run()
    at.select_slider(key=key("hidden")).set_value(16).run()
    assert any("does not match its published sha256" in w.value for w in at.warning)
    at.button(key=key("step")).click().run()
    assert not at.exception and not at.error
    run = at.session_state[LIVE_RUN_KEY]
    assert run.corpus_name == "tiny-shakespeare" and run.trainer.vocab.size == 65 and run.step > 0
    assert (tmp_path / "cache" / TINY_SHAKESPEARE_FILE).read_bytes() == SHAKESPEARE.read_bytes()
    assert not any("sha256" in w.value for w in at.warning)


# --- widgets that cannot produce the bad value ----------------------------------------------------------------


BOUNDS = [  # page, widget kind, key, the bad value, the lowest value the widget allows
    (STACKED, "number_input", "stacked_d1", 0, 1),  # hidden size d_1 = 0
    (STACKED, "slider", "stacked_layers", 0, 1),  # layers 0
    (LIVE, "slider", key("layers"), 0, 1),
    (GRADIENTS, "slider", "gradient_decay_sigma", 0.0, 0.5),  # σ₁ = 0
    (GRADIENTS, "slider", "gradient_decay_steps", 0, 10),  # K = 0
    (HAND, "number_input", "handbuilt_w_xh_0", math.nan, -10.0),  # NaN from a crafted client
    (HAND, "number_input", "handbuilt_w_hh_00", math.inf, -10.0),
]


@pytest.mark.parametrize(("page", "kind", "name", "bad", "low"), BOUNDS, ids=[b[2] + f"={b[3]}" for b in BOUNDS])
def test_bounded_widgets_refuse_the_value(page, kind, name, bad, low):
    """Streamlit checks a widget's bounds on the server too: the bad value never reaches the page."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(page).run()
    element = getattr(at, kind)(key=name)
    assert element.min == low
    before = element.value
    element.set_value(bad).run()
    assert not at.exception
    value = getattr(at, kind)(key=name).value
    assert math.isfinite(value) and value >= low
    assert value == before or value == low


def test_the_sampling_temperature_cannot_reach_zero_and_zero_would_mean_greedy(live_run):
    """The τ slider starts at 0.1; the check behind it turns τ = 0 into greedy decoding with a note."""
    from rnnviz.charlm.sample_request import check_sample_request

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[LIVE_RUN_KEY] = live_run
    at.run()
    at.switch_page(LIVE).run()
    assert at.slider(key=key("temperature")).min == 0.1
    request, errors, notes = check_sample_request(live_run.trainer.vocab, "he", 20, "temperature", 0.0)
    assert request.strategy == "greedy" and not errors and "greedy decoding" in notes[0]
