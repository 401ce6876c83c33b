"""The Sequence-to-sequence page's sections: which pair of models, decoding one input step by step with its
alignment, accuracy against input length, what each decoder reads, beam search, and training a pair here."""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from rnnviz.core.runtime import configure_cpu
from rnnviz.figures import captioning as caption_figures
from rnnviz.figures import seq2seq as figures
from rnnviz.seq2seq import task
from rnnviz.seq2seq.checkpoint import Seq2SeqError, load_shipped
from rnnviz.seq2seq.decode import accuracy_by_length, beam_search, bytes_by_length, char_accuracy, greedy
from rnnviz.seq2seq.model import Seq2Seq, Seq2SeqConfig
from rnnviz.seq2seq.train import train_pair
from rnnviz.ui.kit.cache import remember, shared_value
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_int_in, parse_text
from rnnviz.ui.kit.widgets import literal, plot, seed, table

PAGE = "seq2seq"
page_key = PageKeys(PAGE)
INPUT, STEP, WIDTH = page_key("input"), page_key("step"), page_key("width")
OWN, USE_OWN, TRAINED = page_key("own"), page_key("use_own"), "seq2seq trained pairs"
RANDOM_LENGTH = page_key("random_length")
# The box's limit, the same for every pair (a box whose limit changes is a new box, which Streamlit empties): what the
# shipped pair and one trained here read. A pair that reads less says so in words.
INPUT_CHARS = Seq2SeqConfig().max_input
DEFAULT_INPUT = "sequencetosequence"  # 18 letters: inside the training lengths, long enough to trouble the fixed join
EVAL_PER_LENGTH = 100  # held-out strings per length on the accuracy curve
EVAL_LENGTHS = (1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 36, 40)
BYTES_LENGTHS = (1, 5, 10, 20, 30, 40)
TRAIN_STEPS = (200, 400, 800)
LINK = (
    LinkParam("input", INPUT, parse_text(INPUT_CHARS), example="attention"),
    LinkParam("step", STEP, parse_int_in(1, 41), example="3"),
    LinkParam("beam", WIDTH, parse_int_in(1, 10), example="5"),
)


@dataclass(frozen=True)
class Pair:
    """Both joins, and where they come from."""

    models: dict[str, Seq2Seq]
    source: str  # "shipped" or "trained here"
    seconds: float | None = None  # training time, when trained here

    @property
    def config(self) -> Seq2SeqConfig:
        return self.models["attention"].config

    @property
    def key(self) -> tuple:
        """Names the pair in caches: the shipped one, or this config trained here (the same config trains the same
        weights: one seed, the same batches)."""
        return (self.source, self.config) if self.source != "shipped" else ("shipped",)


def set_defaults() -> None:
    st.session_state.setdefault(INPUT, DEFAULT_INPUT)
    st.session_state.setdefault(WIDTH, 3)
    st.session_state.setdefault(RANDOM_LENGTH, 30)


@st.cache_resource(show_spinner="Loading the shipped pair…")
def shipped_pair() -> Pair | None:
    """The shipped pair, loaded once per process (read-only, shared); None when its files are missing."""
    try:
        models, _ = load_shipped()
    except (OSError, Seq2SeqError):
        return None
    return Pair(models, "shipped")


def current_pair() -> Pair:
    own = st.session_state.get(OWN)
    if own is not None and st.session_state.get(USE_OWN, True):
        return own
    found = shipped_pair()
    if found is None:
        st.error("The shipped pair is missing from rnnviz/assets/models/; train one below (**Train both here**).")
        train_section()
        st.stop()
    return found


