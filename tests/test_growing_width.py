"""A run whose width grows (TrainConfig.grow_from, Trainer.widen): Net2Net's function-preserving widening.

The widened model must compute what the narrow one did (logits and the old units' h_t and c_t, checked against a
copy of the narrow model on the same text from the same carried state), the run must resume exactly across the
widening from a state saved on either side of it, and a checkpoint saved before it must load at the narrow width."""

from __future__ import annotations

import copy
import functools

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
    """Every parameter's Adam moments move with its weights, gate block by gate block: each old entry sits where
    its weight now sits (placed here by hand), a new entry's momentum is 0 and its second moment the old mean."""
    trainer = Trainer(growing(layers=2), corpus())
    narrow = {}

    def keep_the_narrow_weights_and_moments(record) -> None:  # after the grow_at-th step, before the widening
        if record.step == GROW_AT:
            for name, p in trainer.model.named_parameters():
                state = trainer.optimizer.state[p]
                narrow[name] = (p.detach().clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone())

    trainer.run(GROW_AT, on_step=keep_the_narrow_weights_and_moments)
    assert trainer.width == WIDE and narrow["head.weight"][0].shape[1] == NARROW
    wide_params = dict(trainer.model.named_parameters())
    assert wide_params.keys() == narrow.keys()
    for name, p in wide_params.items():
        weight, exp_avg, exp_avg_sq = narrow[name]
        state = trainer.optimizer.state[p]
        assert int(state["step"]) == GROW_AT, name  # Adam's bias correction goes on where it was
        old = _old_places(name, weight.shape, p.shape)
        named = functools.partial("{}, {}: {}".format, name)
        torch.testing.assert_close(p.detach().flatten()[old], weight.flatten(), rtol=0, atol=0,
                                   msg=functools.partial(named, "weights"))
        torch.testing.assert_close(state["exp_avg"], _placed(exp_avg, old, p.shape, 0.0), rtol=0, atol=0,
                                   msg=functools.partial(named, "exp_avg"))
        torch.testing.assert_close(state["exp_avg_sq"], _placed(exp_avg_sq, old, p.shape, exp_avg_sq.mean().item()),
                                   rtol=0, atol=0, msg=functools.partial(named, "exp_avg_sq"))
    gate_rows = trainer.optimizer.state[wide_params["rnn.weight_hh_l0"]]["exp_avg"][WIDE:WIDE + NARROW, :NARROW]
    assert torch.equal(gate_rows, narrow["rnn.weight_hh_l0"][1][NARROW:2 * NARROW]), "f's block starts at row H"


def _old_places(name: str, narrow_shape, wide_shape) -> torch.Tensor:
    """(numel of the narrow tensor,) flat indices into the wide tensor, in the narrow tensor's row-major order: row
    r of gate block k (LSTM i f g o) goes to row k·WIDE + r; the columns of what the units send (W_hh, layer 1's
    W_ih, the readout) keep their first NARROW places; the embedding and the readout's bias stay as they were."""
    rows, columns = narrow_shape[0], narrow_shape[1] if len(narrow_shape) == 2 else 1
    wide_columns = wide_shape[1] if len(wide_shape) == 2 else 1
    if name.startswith("rnn."):
        wide_rows = [k * WIDE + r for k in range(rows // NARROW) for r in range(NARROW)]
    else:
        wide_rows = list(range(rows))
    return torch.tensor([row * wide_columns + c for row in wide_rows for c in range(columns)])


def _placed(narrow: torch.Tensor, old: torch.Tensor, wide_shape, fill: float) -> torch.Tensor:
    """A wide tensor holding ``narrow`` at the flat indices ``old`` and ``fill`` everywhere else."""
    wide = torch.full((int(torch.Size(wide_shape).numel()),), fill)
    wide[old] = narrow.flatten()
    return wide.reshape(wide_shape)


def test_the_carried_state_crosses_the_widening():
    """The state a chunk ends with is carried into the next one across the widening, with zeros for the new units:
    the first step after it has the loss that the narrow model gives on that chunk from that state."""
    trainer = Trainer(growing(), corpus())
    kept = {}

    def keep_the_narrow_run(record) -> None:  # after the grow_at-th step, before the widening
        if record.step == GROW_AT:
            kept.update(model=copy.deepcopy(trainer.model), state=copy.deepcopy(trainer.state),
                        batcher=copy.deepcopy(trainer.batcher))

    trainer.run(GROW_AT, on_step=keep_the_narrow_run)
    assert trainer.width == WIDE
    h, c = kept["state"]  # (layers, B, NARROW) each
    assert h.abs().sum() > 0 and c.abs().sum() > 0
    assert trainer.state is not None, "the widening dropped the carried state"
    for carried, narrow_part in zip(trainer.state, (h, c)):
        assert carried.shape[-1] == WIDE
        torch.testing.assert_close(carried[..., :NARROW], narrow_part, rtol=0, atol=0)
        assert torch.all(carried[..., NARROW:] == 0)
    x, y, starts_epoch = kept["batcher"].next_batch()  # the chunk the next step trains on
    assert not starts_epoch
    with torch.no_grad():
        _, narrow_loss, _ = kept["model"](x, y, (h, c))
    trainer.run(1)
    assert trainer.history[-1].loss == pytest.approx(narrow_loss.item(), rel=1e-5)


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
    from rnnviz.ui.hidden_cell_explorer.data import snapshot_cell

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
