"""The built-in corpora as every page reads them: read once per process and shared read-only, their labels,
and Tiny Shakespeare's download behind a progress bar (never inside a cached call)."""

from __future__ import annotations

import streamlit as st

from rnnviz.charlm.corpus import (
    BUILTIN_CORPORA,
    TINY_SHAKESPEARE_BYTES,
    Corpus,
    CorpusError,
    load_builtin,
    needs_download,
    tiny_shakespeare_path,
)

# Short enough to show whole in a third of a 1,400 px page; CORPUS_HELP says the rest.
CORPUS_LABELS = {
    "tiny-shakespeare": "Tiny Shakespeare (1.1 MB)",
    "python-stdlib": "Python stdlib code (1 MB)",
    "english-docs": "English prose (0.5 MB)",
    "hello": "\"hello\" (the toy)",
}
CORPUS_HELP = ("Tiny Shakespeare: 40,000 lines of the plays, downloaded on first use. Python stdlib code: the "
               "standard library's own source, offline. English prose: Python's help topics (pydoc), offline. "
               "\"hello\": the lecture's four-character toy, with nothing held out.")

__all__ = ["CORPUS_HELP", "CORPUS_LABELS", "builtin_corpus", "download_shakespeare", "needs_download"]


@st.cache_resource(show_spinner="Reading the corpus…", max_entries=len(BUILTIN_CORPORA))
def builtin_corpus(name: str) -> Corpus:
    """A built-in corpus, read once per process and shared read-only (training never writes to it).

    Never downloads: a corpus that ``needs_download`` raises CorpusError (not cached) until
    ``download_shakespeare`` has fetched it."""
    if needs_download(name):
        raise CorpusError(f"{name} is not downloaded on this server yet.")
    return load_builtin(name)


def download_shakespeare() -> tuple[Corpus | None, str | None]:
    """Download Tiny Shakespeare behind a progress bar: (corpus, None), or (None, the engine's error) offline."""
    bar = st.progress(0.0, text="Downloading Tiny Shakespeare…")

    def report(done: int, total: int) -> None:
        total = total or TINY_SHAKESPEARE_BYTES
        bar.progress(min(done / total, 1.0), text=f"Downloading Tiny Shakespeare: {done / 1e6:.2f} of "
                     f"{total / 1e6:.2f} MB")

    try:
        tiny_shakespeare_path(progress=report)
    except CorpusError as err:
        return None, str(err)
    finally:
        bar.empty()
    return builtin_corpus("tiny-shakespeare"), None
