"""The cool-down taken when a run stops (rnnviz.serving.cooldown, issue 37's warmup–stable–decay): a branch of the run
trains K more steps with lr_k = lr_s · (1 − k/K), the run itself is not touched, and a LiveRun with ``cool_down`` on
cools a copy on Pause and at the budget's end, which its readers then take."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import StepRecord, TrainConfig, Trainer
from rnnviz.serving.cooldown import MAX_COOL_SECONDS, CoolingTrainer, cool_down_seconds, cool_down_steps
from rnnviz.serving.live import LiveRun, LiveSettings, Status
from rnnviz.serving.slots import TrainingSlots

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40) + ("a bird in the hand is worth two in the bush. " * 40)
# a high constant rate: the weights keep moving, which a cool-down settles
NOISY = TrainConfig(hidden=24, embed_dim=8, batch=8, seq_len=16, lr=3e-2, clip=1.0)


def corpus() -> Corpus:
    return Corpus("t", TEXT)


def same_tensors(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_cool_down_is_a_quarter_of_the_run_s_time_so_20_percent_of_the_copy_s_at_most_30_s():
    assert cool_down_seconds(0.0) == 0.0
    assert cool_down_seconds(40.0) == pytest.approx(10.0)  # 10 of the cooled copy's 50 s: 20%
    assert cool_down_seconds(100.0) == pytest.approx(25.0)
    assert cool_down_seconds(120.0) == pytest.approx(MAX_COOL_SECONDS) == 30.0
    assert cool_down_seconds(600.0) == MAX_COOL_SECONDS  # a class waits at most 30 s after ten minutes


def at_speed(chars_per_s: float) -> StepRecord:
    return StepRecord(step=1, loss=1.0, grad_norm=1.0, lr=NOISY.lr, chars_per_s=chars_per_s, seconds=1.0)


def test_the_cool_down_s_steps_are_its_seconds_at_the_run_s_recent_speed():
    run = Trainer(NOISY, corpus())
    assert cool_down_steps(run) == 1  # no step taken yet: no speed, the least there is
    assert run.chars_per_step == 8 * 16
    # the last 20 steps: 9 at 1,000 chars/s, 2 at 1,280, 9 at 2,000, so a median of 1,280 chars/s = 10 steps/s;
    # five faster steps before them no longer count
    run.history = [at_speed(9_000.0)] * 5 + [at_speed(1_000.0)] * 9 + [at_speed(1_280.0)] * 2 + [at_speed(2_000.0)] * 9
    run.seconds = 40.0
    assert cool_down_steps(run) == 100  # 10 s of cool-down at 10 steps/s
    run.seconds = 100.0
    assert cool_down_steps(run) == 250  # 25 s
    run.seconds = 600.0
    assert cool_down_steps(run) == 300  # 150 s capped at 30 s
    run.seconds = 0.02
    assert cool_down_steps(run) == 1  # 0.005 s is 0.05 of a step: one step at least


def test_the_branch_s_learning_rate_falls_linearly_from_the_run_s_to_zero():
    cosine = replace(NOISY, lr_decay_steps=100)  # stopped halfway down a cosine: lr_s is the cosine's there
    run = Trainer(cosine, corpus())
    run.run(30)
    branch = CoolingTrainer(run, steps=8)
    lr_s = cosine.lr_at(30)
    assert branch.start_lr == pytest.approx(lr_s) and lr_s < cosine.lr
    records = branch.cool()
    assert [r.lr for r in records] == pytest.approx([lr_s * (1 - k / 8) for k in range(8)])
    assert branch.done and branch.step == 38 and branch.cool() == []


def test_the_branch_is_the_run_s_exact_state_and_never_touches_the_run():
    run = Trainer(NOISY, corpus())
    run.run(12)
    before = run.state_dict()
    branch = CoolingTrainer(run, steps=5)
    branch.cool()
    assert same_tensors(run.state_dict()["model"], before["model"])
    assert run.step == 12 and run.batcher.position == before["position"]
    # its first step has lr_s = the run's rate, so it is the run's own next step: the same loss, the same weights
    twin = Trainer(NOISY, corpus())
    twin.load_state_dict(before)
    first = twin.run(1)[0]
    assert branch.history[12].loss == first.loss and branch.history[12].lr == first.lr
    # and the run goes on exactly as a run that was never cooled
    ours, untouched = run.run(6), twin.run(5)
    assert [r.loss for r in ours[1:]] == [r.loss for r in untouched]
    assert same_tensors(run.model.state_dict(), twin.model.state_dict())


def test_a_cooled_copy_of_a_run_at_a_steady_high_rate_scores_lower_than_the_run():
    run = Trainer(NOISY, corpus())
    run.run(150)
    branch = CoolingTrainer(run, steps=40)
    branch.cool()
    own, cooled = run.evaluate().val_loss, branch.evaluate().val_loss
    assert cooled < own - 0.01, (cooled, own)


def test_a_run_stopped_before_its_widening_cools_at_the_width_it_has():
    grows = replace(NOISY, hidden=24, grow_from=10, grow_at=6)
    run = Trainer(grows, corpus())
    run.run(4)
    branch = CoolingTrainer(run, steps=5)  # crosses step 6, where the run itself would widen
    branch.cool()
    assert branch.step == 9 and branch.width == 10 and run.width == 10


def test_a_cool_down_takes_at_least_one_step():
    with pytest.raises(ValueError, match="at least 1 step"):
        CoolingTrainer(Trainer(NOISY, corpus()), steps=0)


# --- a LiveRun that cools down when it stops ------------------------------------------------------------------------


def live(cool_down: bool = True, budget: int = 10_000) -> LiveRun:
    return LiveRun.create(NOISY, corpus(), LiveSettings(step_budget=budget, sample_every=50, cool_down=cool_down))


def cool_all(run: LiveRun, slots: TrainingSlots) -> int:
    """Cool chunks until the copy is ready; the chunks it took."""
    for chunks in range(200):
        if not run.cools_down:
            return chunks
        run.cool(slots, "me", 0.05)
    raise AssertionError(f"still cooling after 200 chunks: {run.cool_down_progress()}")


def test_pause_cools_a_copy_which_readers_take_while_the_run_stays_as_it_was():
    run, slots = live(), TrainingSlots(1)
    run.start()
    while run.step < 100:
        run.tick(slots, "me", 0.2)
    run.pause()
    slots.release("me")
    weights, step = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}, run.step
    assert run.status == Status.PAUSED and run.cools_down and run.cooled_copy() is None
    run.cool(slots, "me", 0.0)  # one step at least: the cool-down holds the slot meanwhile
    done, steps = run.cool_down_progress()
    assert 1 <= done <= steps and "Cooling a copy down" in run.message
    if done < steps:
        assert not slots.acquire("other")  # a cool-down trains, so it holds a training slot
    cool_all(run, slots)
    cooled = run.cooled_copy()
    assert cooled is not None and cooled.from_step == step and cooled.steps == steps
    assert cooled.step == step + steps and run.step == step and run.status == Status.PAUSED
    assert same_tensors(run.trainer.model.state_dict(), weights)  # Pause never changes the run
    assert slots.acquire("other")  # given back once cooled
    slots.release("other")
    # the figures it shows are the copy's and the run's own, scored on the same characters
    from rnnviz.charlm.train import sequence_loss

    ids = run.trainer.val_ids[: run.settings.eval_chars + 1]
    assert cooled.val_loss == pytest.approx(sequence_loss(cooled.model, ids)[0])
    assert cooled.run_val_loss == pytest.approx(sequence_loss(run.trainer.model, ids)[0])
    assert same_tensors(cooled.model.state_dict(), cooled.branch.model.state_dict())
    assert not cooled.model.training and not any(p.requires_grad for p in cooled.model.parameters())
    reader = run.reader_model()
    assert reader.model is cooled.model and reader.step == cooled.step
    assert not run.cools_down and cool_all(run, slots) == 0  # the same weights are cooled once


def test_start_goes_on_from_the_run_s_own_weights_and_the_next_stop_cools_again():
    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.1)
    stepped = run.step
    cool_all(run, slots)
    first = run.cooled_copy()
    assert first is not None and first.from_step == stepped
    run.start()
    assert run.cooled_copy() is None and run.reader_model().step == run.step  # training: readers take the run
    run.tick(slots, "me", 0.1)
    assert run.step > stepped  # from the run's step, not the copy's
    assert run.trainer.history[stepped].lr == pytest.approx(NOISY.lr)  # at the run's own steady rate
    run.pause()
    slots.release("me")
    assert run.cools_down
    cool_all(run, slots)
    assert run.cooled_copy().from_step == run.step != first.from_step


def test_the_budget_s_end_cools_too_and_a_run_without_cool_down_never_does():
    run, slots = live(budget=30), TrainingSlots(1)
    run.start()
    while run.is_active:
        run.tick(slots, "me", 0.2)
    assert run.status == Status.FINISHED and run.cools_down
    cool_all(run, slots)
    assert run.cooled_copy() is not None
    plain = live(cool_down=False)
    plain.step_once(slots, "me", 0.1)
    assert not plain.cools_down and cool_all(plain, slots) == 0 and plain.cooled_copy() is None
    assert plain.reader_model().step == plain.step


def test_a_cool_down_waits_for_a_free_slot_and_says_so():
    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.1)
    assert slots.acquire("someone else")
    run.cool(slots, "me", 0.1)
    assert run.cool_down_progress() is None and run.cools_down
    assert "Waiting for a free training slot to cool a copy down" in run.message
    slots.release("someone else")
    cool_all(run, slots)
    assert run.cooled_copy() is not None


def test_reset_drops_the_cool_down():
    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.1)
    run.cool(slots, "me", 0.0)
    run.discard()
    assert not run.cools_down and run.cooled_copy() is None and run.cooling is None
    assert math.isfinite(run.trainer.evaluate().val_loss)  # the run itself stays readable


def test_the_cooled_copy_s_checkpoint_is_the_copy():
    from rnnviz.charlm.checkpoint import checkpoint_bytes, load_checkpoint

    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.1)
    cool_all(run, slots)
    cooled = run.cooled_copy()
    loaded = load_checkpoint(checkpoint_bytes(cooled.branch, run.corpus_name))
    assert loaded.step == cooled.step and loaded.config == run.trainer.config
    assert same_tensors(loaded.model.state_dict(), cooled.model.state_dict())


def test_turning_the_cool_down_off_midway_drops_it_and_the_run_reads_as_itself():
    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.2)
    run.cool(slots, "me", 0.0)
    run.update_settings(replace(run.settings, cool_down=False))
    assert not run.cools_down and run.cooling is None and run.cool_down_progress() is None
    assert run.reader_model().step == run.step


def test_a_cool_down_finished_within_one_call_is_dropped_with_the_setting_and_readers_take_the_run():
    run, slots = live(), TrainingSlots(1)
    run.step_once(slots, "me", 0.0)  # one step in t seconds: a cool-down of t/4 s at 1/t steps/s, rounded up to 1
    assert run.step == 1
    run.cool(slots, "me", 0.0)
    cooled = run.cooled_copy()
    assert cooled is not None and cooled.steps == 1 and run.reader_model().step == 2  # done in that one call
    run.update_settings(replace(run.settings, cool_down=False))
    assert run.cooled_copy() is None and not run.cools_down
    reader = run.reader_model()
    assert reader.step == run.step == 1
    assert same_tensors(reader.model.state_dict(), run.trainer.model.state_dict())
    assert not same_tensors(reader.model.state_dict(), cooled.model.state_dict())
