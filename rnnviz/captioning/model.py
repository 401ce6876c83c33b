"""A captioner: a small CNN reads a scene, its penultimate vector v conditions a word-level LSTM (Eq. 8.11).

Encoder: three 3×3 convolutions with stride 2, batch norm and ReLU (48 → 24 → 12 → 6), then a linear layer to v.
Decoder: an LSTM from ``rnnviz.core.recurrent`` (so its cells can be traced), reading words w_t embedded as
x_t = E w_t and predicting w_{t+1}, from ``<START>`` to ``<END>``. Two joins of the image:

- **every** (Eq. 8.11): v enters the recurrence at every step. The LSTM reads [x_t; v], so each gate's
  pre-activation holds W_ih v:  h_t = LSTM(W_xh x_t + W_ih v + W_hh h_{t−1} + b), with h_0 = c_0 = 0;
- **h0**: v only sets the initial state, h_0 = tanh(W_h v + b_h), c_0 = W_c v + b_c, and
  h_t = LSTM(W_xh x_t + W_hh h_{t−1} + b): the image enters once, at t = 0, and never after.

Why c_0 too, and without tanh (measured, see MODELS.md): with c_0 = 0 (or c_0 = tanh(W_c v + b_c)) the language
model pulls h_0 towards one fixed start state within ~50 Adam steps, tanh saturates (|h_0| ≈ 1.000 for every
scene), its derivative 1 − h_0² is ≈ 0, and the gradient no longer reaches W or the CNN: the image's KL stayed 0
for 500 steps with torch's initial W, also at a tenth of the learning rate for W (5× that W: 0.03–0.05 after 300
steps). The cell state is not squashed in an LSTM (c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t), so a linear c_0 keeps the
path alive.

``init_pair`` builds both from one seed with every shared weight (CNN, E, W_xh, W_hh, b, output layer)
equal; the trainer steps both on the same batches. Shapes: images (N, 3, 48, 48) in [0, 1], words (N, T).
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.bounded import load_torch_file, nonfinite_problem, times
from rnnviz.captioning import world
from rnnviz.core import beam as core_beam
from rnnviz.core.beam import BeamNode  # noqa: F401 (re-exported: the page and figures read M.BeamNode)
from rnnviz.core.recurrent import make_recurrent
from rnnviz.limits import UPLOAD_LIMITS, FileLimits, quoted

PAD, START, END = "<PAD>", "<START>", "<END>"
VOCAB = (PAD, START, END, *world.WORDS)
INDEX = {w: i for i, w in enumerate(VOCAB)}
PAD_ID, START_ID, END_ID = 0, 1, 2
# The longest caption: three objects of 6 words, two "and", "on <background>"; plus <END>.
MAX_WORDS = 3 * 6 + 2 + 2
MAX_LEN = MAX_WORDS + 1
JOINS = {"every": "v at every step (Eq. 8.11)", "h0": "v only in the initial state h₀, c₀"}
OBJECT_WORDS = world.SHAPES  # the object categories CHAIR counts
FORMAT = "rnnviz-captioner-1"


@dataclass(frozen=True)
class CaptionConfig:
    """Architecture and training of one captioner; hashable, so it keys caches."""

    join: str = "every"  # "every" (v at every step) or "h0" (v only in h_0)
    channels: tuple[int, int, int] = (16, 32, 32)  # conv widths
    v_dim: int = 64  # size of the image vector v
    embed: int = 32  # word embedding size (x_t)
    hidden: int = 128  # LSTM units (h_t, c_t)
    p: float = 0.9  # co-occurrence in the training set: P(boat | water)
    n_train: int = 6000  # training scenes
    steps: int = 700  # optimizer steps
    batch: int = 64  # scenes per step
    lr: float = 4e-3  # Adam, cosine decay to lr/10
    clip: float = 1.0  # gradient-norm clip
    seed: int = 0  # weights, scenes and batch order

    def validate(self) -> CaptionConfig:
        if self.join not in JOINS:
            raise ValueError(f"join must be one of {', '.join(JOINS)}, not {self.join!r}")
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"The co-occurrence p is a probability in [0, 1], not {self.p}")
        for name in ("v_dim", "embed", "hidden", "n_train", "steps", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if len(self.channels) != 3 or min(self.channels) < 1:
            raise ValueError(f"channels: three positive conv widths, not {self.channels}")
        if not self.lr > 0:
            raise ValueError(f"The learning rate must be positive, not {self.lr}")
        return self


def encode_caption(text: str) -> list[int]:
    """<START> words <END> as ids; ValueError on a word outside the vocabulary."""
    unknown = [w for w in text.split() if w not in INDEX or w in (PAD, START, END)]
    if unknown:
        raise ValueError(f"Unknown word(s) {', '.join(map(repr, unknown))}")
    return [START_ID, *(INDEX[w] for w in text.split()), END_ID]


def decode(ids) -> str:
    """Words of ids, stopping at <END>, without <START> and <PAD>."""
    words = []
    for i in ids:
        i = int(i)
        if i == END_ID:
            break
        if i not in (PAD_ID, START_ID):
            words.append(VOCAB[i])
    return " ".join(words)


def caption_tensor(captions: list[str]) -> Tensor:
    """(N, MAX_LEN + 1) ids: <START> words <END>, padded with <PAD>."""
    out = torch.full((len(captions), MAX_LEN + 1), PAD_ID, dtype=torch.long)
    for n, text in enumerate(captions):
        ids = encode_caption(text)
        out[n, : len(ids)] = torch.tensor(ids)
    return out


def pixels(images: np.ndarray) -> Tensor:
    """uint8 images (N, 48, 48, 3) as a float tensor (N, 3, 48, 48) in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)


