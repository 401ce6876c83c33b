"""The sLSTM, mLSTM, selective SSM and linear attention on the live page (issue 64): the Kind menu offers each with
its preset, its heads and its update, and a run of each starts, pauses, steps and samples what its weights write."""

from rnnviz.charlm.presets import ALL_PRESETS, KIND_PRESETS
from rnnviz.charlm.sample import generate
from rnnviz.ui.kit.models import LIVE_RUN_KEY
from tests.apptest_helpers import open_page, page_text

PAGE = "app_pages/live_training.py"
# What each kind's update must say, in its paper's symbols (written here by hand, not read from the table).
UPDATES = {
    "slstm": [r"m_t = \max(\log \sigma(\tilde f_t) + m_{t-1},\ \tilde\imath_t)", r"n_t = f'_t \odot n_{t-1} + i'_t"],
    "mlstm": [r"C_t = f_t\, C_{t-1} + i_t\, v_t k_t^\top", r"\max(|n_t^\top q_t|,\ 1)"],
    "selective": [r"s_t = e^{\Delta_t A} \odot s_{t-1} + \Delta_t\, u_t B_t^\top"],
    "linear_attention": [r"S_t = S_{t-1} + v_t\, \phi(k_t)^\top", r"\frac{S_t\, \phi(q_t)}{z_t^\top \phi(q_t)}"],
}
LABELS = {"slstm": "sLSTM", "mlstm": "mLSTM", "selective": "Selective SSM", "linear_attention": "Linear attention"}


def key(name: str) -> str:
    return f"live_training_{name}"


def main_sample(at) -> str:
    """The sample the sampling section shows under its Model box: the first code block after that box."""
    elements = list(at.main)  # document order
    box = next(i for i, e in enumerate(elements) if getattr(e, "key", None) == key("model_source"))
    return next(e.value for e in elements[box:] if e.type == "code")


def test_each_new_kind_is_offered_with_its_preset_and_a_run_starts_pauses_steps_and_samples_its_weights():
    at = open_page(PAGE)
    at.selectbox(key=key("builtin")).set_value("hello").run()
    kind_menu = at.radio(key=key("kind"))
    assert [kind_menu.format_func(k) for k in UPDATES] == list(LABELS.values())
    for kind, parts in UPDATES.items():
        at.radio(key=key("kind")).set_value(kind).run()
        assert not at.exception, (kind, [e.value for e in at.exception])
        preset = ALL_PRESETS[KIND_PRESETS[kind]].config
        assert at.selectbox(key=key("preset")).value == KIND_PRESETS[kind]
        assert (at.slider(key=key("layers")).value, at.select_slider(key=key("hidden")).value) == (
            preset.layers, preset.hidden)
        assert at.selectbox(key=key("builtin")).value == "hello"  # the corpus stays
        shown = at.latex[0].value
        assert all(part in shown for part in parts), kind
        assert not any(part in shown for other, ps in UPDATES.items() if other != kind for part in ps), kind
        headed = kind != "selective"
        assert any(w.key == key("n_head") for w in at.select_slider) == headed
        if headed:
            assert at.select_slider(key=key("n_head")).value == preset.n_head
            at.select_slider(key=key("n_head")).set_value(2)
        at.select_slider(key=key("hidden")).set_value(16).run()  # small: the page's path, not the quality

        at.button(key=key("start")).click().run()  # the training fragment takes one chunk per full rerun here
        assert not at.exception, (kind, [e.value for e in at.exception])
        run = at.session_state[LIVE_RUN_KEY]
        config = run.trainer.config
        assert (config.kind, config.layers, config.hidden) == (kind, preset.layers, 16)
        assert config.n_head == (2 if headed else preset.n_head) and config.reset_state == preset.reset_state
        assert run.status == "running" and run.step > 0
        at.button(key=key("pause")).click().run()
        paused_at = run.step
        assert run.status == "paused" and "Paused at step" in page_text(at)
        at.button(key=key("step")).click().run()
        assert not at.exception and at.session_state[LIVE_RUN_KEY] is run and run.step > paused_at

        # the sampling section writes what the run's weights write, greedily from a prime
        at.radio(key=key("strategy")).set_value("greedy")
        at.text_input(key=key("prime")).set_value("hel")
        at.number_input(key=key("length")).set_value(30).run()
        assert not at.exception, (kind, [e.value for e in at.exception])
        assert at.selectbox(key=key("model_source")).value == "live"
        assert main_sample(at) == "hel" + generate(run.trainer.model, run.trainer.vocab, "hel", 30, temperature=0)
        at.button(key=key("reset")).click().run()
        assert at.session_state.get(LIVE_RUN_KEY) is None, kind
