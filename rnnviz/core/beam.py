"""Beam search over any step function, with the beam tree: one loop for every decoder in rnnviz.

A decoder gives ``step_fn(tokens (B,), state) -> (log-probabilities (B, V), new state)`` and
``select_state(state, rows (K,)) -> state`` that keeps rows of a batched state. The search starts from
``initial_state`` (batch 1) and ``start_id``.

At each step every live beam is extended by every token and scored by its total log-probability
Σ log p(y_{t+1} | y_{≤t}, x); the best ``width`` candidates survive. A candidate that ends in ``end_id`` is
finished and leaves the search; the search stops when ``width`` beams have finished, when no live beam is
left, or at ``max_len`` tokens. Width 1 is greedy decoding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

StepFn = Callable[[Tensor, Any], tuple[Tensor, Any]]  # (tokens (B,), state) -> (log_p (B, V), state)
SelectFn = Callable[[Any, Tensor], Any]  # (state, rows (K,)) -> state of those rows


@dataclass(frozen=True)
class SearchBeam:
    """One returned beam: its tokens (ending in end_id when finished) and the sum of their log-probabilities."""

    ids: tuple[int, ...]
    logprob: float
    finished: bool


@dataclass(frozen=True)
class BeamNode:
    """A node of the beam tree: step t, the word, its parent's index at step t−1, the total log-prob."""

    t: int
    word: int
    parent: int  # index into the previous step's nodes (−1: <START>)
    logprob: float
    kept: bool  # still among the beams at the end (on a path to a returned beam)


@torch.no_grad()
def beam_search(step_fn: StepFn, initial_state: Any, select_state: SelectFn, start_id: int, end_id: int,
                width: int, max_len: int) -> tuple[list[SearchBeam], list[list[BeamNode]]]:
    """The ``width`` best sequences, best first, and the tree: tree[t] holds the nodes alive after step t."""
    if width < 1:
        raise ValueError(f"The beam width must be at least 1, not {width}")
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, not {max_len}")
    state = initial_state
    live_ids: list[tuple[int, ...]] = [()]
    live_scores = torch.zeros(1, dtype=torch.float64)
    live_nodes = [-1]
    tokens = torch.tensor([start_id])
    finished: list[tuple[tuple[int, ...], float, int, int]] = []  # (ids, score, t, node)
    tree: list[list[BeamNode]] = []
    keep_ids: list[tuple[int, ...]] = []
    keep_scores: list[float] = []
    keep_nodes: list[int] = []
    for t in range(max_len):
        log_p, state = step_fn(tokens, state)  # (B, V)
        cand = (live_scores[:, None] + log_p.double()).flatten()  # (B·V,)
        k = min(width - len(finished), cand.numel())
        scores, flat = torch.topk(cand, k)
        rows, ws = (flat // log_p.size(1)).tolist(), (flat % log_p.size(1)).tolist()
        nodes = []
        keep_rows, keep_ids, keep_scores, keep_nodes = [], [], [], []
        for r, w, s in zip(rows, ws, scores.tolist()):
            nodes.append(BeamNode(t, w, live_nodes[r], s, False))
            ids = live_ids[r] + (w,)
            if w == end_id:
                finished.append((ids, s, t, len(nodes) - 1))
            else:
                keep_rows.append(r)
                keep_ids.append(ids)
                keep_scores.append(s)
                keep_nodes.append(len(nodes) - 1)
        tree.append(nodes)
        if not keep_ids or len(finished) >= width:
            break
        state = select_state(state, torch.tensor(keep_rows))
        live_ids, live_scores, live_nodes = keep_ids, torch.tensor(keep_scores, dtype=torch.float64), keep_nodes
        tokens = torch.tensor([i[-1] for i in keep_ids])
    ends = list(finished)
    if len(ends) < width and keep_ids:  # the length cap cut the search: the live beams count too
        ends += [(ids, s, len(tree) - 1, node) for ids, s, node in zip(keep_ids, keep_scores, keep_nodes)]
    ends.sort(key=lambda e: -e[1])
    ends = ends[:width]
    beams = [SearchBeam(ids, s, ids[-1] == end_id) for ids, s, _, _ in ends]
    return beams, mark_paths(tree, [(tt, node) for _, _, tt, node in ends])


def mark_paths(tree: list[list[BeamNode]], leaves: list[tuple[int, int]]) -> list[list[BeamNode]]:
    """The tree with ``kept`` set on every node that lies on a path from <START> to one of ``leaves`` (t, index)."""
    keep = set()
    for t, node in leaves:
        while t >= 0 and node >= 0:
            keep.add((t, node))
            node, t = tree[t][node].parent, t - 1
    return [[replace(n, kept=(t, i) in keep) for i, n in enumerate(nodes)] for t, nodes in enumerate(tree)]
