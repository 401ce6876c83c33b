"""The Hidden-cell explorer's sections 1–3 and 5 (each one function that draws it from the trace and the rankings;
section 4 is in ``intervene``), and the anchors and contents line of all eight."""

import html
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from rnnviz.charlm.train import width_of
from rnnviz.core.config import kind_label
from rnnviz.figures import FADED, ON_LIGHT
from rnnviz.figures import explorer as figures
from rnnviz.interpret import colortext
from rnnviz.interpret.finder import (
    QUANTITY_LABELS,
    CellId,
    cell_correlations,
    match_ranges,
    pattern_cells,
    sorted_units,
)
from rnnviz.interpret.textfeatures import FEATURES, first_run
from rnnviz.ui.hidden_cell_explorer import data as ex
from rnnviz.ui.hidden_cell_explorer.choices import (
    FEATURE,
    FEATURE_SWITCHED,
    LAYER,
    MIN_RANK_CHARS,
    MINI_CHARS,
    QUANTITY,
    RANK_BY,
    UNIT,
    WINDOW,
    WINDOW_CHARS,
    WINDOW_LINK,
    WINDOW_STEP,
    page_key,
    select_cell,
    showcase,
)
from rnnviz.ui.kit.cache import shared_figure, shared_value
from rnnviz.ui.kit.instant import Stop, instant_slider
from rnnviz.ui.kit.instant import coloured_window as coloured_window_block
from rnnviz.ui.kit.models import model_id
from rnnviz.ui.kit.widgets import literal, name_bidi_controls, plot, table

# The page's sections by anchor: (header, short name for the contents line at the top).
SECTIONS = {
    "colour": ("1. Colour the text by one cell", "colour by a cell"),
    "find": ("2. Find cells automatically", "find cells"),
    "pattern": ("3. Pattern search", "pattern search"),
    "intervene": ("4. Intervene", "intervene"),
    "emerge": ("5. Watch a cell emerge", "watch a cell emerge"),
    "surprise": ("6. Where the model is sure, and where it is surprised", "surprisal and guesses"),
    "ngram": ("7. Against an n-gram: what the recurrence adds", "against an n-gram"),
    "path": ("8. The state's path through the text", "the state's path"),
}


def section_header(anchor: str) -> None:
    st.header(SECTIONS[anchor][0], anchor=anchor)


# What states read from a file, without their model, can show: the rest predicts or writes.
STATES_SECTIONS = ("colour", "find", "pattern", "path")


def contents(anchors=tuple(SECTIONS)) -> None:
    """One line of links to the page's sections (``anchors`` of them): the later ones are far down a long page."""
    st.markdown("**On this page:** " + " · ".join(f"[{SECTIONS[anchor][0].split('.')[0]}. {SECTIONS[anchor][1]}]"
                                                   f"(#{anchor})" for anchor in anchors))


def _values_table(trace, vocab, text: str, cell: CellId, start: int, end: int) -> pd.DataFrame:
    """The coloured window as a table: what a screen reader reads instead of the colours, and the CSV download."""
    values = trace.cell(cell)[start:end]
    columns = {
        "position": np.arange(start, end),
        "character": [colortext.describe_char(ch) for ch in text[start:end]],
        cell.label: values,
    }
    if trace.next_ids.shape[1]:  # states read from a file come without a model's guesses
        columns["top guess for the next character"] = [colortext.describe_char(vocab.chars[row[0]])
                                                       for row in trace.next_ids[start:end]]
        columns["its probability"] = trace.next_probs[start:end, 0]
    return pd.DataFrame(columns)


