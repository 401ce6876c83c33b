"""Setup widgets of the live-training page: preset, model and training settings (the corpus box is in
``corpus``).

Every widget's value lives in session state under a ``live_training_*`` key and survives page switches
(``persist_state="session"``). A preset writes all of them at once. ``pending.pending_run`` turns the
values into a TrainConfig and LiveSettings, or into plain-words problems when a value is out of bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import streamlit as st

from rnnviz.charlm.corpus import (
    BUILTIN_CORPORA,
    Corpus,
)
from rnnviz.charlm.presets import (
    DEFAULT_PRESET,
    KIND_PRESETS,
    MINGRU_PRESET,
    MINGRU_PRESETS,
    PRESETS,
    STATE_PRESETS,
    TRANSFORMER_PRESETS,
    TUNED_GPT,
    Preset,
)
from rnnviz.charlm.speed import estimate_chars_per_second, measure_matmul_flops
from rnnviz.charlm.train import OPTIMIZERS, TrainConfig
from rnnviz.core import equations
from rnnviz.core.state_stack import HEADED_KINDS, STATE_KINDS
from rnnviz.serving.cooldown import MAX_COOL_SECONDS
from rnnviz.serving.live import LiveRun
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, mirror_to_link, parse_choice, restore_from_link, share_link
from rnnviz.ui.kit.widgets import literal, seed
from rnnviz.ui.live_training.kinds import HEAD_OPTIONS, HEADS_HELP, KIND_LABELS, MINGRU_NOTE, NO_CARRY, state_note

PAGE = "live_training"
key = PageKeys(PAGE)  # every session and widget key of the live page: key("kind") → "live_training_kind"
KEEP = dict(persist_state="session")  # settings survive a visit to another page

MAX_LAYERS = 3  # the Layers slider's end (Transformer: blocks)
CONTEXT_OPTIONS = (16, 32, 64, 128, 256)  # Transformer: the context, characters one position can see
# The live page's presets: every recurrent one, the minGRU's, the sLSTM's … linear attention's, and the Transformer
# presets its widgets can hold (≤ 3 blocks).
LIVE_PRESETS: dict[str, Preset] = {**PRESETS, **MINGRU_PRESETS, **STATE_PRESETS,
                                   **{name: p for name, p in TRANSFORMER_PRESETS.items()
                                      if p.config.layers <= MAX_LAYERS}}
TRANSFORMER_DEFAULTS = LIVE_PRESETS[TUNED_GPT]  # what choosing Kind = Transformer starts from
# Choosing a Kind of another family starts from that family's preset: RNN, LSTM and GRU share one; every other
# kind is a family of its own.
FAMILY_PRESETS = {"recurrent": DEFAULT_PRESET, "mingru": MINGRU_PRESET, "transformer": TUNED_GPT, **KIND_PRESETS}
HIDDEN_OPTIONS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 448, 512)
BATCH_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128)
SEQ_OPTIONS = (4, 8, 16, 32, 64, 128, 256)
LR_OPTIONS = (1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
              10.0, 20.0, 50.0, 100.0)
CLIP_OPTIONS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
MAX_LR = 100.0
SAMPLE_EVERY_OPTIONS = (10, 20, 25, 50, 100)  # all divide 100, so "Compare" finds the sample of step 100
TYPICAL_VOCAB = 100  # for estimates before a corpus is loaded
SHAKESPEARE_VOCAB = 65  # distinct characters of the sha256-verified Tiny Shakespeare, before it is downloaded
REFERENCE_MATMUL_FLOPS = 130e9  # dense fp32 matmul peak of the 2-core machine the presets were tuned on

SOURCES = ("Built-in", "Upload a .txt file", "Paste text")




LINK = (LinkParam("preset", key("preset"), parse_choice(list(LIVE_PRESETS)), example="Python code (3 min)"),)
ACTIVE_CORPUS = key("corpus")  # the Corpus the next run trains on (the last good choice)
REVERT_BUILTIN = key("revert_builtin")  # the built-in to select again after a failed download
UPLOAD_RESULT = key("upload_result")  # the InputRead of the last upload read
PASTE_RESULT = key("paste_result")  # the InputRead of the last "Use this text"


@dataclass(frozen=True)
class InputRead:
    """What reading a user's file or pasted text gave: which file (None for pasted text), and why it was refused."""

    file_id: str | None
    error: str | None = None


# --- Estimates ------------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, ttl=60)
def matmul_flops() -> float:
    """This server's dense matmul rate, measured at most once a minute (a shared, read-only number)."""
    return measure_matmul_flops()


