"""The live-training page's corpus box: a built-in corpus (Tiny Shakespeare downloaded on first use), an uploaded
.txt file or pasted text, what the choice holds, and the errors of a bad one in words.

The chosen Corpus is kept under ``ACTIVE_CORPUS`` (``setup.active_corpus``) until another good one is
chosen, so a failed upload or download never loses the one before it.
"""

from __future__ import annotations

import math

import streamlit as st

from rnnviz.charlm.corpus import (
    BUILTIN_CORPORA,
    TINY_SHAKESPEARE_BYTES,
    Corpus,
    CorpusError,
    cache_dir,
    corpus_from_user_text,
    tiny_shakespeare_damaged,
)
from rnnviz.serving.live import MAX_CORPUS_BYTES, holds_out
from rnnviz.ui.kit.corpora import CORPUS_HELP, CORPUS_LABELS, builtin_corpus, needs_download
from rnnviz.ui.kit.widgets import literal, text_block
from rnnviz.ui.live_training.setup import (
    ACTIVE_CORPUS,
    KEEP,
    PASTE_RESULT,
    REVERT_BUILTIN,
    SOURCES,
    UPLOAD_RESULT,
    InputRead,
    active_corpus,
    key,
)


def _read_upload(upload) -> None:
    """Check a new upload once; a good one becomes the active corpus."""
    result = st.session_state.get(UPLOAD_RESULT)
    if result is not None and result.file_id == upload.file_id:
        return
    try:
        corpus = corpus_from_user_text(upload.getvalue(), name=upload.name, max_bytes=MAX_CORPUS_BYTES)
        st.session_state[UPLOAD_RESULT] = InputRead(upload.file_id)
        st.session_state[ACTIVE_CORPUS] = corpus
    except CorpusError as err:
        st.session_state[UPLOAD_RESULT] = InputRead(upload.file_id, str(err))


def _use_pasted_text() -> None:
    """on_click of "Use this text"."""
    text = st.session_state.get(key("paste"), "")
    try:
        corpus = corpus_from_user_text(text, name="pasted text", max_bytes=MAX_CORPUS_BYTES)
        st.session_state[PASTE_RESULT] = InputRead(None)
        st.session_state[ACTIVE_CORPUS] = corpus
    except CorpusError as err:
        st.session_state[PASTE_RESULT] = InputRead(None, str(err))


def take_up_builtin(name: str) -> bool:
    """Make the built-in corpus ``name`` the active one when this server has it; False when it must be downloaded
    first. The page calls it as it draws the box, and Start and Step before they make a run: their callbacks run
    before the page, so a click in the same moment as a new choice would otherwise find the corpus before."""
    if needs_download(name):
        return False
    st.session_state[ACTIVE_CORPUS] = builtin_corpus(name)
    return True


def corpus_picker() -> str | None:
    """The corpus widgets; returns the name of a built-in that must be downloaded first, else None.

    A good choice becomes the active corpus at once; a bad one shows the engine's error and leaves the
    previous corpus active."""
    revert = st.session_state.pop(REVERT_BUILTIN, None)
    if revert is not None:
        st.session_state[key("builtin")] = revert
    source = st.radio("Text", SOURCES, horizontal=True, key=key("source"), **KEEP)
    pending_download = None
    if source == SOURCES[0]:
        name = st.selectbox("Built-in corpus", BUILTIN_CORPORA, format_func=CORPUS_LABELS.get, key=key("builtin"),
                            help=CORPUS_HELP, **KEEP)
        if not take_up_builtin(name):
            pending_download = name
            if tiny_shakespeare_damaged():
                st.warning(f"The copy of Tiny Shakespeare in {cache_dir()} does not match its published sha256 (a "
                           "damaged or altered file), so it is not used: press Start or Step to download it again.",
                           icon=":material/warning:")
            st.info(f"Tiny Shakespeare ({TINY_SHAKESPEARE_BYTES:,} characters) is downloaded the first time it is "
                    "used: press Start or Step, and it comes first, with a progress bar.", icon=":material/download:")
    elif source == SOURCES[1]:
        upload = st.file_uploader("A UTF-8 text file", type=["txt"], key=key("upload"),
                                  max_upload_size=math.ceil(MAX_CORPUS_BYTES / 2**20),
                                  help=f"Up to {MAX_CORPUS_BYTES / 1e6:g} MB, at least 100 characters.")
        if upload is not None:
            _read_upload(upload)
            error = st.session_state[UPLOAD_RESULT].error
            if error:
                _corpus_error(error)
    else:
        st.text_area("Paste a text", key=key("paste"), height=120, max_chars=MAX_CORPUS_BYTES,
                     placeholder="At least 100 characters of any UTF-8 text.")
        st.button("Use this text", key=key("use_paste"), on_click=_use_pasted_text)
        result = st.session_state.get(PASTE_RESULT)
        if result is not None and result.error:
            _corpus_error(result.error)
    return pending_download


def _corpus_error(message: str) -> None:
    st.error(message, icon=":material/error:")
    corpus = active_corpus()
    if corpus is not None:
        st.caption(f"The next run keeps the previous corpus, **{literal(corpus.name)}**.")


def corpus_summary(corpus: Corpus | None, pending_download: str | None = None) -> None:
    """Size, vocabulary and a 500-character preview of the corpus the next run trains on."""
    if pending_download is not None:
        st.caption(f"The next run trains on **{pending_download}**, once it is downloaded.")
        return
    if corpus is None:
        st.caption("No corpus chosen yet.")
        return
    st.markdown(f"Next run trains on **{literal(corpus.name)}**: {len(corpus):,} characters, vocabulary V = "
                f"{corpus.vocab.size}.")
    if not holds_out(corpus):
        st.caption(memorises(corpus.name, corpus.text))
    with st.expander("Preview: the first 500 characters"):
        text_block(corpus.text[:500])


def memorises(name: str, text: str) -> str:
    """One sentence on a corpus with nothing held out: why its loss reaches 0 and its samples run on."""
    return (f"Nothing of {literal(name)} is held out: train and val are the same {len(text):,} characters, so the "
            f"model memorises them, the loss falls to 0, and after the final “{literal(text[-1])}”, which nothing "
            "ever follows in training, it can only guess.")

