"""The character-model command line: ``rnnviz train``, ``rnnviz sample``, ``rnnviz inspect`` and ``rnnviz models``.

Each ``*_main(argv)`` parses its own options and returns the exit code: 0 when done, 2 for bad input (said
in one line, no traceback), 130 when training was interrupted and its checkpoint saved. Paths are taken
relative to the current folder; the shipped models are found through the package.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rnnviz.charlm.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from rnnviz.charlm.corpus import BUILTIN_CORPORA, CorpusError, UnknownCharactersError, load_corpus
from rnnviz.charlm.foreign import load_any
from rnnviz.charlm.presets import ALL_PRESETS, KIND_PRESETS, SHAKESPEARE_3_MIN
from rnnviz.charlm.pretrained import MAX_BYTES, MODELS_DIR, compact_bytes, shipped_models, val_loss
from rnnviz.charlm.sample import beam_search, generate
from rnnviz.charlm.train import OPTIMIZERS, PRECISIONS, TrainConfig, Trainer
from rnnviz.core.config import MODEL_KINDS, kind_label
from rnnviz.core.runtime import configure_cpu
from rnnviz.limits import OWN_FILE_LIMITS  # the operator's own files: no upload caps


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _checkpoint_path(spec: str) -> Path:
    """A path the user gave (relative to their folder), or a shipped model's file name when none is there."""
    path = Path(spec)
    shipped = MODELS_DIR / path.name
    return path if path.exists() or path.name != spec or not shipped.exists() else shipped


def _add_foreign_options(parser: argparse.ArgumentParser) -> None:
    """--vocab and --nonlinearity: what a plain PyTorch model's state_dict needs beside it."""
    parser.add_argument("--vocab", metavar="FILE",
                        help="for a model saved as a plain PyTorch state_dict (torch.save(model.state_dict(), ...)): "
                        'its vocabulary as JSON, the characters in id order (["\\n", " ", "a", ...]) or a string')
    parser.add_argument("--nonlinearity", choices=("tanh", "relu"), default="tanh",
                        help="a plain PyTorch nn.RNN's nonlinearity, which its weights cannot tell (default: "
                        "%(default)s)")


def _load_model(args: argparse.Namespace):
    """The checkpoint (rnnviz's own, or a plain state_dict with --vocab), its report lines on stderr."""
    checkpoint, report = load_any(_checkpoint_path(args.checkpoint), args.vocab, nonlinearity=args.nonlinearity,
                                  limits=OWN_FILE_LIMITS)
    for line in report:
        print(line, file=sys.stderr)
    return checkpoint