def colouring_as_text(trace_key: tuple, trace, vocab, text: str, cell: CellId, start: int, end: int,
                      coloured: Callable[[], str]) -> None:
    """The colouring's values as a table (for a screen reader, or a class's spreadsheet), and downloads of the table
    as CSV and of the coloured text (``coloured()``, the HTML of the window drawn above it) as an HTML page for a
    slide."""
    with st.expander("The same window as a table of values, and downloads", icon=":material/table:"):
        values = shared_value(_values_table, trace, vocab, text, cell, start, end, key=(trace_key, cell, start, end))
        table(values, height=260, column_config={cell.label: st.column_config.NumberColumn(format="%+.4f")},
              decimals={"its probability": 2})
        name = re.sub(r"[^A-Za-z0-9]+", "-", f"{cell.label} {start}-{end - 1}").strip("-")
        csv_col, html_col = st.columns(2)
        csv_col.download_button("Download the table (CSV)", lambda: values.to_csv(index=False), file_name=f"{name}.csv",
                                mime="text/csv", icon=":material/download:", key=page_key("csv"))

        def page() -> str:  # written out when the button is pressed, not on every run
            return f"<!doctype html><meta charset=utf-8><title>{html.escape(cell.label)}</title>{coloured()}"

        html_col.download_button("Download the coloured text (HTML)", page, file_name=f"{name}.html",
                                 mime="text/html", icon=":material/download:", key=page_key("html"))


def _mini_colouring(trace, text: str, cell: CellId, mini: slice) -> str:
    values = trace.cell(cell)
    return colortext.colored_text_html(text[mini], values[mini], colortext.scale_for(cell.quantity, values),
                                       font_size=12)


def window_starts(length: int) -> list[int]:
    """Where the colouring's window may start: every WINDOW_STEP characters, and the last start that still fills it."""
    last_start = max(length - WINDOW_CHARS, 0)
    return sorted({*range(0, last_start + 1, WINDOW_STEP), last_start})


def coloured_window(trace_key: tuple, trace, chars: str, text: str, cell: CellId) -> tuple[int, int]:
    """The cell's colouring of WINDOW_CHARS characters, and its window's (start, end). With a slider (a text longer
    than the window) it answers in the browser: the whole text's colours and tooltips are sent once, and each start's
    window is a slice of them (kit.instant.coloured_window)."""
    starts = window_starts(len(text))
    st.session_state[WINDOW] = min(max(int(st.session_state.get(WINDOW, 0)), 0), starts[-1])
    if len(starts) == 1:
        end = min(WINDOW_CHARS, len(text))
        st.html(shared_value(figures.cell_colouring_html, trace, chars, text, cell, 0, end,
                             key=(trace_key, cell, 0, end)))
        return 0, end
    shared = {"text": shared_value(figures.cell_colouring_data, trace, chars, text, cell, key=(trace_key, cell),
                                   name="explorer colouring data")}
    ends = [min(start + WINDOW_CHARS, len(text)) for start in starts]
    stops = [Stop(start, (coloured_window_block("text", start, end,
                                                figures.colouring_label(trace, cell, start, end)),), label=f"{start:,}")
             for start, end in zip(starts, ends)]
    index = instant_slider("Window start (characters)", WINDOW, stops, link=WINDOW_LINK, shared=shared)
    return starts[index], ends[index]


def colour_by_cell(trace_key: tuple, trace, vocab, text: str, tracks: dict) -> tuple[CellId, int, int]:
    """Section 1. ``trace_key`` (the model's id and the text) names the trace, so that what it draws for a
    cell is built once per server process and shared (rnnviz.ui.kit.cache.shared_value)."""
    section_header("colour")
    cols = st.columns([1, 1, 2])
    cols[0].selectbox("Layer", list(range(trace.layers)), key=LAYER)
    cols[1].number_input("Unit", 0, trace.hidden - 1, step=1, key=UNIT)
    cols[2].selectbox("Quantity", list(trace.quantities), format_func=QUANTITY_LABELS.get, key=QUANTITY)
    cell = CellId(int(st.session_state[LAYER]), int(st.session_state[UNIT]), st.session_state[QUANTITY])
    values = trace.cell(cell)
    r = cell_correlations(values, tracks)
    best = max(r, key=lambda f: abs(r[f]))
    st.markdown(f"**{cell.label}**: correlation with each feature over all {len(text):,} characters: "
                + ", ".join(f"{FEATURES[f].label} r = {r[f]:+.2f}" for f in tracks)
                + f". Strongest: **{FEATURES[best].label}**.")
    chars = vocab.chars if vocab else ""
    start, end = coloured_window(trace_key, trace, chars, text, cell)

    def coloured() -> str:  # the window's HTML, for its download: made when the button is pressed
        return shared_value(figures.cell_colouring_html, trace, chars, text, cell, start, end,
                            key=(trace_key, cell, start, end))

    colouring_as_text(trace_key, trace, vocab, text, cell, start, end, coloured)
    if st.toggle("Heatmap: every unit of this layer over the window", key=page_key("heatmap")):
        sort_col, shown_col = st.columns(2)
        sort_by = sort_col.selectbox("Sort the units by |r| with", list(tracks), key=page_key("heatmap_sort"),
                                     format_func=lambda f: FEATURES[f].label)
        shown = shown_col.slider("Units shown", 8, trace.hidden, min(48, trace.hidden), key=page_key("heatmap_units"))
        units = sorted_units(trace, cell.layer, cell.quantity, tracks[sort_by])[:shown]
        block = trace.block(cell.layer, cell.quantity)
        plot(figures.heatmap_figure(block[start:end], units, text[start:end], start,
                                    colortext.scale_for(cell.quantity, block[:, units].ravel(), 99.0), cell.quantity,
                                    f"by |r| with {FEATURES[sort_by].label}"), key=page_key("heatmap_figure"))
    return cell, start, end


