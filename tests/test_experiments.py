"""Memory experiments engine: delayed-copy sweep and sizing, conditioning plumbing, cost measurement, CLI."""

import dataclasses
import math
import subprocess
import sys

import pytest
import torch
from torch.testing import assert_close

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.experiments.__main__ import _parser, main
from rnnviz.experiments.conditioning import (
    BigramClassifier,
    ConditionalCharModel,
    ConditionalConfig,
    ConditioningConfig,
    Tokens,
    evaluate_variant,
    frame,
    generate,
    load_style_data,
    position_losses,
    run_conditioning,
    text_lines,
    train_variant,
)
from rnnviz.experiments.cost import (
    CostConfig,
    CostPoint,
    SelfAttention,
    fit_loglog,
    measure_cost_at,
    peak_allocated_bytes,
    run_cost_sweep,
)
from rnnviz.experiments.delay import (
    AT_CHANCE_MARGIN,
    DEFAULT_RECIPE,
    RECENT_RUNS,
    DelayRun,
    DelaySweep,
    DelaySweepConfig,
    SweepClock,
    matching_hidden,
    parameter_breakdown,
    parameter_count,
    run_copy,
    run_delay_sweep,
    seconds_left,
    torch_threads,
)
from rnnviz.experiments.tasks import IGNORE, DelayedCopy, delayed_copy_batch, train_delayed_copy
from rnnviz.figures.experiments import cost_time_figure, critical_path_figure, delay_sweep_figure, state_memory_figure
from tests.apptest_helpers import ROOT

# --------------------------------------------------------------------------------------------------------
# Experiment 1: delayed copy


def test_generator_reproduces_the_lecture_example_and_shifts_every_batch():
    inputs = torch.tensor([[3, 8, 2, 5, 1]])
    from rnnviz.experiments.tasks import delayed_copy_targets

    targets = delayed_copy_targets(inputs, 2)
    assert targets[0, 2:].tolist() == [3, 8, 2]
    assert (targets[0, :2] == IGNORE).all()
    x, y = delayed_copy_batch(DelayedCopy(alphabet=5, length=12, delay=4), 6, torch.Generator().manual_seed(1))
    assert torch.equal(y[:, 4:], x[:, :-4]) and (y[:, :4] == IGNORE).all()


@pytest.mark.parametrize(("vocab", "embed", "hidden"), [(8, 16, 32), (4, 16, 24), (30, 8, 50)])
def test_equal_parameter_sizing_matches_real_counts(vocab, embed, hidden):
    target = CharModel(ModelConfig(vocab, "lstm", hidden=hidden, embed_dim=embed)).num_parameters()
    assert parameter_count("lstm", vocab, embed, hidden) == target
    for kind in ("rnn", "gru"):
        h = matching_hidden(target, kind, vocab, embed)
        counts = {k: CharModel(ModelConfig(vocab, kind, hidden=k, embed_dim=embed)).num_parameters()
                  for k in (h - 1, h, h + 1)}
        assert counts[h] == parameter_count(kind, vocab, embed, h)
        assert abs(counts[h] - target) <= min(abs(counts[h - 1] - target), abs(counts[h + 1] - target))
    parts = parameter_breakdown("rnn", vocab, embed, hidden)
    assert parts["embedding"] == vocab * embed and parts["readout"] == hidden * vocab + vocab
    assert parts["total"] == CharModel(ModelConfig(vocab, "rnn", hidden=hidden, embed_dim=embed)).num_parameters()


def test_sizing_choice_and_lecture_defaults():
    config = DelaySweepConfig()
    assert config.hidden_for("lstm") == 32 and config.hidden_for("rnn") == 70  # 6,792 against 6,856 parameters
    assert DelaySweepConfig(sizing="hidden").hidden_for("rnn") == 32
    assert config.length == 96 and config.delays == (2, 8, 16, 32, 64) and config.seeds >= 3


def _finals(config: DelaySweepConfig, delay: int, accuracies: dict[str, list[float]]) -> DelaySweep:
    """A sweep whose runs end at the given held-out accuracies (one per seed), for the verdict's logic."""
    runs = [DelayRun(kind, delay, config.base_seed + s, config.hidden_for(kind), 0, (config.steps,), (acc,), (1.0,),
                     0.0, 0.0) for kind, accs in accuracies.items() for s, acc in enumerate(accs)]
    return DelaySweep(config, runs)


