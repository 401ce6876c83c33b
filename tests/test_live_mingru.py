"""A minGRU on the live page: the Kind menu offers it with the minGRU preset's settings, a run trains it with its
h_t carried between chunks, and the equation at the top of the page follows the chosen kind."""

import pytest
import torch

from rnnviz.charlm.presets import ALL_PRESETS, DEFAULT_PRESET, MINGRU_PRESET, TUNED_GPT
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from rnnviz.ui.live_training.setup import MINGRU_NOTE, kind_equation
from tests.apptest_helpers import open_page, page_text
from tests.test_mingru import chunk_losses_from_the_carried_and_a_zero_state

PAGE = "app_pages/live_training.py"


def key(name: str) -> str:
    return f"live_training_{name}"


def equation(at) -> str:
    """The LaTeX under the page's title: its first st.latex, without the $$ … $$ Streamlit wraps it in."""
    return at.latex[0].value.strip().removeprefix("$$").removesuffix("$$").strip()


def test_the_kind_menu_offers_a_mingru_with_its_preset_and_a_run_trains_it_with_h_carried():
    at = open_page(PAGE)
    at.selectbox(key=key("builtin")).set_value("hello").run()
    kind = at.radio(key=key("kind"))
    assert "minGRU" in kind.options  # the labels shown; values are the kinds
    kind.set_value("mingru").run()
    assert not at.exception, [e.value for e in at.exception]
    preset = ALL_PRESETS[MINGRU_PRESET].config
    assert at.selectbox(key=key("preset")).value == MINGRU_PRESET  # the minGRU's preset, on the chosen corpus
    assert (at.slider(key=key("layers")).value, at.select_slider(key=key("hidden")).value) == (
        preset.layers, preset.hidden)
    assert at.session_state[key("lr")] == preset.lr and at.session_state[key("optimizer")] == preset.optimizer
    assert at.selectbox(key=key("builtin")).value == "hello"
    assert MINGRU_NOTE in page_text(at)
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    config = run.trainer.config
    assert (config.kind, config.layers, config.hidden) == ("mingru", preset.layers, preset.hidden)
    assert run.step >= 1 and run.samples  # trained, and sampled one character at a time
    state = run.trainer.state  # h_T of the last chunk, carried into the next: (L, B, H)
    assert isinstance(state, torch.Tensor) and state.shape[0] == preset.layers and state.shape[-1] == preset.hidden
    assert torch.isfinite(torch.tensor(run.trainer.history[-1].loss))
    # another step goes on from the same model
    steps = run.step
    at.button(key=key("step")).click().run()
    assert not at.exception and at.session_state[LIVE_RUN_KEY] is run and run.step > steps
    # to a GRU: the recurrent preset's settings, the kind chosen, the corpus kept, the note gone
    at.radio(key=key("kind")).set_value("gru").run()
    assert not at.exception
    assert at.selectbox(key=key("preset")).value == DEFAULT_PRESET and at.radio(key=key("kind")).value == "gru"
    assert at.selectbox(key=key("builtin")).value == "hello"
    assert MINGRU_NOTE not in page_text(at)


def test_a_live_mingru_carries_its_state_from_one_chunk_into_the_next():
    at = open_page(PAGE)
    at.selectbox(key=key("builtin")).set_value("english-docs").run()
    at.radio(key=key("kind")).set_value("mingru").run()
    at.select_slider(key=key("hidden")).set_value(32).run()  # small: the property, not the quality
    at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert not at.exception and run.trainer.config.kind == "mingru" and run.trainer.batcher.chunks_per_epoch > 2
    steps = run.step
    carried, fresh = chunk_losses_from_the_carried_and_a_zero_state(run.trainer)
    at.button(key=key("step")).click().run()
    assert not at.exception and run.step > steps
    assert run.trainer.history[steps].loss == pytest.approx(carried, abs=1e-6)  # the page's next chunk read it
    assert abs(carried - fresh) > 1e-4


def test_the_equation_under_the_title_follows_the_kind():
    at = open_page(PAGE)
    # what each kind's update must say, in the lecture's symbols (checked by hand, not from the table)
    expected = {
        "rnn": [r"h_t = \tanh(W_{xh}\, x_t + W_{hh}\, h_{t-1} + b_h)"],
        "lstm": [r"c_t = f_t \odot c_{t-1} + i_t \odot g_t", r"h_t = o_t \odot \tanh(c_t)"],
        "gru": [r"r_t = \sigma(", r"h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}"],
        "mingru": [r"z_t = \sigma(W_z\, x_t + b_z)", r"\tilde h_t = g(W_h\, x_t + b_h)",
                   r"h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tilde h_t"],
        "transformer": [r"\frac{QK^\top}{\sqrt{d}} + M"],
    }
    assert equation(at) == kind_equation(at.radio(key=key("kind")).value)  # the default preset's kind
    for kind, parts in expected.items():
        at.radio(key=key("kind")).set_value(kind).run()
        assert not at.exception, (kind, [e.value for e in at.exception])
        shown = equation(at)
        for part in parts:
            assert part in shown, (kind, part)
        others = [p for k, ps in expected.items() if k != kind for p in ps if p not in shown]
        assert others, kind  # not every kind's equation at once
        assert r"\mathcal{L} = -\frac{1}{T}\sum_t \ln p_t[x_{t+1}]" in shown  # the loss stays
        if kind == "mingru":
            assert "h_{t-1}" not in shown.split(r"\tilde h_t =")[1].split(r"\quad")[0]  # the candidate reads x_t only
    # a preset chosen from the menu sets the kind, and the equation with it
    at.selectbox(key=key("preset")).set_value(TUNED_GPT).run()
    assert r"\mathrm{Attn}(X)" in equation(at) and r"h_t = \tanh" not in equation(at)