def find_cells(trace_key: tuple, trace, rankings, baseline, text: str, tracks: dict) -> list[CellId]:
    section_header("find")
    st.markdown(f"Every cell (each layer, unit and quantity: {trace.values.shape[0] * trace.layers * trace.hidden:,} "
                f"in all) is ranked by |r|, its correlation with each feature over the {len(text):,} characters. "
                "Features overlap (long lines are often deeply indented), so the *clearest* cell is the best one "
                "among cells that track this feature more than any other. For an on/off feature, the best single "
                "threshold on the cell is scored too. The last column ranks "
                + ("the **same states with each unit shifted in time**" if trace.kind == "states" else
                   "a **randomly initialised** model of the same shape")
                + " the same way: what it reaches is chance.")
    rows = []
    for name, ranking in rankings.items():
        best, chance = ranking.best, baseline[name].best
        accuracy = ranking.by_accuracy[0] if ranking.by_accuracy else None
        clearest = ranking.clearest
        rows.append({
            "feature": short_label(name),
            "best cell": best.cell.label if best else "(constant here)",
            "r": best.r if best else None,
            "clearest cell": f"{clearest.cell.label}: r = {clearest.r:+.3f}" if clearest else "",
            "threshold accuracy": accuracy.accuracy if accuracy else None,
            "guessing": ranking.base_rate if accuracy else None,
            "random |r|": abs(chance.r) if chance else None,
        })
    short_text_note(trace, rankings, baseline, len(text))
    table(rows, width="stretch", column_config=TABLE_COLUMNS)
    feature = st.selectbox("Feature", list(rankings), format_func=lambda f: FEATURES[f].label, key=FEATURE)
    if st.session_state.get(FEATURE_SWITCHED) in FEATURES:
        st.caption(f"{FEATURES[st.session_state[FEATURE_SWITCHED]].label.capitalize()} never changes in this text, "
                   f"so the finder now ranks by {FEATURES[feature].label}.")
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
        left, middle, right = st.columns([2.3, 6.5, 1], vertical_alignment="center")
        detail = f"r = {scored.r:+.3f}"
        if scored.accuracy is not None:
            direction = ">" if scored.above else "<"
            detail += f"; {scored.accuracy:.1%} when on ⇔ value {direction} {scored.threshold:.2f}"
        left.markdown(f"**{rank}. {scored.cell.label}**  \n{detail}")
        with middle:
            st.html(shared_value(_mini_colouring, trace, text, scored.cell, mini,
                                 key=(trace_key, scored.cell, mini.start, mini.stop)))
        right.button("Show", key=page_key("show", rank), on_click=select_cell, args=(scored.cell, window_start),
                     help="Colour the text above by this cell")
    chance = baseline[feature].by_correlation
    if trace.kind == "states":
        title = "The same ranking for the same states, each unit shifted in time"
        why = ("the states' best. Each unit's values are shifted in time by its own random offset: they keep their "
               "spread and how slowly they change, but no longer line up with the text, so what they reach is "
               "chance; the gap is what lines up with the feature.")
    else:
        title = f"The same ranking for a randomly initialised {kind_label(trace.kind)} of the same shape"
        why = ("the trained model. Cells of an untrained network already respond to the characters they read, so "
               "features such as 'digit' or 'uppercase' can score well by chance; the gap is what training added.")
    with st.expander(title):
        st.markdown(f"Best |r| by chance: **{abs(chance[0].r):.3f}** against **{abs(ranked[0].r):.3f}** for {why}")
        table([{"rank": i + 1, "cell": c.cell.label, "r": c.r} for i, c in enumerate(chance)], decimals={"r": 3})
    return [scored.cell for scored in ranked]


