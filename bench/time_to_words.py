"""Time to words: how soon a preset's samples are made of real words, by seconds of training.

The quick-demo preset ("Quick demo (30 s)") and the 3-minute Shakespeare preset (SHAKESPEARE_3_MIN, the live page's
default until issue 37) race on Tiny Shakespeare with rnnviz.serving.race: they train in turn, in slices of a few
seconds, each on its own clock that counts only its optimizer steps. At 5, 10, 30 and 60 s of training each writes a
500-character sample (temperature 0.8, seed 0, no prime: only the weights differ between marks) and the sample is
scored:

    real-word share = (tokens that are words of the train split) / (tokens)

A token is a whitespace-separated piece of the sample, lower-cased, with the punctuation at either end stripped
(``str.strip`` of every character that is not a letter, so "Romeo," → "romeo" and "'tis" → "tis"; an inner
apostrophe or hyphen stays: "o'er", "ill-favour'd"). A piece with no letter left ("--", ":") is not a token. The
vocabulary of words is the train split (the first 90% of the text) cut into tokens by the same rule, so that
the same stripping applies to both sides.

Target (issue 22): over half real words at 10 s with the quick-demo preset.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import print_table
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.presets import ALL_PRESETS, SHAKESPEARE_3_MIN
from rnnviz.charlm.train import Trainer
from rnnviz.core.runtime import configure_cpu
from rnnviz.serving.race import Race

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"
QUICK = "Quick demo (30 s)"
CONTENDERS = (QUICK, SHAKESPEARE_3_MIN)
MARKS = (5, 10, 30, 60)  # seconds of training at which a sample is drawn
SAMPLE_CHARS = 500
TEMPERATURE = 0.8
TARGET = 0.5  # share of real words at 10 s, quick demo


def tokens(text: str) -> list[str]:
    """Whitespace-separated pieces, lower-cased, non-letters stripped from both ends; empty pieces dropped."""
    out = []
    for piece in text.split():
        start, end = 0, len(piece)
        while start < end and not piece[start].isalpha():
            start += 1
        while end > start and not piece[end - 1].isalpha():
            end -= 1
        if start < end:
            out.append(piece[start:end].lower())
    return out


def word_share(sample: str, words: set[str]) -> tuple[float, int]:
    """(share of the sample's tokens that are in ``words``, number of tokens)."""
    toks = tokens(sample)
    if not toks:
        return 0.0, 0
    return sum(t in words for t in toks) / len(toks), len(toks)


def run(slice_s: float = 5.0, contenders: tuple[str, ...] = CONTENDERS, marks: tuple[float, ...] = MARKS) -> dict:
    configure_cpu()
    if not DATA.exists():
        print(f"time_to_words: skipped, {DATA} is absent")
        return {"skipped": f"{DATA} is absent"}
    text = DATA.read_text(encoding="utf-8")
    corpus = Corpus("tiny-shakespeare", text)
    train_text = text[: len(corpus.split()[0])]
    words = set(tokens(train_text))
    trainers = {name: Trainer(ALL_PRESETS[name].config, corpus) for name in contenders}
    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    race = Race(trainers, marks=marks, slice_s=slice_s, sample_chars=SAMPLE_CHARS, temperature=TEMPERATURE,
                corpus_name=corpus.name)
    race.run()
    wall = time.perf_counter() - wall
    load_after = os.getloadavg()[0]
    results: dict[str, dict] = {}
    rows = []
    for name, trainer in trainers.items():
        vals = {m.mark: m for m in race.curves[name]}
        per_mark = {}
        for s in race.samples[name]:
            share, n = word_share(s.text, words)
            per_mark[s.mark] = {"real_word_share": round(share, 3), "tokens": n, "step": s.step,
                                "val_loss": round(vals[s.mark].val_loss, 4), "sample": s.text}
        results[name] = {f"{int(m)}s": v for m, v in per_mark.items()}
        results[name]["chars_per_s"] = round(trainer.chars_seen / trainer.seconds) if trainer.seconds else 0
        rows.append([name, f"{results[name]['chars_per_s']:,}",
                     *(f"{per_mark[m]['real_word_share']:.0%} (val {per_mark[m]['val_loss']:.2f}, "
                       f"{per_mark[m]['step']} st)" if m in per_mark else "" for m in race.marks)])
    print_table(
        f"time_to_words: share of a {SAMPLE_CHARS}-char sample's tokens (τ {TEMPERATURE}, seed 0) that are words "
        f"of the train split, by seconds of training ({wall:.0f} s wall; 1-min load {load_before:.2f} before, "
        f"{load_after:.2f} after)",
        ["preset", "chars/s", *(f"{m:g} s" for m in race.marks)],
        rows,
    )
    for name in contenders:
        for m, v in results[name].items():
            if isinstance(v, dict):
                print(f"\n--- {name} at {m} ({v['real_word_share']:.0%} real words):\n{v['sample']}")
    quick_10 = results.get(QUICK, {}).get("10s", {}).get("real_word_share")
    return {
        "marks_s": list(race.marks),
        "sample_chars": SAMPLE_CHARS,
        "temperature": TEMPERATURE,
        "presets": results,
        "load": {"before": round(load_before, 2), "after": round(load_after, 2)},
        "targets_met": {"quick_demo_over_half_real_words_at_10s": quick_10 is not None and quick_10 > TARGET},
    }