class Captioner(nn.Module):
    """CNN encoder → v → LSTM decoder, joined at every step or only in h_0 (see the module docstring)."""

    def __init__(self, config: CaptionConfig):
        super().__init__()
        self.config = config.validate()
        c1, c2, c3 = config.channels
        self.cnn = nn.Sequential(
            nn.Conv2d(3, c1, 3, stride=2, padding=1), nn.BatchNorm2d(c1), nn.ReLU(),  # (N, c1, 24, 24)
            nn.Conv2d(c1, c2, 3, stride=2, padding=1), nn.BatchNorm2d(c2), nn.ReLU(),  # (N, c2, 12, 12)
            nn.Conv2d(c2, c3, 3, stride=2, padding=1), nn.BatchNorm2d(c3), nn.ReLU(),  # (N, c3, 6, 6)
            nn.Flatten(),
            nn.Linear(c3 * 36, config.v_dim),  # (N, v_dim): v, the penultimate vector
        )
        self.embed = nn.Embedding(len(VOCAB), config.embed)
        every = config.join == "every"
        self.rnn = make_recurrent("lstm", config.embed + (config.v_dim if every else 0), config.hidden)
        self.init_h = None if every else nn.Linear(config.v_dim, config.hidden)  # W_h, b_h of h_0 = tanh(W_h v + b_h)
        self.init_c = None if every else nn.Linear(config.v_dim, config.hidden)  # W_c, b_c of c_0 = W_c v + b_c
        self.out = nn.Linear(config.hidden, len(VOCAB))

    @property
    def join(self) -> str:
        return self.config.join

    def encode(self, images: Tensor) -> Tensor:
        """v for images (N, 3, 48, 48) in [0, 1]: (N, v_dim)."""
        return self.cnn(images - 0.5)

    def initial_state(self, v: Tensor) -> tuple[Tensor, Tensor]:
        """(h_0, c_0), each (1, N, H): zeros for "every", (tanh(W_h v + b_h), W_c v + b_c) for "h0"."""
        if self.init_h is None:
            zeros = v.new_zeros(1, v.size(0), self.config.hidden)
            return zeros, zeros.clone()
        return torch.tanh(self.init_h(v))[None], self.init_c(v)[None]

    def inputs(self, words: Tensor, v: Tensor) -> Tensor:
        """The LSTM's input for words (N, T): x_t = E w_t, with v appended for "every": (N, T, D)."""
        x = self.embed(words)  # (N, T, E)
        if self.init_h is None:
            x = torch.cat([x, v[:, None].expand(-1, words.size(1), -1)], dim=-1)  # (N, T, E + v_dim)
        return x

    def logits(self, v: Tensor, words: Tensor) -> Tensor:
        """Next-word logits after each word of (N, T), given v: (N, T, V)."""
        out, _ = self.rnn(self.inputs(words, v), self.initial_state(v))
        return self.out(out)

    def forward(self, images: Tensor, tokens: Tensor, targets: Tensor | None = None):
        """(logits (N, T, V), mean cross-entropy over non-<PAD> targets or None)."""
        logits = self.logits(self.encode(images), tokens)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=PAD_ID)
        return logits, loss

    def step(self, words: Tensor, state: tuple[Tensor, Tensor], v: Tensor):
        """One decoding step for words (N,): (log-probabilities (N, V), new state)."""
        out, state = self.rnn(self.inputs(words[:, None], v), state)
        return F.log_softmax(self.out(out[:, -1]), dim=-1), state

    def trace(self, images: Tensor, tokens: Tensor):
        """The decoder's cells run step by step (rnnviz.core.recurrent's trace path) on teacher-forced tokens."""
        v = self.encode(images)
        return self.rnn.trace(self.inputs(tokens, v), self.initial_state(v))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def init_pair(config: CaptionConfig) -> dict[str, Captioner]:
    """Both joins from ``config.seed`` with every shared weight equal: the "every" model is drawn first;
    the "h0" model copies its CNN, E, output layer, W_hh, b and the x_t columns of W_ih, and draws its own
    W_h, b_h of h_0 = tanh(W_h v + b_h) and W_c, b_c of c_0 = W_c v + b_c from the same generator."""
    torch.manual_seed(config.seed)
    every = Captioner(replace(config, join="every"))
    h0 = Captioner(replace(config, join="h0"))
    with torch.no_grad():
        shared = every.state_dict()
        for name, tensor in h0.state_dict().items():
            if name == "rnn.weight_ih_l0":
                tensor.copy_(shared[name][:, : config.embed])  # W_xh: the columns that read x_t
            elif name in shared:
                tensor.copy_(shared[name])
    return {"every": every, "h0": h0}