def train_parser(prog: str = "rnnviz train") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Train a character-level RNN/LSTM/GRU/minGRU, xLSTM's sLSTM or mLSTM, a selective SSM or linear "
        "attention with truncated BPTT, or a small Transformer on windows of its context, and save a checkpoint.",
        epilog=f"Example: {prog} --corpus tiny-shakespeare --kind lstm --layers 1 --hidden 256 "
        "--minutes 3 --out m.pt    (Ctrl-C stops early and still saves). "
        f"A Transformer: {prog} --kind transformer --layers 4 --hidden 128 --n-head 4 --block-size 64 "
        "--optimizer adamw --lr 1e-3, or the baby-GPT preset.",
    )
    # The command line runs for a budget it knows (--minutes, --steps, or the preset's), so its default is the
    # preset tuned for a budget; the live page's default is the one that is good whenever a class stops it.
    parser.add_argument("--preset", choices=sorted(ALL_PRESETS),
                        help=f"starting settings; every option below overrides it (default: {SHAKESPEARE_3_MIN}, or "
                        "for --kind slstm, mlstm, selective or linear_attention that kind's own preset)")
    parser.add_argument("--corpus", help=f"{', '.join(BUILTIN_CORPORA)}, or a path to a UTF-8 text file "
                        "(default: the preset's)")
    parser.add_argument("--kind", choices=MODEL_KINDS)
    parser.add_argument("--layers", type=int, help="stacked layers (Transformer: blocks)")
    parser.add_argument("--hidden", type=int, help="units per layer (Transformer: the width C)")
    parser.add_argument("--n-head", type=int, help="heads of a Transformer's blocks, an sLSTM, an mLSTM or linear "
                        "attention (the width must divide by it)")
    parser.add_argument("--block-size", type=int, help="Transformer: context length (default: the preset's, or "
                        "--seq-len); --seq-len defaults to it")
    parser.add_argument("--embed-dim", type=int)
    parser.add_argument("--one-hot", action="store_true", help="feed one-hot characters instead of an embedding")
    parser.add_argument("--dropout", type=float)
    parser.add_argument("--optimizer", choices=OPTIMIZERS)
    parser.add_argument("--lr", type=float, help="peak learning rate")
    parser.add_argument("--lr-decay-steps", type=int, help="cosine decay length in steps (0: constant)")
    parser.add_argument("--warmup-steps", type=int, help="linear learning-rate warm-up in steps (0: none)")
    parser.add_argument("--weight-decay", type=float, help="AdamW's decoupled weight decay on matrices")
    parser.add_argument("--batch", type=int, help="B, parallel streams")
    parser.add_argument("--seq-len", "-T", type=int, help="T, characters per truncated-BPTT chunk")
    parser.add_argument("--clip", type=float, help="gradient-norm clip θ (0 turns clipping off)")
    parser.add_argument("--forget-bias", type=float, help="LSTM forget-gate bias at init")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="bf16: the forward pass in bfloat16 mixed precision (RNN, LSTM, GRU); auto: bf16 where "
                             "the hardware has bfloat16 arithmetic (default: the preset's)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="training wall time (default: the preset's)")
    budget.add_argument("--steps", type=int, help="optimizer steps, instead of --minutes")
    parser.add_argument("--eval-every", type=_positive_int, default=500,
                        help="validate every N steps (default: %(default)s)")
    parser.add_argument("--out", default="model.pt", help="checkpoint path (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def preset_name(args: argparse.Namespace) -> str:
    """The preset a run starts from: the one named, else the kind's own (sLSTM, mLSTM, selective SSM, linear
    attention: an LSTM's settings would make them wide and slow), else the 3-minute Shakespeare LSTM."""
    return args.preset or KIND_PRESETS.get(args.kind, SHAKESPEARE_3_MIN)


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, str]:
    """The preset's config with every given option applied, and the corpus spec."""
    preset = ALL_PRESETS[preset_name(args)]
    overrides = {
        name: getattr(args, name)
        for name in ("kind", "layers", "hidden", "embed_dim", "dropout", "optimizer", "lr", "lr_decay_steps",
                     "batch", "seq_len", "forget_bias", "seed", "device", "n_head", "block_size", "warmup_steps",
                     "weight_decay", "precision")
        if getattr(args, name) is not None
    }
    if args.one_hot:
        overrides["embedding"] = False
    if args.clip is not None:
        overrides["clip"] = args.clip if args.clip > 0 else None
    if overrides.get("kind", preset.config.kind) != "lstm":
        overrides.setdefault("forget_bias", None)
    if overrides.get("kind", preset.config.kind) == "transformer":  # windows fill the context unless told
        if args.seq_len is None:
            overrides["seq_len"] = overrides.get("block_size", preset.config.block_size)
        elif args.block_size is None:
            overrides["block_size"] = args.seq_len
    return preset.config.changed(**overrides), args.corpus or preset.corpus


def train_main(argv: list[str] | None = None, prog: str = "rnnviz train") -> int:
    """Train from the command line; 0 when done, 2 on bad input, 130 after Ctrl-C (the checkpoint is saved)."""
    from tqdm import tqdm

    args = train_parser(prog).parse_args(argv)
    download = {}

    def show_download(done: int, total: int) -> None:
        if "bar" not in download:
            download["bar"] = tqdm(total=total or None, unit="B", unit_scale=True, desc="downloading",
                                   disable=args.quiet)
        download["bar"].update(done - download["bar"].n)

    try:
        config, corpus_spec = config_from_args(args)
        corpus = load_corpus(corpus_spec, progress=show_download)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        if "bar" in download:
            download["bar"].close()
    threads = configure_cpu()
    trainer = Trainer(config, corpus)
    minutes = args.minutes if args.minutes is not None else (None if args.steps
                                                             else ALL_PRESETS[preset_name(args)].minutes)
    kind = f"Transformer ({config.n_head} heads, context {config.block_size})" if config.kind == "transformer" \
        else kind_label(config.kind)
    print(
        f"{corpus.name}: {len(corpus):,} chars, vocab {trainer.vocab.size}; {config.layers}×{config.hidden} "
        f"{kind}, {trainer.num_parameters:,} parameters; {trainer.device}, {threads} threads"
        f"{', bfloat16 forward' if trainer.bf16 else ''}",
        file=sys.stderr,
    )
    if not trainer.carries_state:
        print(config.describe(), file=sys.stderr)
    bar = tqdm(total=args.steps or round(minutes * 60), unit="step" if args.steps else "s", disable=args.quiet,
               dynamic_ncols=True, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]")
    stop = {"requested": False}

    def request_stop(signum, frame):
        # Finish the steps in flight so the saved weights are a whole update; a second Ctrl-C aborts.
        stop["requested"] = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous_handler = signal.signal(signal.SIGINT, request_stop)
    try:
        while trainer.halt is None and not stop["requested"]:
            if args.steps and trainer.step >= args.steps:
                break
            if minutes is not None and trainer.seconds >= minutes * 60:
                break
            before = trainer.seconds
            chunk = min(5, args.eval_every - trainer.step % args.eval_every)  # stop exactly at each validation
            records = trainer.run(min(chunk, args.steps - trainer.step) if args.steps else chunk)
            if records:
                advance = len(records) if args.steps else round(trainer.seconds) - round(before)
                bar.update(min(advance, bar.total - bar.n))
                bar.set_postfix(loss=f"{records[-1].loss:.3f}", chars_s=f"{trainer.chars_per_second:,.0f}")
            if records and trainer.step % args.eval_every == 0:
                ev = trainer.evaluate()
                bar.write(f"step {trainer.step}: val {ev.val_loss:.4f} nats/char ({ev.bits_per_char:.3f} bits)",
                          file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        bar.close()
    interrupted = stop["requested"]
    if interrupted:
        print("interrupted: saving the checkpoint", file=sys.stderr)
    if trainer.halt is not None:
        print(f"halted at step {trainer.halt.step}: {trainer.halt.reason}; weights from step "
              f"{trainer.halt.restored_step} kept", file=sys.stderr)
    if trainer.step and not interrupted:
        ev = trainer.evals[-1] if trainer.evals and trainer.evals[-1].step == trainer.step else trainer.evaluate()
        print(f"final val loss {ev.val_loss:.4f} nats/char ({ev.bits_per_char:.3f} bits/char) after "
              f"{trainer.step} steps, {trainer.seconds:.0f} s", file=sys.stderr)
    save_checkpoint(args.out, trainer, corpus_name=corpus.name)
    print(f"saved {args.out}", file=sys.stderr)
    return 130 if interrupted else 0


def sample_parser(prog: str = "rnnviz sample") -> argparse.ArgumentParser:
    def top_p(text: str) -> float:
        """argparse type for --top-p: a number in (0, 1]."""
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not 0 < value <= 1:
            raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]: P is the probability the kept characters "
                                             "add up to, so more than 0 and at most 1 (1 keeps them all)")
        return value

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Generate text from an rnnviz checkpoint (made by rnnviz train), or from a character model "
        "saved as a plain PyTorch state_dict with its vocabulary (--vocab).",
        epilog=f'Example: {prog} m.pt --prime "ROMEO:" --temperature 0.8 --length 500    '
        f"A model of your own: {prog} my_lstm.pt --vocab vocab.json",
    )
    parser.add_argument("checkpoint", help="a .pt file written by rnnviz, or the name of a shipped model, or a plain "
                        "PyTorch state_dict (with --vocab)")
    parser.add_argument("--prime", default="", help="text to start from (default: a newline)")
    parser.add_argument("--length", type=int, default=500, help="characters to generate (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=0.8, help="0 is greedy (default: %(default)s)")
    parser.add_argument("--top-k", type=int, help="sample among the k most likely characters only")
    parser.add_argument("--top-p", type=top_p, metavar="P",
                        help="nucleus sampling: keep the most likely characters until their probabilities add up "
                        "to P (0 < P <= 1; 1 is off), after --top-k")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument("--beam", type=int, metavar="WIDTH", help="beam search with this width instead of sampling")
    _add_foreign_options(parser)
    return parser


def sample_main(argv: list[str] | None = None, prog: str = "rnnviz sample") -> int:
    """Print text generated from a checkpoint; 0 when done, 2 on bad input."""
    args = sample_parser(prog).parse_args(argv)
    try:
        checkpoint = _load_model(args)
        if args.beam:
            beams = beam_search(checkpoint.model, checkpoint.vocab, args.prime, args.length, args.beam)
            for rank, beam in enumerate(beams, start=1):
                print(f"--- beam {rank}: log p = {beam.log_prob:.2f} nats")
                print(args.prime + beam.text)
        else:
            text = generate(checkpoint.model, checkpoint.vocab, args.prime, args.length, args.temperature,
                            args.top_k, args.seed, top_p=args.top_p)
            print(args.prime + text)
    except (CheckpointError, CorpusError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


INSPECT_MAX_CHARS = 1_000_000  # a passage this long takes seconds on 2 cores; its CSV is tens of MB
INSPECT_HTML_CHARS = 5_000  # each character is a column of six boxes: 5,000 make a page of about 3 MB


def inspect_parser(prog: str = "rnnviz inspect") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Read a text with a character model: the surprisal −log p of every character and the model's top "
                    "guesses for it, written as a CSV (every character) and an HTML page (the prediction strip, as on "
                    "the Hidden-cell explorer).",
        epilog=f"Example: {prog} lstm-python-stdlib.pt --text mymodule.py --out mymodule",
    )
    parser.add_argument("checkpoint", help="a .pt file written by rnnviz, or the name of a shipped model, or a plain "
                        "PyTorch state_dict (with --vocab)")
    parser.add_argument("--text", required=True, metavar="FILE", help="the text to read (UTF-8)")
    parser.add_argument("--out", metavar="PREFIX",
                        help="write PREFIX.csv and PREFIX.html (default: the text file's name without its suffix, "
                        "plus -surprisal, in the current folder)")
    parser.add_argument("--top", type=_positive_int, default=5,
                        help="guesses kept per character (default: %(default)s)")
    parser.add_argument("--html-chars", type=_positive_int, default=INSPECT_HTML_CHARS, metavar="N",
                        help="characters drawn in the HTML page, from the start (default: %(default)s; the CSV has "
                        "all)")
    parser.add_argument("--drop-unknown", action="store_true",
                        help="leave out characters the model never saw instead of stopping with an error")
    _add_foreign_options(parser)
    return parser


def inspect_main(argv: list[str] | None = None, prog: str = "rnnviz inspect") -> int:
    """Write the surprisal and guesses of every character of a text as CSV and HTML; 0 when done, 2 on bad input."""
    import csv
    import html
    import math

    from rnnviz.interpret.colortext import describe_char
    from rnnviz.interpret.prediction_strip import legends_html, strip_html
    from rnnviz.interpret.surprisal import predictions

    args = inspect_parser(prog).parse_args(argv)
    try:
        checkpoint = _load_model(args)
        try:
            text = Path(args.text).read_text(encoding="utf-8").replace("\r\n", "\n")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"cannot read {args.text} as UTF-8 text: {err}") from None
        if args.drop_unknown:
            known = set(checkpoint.vocab.chars)
            text = "".join(c for c in text if c in known)
        if len(text) > INSPECT_MAX_CHARS:
            raise ValueError(f"{args.text} has {len(text):,} characters; inspect reads at most {INSPECT_MAX_CHARS:,}")
        if len(text) < 2:
            raise ValueError(f"{args.text} needs at least 2 characters the model knows: one to read, one to predict")
        ids = checkpoint.vocab.encode(text)  # unknown characters: CorpusError naming them
        found = predictions(checkpoint.model, ids, args.top)
    except UnknownCharactersError as err:
        print(f"error: {err} Or pass --drop-unknown to read the text without them.", file=sys.stderr)
        return 2
    except (CheckpointError, CorpusError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    prefix = Path(args.out) if args.out else Path(f"{Path(args.text).stem}-surprisal")
    chars = checkpoint.vocab.chars
    csv_path, html_path = prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".html")
    with csv_path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["position", "character", "surprisal_nats", "p", "rank"]
                        + [f"{name}_{j + 1}" for j in range(found.guess_ids.shape[1]) for name in ("guess", "p")])
        for t in range(found.length):
            predicted = t > 0
            row = [t, describe_char(text[t]), f"{found.surprisal[t]:.6f}" if predicted else "",
                   f"{found.true_prob[t]:.6f}" if predicted else "", int(found.rank[t]) if predicted else ""]
            for i, p in zip(found.guess_ids[t], found.guess_probs[t]):
                row += [describe_char(chars[int(i)]), f"{p:.6f}"] if i >= 0 else ["", ""]
            writer.writerow(row)
    shown = min(args.html_chars, len(text))
    loss = found.loss()
    summary = (f"{found.length - 1:,} characters predicted: mean surprisal {loss:.4f} nats/char "
               f"({loss / math.log(2):.3f} bits), top guess right for {found.top1_accuracy():.1%}")
    title = f"{Path(args.text).name} read by {Path(args.checkpoint).name}"
    html_path.write_text(
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f'<body style="font-family:system-ui,sans-serif;max-width:1100px;margin:24px auto">'
        f"<h1 style='font-size:20px'>{html.escape(title)}</h1><p>{html.escape(summary)}. Characters 0–{shown - 1:,}"
        f" drawn; every character is in {html.escape(csv_path.name)}. Hover a column for its numbers.</p>"
        + legends_html(found.surprisal[:shown]) + strip_html(text, found, chars, 0, shown) + "</body>",
        encoding="utf-8")
    print(f"{summary}\nwrote {csv_path} and {html_path}")
    return 0


