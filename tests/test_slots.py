"""The process-wide training limit: capacity, a fair queue, release, and leases that expire."""

import threading

import pytest

from rnnviz.serving.slots import TrainingSlots


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


def test_an_owner_known_to_be_gone_frees_its_slot_at_once_not_after_its_lease():
    clock, gone = FakeClock(), set()
    slots = TrainingSlots(1, lease_seconds=20, clock=clock, present=lambda owner: owner not in gone)
    assert slots.acquire("a") and not slots.acquire("b") and not slots.acquire("c")
    gone.add("a")  # a's tab closed; no time passes
    assert slots.acquire("b") and slots.busy == 1 and slots.queue_position("c") == 1
    gone.add("c")  # a waiter that left gives up its place too
    assert slots.waiting == 0


def test_the_run_registry_tells_whether_a_run_s_tab_is_connected():
    from rnnviz.charlm.corpus import load_builtin
    from rnnviz.charlm.train import TrainConfig
    from rnnviz.serving.live import LiveRun, RunRegistry

    registry = RunRegistry()
    run = LiveRun.create(TrainConfig(hidden=4, embed_dim=2, batch=1, seq_len=2, device="cpu"), load_builtin("hello"))
    token = registry.register(run, "tab-1")
    registry.attach(token, "tab-2", alive=lambda session: True)
    assert registry.held_by(token, connected=lambda session: session == "tab-2") is True  # one tab still open
    assert registry.held_by(token, connected=lambda session: False) is False  # every tab closed
    assert registry.held_by("a token nobody made", connected=lambda session: False) is None
    assert registry.held_by(("not", "a token"), connected=lambda session: False) is None


def test_the_slot_count_comes_from_the_environment_and_a_bad_one_falls_back_to_the_cores():
    """$RNNVIZ_TRAINING_SLOTS sets how many sessions train at once; a value that is no positive count leaves the
    default, one per physical core, where it used to stop the server with a ValueError at its first page."""
    from rnnviz.core.runtime import physical_cores
    from rnnviz.serving.settings import training_slot_count

    assert training_slot_count({"RNNVIZ_TRAINING_SLOTS": "3"}) == 3
    for unset_or_bad in ({}, {"RNNVIZ_TRAINING_SLOTS": ""}, {"RNNVIZ_TRAINING_SLOTS": "many"},
                         {"RNNVIZ_TRAINING_SLOTS": "0"}, {"RNNVIZ_TRAINING_SLOTS": "-2"}):
        assert training_slot_count(unset_or_bad) == physical_cores(), unset_or_bad
