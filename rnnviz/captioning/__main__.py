"""The captioning command line: ``python -m rnnviz.captioning train|caption|chair`` (also ``rnnviz captioning``).

    python -m rnnviz.captioning train --p 0.9 --steps 700 --out-dir .        # both joins, same batches
    python -m rnnviz.captioning caption --scene "water" --beam 3              # shipped models
    python -m rnnviz.captioning caption --scene "water; large red circle left" --model captioner-every.pt
    python -m rnnviz.captioning chair captioner-h0.pt --n 1000

Exit codes: 0 done, 2 bad input (one line, no traceback).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from rnnviz.captioning import shipped, world
from rnnviz.captioning.checkpoint import load_captioner, save_captioner
from rnnviz.captioning.decode import beam_search
from rnnviz.captioning.metrics import boat_rate, evaluate
from rnnviz.captioning.model import JOINS, CaptionConfig, Captioner, pixels
from rnnviz.captioning.train import train_one, train_pair
from rnnviz.core.runtime import configure_cpu
from rnnviz.pairs import Parser, output_folder, print_progress, run_command


def parse_scene(spec: str) -> world.Scene:
    """A scene from "background; size colour shape position; …", e.g. "water; large white boat right"."""
    parts = [p.strip() for p in spec.split(";")]
    if not parts or not parts[0]:
        raise ValueError("A scene spec starts with its background, e.g. 'water; small red circle left'.")
    objects = []
    for k, part in enumerate(parts[1:], start=1):
        words = part.split()
        if len(words) != 4:
            raise ValueError(f"Object {k} {part!r}: give four words, size colour shape position "
                             "(e.g. 'small red circle left').")
        objects.append(world.SceneObject(shape=words[2], colour=words[1], size=words[0], position=words[3]))
    return world.Scene(parts[0], tuple(objects))


def _model_path(spec: str) -> Path:
    path = Path(spec)
    shipped_path = shipped.MODELS_DIR / path.name
    return path if path.exists() or not shipped_path.exists() else shipped_path


def _load(spec: str) -> Captioner:
    return load_captioner(_model_path(spec))[0]


def train_main(argv: list[str], prog: str) -> int:
    defaults = CaptionConfig()
    parser = Parser(prog=prog, description="Train the two joins (v at every step, v only in h0 and c0) from the same "
                    "initial weights on the same batches, and save both.")
    parser.add_argument("--p", type=float, default=defaults.p, help="P(boat | water) in training (default %(default)s)")
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--batch", type=int, default=defaults.batch)
    parser.add_argument("--n-train", type=int, default=defaults.n_train)
    parser.add_argument("--hidden", type=int, default=defaults.hidden)
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--join", choices=["both", *JOINS], default="both")
    parser.add_argument("--out-dir", default=".", help="folder for captioner-<join>.pt (default: here)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    config = replace(defaults, p=args.p, steps=args.steps, batch=args.batch, n_train=args.n_train,
                     hidden=args.hidden, lr=args.lr, seed=args.seed)
    out = output_folder(args.out_dir)
    config.validate()
    threads = configure_cpu()
    print(f"training {args.join} on {config.n_train} scenes, p = {config.p}, {config.steps} steps, "
          f"{threads} thread(s)", file=sys.stderr)
    callback = None if args.quiet else print_progress
    if args.join == "both":
        models, history = train_pair(config, callback)
    else:
        one, history = train_one(replace(config, join=args.join), callback)
        models = {args.join: one}
    print(f"trained in {history.seconds:.1f} s", file=sys.stderr)
    for join, model in models.items():
        figures = shipped.measure(model)
        path = out / shipped.FILES[join]
        data = save_captioner(model, path, figures)
        print(shipped.table_row(path.name, model, len(data), figures))
    return 0


def caption_main(argv: list[str], prog: str) -> int:
    parser = Parser(prog=prog, description="Caption a scene with a captioner.")
    parser.add_argument("--scene", required=True, help="'background; size colour shape position; …'")
    parser.add_argument("--model", default="both", help="a captioner file, or 'both' shipped models (default)")
    parser.add_argument("--beam", type=int, default=1, help="beam width 1–10 (1: greedy)")
    parser.add_argument("--seed", type=int, default=0, help="the objects' heights")
    args = parser.parse_args(argv)
    scene = parse_scene(args.scene).validate()
    if not 1 <= args.beam <= 10:
        raise ValueError(f"--beam is 1 to 10, not {args.beam}")
    image = pixels(world.render(scene, args.seed)[None])
    print(f"scene: {world.caption(scene)}")
    models = ({j: shipped.load(j)[0] for j in JOINS} if args.model == "both" else {args.model: _load(args.model)})
    for name, model in models.items():
        beams, _ = beam_search(model, image, args.beam)
        for beam in beams:
            print(f"{name:>6s}  {beam.logprob:8.3f}  {beam.text}")
    return 0


def chair_main(argv: list[str], prog: str) -> int:
    parser = Parser(prog=prog, description="Held-out accuracy and CHAIR of a captioner.")
    parser.add_argument("model", help="a captioner file or a shipped name (captioner-every.pt, captioner-h0.pt)")
    parser.add_argument("--n", type=int, default=1000, help="held-out scenes (default %(default)s)")
    parser.add_argument("--seed", type=int, default=shipped.EVAL_SEED)
    args = parser.parse_args(argv)
    if args.n < 1:
        raise ValueError(f"--n must be at least 1, not {args.n}")
    model = _load(args.model)
    held = world.heldout(args.n, args.seed)
    figures = {**evaluate(model, held), "boat on empty water": boat_rate(model, world.counterexamples(
        args.n, args.seed + 1))}
    for key, value in figures.items():
        print(f"{key:>20s}  {value:.3f}")
    return 0


COMMANDS = {"train": train_main, "caption": caption_main, "chair": chair_main}


def main(argv: list[str] | None = None, prog: str = "python -m rnnviz.captioning") -> int:
    return run_command(COMMANDS, argv, prog)  # CaptionerError is a ValueError: one line, exit 2


if __name__ == "__main__":
    sys.exit(main())
