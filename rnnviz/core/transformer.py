"""A small decoder-only character Transformer (pre-LayerNorm, in the style of nanoGPT), with two ways to run it.

Each of the T positions of a window holds a vector of width C (the residual stream). Position t starts as

    x_t⁽⁰⁾ = E[idx_t] + P[t]                                  token embedding + position embedding

and each of the L blocks adds attention and an MLP to it:

    a_t⁽ℓ⁾ = x_t⁽ℓ⁾ + Attn(LN₁(x⁽ℓ⁾))_t
    x_t⁽ℓ⁺¹⁾ = a_t⁽ℓ⁾ + W₂ GELU(W₁ LN₂(a_t⁽ℓ⁾) + b₁) + b₂

Attention splits C into h heads of width d = C / h. Per head, with Q = X W_Q, K = X W_K, V = X W_V,

    Attn(X) = softmax(QKᵀ/√d + M) V,      M_ts = 0 when s ≤ t, −∞ when s > t (the causal mask),

so position t reads only positions s ≤ t; the heads are concatenated and mixed by W_O. The readout is
logits_t = W_y LN_f(x_t⁽ᴸ⁾) + b_y.

- The **fast path** is ``forward``: ``F.scaled_dot_product_attention(..., is_causal=True)``, for training.
- The **trace path** is ``trace``: the same weights with softmax(QKᵀ/√d + M) written out, recording the
  residual stream of every layer and the attention weights of every head, for inspection (eval mode).
- **Sampling** keeps a key/value cache (``prefill``, then ``step`` one token at a time): K and V of every
  earlier position in every layer. That cache is all a Transformer carries from one step to the next, and it
  grows by 2·L·C numbers per token, where an RNN carries a fixed h_t (and an LSTM h_t and c_t).

The context is ``block_size`` positions: P has one row per position. Reading or sampling past it slides the
window: the model sees the last ``block_size`` characters, at positions 0…block_size−1. Because P is
absolute, every cached K and V changes when the window moves, so a full cache is rebuilt from the window's
characters (one forward pass over the window per new character) rather than cropped.

Parameter names follow nanoGPT's inside the blocks (``blocks.{ℓ}.attn.c_attn``, ``mlp.c_fc``, …) and
CharModel's outside (``embed``, ``head``). Shapes are batch-first: (N, T, C); heads are (N, h, T, d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnnviz.core.config import ModelConfig

WINDOW_BATCH = 256  # windows per forward pass when every position past the context gets its own window


def causal_mask(t_query: int, t_key: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean (T_q, T_k) mask, True where query t may read key s: the last T_q of T_k positions, s ≤ t."""
    return torch.ones(t_query, t_key, dtype=torch.bool, device=device).tril(diagonal=t_key - t_query)


def count_parameters(vocab_size: int, layers: int, width: int, block_size: int) -> int:
    """Parameters of a CharTransformer, by hand, without building it:

    E (V·C) + P (block·C) + L · [LN₁ 2C + W_QKV 3C² + 3C + W_O C² + C + LN₂ 2C + W₁ 4C² + 4C + W₂ 4C² + C]
    + LN_f 2C + readout C·V + V  =  V·C + block·C + L·(12C² + 13C) + 2C + C·V + V.
    """
    c = width
    return vocab_size * c + block_size * c + layers * (12 * c * c + 13 * c) + 2 * c + c * vocab_size + vocab_size


