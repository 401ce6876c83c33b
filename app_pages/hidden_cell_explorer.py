"""Hidden-cell explorer: colour text by one cell, find interpretable cells, search patterns, intervene."""

import html

import numpy as np
import streamlit as st

from rnnviz import colortext
from rnnviz.checkpoint import CheckpointError, load_checkpoint
from rnnviz.figures import explorer as figures
from rnnviz.interpret import (
    QUANTITIES,
    QUANTITY_LABELS,
    CellId,
    ablation_importance,
    cell_correlations,
    match_ranges,
    pattern_cells,
    sorted_units,
)
from rnnviz.sample import Intervention
from rnnviz.textfeatures import FEATURES, features_for, first_run, showcase_window
from rnnviz.ui import explorer as ex
from rnnviz.ui.links import LinkParam, mirror_to_link, parse_choice, parse_int_in, restore_from_link, share_link
from rnnviz.ui.models import UPLOADED_KEY, model_sources
from rnnviz.ui.widgets import literal, page_header, plot, seed

PAGE = "explorer"
SOURCE, UPLOAD, UPLOAD_ERROR = f"{PAGE}_source", f"{PAGE}_upload", f"{PAGE}_upload_error"
TEXT_MODE, OWN_TEXT, LENGTH, SYNTAX = f"{PAGE}_text_mode", f"{PAGE}_own_text", f"{PAGE}_length", f"{PAGE}_syntax"
LAYER, UNIT, QUANTITY, WINDOW = f"{PAGE}_layer", f"{PAGE}_unit", f"{PAGE}_quantity", f"{PAGE}_window"
FEATURE, RANK_BY = f"{PAGE}_feature", f"{PAGE}_rank_by"
IMPORTANCE = f"{PAGE}_importance"
DEFAULT_MODEL = "pretrained:lstm-python-stdlib"
WINDOW_CHARS = 2000  # characters coloured at once
MINI_CHARS = 240  # characters in each mini colouring of the finder (a few lines)
MAX_CHARS = 20_000  # characters traced and ranked
IMPORTANCE_CHARS = 30_000  # held-out characters scored per ablation
ALL_QUANTITIES = sorted({q for qs in QUANTITIES.values() for q in qs})
TEXT_MODES = {
    "corpus": "held-out text of its corpus",
    "sample": "text the model writes itself",
    "own": "my own text",
}
LINK = (
    LinkParam("model", SOURCE, str),
    LinkParam("layer", LAYER, parse_int_in(0, 63)),
    LinkParam("unit", UNIT, parse_int_in(0, 65535)),
    LinkParam("q", QUANTITY, parse_choice(ALL_QUANTITIES)),
)


# --- callbacks -------------------------------------------------------------------------------------------


def forget_model_choices() -> None:
    """on_change of the model: the next run reads the new model's text its way and picks its clearest cell."""
    for key in (LAYER, UNIT, QUANTITY, WINDOW, SYNTAX, FEATURE, RANK_BY, f"{PAGE}_range", IMPORTANCE):
        st.session_state.pop(key, None)


def select_cell(cell: CellId, window_start: int | None = None) -> None:
    """on_click of a ranked cell: show it in the colouring above (and move the window to where it acts)."""
    st.session_state[LAYER], st.session_state[UNIT], st.session_state[QUANTITY] = cell.layer, cell.unit, cell.quantity
    if window_start is not None:
        st.session_state[WINDOW] = window_start


def read_upload() -> None:
    """on_change of the uploader: load through the safe loader and select it, or keep the reason."""
    st.session_state.pop(UPLOAD_ERROR, None)
    uploaded = st.session_state.get(UPLOAD)
    if uploaded is None:
        return
    try:
        st.session_state[UPLOADED_KEY] = load_checkpoint(uploaded.getvalue())
    except CheckpointError as err:
        st.session_state[UPLOAD_ERROR] = str(err)
        return
    st.session_state[SOURCE] = "uploaded"
    forget_model_choices()


