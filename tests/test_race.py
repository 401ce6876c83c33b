"""The race engine: contenders take turns toward one clock that counts only training, marks are recorded
where they fall, val loss equals a direct evaluation, a stopped race continues where it stopped, and a
RaceRunner holds one training slot while it trains."""

import math
import time
from dataclasses import dataclass

import pytest

from rnnviz.charlm.corpus import Corpus, english_docs_text
from rnnviz.charlm.train import TrainConfig, sequence_loss
from rnnviz.serving.race import Mark, Race, RaceRunner, RaceStatus, val_at
from rnnviz.serving.slots import TrainingSlots

LSTM = TrainConfig(hidden=12, embed_dim=6, batch=4, seq_len=8, device="cpu")
GPT = TrainConfig(kind="transformer", layers=1, hidden=16, n_head=2, block_size=8, batch=4, seq_len=8,
                  optimizer="adamw", lr=1e-3, forget_bias=None, device="cpu")


@pytest.fixture(scope="module")
def corpus():
    return Corpus("docs", english_docs_text()[:4000])


@dataclass
class Record:
    val_loss: float
    chars: int


class FakeTrainer:
    """A contender whose clock moves by ``step_s`` per optimizer step and not at all when it is scored."""

    halt = None

    def __init__(self, name: str, step_s: float, log: list):
        self.name, self.step_s, self.log = name, step_s, log
        self.seconds, self.step, self.evaluations = 0.0, 0, 0

    def run(self, steps, on_step=None, max_seconds=None):
        start = self.seconds
        for _ in range(steps):
            self.seconds += self.step_s
            self.step += 1
            self.log.append((self.name, round(self.seconds, 6)))
            if max_seconds is not None and self.seconds - start >= max_seconds:
                break
        return []

    def evaluate(self, max_chars=None):
        self.evaluations += 1
        return Record(10.0 / self.step, 100)


def test_contenders_take_turns_and_each_mark_falls_within_one_step():
    log = []
    a, b = FakeTrainer("a", 0.3, log), FakeTrainer("b", 0.7, log)
    race = Race({"a": a, "b": b}, marks=(2, 5, 6), slice_s=2.5)
    targets = []
    while not race.finished:
        targets.append(race.next_target())
        race.advance()
    assert targets == [2.0, 4.5, 5.0, 6.0]  # one slice on, never past a mark
    # turns: a reaches each target, then b does; nobody runs ahead into the next slice
    turns = [name for i, (name, _) in enumerate(log) if i == 0 or log[i - 1][0] != name]
    assert turns == ["a", "b"] * 4
    for trainer in (a, b):
        marks = race.curves[trainer.name]
        assert [m.mark for m in marks] == [2.0, 5.0, 6.0]
        for m in marks:
            assert m.mark <= m.seconds < m.mark + trainer.step_s + 1e-9
            assert m.val_loss == 10.0 / m.step  # what evaluate() returned at that step
        assert trainer.evaluations == 3  # scored at the marks only
    assert race.clock == 6.0 and race.fraction == 1.0
    assert val_at(race.curves["a"], 5.0) == race.curves["a"][1].val_loss and math.isnan(val_at(race.curves["a"], 7))


def test_a_stopped_race_continues_where_it_stopped():
    whole_log, parts_log = [], []
    whole = Race({"a": FakeTrainer("a", 0.3, whole_log), "b": FakeTrainer("b", 0.5, whole_log)}, marks=(3, 6),
                 slice_s=1.0)
    whole.run()
    parts = Race({"a": FakeTrainer("a", 0.3, parts_log), "b": FakeTrainer("b", 0.5, parts_log)}, marks=(3, 6),
                 slice_s=1.0)
    calls = {"n": 0}

    def every_fifth_call():
        calls["n"] += 1
        return calls["n"] % 5 == 0

    stops = 0
    while not parts.finished:
        parts.advance(every_fifth_call)
        stops += 1
    assert stops > len(whole.marks) * 3  # it really was cut into pieces
    assert parts_log == whole_log
    assert parts.curves == whole.curves


