"""Command-line twin of the Memory experiments page; the same seed gives the page's numbers.

    rnnviz experiments delay --model rnn --delay 8 --length 96
    rnnviz experiments sweep --seeds 3
    rnnviz experiments cost --max-length 8192
    rnnviz experiments condition --steps 400
    rnnviz experiments recall --pairs 2 4 8 --seeds 3
    rnnviz experiments parity --kinds lstm slstm selective

``python -m rnnviz.experiments …`` is the same command.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from rnnviz.core.runtime import configure_cpu

STATE_THREADS = 1  # recall and parity: small models, as delayed copy's (rnnviz.experiments.delay.COPY_THREADS)


def _delay_config(args):
    from rnnviz.experiments.delay import DelaySweepConfig

    return DelaySweepConfig(
        alphabet=args.alphabet, length=args.length, delays=tuple(args.delays), hidden=args.lstm_hidden,
        sizing=args.sizing, embed_dim=args.embed, steps=args.steps, batch=args.batch, lr=args.lr,
        forget_bias=None if args.forget_bias < 0 else args.forget_bias, seeds=getattr(args, "seeds", 1),
        base_seed=args.seed, eval_every=args.every, eval_batch=args.eval_batch,
    )


def run_delay(args) -> int:
    """One model, one delay: train-batch loss every N steps, held-out accuracy at the end."""
    from rnnviz.experiments.delay import COPY_THREADS, torch_threads
    from rnnviz.experiments.tasks import train_delayed_copy

    args.delays = [args.delay]
    config = _delay_config(args).run_config(args.model, args.delay, args.seed)
    if args.hidden is not None:
        config = dataclasses.replace(config, hidden=args.hidden)
    print(f"delayed copy: {args.model.upper()} H={config.hidden}, alphabet {args.alphabet}, L={args.length}, "
          f"D={args.delay}, {args.steps} steps × {args.batch} sequences, lr {args.lr}, seed {args.seed}")
    window: list[float] = []

    def on_step(step: int, loss: float) -> None:
        window.append(loss)
        if step % args.every == 0 or step == config.steps:
            print(f"step {step:5d}  train-batch loss {sum(window) / len(window):.4f} (mean of last {len(window)})")
            window.clear()

    start = time.perf_counter()
    with torch_threads(COPY_THREADS):  # as the page trains it: these small models run fastest on one thread
        result = train_delayed_copy(config, on_step)
    seconds = time.perf_counter() - start
    print("held-out accuracy by step: " + ", ".join(
        f"{s}: {a:.4f}" for s, a in zip(result.eval_steps, result.eval_accuracy)))
    print(f"parameters {result.model.num_parameters()}, {seconds:.1f} s")
    print(f"final held-out accuracy {result.final_accuracy:.4f} (chance {config.task.chance:.4f})")
    return 0


def run_sweep(args) -> int:
    """The page's sweep: final held-out accuracy per model and D, mean [min, max] over seeds."""
    from rnnviz.experiments.delay import COPY_THREADS, run_delay_sweep, torch_threads

    config = _delay_config(args)
    print(f"sweep: D ∈ {list(config.delays)}, {config.seeds} seeds, H = "
          + ", ".join(f"{k.upper()} {config.hidden_for(k)}" for k in config.kinds))
    with torch_threads(COPY_THREADS):  # as the page trains it: these small models run fastest on one thread
        sweep = run_delay_sweep(config, lambda done, total, run: print(
            f"  [{done}/{total}] {run.kind.upper()} D={run.delay} seed {run.seed}: {run.final_accuracy:.4f} "
            f"({run.seconds:.1f} s)", flush=True))
    for kind in config.kinds:
        band = sweep.final(kind)
        print(f"{kind.upper():5s} " + "  ".join(
            f"D={d}: {m:.3f} [{lo:.3f}, {hi:.3f}]" for d, m, lo, hi in zip(band.x, band.mean, band.low, band.high)))
    print(f"wall time {sweep.seconds:.1f} s, CPU time {sweep.cpu_seconds:.1f} s (sums over the runs)")
    return 0


