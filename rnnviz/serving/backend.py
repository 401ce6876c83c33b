"""Where a session's run trains: in this process (the default), or in a Ray actor on a cluster.

A LiveRun (rnnviz.serving.live) trains its chunks in this process unless it has a ``remote``: a
``RemoteTraining`` that trains them elsewhere (rnnviz.serving.ray_backend.RayRun, one Ray actor per run). Which
one a server uses comes from ``rnnviz.serving.settings.backend_setting``: the environment variable
RNNVIZ_RAY_ADDRESS, else ``ray_address`` in the ``[rnnviz]`` section of ``.streamlit/rnnviz.toml``; unset,
training stays in this process. tests/test_backend_contract.py holds both to one contract: bit-identical weights,
exact resumes.

No streamlit here.
"""

from __future__ import annotations

from typing import Protocol

from rnnviz.charlm.train import StepRecord


class RemoteTraining(Protocol):
    """What a LiveRun (rnnviz.serving.live) calls when its chunks train elsewhere; every call returns at once
    except ``stop``, which waits for the chunks in flight (a click waits for a chunk, as in this process)."""

    def tick(self, run, max_seconds: float) -> list[StepRecord]:
        """Poll without blocking: merge the chunks that came back into ``run``, keep the next ones in flight."""

    def stop(self, run) -> None:
        """Bring the exact training state back into ``run`` and free the remote CPU."""

    def restore(self, run) -> None:
        """After a loss: put ``run`` back to its last checkpoint, so that Start continues from there."""

    def update_settings(self, settings) -> None: ...

    def retune(self, lr: float, clip: float | None) -> None: ...

    def release(self) -> None:
        """Free everything remote for good (Reset, or the run's session ended)."""