# --- the model and the text ------------------------------------------------------------------------------


def choose_model() -> ex.ModelSource:
    sources = {s.key: s for s in model_sources()}
    if not sources:
        st.error("There is no model to explore: the shipped models are missing from assets/models/ and this "
                 "session has not trained or uploaded one. Train one on the live-training page, or upload one below.")
    if st.session_state.get(SOURCE) not in sources:
        if SOURCE in st.session_state:
            st.warning("The model named in the link is not available here; showing the shipped Python-code model.",
                       icon=":material/link_off:")
        st.session_state[SOURCE] = DEFAULT_MODEL if DEFAULT_MODEL in sources else next(iter(sources), None)
    col_model, col_upload = st.columns([3, 2])
    col_model.selectbox("Model", list(sources), format_func=lambda k: sources[k].label, key=SOURCE,
                        on_change=forget_model_choices)
    with col_upload.expander("Upload a checkpoint (.pt)"):
        st.file_uploader("A checkpoint saved by rnnviz", type=["pt"], key=UPLOAD, on_change=read_upload)
        if st.session_state.get(UPLOAD_ERROR):
            st.error(literal(st.session_state[UPLOAD_ERROR]))
    if not sources:
        st.stop()
    return ex.settled(sources[st.session_state[SOURCE]])