# ---------------------------------------------------------------------------------------------------------
# Training


@dataclass(frozen=True)
class TrainingData:
    """The training scenes as tensors."""

    images: Tensor  # (N, 3, 48, 48) uint8
    tokens: Tensor  # (N, MAX_LEN + 1)

    @staticmethod
    def make(config: CaptionConfig) -> TrainingData:
        scenes = world.generate(config.n_train, config.seed, p=config.p)
        return TrainingData(torch.from_numpy(scenes.images).permute(0, 3, 1, 2).contiguous(),
                            caption_tensor(scenes.captions()))


def batch_order(config: CaptionConfig) -> np.ndarray:
    """(steps, batch) indices of the training scenes each step reads; depends on the seed, not the join."""
    rng = np.random.default_rng(config.seed + 1)
    per_epoch = config.n_train // min(config.batch, config.n_train)
    rows = []
    while len(rows) < config.steps:
        perm = rng.permutation(config.n_train)
        rows += [perm[i * config.batch:(i + 1) * config.batch] for i in range(per_epoch)]
    return np.stack(rows[: config.steps])


@dataclass
class History:
    """Training loss per step and model."""

    steps: list[int] = field(default_factory=list)
    loss: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0


StepCallback = Callable[[int, int, dict[str, float]], None]  # (step, steps, loss per model)


def train_models(models: dict[str, Captioner], config: CaptionConfig, on_step: StepCallback | None = None,
                 data: TrainingData | None = None) -> History:
    """Train each model in ``models`` on the same batches (batch_order), one Adam step each per batch."""
    data = data or TrainingData.make(config)
    order = batch_order(config)
    opts = {k: torch.optim.Adam(m.parameters(), lr=config.lr) for k, m in models.items()}
    history = History(loss={k: [] for k in models})
    start = time.perf_counter()
    for m in models.values():
        m.train()
    for step, idx in enumerate(order):
        idx = torch.from_numpy(idx)
        images = data.images[idx].float().div_(255.0)  # (B, 3, 48, 48)
        tokens = data.tokens[idx]  # (B, MAX_LEN + 1)
        lr = config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(1, config.steps))))
        losses = {}
        for name, model in models.items():
            for group in opts[name].param_groups:
                group["lr"] = lr
            _, loss = model(images, tokens[:, :-1], tokens[:, 1:])
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.clip)
            opts[name].step()
            losses[name] = float(loss.detach())
            history.loss[name].append(losses[name])
        history.steps.append(step + 1)
        if on_step is not None:
            on_step(step + 1, config.steps, losses)
    for m in models.values():
        m.eval()
    history.seconds = time.perf_counter() - start
    return history