def run_cost(args) -> int:
    """Training-step time and peak memory per T, with the fitted log-log slopes."""
    from rnnviz.experiments.cost import CostConfig, run_cost_sweep

    config = CostConfig(width=args.width, min_length=args.min_length, max_length=args.max_length,
                        repeats=args.repeats, time_cap_s=args.time_cap, memory_cap_bytes=int(args.memory_cap * 2**30))
    print(f"{'T':>6} {'LSTM ms':>9} {'minGRU ms':>10} {'attn ms':>9} {'LSTM peak MiB':>14} {'attn peak MiB':>14}")
    sweep = run_cost_sweep(config, lambda i, n, p: print(
        f"{p.length:6d} {p.lstm_seconds * 1e3:9.2f} {p.mingru_seconds * 1e3:10.2f} {p.attention_seconds * 1e3:9.2f} "
        f"{p.lstm_peak_bytes / 2**20:14.2f} {p.attention_peak_bytes / 2**20:14.2f}", flush=True))
    if sweep.stopped:
        print(sweep.stopped)
    for name in ("lstm_seconds", "mingru_seconds", "attention_seconds", "lstm_peak_bytes", "attention_peak_bytes"):
        slope = sweep.slope(name)
        print(f"slope of {name}: " + ("n/a" if slope is None else f"{slope:.2f}"))
    print(f"{sweep.threads} torch thread(s), {sweep.seconds:.1f} s")
    return 0


def run_condition(args) -> int:
    """Both conditioning variants: val loss with the right and a wrong v, and the per-position gap."""
    from rnnviz.experiments.conditioning import STYLE_LABELS, VARIANTS, ConditioningConfig, run_conditioning

    config = ConditioningConfig(styles=tuple(args.styles), kind=args.model, hidden=args.hidden, steps=args.steps,
                                seed=args.seed)
    result = run_conditioning(config, lambda done, total: (done % 50 == 0) and print(
        f"  step {done}/{total}", flush=True))
    for name, variant in result.variants.items():
        print(f"{VARIANTS[name]} ({variant.parameters} parameters, {variant.seconds:.1f} s)")
        for s, style in enumerate(config.styles):
            gap = variant.position_gap
            print(f"  {STYLE_LABELS[style]:13s} val loss right v {variant.right_loss[s]:.3f}, wrong v "
                  f"{variant.wrong_loss[s]:.3f}; samples classified as this style {variant.classified[s]:.0%}")
        print("  loss gap (wrong − right v) at positions 0, 5, 10, 20, 40: "
              + ", ".join(f"{gap[t]:.3f}" for t in (0, 5, 10, 20, 40) if t < len(gap)))
    return 0


def _write_records(path: str | None, records: list) -> None:
    if path:
        import json

        with open(path, "w", encoding="utf-8") as out:
            json.dump([dataclasses.asdict(r) for r in records], out, indent=1)
        print(f"wrote {len(records)} records to {path}")


def _recall_config(args):
    from rnnviz.experiments.recall import RecallSweepConfig

    return RecallSweepConfig(
        kinds=tuple(args.kinds), pairs=tuple(args.pairs), length=args.length, vocab=args.vocab, width=args.width,
        sizing=args.sizing, layers=args.layers, embed_dim=args.embed, heads=args.heads, state_size=args.state_size,
        steps=args.steps, batch=args.batch, lr=args.lr, seeds=args.seeds, base_seed=args.seed,
        eval_batch=args.eval_batch)


def _parity_config(args):
    from rnnviz.experiments.parity import ParitySweepConfig

    return ParitySweepConfig(
        kinds=tuple(args.kinds), train_length=args.train_length, test_lengths=tuple(args.test_lengths),
        width=args.width, sizing=args.sizing, layers=args.layers, embed_dim=args.embed, heads=args.heads,
        state_size=args.state_size, steps=args.steps, batch=args.batch, lr=args.lr, seeds=args.seeds,
        base_seed=args.seed, eval_batch=args.eval_batch)


def state_sweep_config(argv: list[str]):
    """The RecallSweepConfig or ParitySweepConfig that ``rnnviz experiments recall|parity ARGV`` runs (ARGV from
    "recall" or "parity" on); ValueError for another command. Bad flags end in argparse's SystemExit."""
    args = _parser().parse_args(argv)
    if args.command not in ("recall", "parity"):
        raise ValueError(f"not a recall or parity sweep: {args.command!r}")
    return _recall_config(args) if args.command == "recall" else _parity_config(args)


