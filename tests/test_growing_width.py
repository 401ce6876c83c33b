"""A run whose width grows (TrainConfig.grow_from, Trainer.widen): Net2Net's function-preserving widening.

The widened model must compute what the narrow one did (logits and the old units' h_t and c_t, checked against a
copy of the narrow model on the same text from the same carried state), the run must resume exactly across the
widening from a state saved on either side of it, and a checkpoint saved before it must load at the narrow width."""

from __future__ import annotations

import copy

import pytest
import torch

from rnnviz.charlm.checkpoint import checkpoint_bytes, load_checkpoint, resume_trainer
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import TrainConfig, Trainer, width_of
from rnnviz.core.config import shape_label

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40) + ("a bird in the hand is worth two in the bush. " * 40)
NARROW, WIDE, GROW_AT = 5, 12, 6


def growing(kind: str = "lstm", layers: int = 1, **changes) -> TrainConfig:
    return TrainConfig(kind=kind, layers=layers, hidden=WIDE, embed_dim=6, batch=4, seq_len=8, lr=1e-2,
                       forget_bias=1.0 if kind == "lstm" else None, grow_from=NARROW, grow_at=GROW_AT, grow_lr=2e-2,
                       **changes)


def corpus() -> Corpus:
    return Corpus("t", TEXT)


@pytest.mark.parametrize("kind, layers", [("lstm", 1), ("lstm", 2), ("gru", 2), ("rnn", 2)])
def test_widening_changes_nothing_the_model_computes(kind, layers):
    trainer = Trainer(growing(kind, layers), corpus())
    narrow_models = {}

    def keep_the_narrow_model(record) -> None:  # heard after each step, before the widening that follows it
        narrow_models[record.step] = copy.deepcopy(trainer.model)

    trainer.run(GROW_AT + 2, on_step=keep_the_narrow_model)
    assert [m.config.hidden for m in narrow_models.values()] == [NARROW] * GROW_AT + [WIDE] * 2
    narrow = narrow_models[GROW_AT]  # after the grow_at-th step, just before the widening
    wide = narrow_models[GROW_AT + 1]
    assert trainer.width == WIDE and width_of(trainer.model.state_dict()) == WIDE
    x = trainer.vocab.encode("the lazy dog jumps")[None, :].repeat(3, 1)
    h0 = _random_state(kind, layers, 3, NARROW)
    rebuilt = Trainer(growing(kind, layers), corpus())
    rebuilt.run(GROW_AT)  # the same run (same seed, same batches): widened at its end, no step since
    assert rebuilt.width == WIDE
    with torch.no_grad():
        narrow.eval(), rebuilt.model.eval()
        narrow_logits, _, narrow_end = narrow(x, state=h0)
        wide_logits, _, wide_end = rebuilt.model(x, state=_padded(h0, WIDE))
    torch.testing.assert_close(wide_logits, narrow_logits, rtol=1e-5, atol=1e-5)
    for n, w in zip(_as_tuple(narrow_end), _as_tuple(wide_end)):
        torch.testing.assert_close(w[..., :NARROW], n, rtol=1e-5, atol=1e-5)
    assert not torch.equal(wide.head.weight[:, NARROW:], torch.zeros_like(wide.head.weight[:, NARROW:])), \
        "one step after the widening the new units send something: they learn"


def _random_state(kind: str, layers: int, batch: int, width: int):
    g = torch.Generator().manual_seed(1)
    h = torch.randn(layers, batch, width, generator=g) * 0.5
    return (h, torch.randn(layers, batch, width, generator=g)) if kind == "lstm" else h


def _padded(state, wide: int):
    def pad(s):
        return torch.cat([s, s.new_zeros(*s.shape[:-1], wide - s.shape[-1])], dim=-1)

    return tuple(pad(s) for s in state) if isinstance(state, tuple) else pad(state)


def _as_tuple(state):
    return state if isinstance(state, tuple) else (state,)


def test_before_the_widening_the_run_takes_grow_lr_and_after_it_the_schedule():
    config = growing(lr_decay_steps=20)
    assert [config.lr_at(s) for s in (0, GROW_AT - 1)] == [2e-2, 2e-2]
    assert config.lr_at(GROW_AT) == TrainConfig(hidden=WIDE, lr=1e-2, lr_decay_steps=20).lr_at(GROW_AT)
    assert [config.hidden_at(s) for s in (0, GROW_AT - 1, GROW_AT, 10_000)] == [NARROW, NARROW, WIDE, WIDE]
    trainer = Trainer(config, corpus())
    records = trainer.run(GROW_AT + 1)
    assert [r.lr for r in records[:GROW_AT]] == [2e-2] * GROW_AT and records[-1].lr == config.lr_at(GROW_AT)


def test_the_optimizer_moments_grow_with_the_weights():
    trainer = Trainer(growing(), corpus())
    narrow_head = {}

    def keep_the_narrow_moments(record) -> None:  # after the grow_at-th step, before the widening
        if record.step == GROW_AT:
            state = trainer.optimizer.state[trainer.model.head.weight]
            narrow_head.update({k: v.clone() for k, v in state.items()})

    trainer.run(GROW_AT, on_step=keep_the_narrow_moments)
    assert trainer.width == WIDE and narrow_head["exp_avg"].shape[1] == NARROW
    for name, p in trainer.model.named_parameters():
        state = trainer.optimizer.state[p]
        assert state["exp_avg"].shape == p.shape and state["exp_avg_sq"].shape == p.shape
        assert int(state["step"]) == GROW_AT, name  # Adam's bias correction goes on where it was
    head = trainer.optimizer.state[trainer.model.head.weight]
    torch.testing.assert_close(head["exp_avg"][:, :NARROW], narrow_head["exp_avg"], rtol=0, atol=0)
    torch.testing.assert_close(head["exp_avg_sq"][:, :NARROW], narrow_head["exp_avg_sq"], rtol=0, atol=0)
    assert torch.all(head["exp_avg"][:, NARROW:] == 0), "the new columns have no momentum yet"
    new_sq = head["exp_avg_sq"][:, NARROW:]
    assert torch.allclose(new_sq, torch.full_like(new_sq, narrow_head["exp_avg_sq"].mean().item())), \
        "new entries start from the old mean second moment, not 0"


