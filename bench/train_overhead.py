"""Our Trainer, and our character model in a plain loop, against a bare nn.LSTM + Adam loop, same shapes.

All three run the same work (embedding → LSTM → linear → cross-entropy → backward → Adam) on (B, T)
batches; rounds alternate so that noise from the other core hits them alike. The Trainer does what it
does in the app: TBPTT batches from a corpus, loss and gradient-norm checks, clipping at θ = 1, records
and snapshots. A ratio of 1.0 means no overhead; the target is ≥ 0.95 for the Trainer.

Shapes marked bf16 run all three under torch.autocast(bfloat16), as the Trainer does for precision "bf16" (the
Shakespeare preset's "auto" on a CPU with bfloat16 arithmetic); their GFLOP/s can pass the float32 matmul peak.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bench.common import alternate, matmul_peak_gflops, median, print_table
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.core.recurrent import detach_state
from rnnviz.core.runtime import configure_cpu

VOCAB, EMBED, BATCH, SEQ = 65, 64, 32, 64
SHAPES = ((1, 128, "fp32"), (2, 256, "fp32"), (1, 512, "fp32"), (1, 256, "bf16"), (1, 448, "bf16"))  # bf16: the presets


class BareLSTM(nn.Module):
    """The reference: torch modules wired by hand, nothing of ours."""

    def __init__(self, layers: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, idx, targets, state):
        out, state = self.lstm(self.embed(idx), state)
        logits = self.head(out)
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1)), state


def _lstm_train_flops(layers: int, hidden: int, chars: int) -> float:
    """Multiply-adds ×2 of forward + backward (≈3× forward) for the LSTM stack and the readout."""
    per_char = sum(4 * hidden * ((EMBED if k == 0 else hidden) + hidden) for k in range(layers)) + hidden * VOCAB
    return 3 * 2 * per_char * chars


def _make_loop(model, step_fn, steps: int, data, bf16: bool = False):
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    state = {"s": None}

    def run():
        for idx, targets in data[:steps]:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss, new_state = step_fn(model, idx, targets, state["s"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            state["s"] = detach_state(new_state)

    return run


def _random_corpus(chars: int, seed: int = 0) -> Corpus:
    """A text over exactly VOCAB distinct characters, so the Trainer's shapes equal the bare loop's."""
    alphabet = [chr(33 + i) for i in range(VOCAB)]
    ids = torch.randint(0, VOCAB, (chars,), generator=torch.Generator().manual_seed(seed))
    return Corpus("random", "".join(alphabet) + "".join(alphabet[i] for i in ids.tolist()))


def run(rounds: int = 25, steps: int = 2) -> dict:
    """Many short alternating rounds: load from other jobs drifts over seconds, so fine alternation and a
    median over many rounds keep the ratios steady where a few long rounds swing by ±30%."""
    configure_cpu()
    torch.manual_seed(0)
    data = [(torch.randint(0, VOCAB, (BATCH, SEQ)), torch.randint(0, VOCAB, (BATCH, SEQ))) for _ in range(steps)]
    corpus = _random_corpus(200_000)
    peak = matmul_peak_gflops()
    results, rows = {"matmul_peak_gflops": round(peak, 1), "shapes": {}}, []
    for layers, hidden, precision in SHAPES:
        bf16 = precision == "bf16"
        trainer = Trainer(
            TrainConfig(layers=layers, hidden=hidden, embed_dim=EMBED, batch=BATCH, seq_len=SEQ, lr=2e-3, device="cpu",
                        precision=precision),
            corpus,
        )
        ours = CharModel(ModelConfig(vocab_size=VOCAB, kind="lstm", layers=layers, hidden=hidden, embed_dim=EMBED))
        bare = BareLSTM(layers, hidden)
        times = alternate(
            {
                "trainer": lambda trainer=trainer: trainer.run(steps),
                "rnnviz": _make_loop(ours, lambda m, i, t, s: m(i, t, s)[1:], steps, data, bf16),
                "bare": _make_loop(bare, lambda m, i, t, s: m(i, t, s), steps, data, bf16),
            },
            rounds=rounds,
        )
        assert trainer.halt is None, trainer.halt
        chars = steps * BATCH * SEQ
        cps = {name: chars / median(t) for name, t in times.items()}
        gflops = _lstm_train_flops(layers, hidden, chars) / median(times["trainer"]) / 1e9
        key = f"{layers}x{hidden}" + (" bf16" if bf16 else "")
        results["shapes"][key] = {
            "trainer_chars_per_s": round(cps["trainer"]),
            "rnnviz_chars_per_s": round(cps["rnnviz"]),
            "bare_chars_per_s": round(cps["bare"]),
            "trainer_ratio": round(cps["trainer"] / cps["bare"], 3),
            "ratio": round(cps["rnnviz"] / cps["bare"], 3),
            "gflops": round(gflops, 1),
            "share_of_matmul_peak": round(gflops / peak, 3),
        }
        rows.append([key, f"{cps['trainer']:,.0f}", f"{cps['rnnviz']:,.0f}", f"{cps['bare']:,.0f}",
                     f"{cps['trainer'] / cps['bare']:.3f}", f"{cps['rnnviz'] / cps['bare']:.3f}", f"{gflops:.1f}",
                     f"{gflops / peak:.0%}"])
    print_table(
        f"train_overhead: chars/s, median of {rounds} alternating rounds of {steps} steps (batch {BATCH}, seq {SEQ}); "
        f"matmul peak {peak:.0f} GFLOP/s; GFLOP/s is the Trainer's",
        ["shape", "Trainer", "CharModel loop", "bare nn.LSTM", "Trainer ratio", "CharModel ratio", "GFLOP/s",
         "of fp32 peak"],
        rows,
    )
    return results
