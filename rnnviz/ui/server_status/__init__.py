"""The Server status page: what this server process holds right now, and the limits that keep a class within it."""

import streamlit as st
import torch

from rnnviz.charlm.corpus import MAX_VOCAB
from rnnviz.charlm.sample_request import MAX_SAMPLE_LENGTH
from rnnviz.core.runtime import physical_cores, process_memory_bytes
from rnnviz.serving.live import MAX_CORPUS_BYTES, MAX_PARAMETERS, LiveRun
from rnnviz.serving.settings import ADDRESS_ENV, SETTINGS_FILE, backend_setting
from rnnviz.ui.app.garbage import collect_garbage
from rnnviz.ui.app.reaping import reap_expired_sessions
from rnnviz.ui.app.server import LEASE_SECONDS, training_slots
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.server_status.panels import backend_panel, cluster_numbers, saved_runs_panel, training_metrics


def page() -> None:
    page_header(
        "server-status",
        "For the teacher who runs rnnviz for a class: what this server process holds right now, shared by every "
        "open tab. Each training session holds one of a fixed number of **training slots**; the others wait in "
        "a queue and start by themselves when a slot frees. A model stays in memory while its tab is open, and "
        "for Streamlit's disconnected-session time after the tab is closed; it is saved on disk as it trains, so its "
        "address brings it back after that, or after a restart (**Saved runs** below).",
    )

    st.button("Refresh", icon=":material/refresh:", key="server_status_refresh")
    slots = training_slots()
    reap_expired_sessions()  # closed tabs past the TTL
    collect_garbage(when_owed=True)  # a closed tab's run that nothing refers to any more is freed, not counted
    memory = process_memory_bytes()
    cluster = cluster_numbers()  # None: training runs in this process
    cols = st.columns(4)
    training_metrics(cols, cluster, slots)
    cols[2].metric("Live models in memory", LiveRun.count_alive(),
                   help="Models of the live-training page in this process: trained, paused or waiting.")
    cols[3].metric("Process memory", f"{memory / 2**20:,.0f} MB" if memory else "—",
                   help="Resident memory of this server process.")

    backend_panel(cluster)
    saved_runs_panel()

    st.subheader("Limits")
    st.table([
        {"limit": "training slots (sessions that train at once)", "value": f"{slots.capacity}",
         "set by": "RNNVIZ_TRAINING_SLOTS, else the physical cores"},
        {"limit": "a slot is given up by a tab that stops asking for",
         "value": f"{LEASE_SECONDS:g} s (a closed tab: at once)", "set by": "code"},
        {"limit": "model size per session", "value": f"{MAX_PARAMETERS:,} parameters", "set by": "code"},
        {"limit": "uploaded or pasted text per session",
         "value": f"{MAX_CORPUS_BYTES / 1e6:g} MB, {MAX_VOCAB:,} distinct characters", "set by": "code"},
        {"limit": "characters per sample", "value": f"{MAX_SAMPLE_LENGTH:,}", "set by": "code"},
        {"limit": "upload size", "value": f"{st.get_option('server.maxUploadSize')} MB",
         "set by": "server.maxUploadSize"},
        {"limit": "a closed tab's session and model are kept for at least",
         "value": f"{st.get_option('server.disconnectedSessionTTL')} s",
         "set by": "server.disconnectedSessionTTL"},
        {"limit": "CPU", "value": f"{physical_cores()} physical cores, {torch.get_num_threads()} torch threads",
         "set by": "RNNVIZ_THREADS, else the physical cores"},
        {"limit": "training backend", "value": backend_setting().address or "this process",
         "set by": f"{ADDRESS_ENV}, else ray_address in {SETTINGS_FILE}"},
    ])  # fmt: skip