# Widths in px: together they fit the page at 1400 × 900 (about 900 px beside the sidebar), so that every
# header and every value shows whole, a cell label of a 2-layer model included.
TABLE_COLUMNS = {
    "feature": st.column_config.TextColumn(width=175, help="The feature, named as in the Feature box below"),
    "best cell": st.column_config.TextColumn(width=145, help="The cell with the largest |r|"),
    "r": st.column_config.NumberColumn(width=62, format="%.3f", help="The best cell's correlation with the feature"),
    "clearest cell": st.column_config.TextColumn(width=210, help="The best cell among those that track this "
                                                 "feature more than any other"),
    "threshold accuracy": st.column_config.NumberColumn(
        width=135, format="percent",
        help="On/off features: how often the best single threshold on one cell tells on from off"),
    "guessing": st.column_config.NumberColumn(
        width=80, format="percent",
        help="On/off features: how often always guessing the more common of on and off is right"),
    "random |r|": st.column_config.NumberColumn(width=90, format="%.3f", help="The best |r| of a randomly "
                                                "initialised model of the same shape: chance"),
}


def short_label(feature: str) -> str:
    """A feature's label without its parenthesis: "indentation of the line (leading spaces)" → "indentation of
    the line"."""
    return re.sub(r" \([a-z ]+\)$", "", FEATURES[feature].label)


def short_text_note(trace, rankings, baseline, length: int) -> None:
    """Below MIN_RANK_CHARS characters, say that the ranking is chance, and where the random model wins here."""
    if length >= MIN_RANK_CHARS:
        return
    cells = trace.values.shape[0] * trace.layers * trace.hidden
    beaten = [FEATURES[f].label for f, ranking in rankings.items() if ranking.best is not None
              and baseline[f].best is not None and abs(baseline[f].best.r) >= abs(ranking.best.r)]
    here = (f" Here it does for {len(beaten)} feature(s): {', '.join(beaten)}." if beaten
            else " Here it does not, but that is luck more than evidence.")
    st.warning(f"**Too few characters to rank cells.** This text has {length:,} characters; below "
               f"{MIN_RANK_CHARS:,} the ranking is not evidence. The best of {cells:,} cells' correlations over so few "
               "characters is high by chance, so a randomly initialised model (the last column) can match or beat "
               f"the trained one.{here} Paste at least {MIN_RANK_CHARS:,} characters.", icon=":material/warning:")


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


