"""The Hidden-cell explorer's inputs: its widget keys and link, which model and text it reads, and which cell
it shows first. The package's ``page`` calls these in order; ``sections`` draws what follows."""


import numpy as np
import streamlit as st

from rnnviz.interpret import colortext
from rnnviz.interpret.finder import (
    QUANTITIES,
    CellId,
    CellTrace,
)
from rnnviz.interpret.textfeatures import features_for, guess_syntax, showcase_window
from rnnviz.ui.hidden_cell_explorer import data as ex
from rnnviz.ui.hidden_cell_explorer.imports import (
    STATES_PREFIX,
    StatesSource,
    launched_states,
    states_sources,
    upload_controls,
)
from rnnviz.ui.kit.corpora import download_shakespeare, needs_download
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_choice, parse_int_in
from rnnviz.ui.kit.models import (
    ModelSource,
    corpus_of,
    held_out_text,
    keep_known,
    launched_model,
    model_id,
    model_sources,
    named_corpus_mismatch,
    preferred,
    settled,
    syntax_of,
)
from rnnviz.ui.kit.widgets import literal, seed

PAGE = "explorer"
page_key = PageKeys(PAGE)
SOURCE = page_key("source")
TEXT_MODE, OWN_TEXT = page_key("text_mode"), page_key("own_text")
LENGTH, SYNTAX, SYNTAX_GUESSED = page_key("length"), page_key("syntax"), page_key("syntax_guessed")
LAYER, UNIT, QUANTITY, WINDOW = page_key("layer"), page_key("unit"), page_key("quantity"), page_key("window")
FEATURE, RANK_BY = page_key("feature"), page_key("rank_by")
FEATURE_TEXT, FEATURE_SWITCHED = page_key("feature_text"), page_key("feature_switched")
IMPORTANCE = page_key("importance")
DEFAULT_MODEL = "pretrained:lstm-python-stdlib"
WINDOW_CHARS = 2000  # characters coloured at once
WINDOW_STEP = 50  # characters between the window's starts
MINI_CHARS = 240  # characters in each mini colouring of the finder (a few lines)
MAX_CHARS = 20_000  # characters traced and ranked
# Below this many characters a ranking is not evidence: the best of thousands of cells' |r| is high by chance.
# Measured on the shipped Python model over held-out Python and English passages of 100…4,000 characters:
# below 1,500 a randomly initialised model of the same shape matched or beat the trained one's best |r| for
# some feature (quotes, indentation); from 1,500 on it never did.
MIN_RANK_CHARS = 2000
IMPORTANCE_CHARS = 30_000  # held-out characters scored per ablation
ALL_QUANTITIES = sorted({q for qs in QUANTITIES.values() for q in qs})
TEXT_MODES = {
    "corpus": "held-out text of its corpus",
    "sample": "text the model writes itself",
    "own": "my own text",
}
WINDOW_LINK = LinkParam("window", WINDOW, parse_int_in(0, MAX_CHARS), example="1000")
LINK = (
    LinkParam("model", SOURCE, str, example="pretrained:lstm-english-docs"),
    LinkParam("layer", LAYER, parse_int_in(0, 63), example="0"),
    LinkParam("unit", UNIT, parse_int_in(0, 65535), example="3"),
    LinkParam("q", QUANTITY, parse_choice(ALL_QUANTITIES), example="h"),
    WINDOW_LINK,
)



def explorable(kind: str) -> bool:
    """Whether the explorer can read a model of ``kind``: the finder records its cells."""
    return kind in QUANTITIES


def forget_model_choices() -> None:
    """on_change of the model: the next run reads the new model's text its way and picks its clearest cell."""
    for key in (LAYER, UNIT, QUANTITY, WINDOW, SYNTAX, FEATURE, RANK_BY, page_key("range"), IMPORTANCE):
        st.session_state.pop(key, None)


def select_cell(cell: CellId, window_start: int | None = None) -> None:
    """on_click of a ranked cell: show it in the colouring above (and move the window to where it acts)."""
    st.session_state[LAYER], st.session_state[UNIT], st.session_state[QUANTITY] = cell.layer, cell.unit, cell.quantity
    if window_start is not None:
        st.session_state[WINDOW] = window_start


def select_source(key: str) -> None:
    """Select a model or states that were just read, with its own text and clearest cell."""
    st.session_state[SOURCE] = key
    forget_model_choices()


