"""The process-wide training limit: capacity, a fair queue, release, and leases that expire."""

import threading

import pytest

from rnnviz.charlm.slots import TrainingSlots


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_capacity_queue_and_release():
    slots = TrainingSlots(2, clock=FakeClock())
    assert slots.acquire("a") and slots.acquire("b")
    assert not slots.acquire("c")
    assert not slots.acquire("d")
    assert (slots.queue_position("c"), slots.queue_position("d")) == (1, 2)
    slots.release("a")
    assert not slots.acquire("d"), "d may not jump the queue ahead of c"
    assert slots.acquire("c")
    assert slots.queue_position("c") is None
    assert slots.busy == 2
    assert slots.acquire("b"), "a holder keeps its slot"


def test_silent_owners_lose_their_lease():
    clock = FakeClock()
    slots = TrainingSlots(1, lease_seconds=30, clock=clock)
    assert slots.acquire("closed-tab")
    assert not slots.acquire("waiting")
    clock.now = 20
    assert not slots.acquire("waiting")
    clock.now = 31  # the closed tab last called at 0
    assert slots.acquire("waiting")
    assert slots.busy == 1


def test_release_of_unknown_owner_is_harmless_and_capacity_is_checked():
    TrainingSlots(1).release("nobody")
    with pytest.raises(ValueError):
        TrainingSlots(0)


def test_never_more_holders_than_capacity_under_threads():
    slots = TrainingSlots(2)
    granted = []
    lock = threading.Lock()

    def worker(i):
        for _ in range(50):
            if slots.acquire(i):
                with lock:
                    granted.append(slots.busy)
                slots.release(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert granted and max(granted) <= 2
