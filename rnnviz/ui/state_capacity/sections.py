"""The page's three sections: recall against pairs and bytes (shipped, with one point run here), the memory of each
kind stepped through one recall sequence, and parity beyond the training length (shipped)."""

from __future__ import annotations

import streamlit as st

from rnnviz.experiments.recall import BLANK
from rnnviz.experiments.sequence_models import label
from rnnviz.experiments.state_capacity import (
    MEMORY_EVAL,
    MEMORY_RECIPES,
    MEMORY_TASK,
    MemoryTrace,
    ShippedSweep,
    parity_sentence,
    parity_summary,
    recall_sentence,
    recall_summary,
)
from rnnviz.experiments.tasks import IGNORE
from rnnviz.figures import state_capacity as figures
from rnnviz.ui.kit.cache import shared_figure
from rnnviz.ui.kit.widgets import plot, table
from rnnviz.ui.state_capacity.data import memory_accuracies, memory_models, memory_traces, shipped_sweep
from rnnviz.ui.state_capacity.point import point_section
from rnnviz.ui.state_capacity.settings import BYTES_PAIRS, PAIRS, SEQUENCE, STEP, page_key

# Under each memory, what the step wrote and read.
STEP_WORDS = {
    "lstm": r"Below: the forget gate $f_t$ that scales $c_{t-1}$ and the input gate $i_t$ that writes $g_t$.",
    "mlstm": r"Below: the key $k_t$ and value $v_t$, written as $i'_t\,v_t k_t^\top$ while $f'_t$ scales $C_{t-1}$; "
             r"the query $q_t$ and what it reads, $C_t q_t$ divided by its normaliser.",
    "linear_attention": r"Below: $\varphi(k_t)$ and $v_t$, added as $v_t\,\varphi(k_t)^\top$ (nothing is ever "
                        r"forgotten); $\varphi(q_t)$ and what it reads, $S_t\,\varphi(q_t)$ divided by "
                        r"$z_t^\top\varphi(q_t)$.",
    "selective": r"Below: $\Delta_t$ per channel (large: write this token and forget $s_{t-1}$; small: pass it by), "
                 r"and the maps $B_t$ that write it and $C_t$ that read $s_t$.",
    "transformer": "Below: how position t's query weighs the cached positions, per head (block 2).",
}
# The memory drawn side by side: a vector and the two matrix memories, then a selective state and a cache.
MEMORY_ROWS = (("lstm", "mlstm", "linear_attention"), ("selective", "transformer"))


def _sweep(task: str) -> ShippedSweep | None:
    try:
        return shipped_sweep(task)
    except (OSError, ValueError) as err:
        st.error(f"The shipped {task} sweep cannot be read ({err}), so this section has no numbers to show.")
        return None


def _measured_with(sweep: ShippedSweep) -> None:
    first = sweep.commands[0].split(" --")[0]
    st.caption(f"Measured with `{first} …` ({len(sweep.commands)} commands, below) on {sweep.measured_on}; "
               "nothing in these charts is computed when the page opens.")
    with st.expander(f"The commands that made these numbers, and every run ({len(sweep.all_records)})"):
        st.caption("Each command wrote its records with --json; run again on the same kind of machine, each prints "
                   "the same accuracies.")
        for command in sweep.commands:
            st.code(command, language="bash")
        if sweep.task == "recall":
            rows = [{"kind": label(r.kind), "D": r.pairs, "seed": r.seed, "width": r.width,
                     "parameters": r.parameters, "state bytes": r.state_bytes, "accuracy": r.accuracy,
                     "seconds": r.seconds} for r in sweep.all_records]
        else:
            rows = [{"kind": label(r.kind), "seed": r.seed, "width": r.width, "parameters": r.parameters,
                     "state bytes": r.state_bytes, **{f"L = {n}": a for n, a in zip(r.lengths, r.accuracy)},
                     "seconds": r.seconds} for r in sweep.all_records]
        accuracies = [name for name in rows[0] if name == "accuracy" or name.startswith("L = ")]
        table(rows, counts=("parameters", "state bytes"), decimals={**dict.fromkeys(accuracies, 3), "seconds": 1},
              key=page_key(sweep.task, "runs"))


def recall_section() -> None:
    st.subheader("1 · Recall: how many pairs a state holds")
    st.markdown(
        "Multi-query associative recall (Arora et al. 2023): a sequence opens with $D$ key–value pairs and then asks "
        "for each key once, at a random later position. In `3 9 5 7 · 5 · · 3 ·` the pairs are 3 → 9 and 5 → 7; "
        "at the query 5 the right answer is 7, at the query 3 it is 9. A recurrent model must have written every "
        "pair into its fixed state before the queries come; a Transformer looks the key up in its cache, which "
        "grows with the sequence.")
    sweep = _sweep("recall")
    if sweep is None:
        return
    records = sweep.all_records
    summary = recall_summary(records)
    chance = records[0].chance
    plot(figures.recall_pairs_figure(summary, sweep.kinds, chance), key=page_key("pairs_fig"))
    _measured_with(sweep)
    st.segmented_control("Pairs D for the chart against bytes", PAIRS, key=BYTES_PAIRS,
                         format_func=lambda d: f"D = {d}")
    pairs = st.session_state.get(BYTES_PAIRS) or max(PAIRS)  # a segmented control clicked off has no value
    state_bytes = {r.kind: r.state_bytes for r in records}
    plot(figures.recall_bytes_figure(summary, state_bytes, pairs, chance), key=page_key("bytes_fig"))
    st.markdown(recall_sentence(summary, pairs))
    point_section()