def choose_model() -> ModelSource | StatesSource:
    """The model box: the session's own models, the one the server was started with, shipped ones, and states read
    from a file (no model); under it, the uploads."""
    # The explorer reads cells (rnnviz.interpret.finder's trace): the kinds it records quantities for (RNN, LSTM, GRU,
    # and each layer's h_t of the sLSTM … linear attention), never a minGRU's or a Transformer's.
    sources: dict[str, ModelSource | StatesSource] = {
        s.key: s for s in model_sources() if explorable(s.model.config.kind)}
    sources.update(states_sources())
    launched, _, launch_problem = launched_model()
    states_problem = launched_states()[1]
    for problem, what in ((launch_problem, "model"), (states_problem, "states")):
        if problem:
            st.error(f"The {what} the server was started with cannot be shown: {literal(problem)}",
                     icon=":material/error:")
    if not sources:
        st.error("There is no model to explore: the shipped models are missing from rnnviz/assets/models/ and this "
                 "session has not trained or uploaded one. Train one on the live-training page, or upload one below.")
    if st.session_state.get(SOURCE) not in sources:
        first = preferred([key for key in sources if not key.startswith(STATES_PREFIX)], DEFAULT_MODEL)
        states_key = next((key for key in sources if key.startswith(STATES_PREFIX)), None)
        if launched is None and states_key is not None:  # started with states and no model: open on the states
            first = states_key
        if SOURCE in st.session_state:
            st.warning(f"The model named in the link (model={literal(str(st.session_state[SOURCE])[:60])}) is not "
                       f"available here; showing {sources[first].label if first else 'nothing'}.",
                       icon=":material/link_off:")
        st.session_state[SOURCE] = first
    st.selectbox("Model", list(sources), format_func=lambda k: sources[k].label, key=SOURCE,
                 on_change=forget_model_choices)
    # Under the box, across the page: beside it, the open uploads left a tall empty column under the box.
    with st.expander("Upload a model, or states without one", icon=":material/upload:"):
        upload_controls(select_source)
    if not sources:
        st.stop()
    chosen = sources[st.session_state[SOURCE]]
    return chosen if isinstance(chosen, StatesSource) else settled(chosen)


def choose_states_text(source: StatesSource) -> tuple[CellTrace, str, str]:
    """The states' trace (cut to MAX_CHARS characters), their text, and how to read it (code or prose)."""
    trace, text = source.trace(MAX_CHARS)
    cut = f" (the first {MAX_CHARS:,} of {len(source.text):,})" if len(text) < len(source.text) else ""
    st.caption(f"{len(text):,} characters{cut} from {literal(source.states.name)}'s text, one state per character: "
               f"{trace.layers} layer{'s' if trace.layers > 1 else ''} of {trace.hidden} units, "
               f"quantities {', '.join(trace.quantities)}. There is "
               "no model, so nothing here predicts or writes: the sections that need one are left out.")
    if st.session_state.get(SYNTAX_GUESSED) != source.digest:  # new states: read their text as it looks
        st.session_state[SYNTAX], st.session_state[SYNTAX_GUESSED] = guess_syntax(text), source.digest
    syntax = st.selectbox("Read it as", ["code", "prose"], key=SYNTAX, help="Code: Python strings, # comments, "
                          "brackets outside strings. Prose: \"…\" quotes, every bracket.")
    return trace, text, syntax


def choose_text(source: ModelSource) -> tuple[str, str]:
    """The passage to trace and how to read it (code or prose); stops the page with a warning when unusable."""
    corpus = corpus_of(source)
    foreign = named_corpus_mismatch(source) if corpus is None else []
    if foreign:
        shown = ", ".join(colortext.describe_char(c) for c in foreign[:10]) + (" …" if len(foreign) > 10 else "")
        st.warning(f"This model's vocabulary of {source.vocab.size} characters does not match "
                   f"{literal(source.corpus)}, the corpus it says it was trained on: {len(foreign)} of that corpus's "
                   f"characters are not in it ({literal(shown)}). Its held-out text cannot be fed to this model, so "
                   "the text is one the model writes itself, or your own.", icon=":material/warning:")
    modes = (["corpus"] if corpus is not None else []) + ["sample", "own"]
    if st.session_state.get(TEXT_MODE) not in modes:
        st.session_state[TEXT_MODE] = modes[0]
    col_mode, col_length, col_syntax = st.columns([3, 2, 1])
    mode = col_mode.radio("Text", modes, format_func=TEXT_MODES.get, horizontal=True, key=TEXT_MODE)
    length = col_length.slider("Characters to trace and rank", 2000, MAX_CHARS, 10_000, step=1000, key=LENGTH,
                               disabled=mode == "own")
    if corpus is None:
        if needs_download(source.corpus):
            st.info(f"{literal(source.corpus)} is not on this server yet, so the text is one the model writes itself.")
            if st.button("Download Tiny Shakespeare (1.1 MB, checked against its published hash)",
                         key=page_key("download")):
                _, problem = download_shakespeare()
                if problem:
                    st.error(literal(problem))
                else:
                    st.rerun()
        elif mode == "corpus":
            st.info(f"This server has no copy of {literal(source.corpus)}.")
    if mode == "corpus":
        text = held_out_text(corpus, length)
        st.caption(f"{len(text):,} characters from the held-out 10% of {literal(corpus.name)}, which training never "
                   "read.")
    elif mode == "sample":
        text = ex.model_sample(model_id(source), source.model, source.vocab.chars, length, seed())
        st.caption(f"{len(text):,} characters the model wrote itself (temperature 0.8, seed {seed()}).")
    else:
        raw = st.text_area("Your text", key=OWN_TEXT, max_chars=MAX_CHARS, height=150,
                           placeholder="Paste code or prose here (up to 20,000 characters).")
        text, unknown = keep_known(raw.replace("\r\n", "\n"), source.vocab)
        if unknown:
            shown = ", ".join(colortext.describe_char(c) for c in unknown[:15]) + (" …" if len(unknown) > 15 else "")
            st.warning(f"{len(unknown)} kind(s) of character the model never saw were left out: {literal(shown)}")
        if len(text) < 20:
            st.warning("Type or paste at least 20 characters the model knows, so that there is something to colour.")
            st.stop()
        st.caption(f"{len(text):,} characters. Colouring works on any length; ranking cells needs at least "
                   f"{MIN_RANK_CHARS:,}.")
    default_syntax = syntax_of(source.corpus)
    syntax = col_syntax.selectbox("Read it as", ["code", "prose"], index=["code", "prose"].index(default_syntax),
                                  key=SYNTAX, help="Code: Python strings, # comments, brackets outside strings. "
                                  "Prose: \"…\" quotes, every bracket.")
    return text, syntax