def describe_pair(pair: Pair) -> None:
    c = pair.config
    counts = {join: m.num_parameters() for join, m in pair.models.items()}
    where = ("the shipped pair" if pair.source == "shipped"
             else f"the pair trained here ({c.steps} steps, {pair.seconds:.0f} s)")
    st.caption(f"Models: {where}. Both read lower-case strings of the {c.alphabet_size} letters "
               f"{c.letters[0]}–{c.letters[-1]}, trained on lengths {c.train_min}–{c.train_max} from the same initial "
               f"weights on the same batches; the encoder is a bidirectional LSTM with {c.enc_hidden} units per "
               f"direction, the decoder an LSTM with {c.dec_hidden}. Parameters: fixed context {counts['fixed']:,}, "
               f"attention {counts['attention']:,}.")


# ---------------------------------------------------------------------------------------------------------
# One input


def _new_random(length: int, letters: str) -> None:
    """on_click: a fresh random input of the chosen length (drawn from the sidebar seed and a counter)."""
    draws = st.session_state.get(page_key("draws"), 0) + 1
    st.session_state[page_key("draws")] = draws
    rng = np.random.default_rng((seed(), draws))
    st.session_state[INPUT] = task.random_strings(rng, 1, length, length, letters)[0]
    st.session_state.pop(STEP, None)


def choose_input(pair: Pair) -> str | None:
    c = pair.config
    left, middle, right = st.columns([3, 2, 1], vertical_alignment="bottom")
    left.text_input(f"Input: up to {c.max_input} letters {c.letters[0]}–{c.letters[-1]}", key=INPUT,
                    max_chars=INPUT_CHARS,
                    help="The models write it reversed. Lengths beyond the training range test what they learned.")
    length = middle.slider("Random input of length", 1, c.max_input, key=RANDOM_LENGTH)
    right.button("New", on_click=_new_random, args=(length, c.letters), icon=":material/casino:",
                 help="A random input of that length", key=page_key("random"))
    text = st.session_state[INPUT].strip()
    try:
        return task.check_input(text, c.letters, c.max_input)
    except ValueError as err:
        st.warning(literal(str(err)), icon=":material/keyboard:")
        return None


def _decoded(pair: Pair, text: str):
    return {join: greedy(model, text)[0] for join, model in pair.models.items()}


def output_html(text: str, decodings: dict) -> str:
    """Each join's output under the right answer, letter by letter: green where right, red where wrong."""
    truth = task.target(text)

    def letters(out: str) -> str:
        cells = []
        for i in range(max(len(out), len(truth))):
            ch = out[i] if i < len(out) else "·"
            ok = i < len(out) and i < len(truth) and out[i] == truth[i]
            colour = "#d9f0d3" if ok else "#f4c7c3"
            cells.append(f'<span style="background:{colour};color:#1a1a1a;padding:0 1px">{html.escape(ch)}</span>')
        return "".join(cells)

    rows = [("right answer", html.escape(truth), "")]
    for join, d in decodings.items():
        verdict = "✓ exact" if d.correct else f"✗ {char_accuracy(d.output, truth):.0%} of the letters"
        rows.append((figures.JOIN_NAMES[join], letters(d.output), verdict))
    body = "".join(f'<tr><td style="padding:2px 12px 2px 0;white-space:nowrap">{name}</td>'
                   f'<td style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:16px;'
                   f'word-break:break-all">{cells}</td><td style="padding-left:12px">{verdict}'
                   f"</td></tr>" for name, cells, verdict in rows)
    return f'<table style="border-collapse:collapse;font-size:15px">{body}</table>'