def test_verdict_names_the_leader_only_when_every_seed_agrees_and_who_stayed_at_chance():
    config = DelaySweepConfig(alphabet=8, delays=(32,))
    chance = 1 / 8
    kept = _finals(config, 32, {"rnn": [0.126, 0.129, 0.125], "lstm": [0.33, 0.30, 0.32]}).verdict(32)
    assert kept.leader == "lstm" and kept.at_chance == ("rnn",) and kept.decisive
    assert kept.lows["lstm"] == 0.30 and kept.highs["rnn"] == 0.129 and kept.chance == chance
    assert kept.means["lstm"] == pytest.approx((0.33 + 0.30 + 0.32) / 3)
    # One RNN seed starts to learn: the LSTM is still ahead on every seed, but the RNN is no longer at chance.
    started = _finals(config, 32, {"rnn": [0.126, 0.25, 0.13], "lstm": [0.50, 0.49, 0.49]}).verdict(32)
    assert started.leader == "lstm" and started.at_chance == () and not started.decisive
    # Overlapping seeds: no leader, whatever the means say.
    overlap = _finals(config, 32, {"rnn": [0.90, 1.0, 0.99], "lstm": [0.92, 0.93, 0.91]})
    assert overlap.verdict(32).leader is None and overlap.ahead(32) is None
    # Both at chance: nobody leads, both are named.
    lost = _finals(config, 32, {"rnn": [chance, chance + AT_CHANCE_MARGIN, 0.12], "lstm": [0.13, 0.126, 0.125]})
    assert lost.verdict(32).leader is None and lost.verdict(32).at_chance == ("rnn", "lstm")


def test_default_recipe_is_a_cli_sweep_with_flags():
    """The page's default (its seeded run is tested in test_memory_experiments_page.py) repeats from the CLI."""
    from rnnviz.experiments.__main__ import _delay_config

    longest = max(DEFAULT_RECIPE.delays)
    assert longest >= 32 and DEFAULT_RECIPE.seeds >= 3 and DEFAULT_RECIPE.sizing == "params"
    for kind in ("rnn", "lstm"):
        args = _parser().parse_args(DEFAULT_RECIPE.cli_command(kind, longest, 0).split()[2:])
        args.delays = [args.delay]
        assert _delay_config(args).run_config(kind, longest, 0) == DEFAULT_RECIPE.run_config(kind, longest, 0)


@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(delays=(96,)), "between 1 and L − 1"), (dict(delays=()), "at least one delay"),
    (dict(seeds=0), "seed"), (dict(sizing="flops"), "sizing"), (dict(lr=0.0), "learning rate"),
])
def test_bad_sweep_settings_are_plain_errors(kwargs, words):
    with pytest.raises(ValueError, match=words):
        DelaySweepConfig(**kwargs)


