"""The live page in front of a class: "hello" spells itself and says why its loss reaches 0, the speed
estimate uses the batch the trainer really uses, a run's address finds it again and a stranger's does not,
and the preset's note follows the corpus. Engine checks first, then the page in AppTest."""

import gc
import re
import secrets
import string
from dataclasses import replace

import pytest

from rnnviz.charlm.corpus import Corpus, english_docs_text, load_builtin
from rnnviz.charlm.presets import ALL_PRESETS, DEFAULT_PRESET, PRESETS
from rnnviz.charlm.speed import effective_shape, estimate_chars_per_second, estimate_for_corpus
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.serving.live import LiveRun, LiveSettings, RunRegistry, holds_out, leaves_training_text, sample_prime
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from rnnviz.ui.live_training.setup import matmul_flops
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/live_training.py"
QUICK = PRESETS["Quick demo (30 s)"]
TINY = TrainConfig(hidden=16, embed_dim=8, batch=4, seq_len=8, lr=0.03, device="cpu")


def key(name: str) -> str:
    return f"live_training_{name}"


# --- the engine ----------------------------------------------------------------------------------------------


def test_the_default_preset_says_when_it_widens_in_steps_which_every_machine_takes():
    preset = ALL_PRESETS[DEFAULT_PRESET]
    config = preset.config
    widens_at = next(step for step in range(1, 100_000) if config.hidden_at(step) == config.hidden)  # the engine's
    assert f"widened to 1 × {config.hidden} at step {widens_at:,}" in preset.note
    assert not re.search(r"widen\w* [^;]*\d+ s\b", preset.note)  # no clock time: on a busy machine 22 s was 70 s


def test_hello_holds_nothing_out_and_its_samples_start_from_h():
    hello = load_builtin("hello")
    assert not holds_out(hello) and sample_prime(hello) == "h"
    docs = Corpus("docs", english_docs_text()[:3000])
    assert holds_out(docs) and sample_prime(docs) == ""


def test_a_trained_hello_run_spells_hello_then_leaves_the_text():
    run = LiveRun.create(TINY, load_builtin("hello"), LiveSettings(step_budget=300, sample_every=100))
    while run.step < 300:
        run.advance(1.0)
    assert [s.step for s in run.samples] == [0, 100, 200, 300]
    latest = run.samples[-1]
    assert latest.prime == "h" and latest.text.startswith("hello"), latest.text[:20]
    assert run.samples[-1].val_loss < 0.05  # memorised: val is the training text itself
    assert leaves_training_text(latest.text, "hello") == 5  # nothing ever follows the final "o"


def test_where_a_text_leaves_the_training_text():
    assert leaves_training_text("hellollo", "hello") == 5
    assert leaves_training_text("ellx", "hello") == 3
    assert leaves_training_text("xyz", "hello") == 0
    assert leaves_training_text("", "hello") == 0
    assert leaves_training_text("hello", "hello") == 5


def test_the_speed_estimate_uses_the_batch_the_trainer_really_uses():
    hello = load_builtin("hello")
    config = QUICK.config
    trainer = Trainer(config, hello)
    assert effective_shape(config, hello) == (trainer.batcher.batch, trainer.batcher.seq_len) == (1, 4)
    assert trainer.chars_per_step == 4  # not B·T = 32·64 = 2,048
    flops = 1e11
    small = estimate_chars_per_second(replace(config, batch=1, seq_len=4), 4, flops)
    assert estimate_for_corpus(config, hello, flops) == pytest.approx(small)
    assert estimate_chars_per_second(config, 4, flops) > 5 * small  # what the page used to claim (B·T = 2,048)
    docs = Corpus("docs", english_docs_text()[:200_000])
    assert effective_shape(config, docs) == (32, 64)  # a long text keeps B and T


def test_tokens_are_long_random_and_url_safe():
    registry = RunRegistry()
    runs = [LiveRun.create(TINY, load_builtin("hello")) for _ in range(3)]
    tokens = [registry.register(run, f"session-{i}") for i, run in enumerate(runs)]
    assert len(set(tokens)) == 3
    for run, token in zip(runs, tokens):
        assert run.token == token and len(token) >= 43  # 32 random bytes
        assert set(token) <= set(string.ascii_letters + string.digits + "-_")
    assert len(registry) == 3


def test_a_token_finds_its_run_and_nothing_else_does():
    registry = RunRegistry()
    run = LiveRun.create(TINY, load_builtin("hello"))
    token = registry.register(run, "student")
    alive = {"student"}
    assert registry.attach(token, "student-reloaded", alive.__contains__) is run
    for wrong in (secrets.token_urlsafe(32), token[:-1], token + "x", token.upper(), ""):
        assert registry.attach(wrong, "stranger", lambda holder: True) is None


def test_a_run_is_not_found_once_every_session_that_held_it_has_ended():
    registry = RunRegistry()
    run = LiveRun.create(TINY, load_builtin("hello"))
    token = registry.register(run, "tab-1")
    alive = {"tab-1"}
    assert registry.attach(token, "tab-2", alive.__contains__) is run  # a reload: tab-2 holds it too
    alive = {"tab-2"}  # tab-1's session expired; tab-2 is still open
    assert registry.attach(token, "tab-3", alive.__contains__) is run
    alive = set()  # every tab closed longer than the TTL ago
    assert registry.attach(token, "tab-4", alive.__contains__) is None
    assert len(registry) == 0


