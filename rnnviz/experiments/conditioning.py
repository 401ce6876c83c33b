"""Experiment 2: conditioning a character model on a vector v (the captioning join, Eq. 8.11).

A style vector v = E_style[s] (a learned embedding of the style id s, standing in for a CNN's image
vector) enters the recurrence in one of two ways, in two models trained on the same batches:

- "every": v at every step, concatenated to the input, h_t = tanh(W_hh h_{t−1} + W_xh x_t + W_ih v)
  (the LSTM analogue feeds [x_t; v] to every gate);
- "h0": v only in the initial state, h_0 = tanh(W v) (c_0 = 0 for an LSTM), with nothing after.

Each training record is one line of a style's text, framed as <START> line <END>: the model reads
<START> c_1 … c_n and predicts c_1 … c_n <END>. Generation starts from <START> and stops at <END>.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.charlm import corpus
from rnnviz.core.recurrent import KINDS, State, make_recurrent
from rnnviz.experiments.tasks import IGNORE

VARIANTS = {
    "every": "v at every step",
    "h0": "v only in h₀",
}

STYLE_LABELS = {
    "python-stdlib": "Python code",
    "english-docs": "English docs",
    "tiny-shakespeare": "Shakespeare",
}

START, END = "<START>", "<END>"


# ---------------------------------------------------------------------------------------------------------
# Data: lines of each style, framed by <START> and <END>


def shakespeare_available() -> bool:
    """True when a verified Tiny Shakespeare is already in the cache; this module never downloads it."""
    return corpus.tiny_shakespeare_cached()


def style_text(name: str, max_chars: int) -> str:
    """The first ``max_chars`` characters of a built-in corpus, offline only."""
    if name == "python-stdlib":
        return corpus.python_stdlib_text(max_chars)
    if name == "english-docs":
        return corpus.english_docs_text()[:max_chars]
    if name == "tiny-shakespeare":
        if not shakespeare_available():
            raise ValueError("Tiny Shakespeare is not downloaded yet: load it once on the training page.")
        path = corpus.cache_dir() / corpus.TINY_SHAKESPEARE_FILE
        return path.read_text(encoding="utf-8")[:max_chars]
    raise ValueError(f"Unknown style {name!r}; choose from {', '.join(STYLE_LABELS)}.")


def text_lines(text: str, max_len: int) -> list[str]:
    """Non-blank lines with trailing spaces removed, keeping those of at most ``max_len`` characters."""
    lines = (line.rstrip() for line in text.split("\n"))
    return [line for line in lines if line.strip() and len(line) <= max_len]


@dataclass(frozen=True)
class Tokens:
    """Characters plus the two framing tokens: chars[i] has id i, then <START>, then <END>."""

    chars: str

    @property
    def start(self) -> int:
        return len(self.chars)

    @property
    def end(self) -> int:
        return len(self.chars) + 1

    @property
    def size(self) -> int:
        return len(self.chars) + 2

    @cached_property
    def _index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.chars)}

    def encode(self, line: str) -> list[int]:
        return [self._index[c] for c in line]

    def decode(self, ids) -> str:
        """Text of character ids; framing tokens are shown by name."""
        names = {self.start: START, self.end: END}
        return "".join(names.get(i, self.chars[i] if i < len(self.chars) else "?") for i in ids)


@dataclass
class StyleData:
    """Train and val lines of every style (val from the last 10% of each text), and the token table."""

    styles: tuple[str, ...]
    tokens: Tokens
    train: list[list[str]]  # train[s]: lines of style s
    val: list[list[str]]

    def lengths(self, split: str = "train") -> list[list[int]]:
        return [[len(line) for line in lines] for lines in getattr(self, split)]


def load_style_data(styles: tuple[str, ...], max_chars: int, max_len: int) -> StyleData:
    """Lines of each style's text; val is the lines of the last 10% of that text."""
    train, val = [], []
    for name in styles:
        text = style_text(name, max_chars)
        cut = text.rfind("\n", 0, int(len(text) * (1 - corpus.VAL_FRACTION))) + 1
        train.append(text_lines(text[:cut], max_len))
        val.append(text_lines(text[cut:], max_len))
        if not train[-1] or not val[-1]:
            raise ValueError(f"The {STYLE_LABELS.get(name, name)} text has no lines of at most {max_len} characters.")
    chars = "".join(sorted({c for lines in train + val for line in lines for c in line}))
    return StyleData(tuple(styles), Tokens(chars), train, val)


