"""The Server status page's account of where training runs: this process, or a Ray cluster (and if Ray was
asked for but cannot be used, why, in words)."""

from __future__ import annotations

import streamlit as st

from rnnviz.serving.settings import ADDRESS_ENV, RUN_DIR_ENV, SETTINGS_FILE, backend_setting
from rnnviz.ui.app.server import ray_connection
from rnnviz.ui.kit.runs import run_folder


def cluster_numbers() -> dict | None:
    """CPUs in all and free, live nodes and runs waiting on the Ray cluster; None when training runs here (or
    the cluster stopped answering: ``backend_panel`` says so)."""
    connection = ray_connection()
    if connection is None or not connection.ok:
        return None
    numbers = connection.cluster()
    return None if "error" in numbers else numbers


def training_metrics(columns, cluster: dict | None, slots) -> None:
    """The first two numbers of the page: who trains and who waits, on the cluster or in this process."""
    if cluster is None:
        columns[0].metric("Training now", f"{slots.busy} of {slots.capacity}", help="Sessions holding a training slot.")
        columns[1].metric("Waiting for a slot", slots.waiting,
                          help="Sessions queued for a slot, first come first served.")
        return
    busy = cluster["cpus"] - cluster["free"]
    columns[0].metric("Training on the cluster", f"{busy:g} of {cluster['cpus']:g}",
                      help="CPUs of the Ray cluster held by training actors (one per session, of every replica).")
    columns[1].metric("Waiting for a CPU", cluster["waiting"] if cluster["waiting"] is not None else "—",
                      help="Runs of every replica whose actor waits for a free CPU, first come first served.")


def backend_panel(cluster: dict | None) -> None:
    """Where training runs, said in words, with the cluster's nodes and checkpoints."""
    st.subheader("Where training runs")
    setting = backend_setting()
    connection = ray_connection()
    if connection is None:
        st.caption(f"In this server process, one training slot per physical core. Set `{ADDRESS_ENV}` (`local`, "
                   f"`auto` or `HOST:6379`), or `ray_address` in `{SETTINGS_FILE}`, to train on a Ray cluster.")
        return
    if not connection.ok:
        st.error(connection.message, icon=":material/cloud_off:")
        return
    if cluster is None:
        st.error(f"The Ray cluster at {setting.address} stopped answering. Runs that trained there say what they "
                 "lost on their page; new runs wait until it answers again.", icon=":material/cloud_off:")
        return
    st.success(connection.banner(cluster), icon=":material/hub:")  # the CPUs as they are now, not at connect time
    cols = st.columns(3)
    cols[0].metric("Nodes", cluster["nodes"], help="Live nodes of the Ray cluster.")
    cols[1].metric("Checkpoint every", f"{setting.checkpoint_every:,} steps",
                   help=f"Actors write checkpoints to {setting.checkpoint_dir}; every node must see this folder.")
    cols[2].metric("Restarts of a dead worker", setting.max_restarts,
                   help="Ray restarts a training actor whose process or node died from its last checkpoint this "
                   "often; after that the page offers to resume from the checkpoint.")
    st.caption(f"Checkpoints: `{setting.checkpoint_dir}`. Step (one chunk on demand) trains in this process, in one "
               "of its training slots.")


def saved_runs_panel() -> None:
    """Where live runs are saved, how many and how much, and the limits on them."""
    st.subheader("Saved runs")
    folder = run_folder()
    setting = folder.setting
    if folder.problem:
        st.error(folder.problem, icon=":material/save:")
        return
    if folder.store is None:
        st.warning(f"Runs are not saved: `{RUN_DIR_ENV}` is `off`. A server restart loses every run, and a closed "
                   "tab's run is gone after the disconnected-session time.", icon=":material/save:")
        return
    summary = folder.store.summary()
    cols = st.columns(3)
    cols[0].metric("Runs on disk", f"{summary.runs:,}", help="Every live run that trained in this process is saved; "
                   "its address (?run=…) restores it after a restart. Reset deletes a run's files.")
    cols[1].metric("Their size", f"{summary.bytes / 1e6:,.1f} MB",
                   help=f"At most {setting.max_total_bytes / 1e6:,.0f} MB in all: the oldest runs go first beyond it.")
    cols[2].metric("Saved every", f"{setting.save_every_s:g} s of training",
                   help=f"and every {setting.save_every_steps:,} steps, and whenever a run stops (Pause, Step, the "
                   "budget's end, a halt) and when the server shuts down (SIGTERM).")
    st.caption(f"Folder: `{summary.folder}` (set by {setting.source}; `{RUN_DIR_ENV}` or `run_dir` in "
               f"`{SETTINGS_FILE}` change it). A run not opened for {setting.retention_s / 86_400:g} days is deleted. "
               "Files are named by a digest of each run's address and authenticated with a key from it: the folder "
               "lists no address, and nothing in it opens without one.")
