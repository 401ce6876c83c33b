"""A Transformer on the live page: the Kind menu offers it with heads and context, the parameter count and speed
estimate work for it (and for any kind, by building the model on the meta device), a bad shape is refused in
words, and a run trains it with no state carried."""

import pytest

from rnnviz.charlm.presets import ALL_PRESETS, DEFAULT_PRESET, PRESETS, TUNED_GPT
from rnnviz.charlm.speed import count_parameters, estimate_chars_per_second
from rnnviz.charlm.train import TrainConfig
from rnnviz.core.charmodel import build_model
from rnnviz.core.config import MODEL_KINDS
from rnnviz.core.transformer import count_parameters as transformer_by_hand
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from rnnviz.ui.live_training.setup import NO_CARRY, TRANSFORMER_DEFAULTS
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/live_training.py"


def key(name: str) -> str:
    return f"live_training_{name}"


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_count_parameters_is_the_built_models_for_every_kind(kind):
    extra = dict(n_head=4, block_size=32, seq_len=32, forget_bias=None) if kind == "transformer" else {}
    for layers, hidden in ((1, 16), (3, 48)):
        config = TrainConfig(kind=kind, layers=layers, hidden=hidden, embed_dim=8, **extra)
        built = build_model(config.model_config(30))
        assert count_parameters(config, 30) == sum(p.numel() for p in built.parameters())


def test_count_parameters_of_a_transformer_is_the_hand_formula():
    config = ALL_PRESETS[TUNED_GPT].config
    assert count_parameters(config, 65) == transformer_by_hand(65, config.layers, config.hidden, config.block_size)


def test_the_speed_estimate_of_a_transformer_adds_attention_and_no_sequential_cost():
    config = TrainConfig(kind="transformer", layers=2, hidden=128, n_head=4, block_size=64, seq_len=64, batch=16,
                         forget_bias=None)
    flops = 100e9
    dense = transformer_by_hand(65, 2, 128, 64) - (65 + 64) * 128  # by hand; embeddings are lookups
    seconds = 0.9e-3 + (6 * dense * 16 * 64 + 12 * 2 * 16 * 64**2 * 128) / (0.85 * flops)
    assert estimate_chars_per_second(config, 65, flops) == pytest.approx(16 * 64 / seconds)
    # twice the context at the same B·T: more attention work per character, so slower
    wide = TrainConfig(kind="transformer", layers=2, hidden=128, n_head=4, block_size=128, seq_len=128, batch=8,
                       forget_bias=None)
    assert estimate_chars_per_second(wide, 65, flops) < estimate_chars_per_second(config, 65, flops)


def test_the_kind_menu_offers_the_transformer_and_a_run_trains_it_without_carried_state():
    at = open_page(PAGE)
    at.selectbox(key=key("builtin")).set_value("hello").run()
    kind = at.radio(key=key("kind"))
    assert "Transformer" in kind.options  # the labels shown; values are the kinds
    kind.set_value("transformer").run()
    assert not at.exception, [e.value for e in at.exception]
    defaults = TRANSFORMER_DEFAULTS.config
    assert at.select_slider(key=key("n_head")).value == defaults.n_head
    assert at.select_slider(key=key("block_size")).value == defaults.block_size
    assert at.session_state[key("optimizer")] == "adamw" and at.session_state[key("lr")] == defaults.lr
    assert at.selectbox(key=key("preset")).value == TUNED_GPT  # the Transformer's preset, on the chosen corpus
    assert (at.slider(key=key("layers")).value, at.select_slider(key=key("hidden")).value) == (
        defaults.layers, defaults.hidden)
    assert at.selectbox(key=key("builtin")).value == "hello"
    assert NO_CARRY in page_text(at)
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    config = run.trainer.config
    assert config.kind == "transformer" and not config.carries_state and run.trainer.state is None
    assert (config.n_head, config.block_size) == (defaults.n_head, defaults.block_size)
    assert run.step >= 1 and run.samples  # trained and sampled with the KV cache
    assert "no carried state" in run.trainer.describe()
    # back to an LSTM: the recurrent family's preset (the page's default), the kind chosen, the corpus kept
    at.radio(key=key("kind")).set_value("lstm").run()
    assert not at.exception
    assert at.selectbox(key=key("preset")).value == DEFAULT_PRESET
    lstm = ALL_PRESETS[DEFAULT_PRESET].config  # AdamW at lr 5e-3, where the GPT's is AdamW at 3e-3
    assert (at.session_state[key("optimizer")], at.session_state[key("lr")]) == (lstm.optimizer, lstm.lr)
    assert at.selectbox(key=key("builtin")).value == "hello"
    assert NO_CARRY not in page_text(at)


def test_a_window_longer_than_the_context_is_refused_in_words():
    at = open_page(PAGE)
    at.radio(key=key("kind")).set_value("transformer").run()
    at.select_slider(key=key("block_size")).set_value(32).run()
    at.select_slider(key=key("seq_len")).set_value(64).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "context of 32 characters" in errors and "window T to 32" in errors
    at.select_slider(key=key("seq_len")).set_value(32).run()
    assert not at.exception and not any("context of 32" in e.value for e in at.error)


def test_a_transformer_preset_is_in_the_live_menu_and_the_recurrent_ones_stay():
    at = open_page(PAGE)
    options = at.selectbox(key=key("preset")).options
    assert TUNED_GPT in options and all(name in options for name in PRESETS)
    at.selectbox(key=key("preset")).set_value(TUNED_GPT).run()
    assert not at.exception
    assert at.radio(key=key("kind")).value == "transformer"
    config = ALL_PRESETS[TUNED_GPT].config
    assert at.slider(key=key("layers")).value == config.layers
    # back to the LSTM preset: every setting follows
    at.selectbox(key=key("preset")).set_value("Shakespeare (3 min)").run()
    lstm = ALL_PRESETS["Shakespeare (3 min)"].config
    assert at.radio(key=key("kind")).value == "lstm"
    assert (at.session_state[key("optimizer")], at.session_state[key("lr")]) == (lstm.optimizer, lstm.lr)
    assert not at.exception
