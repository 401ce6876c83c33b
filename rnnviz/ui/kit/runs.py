"""Where this server keeps its live runs on disk (rnnviz.serving.durable): one RunStore per process, made on first
use, that reads built-in corpora through the pages' shared cache, and that saves every run with unsaved steps when
the server shuts down (SIGTERM: Streamlit stops its loop and the process exits through ``atexit``)."""

from __future__ import annotations

import atexit
from dataclasses import dataclass

import streamlit as st

from rnnviz.serving.durable import RunStore, drain
from rnnviz.serving.settings import StoreSetting, store_setting
from rnnviz.ui.kit.corpora import builtin_corpus


@dataclass(frozen=True)
class RunFolder:
    """The run store of this process, or why there is none (``store`` None: runs live only in memory)."""

    setting: StoreSetting
    store: RunStore | None
    problem: str | None  # the folder could not be made or used, in words; None when fine or turned off


@st.cache_resource(show_spinner=False)
def run_folder() -> RunFolder:
    setting = store_setting()
    if setting.folder is None:
        return RunFolder(setting, None, None)
    try:
        store = RunStore(setting, builtin=builtin_corpus)
    except OSError as err:
        return RunFolder(setting, None, f"Runs cannot be saved to {setting.folder} ({err.strerror or err}), so a "
                         "server restart loses them. Set RNNVIZ_RUN_DIR to a folder this server may write.")
    store.prune()
    atexit.register(drain)
    return RunFolder(setting, store, None)


def run_store() -> RunStore | None:
    """This server's RunStore, or None when runs are kept only in memory (turned off, or the folder unusable)."""
    return run_folder().store