def _nice(value: float) -> int:
    """Round to 2 significant figures: 2,631 → 2,600."""
    if value < 10:
        return max(1, round(value))
    scale = 10 ** (int(math.log10(value)) - 1)
    return int(round(value / scale) * scale)


def preset_budget(preset: Preset, vocab_size: int = TYPICAL_VOCAB) -> int:
    """The preset's own step budget when it has one (the anytime preset: its minutes' worth, measured), else its
    schedule's length when its learning rate decays (the decay was tuned to end there), else the steps that fill its
    minutes on the reference 2-core CPU. Never this moment's load: a link to a
    preset always means the same run."""
    config = preset.config
    if preset.steps is not None:
        return preset.steps
    if config.lr_decay_steps > 0:
        return config.lr_decay_steps
    speed = estimate_chars_per_second(config, vocab_size, REFERENCE_MATMUL_FLOPS)
    steps_per_s = speed / (config.batch * config.seq_len)
    return min(max(_nice(preset.minutes * 60 * steps_per_s), 50), 50_000)


def sample_every_for(budget: int) -> int:
    """About 15–30 samples per run, at a spacing that divides 100."""
    return next((n for n in SAMPLE_EVERY_OPTIONS if budget / n <= 30), SAMPLE_EVERY_OPTIONS[-1])


# --- Presets ----------------------------------------------------------------------------------------------


def _nearest(options: tuple[float, ...], value: float) -> float:
    """The option closest to value on a log scale."""
    return min(options, key=lambda o: abs(math.log(o) - math.log(value)))


@dataclass(frozen=True)
class SettingField:
    """One TrainConfig field as the page's widgets hold it: its widgets' values for a config, and its value for
    the widgets. A new TrainConfig field the page sets is one row of ``SETTING_FIELDS`` and its widget."""

    name: str  # the TrainConfig field
    to_widgets: Callable[[TrainConfig], dict[str, object]]  # config → {widget name: value}
    from_widgets: Callable[[Callable[[str], Any], TrainConfig], object]  # (widget value by name, base) → field


def _plain(name: str) -> SettingField:
    """A field one widget of the same name holds as it is."""
    return SettingField(name, lambda c: {name: getattr(c, name)}, lambda read, base: read(name))


def _shape_field(name: str, kinds: tuple[str, ...]) -> SettingField:
    """Heads or context, which only ``kinds`` have: another kind keeps the Transformer defaults in the widget for a
    later switch, and the base preset's value in the config."""
    def to_widgets(c: TrainConfig) -> dict[str, object]:
        return {name: getattr(c if c.kind in kinds else TRANSFORMER_DEFAULTS.config, name)}

    def from_widgets(read, base: TrainConfig) -> object:
        if read("kind") not in kinds:
            return getattr(base, name)
        value = read(name)
        fallback = base if base.kind in kinds else TRANSFORMER_DEFAULTS.config
        return getattr(fallback, name) if value is None else value

    return SettingField(name, to_widgets, from_widgets)


SETTING_FIELDS: tuple[SettingField, ...] = (
    _plain("kind"), _plain("layers"), _plain("hidden"), _plain("optimizer"), _plain("batch"), _plain("seq_len"),
    SettingField("embedding", lambda c: {"embedding": c.embedding},
                 lambda read, base: True if read("kind") == "transformer" else read("embedding")),
    SettingField("dropout", lambda c: {"dropout": c.dropout},  # one layer has nothing to drop between
                 lambda read, base: read("dropout") if read("kind") == "transformer" or read("layers") > 1 else 0.0),
    SettingField("lr", lambda c: {"lr": c.lr, "lr_scale": _nearest(LR_OPTIONS, c.lr)}, lambda read, base: read("lr")),
    SettingField("clip", lambda c: {"clip_on": c.clip is not None, "clip": _nearest(CLIP_OPTIONS, c.clip or 1.0)},
                 lambda read, base: read("clip") if read("clip_on") else None),
    SettingField("forget_bias",
                 lambda c: {"forget_bias_on": c.forget_bias is not None,
                            "forget_bias": c.forget_bias if c.forget_bias is not None else 1.0},
                 lambda read, base: read("forget_bias") if read("kind") == "lstm" and read("forget_bias_on") else None),
    _shape_field("n_head", ("transformer", *HEADED_KINDS)), _shape_field("block_size", ("transformer",)),
)  # fmt: skip


def config_widgets(config: TrainConfig) -> dict[str, object]:
    """Every setting widget's value (by session key) for ``config``."""
    return {key(name): value for field in SETTING_FIELDS for name, value in field.to_widgets(config).items()}