def frame(tokens: Tokens, lines: list[str]) -> tuple[Tensor, Tensor]:
    """Inputs <START> c_1 … c_n and targets c_1 … c_n <END>, padded to the longest line. (N, T) each.

    Padding sits after <END>: the input repeats <END> and the target is IGNORE, so it changes no loss.
    """
    longest = max(len(line) for line in lines) + 1
    inputs = torch.full((len(lines), longest), tokens.end, dtype=torch.long)
    targets = torch.full((len(lines), longest), IGNORE, dtype=torch.long)
    for row, line in enumerate(lines):
        ids = tokens.encode(line)
        inputs[row, : len(ids) + 1] = torch.tensor([tokens.start, *ids])
        targets[row, : len(ids) + 1] = torch.tensor([*ids, tokens.end])
    return inputs, targets


# ---------------------------------------------------------------------------------------------------------
# The conditional model


@dataclass(frozen=True)
class ConditionalConfig:
    """Shape of a conditional character model; frozen so it keys caches."""

    vocab_size: int  # characters + <START> + <END>
    styles: int  # S, number of style ids
    variant: str = "every"  # "every": v joins x_t at every step; "h0": h_0 = tanh(W v) only
    kind: str = "lstm"  # "rnn", "lstm" or "gru"
    hidden: int = 128  # H
    embed_dim: int = 32  # E, width of the character embedding
    style_dim: int = 16  # width of v

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {self.variant!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")


class ConditionalCharModel(nn.Module):
    """Character model conditioned on v; ``forward(idx, v, targets=None, state=None) -> (logits, loss, state)``.

    every:  h_t = tanh(W_hh h_{t−1} + W_xh x_t + W_ih v),  h_0 = 0
    h0:     h_t = tanh(W_hh h_{t−1} + W_xh x_t),           h_0 = tanh(W v)
    """

    def __init__(self, config: ConditionalConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim)
        self.style = nn.Embedding(config.styles, config.style_dim)  # v = style.weight[s]
        every = config.variant == "every"
        self.rnn = make_recurrent(config.kind, config.embed_dim + (config.style_dim if every else 0), config.hidden)
        self.init_state = None if every else nn.Linear(config.style_dim, config.hidden)  # W (and a bias)
        self.head = nn.Linear(config.hidden, config.vocab_size)

    def style_vector(self, style: Tensor) -> Tensor:
        """v for each sequence, (N,) ids → (N, style_dim)."""
        return self.style(style)

    def initial_state(self, v: Tensor) -> State | None:
        """h_0 = tanh(W v) (and c_0 = 0) for "h0"; None (zeros) for "every". Each (1, N, H)."""
        if self.init_state is None:
            return None
        h0 = torch.tanh(self.init_state(v)).unsqueeze(0)  # (1, N, H)
        return (h0, torch.zeros_like(h0)) if self.config.kind == "lstm" else h0

    def forward(
        self, idx: Tensor, v: Tensor, targets: Tensor | None = None, state: State | None = None
    ) -> tuple[Tensor, Tensor | None, State]:
        """Logits (N, T, V); v (N, style_dim) enters every step ("every") or only a fresh h_0 ("h0")."""
        x = self.embed(idx)  # (N, T, E)
        if self.init_state is None:
            x = torch.cat([x, v.unsqueeze(1).expand(-1, idx.size(1), -1)], dim=-1)  # (N, T, E + style_dim)
        elif state is None:
            state = self.initial_state(v)
        out, state = self.rnn(x, state)  # (N, T, H)
        logits = self.head(out)  # (N, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=IGNORE)
        return logits, loss, state

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


@torch.no_grad()
def generate(
    model: ConditionalCharModel,
    v: Tensor,
    tokens: Tokens,
    max_len: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> list[tuple[list[int], bool]]:
    """Sample one line per row of v (N, style_dim): start at <START>, stop at <END> or after ``max_len`` chars.

    Returns, per row, the character ids before <END> and whether <END> was emitted. <START> is never
    sampled (its logit is masked); once a row has emitted <END> nothing it samples later is kept.
    """
    was_training = model.training
    model.eval()
    n = v.size(0)
    token = torch.full((n, 1), tokens.start, dtype=torch.long)
    state = None
    ended = torch.zeros(n, dtype=torch.bool)
    rows: list[list[int]] = [[] for _ in range(n)]
    for _ in range(max_len + 1):  # up to max_len characters, then one more chance to emit <END>
        logits, _, state = model(token, v, state=state)
        logits = logits[:, -1] / max(temperature, 1e-6)  # (N, V)
        logits[:, tokens.start] = -math.inf
        token = torch.multinomial(logits.softmax(-1), 1, generator=generator)  # (N, 1)
        for row in range(n):
            if ended[row]:
                continue
            t = token[row, 0].item()
            if t == tokens.end:
                ended[row] = True
            elif len(rows[row]) < max_len:
                rows[row].append(t)
        if ended.all():
            break
    model.train(was_training)
    return [(rows[i], bool(ended[i])) for i in range(n)]


# ---------------------------------------------------------------------------------------------------------
# A style classifier independent of the models: naive Bayes on character bigrams


@dataclass
class BigramClassifier:
    """log p(line | style) = Σ log p(c_t | c_{t−1}, style), add-one smoothed, counted on the training lines."""

    log_probs: list[dict[tuple[str, str], float]]
    log_unseen: list[dict[str, float]]

    @classmethod
    def fit(cls, lines_per_style: list[list[str]], alphabet: str) -> BigramClassifier:
        size = len(alphabet) + 1  # characters and the line end
        log_probs, log_unseen = [], []
        for lines in lines_per_style:
            pairs, firsts = Counter(), Counter()
            for line in lines:
                framed = "\x02" + line + "\x03"
                pairs.update(zip(framed, framed[1:]))
                firsts.update(framed[:-1])
            log_probs.append({(a, b): math.log((n + 1) / (firsts[a] + size)) for (a, b), n in pairs.items()})
            log_unseen.append({a: math.log(1 / (firsts[a] + size)) for a in firsts} | {"": math.log(1 / size)})
        return cls(log_probs, log_unseen)

    def predict(self, line: str) -> int:
        framed = "\x02" + line + "\x03"
        scores = []
        for probs, unseen in zip(self.log_probs, self.log_unseen):
            scores.append(sum(probs.get((a, b), unseen.get(a, unseen[""])) for a, b in zip(framed, framed[1:])))
        return int(np.argmax(scores))

    def accuracy(self, lines: list[str], style: int) -> float:
        return sum(self.predict(line) == style for line in lines) / max(1, len(lines))


# ---------------------------------------------------------------------------------------------------------
# The experiment


@dataclass(frozen=True)
class ConditioningConfig:
    """Both variants, trained on the same batches and evaluated alike; frozen so it keys a cache."""

    styles: tuple[str, ...] = ("python-stdlib", "english-docs")  # add "tiny-shakespeare" when it is cached
    kind: str = "lstm"
    hidden: int = 128  # H
    embed_dim: int = 32  # E
    style_dim: int = 16  # width of v
    steps: int = 400  # optimizer steps per variant
    batch: int = 32  # lines per step, the same number from each style (rounded down)
    lr: float = 5e-3  # Adam
    max_len: int = 80  # lines longer than this are left out; generation stops after this many characters
    max_chars: int = 300_000  # characters read from each style's text
    val_lines: int = 256  # val lines per style used for the losses
    samples: int = 64  # generated lines per style and variant, for lengths and the classifier
    shown: int = 4  # samples printed per style and variant
    temperature: float = 0.8  # for the printed samples; lengths and classification use temperature 1
    seed: int = 0

    def __post_init__(self):
        if len(self.styles) < 2 or len(set(self.styles)) != len(self.styles):
            raise ValueError("Choose at least two different styles to condition on.")
        unknown = [s for s in self.styles if s not in STYLE_LABELS]
        if unknown:
            raise ValueError(f"Unknown style {unknown[0]!r}; choose from {', '.join(STYLE_LABELS)}.")
        if self.batch < len(self.styles):
            raise ValueError(f"The batch needs at least one line per style ({len(self.styles)}).")
        if self.steps < 1 or self.max_len < 2 or self.samples < 1 or self.val_lines < 1:
            raise ValueError("Steps, line length, samples and val lines must all be positive.")
        if not self.lr > 0 or not self.temperature > 0:
            raise ValueError("The learning rate and the temperature must be positive.")


@dataclass
class VariantResult:
    """What one trained variant measured; plain numbers and strings, small enough to cache."""

    variant: str
    parameters: int
    train_loss: list[float]
    loss_matrix: list[list[float]]  # [data style][v style]: mean val loss in nats/char
    position_gap: list[float]  # per position t: mean loss with a wrong v minus with the right v
    position_count: list[int]  # val characters scored at each position
    shown: list[list[str]]  # [style]: samples at ``temperature``
    sample_lengths: list[list[int]]  # [style]: lengths of the temperature-1 samples
    ended: list[float]  # [style]: share of temperature-1 samples that emitted <END> within max_len
    classified: list[float]  # [style]: share of temperature-1 samples the bigram classifier puts in that style
    seconds: float

    @property
    def right_loss(self) -> list[float]:
        return [row[s] for s, row in enumerate(self.loss_matrix)]

    @property
    def wrong_loss(self) -> list[float]:
        """Per data style, the mean over the wrong v's."""
        return [float(np.mean([x for j, x in enumerate(row) if j != s])) for s, row in enumerate(self.loss_matrix)]


@dataclass
class ConditioningResult:
    config: ConditioningConfig
    data_lengths: list[list[int]]  # [style]: lengths of the val lines
    classifier_ceiling: list[float]  # [style]: the classifier's accuracy on real val lines
    variants: dict[str, VariantResult] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(v.seconds for v in self.variants.values())


def balanced_batch(data: StyleData, per_style: int, generator: torch.Generator) -> tuple[list[str], Tensor]:
    """``per_style`` random train lines of every style, with their style ids."""
    lines, styles = [], []
    for s, pool in enumerate(data.train):
        for i in torch.randint(0, len(pool), (per_style,), generator=generator).tolist():
            lines.append(pool[i])
            styles.append(s)
    return lines, torch.tensor(styles)


@torch.no_grad()
def position_losses(model: ConditionalCharModel, tokens: Tokens, lines: list[str], style: int) -> Tensor:
    """Per-character loss of ``lines`` under v = style's vector, IGNORE positions as NaN. (N, T)."""
    inputs, targets = frame(tokens, lines)
    v = model.style_vector(torch.full((len(lines),), style))
    logits, _, _ = model(inputs, v)
    loss = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none")  # (N, T)
    return loss.masked_fill(targets == IGNORE, float("nan"))


def train_variant(
    config: ConditioningConfig,
    data: StyleData,
    variant: str,
    on_step: Callable[[int], None] | None = None,
) -> tuple[ConditionalCharModel, list[float]]:
    """Train one variant; the batches come from their own generator, so both variants see exactly the same."""
    torch.manual_seed(config.seed)
    model = ConditionalCharModel(
        ConditionalConfig(
            vocab_size=data.tokens.size, styles=len(data.styles), variant=variant, kind=config.kind,
            hidden=config.hidden, embed_dim=config.embed_dim, style_dim=config.style_dim,
        )
    )
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    gen = torch.Generator().manual_seed(config.seed)
    per_style = config.batch // len(data.styles)
    losses = []
    for step in range(1, config.steps + 1):
        lines, styles = balanced_batch(data, per_style, gen)
        inputs, targets = frame(data.tokens, lines)
        _, loss, _ = model(inputs, model.style_vector(styles), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step)
    return model, losses


def evaluate_variant(
    config: ConditioningConfig, data: StyleData, model: ConditionalCharModel, classifier: BigramClassifier
) -> dict:
    """Val losses under every v, the per-position gap, and samples with their lengths and classes."""
    n_styles = len(data.styles)
    val = [lines[: config.val_lines] for lines in data.val]
    matrix = [[0.0] * n_styles for _ in range(n_styles)]
    gap_sum = torch.zeros(config.max_len + 1)
    gap_count = torch.zeros(config.max_len + 1)
    for s, lines in enumerate(val):
        per_v = [position_losses(model, data.tokens, lines, j) for j in range(n_styles)]  # each (N, T)
        for j, loss in enumerate(per_v):
            matrix[s][j] = float(torch.nanmean(loss))
        wrong = torch.stack([per_v[j] for j in range(n_styles) if j != s]).mean(0)  # (N, T)
        diff = wrong - per_v[s]
        scored = ~torch.isnan(diff)
        t = diff.size(1)
        gap_sum[:t] += torch.nan_to_num(diff).sum(0)
        gap_count[:t] += scored.sum(0)
    keep = int((gap_count > 0).sum())
    gen = torch.Generator().manual_seed(config.seed + 1)
    shown, lengths, ended, classified = [], [], [], []
    for s in range(n_styles):
        v = model.style_vector(torch.full((config.shown,), s))
        shown.append([data.tokens.decode(ids) for ids, _ in generate(
            model, v, data.tokens, config.max_len, config.temperature, gen)])
        v = model.style_vector(torch.full((config.samples,), s))
        samples = generate(model, v, data.tokens, config.max_len, 1.0, gen)
        lengths.append([len(ids) for ids, _ in samples])
        ended.append(sum(e for _, e in samples) / len(samples))
        classified.append(classifier.accuracy([data.tokens.decode(ids) for ids, _ in samples], s))
    return dict(
        loss_matrix=matrix,
        position_gap=(gap_sum[:keep] / gap_count[:keep]).tolist(),
        position_count=gap_count[:keep].int().tolist(),
        shown=shown,
        sample_lengths=lengths,
        ended=ended,
        classified=classified,
    )


def run_conditioning(
    config: ConditioningConfig, on_progress: Callable[[int, int], None] | None = None
) -> ConditioningResult:
    """Train and evaluate both variants on the same data; ``on_progress(done, total)`` counts steps."""
    data = load_style_data(config.styles, config.max_chars, config.max_len)
    classifier = BigramClassifier.fit(data.train, data.tokens.chars)
    result = ConditioningResult(
        config,
        data_lengths=data.lengths("val"),
        classifier_ceiling=[classifier.accuracy(lines[: config.samples * 4], s) for s, lines in enumerate(data.val)],
    )
    total = config.steps * len(VARIANTS)
    for k, variant in enumerate(VARIANTS):
        start = time.perf_counter()
        progress = None if on_progress is None else (lambda step, k=k: on_progress(k * config.steps + step, total))
        model, losses = train_variant(config, data, variant, progress)
        evaluation = evaluate_variant(config, data, model, classifier)
        result.variants[variant] = VariantResult(
            variant=variant,
            parameters=model.num_parameters(),
            train_loss=losses,
            seconds=time.perf_counter() - start,
            **evaluation,
        )
    return result