def _role(t: int, token: int, target: int) -> str:
    if t < 2 * MEMORY_TASK.pairs:
        return "key" if t % 2 == 0 else "value"
    return "query" if target != IGNORE else ""


def _token_table(traces: dict[str, MemoryTrace], t: int) -> None:
    """The sequence, the answer at each query, and each model's answer there; column t marked."""
    first = next(iter(traces.values()))
    columns = [f"▶ {s}" if s == t else str(s) for s in range(len(first.tokens))]

    def row(name: str, cells) -> dict:
        return {"": name, **dict(zip(columns, cells))}

    rows = [row("token", ["·" if tok == BLANK else str(tok) for tok in first.tokens]),
            row("is a", [_role(s, tok, y) for s, (tok, y) in enumerate(zip(first.tokens, first.targets))]),
            row("answer", ["" if y == IGNORE else str(y) for y in first.targets])]
    for kind, trace in traces.items():
        rows.append(row(label(kind), ["" if y == IGNORE else f"{'✓' if p == y else '✗'} {p}"
                                      for p, y in zip(trace.predicted, trace.targets)]))
    table(rows, key=page_key("tokens"))


def _no_emphasis(words: str) -> str:
    """The engine's plain words ("C_t, n_t") with their underscores kept as they are in markdown."""
    return words.replace("_", "\\_")


def memory_section() -> None:
    st.subheader("2 · The memory itself, token by token")
    st.markdown(
        "Five small models trained on recall with four pairs ($T = 16$, keys 1–7, values 8–15), each one layer "
        "(the Transformer two blocks), so that what is drawn is all they remember. Move $t$: the LSTM rewrites its "
        "vectors $h_t$ and $c_t$; the mLSTM and linear attention add an outer product $v_t k_t^\\top$ to a matrix "
        "at every token, and a query reads it back as $C_t q_t$; the selective SSM's $\\Delta_t$ says per channel "
        "how much of the token it writes and how much of $s_{t-1}$ it keeps; the Transformer's cache gains a row "
        "of $K$ and of $V$ per token. Colours are on one scale per array over all $t$, white at 0.")
    try:
        models = memory_models()
    except (OSError, ValueError) as err:
        st.error(f"The shipped memory models cannot be read ({err}), so this section cannot draw them.")
        return
    accuracies = memory_accuracies()
    left, right = st.columns([1, 3], vertical_alignment="bottom")
    left.number_input(f"Held-out sequence (0–{MEMORY_EVAL - 1})", 0, MEMORY_EVAL - 1, key=SEQUENCE,
                      help="Each is a fresh recall sequence none of the models trained on.")
    traces = memory_traces(int(st.session_state[SEQUENCE]))
    t = right.slider("Token t", 0, MEMORY_TASK.length - 1, key=STEP,
                     help="The memory after reading tokens 0…t; the arrow keys move it one token.")
    _token_table(traces, t)
    for kinds in MEMORY_ROWS:
        for column, kind in zip(st.columns(len(kinds)), kinds):
            with column:
                trace = traces[kind]
                step = trace.steps[t]
                figure = shared_figure(figures.memory_figure, trace, t,
                                       key=("capacity-memory", st.session_state[SEQUENCE], t, kind))
                plot(figure, key=page_key("memory", kind))
                recipe = MEMORY_RECIPES[kind]
                st.caption(f"{trace.shape}, {sum(p.numel() for p in models[kind].parameters()):,} parameters, "
                           f"{recipe.steps:,} steps: answers {accuracies[kind]:.0%} of held-out queries. Carries "
                           f"{_no_emphasis(trace.carried)}: **{step.numel:,} numbers, {step.nbytes:,} bytes** after "
                           f"token {t}. "
                           + STEP_WORDS[kind])


def parity_section() -> None:
    st.subheader("3 · State tracking: parity beyond the training length")
    st.markdown(
        "At every bit the target is the parity of the bits so far, $y_t = x_1 \\oplus \\dots \\oplus x_t$: one bit "
        "of state, flipped or kept by each input. Every model trains on strings of a few bits and is tested on "
        "longer ones. A recurrence with a nonlinear update can learn the rule and apply it at any length; a "
        "diagonal linear recurrence with positive decays and a Transformer of fixed depth cannot represent it "
        "exactly (Merrill et al. 2024; Grazzi et al. 2024).")
    sweep = _sweep("parity")
    if sweep is None:
        return
    records = sweep.all_records
    summary = parity_summary(records)
    train_length = records[0].train_length
    plot(figures.parity_figure(summary, sweep.kinds, train_length), key=page_key("parity_fig"))
    st.markdown("\n".join(f"- {parity_sentence(kind, summary[kind], train_length)}" for kind in sweep.kinds))
    _measured_with(sweep)