def config_fields(base: TrainConfig) -> dict[str, object]:
    """The TrainConfig fields the setting widgets hold now (``base`` for what they leave to the preset)."""
    def read(name: str) -> Any:
        return st.session_state.get(key(name))

    return {field.name: field.from_widgets(read, base) for field in SETTING_FIELDS}


def preset_values(name: str) -> dict[str, object]:
    """Every setting widget's value for a preset."""
    preset = LIVE_PRESETS[name]
    budget = preset_budget(preset)
    return {**config_widgets(preset.config), key("source"): SOURCES[0], key("builtin"): preset.corpus,
            key("budget"): budget, key("sample_every"): sample_every_for(budget), key("cool_down"): preset.cool_down}


def kind_equation(kind: str | None = None) -> str:
    """The LaTeX of the chosen kind's update (the Kind widget's, by default), its readout and the loss."""
    return equations.kind_equation(kind or st.session_state.get(key("kind")) or PRESETS[DEFAULT_PRESET].config.kind)


def family(kind: str) -> str:
    """The preset family of a kind: "recurrent" for RNN, LSTM and GRU, which share one; any other kind is its own."""
    return "recurrent" if kind in ("rnn", "lstm", "gru") else kind


def base_config(kind: str) -> TrainConfig:
    """The preset a run of ``kind`` takes what has no widget from (schedule, state reset, …): the chosen one when it
    is of the kind's family, else the family's own."""
    preset = LIVE_PRESETS.get(st.session_state.get(key("preset")), PRESETS[DEFAULT_PRESET])
    if family(kind) != family(preset.config.kind):
        preset = LIVE_PRESETS[FAMILY_PRESETS[family(kind)]]
    return preset.config


def on_kind_change() -> None:
    """Kind → Transformer selects the tuned Transformer preset's settings (shape, heads, context, AdamW with
    warm-up, B, T); Kind → minGRU, sLSTM, mLSTM, selective SSM or linear attention that kind's preset's; back to RNN,
    LSTM or GRU, the default recurrent preset's, with the kind chosen. The corpus stays. Each kind then starts from
    settings that train; any of them can be changed afterwards."""
    state = st.session_state
    kind = state[key("kind")]
    current = LIVE_PRESETS.get(state.get(key("preset")), PRESETS[DEFAULT_PRESET])
    if family(kind) == family(current.config.kind):
        return  # RNN ↔ LSTM ↔ GRU: only the kind changes
    name = FAMILY_PRESETS[family(kind)]
    values = preset_values(name)
    for corpus_key in (key("source"), key("builtin")):
        values.pop(corpus_key)
    state[key("preset")] = name
    state.update(values)
    state[key("kind")] = kind


def apply_preset() -> None:
    """on_change of the preset box: every setting takes the preset's value."""
    st.session_state.update(preset_values(st.session_state[key("preset")]))


def init_settings() -> None:
    """Once per session: the preset from the link (or the default) fills every setting."""
    restore_from_link(PAGE, LINK)
    if key("kind") not in st.session_state:
        st.session_state.setdefault(key("preset"), DEFAULT_PRESET)
        apply_preset()


def _sync_lr_from_scale() -> None:
    st.session_state[key("lr")] = st.session_state[key("lr_scale")]


def _sync_scale_from_lr() -> None:
    lr = st.session_state[key("lr")]
    if lr is not None and 0 < lr <= MAX_LR:
        st.session_state[key("lr_scale")] = _nearest(LR_OPTIONS, lr)


# --- Widgets ----------------------------------------------------------------------------------------------


def preset_for(config: TrainConfig, corpus_name: str, current: str | None) -> str | None:
    """The preset a run's config was built from: one whose settings that have no widget (embedding width,
    learning-rate schedule, …) equal the config's, the current one first, then one for the run's corpus."""
    shown = {"kind", "layers", "hidden", "embedding", "dropout", "optimizer", "lr", "batch", "seq_len", "clip",
             "forget_bias", "seed", "n_head", "block_size"}  # set by widgets (and the sidebar's seed)
    matching = [name for name, p in LIVE_PRESETS.items()
                if all(getattr(p.config, f.name) == getattr(config, f.name) for f in fields(TrainConfig)
                       if f.name not in shown)]
    ranked = sorted(matching, key=lambda name: (name != current, LIVE_PRESETS[name].corpus != corpus_name))
    return ranked[0] if ranked else None