def train_pair(config: CaptionConfig, on_step: StepCallback | None = None):
    """Both joins from the same initial weights on the same batches: ({"every": m, "h0": m}, History)."""
    models = init_pair(config.validate())
    return models, train_models(models, config, on_step)


def train_one(config: CaptionConfig, on_step: StepCallback | None = None):
    """One captioner of ``config.join``, from the same initial weights as its pair: (model, History)."""
    model = init_pair(config.validate())[config.join]
    model.config = config
    hist = train_models({config.join: model}, config, on_step)
    return model, hist


# ---------------------------------------------------------------------------------------------------------
# Decoding


@torch.no_grad()
def greedy(model: Captioner, images: Tensor, max_len: int = MAX_LEN) -> list[list[int]]:
    """The most probable word at each step, for a batch of images; each list ends at <END> (included) or
    at ``max_len`` words."""
    return _decode(model, images, max_len, None, None)


@torch.no_grad()
def sample(model: Captioner, images: Tensor, temperature: float = 1.0, seed: int = 0,
           max_len: int = MAX_LEN) -> list[list[int]]:
    """Words drawn from softmax(logits / temperature) at each step."""
    if not temperature > 0:
        raise ValueError(f"The temperature must be positive, not {temperature}")
    return _decode(model, images, max_len, temperature, torch.Generator().manual_seed(seed))


def _decode(model, images, max_len, temperature, generator):
    model.eval()
    v = model.encode(images)
    state = model.initial_state(v)
    n = images.size(0)
    words = torch.full((n,), START_ID, dtype=torch.long)
    out = torch.zeros(n, 0, dtype=torch.long)
    done = torch.zeros(n, dtype=torch.bool)
    for _ in range(max_len):
        log_p, state = model.step(words, state, v)
        if temperature is None:
            words = log_p.argmax(-1)
        else:
            words = torch.multinomial(torch.softmax(log_p / temperature, -1), 1, generator=generator)[:, 0]
        words = torch.where(done, torch.full_like(words, PAD_ID), words)
        out = torch.cat([out, words[:, None]], 1)
        done |= words == END_ID
        if bool(done.all()):
            break
    return [[i for i in row if i != PAD_ID] for row in out.tolist()]


@dataclass(frozen=True)
class Beam:
    """One beam: its words (ending in <END> when finished) and the sum of their log-probabilities."""

    ids: tuple[int, ...]
    logprob: float
    finished: bool

    @property
    def text(self) -> str:
        return decode(self.ids)


@torch.no_grad()
def beam_search(model: Captioner, image: Tensor, width: int = 3, max_len: int = MAX_LEN):
    """The ``width`` best captions of one image (1, 3, 48, 48), best first, and the beam tree.

    At each step every live beam is extended by every word and scored by its total log-probability
    Σ log p(w_{t+1} | w_{≤t}, v); the best ``width`` candidates survive. A candidate that ends in <END> is
    finished and leaves the search; the search stops when no live beam is left or at ``max_len`` words.
    Width 1 is greedy decoding. Returns (beams, tree), tree[t] the nodes alive after step t
    (the loop is rnnviz.core.beam's, shared with the sequence-to-sequence decoders)."""
    if not 1 <= width <= 10:
        raise ValueError(f"The beam width is 1 to 10, not {width}")
    model.eval()
    v = model.encode(image)  # (1, v_dim)

    def step(words: Tensor, state):
        return model.step(words, state, v.expand(words.size(0), -1))

    def select(state, rows: Tensor):
        return state[0][:, rows], state[1][:, rows]

    found, tree = core_beam.beam_search(step, model.initial_state(v), select, START_ID, END_ID, width, max_len)
    return [Beam(b.ids, b.logprob, b.finished) for b in found], tree


_mark_paths = core_beam.mark_paths


@torch.no_grad()
def word_logprobs(model: Captioner, image: Tensor, ids: list[int]) -> Tensor:
    """log p(w_{t+1} | w_{≤t}, v) of each word of ``ids`` (words after <START>, <END> included): (T,)."""
    model.eval()
    tokens = torch.tensor([[START_ID, *ids]])
    log_p = F.log_softmax(model(image, tokens[:, :-1])[0][0], -1)  # (T, V)
    return log_p.gather(1, tokens[0, 1:, None])[:, 0]


