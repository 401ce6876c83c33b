"""The LSTM gates page's three sections: one cell value through f, i, g, o; one full step drawn with its numbers;
gate saturation in a trained model."""

import streamlit as st

from rnnviz.charlm.corpus import Vocab
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import shape_label
from rnnviz.figures import gates as figures
from rnnviz.lessons import gates
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.kit.cache import shared_figure
from rnnviz.ui.kit.instant import Stop, instant_figure, instant_slider
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import (
    LinkParam,
    mirror_to_link,
    parse_float_in,
    parse_int_in,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.models import (
    ModelSource,
    corpus_of,
    held_out_text,
    keep_known,
    model_id,
    model_sources,
    preferred,
    settled,
)
from rnnviz.ui.kit.widgets import plot, seed

PAGE = "lstm_gates"
page_key = PageKeys(PAGE)
C_PREV = 0.8  # the classroom trace starts from c_{t−1} = 0.8
GATE_SLIDERS = {  # gate: (label, low, high, default)
    "f": ("forget gate f", 0.0, 1.0, 0.5),
    "i": ("input gate i", 0.0, 1.0, 1.0),
    "g": ("candidate g", -1.0, 1.0, 0.2),
    "o": ("output gate o", 0.0, 1.0, 1.0),
}
STEP = page_key("step")
# The step of section 2's word (at most 24 characters); the word itself is not in the address.
STEP_LINK = LinkParam("t", STEP, parse_int_in(1, 24), example="2")
LINK = (
    *(LinkParam(gate, page_key(gate), parse_float_in(low, high), lambda v: f"{v:.2f}", example=example)
      for (gate, (_, low, high, _)), example in zip(GATE_SLIDERS.items(), ("0.95", "0.10", "-0.40", "0.30"))),
    STEP_LINK,
)
MAX_SATURATION_CHARS = 2000
DEFAULT_SATURATION_MODEL = "pretrained:lstm-english-docs"  # held-out prose reads well in a class


def apply_preset(values: tuple[float, float, float, float]) -> None:
    """on_click: set the four gate sliders to a teaching case."""
    for gate, value in zip("figo", values):
        st.session_state[page_key(gate)] = value


@st.cache_data(max_entries=64, show_spinner=False)
def step_detail(config: gates.StepModelConfig, t: int) -> gates.StepDetail:
    model, idx = gates.seeded_step_model(config)
    return gates.lstm_step_detail(model, idx, t)


def lstm_sources() -> list[ModelSource]:
    """The models this session can measure that have gates: LSTMs only."""
    return [source for source in model_sources() if source.model.config.kind == "lstm"]


@st.cache_data(max_entries=32, show_spinner="Running the text through the trace path…")
def saturation(model_key: tuple, _model: CharModel, vocab_chars: str, text: str) -> gates.SaturationStats:
    """Keyed by the model's id (source, weights, step) and the text; the model itself is not hashed."""
    return gates.gate_saturation(_model, Vocab(vocab_chars).encode(text))


@fragment
def one_number_through_the_gates() -> None:
    st.header("1. One number through the gates")
    st.markdown(f"Follow one component of the cell, starting from $c_{{t-1}} = {C_PREV}$. Set the gates by "
                "hand, or pick a teaching case.")
    restore_from_link(PAGE, LINK)
    for gate, (_, _, _, default) in GATE_SLIDERS.items():
        st.session_state.setdefault(page_key(gate), default)
    # One row that wraps where it runs out of room, each button as wide as its name (equal columns cut "Forget
    # near 1, still writing" on a tablet).
    with st.container(horizontal=True):
        for name, (values, _) in gates.PRESETS.items():
            st.button(name, key=page_key("preset", name), on_click=apply_preset, args=(values,))
        share_link(LINK)
    slider_cols = st.columns(4)
    for col, (gate, (label, low, high, _)) in zip(slider_cols, GATE_SLIDERS.items()):
        col.slider(label, low, high, step=0.01, key=page_key(gate))
    mirror_to_link(LINK)
    f, i, g, o = (st.session_state[page_key(gate)] for gate in "figo")
    trace = gates.OneNumber(C_PREV, f, i, g, o)
    lesson = next((text for values, text in gates.PRESETS.values() if values == (f, i, g, o)), None)
    if lesson:
        st.info(lesson, icon=":material/school:")
    st.latex(
        rf"c_t = f \cdot c_{{t-1}} + i \cdot g = {f:.2f} \cdot {C_PREV:.2f} + {i:.2f} \cdot ({g:.2f}) "
        rf"= {trace.kept:.3f} + ({trace.written:.3f}) = \mathbf{{{trace.c_t:.3f}}}"
    )
    st.latex(
        rf"h_t = o \cdot \tanh(c_t) = {o:.2f} \cdot \tanh({trace.c_t:.3f}) = {o:.2f} \cdot {trace.tanh_c:.3f}"
        rf" = \mathbf{{{trace.h_t:.3f}}}"
    )
    fig_col, num_col = st.columns([3, 1])
    with fig_col:
        plot(shared_figure(figures.one_number_figure, trace, key=(C_PREV, f, i, g, o)), key=page_key("one_number"))
    with num_col:
        st.metric("c_t, the new cell", f"{trace.c_t:.3f}")
        st.metric("h_t, what is exposed", f"{trace.h_t:.3f}")
        st.metric(r"kept, $f \cdot c_{t-1}$", f"{trace.kept:.3f}")
        st.metric(r"written, $i \cdot g$", f"{trace.written:.3f}")


def step_figures(config: gates.StepModelConfig, figure) -> list:
    """``figure`` (the cell diagram or the stacked W) at every step t of the word."""
    word, vocabulary = config.text, list(config.vocabulary)
    if figure is figures.lstm_step_figure:
        return [figure(step_detail(config, t), word[t - 1]) for t in range(1, len(word) + 1)]
    return [figure(step_detail(config, t), vocabulary) for t in range(1, len(word) + 1)]


# The step slider answers in the browser: the two figures of every step of the word are sent with the page, and a
# move shows the step's in the frame of the move (kit.instant). The word and H rerun this fragment.
@fragment
def one_full_step() -> None:
    st.header("2. One full LSTM step, drawn")
    st.markdown(
        "A small seeded LSTM reads a word one character at a time ($x_t$ is the character's one-hot vector). "
        "All four gates come from **one** product of the stacked $W$ with $[h_{t-1}; x_t]$; each strip shows "
        "a vector's numbers, one row per unit."
    )
    word_col, h_col, t_col = st.columns([2, 1, 2])
    word = word_col.text_input("word", "hello", max_chars=24, key=page_key("word"))
    hidden = h_col.slider("H, hidden size", 2, 8, 4, key=page_key("hidden"))
    try:
        step_config = gates.StepModelConfig(word, hidden, seed())
    except ValueError as err:
        st.error(f"{err}")
        step_config = None
    if step_config is not None:
        st.session_state.setdefault(STEP, min(3, len(word)))
        with t_col:
            instant_slider("step t", STEP, [Stop(t) for t in range(1, len(word) + 1)], link=STEP_LINK)
        mirror_to_link((STEP_LINK,))
        instant_figure(STEP, "cell", lambda: step_figures(step_config, figures.lstm_step_figure),
                       cache=(step_config, "cell"))
        st.subheader("The stacked W")
        counts = gates.parameter_counts(len(step_config.vocabulary), hidden)
        st.markdown(
            f"Rows come in four blocks in PyTorch's order **i, f, g, o** (the same order as `weight_ih_l0` and "
            f"`weight_hh_l0` in `nn.LSTM`); columns take $h_{{t-1}}$ (H = {hidden}) then $x_t$ "
            f"(D = {len(step_config.vocabulary)}, one column per character). Four blocks is why an LSTM has about 4× "
            "the parameters of a vanilla RNN of the same H."
        )
        instant_figure(STEP, "stacked_w", lambda: step_figures(step_config, figures.stacked_w_figure),
                       cache=(step_config, "stacked_w"))
        p1, p2, p3 = st.columns(3)
        p1.metric("vanilla RNN layer: H(H+D) + 2H", f"{counts['rnn']:,}")
        p2.metric("LSTM layer: 4·(H(H+D) + 2H)", f"{counts['lstm']:,}")
        p3.metric("LSTM ÷ RNN", f"{counts['lstm'] / counts['rnn']:.2f}×")


@fragment
def gate_saturation() -> None:
    st.header("3. Gate saturation")
    st.markdown(
        "Over a text, how often is each gate nearly shut (left-saturated: below 0.1) or wide open "
        "(right-saturated: above 0.9)? The candidate g_t ranges over −1…1, so its ends are below −0.8 and "
        "above 0.8. The gates are read from the trace path of a trained character LSTM: a shipped one, the "
        "one you trained on the live-training page, or an uploaded checkpoint."
    )
    sources = {source.key: source for source in lstm_sources()}
    if not sources:
        st.info("There is no trained LSTM to measure yet: train one on the live-training page.")
        return
    model_key = page_key("model")
    if st.session_state.get(model_key) not in sources:
        st.session_state[model_key] = preferred(sources, DEFAULT_SATURATION_MODEL)
    chosen = st.selectbox("model", list(sources), format_func=lambda key: sources[key].label, key=model_key)
    source = settled(sources[chosen])
    corpus = corpus_of(source)
    choices = (["held-out text", "your text"] if corpus is not None else ["your text"])
    text_source = st.radio("text", choices, horizontal=True, key=page_key("text_source"),
                           help="The held-out text is the last 10% of the model's own corpus, which training "
                                "never read.")
    held_out = held_out_text(corpus, MAX_SATURATION_CHARS) if corpus is not None else ""
    if text_source == "your text":
        text = st.text_area("your text", held_out[:400], max_chars=MAX_SATURATION_CHARS, key=page_key("text"))
    else:
        text = held_out
    text, unknown = keep_known(text, source.vocab)
    if unknown:
        listed = "".join(unknown[:20])
        st.warning(f"{len(unknown)} kind{'s' if len(unknown) > 1 else ''} of character the model never saw in "
                   f"training {'were' if len(unknown) > 1 else 'was'} skipped: {listed!r}.")
    if len(text) < 20:
        st.error("Give at least 20 characters that the model knows, so that the fractions mean something.")
        return
    stats = saturation(model_id(source), source.model, source.vocab.chars, text)
    config = source.model.config
    st.caption(f"{stats.characters:,} characters; {shape_label(config)} trained on "
               f"{source.corpus} for {source.step:,} steps.")
    measured = (model_id(source), text)
    plot(shared_figure(figures.saturation_bars_figure, stats, key=measured), key=page_key("saturation_bars"))
    plot(shared_figure(figures.saturation_histograms_figure, stats, key=measured), key=page_key("saturation_hist"))
    forget = stats.get(stats.layers - 1, "f")
    st.metric(f"forget gate, layer {stats.layers}: right-saturated (f > 0.9, remembering)", f"{forget.right:.1%}")