def test_real_trainers_clock_counts_only_training_and_val_equals_a_direct_evaluation(corpus):
    race = Race.from_configs(corpus, {"LSTM": LSTM, "Transformer": GPT}, marks=(0.05, 0.15), slice_s=0.05,
                             sample_chars=20)
    seen = []
    race.run(on_mark=seen.append)
    assert race.finished and not race.halted
    assert sorted((m.name, m.mark) for m in seen) == sorted(
        (n, t) for n in ("LSTM", "Transformer") for t in (0.05, 0.15))
    for name, trainer in race.trainers.items():
        # the clock is the sum of the optimizer steps' own wall times: evaluations and turns add nothing
        assert trainer.seconds == pytest.approx(trainer.history[-1].seconds)
        longest = max(b.seconds - a.seconds for a, b in zip(trainer.history, trainer.history[1:]))
        curve = race.curves[name]
        assert [m.mark for m in curve] == [0.05, 0.15]
        for m in curve:
            assert m.mark <= m.seconds <= m.mark + max(longest, trainer.history[0].seconds) + 1e-9
        # the last mark was scored on the weights the race ends with, over the whole val split
        direct, chars = sequence_loss(trainer.model, trainer.val_ids)
        assert curve[-1].val_loss == pytest.approx(direct, rel=1e-6)
        assert curve[-1].chars == chars == len(trainer.val_ids) - 1
        assert curve[-1].val_loss < curve[0].val_loss + 0.5  # still a sane loss, not a blow-up
        assert [s.mark for s in race.samples[name]] == [0.05, 0.15]
        assert all(len(s.text) == 20 for s in race.samples[name])


def test_eval_chars_scores_the_first_part_of_the_val_split(corpus):
    race = Race.from_configs(corpus, {"LSTM": LSTM}, marks=(0.02,), slice_s=0.02, eval_chars=200)
    race.run()
    trainer = race.trainers["LSTM"]
    direct, chars = sequence_loss(trainer.model, trainer.val_ids[:201])
    assert race.curves["LSTM"][0].chars == chars == 200
    assert race.curves["LSTM"][0].val_loss == pytest.approx(direct, rel=1e-6)


def test_a_contender_that_halts_leaves_the_race_and_the_others_finish():
    class Exploding(FakeTrainer):
        def run(self, steps, on_step=None, max_seconds=None):
            super().run(1)
            self.halt = "the loss is not a finite number"
            return []

    log = []
    race = Race({"ok": FakeTrainer("ok", 0.2, log), "bad": Exploding("bad", 0.2, log)}, marks=(1, 2), slice_s=1)
    race.run()
    assert race.finished and race.halted == {"bad": "the loss is not a finite number"}
    assert [m.mark for m in race.curves["ok"]] == [1.0, 2.0] and race.curves["bad"] == []


def test_bad_race_settings_are_refused_in_words():
    with pytest.raises(ValueError, match="at least one contender"):
        Race({})
    with pytest.raises(ValueError, match="positive seconds"):
        Race({"a": FakeTrainer("a", 0.1, [])}, marks=(0, 5))
    with pytest.raises(ValueError, match="positive number of seconds"):
        Race({"a": FakeTrainer("a", 0.1, [])}, slice_s=0)


