"""What one server process shares between every session: the training slots, the registries that find a run or
a race again by the token in its address, and the connection to Ray.

Each is made once per process (``st.cache_resource``) and holds coordination, never a model: the runs themselves
live in their sessions and are held here only weakly. Pages and the Server status page import them from here.
"""

from __future__ import annotations

import streamlit as st

from rnnviz.core.runtime import share_cores
from rnnviz.serving.live import RunRegistry
from rnnviz.serving.settings import backend_setting, training_slot_count
from rnnviz.serving.slots import TrainingSlots
from rnnviz.ui.app.sessions import session_connected

LEASE_SECONDS = 20.0  # a tab that stops asking for chunks gives its slot up after this long (a closed one at once)


def slot_owner_present(owner) -> bool:
    """False once every tab of a live run (a slot's owner, by its token) has closed its connection: its slot goes
    to the next in the queue at once. The run itself stays, for a reload. Owners the run registry does not know
    (a race, which pauses itself when nobody watches) keep their slot until their lease runs out."""
    held = run_registry().held_by(owner, session_connected)
    return True if held is None else held


@st.cache_resource(show_spinner=False)
def training_slots() -> TrainingSlots:
    """The one TrainingSlots of this server process: a live run and a race each hold one while they train."""
    return TrainingSlots(training_slot_count(), lease_seconds=LEASE_SECONDS, on_change=share_cores,
                         present=slot_owner_present)


@st.cache_resource(show_spinner=False)
def run_registry() -> RunRegistry:
    """Live runs of this server process by the unguessable token in their address, held weakly, listed nowhere."""
    return RunRegistry()


@st.cache_resource(show_spinner=False)
def race_registry() -> RunRegistry:
    """Races of this server process by the token in their address, held weakly, listed nowhere."""
    return RunRegistry()


@st.cache_resource(show_spinner=False)
def ray_connection():
    """This process's RayConnection (rnnviz.serving.ray_backend), made once; None when no Ray address is set."""
    setting = backend_setting()
    if not setting.wants_ray:
        return None
    from rnnviz.serving.ray_backend import connect

    return connect(setting)


def ray_if_usable():
    """The RayConnection when runs train on Ray, else None (not asked for, or not usable: then in-process)."""
    connection = ray_connection()
    return connection if connection is not None and connection.ok else None