@dataclass(frozen=True, eq=False)
class KVCache:
    """What a Transformer carries into the next step: K and V of every position in the window, every layer.

    ``nbytes`` is measured from the K and V tensors: 2 · L · N · t · C · (bytes per number), linear in t.
    ``ids`` are the window's characters, kept only to rebuild the cache when the window slides (they are not
    counted in ``nbytes``: with relative positions they would not be needed).
    """

    keys: tuple[Tensor, ...]  # per layer, (N, h, t, d)
    values: tuple[Tensor, ...]  # per layer, (N, h, t, d)
    ids: Tensor  # (N, t) the characters whose K and V are held

    @property
    def length(self) -> int:
        """t, the positions held (at most the block size)."""
        return self.ids.size(1)

    @property
    def numel(self) -> int:
        """Numbers held in K and V together: 2 · L · N · t · C."""
        return sum(k.numel() + v.numel() for k, v in zip(self.keys, self.values))

    @property
    def nbytes(self) -> int:
        """Bytes held in K and V together, from the tensors themselves."""
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in zip(self.keys, self.values))

    def select(self, rows: Tensor) -> KVCache:
        """The cache of some rows of the batch (beam search keeps the best beams)."""
        return KVCache(tuple(k[rows] for k in self.keys), tuple(v[rows] for v in self.values), self.ids[rows])


@dataclass(eq=False)
class TransformerTrace:
    """Every intermediate a plot needs, from ``CharTransformer.trace``."""

    residual: Tensor  # (L + 1, N, T, C): x⁽⁰⁾ = embeddings, then x⁽ℓ⁾ after block ℓ; residual[ℓ][:, t] is token t
    attention: Tensor  # (L, N, h, T, T): softmax(QKᵀ/√d + M), rows t = queries, columns s = keys; 0 above the diagonal
    attn_out: Tensor  # (L, N, T, C): what attention adds to the stream in block ℓ (after W_O)
    mlp_out: Tensor  # (L, N, T, C): what the MLP adds to the stream in block ℓ
    output: Tensor  # (N, T, C): LN_f(x⁽ᴸ⁾), the vector the readout sees


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: softmax(QKᵀ/√d + M) V per head, heads mixed by W_O (``c_proj``)."""

    def __init__(self, width: int, n_head: int, dropout: float = 0.0):
        super().__init__()
        if width % n_head:
            raise ValueError(f"the width C = {width} must divide into {n_head} heads")
        self.n_head, self.head_dim, self.dropout = n_head, width // n_head, dropout
        self.c_attn = nn.Linear(width, 3 * width)  # [W_Q; W_K; W_V], C → 3C
        self.c_proj = nn.Linear(width, width)  # W_O, C → C
        self.resid_dropout = nn.Dropout(dropout)

    def qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Q, K, V of x (N, T, C), each split into heads: (N, h, T, d)."""
        n, t_len, width = x.shape
        q, k, v = self.c_attn(x).split(width, dim=2)  # 3 × (N, T, C)
        return tuple(z.view(n, t_len, self.n_head, self.head_dim).transpose(1, 2) for z in (q, k, v))

    def merge(self, y: Tensor) -> Tensor:
        """Heads (N, h, T, d) → concatenated and mixed by W_O: (N, T, C)."""
        n, _, t_len, _ = y.shape
        y = y.transpose(1, 2).reshape(n, t_len, self.n_head * self.head_dim)  # (N, T, C)
        return self.resid_dropout(self.c_proj(y))

    def forward(self, x: Tensor) -> Tensor:
        """Fast path: (N, T, C) → (N, T, C) with torch's fused attention and the causal mask."""
        q, k, v = self.qkv(x)  # (N, h, T, d)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )  # (N, h, T, d)
        return self.merge(y)

    def weights(self, q: Tensor, k: Tensor) -> Tensor:
        """softmax(QKᵀ/√d + M) written out: q (N, h, T_q, d), k (N, h, T_k, d) → (N, h, T_q, T_k)."""
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # (N, h, T_q, T_k)
        mask = causal_mask(q.size(-2), k.size(-2), q.device)  # (T_q, T_k)
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


class MLP(nn.Module):
    """The position-wise MLP: W₂ GELU(W₁ x + b₁) + b₂, widening C → 4C → C."""

    def __init__(self, width: int, dropout: float = 0.0):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)  # W₁
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * width, width)  # W₂
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))  # (N, T, C)


class Block(nn.Module):
    """One pre-LayerNorm block: x ← x + Attn(LN₁(x)); x ← x + MLP(LN₂(x))."""

    def __init__(self, width: int, n_head: int, dropout: float = 0.0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, n_head, dropout)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width, dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))  # (N, T, C)
        return x + self.mlp(self.ln_2(x))  # (N, T, C)


