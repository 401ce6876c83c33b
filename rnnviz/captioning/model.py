"""A captioner: a small CNN reads a scene, its penultimate vector v conditions a word-level LSTM (Eq. 8.11).

Encoder: three 3×3 convolutions with stride 2, batch norm and ReLU (48 → 24 → 12 → 6), then a linear layer to v.
Decoder: an LSTM from ``rnnviz.core.recurrent`` (so its cells can be traced), reading words w_t embedded as
x_t = E w_t and predicting w_{t+1}, from ``<START>`` to ``<END>``. Two joins of the image:

- **every** (Eq. 8.11): v enters the recurrence at every step. The LSTM reads [x_t; v], so each gate's
  pre-activation holds W_ih v:  h_t = LSTM(W_xh x_t + W_ih v + W_hh h_{t−1} + b), with h_0 = c_0 = 0;
- **h0**: v only sets the initial state, h_0 = tanh(W_h v + b_h), c_0 = W_c v + b_c, and
  h_t = LSTM(W_xh x_t + W_hh h_{t−1} + b): the image enters once, at t = 0, and never after.

Why c_0 too, and without tanh: the language model soon pulls h_0 to one start state where tanh saturates and
passes no gradient back to W_h or the CNN; the cell state is not squashed (c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t), so a
linear c_0 keeps a path from the words to the image.

``init_pair`` builds both from one seed with every shared weight (CNN, E, W_xh, W_hh, b, output layer)
equal. Shapes: images (N, 3, 48, 48) in [0, 1], words (N, T).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.captioning import world
from rnnviz.core.recurrent import make_recurrent

PAD, START, END = "<PAD>", "<START>", "<END>"
VOCAB = (PAD, START, END, *world.WORDS)
INDEX = {w: i for i, w in enumerate(VOCAB)}
PAD_ID, START_ID, END_ID = 0, 1, 2
# The longest caption: three objects of 6 words, two "and", "on <background>"; plus <END>.
MAX_WORDS = 3 * 6 + 2 + 2
MAX_LEN = MAX_WORDS + 1
JOINS = {"every": "v at every step (Eq. 8.11)", "h0": "v only in the initial state h₀, c₀"}
OBJECT_WORDS = world.SHAPES  # the object categories CHAIR counts


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