@torch.no_grad()
def step_distributions(model: Captioner, image: Tensor, ids: list[int]) -> Tensor:
    """p(· | w_{≤t}, v) before each word of ``ids`` (teacher-forced): (T, V)."""
    model.eval()
    tokens = torch.tensor([[START_ID, *ids]])
    return torch.softmax(model(image, tokens[:, :-1])[0][0], -1)


# ---------------------------------------------------------------------------------------------------------
# Saliency


def saliency(model: Captioner, image: Tensor, ids: list[int], t: int, method: str = "gradient") -> np.ndarray:
    """How much each pixel moves log p(w_t | w_{<t}, v) for word ``ids[t]``: (48, 48), non-negative.

    gradient: |∂ log p / ∂ pixel|, the largest of the three channels;
    occlusion: the drop in log p when an 8×8 patch around the pixel is painted grey (stride 4, averaged)."""
    if not 0 <= t < len(ids):
        raise ValueError(f"t must be in 0..{len(ids) - 1}, not {t}")
    model.eval()
    tokens = torch.tensor([[START_ID, *ids[: t]]])
    target = ids[t]
    if method == "gradient":
        x = image.clone().requires_grad_(True)
        logits, _ = model(x, tokens)
        log_p = F.log_softmax(logits[0, -1], -1)[target]
        (grad,) = torch.autograd.grad(log_p, x)
        return grad[0].abs().amax(0).numpy()
    if method == "occlusion":
        size, stride = 8, 4
        corners = [(y, x) for y in range(0, 48 - size + 1, stride) for x in range(0, 48 - size + 1, stride)]
        batch = image.repeat(len(corners), 1, 1, 1)
        for k, (y, x) in enumerate(corners):
            batch[k, :, y:y + size, x:x + size] = 0.5
        with torch.no_grad():
            base = F.log_softmax(model(image, tokens)[0][0, -1], -1)[target]
            occluded = F.log_softmax(model(batch, tokens.expand(len(corners), -1))[0][:, -1], -1)[:, target]
        drop = (base - occluded).clamp(min=0).numpy()
        heat, count = np.zeros((48, 48)), np.zeros((48, 48))
        for d, (y, x) in zip(drop, corners):
            heat[y:y + size, x:x + size] += d
            count[y:y + size, x:x + size] += 1
        return heat / count
    raise ValueError(f"method must be 'gradient' or 'occlusion', not {method!r}")


def object_share(heat: np.ndarray, mask: np.ndarray) -> float:
    """The share of the saliency mass that lies on object pixels (mask True)."""
    total = float(heat.sum())
    return float(heat[mask].sum()) / total if total > 0 else 0.0


# ---------------------------------------------------------------------------------------------------------
# Metrics


@dataclass(frozen=True)
class Chair:
    """CHAIR (Rohrbach et al. 2018) on the world's object words."""

    chair_i: float  # hallucinated object mentions ÷ all object mentions
    chair_s: float  # captions with at least one hallucinated object ÷ all captions
    mentions: int
    hallucinated: int
    captions: int
    bad_captions: int


def chair(captions: list[str], scenes: list[world.Scene]) -> Chair:
    """CHAIRi and CHAIRs: an object word (a shape) is hallucinated when no object of that shape is in the scene."""
    mentions = hallucinated = bad = 0
    for text, scene in zip(captions, scenes, strict=True):
        present = scene.shapes()
        named = [w for w in text.split() if w in OBJECT_WORDS]
        wrong = sum(w not in present for w in named)
        mentions += len(named)
        hallucinated += wrong
        bad += wrong > 0
    n = len(captions)
    return Chair(hallucinated / mentions if mentions else 0.0, bad / n if n else 0.0, mentions, hallucinated, n, bad)


ATTRIBUTES = ("shape", "colour", "size", "position", "background")