def choose_text(source: ex.ModelSource) -> tuple[str, str]:
    """The passage to trace and how to read it (code or prose); stops the page with a warning when unusable."""
    corpus = ex.corpus_of(source)
    foreign = ex.named_corpus_mismatch(source) if corpus is None else []
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
        if ex.corpus_needs_download(source.corpus):
            st.info(f"{literal(source.corpus)} is not on this server yet, so the text is one the model writes itself.")
            if st.button("Download Tiny Shakespeare (1.1 MB, checked against its published hash)",
                         key=f"{PAGE}_download"):
                problem = ex.download_tiny_shakespeare()
                if problem:
                    st.error(literal(problem))
                else:
                    st.rerun()
        elif mode == "corpus":
            st.info(f"This server has no copy of {literal(source.corpus)}.")
    if mode == "corpus":
        text = ex.held_out_text(corpus, length)
        st.caption(f"{len(text):,} characters from the held-out 10% of {literal(corpus.name)}, which training never "
                   "read.")
    elif mode == "sample":
        text = ex.model_sample(ex.model_id(source), source.model, source.vocab.chars, length, seed())
        st.caption(f"{len(text):,} characters the model wrote itself (temperature 0.8, seed {seed()}).")
    else:
        raw = st.text_area("Your text", key=OWN_TEXT, max_chars=MAX_CHARS, height=150,
                           placeholder="Paste code or prose here (up to 20,000 characters).")
        text, unknown = ex.keep_known(raw.replace("\r\n", "\n"), source.vocab)
        if unknown:
            shown = ", ".join(colortext.describe_char(c) for c in unknown[:15]) + (" …" if len(unknown) > 15 else "")
            st.warning(f"{len(unknown)} kind(s) of character the model never saw were left out: {literal(shown)}")
        if len(text) < 20:
            st.warning("Type or paste at least 20 characters the model knows, so that there is something to colour.")
            st.stop()
    default_syntax = ex.syntax_of(source.corpus)
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
    window_start = min(max(mini_start - WINDOW_CHARS // 4, 0), max(len(text) - WINDOW_CHARS, 0)) // 50 * 50
    return mini_start, window_start


def ensure_cell(trace, rankings, feature: str, text: str, tracks: dict) -> CellId:
    """The selected cell; when none (or an impossible one) is selected, the feature's clearest cell, shown
    where the feature varies most."""
    state = st.session_state
    try:
        cell = CellId(int(state[LAYER]), int(state[UNIT]), str(state[QUANTITY]))
        trace.check(cell)
        return cell
    except (KeyError, ValueError, TypeError):
        best = rankings[feature].clearest or rankings[feature].best
        cell = best.cell if best is not None else CellId(0, 0, "h")
        select_cell(cell, showcase(text, tracks[feature])[1])
        return cell


def default_feature(rankings, syntax: str) -> str:
    """The feature tracked most clearly: among quotes and indentation for code, any for prose."""
    candidates = ("string", "indent") if syntax == "code" else features_for(syntax)
    scored = [(abs(rankings[f].clearest.r), f) for f in candidates if rankings[f].clearest is not None]
    return max(scored)[1] if scored else features_for(syntax)[0]


# --- sections --------------------------------------------------------------------------------------------


def colour_by_cell(trace, vocab, text: str, tracks: dict) -> tuple[CellId, int, int]:
    st.header("1. Colour the text by one cell")
    cols = st.columns([1, 1, 2, 3])
    cols[0].selectbox("Layer", list(range(trace.layers)), key=LAYER)
    cols[1].number_input("Unit", 0, trace.hidden - 1, step=1, key=UNIT)
    cols[2].selectbox("Quantity", list(trace.quantities), format_func=QUANTITY_LABELS.get, key=QUANTITY)
    cell = CellId(int(st.session_state[LAYER]), int(st.session_state[UNIT]), st.session_state[QUANTITY])
    last_start = max(len(text) - WINDOW_CHARS, 0)
    st.session_state[WINDOW] = min(max(int(st.session_state.get(WINDOW, 0)), 0), last_start)
    if last_start > 0:
        cols[3].slider("Window start (characters)", 0, last_start, step=50, key=WINDOW)
    start = int(st.session_state[WINDOW])
    end = min(start + WINDOW_CHARS, len(text))
    values = trace.cell(cell)
    r = cell_correlations(values, tracks)
    best = max(r, key=lambda f: abs(r[f]))
    st.markdown(f"**{cell.label}**: correlation with each feature over all {len(text):,} characters: "
                + ", ".join(f"{FEATURES[f].label} r = {r[f]:+.2f}" for f in tracks)
                + f". Strongest: **{FEATURES[best].label}**.")
    scale = colortext.scale_for(cell.quantity, values)
    next_chars = [[vocab.chars[i] for i in row] for row in trace.next_ids[start:end]]
    tips = colortext.cell_tooltips(text[start:end], values[start:end], cell.quantity, next_chars,
                                   trace.next_probs[start:end], offset=start)
    st.html(colortext.legend_html(scale, f"{QUANTITY_LABELS[cell.quantity]}, characters {start:,}–{end - 1:,} "
                                  "(hover a character for its exact value and the model's top-5 next characters)")
            + colortext.colored_text_html(text[start:end], values[start:end], scale, tips))
    if st.toggle("Heatmap: every unit of this layer over the window", key=f"{PAGE}_heatmap"):
        sort_col, shown_col = st.columns(2)
        sort_by = sort_col.selectbox("Sort the units by |r| with", list(tracks), key=f"{PAGE}_heatmap_sort",
                                     format_func=lambda f: FEATURES[f].label)
        shown = shown_col.slider("Units shown", 8, trace.hidden, min(48, trace.hidden), key=f"{PAGE}_heatmap_units")
        units = sorted_units(trace, cell.layer, cell.quantity, tracks[sort_by])[:shown]
        block = trace.block(cell.layer, cell.quantity)
        plot(figures.heatmap_figure(block[start:end], units, text[start:end], start,
                                    colortext.scale_for(cell.quantity, block[:, units].ravel()), cell.quantity,
                                    f"by |r| with {FEATURES[sort_by].label}"), key=f"{PAGE}_heatmap_figure")
    return cell, start, end


def find_cells(trace, rankings, baseline, text: str, tracks: dict) -> list[CellId]:
    st.header("2. Find cells automatically")
    st.markdown(f"Every cell (each layer, unit and quantity: {trace.values.shape[0] * trace.layers * trace.hidden:,} "
                f"in all) is ranked by |r|, its correlation with each feature over the {len(text):,} characters. "
                "Features overlap (long lines are often deeply indented), so the *clearest* cell is the best one "
                "among cells that track this feature more than any other. For an on/off feature, the best single "
                "threshold on the cell is scored too. The last column ranks a **randomly initialised** model of the "
                "same shape the same way: what it reaches is chance.")
    rows = []
    for name, ranking in rankings.items():
        best, chance = ranking.best, baseline[name].best
        accuracy = ranking.by_accuracy[0] if ranking.by_accuracy else None
        clearest = ranking.clearest
        rows.append({
            "feature": FEATURES[name].label,
            "best cell": best.cell.label if best else "(constant here)",
            "r": round(best.r, 3) if best else None,
            "clearest cell": f"{clearest.cell.label}: r = {clearest.r:+.3f}" if clearest else "",
            "threshold accuracy": f"{accuracy.accuracy:.1%} (guessing {ranking.base_rate:.1%})" if accuracy else "",
            "random model |r|": round(abs(chance.r), 3) if chance else None,
        })
    st.dataframe(rows, hide_index=True, width="stretch")
    feature = st.selectbox("Feature", list(rankings), format_func=lambda f: FEATURES[f].label, key=FEATURE)
    ranking = rankings[feature]
    if not ranking.varies:
        st.warning(f"{FEATURES[feature].label.capitalize()} never changes in this text, so no cell can track it. "
                   "Choose another feature or a longer text.")
        return []
    ranked = ranking.by_correlation
    if ranking.by_accuracy and st.radio("Rank by", ["|r|", "threshold accuracy"], horizontal=True,
                                        key=RANK_BY) == "threshold accuracy":
        ranked = ranking.by_accuracy
    track = tracks[feature]
    mini_start, window_start = showcase(text, track)
    mini = slice(mini_start, mini_start + MINI_CHARS)
    feature_scale = colortext.Scale(-max(float(track.max()), 1.0), 0.0, max(float(track.max()), 1.0))
    st.html(f'<div style="font-size:14px;margin-top:6px">The feature itself, {html.escape(FEATURES[feature].label)}'
            f', on characters {mini_start:,}–{mini_start + MINI_CHARS - 1:,}:</div>'
            + colortext.colored_text_html(text[mini], track[mini], feature_scale, font_size=12))
    for rank, scored in enumerate(ranked, start=1):
        values = trace.cell(scored.cell)
        left, middle, right = st.columns([2.3, 6.5, 1], vertical_alignment="center")
        detail = f"r = {scored.r:+.3f}"
        if scored.accuracy is not None:
            direction = ">" if scored.above else "<"
            detail += f"; {scored.accuracy:.1%} when on ⇔ value {direction} {scored.threshold:.2f}"
        left.markdown(f"**{rank}. {scored.cell.label}**  \n{detail}")
        with middle:
            st.html(colortext.colored_text_html(text[mini], values[mini], colortext.scale_for(scored.cell.quantity,
                                                                                                values), font_size=12))
        right.button("Show", key=f"{PAGE}_show_{rank}", on_click=select_cell, args=(scored.cell, window_start),
                     help="Colour the text above by this cell")
    chance = baseline[feature].by_correlation
    with st.expander(f"The same ranking for a randomly initialised {trace.kind.upper()} of the same shape"):
        st.markdown(f"Best |r| by chance: **{abs(chance[0].r):.3f}** against **{abs(ranked[0].r):.3f}** for the "
                    "trained model. Cells of an untrained network already respond to the characters they read, so "
                    "features such as 'digit' or 'uppercase' can score well by chance; the gap is what training added.")
        st.dataframe([{"rank": i + 1, "cell": c.cell.label, "r": round(c.r, 3)} for i, c in enumerate(chance)],
                     hide_index=True)
    return [scored.cell for scored in ranked]


def default_range(text: str, tracks: dict, start: int, end: int) -> tuple[int, int]:
    """A selection worth searching for: the first short bracketed stretch in the window, else its first word."""
    span = first_run(tracks["bracket_depth"] > 0, start, end, min_length=3, max_length=30)
    if span is None:
        words = np.flatnonzero(tracks["word_start"][start:end])
        first = start + (int(words[0]) if words.size else 0)
        last = first
        while last < end and (text[last].isalnum() or text[last] == "_"):
            last += 1
        span = (first, max(last, first + 1))
    return span


def pattern_search(trace, text: str, tracks: dict, cell: CellId, start: int, end: int) -> None:
    st.header("3. Pattern search")
    col_quantity, col_mode, col_theta, col_before, col_after = st.columns([2, 2, 2, 1, 1])
    quantity = col_quantity.selectbox(f"Cells: layer {cell.layer}'s", list(trace.quantities),
                                      format_func=QUANTITY_LABELS.get, key=f"{PAGE}_pattern_quantity")
    mode = col_mode.radio("Select by", ["range", "substring"], horizontal=True, key=f"{PAGE}_pattern_mode")
    theta = col_theta.slider("Threshold θ", -1.0, 1.0, 0.3, step=0.05, key=f"{PAGE}_theta")
    pad_before = col_before.number_input("Padding before", 0, 50, 2, key=f"{PAGE}_pad_before")
    pad_after = col_after.number_input("Padding after", 0, 50, 2, key=f"{PAGE}_pad_after")
    st.markdown(f"Select a few characters. The cells **on** there are the units whose {quantity} is at least θ at "
                "every selected character and below θ in the padding around it; then the traced text is searched "
                "for other places where the same cells are all on (after LSTMVis).")
    block = trace.block(cell.layer, quantity)
    if mode == "range":
        key = f"{PAGE}_range"
        if key not in st.session_state or not start <= st.session_state[key][0] <= st.session_state[key][1] <= end:
            st.session_state[key] = default_range(text, tracks, start, end)
        lo, hi = st.slider("Range of characters (start, end): the end is not included; arrow keys move one "
                           "character", start, end, key=key)
    else:
        needle = st.text_input("Substring", "return", max_chars=200, key=f"{PAGE}_substring")
        found = text.find(needle, start) if needle else -1
        found = text.find(needle) if needle and found < 0 else found
        if not needle or found < 0:
            st.warning("Type a substring that occurs in the traced text; "
                       f"{literal(needle[:40]) or 'an empty one'} does not.")
            return
        lo, hi = found, found + len(needle)
    if hi <= lo:
        st.warning("The selected range is empty: move the two ends of the range apart so that it covers at "
                   "least one character.")
        return
    st.html(context_html(text, [(lo, hi, f"selected at {lo:,}")]))
    units = pattern_cells(block, lo, hi, theta, int(pad_before), int(pad_after))
    if units.size == 0:
        st.info(f"No unit of layer {cell.layer}'s {quantity} is ≥ {theta:g} at every selected character and "
                "below it in the padding. Lower θ or the padding, or select fewer characters.")
        return
    st.markdown(f"**{units.size} cell(s) on:** " + ", ".join(f"unit {u}" for u in units[:40])
                + (" …" if units.size > 40 else ""))
    view_lo, view_hi = max(min(lo, start), lo - 300), min(max(hi, end), hi + 300)
    plot(figures.pattern_lines_figure(block[view_lo:view_hi], units, text[view_lo:view_hi], view_lo, (lo, hi), theta),
         key=f"{PAGE}_pattern_lines")
    matches = match_ranges(block, units, theta, exclude=(lo, hi), target_length=hi - lo)
    if not matches:
        st.info("Nowhere else in the traced text are all of these cells on at once.")
        return
    st.markdown(f"**Top {len(matches)} other places where all {units.size} cell(s) are on** (score: the share of "
                "cells on there that belong to the selection; 1 means no other cell is on):")
    st.html(context_html(text, [(m.start, m.end, f"{m.score:.2f} at {m.start:,}") for m in matches]))


def context_html(text: str, spans: list[tuple[int, int, str]], context: int = 30) -> str:
    """One line per span: its label, then the span highlighted between ``context`` characters either side.

    Every character goes through html.escape; whitespace is drawn visibly, as in the colouring.
    """
    def show(part: str) -> str:
        return html.escape("".join(colortext.visible_char(c) for c in part))

    lines = [
        f'<div><span style="display:inline-block;width:200px">{html.escape(label)}</span>'
        f'<span style="color:rgb(120,120,120)">{show(text[max(lo - context, 0):lo])}</span>'
        f'<span style="background:rgb(253,219,199);font-weight:600">{show(text[lo:hi])}</span>'
        f'<span style="color:rgb(120,120,120)">{show(text[hi:hi + context])}</span></div>'
        for lo, hi, label in spans
    ]
    return ('<div style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:14px;line-height:1.6;'
            'white-space:pre;overflow-x:auto">' + "".join(lines) + "</div>")


def intervene(source, trace, cell: CellId, text: str, start: int, ranked: list[CellId], feature: str) -> None:
    st.header("4. Intervene")
    st.markdown(f"Hold **unit {cell.unit} of layer {cell.layer}** fixed at every step while the model writes, and "
                "compare with what it writes untouched, from the same prime and the same random draws.")
    col_target, col_value, col_length, col_temp = st.columns([1.3, 2, 2, 2])
    targets = ["c", "h"] if trace.kind == "lstm" else ["h"]
    on = col_target.radio("Hold", targets, index=0 if cell.quantity == "c" and "c" in targets else len(targets) - 1,
                          format_func=lambda q: f"{q}_t", key=f"{PAGE}_iv_on")
    value = col_value.radio("at", [0.0, 1.0, -1.0], horizontal=True, key=f"{PAGE}_iv_value",
                            format_func=lambda v: "0 (ablate)" if v == 0 else f"{v:+g} (clamp)")
    length = col_length.slider("Characters to write", 50, 600, 300, step=50, key=f"{PAGE}_iv_length")
    temperature = col_temp.slider("Temperature", 0.0, 1.5, 0.7, step=0.1, key=f"{PAGE}_iv_temperature")
    line_start = text.find("\n", start) + 1 or start  # the prime starts and ends at line ends
    default_prime = text[line_start:line_start + 120]
    default_prime = default_prime[: default_prime.rfind("\n") + 1] or default_prime
    st.session_state.setdefault(f"{PAGE}_prime", default_prime)
    prime, unknown = ex.keep_known(st.text_area("Prime", key=f"{PAGE}_prime", max_chars=400, height=90),
                                   source.vocab)
    if unknown:
        st.warning("Characters the model never saw were left out of the prime: "
                   + literal(", ".join(colortext.describe_char(c) for c in unknown[:15])))
    iv = Intervention(cell.layer, cell.unit, float(value), on)
    args = (ex.model_id(source), source.model, source.vocab.chars, prime, length, temperature, seed())
    normal, intervened = ex.continuation(*args, None), ex.continuation(*args, iv)
    left, right = st.columns(2)
    left.markdown("**Untouched**")
    left.code(prime + normal, language=None, wrap_lines=True)
    right.markdown(f"**{on}_t of unit {cell.unit} held at {value:g}**")
    right.code(prime + intervened, language=None, wrap_lines=True)
    if normal == intervened:
        st.caption("Identical: with this prime and these draws the model does not use this unit, or uses it too "
                   "little to change a single choice.")
    importance(source, text, ranked, feature)


def importance(source, text: str, ranked: list[CellId], feature: str) -> None:
    st.subheader("Importance: the loss without each top cell")
    corpus = ex.corpus_of(source)
    held_out = ex.held_out_text(corpus, IMPORTANCE_CHARS) if corpus is not None else text
    where = (f"{len(held_out):,} held-out characters of {literal(corpus.name)}" if corpus is not None
             else "the traced text")
    cells = list(dict.fromkeys(ranked))
    key = (ex.model_id(source), tuple(cells), len(held_out))
    st.markdown(f"Ablate each of the top {len(cells)} cells for *{FEATURES[feature].label}* in turn (its unit's "
                f"h_t held at 0) and measure the loss on {where}. A cell the model relies on raises it.")
    if st.button(f"Measure the top {len(cells)} cells", key=f"{PAGE}_importance_button", disabled=not cells):
        progress = ex.run_progress("Ablating cell")
        base, deltas = ablation_importance(source.model, source.vocab.encode(held_out), cells, progress)
        st.session_state[IMPORTANCE] = (key, base, deltas)
    stored = st.session_state.get(IMPORTANCE)
    if stored and stored[0] == key:
        _, base, deltas = stored
        plot(figures.importance_figure([c.label for c in cells], deltas, base), key=f"{PAGE}_importance_figure")


def watch_emerge(source, text: str, cell: CellId, start: int, end: int) -> None:
    st.header("5. Watch a cell emerge")
    snapshots = ex.live_snapshots() if source.key == "live" else []
    if not snapshots:
        st.info("Pick the live-trained model to replay it: while the live-training page trains, it keeps light "
                "copies of the weights every few steps, and this section recolours the passage above with the same "
                "cell at each of them.")
        return
    steps = [step for step, _ in snapshots]
    step = st.select_slider("Training step", steps, value=steps[-1], key=f"{PAGE}_snapshot_step")
    weights = dict(snapshots)[step]
    values = ex.snapshot_cell(ex.model_id(source)[:2], step, weights, source.model.config, source.vocab.chars,
                              text[:end], cell.layer, cell.unit, cell.quantity)
    scale = colortext.scale_for(cell.quantity, values)
    st.html(colortext.legend_html(scale, f"{cell.label} after {step:,} training steps")
            + colortext.colored_text_html(text[start:end], values[start:end], scale))


# --- the page --------------------------------------------------------------------------------------------

page_header(
    "hidden-cell-explorer",
    "Each unit of a character model holds one number per character it reads. Colour the text by that number "
    "and some units turn out to track something with a name: being inside a string, the depth of brackets, the "
    "indentation of a line. This page finds such cells by correlation r with features computed from the text, "
    "searches for on/off patterns, and tests a cell by holding it fixed while the model writes.",
    r"c_t = f_t \odot c_{t-1} + i_t \odot g_t, \quad h_t = o_t \odot \tanh(c_t), \qquad "
    r"r = \frac{\sum_t (a_t - \bar a)(y_t - \bar y)}{T\,\sigma_a\,\sigma_y}",
)
restore_from_link(PAGE, LINK)
for kept in (LAYER, UNIT, QUANTITY, WINDOW, FEATURE):
    # A run that stops early (too short a text) draws none of these widgets, and Streamlit would then drop
    # their state or show their defaults when they come back; assigning them keeps the selection.
    if kept in st.session_state:
        st.session_state[kept] = st.session_state[kept]
model_source = choose_model()
passage, syntax = choose_text(model_source)
trace_key = (*ex.model_id(model_source), passage)
cell_trace, rankings, baseline = ex.prepare(trace_key, model_source.model, model_source.vocab, passage, syntax,
                                            seed())
feature_tracks = ex.tracks_for(passage, syntax)
if st.session_state.get(FEATURE) not in rankings:
    st.session_state[FEATURE] = default_feature(rankings, syntax)
ensure_cell(cell_trace, rankings, st.session_state[FEATURE], passage, feature_tracks)
with st.container(horizontal=True, horizontal_alignment="right"):
    share_link(LINK)
chosen, window_start, window_end = colour_by_cell(cell_trace, model_source.vocab, passage, feature_tracks)
top_cells = find_cells(cell_trace, rankings, baseline, passage, feature_tracks)
pattern_search(cell_trace, passage, feature_tracks, chosen, window_start, window_end)
intervene(model_source, cell_trace, chosen, passage, window_start, top_cells, st.session_state[FEATURE])
watch_emerge(model_source, passage, chosen, window_start, window_end)
mirror_to_link(LINK)