def test_sweep_is_fair_and_its_bands_are_the_seed_statistics(monkeypatch):
    config = DelaySweepConfig(alphabet=3, length=8, delays=(1, 3), hidden=6, embed_dim=4, steps=4, batch=4,
                              seeds=3, base_seed=5, eval_batch=16, eval_every=2)
    assert config.kinds == ("rnn", "lstm")
    # What each model is fed: every forward pass's inputs (and targets), recorded as the real forward runs.
    fed: list[tuple[bool, torch.Tensor, torch.Tensor | None]] = []
    forward = CharModel.forward

    def recording_forward(model, idx, targets=None, state=None):
        fed.append((model.training, idx.clone(), None if targets is None else targets.clone()))
        return forward(model, idx, targets, state)

    monkeypatch.setattr(CharModel, "forward", recording_forward)
    seen = {}

    def on_progress(done, total, run):
        seen[(run.kind, run.delay, run.seed)] = list(fed)
        fed.clear()
        progress.append((done, total))

    progress = []
    sweep = run_delay_sweep(config, on_progress)
    monkeypatch.undo()
    assert progress[-1] == (12, 12) and len(sweep.runs) == 12
    for delay in (1, 3):
        for seed in (5, 6, 7):
            rnn, lstm = sweep.select("rnn", delay), sweep.select("lstm", delay)
            assert [r.seed for r in rnn] == [r.seed for r in lstm] == [5, 6, 7]
            assert (rnn[0].eval_steps, len(rnn[0].train_loss)) == (lstm[0].eval_steps, len(lstm[0].train_loss))
            batches = {kind: [(x, y) for training, x, y in seen[(kind, delay, seed)] if training]
                       for kind in ("rnn", "lstm")}
            held_out = {kind: [x for training, x, _ in seen[(kind, delay, seed)] if not training]
                        for kind in ("rnn", "lstm")}
            assert len(batches["rnn"]) == len(batches["lstm"]) == config.steps
            for (x_rnn, y_rnn), (x_lstm, y_lstm) in zip(batches["rnn"], batches["lstm"]):
                assert torch.equal(x_rnn, x_lstm) and torch.equal(y_rnn, y_lstm)  # the same batches, in order
            assert len(held_out["rnn"]) == len(held_out["lstm"]) == len(rnn[0].eval_steps)
            for x_rnn, x_lstm in zip(held_out["rnn"], held_out["lstm"]):
                assert torch.equal(x_rnn, x_lstm) and x_rnn.shape == (config.eval_batch, config.length)
            assert all(torch.equal(x, held_out["rnn"][0]) for x in held_out["rnn"])  # one fixed held-out set
        # Another seed draws other data: the equalities above could fail.
        first, other = (seen[("rnn", delay, seed)][0][1] for seed in (5, 6))
        assert not torch.equal(first, other)
    for kind in ("rnn", "lstm"):
        finals = [r.final_accuracy for r in sweep.select(kind, 3)]
        band = sweep.final(kind)
        assert band.x == (1, 3)
        assert band.mean[1] == pytest.approx(sum(finals) / 3)
        assert band.low[1] == min(finals) and band.high[1] == max(finals)
        curve = sweep.curve(kind, 1)
        assert curve.x == (2, 4)
        assert curve.mean[0] == pytest.approx(sum(r.eval_accuracy[0] for r in sweep.select(kind, 1)) / 3)
    from rnnviz.figures.experiments import MODEL_NAMES

    traces = {trace.name: trace for trace in delay_sweep_figure(sweep).data}
    names = {kind: f"{MODEL_NAMES[kind]} (H = {config.hidden_for(kind)})" for kind in ("rnn", "lstm")}
    assert set(traces) == set(names.values())
    for kind in ("rnn", "lstm"):
        trace, band = traces[names[kind]], sweep.final(kind)
        assert list(trace.y) == list(band.mean) and list(trace.x) == [1, 3]
        assert list(trace.error_y.array) == pytest.approx([h - m for h, m in zip(band.high, band.mean)])
    # A run of the sweep is the trainer's run with the same config, number for number.
    for kind in ("rnn", "lstm"):
        alone = train_delayed_copy(config.run_config(kind, 3, 6))
        assert sweep.select(kind, 3)[1].eval_accuracy == tuple(alone.eval_accuracy)


def test_time_left_is_each_models_latest_run_times_over_the_runs_to_go():
    assert RECENT_RUNS == 2
    # The RNN's runs took 12, 8 and 10 s (its latest two: mean 9 s), the LSTM's one run 4 s. Still to go: an LSTM
    # run a quarter done, then an RNN and an LSTM run: 0.75 · 4 + 9 + 4 = 16 s.
    finished = [("rnn", 12.0), ("lstm", 4.0), ("rnn", 8.0), ("rnn", 10.0)]
    assert seconds_left(finished, ["lstm", "rnn", "lstm"], 0.25) == pytest.approx(16.0)
    assert seconds_left(finished, ["rnn"], 0.5) == pytest.approx(4.5)
    assert seconds_left(finished, []) == 0.0
    # A model with no finished run yet: no estimate, rather than one borrowed from the other model's times.
    assert seconds_left([("rnn", 9.0)], ["rnn", "lstm"]) is None
    assert seconds_left([], ["rnn"]) is None


