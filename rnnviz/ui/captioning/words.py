"""The image-captioning page's word t: the caption with word t marked, and the distribution p(w_t | w_<t, v) it was
chosen from; t answers in the browser (kit.instant)."""

from __future__ import annotations

import streamlit as st
import torch

from rnnviz.captioning import api as M
from rnnviz.figures import captioning as fig
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.captioning.scene import page_key
from rnnviz.ui.kit.instant import Stop, figure_key, instant_figure, instant_slider, text
from rnnviz.ui.kit.links import LinkParam, mirror_to_link, parse_int_in
from rnnviz.ui.kit.widgets import literal, plot

MAX_WORDS = 64  # a link's word t: more than any caption the decoder writes; the page keeps t inside the caption
TOP_K = 6  # bars of the top-k figure
WORD = page_key("t")
WORD_LINK = LinkParam("t", WORD, parse_int_in(1, MAX_WORDS), example="2")


def marked_line(words: list[str], t: int) -> str:
    """The caption from <START> with word t in bold brackets (the caption's words are the vocabulary's, which holds
    no ** or $ for the browser's text to read as markup)."""
    return " ".join([M.START] + [f"**[{w}]**" if k == t else w for k, w in enumerate(words, start=1)])


def topk_at(words: list[str], probs: torch.Tensor, t: int):
    """The top-k figure of word t: p(w_t | w_<t, v), row t − 1 of ``probs``."""
    top = torch.topk(probs[t - 1], TOP_K)
    return fig.topk_figure([M.VOCAB[i] for i in top.indices.tolist()], top.values.tolist(), words[t - 1], t)


# Word t answers in the browser: every t's caption line and top-k figure are sent with the page, and a move shows
# its own in the frame of the move (kit.instant). The beam tree does not depend on t and stays as drawn.
@fragment
def word_by_word(words: list[str], probs: torch.Tensor, tree, decoded: tuple) -> None:
    if len(words) > 1:
        instant_slider(r"Word $t$: the words before it, and $p(w_t \mid w_{<t}, v)$, the distribution it was "
                       "chosen from", WORD, [Stop(t, (text(marked_line(words, t)),)) for t in range(1, len(words) + 1)],
                       link=WORD_LINK)
        mirror_to_link((WORD_LINK,))
    else:
        st.markdown(" ".join([literal(M.START), f"**[{literal(words[0])}]**"]))
    cols = st.columns([1, 2] if tree is not None else [1, 1])
    with cols[0]:
        if len(words) > 1:
            instant_figure(WORD, "topk", lambda: [topk_at(words, probs, t) for t in range(1, len(words) + 1)],
                           cache=decoded)
        else:
            plot(topk_at(words, probs, 1), key=figure_key(WORD, "topk"))  # one name for the chart, slider or not
    if tree is not None:
        with cols[1]:
            plot(fig.beam_tree_figure(tree, M.VOCAB), key=page_key("beam_fig"))