def pattern_search(trace_key: tuple, trace, text: str, tracks: dict, cell: CellId, start: int, end: int) -> None:
    section_header("pattern")
    col_quantity, col_mode, col_theta, col_before, col_after = st.columns([2, 2, 2, 1, 1])
    quantity = col_quantity.selectbox(f"Cells: layer {cell.layer}'s", list(trace.quantities),
                                      format_func=QUANTITY_LABELS.get, key=page_key("pattern_quantity"))
    mode = col_mode.radio("Select by", ["range", "substring"], horizontal=True, key=page_key("pattern_mode"))
    theta = col_theta.slider("Threshold θ", -1.0, 1.0, 0.3, step=0.05, key=page_key("theta"))
    pad_before = col_before.number_input("Padding before", 0, 50, 2, key=page_key("pad_before"))
    pad_after = col_after.number_input("Padding after", 0, 50, 2, key=page_key("pad_after"))
    st.markdown(f"Select a few characters. The cells **on** there are the units whose {quantity} is at least θ at "
                "every selected character and below θ in the padding around it; then the traced text is searched "
                "for other places where the same cells are all on (after LSTMVis).")
    block = trace.block(cell.layer, quantity)
    if mode == "range":
        key = page_key("range")
        if key not in st.session_state or not start <= st.session_state[key][0] <= st.session_state[key][1] <= end:
            st.session_state[key] = default_range(text, tracks, start, end)
        lo, hi = st.slider("Range of characters (start, end): the end is not included; arrow keys move one "
                           "character", start, end, key=key)
    else:
        needle = st.text_input("Substring", "return", max_chars=200, key=page_key("substring"))
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
    drawn = (trace_key, cell.layer, quantity, tuple(units.tolist()), view_lo, view_hi, lo, hi, theta)
    plot(shared_figure(figures.pattern_lines_figure, block[view_lo:view_hi], units, text[view_lo:view_hi], view_lo,
                       (lo, hi), theta, key=drawn), key=page_key("pattern_lines"))
    matches = match_ranges(block, units, theta, exclude=(lo, hi), target_length=hi - lo)
    if not matches:
        st.info("Nowhere else in the traced text are all of these cells on at once.")
        return
    st.markdown(f"**Top {len(matches)} other places where all {units.size} cell(s) are on** (score: the share of "
                "cells on there that belong to the selection; 1 means no other cell is on):")
    st.html(context_html(text, [(m.start, m.end, f"{m.score:.2f} at {m.start:,}") for m in matches]))


def context_html(text: str, spans: list[tuple[int, int, str]], context: int = 30) -> str:
    """One line per span: its label, then the span highlighted between ``context`` characters either side. Every
    character goes through html.escape; whitespace is drawn visibly, as in the colouring."""
    def show(part: str) -> str:
        return html.escape(name_bidi_controls("".join(colortext.visible_char(c) for c in part)))

    lines = [  # two grid columns: a label takes its own width (never running over the text), the texts line up
        f'<span class="context-label">{html.escape(label)}</span>'
        f'<span class="context-text"><span style="{FADED}">{show(text[max(lo - context, 0):lo])}</span>'
        f'<span style="background:rgb(253,219,199);color:{ON_LIGHT};font-weight:600">{show(text[lo:hi])}</span>'
        f'<span style="{FADED}">{show(text[hi:hi + context])}</span></span>'
        for lo, hi, label in spans
    ]
    return ('<div style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:14px;line-height:1.6;'
            'white-space:pre;overflow-x:auto;display:grid;grid-template-columns:max-content max-content;'
            'column-gap:1.5em">' + "".join(lines) + "</div>")


def watch_emerge(source, text: str, cell: CellId, start: int, end: int) -> None:
    section_header("emerge")
    snapshots = ex.live_snapshots() if source.key == "live" else []
    if not snapshots:
        st.info("Pick the live-trained model to replay it: while the live-training page trains, it keeps light "
                "copies of the weights every few steps, and this section recolours the passage above with the same "
                "cell at each of them.")
        return
    steps = [step for step, _ in snapshots]
    step = st.select_slider("Training step", steps, value=steps[-1], key=page_key("snapshot_step"))
    weights = dict(snapshots)[step]
    values = ex.snapshot_cell(model_id(source)[:2], step, weights, source.model.config, source.vocab.chars,
                              text[:end], cell.layer, cell.unit, cell.quantity)
    if values is None:
        grown = next((s for s, weights in snapshots if s > step and width_of(weights) > cell.unit), None)
        by = f" by step {grown:,}" if grown is not None else " later"
        st.info(f"Unit {cell.unit} did not exist yet after {step:,} steps: this run started narrower and widened "
                f"to its full width{by} (the new units start with nothing to send). Pick a later step.")
        return
    scale = colortext.scale_for(cell.quantity, values)
    st.html(colortext.legend_html(scale, f"{cell.label} after {step:,} training steps")
            + colortext.colored_text_html(text[start:end], values[start:end], scale))