def _wait(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_runner_holds_one_slot_while_racing_and_gives_it_back(corpus):
    slots = TrainingSlots(1)
    race = Race.from_configs(corpus, {"LSTM": LSTM, "Transformer": GPT}, marks=(0.05, 0.1), slice_s=0.05)
    runner = RaceRunner(race, slots, owner="race")
    holding = []
    original = race.advance

    def advance(should_stop=None):
        holding.append(slots.busy)
        return original(should_stop)

    race.advance = advance
    runner.start()
    assert _wait(lambda: runner.status == RaceStatus.FINISHED)
    runner.join(5)
    assert holding and set(holding) == {1}  # one slot for the whole race, not one per contender
    assert slots.busy == 0  # given back at the end
    assert all(len(race.curves[n]) == 2 for n in race.trainers)
    assert "Finished" in runner.message and "LSTM" in runner.message


def test_runner_waits_for_a_slot_then_races(corpus):
    slots = TrainingSlots(1)
    assert slots.acquire("someone else")
    runner = RaceRunner(Race.from_configs(corpus, {"LSTM": LSTM}, marks=(0.03,), slice_s=0.03), slots, "race")
    runner.start()
    assert _wait(lambda: runner.status == RaceStatus.WAITING)
    assert "slot" in runner.message and runner.race.curves["LSTM"] == []
    slots.release("someone else")
    assert _wait(lambda: runner.status == RaceStatus.FINISHED)
    runner.join(5)
    assert slots.busy == 0


def test_runner_pause_keeps_the_models_and_start_continues(corpus):
    slots = TrainingSlots(1)
    race = Race.from_configs(corpus, {"LSTM": LSTM}, marks=(0.1, 0.3), slice_s=0.05)
    runner = RaceRunner(race, slots, "race")
    runner.start()
    runner.pause()
    runner.join(10)
    assert runner.status == RaceStatus.PAUSED and slots.busy == 0
    trainer = race.trainers["LSTM"]
    step = trainer.step
    runner.start()
    assert _wait(lambda: runner.status == RaceStatus.FINISHED)
    runner.join(5)
    assert race.trainers["LSTM"] is trainer and trainer.step >= step
    assert [m.mark for m in race.curves["LSTM"]] == [0.1, 0.3]


def test_runner_pauses_itself_when_nobody_watches(corpus):
    now = {"t": 0.0}
    slots = TrainingSlots(1)
    race = Race.from_configs(corpus, {"LSTM": LSTM}, marks=(1000.0,), slice_s=0.05)
    runner = RaceRunner(race, slots, "race", idle_pause_s=30.0, clock=lambda: now["t"])
    runner.start()
    assert _wait(lambda: race.trainers["LSTM"].step > 0)
    now["t"] = 31.0  # the page stopped polling half a minute ago
    assert _wait(lambda: runner.status == RaceStatus.PAUSED)
    runner.join(5)
    assert "nobody" in runner.message and slots.busy == 0


def test_runner_stop_is_final_and_keeps_the_models(corpus):
    slots = TrainingSlots(1)
    race = Race.from_configs(corpus, {"LSTM": LSTM}, marks=(1000.0,), slice_s=0.05)
    runner = RaceRunner(race, slots, "race")
    runner.start()
    assert _wait(lambda: race.trainers["LSTM"].step > 0)
    runner.stop()
    runner.join(10)
    assert runner.status == RaceStatus.STOPPED and slots.busy == 0
    runner.start()
    assert runner.status == RaceStatus.STOPPED and not runner.thread_alive
    assert race.trainers["LSTM"].step > 0


def test_mark_is_a_plain_record():
    m = Mark("LSTM", 10.0, 10.02, 300, 1.9, 1000)
    assert (m.name, m.mark, m.val_loss, m.load) == ("LSTM", 10.0, 1.9, None)


def test_each_mark_records_the_machines_load_when_it_was_scored():
    """A class reads a race run on a busy machine by its load: every mark holds the 1-minute load average of
    the moment it was scored, read from the OS (between the readings just before and just after the race)."""
    import os

    log = []
    race = Race({"a": FakeTrainer("a", 0.3, log), "b": FakeTrainer("b", 0.7, log)}, marks=(2, 5), slice_s=2.5)
    before = os.getloadavg()[0]
    race.run()
    after = os.getloadavg()[0]
    loads = [m.load for curve in race.curves.values() for m in curve]
    assert len(loads) == 4 and all(isinstance(x, float) for x in loads)
    assert all(min(before, after) - 0.5 <= x <= max(before, after) + 0.5 for x in loads)  # the same minute


def test_pause_then_start_at_once_never_leaves_a_race_without_its_thread(corpus):
    slots = TrainingSlots(1)
    race = Race.from_configs(corpus, {"LSTM": LSTM}, marks=(0.05, 0.1), slice_s=0.02)
    runner = RaceRunner(race, slots, "race")
    for _ in range(5):  # a click on Pause and one on Continue while the thread is still ending
        runner.start()
        runner.pause()
    runner.start()
    assert _wait(lambda: runner.status == RaceStatus.FINISHED)
    runner.join(5)
    assert slots.busy == 0 and [m.mark for m in race.curves["LSTM"]] == [0.05, 0.1]


def test_an_error_in_the_race_stops_it_in_words_and_frees_the_slot():
    class Broken(FakeTrainer):
        def evaluate(self, max_chars=None):
            raise RuntimeError("the val split is empty")

    slots = TrainingSlots(1)
    runner = RaceRunner(Race({"a": Broken("a", 0.1, [])}, marks=(0.3,), slice_s=0.1), slots, "race")
    runner.start()
    assert _wait(lambda: runner.status == RaceStatus.STOPPED)
    runner.join(5)
    assert runner.error == "RuntimeError: the val split is empty" and "stopped on an error" in runner.message
    assert slots.busy == 0