class CharTransformer(nn.Module):
    """Next-character Transformer with CharModel's ``forward(idx, targets=None, state=None) -> (logits, loss,
    state)``; ``state`` is always None, in and out: a Transformer carries no state from one window to the next.

    The width C is ``config.hidden``, the context ``config.block_size``, the heads ``config.n_head`` and the
    blocks ``config.layers``. Weights start as nanoGPT's: N(0, 0.02²) for matrices and embeddings, zero
    biases, and N(0, (0.02/√(2L))²) for the two projections that write into the residual stream.
    """

    carries_state = False  # nothing crosses a window boundary; sampling carries the KVCache instead

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.kind != "transformer":
            raise ValueError(f"CharTransformer needs kind='transformer', not {config.kind!r}")
        self.config = config
        width = config.hidden
        self.embed = nn.Embedding(config.vocab_size, width)  # E, V × C
        self.pos_embed = nn.Embedding(config.block_size, width)  # P, block × C
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(width, config.n_head, config.dropout) for _ in range(config.layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, config.vocab_size)  # W_y, C → V
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    @property
    def block_size(self) -> int:
        return self.config.block_size

    def num_parameters(self) -> int:
        """Trainable parameter count, as sum(p.numel())."""
        return sum(p.numel() for p in self.parameters())

    def _check(self, idx: Tensor, start: int = 0) -> None:
        if idx.dim() != 2:
            raise ValueError(f"expected character ids of shape (N, T), got {tuple(idx.shape)}")
        if start + idx.size(1) > self.block_size:
            raise ValueError(
                f"this Transformer reads at most {self.block_size} characters at once (its context), not "
                f"{start + idx.size(1)}; slide a window (see windowed_logits) or sample with the cache"
            )

    def embeddings(self, idx: Tensor, start: int = 0) -> Tensor:
        """x⁽⁰⁾ = E[idx_t] + P[start + t] for ids (N, T) → (N, T, C)."""
        positions = torch.arange(start, start + idx.size(1), device=idx.device)  # (T,)
        return self.drop(self.embed(idx) + self.pos_embed(positions))  # (N, T, C)

    def readout(self, x: Tensor) -> Tensor:
        """logits = W_y LN_f(x) + b_y: (N, T, C) → (N, T, V)."""
        return self.head(self.ln_f(x))

    def forward(
        self, idx: Tensor, targets: Tensor | None = None, state: None = None
    ) -> tuple[Tensor, Tensor | None, None]:
        """Logits (N, T, V) for ids (N, T) with T ≤ block size, the mean cross-entropy in nats/char when
        targets are given, and None: there is no state to carry."""
        if state is not None:
            raise ValueError("a Transformer carries no state between windows; sample with prefill() and step()")
        self._check(idx)
        x = self.embeddings(idx)  # (N, T, C)
        for block in self.blocks:
            x = block(x)  # (N, T, C)
        logits = self.readout(x)  # (N, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss, None

    # -- the trace path -----------------------------------------------------------------------------------

    def trace(self, idx: Tensor) -> tuple[Tensor, TransformerTrace]:
        """Logits (N, T, V) and the TransformerTrace, with attention written out as softmax(QKᵀ/√d + M) V.

        Runs as in eval mode (no dropout) and is differentiable; it equals ``forward`` in eval mode.
        """
        self._check(idx)
        x = self.embed(idx) + self.pos_embed(torch.arange(idx.size(1), device=idx.device))  # (N, T, C)
        residual, attention, attn_outs, mlp_outs = [x], [], [], []
        for block in self.blocks:
            attn = block.attn
            q, k, v = attn.qkv(block.ln_1(x))  # (N, h, T, d)
            weights = attn.weights(q, k)  # (N, h, T, T)
            attn_out = attn.c_proj((weights @ v).transpose(1, 2).reshape(x.shape))  # (N, T, C)
            x = x + attn_out
            mlp = block.mlp
            mlp_out = mlp.c_proj(mlp.gelu(mlp.c_fc(block.ln_2(x))))  # (N, T, C)
            x = x + mlp_out
            residual.append(x)
            attention.append(weights)
            attn_outs.append(attn_out)
            mlp_outs.append(mlp_out)
        output = self.ln_f(x)  # (N, T, C)
        trace = TransformerTrace(
            residual=torch.stack(residual),  # (L + 1, N, T, C)
            attention=torch.stack(attention),  # (L, N, h, T, T)
            attn_out=torch.stack(attn_outs),  # (L, N, T, C)
            mlp_out=torch.stack(mlp_outs),  # (L, N, T, C)
            output=output,
        )
        return self.head(output), trace

    # -- sampling with a key/value cache -----------------------------------------------------------------------

    def _extend(self, idx: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        """Feed ids (N, T') after the cached positions; logits (N, T', V) and the grown cache."""
        start = 0 if cache is None else cache.length
        self._check(idx, start)
        x = self.embeddings(idx, start)  # (N, T', C)
        keys, values = [], []
        for layer, block in enumerate(self.blocks):
            attn = block.attn
            q, k, v = attn.qkv(block.ln_1(x))  # (N, h, T', d)
            if cache is not None:
                k = torch.cat([cache.keys[layer], k], dim=2)  # (N, h, t + T', d)
                v = torch.cat([cache.values[layer], v], dim=2)  # (N, h, t + T', d)
            if start == 0:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (N, h, T', d)
            elif q.size(2) == 1:
                y = F.scaled_dot_product_attention(q, k, v)  # the newest position reads every cached one
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(q.size(2), k.size(2), q.device))
            x = x + attn.merge(y)  # (N, T', C)
            x = x + block.mlp(block.ln_2(x))  # (N, T', C)
            keys.append(k)
            values.append(v)
        ids = idx if cache is None else torch.cat([cache.ids, idx], dim=1)  # (N, t + T')
        return self.readout(x), KVCache(tuple(keys), tuple(values), ids)

    def prefill(self, idx: Tensor) -> tuple[Tensor, KVCache]:
        """Read ids (N, T) into a fresh cache; logits (N, T_w, V) of the window read.

        A text longer than the context is cut to its last ``block_size`` characters (T_w = block size).
        """
        return self._extend(idx[:, -self.block_size :], None)

    def step(self, idx: Tensor, cache: KVCache) -> tuple[Tensor, KVCache]:
        """One new character per row, idx (N,) or (N, 1), after the cache; logits (N, V) and the grown cache.

        The new position's query reads the cached K and V of every earlier position: softmax(q Kᵀ/√d) V.
        When the cache already holds ``block_size`` positions, the window slides by one: the cache is
        rebuilt from the last block_size − 1 cached characters and the new one, at positions 0…block_size−1.
        """
        idx = idx.reshape(-1, 1)  # (N, 1)
        if cache.length >= self.block_size:
            logits, cache = self.prefill(torch.cat([cache.ids, idx], dim=1))  # (N, block, V)
        else:
            logits, cache = self._extend(idx, cache)  # (N, 1, V)
        return logits[:, -1], cache

    @torch.no_grad()
    def windowed_logits(self, idx: Tensor) -> Tensor:
        """Logits (N, T, V) for ids (N, T) of any length, position t reading at most the last block_size
        characters up to t (the sliding window that sampling uses). Eval-mode use only (no gradient)."""
        if idx.size(1) <= self.block_size:
            return self(idx)[0]
        n, t_len = idx.shape
        first = self(idx[:, : self.block_size])[0]  # (N, block, V)
        windows = idx.unfold(1, self.block_size, 1)[:, 1:].reshape(-1, self.block_size)  # (N·(T − block), block)
        last = torch.cat([self(w)[0][:, -1] for w in windows.split(WINDOW_BATCH)])  # (N·(T − block), V)
        return torch.cat([first, last.view(n, t_len - self.block_size, -1)], dim=1)  # (N, T, V)