@pytest.mark.parametrize("saved_at", [GROW_AT - 2, GROW_AT, GROW_AT + 3])
def test_a_run_resumed_from_either_side_of_the_widening_goes_on_bit_for_bit(saved_at):
    config = growing(lr_decay_steps=30)
    straight = Trainer(config, corpus())
    straight.run(GROW_AT + 6)
    first = Trainer(config, corpus())
    first.run(saved_at)
    saved = first.state_dict()
    resumed = Trainer(config, corpus())
    resumed.load_state_dict(saved)
    assert resumed.width == config.hidden_at(saved_at)
    resumed.run(GROW_AT + 6 - saved_at)
    assert resumed.step == straight.step and resumed.width == WIDE
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=0, atol=0, msg=name)
    assert [r.loss for r in resumed.history] == [r.loss for r in straight.history]


def test_a_checkpoint_saved_before_the_widening_loads_at_the_narrow_width_and_resumes():
    trainer = Trainer(growing(), corpus())
    trainer.run(GROW_AT - 1)
    checkpoint = load_checkpoint(checkpoint_bytes(trainer))
    assert checkpoint.model.config.hidden == NARROW and checkpoint.config.hidden == WIDE
    resumed = resume_trainer(checkpoint, corpus())
    resumed.run(2)
    assert resumed.width == WIDE and resumed.step == GROW_AT + 1


def test_a_mirror_takes_weights_of_either_width():
    mirror = Trainer(growing(), corpus())
    source = Trainer(growing(), corpus())
    source.run(GROW_AT)
    mirror.load_weights(source.model.state_dict())
    assert mirror.width == WIDE
    torch.testing.assert_close(mirror.model.head.weight, source.model.head.weight)


def test_a_run_that_grows_says_so():
    config = growing()
    assert shape_label(config) == f"1 × {NARROW}→{WIDE} LSTM"
    said = config.describe()
    assert f"starts with {NARROW} units per layer at lr 0.02 and widens to {WIDE} at step {GROW_AT}" in said
    assert config.without_growth().grow_from == 0 and shape_label(config.without_growth()) == f"1 × {WIDE} LSTM"
    assert TrainConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("changes, words", [
    ({"kind": "transformer", "hidden": 32, "grow_from": 16, "grow_at": 5, "forget_bias": None}, "RNN, LSTM and GRU"),
    ({"hidden": 16, "grow_from": 16, "grow_at": 5}, "fewer than H = 16"),
    ({"hidden": 16, "grow_from": 8, "grow_at": 0}, "widens after 1 or more steps"),
    ({"hidden": 16, "grow_from": 8, "grow_at": 5, "grow_lr": -1.0}, "before widening must be a positive number"),
    ({"grow_at": 5}, "set grow_from"),
])
def test_a_growth_that_cannot_be_is_a_clear_error(changes, words):
    with pytest.raises(ValueError, match=words):
        TrainConfig(**changes)


def test_a_halt_after_the_widening_rolls_back_to_wide_weights():
    trainer = Trainer(growing(), corpus())
    trainer.run(GROW_AT + 2)
    first_loss, trainer.initial_loss = trainer.initial_loss, 1e-6  # the next loss counts as exploding
    trainer.run(1)  # so the run halts and puts back its last good weights: the copy taken at the widening
    assert trainer.halt is not None and trainer.halt.restored_step == GROW_AT and trainer.width == WIDE
    trainer.initial_loss = first_loss
    assert len(trainer.run(2)) == 2 and trainer.width == WIDE


def test_settings_that_leave_no_room_to_grow_drop_the_growth_and_the_rest_keep_it():
    config = growing()
    assert config.changed(hidden=20).grow_from == NARROW and config.changed(kind="gru").grow_from == NARROW
    for changes in ({"hidden": NARROW}, {"hidden": 3}, {"kind": "transformer", "hidden": 16, "forget_bias": None},
                    {"kind": "mingru", "forget_bias": None}):
        changed = config.changed(**changes)
        assert not changed.grows and changed.grow_lr is None, changes


def test_the_explorer_replays_a_snapshot_from_before_the_widening_at_its_own_width():
    """The live run keeps weight snapshots along the way: those before the widening are narrow. The explorer's
    replay reads them at their width, and a unit that did not exist yet has no values (the page says so)."""
    from rnnviz.interpret.finder import trace_cells
    from rnnviz.ui.explorer.data import snapshot_cell

    trainer = Trainer(growing(), corpus())
    trainer.run(GROW_AT - 1)
    narrow_weights = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    expected = trace_cells(trainer.model, trainer.vocab.encode("the lazy dog")).block(0, "h")[:, 2]
    trainer.run(3)
    wide_config = trainer.model.config
    values = snapshot_cell(("test", 1), GROW_AT - 1, narrow_weights, wide_config, trainer.vocab.chars,
                           "the lazy dog", 0, 2, "h")
    assert values is not None and list(values) == pytest.approx(list(expected), abs=1e-6)
    assert snapshot_cell(("test", 1), GROW_AT - 1, narrow_weights, wide_config, trainer.vocab.chars,
                         "the lazy dog", 0, NARROW + 1, "h") is None
