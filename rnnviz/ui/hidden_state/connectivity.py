"""The hidden-state page's connectivity section: for the prediction after character t, how much it depends on each
earlier character, per model (rnnviz.interpret.connectivity; Madsen, Distill 2019)."""

from __future__ import annotations

import streamlit as st

from rnnviz.figures import hidden_state as fig
from rnnviz.interpret.connectivity import Connectivity, connectivity
from rnnviz.ui.hidden_state.sections import SENTENCE_CHARS, Slot, page_key, sentence, slot_value
from rnnviz.ui.kit.links import LinkParam, mirror_to_link, parse_int_in
from rnnviz.ui.kit.widgets import literal, plot

PREDICTION = page_key("connectivity_t")
PREDICTION_LINK = LinkParam("ct", PREDICTION, parse_int_in(0, SENTENCE_CHARS - 1), example="30")
SHARE = 0.01  # "still depends on it": at least 1% of the largest norm


def choose_prediction(n: int, text: str) -> int:
    """The t whose prediction is measured: by default the one before the last character, so the target is the
    sentence's own last character."""
    if st.session_state.get(PREDICTION) is None or st.session_state[PREDICTION] > n - 1:
        st.session_state[PREDICTION] = max(n - 2, 0)
    if n < 2:
        return 0
    return st.select_slider("t: the prediction made after reading up to character t", options=list(range(n)),
                            key=PREDICTION, format_func=lambda i: f"{i}: {text[i]!r}")


def reach_caption(results: dict[str, Connectivity]) -> str:
    parts = []
    for name, result in results.items():
        reach = result.reach(SHARE)
        context = (f", and nothing before its context (from s = {result.first_read})"
                   if result.first_read > 0 else "")
        parts.append(f"{name} {reach} character{'s' if reach != 1 else ''} back{context}")
    return (f"Still at least {SHARE:.0%} of its largest: " + "; ".join(parts) + ". Measured on this sentence and "
            "this t only: a model that needs no long context here may still keep one elsewhere.")


@st.fragment
def draw_connectivity(slot_list: list[Slot]) -> None:
    """Connectivity of one prediction for every model that reads the sentence; a change of t reruns this only."""
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
    t = choose_prediction(n, text)
    mirror_to_link((PREDICTION_LINK,))
    results = {slot.name: slot_value(connectivity, [slot], slot.model, slot.ids, t,
                                     key=("connectivity", text, t)) for slot in readable}
    first = next(iter(results.values()))
    target = text[t + 1] if first.target_is_true else readable[0].vocab.decode([first.target])
    whose = "the sentence's next character" if first.target_is_true else "the first model's own top guess"
    st.markdown(f"Read so far: “{literal(text[: t + 1])}”; the gradient is of log p({literal(repr(target))}), "
                f"{whose}.")
    if not first.target_is_true:
        for name, result in results.items():
            if result.target != first.target:
                st.caption(f"{name}'s own top guess differs; its row is for that guess.")
    st.html(fig.connectivity_rows(results, text))
    st.caption("Each character on a colour for how much the prediction depends on it, relative to that model's "
               "largest: white 0 … dark blue 1. Hover a character for the exact norm.")
    plot(fig.connectivity_figure(results, {s.name: s.model.config.kind for s in readable}, SHARE),
         key=page_key("connectivity"))
    st.caption(reach_caption(results))
