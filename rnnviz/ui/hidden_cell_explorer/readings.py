"""The explorer's readings of the whole model, as the papers read it: where it is sure and where it is surprised
(the prediction strip), how far ahead of an n-gram it is and on which characters, and its state's path through the
passage. Each section is a fragment: its controls rerun it alone."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import streamlit as st

from rnnviz.charlm.corpus import CorpusError
from rnnviz.core.config import shape_label
from rnnviz.figures import PALETTE
from rnnviz.figures import explorer as figures
from rnnviz.figures.trajectory import trajectory_figure
from rnnviz.interpret import colortext, prediction_strip
from rnnviz.interpret.finder import QUANTITY_LABELS
from rnnviz.interpret.ngram import BUCKETS, RARE_WORD_COUNT, ErrorBreakdown, error_breakdown, innermost_openings
from rnnviz.interpret.surprisal import Predictions
from rnnviz.interpret.textfeatures import FEATURES
from rnnviz.interpret.trajectory import nearest, project
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hidden_cell_explorer import data as ex
from rnnviz.ui.hidden_cell_explorer.choices import FEATURE, page_key
from rnnviz.ui.hidden_cell_explorer.sections import context_html, section_header
from rnnviz.ui.kit.baselines import MAX_ORDER, baselines, corpus_digest
from rnnviz.ui.kit.cache import shared_value
from rnnviz.ui.kit.models import corpus_of
from rnnviz.ui.kit.widgets import plot, table

STRIP_START = page_key("strip_start")
STRIP_CHARS = 200  # characters in the strip at once: about four lines of columns on a laptop
SURPRISES_LISTED = 8
NGRAM_ORDER, NGRAM_BUCKET = page_key("ngram_order"), page_key("ngram_bucket")
DEFAULT_ORDER = 5
LONG_RANGE_MARGIN = 0.05  # a share of fixed errors within 5 points of the base rate is called "about as often"
EXAMPLES = 8
# The breakdown's buckets as its chart names them, in the paper's order, and their colours: what the recurrence
# fixes (greens), what both miss (blues), what only the model misses (red).
BUCKET_LABELS = {
    "long_range": "fixed: inside (…) or quotes opened ≥ n back",
    "ngram_other": "fixed: elsewhere",
    "dynamic_memory": "both wrong: a word seen earlier here",
    "rare_word": f"both wrong: a rare word (≤ {RARE_WORD_COUNT}× in training)",
    "word_start": "both wrong: a word's first letter",
    "both_other": "both wrong: anything else",
    "model_only": "only the model wrong",
}
BUCKET_COLOURS = {"long_range": "#1b7837", "ngram_other": "#7fbf7b", "dynamic_memory": "#2166ac",
                  "rare_word": "#4393c3", "word_start": "#92c5de", "both_other": PALETTE["muted"],
                  "model_only": PALETTE["input"]}
PATH_LAYER, PATH_QUANTITY, PATH_COLOUR = page_key("path_layer"), page_key("path_quantity"), page_key("path_colour")
PATH_AT, PATH_FIGURE = page_key("path_at"), page_key("path_figure")
PATH_NEIGHBOURS = 5
PATH_EXCLUDE = 20  # neighbours are at least this many characters away: not merely the same place in the text


def _strip(text: str, found: Predictions, chars: str, start: int, end: int) -> str:
    return prediction_strip.legends_html(found.surprisal[start:end]) + prediction_strip.strip_html(
        text, found, chars, start, end)


def _predictions_table(text: str, found: Predictions, chars: str, start: int, end: int) -> pd.DataFrame:
    """The strip as a table: what a screen reader reads instead of the colours, and the CSV download."""
    rows = range(max(start, 1), end)
    guesses = {f"guess {j + 1}": [colortext.describe_char(chars[found.guess_ids[t, j]]) for t in rows]
               for j in range(found.guess_ids.shape[1])}
    return pd.DataFrame({
        "position": list(rows),
        "character": [colortext.describe_char(text[t]) for t in rows],
        "surprisal (nats)": found.surprisal[list(rows)],
        "p": found.true_prob[list(rows)],
        "rank": found.rank[list(rows)],
        **guesses,
    })


@fragment
def surprise(trace_key: tuple, source, text: str) -> None:
    """Section 6: the prediction strip, the surprisal over the passage, and the most surprising characters."""
    section_header("surprise")
    found = ex.predictions_for(trace_key, source.model, source.vocab, text)
    chars = source.vocab.chars
    if found.length < 2:
        st.info("The text needs at least two characters for the model to predict one.")
        return
    loss, accuracy = found.loss(), found.top1_accuracy()
    sure = float(np.mean(found.true_prob[1:] >= 0.9))
    st.markdown(
        f"Before each character the model gives every character a probability p; its **surprisal** is −log p of "
        f"the one that came: 0 when it was certain, 4.6 nats when it gave it 1%. Over the {found.length - 1:,} "
        f"characters it predicts here the mean surprisal is **{loss:.3f} nats/char** ({loss / math.log(2):.2f} "
        f"bits), which is its loss on this text. Its top guess was right for **{accuracy:.1%}** of them, and it gave "
        f"the right one p ≥ 0.9 for **{sure:.1%}**.")
    last_start = max(len(text) - STRIP_CHARS, 0)
    st.session_state[STRIP_START] = min(max(int(st.session_state.get(STRIP_START, 0)), 0), last_start)
    if last_start > 0:
        st.slider("Strip from character", 0, last_start, step=10, key=STRIP_START)
    start = int(st.session_state[STRIP_START])
    end = min(start + STRIP_CHARS, len(text))
    plot(figures.surprisal_figure(found.surprisal, (start, end)), key=page_key("surprisal_figure"))
    st.caption(f"Characters {start:,}–{end - 1:,}: each column is one character (on top, coloured by its surprisal) "
               f"and, under it, the {found.guess_ids.shape[1]} characters the model thought most likely there before "
               "reading it. Hover a column for the numbers.")
    st.html(shared_value(_strip, text, found, chars, start, end, key=(trace_key, "strip", start, end)))
    worst = found.most_surprising(SURPRISES_LISTED)
    st.markdown(f"**The {len(worst)} most surprising characters** in the whole text, with the model's top guess:")
    st.html(context_html(text, [
        (t, t + 1, f"{found.surprisal[t]:.1f} nats at {t:,}; guessed "
                   f"{colortext.describe_char(chars[found.guess_ids[t, 0]])}")
        for t in worst]))
    with st.expander("The strip as a table, and a download", icon=":material/table:"):
        frame = shared_value(_predictions_table, text, found, chars, start, end, key=(trace_key, "strip table",
                                                                                     start, end))
        table(frame, height=260, decimals={"surprisal (nats)": 3}, percent=("p",))
        name = re.sub(r"[^A-Za-z0-9]+", "-", f"surprisal {start}-{end - 1}").strip("-")
        st.download_button("Download the table (CSV)", lambda: frame.to_csv(index=False), file_name=f"{name}.csv",
                           mime="text/csv", icon=":material/download:", key=page_key("strip_csv"))


def _passage_losses(models, ids) -> dict[int, float]:
    return {n: models.loss(ids, n) for n in range(1, models.max_order + 1)}


def _breakdown(text: str, model_probs: np.ndarray, models, ids, order: int, train_words, syntax: str
               ) -> tuple[ErrorBreakdown, float, np.ndarray]:
    """The breakdown; the share of all predicted characters that sit inside a bracket or quote opened at least
    ``order`` characters back (what the "fixed" share is compared with); and the n-gram's p of each character
    (index t − 1 for character t)."""
    ngram_probs = models.prob_of_true(ids, order)
    found = error_breakdown(text, model_probs, ngram_probs, order, train_words, syntax=syntax)
    position = np.arange(1, len(text))
    opening = innermost_openings(text, syntax)[position - 1]
    return found, float(np.mean((opening >= 0) & (position - opening >= order))), ngram_probs


@fragment
def against_ngram(trace_key: tuple, source, text: str, syntax: str) -> None:
    """Section 7: n-gram models of the training text on the same passage, and Karpathy et al.'s breakdown of
    the characters where the model and an n-gram differ."""
    section_header("ngram")
    corpus = corpus_of(source)
    if corpus is None:
        st.info("An n-gram baseline is counted on the model's training text, which this server does not have for "
                "this model. Pick a shipped model or the live-trained one.")
        return
    try:
        ids = corpus.vocab.encode(text)
    except CorpusError as err:
        st.info(f"The n-gram models of {corpus.name} cannot read this text: {err}")
        return
    if len(text) < 2:
        return
    base = baselines(corpus)
    found = ex.predictions_for(trace_key, source.model, source.vocab, text)
    digest = corpus_digest(corpus)
    losses = shared_value(_passage_losses, base.models, ids, key=(trace_key, digest, "ngram losses"))
    label = shape_label(source.model.config)
    model_loss = found.loss()
    best = min(losses, key=losses.get)
    ahead = losses[DEFAULT_ORDER] - model_loss
    st.markdown(
        f"An **n-gram model** predicts each character from the n − 1 before it and nothing else, with counts from "
        f"the same training text ({base.train_chars:,} characters of {corpus.name}; interpolated Kneser-Ney "
        f"smoothing). On this passage the {label} loses **{model_loss:.3f} nats/char**, the {DEFAULT_ORDER}-gram "
        f"**{losses[DEFAULT_ORDER]:.3f}**: the model is **{abs(ahead):.3f} nats/char "
        f"{'ahead of' if ahead > 0 else 'behind'}** it. The best n-gram here is the {best}-gram "
        f"({losses[best]:.3f}).")
    if ahead <= 0:
        st.caption("An n-gram that has memorised a large training text can beat a small recurrent model on text "
                   "that repeats its idioms (code does): the model has to squeeze the same counts into its weights. "
                   "The breakdown below shows where each is better.")
    plot(figures.ngram_loss_figure(losses, model_loss, label), key=page_key("ngram_losses"))
    order = st.select_slider("Compare with the n-gram of order n", list(range(1, MAX_ORDER + 1)),
                             value=st.session_state.get(NGRAM_ORDER, DEFAULT_ORDER), key=NGRAM_ORDER)
    breakdown, inside_rate, ngram_probs = shared_value(
        _breakdown, text, found.true_prob[1:], base.models, ids, order, base.train_words, syntax,
        key=(trace_key, digest, "breakdown", order, syntax))
    counts = breakdown.counts()
    fixed = counts["long_range"] + counts["ngram_other"]
    share = counts["long_range"] / fixed if fixed else 0.0
    st.markdown(
        f"As in Karpathy, Johnson and Fei-Fei (2015), a character is an **error** of a model when it gave it p < "
        f"{breakdown.threshold:g}. Of the {breakdown.chars:,} characters, the {label} gets {breakdown.model_errors:,} "
        f"wrong and the {order}-gram {breakdown.ngram_errors:,}. It **fixes {fixed:,}** of the {order}-gram's errors; "
        f"**{share:.0%}** of those sit inside brackets or quotes opened at least {order} characters back, where no "
        f"{order}-gram can see the opening, against **{inside_rate:.0%}** of all characters here"
        + (" — the long-range errors the recurrence fixes." if share > inside_rate + LONG_RANGE_MARGIN else
           " — about as often as such characters occur: here the recurrence does not fix long-range characters "
           "more often than others." if share >= inside_rate - LONG_RANGE_MARGIN else
           " — fewer than such characters' share: here what the recurrence fixes is mostly short-range.")
        + f" Both get {sum(counts[b] for b in ('dynamic_memory', 'rare_word', 'word_start', 'both_other')):,} "
          "wrong, sorted in the paper's order (each to the first bucket that fits).")
    names = list(BUCKETS)
    plot(figures.breakdown_figure([BUCKET_LABELS[b] for b in names], [counts[b] for b in names],
                                  [BUCKET_COLOURS[b] for b in names]), key=page_key("breakdown"))
    bucket = st.selectbox("Show examples of", names, format_func=lambda b: f"{BUCKET_LABELS[b]} ({counts[b]:,})",
                          key=NGRAM_BUCKET)
    st.caption(BUCKETS[bucket].replace("n characters", f"{order} characters"))
    where = breakdown.positions[bucket]
    if not len(where):
        st.info("No character of this passage falls in this bucket.")
        return
    picks = where[np.linspace(0, len(where) - 1, min(EXAMPLES, len(where))).round().astype(int)]
    st.markdown(f"{len(picks)} of them, spread over the passage (p: the probability each gave the character "
                "that came):")
    st.html(context_html(text, [(t, t + 1, f"{t:,}: model {found.true_prob[t]:.2f}, {order}-gram "
                                           f"{ngram_probs[t - 1]:.2f}") for t in map(int, picks)]))


def _on_path_click() -> None:
    """on_select of the trajectory: the clicked character becomes the chosen one."""
    event = st.session_state.get(PATH_FIGURE)
    points = event["selection"]["points"] if event else []
    if points and points[0].get("customdata") is not None:
        data = points[0]["customdata"]
        st.session_state[PATH_AT] = int(data[0] if isinstance(data, list) else data)


def _path_figure(states: np.ndarray, text: str, track: np.ndarray, label: str, at: int, start: int):
    projection = project(states)
    near = nearest(states, at - start, PATH_NEIGHBOURS, PATH_EXCLUDE)
    return projection, near, trajectory_figure(projection, text, track, label, at - start, near, offset=start)


@fragment
def state_path(trace_key: tuple, trace, text: str, tracks: dict, start: int, end: int) -> None:
    """Section 8: the state over the colouring's window on its first two principal axes, coloured by a feature;
    a click (or the position box) picks a character and marks the states nearest to it in all units."""
    section_header("path")
    st.markdown(f"After each character the layer's state is a point in {trace.hidden} dimensions. Here are the "
                f"states of characters {start:,}–{end - 1:,} (the window of section 1) on the two directions along "
                "which they vary most (PCA), joined in reading order and coloured by a feature of the text. Click a "
                f"point: the page marks the {PATH_NEIGHBOURS} states nearest to it in all {trace.hidden} units (at "
                f"least {PATH_EXCLUDE} characters away), and shows their contexts: what the model treats as the same "
                "situation.")
    if end - start < 3:
        st.info("The window needs at least three characters to draw a path.")
        return
    if st.session_state.get(PATH_COLOUR) not in tracks:  # first the feature the finder ranks by
        st.session_state[PATH_COLOUR] = st.session_state.get(FEATURE) if st.session_state.get(FEATURE) in tracks \
            else next(iter(tracks))
    at = st.session_state.get(PATH_AT)
    if at is None or not start <= int(at) < end:
        st.session_state[PATH_AT] = start + (end - start) // 2
    cols = st.columns([1, 2, 3, 2])
    layer = cols[0].selectbox("Layer", list(range(trace.layers)), key=PATH_LAYER)
    shown = [q for q in trace.quantities if q in ("h", "c", "s")] or list(trace.quantities)
    quantity = cols[1].selectbox("State", shown, format_func=QUANTITY_LABELS.get, key=PATH_QUANTITY)
    colour = cols[2].selectbox("Colour by", list(tracks), format_func=lambda f: FEATURES[f].label, key=PATH_COLOUR)
    at = int(cols[3].number_input("Chosen character", start, end - 1, step=1, key=PATH_AT,
                                  help="Its position in the text; or click a point"))
    states = trace.block(int(layer), quantity)[start:end]
    try:
        projection, near, figure = shared_value(
            _path_figure, states, text[start:end], tracks[colour][start:end], FEATURES[colour].label, at, start,
            key=(trace_key, "path", layer, quantity, colour, start, end, at))
    except ValueError as err:  # states that never vary over the window, say
        st.warning(f"No path to draw here: {err}.")
        return
    st.plotly_chart(figure, key=PATH_FIGURE, on_select=_on_path_click, selection_mode="points", width="stretch",
                    config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]},
                    alt=f"The states of characters {start} to {end - 1} on their first two principal axes, "
                        f"coloured by {FEATURES[colour].label}; position {at} chosen.")
    shown = projection.explained[:2].sum()
    st.caption(f"The two axes hold {shown:.0%} of the states' variance; the rest lies in the other "
               f"{trace.hidden - 2} directions, so points close here may be far apart in all units (and the marked "
               "neighbours are measured there).")
    st.markdown(f"**Position {at:,} and the states nearest to it** (distance in all {trace.hidden} units):")
    here = states[at - start]
    st.html(context_html(text, [(at, at + 1, f"chosen, {at:,}")] + [
        (start + p, start + p + 1, f"{float(np.linalg.norm(states[p] - here)):.2f} at {start + p:,}") for p in near]))