def attribute_accuracy(captions: list[str], scenes: list[world.Scene]) -> dict[str, float]:
    """Exact match, and per attribute the share of true objects the caption gets right at their position
    (position: an object is named at that position); background per caption; unparsed: captions off-grammar."""
    exact = unparsed = 0
    hits = dict.fromkeys(ATTRIBUTES, 0)
    objects = 0
    for text, scene in zip(captions, scenes, strict=True):
        exact += text == world.caption(scene)
        try:
            guess = world.parse_caption(text)
        except ValueError:
            guess = None
            unparsed += 1
        at = {o.position: o for o in guess.objects} if guess else {}
        hits["background"] += bool(guess) and guess.background == scene.background
        for obj in scene.objects:
            objects += 1
            other = at.get(obj.position)
            if other is None:
                continue
            hits["position"] += 1
            for name in ("shape", "colour", "size"):
                hits[name] += getattr(other, name) == getattr(obj, name)
    n = max(1, len(captions))
    out = {"exact": exact / n, "unparsed": unparsed / n}
    out.update({k: v / (n if k == "background" else max(1, objects)) for k, v in hits.items()})
    return out


def object_accuracy(captions: list[str], scenes: list[world.Scene]) -> list[dict[str, float]]:
    """Per place k in the true caption (1st, 2nd, 3rd object): the share of those objects that the caption names
    at their position with the right shape, and with the right colour. Unparsed captions count as wrong.
    Returns one dict per k with objects: how many true objects are k-th."""
    hits = [[0, 0, 0] for _ in range(world.MAX_OBJECTS)]
    for text, scene in zip(captions, scenes, strict=True):
        try:
            at = {o.position: o for o in world.parse_caption(text).objects}
        except ValueError:
            at = {}
        for k, obj in enumerate(scene.sorted().objects):
            other = at.get(obj.position)
            hits[k][2] += 1
            hits[k][0] += other is not None and other.shape == obj.shape
            hits[k][1] += other is not None and other.colour == obj.colour
    return [{"object": k + 1, "shape": s / max(1, n), "colour": c / max(1, n), "objects": n}
            for k, (s, c, n) in enumerate(hits)]


def scene_list(scenes: world.Scenes) -> list[world.Scene]:
    return [scenes.scene(i) for i in range(len(scenes))]


def evaluate(model: Captioner, scenes: world.Scenes, batch: int = 500) -> dict[str, float]:
    """Greedy captions of ``scenes``: exact match, per-attribute accuracy, CHAIRi and CHAIRs."""
    texts = []
    for i in range(0, len(scenes), batch):
        texts += [decode(ids) for ids in greedy(model, pixels(scenes.images[i:i + batch]))]
    truth = scene_list(scenes)
    c = chair(texts, truth)
    return {**attribute_accuracy(texts, truth), "chair_i": c.chair_i, "chair_s": c.chair_s}


def boat_rate(model: Captioner, scenes: world.Scenes) -> float:
    """The share of greedy captions that name a boat."""
    texts = [decode(ids) for ids in greedy(model, pixels(scenes.images))]
    return sum("boat" in t.split() for t in texts) / len(texts)


@torch.no_grad()
def image_influence(model: Captioner, scenes: world.Scenes, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """How much the image still changes the next-word distribution at step t: the mean over scenes of
    KL(p(· | w_{≤t}, v) ‖ p(· | w_{≤t}, v′)), v′ the v of another scene (a shuffle), teacher-forced on the
    true captions. Returns (KL per t, scenes counted per t), each (MAX_LEN,)."""
    model.eval()
    tokens = caption_tensor(scenes.captions())
    v = model.encode(pixels(scenes.images))
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(len(scenes)))
    log_p = F.log_softmax(model.logits(v, tokens[:, :-1]), -1)  # (N, T, V)
    log_q = F.log_softmax(model.logits(v[perm], tokens[:, :-1]), -1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)  # (N, T)
    live = tokens[:, 1:] != PAD_ID  # (N, T): a word is predicted here
    counts = live.sum(0)
    return ((kl * live).sum(0) / counts.clamp(min=1)).numpy(), counts.numpy()


# ---------------------------------------------------------------------------------------------------------
# Sweep over the co-occurrence p


@dataclass(frozen=True)
class SweepPoint:
    """One model trained at co-occurrence p, measured on the held-out and counter-example sets."""

    p: float
    chair_i: float
    chair_s: float
    exact: float
    boat_on_empty_water: float  # share of captions naming a boat on water-without-boat scenes