def run_recall(args) -> int:
    """MQAR: held-out query accuracy per kind and number of pairs D, with each model's parameters and state bytes."""
    from rnnviz.experiments.delay import torch_threads
    from rnnviz.experiments.recall import run_recall_sweep
    from rnnviz.experiments.sequence_models import label

    config = _recall_config(args)
    print(f"recall (MQAR): T = {config.length}, V = {config.vocab}, D ∈ {list(config.pairs)}, {config.steps} steps × "
          f"{config.batch} sequences, lr {config.lr}, {config.seeds} seed(s), sizing: {config.sizing}")
    print(f"{'kind':17s} {'D':>3s} {'seed':>4s} {'width':>5s} {'params':>8s} {'state B':>8s} {'accuracy':>8s} "
          f"{'loss':>6s} {'s':>6s}")
    with torch_threads(args.threads):
        records = run_recall_sweep(config, lambda done, total, r: print(
            f"{label(r.kind):17s} {r.pairs:3d} {r.seed:4d} {r.width:5d} {r.parameters:8d} {r.state_bytes:8d} "
            f"{r.accuracy:8.3f} {r.final_loss:6.3f} {r.seconds:6.1f}", flush=True))
    print(f"chance: {records[0].chance:.3f} per query; wall time {sum(r.seconds for r in records):.1f} s")
    _write_records(args.json, records)
    return 0


def run_parity(args) -> int:
    """Running parity: accuracy after L bits per kind, trained on strings of --train-length bits."""
    from rnnviz.experiments.delay import torch_threads
    from rnnviz.experiments.parity import run_parity_sweep
    from rnnviz.experiments.sequence_models import label

    config = _parity_config(args)
    lengths = sorted(set(config.test_lengths))
    print(f"parity: trained on {config.train_length} bits, {config.steps} steps × {config.batch} strings, "
          f"lr {config.lr}, {config.seeds} seed(s), sizing: {config.sizing}; accuracy after L bits (chance 0.5)")
    print(f"{'kind':17s} {'seed':>4s} {'width':>5s} {'params':>8s} {'state B':>8s} "
          + " ".join(f"{'L=' + str(n):>7s}" for n in lengths) + f" {'s':>6s}")
    with torch_threads(args.threads):
        records = run_parity_sweep(config, lambda done, total, r: print(
            f"{label(r.kind):17s} {r.seed:4d} {r.width:5d} {r.parameters:8d} {r.state_bytes:8d} "
            + " ".join(f"{a:7.3f}" for a in r.accuracy) + f" {r.seconds:6.1f}", flush=True))
    print(f"wall time {sum(r.seconds for r in records):.1f} s")
    _write_records(args.json, records)
    return 0


