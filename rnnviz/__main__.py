"""The ``rnnviz`` command: one entry point with subcommands, like ``git`` or ``pip``.

    rnnviz train --corpus notes.txt --steps 300 --out notes.pt
    rnnviz sample notes.pt --prime "The" --length 200
    rnnviz inspect notes.pt --text notes.txt   # surprisal and guesses per character, as CSV and HTML
    rnnviz models                      # the shipped models with their val loss
    rnnviz app --model my_lstm.pt --vocab vocab.json   # the app, with your own model in every model box
    rnnviz experiments sweep --seeds 3

Each subcommand is imported only when called, so ``rnnviz --help`` answers without loading torch.
``python -m rnnviz …`` is the same command.
"""

from __future__ import annotations

import importlib
import sys

import rnnviz

# name -> (module, function, one-line help); the function takes (argv, prog) and returns the exit code
COMMANDS = {
    "train": ("rnnviz.cli", "train_main", "train a character model and save a checkpoint"),
    "sample": ("rnnviz.cli", "sample_main", "generate text from a checkpoint or a shipped model"),
    "app": ("rnnviz.launch", "app_main", "start the app with your own model (--model) or states (--states --text)"),
    "inspect": ("rnnviz.cli", "inspect_main", "the surprisal and top guesses of every character of a text"),
    "models": ("rnnviz.cli", "models_main", "list the shipped models; evaluate or compact a checkpoint"),
    "experiments": ("rnnviz.experiments.__main__", "main", "memory experiments: delayed copy, conditioning, cost"),
    "captioning": ("rnnviz.captioning.__main__", "main", "image captioning: train both joins, caption a scene, CHAIR"),
    "seq2seq": ("rnnviz.seq2seq.__main__", "main", "sequence to sequence: fixed context against attention (reversal)"),
}


def usage() -> str:
    lines = ["usage: rnnviz COMMAND [options]   (rnnviz COMMAND --help for each one's options)", "", "commands:"]
    lines += [f"  {name:12s} {help_text}" for name, (_, _, help_text) in COMMANDS.items()]
    lines += ["", "The app itself: make run (or rnnviz app) in the repository."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"rnnviz {rnnviz.__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"rnnviz: unknown command {name!r}; choose one of {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr)
        return 2
    module, function, _ = COMMANDS[name]
    run = getattr(importlib.import_module(module), function)
    return run(rest, prog=f"rnnviz {name}")


if __name__ == "__main__":
    sys.exit(main())