def sweep(ps: tuple[float, ...], config: CaptionConfig, n_eval: int = 400,
          on_progress: Callable[[int, int, str], None] | None = None) -> tuple[list[SweepPoint], dict]:
    """Train one captioner of ``config.join`` per p (same seed, so the same init and batch order) and measure
    CHAIR on the held-out set and the boat rate on water without a boat. Returns (points, models by p)."""
    held = world.heldout(n_eval, config.seed + 1000)
    counter = world.counterexamples(n_eval, config.seed + 2000)
    points, models = [], {}
    total = len(ps) * config.steps
    for k, p in enumerate(ps):
        def progress(step, steps, loss, k=k, p=p):
            if on_progress is not None:
                on_progress(k * config.steps + step, total, f"p = {p:.2f}: step {step}/{steps}")

        model, _ = train_one(replace(config, p=p), progress)
        m = evaluate(model, held)
        points.append(SweepPoint(p, m["chair_i"], m["chair_s"], m["exact"], boat_rate(model, counter)))
        models[p] = model
    return points, models


# ---------------------------------------------------------------------------------------------------------
# Checkpoints


class CaptionerError(ValueError):
    """A file that is not a captioner this code can load."""


def save_captioner(model: Captioner, path: str | Path | None = None, metrics: dict | None = None) -> bytes:
    """The model as bytes (config, vocabulary, weights, recorded metrics); also written to ``path``."""
    config = asdict(model.config)
    config["channels"] = list(config["channels"])
    payload = {"format": FORMAT, "config": config, "vocab": list(VOCAB),
               "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
               "metrics": dict(metrics or {})}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def load_captioner(source: str | Path | bytes, *, limits: FileLimits = UPLOAD_LIMITS) -> tuple[Captioner, dict]:
    """(model, recorded metrics) from a file or bytes, through torch.load(weights_only=True), strict.

    Checked as ``rnnviz.seq2seq.checkpoint.load_model`` checks a file: bounded reading, the model counted on torch's
    meta device against ``limits.parameters`` before it is built, finite weights. Every failure is a
    CaptionerError in words.
    """
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    payload = load_torch_file(raw, CaptionerError, "captioner", max_record_bytes=limits.record_bytes)
    if not isinstance(payload, dict) or type(payload.get("format")) is not str or payload["format"] != FORMAT:
        raise CaptionerError("Not a captioner checkpoint (no rnnviz-captioner-1 format mark).")
    vocab = payload.get("vocab", ())
    if not isinstance(vocab, list | tuple) or tuple(vocab) != VOCAB:
        raise CaptionerError("The checkpoint's vocabulary differs from this world's.")
    config, state, metrics = payload.get("config"), payload.get("state"), payload.get("metrics", {})
    if not isinstance(config, dict) or not all(isinstance(v, bool | int | float | str) or k == "channels"
                                               for k, v in config.items()):
        raise CaptionerError("The checkpoint's config is not a dict of plain values.")
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) and not v.is_complex()
                                              for k, v in state.items()):
        raise CaptionerError("The checkpoint's weights are not a dict of named real-valued tensors.")
    if not isinstance(metrics, dict):
        raise CaptionerError("The checkpoint's recorded metrics are not a dict.")
    try:
        channels = config["channels"]
        if not isinstance(channels, list | tuple) or not all(type(c) is int for c in channels):
            raise CaptionerError("The checkpoint's conv widths (channels) are not a list of whole numbers.")
        config = CaptionConfig(**{**config, "channels": tuple(channels)})
        with torch.device("meta"):  # shapes only: the size is known before anything is allocated
            expected = {k: tuple(v.shape) for k, v in Captioner(config).state_dict().items()}
    except CaptionerError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as err:
        raise CaptionerError(f"The checkpoint does not fit the captioner: {quoted(err)}") from None
    count = sum(math.prod(shape) for shape in expected.values())
    most = limits.parameters
    if most is not None and count > most:
        raise CaptionerError(f"The captioner its config describes holds {count:,} parameters, {times(count, most)} "
                             f"the {most:,} a model may have here.")
    wrong = sorted(set(expected) ^ set(state)) + [k for k in expected.keys() & state.keys()
                                                  if tuple(state[k].shape) != expected[k]]
    if wrong:
        raise CaptionerError(f"The checkpoint does not fit the captioner: look at {quoted(', '.join(wrong))}.")
    model = Captioner(config)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    model.eval()
    for name, tensor in model.state_dict().items():
        problem = nonfinite_problem(tensor)
        if problem:
            raise CaptionerError(f"The checkpoint's weight {name} cannot be used: {problem}.")
    return model, dict(metrics)
