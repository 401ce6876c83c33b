"""The Hidden-cell explorer's section 4: hold one cell fixed while the model writes, beside what it writes untouched,
and the loss without each top cell; both refused in words for a kind they do not cover."""

import streamlit as st

from rnnviz.charlm.sample import Intervention
from rnnviz.core.config import kind_label
from rnnviz.core.state_stack import CARRIED_WORDS, STATE_KINDS
from rnnviz.figures import explorer as figures
from rnnviz.interpret import colortext
from rnnviz.interpret.finder import CellId, ablation_importance
from rnnviz.interpret.textfeatures import FEATURES
from rnnviz.ui.hidden_cell_explorer import data as ex
from rnnviz.ui.hidden_cell_explorer.choices import IMPORTANCE, IMPORTANCE_CHARS, page_key
from rnnviz.ui.hidden_cell_explorer.sections import section_header
from rnnviz.ui.kit.models import corpus_of, held_out_text, keep_known, model_id
from rnnviz.ui.kit.widgets import literal, plot, seed, text_block


def not_held(kind: str) -> str | None:
    """Why a cell of ``kind`` cannot be held fixed or ablated, in words; None where it can."""
    if kind not in STATE_KINDS:
        return None
    return (f"Holding a cell fixed, and ablating the top cells, are not available for this {kind_label(kind)} model. "
            "Both are built on the RNN's, LSTM's and GRU's own step and their W_hh, whose whole state is h_t (and "
            f"c_t); this model carries its {CARRIED_WORDS[kind]} into the next step, and the engine has no such step "
            "for it. Sections 1–3 read its h_t as for any model.")


def intervene(source, trace, cell: CellId, text: str, start: int, ranked: list[CellId], feature: str) -> None:
    section_header("intervene")
    refused = not_held(source.model.config.kind)
    if refused:
        st.info(refused, icon=":material/block:")
        return
    st.markdown(f"Hold **unit {cell.unit} of layer {cell.layer}** fixed at every step while the model writes, and "
                "compare with what it writes untouched, from the same prime and the same random draws.")
    col_target, col_value, col_length, col_temp = st.columns([1.3, 2, 2, 2])
    targets = ["c", "h"] if trace.kind == "lstm" else ["h"]
    on = col_target.radio("Hold", targets, index=0 if cell.quantity == "c" and "c" in targets else len(targets) - 1,
                          format_func=lambda q: f"{q}_t", key=page_key("iv_on"))
    value = col_value.radio("at", [0.0, 1.0, -1.0], horizontal=True, key=page_key("iv_value"),
                            format_func=lambda v: "0 (ablate)" if v == 0 else f"{v:+g} (clamp)")
    length = col_length.slider("Characters to write", 50, 600, 300, step=50, key=page_key("iv_length"))
    temperature = col_temp.slider("Temperature", 0.0, 1.5, 0.7, step=0.1, key=page_key("iv_temperature"))
    refresh_prime(text, start)
    prime, unknown = keep_known(st.text_area("Prime", key=PRIME, max_chars=400, height=90), source.vocab)
    if unknown:
        st.warning("Characters the model never saw were left out of the prime: "
                   + literal(", ".join(colortext.describe_char(c) for c in unknown[:15])))
    iv = Intervention(cell.layer, cell.unit, float(value), on)
    args = (model_id(source), source.model, source.vocab.chars, prime, length, temperature, seed())
    normal, intervened = ex.continuation(*args, None), ex.continuation(*args, iv)
    left, right = st.columns(2)
    left.markdown("**Untouched**")
    text_block(prime + normal, left)
    right.markdown(f"**{on}_t of unit {cell.unit} held at {value:g}**")
    text_block(prime + intervened, right)
    if normal == intervened:
        st.caption("Identical: with this prime and these draws the model does not use this unit, or uses it too "
                   "little to change a single choice.")
    importance(source, text, ranked, feature)


PRIME, PRIME_FROM = page_key("prime"), page_key("prime_from")


def prime_from(text: str, start: int, length: int = 120) -> str:
    """Up to ``length`` characters of the text from the first line start at or after ``start``, cut at a line
    end when there is one; the text's own first characters when that leaves nothing."""
    line_start = text.find("\n", start) + 1 or start
    prime = text[line_start:line_start + length]
    prime = prime[: prime.rfind("\n") + 1] or prime
    return prime or text[start:start + length] or text[:length]


def refresh_prime(text: str, start: int) -> None:
    """Take the prime from the traced text: the first time, and whenever the text changes (another corpus, the
    model's own text, your own) while the prime is still the one taken from the old text. A prime you typed
    stays."""
    state, text_id = st.session_state, (len(text), hash(text))
    taken = state.get(PRIME_FROM)  # (the text it was taken from, the prime taken)
    if PRIME not in state or (taken is not None and taken[0] != text_id and state[PRIME] == taken[1]):
        state[PRIME] = prime_from(text, start)
        state[PRIME_FROM] = (text_id, state[PRIME])


def importance(source, text: str, ranked: list[CellId], feature: str) -> None:
    st.subheader("Importance: the loss without each top cell")
    corpus = corpus_of(source)
    held_out = held_out_text(corpus, IMPORTANCE_CHARS) if corpus is not None else text
    where = (f"{len(held_out):,} held-out characters of {literal(corpus.name)}" if corpus is not None
             else "the traced text")
    cells = list(dict.fromkeys(ranked))
    key = (model_id(source), tuple(cells), len(held_out))
    st.markdown(f"Ablate each of the top {len(cells)} cells for *{FEATURES[feature].label}* in turn (its unit's "
                f"h_t held at 0) and measure the loss on {where}. A cell the model relies on raises it.")
    if st.button(f"Measure the top {len(cells)} cells", key=page_key("importance_button"), disabled=not cells):
        progress = ex.run_progress("Ablating cell")
        base, deltas = ablation_importance(source.model, source.vocab.encode(held_out), cells, progress)
        st.session_state[IMPORTANCE] = (key, base, deltas)
    stored = st.session_state.get(IMPORTANCE)
    if stored and stored[0] == key:
        _, base, deltas = stored
        plot(figures.importance_figure([c.label for c in cells], deltas, base), key=page_key("importance_figure"))
