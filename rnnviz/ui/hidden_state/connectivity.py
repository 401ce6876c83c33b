"""The hidden-state page's connectivity section: for the prediction after character t, how much it depends on each
earlier character, per model (rnnviz.interpret.connectivity; Madsen, Distill 2019); then the same averaged over the
predictions of a held-out passage, against the distance d = t − s, behind a button (a few seconds per model, once
per process for the shipped models)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from rnnviz.charlm.corpus import CorpusError
from rnnviz.figures import hidden_state as fig
from rnnviz.interpret.connectivity import Connectivity, MeanConnectivity, connectivity, mean_connectivity
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.hidden_state.sections import (
    INSTANT_CHARS,
    SENTENCE_CHARS,
    Slot,
    as_typed,
    figures_key,
    page_key,
    said,
    sentence,
    slot_readers,
    slot_value,
)
from rnnviz.ui.kit.corpora import builtin_corpus
from rnnviz.ui.kit.instant import Stop, instant_figure, instant_slider, note
from rnnviz.ui.kit.instant import text as words
from rnnviz.ui.kit.links import LinkParam, mirror_to_link, parse_int_in
from rnnviz.ui.kit.models import held_out_text
from rnnviz.ui.kit.widgets import literal, plot

PREDICTION = page_key("connectivity_t")
PREDICTION_LINK = LinkParam("ct", PREDICTION, parse_int_in(0, SENTENCE_CHARS - 1), example="30")
SHARE = 0.01  # "still depends on it": at least 1% of the largest norm
PASSAGE_RUN = page_key("passage_run")  # this session asked for the passage curves
CORPUS = "english-docs"  # what the shipped models of the page were trained on
PASSAGE_CHARS = 500  # held-out characters read
MAX_DISTANCE = 80  # d = 0 … 80: past the shipped Transformer's context of 64
EVERY = 4  # every 4th prediction from t = MAX_DISTANCE on: about 105 of them
DISTANCE = 20  # the distance the sentence under the curves quotes
FAR = 60  # and the far end it compares the RNN's and the LSTM's tails at (inside the Transformer's context)


PREDICTION_LABEL = "t: the prediction made after reading up to character t"
ROWS_KEY = ("Each character on a colour for how much the prediction depends on it, relative to that model's largest: "
            "white 0 … dark blue 1. Hover a character for the exact norm.")


def every_prediction(model, ids: torch.Tensor) -> list[Connectivity]:
    """``connectivity`` of the prediction after every t of the text: those with a next character batched into one
    backward per 64 (mean_connectivity, by distance d = t − s, read back by s), the last (the model's own guess)
    alone."""
    n = len(ids)
    found = []
    if n > 1:
        batch = mean_connectivity(model, ids, max_distance=n - 1, targets=list(range(n - 1)))
        for i, t in enumerate(int(t) for t in batch.targets):
            found.append(Connectivity(t=t, target=int(ids[t + 1]), target_is_true=True,
                                      log_prob=float(batch.log_probs[i]), norms=batch.norms[i, t - np.arange(t + 1)],
                                      first_read=int(batch.first_read[i])))
    return [*found, connectivity(model, ids, n - 1)]


def reach_caption(results: dict[str, Connectivity]) -> str:
    parts = []
    for name, result in results.items():
        reach = result.reach(SHARE)
        context = (f", and nothing before its context (from s = {result.first_read})"
                   if result.first_read > 0 else "")
        parts.append(f"{name} {reach} character{'s' if reach != 1 else ''} back{context}")
    return (f"Still at least {SHARE:.0%} of its largest: " + "; ".join(parts) + ". Measured on this sentence and "
            "this t only: a model that needs no long context here may still keep one elsewhere.")


def draw_connectivity(slot_list: list[Slot]) -> None:
    """The connectivity section: one prediction of the sentence, then the mean over a held-out passage; each a
    fragment of its own, so moving t does not redraw the passage's curves."""
    draw_sentence_connectivity(slot_list)
    draw_passage_connectivity(slot_list)


def prediction_stops(readable: list[Slot], text: str, n: int) -> list[Stop]:
    """Every t of the sentence: what the prediction after it is of, and how far back each model still depends."""
    every = {slot.name: slot_value(every_prediction, [slot], slot.model, slot.ids, key=("connectivity", text))
             for slot in readable}
    return [Stop(t, _prediction_blocks(readable, text, {name: found[t] for name, found in every.items()}),
                 label=f"{t}: {text[t]!r}") for t in range(n)]


def _prediction_blocks(readable: list[Slot], text: str, results: dict[str, Connectivity]) -> list:
    first = next(iter(results.values()))
    t = first.t
    target = text[t + 1] if first.target_is_true else readable[0].vocab.decode([first.target])
    whose = "the sentence's next character" if first.target_is_true else "the first model's own top guess"
    blocks = [words(f"Read so far: “{as_typed(text[: t + 1])}”; the gradient is of log p({said(target)}), {whose}.")]
    blocks += [note(f"{name}'s own top guess differs; its row is for that guess.")
               for name, result in results.items() if not first.target_is_true and result.target != first.target]
    return [*blocks, note(reach_caption(results))]


def prediction_figures(readable: list[Slot], text: str, n: int) -> list:
    """Every t's connectivity against distance, one line per model."""
    every = {slot.name: slot_value(every_prediction, [slot], slot.model, slot.ids, key=("connectivity", text))
             for slot in readable}
    kinds = {s.name: s.model.config.kind for s in readable}
    return [fig.connectivity_figure({name: found[t] for name, found in every.items()}, kinds, SHARE)
            for t in range(n)]


# The t slider answers in the browser: every t's words and figure are sent with the fragment, and a move shows them in
# the frame of the move (kit.instant). The coloured rows stay the server's (HTML, drawn at the t of its last run).
@fragment
def draw_sentence_connectivity(slot_list: list[Slot]) -> None:
    """Connectivity of one prediction for every model that reads the sentence."""
    st.subheader("How far back each one looks: connectivity")
    st.markdown(
        r"For the prediction after character t, the size of its gradient with respect to each earlier input, "
        r"$\lVert \partial \log p(x_{t+1} \mid x_{\le t}) / \partial x_s \rVert$ for s = 0…t (Madsen, “Visualizing "
        r"memorization in RNNs”, Distill 2019): how much a nudge to the character at s would move the prediction. "
        r"In a vanilla RNN it passes through $W_{hh}^\top \operatorname{diag}(\tanh')$ once per step back; the "
        r"LSTM's cell path can carry it further; the Transformer reads every character of its context directly.")
    readable = [s for s in slot_list if s.ids is not None]
    if not readable:
        st.info("No model can read this sentence.", icon=":material/info:")
        return
    text = sentence()
    n = min(len(s.ids) for s in readable)
    if st.session_state.get(PREDICTION) is None or st.session_state[PREDICTION] > n - 1:
        # by default the one before the last character, so the target is the sentence's own last character
        st.session_state[PREDICTION] = max(n - 2, 0)
    if n > INSTANT_CHARS:
        one_prediction(readable, text, n)
        return
    stops = slot_value(prediction_stops, readable, readable, text, n, key=("connectivity stops", text))
    t = instant_slider(PREDICTION_LABEL, PREDICTION, stops, link=PREDICTION_LINK)
    mirror_to_link((PREDICTION_LINK,))
    results = {slot.name: slot_value(every_prediction, [slot], slot.model, slot.ids, key=("connectivity", text))[t]
               for slot in readable}
    st.html(fig.connectivity_rows(results, text))
    st.caption(f"The rows are for t = {t}. {ROWS_KEY}")
    instant_figure(PREDICTION, "connectivity", lambda: prediction_figures(readable, text, n),
                   cache=figures_key(readable, "connectivity", text))


def one_prediction(readable: list[Slot], text: str, n: int) -> None:
    """The connectivity of the t picked, drawn by the server (a sentence too long to send every t ahead)."""
    t = st.select_slider(PREDICTION_LABEL, options=list(range(n)), key=PREDICTION,
                         format_func=lambda i: f"{i}: {text[i]!r}")
    mirror_to_link((PREDICTION_LINK,))
    results = {slot.name: slot_value(connectivity, [slot], slot.model, slot.ids, t, key=("connectivity", text, t))
               for slot in readable}
    st.caption(reach_caption(results))
    first = next(iter(results.values()))
    target = text[t + 1] if first.target_is_true else readable[0].vocab.decode([first.target])
    whose = "the sentence's next character" if first.target_is_true else "the first model's own top guess"
    st.markdown(f"Read so far: “{literal(text[: t + 1])}”; the gradient is of log p({literal(repr(target))}), "
                f"{whose}.")
    for name, result in results.items():
        if not first.target_is_true and result.target != first.target:
            st.caption(f"{name}'s own top guess differs; its row is for that guess.")
    st.html(fig.connectivity_rows(results, text))
    st.caption(ROWS_KEY)
    plot(fig.connectivity_figure(results, {s.name: s.model.config.kind for s in readable}, SHARE),
         key=page_key("connectivity"))


def passage() -> str:
    """PASSAGE_CHARS of the held-out split of CORPUS, which none of the shipped models trained on ("" if this
    server lacks it)."""
    try:
        return held_out_text(builtin_corpus(CORPUS), PASSAGE_CHARS)
    except CorpusError:
        return ""


def _mean_connectivity(model, ids: torch.Tensor) -> MeanConnectivity:
    return mean_connectivity(model, ids, max_distance=MAX_DISTANCE, every=EVERY)


def percent(value: float) -> str:
    """A share as the page prints it: 42%, 3.5%, 0.36%."""
    return f"{100 * value:.0f}%" if value >= 0.1 else f"{100 * value:.2g}%"


def passage_caption(results: dict[str, MeanConnectivity], distance: int = DISTANCE, share: float = SHARE) -> str:
    """What the curves say at ``distance``, in words, and how the RNN compares with the LSTM: only what the
    numbers show (a difference under two standard errors is called no difference)."""
    names = list(results)
    kept = [f"the {name}'s {percent(results[name].at(distance))}" for name in names[1:]]
    others = "".join(f", {part}" for part in kept[:-1]) + (f" and {kept[-1]}" if kept else "")
    count = len(results[names[0]].targets)
    reaches = ", ".join(f"{name} {results[name].reach(share)}" for name in names)
    lines = [f"At {distance} characters back, the {names[0]}'s prediction keeps on average "
             f"{percent(results[names[0]].at(distance))} of its largest dependence{others} (over {count} "
             "predictions).",
             f"The farthest d at which the mean is still at least {share:.0%}: {reaches} characters."]
    if "RNN" in results and "LSTM" in results:
        lines.append(_rnn_against_lstm(results["RNN"], results["LSTM"], distance))
        lines.append(_tails(results["RNN"], results["LSTM"], distance, FAR))
    transformer = results.get("Transformer")
    if transformer is not None and int(transformer.first_read.max()) > 0:
        context = int(transformer.targets[0] - transformer.first_read[0] + 1)
        if context <= transformer.distances[-1]:
            lines.append(f"The Transformer's line stops at d = {context - 1}: nothing {context} or more characters "
                         "back is in its context, and its dependence on it is exactly 0.")
    return " ".join(line for line in lines if line)


def _rnn_against_lstm(rnn: MeanConnectivity, lstm: MeanConnectivity, distance: int) -> str:
    a, b = rnn.at(distance), lstm.at(distance)
    error = float((rnn.standard_error()[distance] ** 2 + lstm.standard_error()[distance] ** 2) ** 0.5)
    both = f"{percent(a)} against {percent(b)}; two standard errors of the difference: {percent(2 * error)}"
    if b - a > 2 * error:
        return (f"So on this passage the RNN's dependence fades faster than the LSTM's ({both}), as the one path "
                "back through W_hh predicts.")
    if a - b > 2 * error:
        return (f"So on this passage the measurement shows the opposite of the usual picture: at {distance} back the "
                f"RNN keeps more of its dependence than the LSTM ({both}). A cell path lets an LSTM keep a long "
                "dependence; it does not make this one use more of it here.")
    return (f"The RNN and the LSTM are not told apart at {distance} back ({both}): on this passage the RNN's "
            "dependence does not measurably fade faster.")


def _tails(rnn: MeanConnectivity, lstm: MeanConnectivity, near: int, far: int) -> str:
    """How each one's dependence falls from ``near`` to ``far`` characters back: the mean factor per character."""
    if far > rnn.distances[-1] or far > lstm.distances[-1]:
        return ""

    def per_step(result: MeanConnectivity) -> float:
        a, b = result.at(near), result.at(far)
        return (b / a) ** (1 / (far - near)) if a > 0 and b > 0 else 0.0

    r, c = per_step(rnn), per_step(lstm)
    if not (r > 0 and c > 0):
        return ""
    if r < c:
        trend = (f"Further back the RNN's falls faster: from {near} to {far} characters back it shrinks by a factor "
                 f"of {r:.2f} per character (a straight line on the log axis, as (W_hhᵀ diag(tanh′))ᵏ predicts), the "
                 f"LSTM's by {c:.2f}, so at {far} back the RNN keeps {percent(rnn.at(far))} and the LSTM "
                 f"{percent(lstm.at(far))}.")
    else:
        trend = (f"Further back, too, the RNN's does not fall faster: from {near} to {far} characters back it shrinks "
                 f"by a factor of {r:.2f} per character, the LSTM's by {c:.2f} ({percent(rnn.at(far))} against "
                 f"{percent(lstm.at(far))} at {far} back).")
    return trend


@fragment
def draw_passage_connectivity(slot_list: list[Slot]) -> None:
    """The mean relative connectivity against d over a held-out passage, per model; computed on a click."""
    st.markdown("**Over a held-out passage.** One sentence and one t is one sample. Below, the same for every "
                f"{EVERY}th prediction of {PASSAGE_CHARS} held-out characters of {CORPUS} (from t = "
                f"{MAX_DISTANCE} on), each read from its start: each prediction's norms divided by its own "
                "largest, then averaged, at each distance d = t − s.")
    text = passage()
    if not text:
        st.info(f"This server lacks the {CORPUS} corpus that the passage is taken from.", icon=":material/info:")
        return
    usable, left_out = slot_readers(slot_list, text, f"the held-out {CORPUS} passage")
    for line in left_out:
        st.warning(line, icon=":material/block:")
    for slot, _ in usable:
        if slot.candidate.corpus != CORPUS:
            st.caption(f"The {slot.name} was trained on {literal(slot.candidate.corpus)}: this passage is text it "
                       "did not learn from.")
    if st.button("Measure over the passage", icon=":material/play_arrow:", key=page_key("passage_button"),
                 disabled=not usable):
        st.session_state[PASSAGE_RUN] = True
    if not st.session_state.get(PASSAGE_RUN) or not usable:
        st.caption("A few seconds per model on a busy machine; for the shipped models it is computed once and "
                   "shared by everyone on this server.")
        return
    bar = st.progress(0.0, text="Measuring the connectivity of every prediction…")
    results = {}
    for i, (slot, ids) in enumerate(usable):
        bar.progress(i / len(usable), text=f"Measuring the {slot.name}'s predictions…")
        results[slot.name] = slot_value(_mean_connectivity, [slot], slot.model, ids,
                                        key=("mean connectivity", text, MAX_DISTANCE, EVERY))
    bar.empty()
    plot(fig.mean_connectivity_figure(results, {s.name: s.model.config.kind for s, _ in usable}, SHARE),
         key=page_key("passage_connectivity"))
    st.caption(passage_caption(results))