def adopt_run(run: LiveRun) -> None:
    """Set every setting widget to the values ``run`` was built with, and its corpus as the next one: a
    session that takes up a run from its address shows that run's settings, not the defaults."""
    config, state = run.trainer.config, st.session_state
    preset = preset_for(config, run.corpus_name, state.get(key("preset")))
    if preset is not None:
        state[key("preset")] = preset
    state.update({**config_widgets(config), key("budget"): run.settings.step_budget,
                  key("sample_every"): run.settings.sample_every, key("cool_down"): run.settings.cool_down})
    if run.settings.sample_every not in SAMPLE_EVERY_OPTIONS:
        state[key("sample_every")] = sample_every_for(run.settings.step_budget)
    corpus = run.trainer.corpus
    if corpus.name in BUILTIN_CORPORA:
        state[key("source")], state[key("builtin")] = SOURCES[0], corpus.name
    else:  # an upload or pasted text: the run's own text stays the next run's corpus
        state[key("source")] = SOURCES[1]
    state[ACTIVE_CORPUS] = corpus


def _chosen_corpus_name() -> str | None:
    """The corpus the corpus widgets name right now (they are drawn after the preset)."""
    state = st.session_state
    if state.get(key("source"), SOURCES[0]) == SOURCES[0]:
        return state.get(REVERT_BUILTIN) or state.get(key("builtin"))
    corpus = active_corpus()
    return corpus.name if corpus is not None else None


def preset_note(preset: Preset, corpus_name: str | None) -> str:
    """What the preset learns, and in how long, when it trains on its own corpus; on another corpus, that the
    note is not about this one."""
    if corpus_name in (None, preset.corpus):
        if preset.config.grows:  # no budget to be tuned for: measured at every mark up to its minutes
            return f"{preset.note} Measured up to {preset.minutes:g} min on a 2-core CPU."
        return f"{preset.note} Tuned for about {preset.minutes:g} min on a 2-core CPU."
    return (f"The {preset.name} settings, on {literal(corpus_name)} instead of {preset.corpus}: what they learn "
            "there, and how fast, is for the run to show.")


def preset_picker() -> Preset:
    picker, share = st.columns([5, 1.3], vertical_alignment="bottom")
    picker.selectbox("Preset", list(LIVE_PRESETS), key=key("preset"), on_change=apply_preset, **KEEP,
                     help="Fills in every setting below: corpus, model and training. Change any of them afterwards.")
    mirror_to_link(LINK)
    with share:
        share_link(LINK)
    preset = LIVE_PRESETS[st.session_state[key("preset")]]
    st.caption(preset_note(preset, _chosen_corpus_name()))
    return preset


def _preset_growth() -> str:
    """The chosen preset's widening in words, while the settings keep room for it (TrainConfig.changed)."""
    state = st.session_state
    preset = LIVE_PRESETS.get(state.get(key("preset")))
    if preset is None or not preset.config.grows:
        return ""
    kind, hidden = state.get(key("kind"), preset.config.kind), state.get(key("hidden"), preset.config.hidden)
    if not isinstance(hidden, int) or not preset.config.growth_fits(kind, hidden):
        return ""
    return replace(preset.config, hidden=hidden).describe_growth().replace("It starts", "The preset starts", 1)


def model_widgets() -> None:
    st.radio("Kind", list(KIND_LABELS), format_func=KIND_LABELS.get, horizontal=True, key=key("kind"),
             on_change=on_kind_change, **KEEP)
    transformer = st.session_state.get(key("kind")) == "transformer"
    st.slider("Blocks L" if transformer else "Layers", 1, MAX_LAYERS, key=key("layers"), **KEEP)
    st.select_slider("Width C (the residual stream)" if transformer else "Hidden units H",
                     _with(HIDDEN_OPTIONS, st.session_state.get(key("hidden"))), key=key("hidden"), **KEEP)
    growth = _preset_growth()
    if growth:
        st.caption(growth)
    if transformer:
        st.session_state.setdefault(key("n_head"), TRANSFORMER_DEFAULTS.config.n_head)
        st.session_state.setdefault(key("block_size"), TRANSFORMER_DEFAULTS.config.block_size)
        cols = st.columns(2)
        cols[0].select_slider("Attention heads h", _with(HEAD_OPTIONS, st.session_state.get(key("n_head"))),
                              key=key("n_head"), **KEEP, help=HEADS_HELP["transformer"])
        cols[1].select_slider("Context (characters)", _with(CONTEXT_OPTIONS, st.session_state.get(key("block_size"))),
                              key=key("block_size"), **KEEP,
                              help="How far back one position can attend; windows of T ≤ this are trained.")
        st.caption(NO_CARRY)
    else:
        kind = st.session_state.get(key("kind"))
        if kind in HEADED_KINDS:
            st.session_state.setdefault(key("n_head"), LIVE_PRESETS[FAMILY_PRESETS[kind]].config.n_head)
            st.select_slider("Heads h", _with(HEAD_OPTIONS, st.session_state.get(key("n_head"))), key=key("n_head"),
                             **KEEP, help=HEADS_HELP[kind])
        st.toggle("Learned embedding", key=key("embedding"), **KEEP,
                  help="Off feeds one-hot x_t: then W_xh x_t picks one column of W_xh, which is all an embedding "
                       "does.")
        if kind == "mingru":
            st.caption(MINGRU_NOTE)
        elif kind in STATE_KINDS:
            st.caption(state_note(kind, base_config(kind).reset_state))
    single = st.session_state.get(key("layers"), 1) == 1
    if transformer:
        st.slider("Dropout", 0.0, 0.5, step=0.05, key=key("dropout"), **KEEP,
                  help="On attention weights, residual branches and embeddings, during training only.")
    else:
        st.slider("Dropout between layers", 0.0, 0.5, step=0.05, key=key("dropout"), disabled=single, **KEEP,
                  help="Acts between stacked layers only, so it needs 2 or more layers.")