def models_parser(prog: str = "rnnviz models") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="List the character models shipped with rnnviz, measure one, or make a trained one small.",
        epilog=f"Examples: {prog}    {prog} evaluate m.pt    {prog} compact m.pt small.pt",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="the shipped models with their recorded val loss (the default)")
    evaluate = commands.add_parser("evaluate", help="print a checkpoint's val loss on its own corpus")
    evaluate.add_argument("checkpoint", help="a .pt file written by rnnviz, or the name of a shipped model")
    compact = commands.add_parser("compact", help="drop the optimizer state and store the weights as fp16")
    compact.add_argument("source", help="a checkpoint written by rnnviz train")
    compact.add_argument("target", help="where to write the compact checkpoint")
    return parser


def models_main(argv: list[str] | None = None, prog: str = "rnnviz models") -> int:
    """List, evaluate or compact checkpoints; 0 when done, 2 on bad input."""
    args = models_parser(prog).parse_args(argv)
    try:
        if args.command in (None, "list"):
            models = shipped_models()
            print(f"{len(models)} shipped models in {MODELS_DIR} (val loss on the last 10% of each corpus):")
            for shipped in models:
                print(f"  {shipped.file:28s} {shipped.corpus:17s} val {shipped.val_loss:.4f} nats/char   "
                      f"{shipped.model}")
            print("Sample one by its name, from any folder: rnnviz sample lstm-python-stdlib.pt --prime 'def '")
        elif args.command == "compact":
            data = compact_bytes(Path(args.source).read_bytes())
            Path(args.target).write_bytes(data)
            note = "" if len(data) <= MAX_BYTES else f" (over the {MAX_BYTES:,}-byte limit for shipped models)"
            print(f"wrote {args.target}: {len(data):,} bytes{note}")
        else:
            path = _checkpoint_path(args.checkpoint)
            loss, chars = val_loss(path)
            checkpoint = load_checkpoint(path, limits=OWN_FILE_LIMITS)
            config = checkpoint.config
            print(f"{args.checkpoint}: {config.layers}×{config.hidden} {kind_label(config.kind)} "
                  f"on {checkpoint.corpus}, "
                  f"step {checkpoint.step}, {checkpoint.model.num_parameters():,} parameters; "
                  f"val loss {loss:.4f} nats/char over {chars:,} characters")
    except (CheckpointError, CorpusError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