def showcase(text: str, track: np.ndarray) -> tuple[int, int]:
    """(start of the mini colourings, start of the main window) where ``track`` varies most.

    The mini passage starts at a line start; the main window puts it a quarter of the way down.
    """
    mini_start = showcase_window(track, MINI_CHARS)
    line_start = text.rfind("\n", 0, mini_start) + 1
    mini_start = line_start if mini_start - line_start <= 80 else mini_start
    window_start = min(max(mini_start - WINDOW_CHARS // 4, 0), max(len(text) - WINDOW_CHARS, 0))
    window_start = window_start // WINDOW_STEP * WINDOW_STEP
    return mini_start, window_start


def ensure_cell(trace, rankings, feature: str, text: str, tracks: dict) -> CellId:
    """The selected cell; when none (or an impossible one) is selected, the feature's clearest cell, shown
    where the feature varies most."""
    state = st.session_state
    best = rankings[feature].clearest or rankings[feature].best
    clearest = best.cell if best is not None else CellId(0, 0, "h")
    chosen = state.get(LAYER), state.get(UNIT), state.get(QUANTITY)
    if any(value is not None for value in chosen):  # a cell chosen, or named (in part) by a link
        layer, unit, quantity = (value if value is not None else default
                                 for value, default in zip(chosen, (clearest.layer, clearest.unit, clearest.quantity),
                                                           strict=True))
        try:
            cell = CellId(int(layer), int(unit), str(quantity))
            trace.check(cell)
        except (ValueError, TypeError) as err:  # a link's cell that this model does not have
            st.warning(f"The cell in the link is not in this model ({literal(str(err))}), so the page shows "
                       f"{clearest.label}, the clearest {literal(feature)} cell, instead.", icon=":material/link_off:")
        else:
            if None in chosen:
                select_cell(cell)
            if WINDOW not in state:  # set before the link is shared above the colouring, so that it carries it
                state[WINDOW] = 0
            return cell
    # A window a link named is kept; else the window shows the cell where the feature varies most.
    select_cell(clearest, None if WINDOW in state else showcase(text, tracks[feature])[1])
    return clearest


def default_feature(rankings, syntax: str) -> str:
    """The feature tracked most clearly among those that vary in the text: quotes or indentation for code when
    either varies, else any."""
    varying = [f for f in rankings if rankings[f].varies and (rankings[f].clearest or rankings[f].best)]
    preferred = [f for f in (("string", "indent") if syntax == "code" else features_for(syntax)) if f in varying]
    scored = [(abs((rankings[f].clearest or rankings[f].best).r), f) for f in preferred or varying]
    return max(scored)[1] if scored else features_for(syntax)[0]


def ensure_feature(rankings, syntax: str, text: str) -> str:
    """The feature the finder ranks by: the one chosen, unless the text has just changed and the feature never
    changes in the new text (indentation in prose, say); then the new text's clearest varying feature, and
    ``FEATURE_SWITCHED`` keeps the one it replaced so that the finder can say so."""
    state = st.session_state
    chosen, text_id = state.get(FEATURE), (len(text), hash(text))
    new_text = state.get(FEATURE_TEXT) != text_id
    state[FEATURE_TEXT] = text_id
    state.pop(FEATURE_SWITCHED, None)
    if chosen not in rankings:
        state[FEATURE] = default_feature(rankings, syntax)
    elif new_text and not rankings[chosen].varies:
        state[FEATURE] = default_feature(rankings, syntax)
        if state[FEATURE] != chosen:
            state[FEATURE_SWITCHED] = chosen
    return state[FEATURE]