def training_widgets() -> None:
    st.selectbox("Optimizer", OPTIMIZERS, key=key("optimizer"), **KEEP, help="SGD uses momentum 0.9.")
    st.select_slider("Learning rate (log scale)", LR_OPTIONS, key=key("lr_scale"), format_func=lambda v: f"{v:g}",
                     on_change=_sync_lr_from_scale, **KEEP)
    st.number_input("Exact learning rate", key=key("lr"), format="%g", step=None, on_change=_sync_scale_from_lr,
                    **KEEP, help=f"Any value in (0, {MAX_LR:g}].")
    cols = st.columns(2)
    cols[0].select_slider("Batch B", _with(BATCH_OPTIONS, st.session_state.get(key("batch"))), key=key("batch"),
                          **KEEP, help="Parallel streams of text per step.")
    transformer = st.session_state.get(key("kind")) == "transformer"
    cols[1].select_slider("Window T" if transformer else "TBPTT length T",
                          _with(SEQ_OPTIONS, st.session_state.get(key("seq_len"))), key=key("seq_len"), **KEEP,
                          help=("Characters per training window, at most the context." if transformer else
                                "Characters per chunk: the gradient flows back at most T steps."))
    st.toggle("Clip the gradient norm", key=key("clip_on"), **KEEP,
              help="Rescale the gradient g to θ·g/‖g‖ whenever ‖g‖ > θ.")
    st.select_slider("Clipping threshold θ", CLIP_OPTIONS, key=key("clip"), format_func=lambda v: f"{v:g}",
                     disabled=not st.session_state.get(key("clip_on")), **KEEP)
    if st.session_state.get(key("kind")) == "lstm":
        st.toggle("Set the forget-gate bias b_f at init", key=key("forget_bias_on"), **KEEP,
                  help="Off keeps torch's small random bias; a positive b_f starts with f_t near 1, remembering.")
        st.slider("Forget-gate bias b_f", -2.0, 5.0, step=0.5, key=key("forget_bias"),
                  disabled=not st.session_state.get(key("forget_bias_on")), **KEEP)
    st.caption(f"Seed {seed()} (set in the sidebar): the same seed gives the same initial weights and samples.")


def schedule_widgets(on_change) -> None:
    """Step budget and sample spacing; ``on_change`` applies them to a live run at once."""
    cols = st.columns(2)
    cols[0].number_input("Step budget", key=key("budget"), step=100, on_change=on_change, **KEEP,
                         help="Training stops after this many optimizer steps; raise it to train on.")
    cols[1].select_slider("Sample every N steps", SAMPLE_EVERY_OPTIONS, key=key("sample_every"),
                          on_change=on_change, **KEEP)
    st.toggle("Cool a copy down when the run stops", key=key("cool_down"), on_change=on_change, **KEEP,
              help=f"On Pause and at the budget's end, a copy of the model trains about a quarter of the run's time "
                   f"more (at most {MAX_COOL_SECONDS:g} s) with its learning rate falling to 0, which settles its "
                   "weights; samples then come from that copy. The run itself is not changed: Start goes on from its "
                   "own weights.")


def _with(options: tuple[int, ...], value) -> list[int]:
    """The options, plus a preset's value that is not among them."""
    return sorted(set(options) | ({value} if isinstance(value, int) else set()))


def active_corpus() -> Corpus | None:
    return st.session_state.get(ACTIVE_CORPUS)
