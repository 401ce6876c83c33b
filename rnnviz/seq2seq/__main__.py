"""The sequence-to-sequence command line: ``python -m rnnviz.seq2seq train|decode|evaluate`` (also ``rnnviz seq2seq``).

    python -m rnnviz.seq2seq train --steps 400 --out-dir .          # both joins, same batches, same start
    python -m rnnviz.seq2seq decode helloworld --beam 3            # the shipped pair
    python -m rnnviz.seq2seq evaluate --n 200                      # accuracy by input length, 1…2L

Exit codes: 0 done, 2 bad input (one line, no traceback).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from rnnviz.core.runtime import configure_cpu
from rnnviz.pairs import Parser, output_folder, print_progress, run_command
from rnnviz.seq2seq import checkpoint as ckpt
from rnnviz.seq2seq import decode as D
from rnnviz.seq2seq import task
from rnnviz.seq2seq.model import Seq2SeqConfig
from rnnviz.seq2seq.train import train_pair

REPORT_LENGTHS = (1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40)  # the MODELS.md table's lengths (L = 20)


def _pair(folder: str | None):
    return ckpt.load_pair(folder) if folder else ckpt.load_shipped()


def _lengths(spec: str | None, max_input: int) -> list[int]:
    if not spec:
        return [n for n in REPORT_LENGTHS if n <= max_input]
    try:
        lengths = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--lengths takes whole numbers separated by commas, not {spec!r}") from None
    if not lengths:
        raise ValueError("--lengths is empty")
    return lengths


def format_table(rows: list[dict]) -> str:
    """Accuracy-by-length records as a Markdown table: one row per length, exact and per-character per model."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    by = {(r["model"], r["length"]): r for r in rows}
    lengths = sorted({r["length"] for r in rows})
    head = "| length | " + " | ".join(f"{m} exact | {m} char" for m in models) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(models))]
    for n in lengths:
        cells = []
        for m in models:
            r = by[(m, n)]
            cells += [f"{r['exact']:.3f}", f"{r['char']:.3f}"]
        trained = by[(models[0], n)]["trained"]
        lines.append(f"| {n}{'' if trained else ' *'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def train_main(argv: list[str], prog: str) -> int:
    d = Seq2SeqConfig()
    parser = Parser(prog=prog, description="Train the fixed-context and the attention model from the same initial "
                    "weights on the same batches, and save both.")
    parser.add_argument("--steps", type=int, default=d.steps)
    parser.add_argument("--batch", type=int, default=d.batch)
    parser.add_argument("--lr", type=float, default=d.lr)
    parser.add_argument("--alphabet", type=int, default=d.alphabet_size, help="letters a… (2–26)")
    parser.add_argument("--train-max", type=int, default=d.train_max, help="longest training string L")
    parser.add_argument("--embed", type=int, default=d.embed)
    parser.add_argument("--enc-hidden", type=int, default=d.enc_hidden)
    parser.add_argument("--dec-hidden", type=int, default=d.dec_hidden)
    parser.add_argument("--attn", type=int, default=d.attn)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--out-dir", default=".", help="folder for seq2seq-reverse-<join>.pt (default: here)")
    parser.add_argument("--n", type=int, default=200, help="held-out strings per length for the recorded table")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    config = replace(d, steps=args.steps, batch=args.batch, lr=args.lr, alphabet_size=args.alphabet,
                     train_max=args.train_max, embed=args.embed, enc_hidden=args.enc_hidden,
                     dec_hidden=args.dec_hidden, attn=args.attn, seed=args.seed).validate()
    out = output_folder(args.out_dir)
    threads = configure_cpu()
    print(f"training both joins, strings of {config.train_min}–{config.train_max} letters, {config.steps} steps, "
          f"{threads} thread(s)", file=sys.stderr)
    models, history = train_pair(config, None if args.quiet else print_progress)
    print(f"trained in {history.seconds:.1f} s", file=sys.stderr)
    rows = D.accuracy_by_length(models, _lengths(None, config.max_input), args.n)
    metrics = {j: {"seconds": round(history.seconds, 1), "final_loss": history.loss[j][-1],
                   "by_length": [{k: r[k] for k in ("length", "exact", "char", "n")} for r in rows if r["model"] == j]}
               for j in models}
    for join, path in ckpt.save_pair(models, out, metrics).items():
        print(f"wrote {path} ({path.stat().st_size:,} bytes, {models[join].num_parameters():,} parameters)")
    print(format_table(rows))
    return 0


def decode_main(argv: list[str], prog: str) -> int:
    parser = Parser(prog=prog, description="Reverse a string with both models (greedy, or beam search).")
    parser.add_argument("text", help="lower-case letters, e.g. helloworld")
    parser.add_argument("--models", default=None, help="a folder holding both files (default: the shipped pair)")
    parser.add_argument("--beam", type=int, default=1, help="beam width 1–10 (1: greedy)")
    parser.add_argument("--attention", action="store_true", help="print the attention model's strongest input "
                        "position per output step")
    args = parser.parse_args(argv)
    if not 1 <= args.beam <= 10:
        raise ValueError(f"--beam is 1 to 10, not {args.beam}")
    models, _ = _pair(args.models)
    for model in models.values():
        task.check_input(args.text, model.letters, model.config.max_input)
    print(f"input:  {args.text}\ntarget: {task.target(args.text)}")
    for join, model in models.items():
        if args.beam == 1:
            found = D.greedy(model, args.text)
        else:
            found, _ = D.beam_search(model, args.text, args.beam)
        for d in found:
            mark = "right" if d.correct else "wrong"
            print(f"{join:>9s}  {d.logprob:8.3f}  {d.output}  ({mark})")
        if args.attention and found[0].attention is not None:
            peaks = " ".join(str(int(j) + 1) for j in found[0].attention.argmax(1))
            print(f"{'':>9s}  input position attended at each output step: {peaks}")
    return 0


def evaluate_main(argv: list[str], prog: str) -> int:
    parser = Parser(prog=prog, description="Held-out exact match and per-character accuracy by input length.")
    parser.add_argument("--models", default=None, help="a folder holding both files (default: the shipped pair)")
    parser.add_argument("--n", type=int, default=200, help="strings per length (default %(default)s)")
    parser.add_argument("--lengths", default=None, help="comma-separated lengths (default: 1, 2, 4, 8 … 2L)")
    args = parser.parse_args(argv)
    models, _ = _pair(args.models)
    max_input = min(m.config.max_input for m in models.values())
    print(format_table(D.accuracy_by_length(models, _lengths(args.lengths, max_input), args.n)))
    print("(* longer or shorter than any training string)")
    return 0


COMMANDS = {"train": train_main, "decode": decode_main, "evaluate": evaluate_main}


def main(argv: list[str] | None = None, prog: str = "python -m rnnviz.seq2seq") -> int:
    return run_command(COMMANDS, argv, prog)  # Seq2SeqError is a ValueError: one line, exit 2


if __name__ == "__main__":
    sys.exit(main())