def test_the_registry_never_keeps_a_run_alive():
    registry = RunRegistry()
    run = LiveRun.create(TINY, load_builtin("hello"))
    token = registry.register(run, "tab")
    del run
    gc.collect()
    assert registry.attach(token, "tab", lambda holder: True) is None and len(registry) == 0


def test_reset_releases_the_run():
    registry = RunRegistry()
    run = LiveRun.create(TINY, load_builtin("hello"))
    token = registry.register(run, "tab-1")
    registry.attach(token, "tab-2", lambda holder: True)
    registry.release(token, "tab-1")
    assert registry.attach(token, "tab-3", lambda holder: True) is run  # tab-2 still holds it
    for holder in ("tab-2", "tab-3"):
        registry.release(token, holder)
    assert registry.attach(token, "tab-4", lambda holder: True) is None


# --- the page ------------------------------------------------------------------------------------------------


def hello_page(query: dict | None = None):
    at = open_page(PAGE, query=query)
    at.selectbox(key=key("preset")).set_value(QUICK.name).run()
    at.selectbox(key=key("builtin")).set_value("hello").run()
    return at


def step_until(at, step: int):
    """Press Step until the run has taken ``step`` optimizer steps."""
    while LIVE_RUN_KEY not in at.session_state or at.session_state[LIVE_RUN_KEY].step < step:
        at.button(key=key("step")).click().run()
        assert not at.exception, [e.value for e in at.exception]
    return at.session_state[LIVE_RUN_KEY]


def sample_box(at) -> str:
    """The sample the "Sample it" section shows under its Model box: the first code block after that box."""
    elements = list(at.main)
    box = next(i for i, e in enumerate(elements) if getattr(e, "key", None) == key("model_source"))
    return next(e.value for e in elements[box:] if e.type == "code")


def test_hello_says_why_its_loss_reaches_zero_and_spells_hello():
    at = hello_page()
    text = page_text(at)
    assert "Nothing of hello is held out: train and val are the same 5 characters, so the model memorises them" in text
    assert "Words, capitals and line breaks" not in text  # the Quick demo's note is about Tiny Shakespeare
    assert f"The {QUICK.name} settings, on hello instead of tiny-shakespeare" in text
    run = step_until(at, 60)
    trained = [s for s in run.samples if s.step >= 40]
    assert trained and all(s.text.startswith("hello") for s in trained), [s.text[:12] for s in run.samples]
    assert run.samples[-1].text in [c.value for c in at.code]  # listed under "Samples along the way"
    assert any("hello" in h.proto.body and "past it: never seen in training" in h.proto.body
               for h in at.get("html")), "the latest sample shows where it leaves the training text"
    # "Sample it" primes the hello model with "h" by default, so that it spells the word.
    assert at.selectbox(key=key("model_source")).value == "live"
    assert at.text_input(key=key("prime")).value == "h"
    assert sample_box(at).startswith("hello"), sample_box(at)[:20]


def test_the_hello_speed_estimate_is_for_the_batch_it_trains_with():
    at = hello_page()
    shown = next(m for m in at.metric if m.label == "Estimated speed")
    value = float(shown.value.strip("≈ ").split()[0].replace(",", ""))
    config = at.session_state  # the widgets' values are the Quick preset's
    assert config[key("batch")] == 32 and config[key("seq_len")] == 64
    small = estimate_for_corpus(QUICK.config, load_builtin("hello"), matmul_flops())
    assert value == pytest.approx(small, rel=0.01)  # B = 1, T = 4: about 1,000 chars/s, not 30,000
    assert "the trainer uses B = 1, T = 4" in shown.help
    run = step_until(at, 1)
    assert run.trainer.chars_per_step == 4


def test_a_second_session_with_the_address_takes_up_the_run_with_its_settings():
    first = hello_page()
    run = step_until(first, 30)
    token = first.query_params["run"]
    token = token[0] if isinstance(token, list) else token
    assert token == run.token and len(token) >= 43
    assert first.query_params["preset"] in (QUICK.name, [QUICK.name])  # the settings' own link is kept
    second = open_page(PAGE, query={"run": token})  # a reload: a new session, the same address
    assert not second.exception
    assert second.session_state[LIVE_RUN_KEY] is run
    assert next(m.value for m in second.metric if m.label == "Step") == f"{run.step:,}"
    assert second.selectbox(key=key("builtin")).value == "hello"  # the run's settings, not the defaults
    assert not [i.value for i in second.info if "differ from the run below" in i.value]


def test_a_foreign_or_reset_token_is_refused_with_a_notice():
    stranger = open_page(PAGE, query={"run": secrets.token_urlsafe(32)})
    assert not stranger.exception and LIVE_RUN_KEY not in stranger.session_state
    assert any("does not hold, in memory or on disk" in w.value for w in stranger.warning)
    assert "run" not in stranger.query_params
    assert not any(m.label == "Step" for m in stranger.metric)

    owner = hello_page()
    run = step_until(owner, 1)
    token = run.token
    owner.button(key=key("reset")).click().run()
    assert LIVE_RUN_KEY not in owner.session_state and "run" not in owner.query_params
    later = open_page(PAGE, query={"run": token})
    assert LIVE_RUN_KEY not in later.session_state  # Reset deleted its files too: nothing comes back from disk
    assert any("does not hold, in memory or on disk" in w.value for w in later.warning)


def test_the_preset_note_follows_the_corpus():
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value(QUICK.name).run()
    assert QUICK.note in page_text(at)
    at.selectbox(key=key("builtin")).set_value("english-docs").run()
    assert QUICK.note not in page_text(at)
    assert f"The {QUICK.name} settings, on english-docs instead of tiny-shakespeare" in page_text(at)