def test_sweep_clock_times_only_the_runs_this_sweep_trains():
    """A tiny real sweep where one run is found stored (as when another user trained it): the clock expects the
    runs still to train, at the wall time its own trained runs took, and never counts the stored run's time."""
    config = DelaySweepConfig(alphabet=3, length=8, delays=(1, 3), hidden=6, embed_dim=4, steps=4, batch=4,
                              seeds=1, eval_every=2)
    plan = config.runs()
    assert [(rc.kind, rc.task.delay) for rc in plan] == [("rnn", 1), ("lstm", 1), ("rnn", 3), ("lstm", 3)]
    stored = {plan[2]: dataclasses.replace(run_copy(plan[2]), seconds=1000.0)}
    clock = SweepClock([rc for rc in plan if rc not in stored])
    said = []

    def run_one(run_config):
        if run_config in stored:
            return stored[run_config]
        run = run_copy(run_config)
        clock.trained(run)
        return run

    def on_progress(done, _total, _run):
        clock.passed(plan[done - 1])
        said.append(clock.seconds_left())

    sweep = run_delay_sweep(config, on_progress, run_one)
    lstm_first = sweep.runs[1]
    # After the first run only LSTM runs are left to train, and no LSTM run is timed yet; then each estimate is
    # the one timed LSTM run, for the one LSTM run left (the stored RNN run passes at no cost); then nothing.
    assert said == [None, lstm_first.seconds, lstm_first.seconds, 0.0]
    assert clock.finished == [("rnn", sweep.runs[0].seconds), ("lstm", lstm_first.seconds),
                              ("lstm", sweep.runs[3].seconds)]


def test_torch_threads_holds_the_count_for_the_block_and_gives_the_old_one_back():
    before = torch.get_num_threads()
    other = 1 if before > 1 else 2
    with torch_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(other):
        raise RuntimeError("a run that fails")
    assert torch.get_num_threads() == before


# --------------------------------------------------------------------------------------------------------
# Experiment 2: conditioning


def _conditional(variant: str, kind: str = "lstm") -> ConditionalCharModel:
    torch.manual_seed(0)
    return ConditionalCharModel(ConditionalConfig(vocab_size=7, styles=3, variant=variant, kind=kind, hidden=5,
                                                  embed_dim=4, style_dim=3))


@pytest.mark.parametrize("kind", ["lstm", "rnn"])
def test_v_reaches_every_step_in_one_variant_and_only_h0_in_the_other(kind):
    idx = torch.tensor([[5, 0, 1, 2, 3, 4]])
    for variant in ("every", "h0"):
        model = _conditional(variant, kind)
        v = model.style_vector(torch.tensor([1])).detach().requires_grad_(True)
        for t in range(idx.size(1)):
            # The state entering step t, cut from v: only what v adds at step t itself can reach the output.
            if t == 0:
                state = model.initial_state(v) if variant == "h0" else None
            else:
                _, _, state = model(idx[:, :t], v)
            state = None if state is None else tuple(s.detach() for s in state) if kind == "lstm" else state.detach()
            logits, _, _ = model(idx[:, t : t + 1], v, state=state)
            (grad,) = torch.autograd.grad(logits.sum(), v, allow_unused=True)
            direct = 0.0 if grad is None else grad.abs().sum().item()
            assert (direct > 0) == (variant == "every"), (variant, t)
        # Through the whole recurrence, v still reaches the last step in both variants (via h_0 for "h0").
        logits, _, _ = model(idx, v)
        (grad,) = torch.autograd.grad(logits[:, -1].sum(), v)
        assert grad.abs().sum() > 0


def test_h0_variant_starts_from_tanh_of_w_v():
    model = _conditional("h0")
    v = model.style_vector(torch.tensor([2, 0]))
    h0, c0 = model.initial_state(v)
    assert_close(h0[0], torch.tanh(v @ model.init_state.weight.T + model.init_state.bias))
    assert (c0 == 0).all()
    assert _conditional("every").initial_state(v) is None


def test_framing_with_start_and_end():
    tokens = Tokens("abc")
    inputs, targets = frame(tokens, ["ab", "c"])
    s, e = tokens.start, tokens.end
    assert inputs.tolist() == [[s, 0, 1], [s, 2, e]]
    assert targets.tolist() == [[0, 1, e], [2, e, IGNORE]]
    assert tokens.decode([s, 0, e]) == "<START>a<END>"
    assert text_lines("  x  \n\n" + "y" * 9 + "\nz\n", max_len=8) == ["  x", "z"]