def decode_section(pair: Pair, text: str) -> None:
    st.header("1. Reverse a string, step by step")
    decodings = shared_value(_decoded, pair, text, key=(pair.key, "greedy", text))
    st.html(output_html(text, decodings))
    attention = decodings["attention"]
    steps = len(attention.ids)
    st.session_state[STEP] = min(max(int(st.session_state.get(STEP, 1)), 1), steps)
    if steps > 1:
        st.slider("Output step i", 1, steps, key=STEP,
                  help="The attention model's weights α_i over the input when it wrote its i-th token")
    i = int(st.session_state[STEP]) - 1
    written = "<END>" if attention.ids[i] == task.END_ID else repr(attention.output[i])
    left, right = st.columns(2)
    with left:
        plot(figures.alignment_figure(attention.attention, text, attention.output, i), key=page_key("alignment"))
    with right:
        plot(figures.attention_row_figure(attention.attention[i], text, i, written), key=page_key("row"))
        top = int(np.argmax(attention.attention[i]))
        mirror = len(text) - 1 - i
        where = (f"the mirror position j = {mirror + 1}, whose letter it must write" if top == mirror
                 else f"position {top + 1}; the mirror position is {mirror + 1}" if mirror >= 0
                 else "the start of the input: every letter is written")
        st.caption(f"To write token {i + 1} the attention model reads position {top + 1} ({text[top]!r}) most, "
                   f"α = {attention.attention[i, top]:.2f}: {where}. For reversal the alignment is the anti-diagonal. "
                   "The fixed-context model has no such row: after s_0 it reads nothing of the input.")


# ---------------------------------------------------------------------------------------------------------
# The whole held-out set


def _accuracy(pair: Pair) -> list[dict]:
    lengths = [n for n in EVAL_LENGTHS if n <= pair.config.max_input]
    return accuracy_by_length(pair.models, lengths, EVAL_PER_LENGTH)


def accuracy_summary(rows: list[dict], train_max: int) -> str:
    """Where the fixed context falls and how the attention model holds, in words from the rows."""
    by = {(r["model"], r["length"]): r for r in rows}
    lengths = sorted({r["length"] for r in rows})
    inside = [n for n in lengths if n <= train_max]
    longest = inside[-1]
    fixed_fall = next((n for n in inside if by[("fixed", n)]["exact"] < 0.5), None)
    parts = [f"At length {longest}, the longest trained on, the fixed-context model gets "
             f"{by[('fixed', longest)]['exact']:.0%} of the outputs exactly right and the attention model "
             f"{by[('attention', longest)]['exact']:.0%}."]
    if fixed_fall is not None:
        parts.append(f"The fixed context drops below half from length {fixed_fall} on: one state of "
                     "fixed size has to hold every letter.")
    beyond = [n for n in lengths if n > train_max]
    if beyond:
        far = beyond[-1]
        fixed_far, att_far = by[("fixed", far)], by[("attention", far)]
        numbers = (f"at length {far}: fixed {fixed_far['exact']:.0%}, attention {att_far['exact']:.0%} exact and "
                   f"{att_far['char']:.0%} of the letters")
        if att_far["exact"] >= by[("attention", longest)]["exact"] - 0.1:
            parts.append(f"Past the training lengths the attention model holds ({numbers}).")
        else:
            parts.append(f"Past the training lengths the attention model degrades too ({numbers}): attention removes "
                         "the bottleneck, not the need to have seen such lengths.")
    return " ".join(parts)


def accuracy_section(pair: Pair) -> None:
    st.header("2. Accuracy against input length")
    st.markdown(f"Both models on {EVAL_PER_LENGTH} held-out strings of each length (never seen in training; the "
                f"same strings for both), greedy decoding. Lengths past {pair.config.train_max} were never trained "
                "on. This is the curve of Cho et al. (2014) and Bahdanau et al. (2015, Figure 2): the fixed context "
                "loses quality as the input grows, attention holds over the lengths it was trained on.")
    rows = shared_value(_accuracy, pair, key=(pair.key, "accuracy"))
    metric = st.radio("Measure", ["exact", "char"], horizontal=True, key=page_key("metric"),
                      format_func={"exact": "exact match", "char": "letters right"}.get)
    plot(figures.accuracy_figure(rows, pair.config.train_max, metric), key=page_key("accuracy"))
    st.markdown(accuracy_summary(rows, pair.config.train_max))
    with st.expander("The table", icon=":material/table:"):
        table([{"length": r["length"], "model": figures.JOIN_NAMES[r["model"]], "exact": r["exact"],
                "letters right": r["char"], "trained on": "yes" if r["trained"] else "no"} for r in rows],
              percent=("exact", "letters right"))


