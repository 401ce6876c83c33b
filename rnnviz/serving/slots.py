"""A process-wide limit on how many sessions train at once, with a fair queue for the rest.

Training saturates a core, so a server with C cores runs at most C training sessions; the others wait in
arrival order and start when a slot frees. Holders and waiters keep a lease by calling ``acquire`` again
(every training chunk does); a browser tab that vanished stops calling, and its lease expires, so a closed
tab never keeps a slot. A host that can tell that an owner is gone (``present``: its tab's connection closed)
frees its slot at once, without waiting for the lease.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class TrainingSlots:
    """At most ``capacity`` owners hold a slot; the rest queue first come, first served."""

    def __init__(self, capacity: int, lease_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[int], object] | None = None,
                 present: Callable[[Hashable], bool] | None = None):
        """``on_change(busy)`` hears the number of slots held whenever it changes (the server splits torch's
        threads among the trainings with it: rnnviz.core.runtime.share_cores). ``present(owner)`` is False once
        the host knows the owner is gone (its tab closed); then its slot or place frees at the next look."""
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.lease_seconds = lease_seconds
        self._clock = clock
        self._on_change = on_change
        self._present = present
        self._told = 0  # the count on_change last heard (none held at first)
        self._lock = threading.Lock()
        self._holders: dict[Hashable, float] = {}  # owner → last seen
        self._waiting: dict[Hashable, float] = {}  # owner → last seen, in arrival order

    def _expire(self, now: float) -> None:
        present = self._present or (lambda owner: True)
        for table in (self._holders, self._waiting):
            for owner in [o for o, seen in table.items() if now - seen > self.lease_seconds or not present(o)]:
                del table[owner]
        self._tell()

    def _tell(self) -> None:
        """Call on_change when the number of holders differs from what it last heard (holding the lock)."""
        if self._on_change is not None and len(self._holders) != self._told:
            self._told = len(self._holders)
            self._on_change(self._told)

    def acquire(self, owner: Hashable) -> bool:
        """True when ``owner`` holds a slot (now or already); otherwise it joins or stays in the queue."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if owner in self._holders:
                self._holders[owner] = now
                return True
            self._waiting[owner] = now  # joins at the end, or refreshes its lease and keeps its place
            first_in_line = next(iter(self._waiting))
            if len(self._holders) < self.capacity and owner == first_in_line:
                del self._waiting[owner]
                self._holders[owner] = now
                self._tell()
                return True
            return False

    def release(self, owner: Hashable) -> None:
        """Give the slot back (or leave the queue); harmless when ``owner`` holds nothing."""
        with self._lock:
            self._holders.pop(owner, None)
            self._waiting.pop(owner, None)
            self._tell()

    def queue_position(self, owner: Hashable) -> int | None:
        """1 for the next in line, 2 for the one after, …; None when not waiting."""
        with self._lock:
            self._expire(self._clock())
            for position, waiting in enumerate(self._waiting, start=1):
                if waiting == owner:
                    return position
            return None

    @property
    def waiting(self) -> int:
        """Owners in the queue right now."""
        with self._lock:
            self._expire(self._clock())
            return len(self._waiting)

    @property
    def busy(self) -> int:
        """Slots held right now."""
        with self._lock:
            self._expire(self._clock())
            return len(self._holders)