def test_end_stops_generation_and_start_is_never_sampled():
    tokens = Tokens("abcde")
    model = _conditional("every")
    v = model.style_vector(torch.tensor([0, 1, 2]))
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.fill_(-30.0)
        model.head.bias[tokens.end] = 30.0
    assert generate(model, v, tokens, max_len=10) == [([], True)] * 3
    with torch.no_grad():
        model.head.bias[tokens.end] = -30.0
        model.head.bias[tokens.start] = 30.0  # masked: <START> is never generated
        model.head.bias[2] = 10.0
    assert generate(model, v, tokens, max_len=6) == [([2] * 6, False)] * 3
    with torch.no_grad():  # <END> and "a" equally likely: lines end early, and nothing follows <END>
        model.head.bias[2] = -30.0
        model.head.bias[0] = model.head.bias[tokens.end] = 0.0
    rows = generate(model, model.style_vector(torch.zeros(200, dtype=torch.long)), tokens, max_len=50,
                    generator=torch.Generator().manual_seed(0))
    lengths = [len(ids) for ids, ended in rows if ended]
    assert len(lengths) == 200 and all(ids == [0] * len(ids) for ids, _ in rows)
    assert 0.35 < sum(n == 0 for n in lengths) / 200 < 0.65  # P(first token is <END>) = 1/2


def test_bigram_classifier_tells_styles_apart():
    clf = BigramClassifier.fit([["def f(x):", "    return x"], ["The cat sat.", "A dog ran."]], "():.ACTadefgnorstux ")
    assert clf.predict("def g(x):") == 0 and clf.predict("The dog sat.") == 1
    assert clf.accuracy(["    return f(x)", "A cat ran."], 0) == 0.5


def test_conditioning_evaluation_aggregates_real_losses():
    config = ConditioningConfig(steps=3, hidden=8, embed_dim=4, style_dim=3, batch=4, max_len=40, max_chars=20_000,
                                val_lines=6, samples=3, shown=1)
    data = load_style_data(config.styles, config.max_chars, config.max_len)
    model, losses = train_variant(config, data, "h0")
    assert len(losses) == 3
    clf = BigramClassifier.fit(data.train, data.tokens.chars)
    result = evaluate_variant(config, data, model, clf)
    val = [lines[: config.val_lines] for lines in data.val]
    own = [position_losses(model, data.tokens, val[s], s) for s in (0, 1)]
    other = [position_losses(model, data.tokens, val[s], 1 - s) for s in (0, 1)]
    assert result["loss_matrix"][0][0] == pytest.approx(torch.nanmean(own[0]).item())
    assert result["loss_matrix"][1][0] == pytest.approx(torch.nanmean(other[1]).item())
    # Position 0 is scored in every val line of both styles.
    gap0 = torch.cat([other[s][:, 0] - own[s][:, 0] for s in (0, 1)]).mean().item()
    assert result["position_gap"][0] == pytest.approx(gap0, abs=1e-5)
    assert result["position_count"][0] == 2 * config.val_lines
    assert all(len(lengths) == 3 and max(lengths) <= 40 for lengths in result["sample_lengths"])