def _bytes(pair: Pair) -> list[dict]:
    return bytes_by_length(pair.models, [n for n in BYTES_LENGTHS if n <= pair.config.max_input])


def bytes_section(pair: Pair) -> None:
    st.header("3. What each decoder reads")
    rows = shared_value(_bytes, pair, key=(pair.key, "bytes"))
    plot(figures.bytes_figure(rows), key=page_key("bytes"))
    fixed = next(r for r in rows if r["model"] == "fixed")
    longest = max((r for r in rows if r["model"] == "attention"), key=lambda r: r["length"])
    st.markdown(
        f"The fixed-context decoder starts from (s_0, c_0): **{fixed['context']:,} bytes**, measured from the tensors, "
        f"the same for one letter or {longest['length']}. The attention decoder starts from the same state and also "
        f"reads every encoder state h_j (and its key U_a h_j) at every step: **{longest['total']:,} bytes** for "
        f"{longest['length']} letters, growing with the input. That is the Transformer's bargain too: its key/value "
        "cache grows with every character it reads. Compare what an RNN, an LSTM and a Transformer carry on the "
        "[Hidden state](/hidden-state) page.")


# ---------------------------------------------------------------------------------------------------------
# Beam search


def _beams(pair: Pair, text: str, width: int):
    return beam_search(pair.models["attention"], text, width)


def beam_section(pair: Pair, text: str) -> None:
    st.header("4. Beam search")
    st.markdown("Greedy decoding keeps the single most probable token at each step. Beam search keeps the "
                "**width** most probable partial outputs (by their total log-probability) and extends each: "
                "width 1 is greedy. The same code decodes the captioning page's captions.")
    width = st.select_slider("Beam width", list(range(1, 11)), key=WIDTH)
    beams, tree = shared_value(_beams, pair, text, width, key=(pair.key, "beam", text, width))
    truth = task.target(text)
    table([{"rank": k + 1, "output": b.output, "right": "✓" if b.correct else "✗",
            "total log p": b.logprob} for k, b in enumerate(beams)], decimals={"total log p": 3})
    st.caption(f"The right answer is {truth!r}.")
    plot(caption_figures.beam_tree_figure(tree, task.vocab(pair.config.letters), "output step i", "i"),
         key=page_key("tree"))


# ---------------------------------------------------------------------------------------------------------
# Training here


def train_section() -> None:
    with st.expander("Train both here (about a minute on two cores)", icon=":material/model_training:"):
        steps = st.select_slider("Steps", TRAIN_STEPS, value=400, key=page_key("train_steps"))
        config = replace(Seq2SeqConfig(), steps=steps, seed=seed())
        st.caption(f"Both joins from one initial draw (seed {seed()}) on the same {steps} batches of "
                   f"{config.batch} strings of lengths {config.train_min}–{config.train_max}.")
        if st.button("Train both", key=page_key("train"), type="primary"):
            configure_cpu()
            bar = st.progress(0.0, text="Starting…")

            def report(step: int, total: int, loss: dict) -> None:
                if step % 10 == 0 or step == total:
                    bar.progress(step / total, text=f"Step {step} of {total}: loss " + ", ".join(
                        f"{figures.JOIN_NAMES[k]} {v:.3f}" for k, v in loss.items()))

            def compute() -> Pair:
                models, history = train_pair(config, report)
                return Pair(models, "trained here", history.seconds)

            st.session_state[OWN] = remember(TRAINED, config, compute)
            st.session_state[USE_OWN] = True
            bar.empty()
            st.rerun()
        own = st.session_state.get(OWN)
        if own is not None:
            st.toggle(f"Use the pair trained here ({own.config.steps} steps, seed {own.config.seed}) instead of the "
                      "shipped one", key=USE_OWN)
