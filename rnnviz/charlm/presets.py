"""Ready-made runs for the live page, the CLI and the benchmarks: one registry, ``ALL_PRESETS``, by name.

Every preset was found by racing contenders on one clock (rnnviz.serving.race, bench/time_to_loss.py,
bench/shakespeare_sweep.py, bench/mingru_speed.py, bench/kinds_speed.py). ``PRESETS``, ``TRANSFORMER_PRESETS``,
``MINGRU_PRESETS`` and ``STATE_PRESETS`` are views of the one registry by kind, holding the same Preset objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from rnnviz.charlm.train import TrainConfig
from rnnviz.core.recurrent import KINDS
from rnnviz.core.state_stack import STATE_KINDS

# The races behind every number here: README.md, Benchmarks, "How the presets were tuned".
STEPS_PER_150_S = 2500  # B 32 × T 64 steps that a 1×256 LSTM took in about 150 s on 2 cores (threads sleeping)
SHAKESPEARE_STEPS = 2800  # B 32 × T 64 steps of the 1×448 preset in about 150 s on 2 cores with bfloat16
QUICK_STEPS = 1250  # the quick demo's steps in 30 s with bfloat16: its cosine ends when the demo does
BABY_GPT_MINUTES = 3.0  # wall-time budget for the CLI; the baby GPT's schedule itself ends at step 2,000

ANYTIME_GROW_AT = 1000  # 1 × 256 steps before the widening: about 22 s with bfloat16 on a quiet 2-core machine
# The widening is said in steps, which every machine takes: its time in seconds varies with the machine and its load.
ANYTIME_NOTE = (f"Good text whenever you stop it: quick first words from a 1 × 256 LSTM, widened to 1 × 448 at step "
                f"{ANYTIME_GROW_AT:,}; on Pause a copy cools down for the samples (val ≈ 1.64 nats/char at 10 s, 1.56 "
                "at 30 s, 1.49 at 150 s, 1.44 at 10 min).")
ANYTIME_STEPS = 11_000  # B 32 × T 64 steps of the anytime preset in about 10 minutes on 2 cores with bfloat16
ANYTIME_PRESET = "Shakespeare (stop any time)"
SHAKESPEARE_3_MIN = "Shakespeare (3 min)"  # the 1 × 448 tuned for 150 s: the race page's LSTM, nanoGPT's rival
DEFAULT_PRESET = ANYTIME_PRESET  # the live page's (issue 37: a class stops when it has seen enough)
# nanoGPT's CPU "baby GPT" (config/train_shakespeare_char.py with its README's CPU overrides), with biases on
# and an untied readout; ``rnnviz train --preset NAME --steps 2000`` is nanoGPT's run.
BABY_GPT = "Baby GPT (Transformer, nanoGPT's CPU setting)"
TUNED_GPT = "Small GPT (Transformer, tuned for 150 s on 2 cores)"
MINGRU_PRESET = "minGRU (Shakespeare, 3 min)"
# One preset per kind whose state is more than a vector: the better of two shapes in a 45 s race (python -m
# bench.kinds_speed tune), raced for 150 s beside the LSTM preset (bench/kinds_speed.py, row kinds_150s).
KIND_PRESETS = {"slstm": "sLSTM (Shakespeare, 3 min)", "mlstm": "mLSTM (Shakespeare, 3 min)",
                "selective": "Selective SSM (Shakespeare, 3 min)",
                "linear_attention": "Linear attention (Shakespeare, 3 min)"}


@dataclass(frozen=True)
class Preset:
    """A ready-made run for the live page and the CLI."""

    name: str  # shown in the preset menu
    corpus: str  # a BUILTIN_CORPORA name
    config: TrainConfig
    minutes: float  # wall-time budget it was tuned for
    note: str  # one line on what to expect
    steps: int | None = None  # the live page's step budget; None: its schedule's length, or its minutes' worth
    cool_down: bool = False  # the live page cools a copy down when the run stops (rnnviz.serving.cooldown)


# In menu order: the recurrent kinds of torch, the Transformers, the minGRU.
ALL_PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "Quick demo (30 s)",
            "tiny-shakespeare",
            TrainConfig(hidden=256, batch=32, seq_len=64, lr=1e-2, lr_decay_steps=QUICK_STEPS, precision="auto"),
            0.5,
            "Words, capitals and line breaks within half a minute (val ≈ 1.56 nats/char at 30 s).",
        ),
        Preset(
            ANYTIME_PRESET,
            "tiny-shakespeare",
            # Issue 37's anytime default (bench/anytime.py): the quick demo's 1 × 256 at lr 1e-2 for its first
            # steps, where small fast steps learn most, then the 3-minute preset's 1 × 448 (widened without changing
            # what it computes, rnnviz.charlm.train.Trainer.widen) with AdamW at a steady 5e-3: warmup–stable–decay,
            # whose decay is the copy cooled when the run stops (rnnviz.serving.cooldown). It beat the same run on a
            # cosine over 3,400 steps at every mark from 10 s to 600 s (results.json row anytime_600s_wsd).
            TrainConfig(hidden=448, batch=32, seq_len=64, optimizer="adamw", lr=5e-3, precision="auto",
                        grow_from=256, grow_at=ANYTIME_GROW_AT, grow_lr=1e-2),
            10.0,
            ANYTIME_NOTE,
            steps=ANYTIME_STEPS,
            cool_down=True,
        ),
        Preset(
            SHAKESPEARE_3_MIN,
            "tiny-shakespeare",
            # AdamW (decoupled weight decay 0.1 on the matrices, β₂ 0.99) rather than Adam: equal up to 150 s and no
            # overfitting after it (issue 37: 1.465 against 1.511 at 600 s; bench/anytime.py)
            TrainConfig(hidden=448, batch=32, seq_len=64, optimizer="adamw", lr=5e-3,
                        lr_decay_steps=SHAKESPEARE_STEPS, precision="auto"),
            3.0,
            "Speaker names, verse lines and mostly real words (val ≈ 1.47 nats/char after 150 s of training on 2 "
            "cores with bfloat16 arithmetic, and no worse after 10 minutes; without bfloat16 each step takes about "
            "twice as long).",
        ),
        Preset(
            "Python code (3 min)",
            "python-stdlib",
            TrainConfig(hidden=256, batch=32, seq_len=64, lr=6e-3, lr_decay_steps=STEPS_PER_150_S),
            3.0,
            "Indentation, matched brackets and quotes, keywords and docstrings.",
        ),
        Preset(
            "Tiny vanilla RNN",
            "tiny-shakespeare",
            TrainConfig(kind="rnn", hidden=100, embedding=False, batch=16, seq_len=25, lr=3e-3, forget_bias=None),
            1.0,
            "A 100-unit tanh RNN fed one-hot characters: common words, short memory.",
        ),
        Preset(
            BABY_GPT,
            "tiny-shakespeare",
            TrainConfig(kind="transformer", layers=4, hidden=128, n_head=4, block_size=64, seq_len=64, batch=12,
                        dropout=0.0, optimizer="adamw", lr=1e-3, warmup_steps=100, lr_decay_steps=2000,
                        lr_floor=0.1, weight_decay=0.1, clip=1.0, forget_bias=None),
            BABY_GPT_MINUTES,
            "nanoGPT's CPU baby GPT: 4 blocks, 4 heads, C = 128, context 64; no state carried between windows.",
        ),
        Preset(
            TUNED_GPT,
            "tiny-shakespeare",
            TrainConfig(kind="transformer", layers=1, hidden=128, n_head=4, block_size=64, seq_len=64, batch=16,
                        dropout=0.0, optimizer="adamw", lr=3e-3, warmup_steps=100, lr_decay_steps=4500,
                        lr_floor=0.1, weight_decay=0.1, clip=1.0, forget_bias=None),
            2.5,
            "One block, C = 128, 4 heads, context 64, B = 16: the Transformer that learned most per second of CPU "
            "training (val ≈ 1.69 nats/char at 150 s on a busy machine; the LSTM preset 1.56 in the same race).",
        ),
        Preset(
            MINGRU_PRESET,
            "tiny-shakespeare",
            TrainConfig(kind="mingru", layers=2, hidden=128, batch=32, seq_len=64, lr=1e-2,
                        lr_decay_steps=STEPS_PER_150_S, forget_bias=None),
            3.0,
            "Two minGRU layers of 128, trained by a parallel scan; its h_t carries across chunks like an RNN's.",
        ),
        Preset(
            KIND_PRESETS["slstm"],
            "tiny-shakespeare",
            TrainConfig(kind="slstm", layers=1, hidden=256, n_head=4, batch=32, seq_len=64, optimizer="adamw",
                        lr=5e-3, lr_decay_steps=2000, forget_bias=None),
            3.0,
            "One sLSTM layer of 256 in 4 heads: exponential gates and a normaliser, stepped through t (val ≈ 1.66 "
            "nats/char after 150 s on 2 cores; the LSTM preset 1.47 in the same race).",
        ),
        Preset(
            KIND_PRESETS["mlstm"],
            "tiny-shakespeare",
            TrainConfig(kind="mlstm", layers=2, hidden=128, n_head=4, batch=32, seq_len=64, optimizer="adamw",
                        lr=5e-3, lr_decay_steps=3000, forget_bias=None),
            3.0,
            "Two mLSTM layers of 128 in 4 heads, each head a 32 × 32 matrix memory, trained in their parallel form "
            "(val ≈ 1.72 nats/char after 150 s on 2 cores).",
        ),
        Preset(
            KIND_PRESETS["selective"],
            "tiny-shakespeare",
            TrainConfig(kind="selective", layers=1, hidden=128, batch=32, seq_len=64, optimizer="adamw", lr=5e-3,
                        lr_decay_steps=2000, forget_bias=None),
            3.0,
            "One selective SSM layer of 128 channels, 16 numbers each, trained by a scan over t (val ≈ 1.77 "
            "nats/char after 150 s on 2 cores).",
        ),
        Preset(
            KIND_PRESETS["linear_attention"],
            "tiny-shakespeare",
            # Its memory never forgets: carried from chunk to chunk, the read S_t φ(q_t) / z_tᵀφ(q_t) becomes an
            # average over the whole text so far, and the training loss stays near the unigram's (3.34 nats/char
            # after 300 steps, against 2.64 from a zero state every chunk).
            TrainConfig(kind="linear_attention", layers=2, hidden=128, n_head=4, batch=32, seq_len=64,
                        optimizer="adamw", lr=5e-3, lr_decay_steps=3000, reset_state=True, forget_bias=None),
            3.0,
            "Two linear-attention layers of 128 in 4 heads, each head a 32 × 32 memory that never forgets, so every "
            "chunk starts from zero (val ≈ 2.17 nats/char after 150 s on 2 cores: an average is a poor memory).",
        ),
    ]
}


def presets_of(*kinds: str) -> dict[str, Preset]:
    """The presets whose model is one of ``kinds``, in registry order (the same Preset objects)."""
    return {name: p for name, p in ALL_PRESETS.items() if p.config.kind in kinds}


def matching_preset(config) -> str | None:
    """The preset whose settings ``config`` holds, if any (its seed and device may differ)."""
    mine = {**config.to_dict(), "seed": None, "device": None}
    return next((name for name, p in ALL_PRESETS.items()
                 if {**p.config.to_dict(), "seed": None, "device": None} == mine), None)


PRESETS = presets_of(*KINDS)  # RNN, LSTM and GRU: the kinds every recurrent page reads by their W_hh
# The live page lists the Transformers of at most 3 blocks, which its Layers slider can hold
# (rnnviz.ui.live.setup.LIVE_PRESETS), so the baby GPT's 4 blocks stay on the CLI.
TRANSFORMER_PRESETS = presets_of("transformer")
MINGRU_PRESETS = presets_of("mingru")
STATE_PRESETS = presets_of(*STATE_KINDS)  # on the live page's menu, but not in the anytime race