def test_conditioning_run_gives_both_variants_the_same_batches():
    config = ConditioningConfig(steps=2, hidden=8, embed_dim=4, style_dim=3, batch=4, max_len=30, max_chars=10_000,
                                val_lines=4, samples=2, shown=1)
    seen = []
    result = run_conditioning(config, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (4, 4) and list(result.variants) == ["every", "h0"]
    every, h0 = result.variants.values()
    assert every.parameters - h0.parameters == 4 * 8 * 3 - (8 * 3 + 8)  # W_ih's v columns against W and its bias
    with pytest.raises(ValueError, match="two different styles"):
        ConditioningConfig(styles=("english-docs",))


# --------------------------------------------------------------------------------------------------------
# Experiment 3: cost


def test_fitted_slopes_on_synthetic_timings():
    lengths = [64, 128, 256, 512, 1024]
    slope, intercept = fit_loglog(lengths, [3e-9 * t**2 for t in lengths])
    assert slope == pytest.approx(2.0) and intercept == pytest.approx(math.log(3e-9))
    assert fit_loglog(lengths, [5e-6 * t + 0 for t in lengths])[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fit_loglog([64], [1.0])


def _synthetic_point(length, width, repeats, seed):
    """A timing that grows exactly as T (LSTM) and T² (attention); memory likewise."""
    lstm, attention = 1e-5 * length, 1e-8 * length**2
    return CostPoint(length, lstm, attention, 1000 * length, 8 * length**2, 2 * width * 4, 2 * length * width * 4,
                     seconds=(repeats + 2) * (lstm + attention) + 1e-3)  # and 1 ms of set-up


def test_sweep_stops_at_the_memory_cap_and_fits_the_slopes():
    config = CostConfig(width=8, min_length=64, max_length=65536, memory_cap_bytes=100 * 2**20)
    sweep = run_cost_sweep(config, measure=_synthetic_point)
    assert [p.length for p in sweep.points] == [64, 128, 256, 512, 1024, 2048]  # 8·T² bytes ≤ 100 MiB up to 2048
    assert "T = 4096" in sweep.stopped and "memory cap" in sweep.stopped
    assert sweep.slope("lstm_seconds") == pytest.approx(1.0)
    assert sweep.slope("attention_seconds") == pytest.approx(2.0)
    assert sweep.slope("attention_peak_bytes") == pytest.approx(2.0)
    assert [p.length for p in sweep.fit_points()] == [512, 1024, 2048]
    lstm, fit, attention, _ = cost_time_figure(sweep).data
    assert lstm.name == "LSTM (slope 1.00)" and attention.name == "self-attention (slope 2.00)"
    assert list(fit.y) == pytest.approx([1e-5 * t * 1e3 for t in (512, 1024, 2048)])  # ms


def test_sweep_stops_at_the_time_cap():
    config = CostConfig(width=8, min_length=64, max_length=4096, repeats=1, time_cap_s=0.02)
    sweep = run_cost_sweep(config, measure=_synthetic_point)  # 2.9 + 5.3 + 10.6 ms; 512 would add ~23 ms
    assert [p.length for p in sweep.points] == [64, 128, 256]
    assert "T = 512" in sweep.stopped and "time cap" in sweep.stopped


def test_peak_memory_sees_torch_allocations():
    def work():
        a = torch.empty(1_000_000)  # 4 MB
        b = torch.empty(500_000)  # 2 MB
        del a
        c = torch.empty(250_000)  # 1 MB: the peak stays at 6 MB
        return b, c

    assert peak_allocated_bytes(work) == 6_000_000


def test_self_attention_matches_torch_multihead_attention():
    torch.manual_seed(0)
    ours = SelfAttention(8)
    ref = torch.nn.MultiheadAttention(8, num_heads=1, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.qkv.weight)
        ref.in_proj_bias.copy_(ours.qkv.bias)
        ref.out_proj.weight.copy_(ours.out.weight)
        ref.out_proj.bias.copy_(ours.out.bias)
    x = torch.randn(2, 5, 8)
    y, (k, v) = ours(x)
    assert_close(y, ref(x, x, x, need_weights=False)[0])
    assert_close(v, x @ ours.qkv.weight[16:].T + ours.qkv.bias[16:])


def test_measured_point_reports_real_tensor_sizes():
    point = measure_cost_at(length=32, width=8, repeats=1)
    assert point.kv_cache_bytes == 2 * 32 * 8 * 4  # K and V, (1, T, d) float32
    assert point.lstm_state_bytes == 2 * 8 * 4  # h_T and c_T, (1, 1, d)
    assert point.mingru_state_bytes == 8 * 4  # h_T, (1, 1, d)
    assert point.attention_peak_bytes >= 32 * 32 * 4  # at least the T×T scores
    assert point.mingru_peak_bytes >= 32 * 2 * 8 * 4  # at least W x_t for every t, (1, T, 2d)
    assert point.lstm_seconds > 0 and point.attention_seconds > 0 and point.mingru_seconds > 0
    assert (point.path_lstm, point.path_scan, point.path_attention) == (32, 5, 1)


def _synthetic_point_with_mingru(length, width, repeats, seed):
    """As _synthetic_point, with a minGRU that takes a fifth of the LSTM's time and holds d numbers."""
    point = _synthetic_point(length, width, repeats, seed)
    return dataclasses.replace(point, mingru_seconds=point.lstm_seconds / 5, mingru_peak_bytes=200 * length,
                               mingru_state_bytes=width * 4)


def test_sweep_with_the_mingru_fits_its_slope_and_draws_three_models():
    config = CostConfig(width=8, min_length=64, max_length=1024)
    sweep = run_cost_sweep(config, measure=_synthetic_point_with_mingru)
    assert sweep.slope("mingru_seconds") == pytest.approx(1.0)
    assert sweep.slope("mingru_peak_bytes") == pytest.approx(1.0)
    names = [t.name for t in cost_time_figure(sweep).data if t.showlegend is not False]
    assert names == ["LSTM (slope 1.00)", "minGRU parallel scan (slope 1.00)", "self-attention (slope 2.00)"]
    mingru = cost_time_figure(sweep).data[2]
    assert list(mingru.y) == pytest.approx([1e-5 * t / 5 * 1e3 for t in config.lengths()])  # ms
    states = {t.name: list(t.y) for t in state_memory_figure(sweep).data}
    assert states["minGRU state h_T"] == [8 * 4 / 1024] * 5 and states["LSTM state h_T, c_T"] == [2 * 8 * 4 / 1024] * 5
    # a sweep of points without the minGRU (made before it existed) has no slope and no line for it
    old = run_cost_sweep(config, measure=_synthetic_point)
    assert old.slope("mingru_seconds") is None and len(cost_time_figure(old).data) == 4


def test_critical_path_figure_counts_steps():
    lstm, scan, attention = critical_path_figure([64, 128, 1000]).data
    assert list(lstm.y) == [64, 128, 1000] and list(scan.y) == [6, 7, 10] and list(attention.y) == [1, 1, 1]


# --------------------------------------------------------------------------------------------------------
# The command line


def test_cli_delay_prints_the_trainers_numbers(capsys):
    argv = ["delay", "--model", "rnn", "--delay", "2", "--length", "8", "--alphabet", "4", "--steps", "6",
            "--every", "3", "--eval-batch", "16", "--seed", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    config = DelaySweepConfig(alphabet=4, length=8, delays=(2,), steps=6, eval_every=3, eval_batch=16)
    result = train_delayed_copy(config.run_config("rnn", 2, 4))
    assert f"final held-out accuracy {result.final_accuracy:.4f}" in out
    assert f"3: {result.eval_accuracy[0]:.4f}, 6: {result.eval_accuracy[1]:.4f}" in out
    assert "step     3  train-batch loss" in out


def test_page_command_rebuilds_the_same_run():
    config = DelaySweepConfig(alphabet=5, length=40, delays=(4, 9), hidden=16, sizing="hidden", steps=30, batch=8,
                              lr=3e-3, forget_bias=None, eval_batch=64, eval_every=10)
    for kind in ("rnn", "lstm"):
        command = config.cli_command(kind, 9, 7)
        args = _parser().parse_args(command.split()[2:])  # after "rnnviz experiments"
        from rnnviz.experiments.__main__ import _delay_config

        args.delays = [args.delay]
        assert _delay_config(args).run_config(args.model, args.delay, args.seed) == config.run_config(kind, 9, 7)


def test_cli_rejects_bad_settings_in_words(capsys):
    assert main(["delay", "--delay", "96", "--length", "96"]) == 2
    assert "between 1 and L − 1" in capsys.readouterr().err


def test_cli_cost_runs_as_a_module():
    out = subprocess.run(
        [sys.executable, "-m", "rnnviz.experiments", "cost", "--width", "8", "--max-length", "256", "--repeats", "1",
         "--time-cap", "300"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={"RNNVIZ_THREADS": "1", "PATH": ""},
    )
    assert out.returncode == 0, out.stderr
    assert "slope of attention_seconds" in out.stdout and "   256" in out.stdout
    assert "slope of mingru_seconds" in out.stdout