def _parser(prog: str = "rnnviz experiments") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def delay_options(p):
        p.add_argument("--alphabet", type=int, default=8)
        p.add_argument("--length", type=int, default=96, help="L, steps per sequence")
        p.add_argument("--lstm-hidden", type=int, default=32, help="the LSTM's H; the RNN's follows --sizing")
        p.add_argument("--sizing", choices=["params", "hidden"], default="params")
        p.add_argument("--embed", type=int, default=16)
        p.add_argument("--steps", type=int, default=200)
        p.add_argument("--batch", type=int, default=16)
        p.add_argument("--lr", type=float, default=1e-2)
        p.add_argument("--forget-bias", type=float, default=2.0, help="the LSTM's b_f at init; negative for torch's")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--every", type=int, default=25, help="steps between reports and evaluations")
        p.add_argument("--eval-batch", type=int, default=256, help="sequences in the fixed held-out set")

    one = commands.add_parser("delay", help="train one model on delayed copy")
    one.add_argument("--model", choices=["rnn", "lstm", "gru"], default="rnn")
    one.add_argument("--delay", type=int, default=8, help="D, 0 < D < L")
    one.add_argument("--hidden", type=int, default=None, help="override H")
    delay_options(one)
    one.set_defaults(run=run_delay)

    sweep = commands.add_parser("sweep", help="RNN against LSTM over several D and seeds")
    sweep.add_argument("--delays", type=int, nargs="+", default=[2, 8, 16, 32, 64])
    sweep.add_argument("--seeds", type=int, default=3)
    delay_options(sweep)
    sweep.set_defaults(run=run_sweep)

    cost = commands.add_parser("cost", help="LSTM, minGRU scan and self-attention: training time and memory against T")
    cost.add_argument("--width", type=int, default=128)
    cost.add_argument("--min-length", type=int, default=64)
    cost.add_argument("--max-length", type=int, default=8192)
    cost.add_argument("--repeats", type=int, default=3)
    cost.add_argument("--time-cap", type=float, default=60.0, help="seconds")
    cost.add_argument("--memory-cap", type=float, default=2.0, help="GiB")
    cost.set_defaults(run=run_cost)

    cond = commands.add_parser("condition", help="a style vector at every step against only in h_0")
    cond.add_argument("--styles", nargs="+", default=["python-stdlib", "english-docs"])
    cond.add_argument("--model", choices=["rnn", "lstm", "gru"], default="lstm")
    cond.add_argument("--hidden", type=int, default=128)
    cond.add_argument("--steps", type=int, default=400)
    cond.add_argument("--seed", type=int, default=0)
    cond.set_defaults(run=run_condition)

    def state_options(p, defaults):
        from rnnviz.experiments.sequence_models import ALL_KINDS, SIZINGS

        p.add_argument("--kinds", nargs="+", choices=ALL_KINDS, default=list(defaults.kinds))
        p.add_argument("--width", type=int, default=defaults.width, help="H of every kind, or the LSTM's (--sizing)")
        p.add_argument("--sizing", choices=list(SIZINGS), default=defaults.sizing,
                       help="width: the same H; params: the LSTM's parameter count; state: the LSTM's state bytes")
        p.add_argument("--layers", type=int, default=defaults.layers)
        p.add_argument("--embed", type=int, default=defaults.embed_dim, help="the recurrent kinds' embedding width")
        p.add_argument("--heads", type=int, default=defaults.heads)
        p.add_argument("--state-size", type=int, default=defaults.state_size, help="S of the selective SSM")
        p.add_argument("--steps", type=int, default=defaults.steps)
        p.add_argument("--batch", type=int, default=defaults.batch)
        p.add_argument("--lr", type=float, default=defaults.lr)
        p.add_argument("--seeds", type=int, default=defaults.seeds)
        p.add_argument("--seed", type=int, default=defaults.base_seed, help="the first seed")
        p.add_argument("--eval-batch", type=int, default=defaults.eval_batch, help="sequences in the held-out set")
        p.add_argument("--threads", type=int, default=STATE_THREADS, help="torch threads")
        p.add_argument("--json", default=None, help="also write the records to this JSON file")

    from rnnviz.experiments.parity import ParitySweepConfig
    from rnnviz.experiments.recall import RecallSweepConfig

    recall_defaults = RecallSweepConfig()
    recall = commands.add_parser("recall", help="multi-query associative recall (MQAR) across the kinds")
    recall.add_argument("--pairs", type=int, nargs="+", default=list(recall_defaults.pairs), help="D values")
    recall.add_argument("--length", type=int, default=recall_defaults.length, help="T, tokens per sequence")
    recall.add_argument("--vocab", type=int, default=recall_defaults.vocab)
    state_options(recall, recall_defaults)
    recall.set_defaults(run=run_recall)

    parity_defaults = ParitySweepConfig()
    parity = commands.add_parser("parity", help="running parity: trained on short strings, tested on longer ones")
    parity.add_argument("--train-length", type=int, default=parity_defaults.train_length)
    parity.add_argument("--test-lengths", type=int, nargs="+", default=list(parity_defaults.test_lengths))
    state_options(parity, parity_defaults)
    parity.set_defaults(run=run_parity)
    return parser


def main(argv: list[str] | None = None, prog: str = "rnnviz experiments") -> int:
    args = _parser(prog).parse_args(argv)
    configure_cpu()
    try:
        return args.run(args)
    except ValueError as err:  # bad settings, said in plain words
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
