"""Writing captions: greedy, sampled and beam-search decoding, and the teacher-forced distributions of each word."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.captioning.model import END_ID, MAX_LEN, PAD_ID, START_ID, Captioner, decode
from rnnviz.core import beam as core_beam


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
