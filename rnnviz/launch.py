"""``rnnviz app``: start the app with your own model, or your own states, selected in every model box.

    rnnviz app --model my_lstm.pt --vocab vocab.json    # an rnnviz checkpoint, or a plain PyTorch state_dict
    rnnviz app --states states.h5 --text input.txt      # states from anywhere, one vector per character

The files are checked here first, so that a problem is a message on the terminal rather than on a page; the
server then gets their paths in its environment (rnnviz.ui.kit.models.LAUNCHED_MODEL_ENV, and the explorer's
LAUNCHED_STATES_ENV) and loads them once. This module never imports streamlit: it starts it as a process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import rnnviz

# The same names as rnnviz.ui.kit.models and rnnviz.ui.hidden_cell_explorer.imports read (a test checks they agree): the
# server side imports streamlit, which the CLI must not load.
MODEL_ENV, VOCAB_ENV, NONLINEARITY_ENV = "RNNVIZ_MODEL", "RNNVIZ_VOCAB", "RNNVIZ_NONLINEARITY"
STATES_ENV, TEXT_ENV = "RNNVIZ_STATES", "RNNVIZ_TEXT"
APP = Path(rnnviz.__file__).resolve().parent.parent / "app.py"


def parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Start the app with your own model or states selected.")
    p.add_argument("--model", metavar="FILE", help="an rnnviz checkpoint, or a PyTorch state_dict of "
                   "Embedding (or one-hot) → nn.RNN/LSTM/GRU → nn.Linear saved with torch.save")
    p.add_argument("--vocab", metavar="FILE", help="a plain state_dict's vocabulary: a JSON list of its characters "
                   "in id order (or a JSON string)")
    p.add_argument("--nonlinearity", choices=("tanh", "relu"), default="tanh",
                   help="a plain nn.RNN's nonlinearity, which its weights do not record (default tanh)")
    p.add_argument("--states", metavar="FILE", help="hidden states, one vector per character of --text: (T, H) or "
                   "(layers, T, H), as .npy, .npz or HDF5 (.h5), as LSTMVis takes them")
    p.add_argument("--text", metavar="FILE", help="the UTF-8 text the states were computed over")
    p.add_argument("--port", type=int, default=8501, help="the port to serve on (default 8501)")
    p.add_argument("--check", action="store_true", help="check the files and say what would be shown, then stop")
    return p


def checked_environment(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """The variables that name the files for the server, and what the checks found; SystemExit(2) with the reason
    for a file that cannot be used."""
    env, said = {}, []
    if args.model:
        from rnnviz.charlm.checkpoint import CheckpointError
        from rnnviz.charlm.foreign import load_any
        from rnnviz.limits import OWN_FILE_LIMITS

        try:
            checkpoint, report = load_any(args.model, args.vocab, nonlinearity=args.nonlinearity,
                                          limits=OWN_FILE_LIMITS)
        except CheckpointError as err:
            raise SystemExit(f"rnnviz app: {args.model}: {err}") from None
        from rnnviz.core.config import shape_label

        said += report or [f"{args.model}: an rnnviz checkpoint, a {shape_label(checkpoint.config)} over "
                           f"{checkpoint.vocab.size} characters, trained on {checkpoint.corpus}."]
        env[MODEL_ENV] = str(Path(args.model).resolve())
        if args.vocab:
            env[VOCAB_ENV] = str(Path(args.vocab).resolve())
        if args.nonlinearity != "tanh":
            env[NONLINEARITY_ENV] = args.nonlinearity
    elif args.vocab:
        raise SystemExit("rnnviz app: --vocab goes with --model (the vocabulary of a plain state_dict).")
    if bool(args.states) != bool(args.text):
        raise SystemExit("rnnviz app: --states and --text go together: the states and the text they were computed "
                         "over, one vector per character.")
    if args.states:
        from rnnviz.interpret.states import StatesError, read_states

        try:
            text = Path(args.text).read_text(encoding="utf-8")
            states = read_states(Path(args.states).read_bytes(), Path(args.states).name, len(text),
                                 max_values=1 << 31)
        except (OSError, UnicodeDecodeError, StatesError) as err:
            raise SystemExit(f"rnnviz app: {err}") from None
        trace = states.trace()
        said.append(f"{args.states}: {trace.layers} layer(s) × {trace.hidden} units over {trace.length:,} characters "
                    f"of {args.text} (quantities {', '.join(trace.quantities)}).")
        env[STATES_ENV], env[TEXT_ENV] = str(Path(args.states).resolve()), str(Path(args.text).resolve())
    return env, said


def app_main(argv: list[str], prog: str = "rnnviz app") -> int:
    args = parser(prog).parse_args(argv)
    env, said = checked_environment(args)
    for line in said:
        print(line, file=sys.stderr)
    if not APP.exists():
        print(f"rnnviz app: the app's entry point {APP} is not here; run it from a checkout of the repository "
              "(make run installs one).", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(args.port)]
    if args.check:
        print("would run: " + " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(command))
        return 0
    # As `make run` starts it: two malloc arenas keep a closed tab's memory from staying with the server.
    return subprocess.call(command, cwd=APP.parent, env={**os.environ, "MALLOC_ARENA_MAX": "2", **env})
