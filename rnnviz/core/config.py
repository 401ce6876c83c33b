"""The shape of a character model (``ModelConfig``) and the kinds it may be, apart from the model classes.

Both model modules read this one (rnnviz.core.charmodel for the recurrent kinds, rnnviz.core.transformer for
the Transformer), so neither imports the other to learn the shape it builds; ``build_model`` in charmodel picks
the class for a config.
"""

from __future__ import annotations

from dataclasses import dataclass

from rnnviz.core.recurrent import KINDS
from rnnviz.core.state_stack import HEADED_KINDS, STATE_KIND_LABELS, STATE_KINDS

# KINDS are torch's recurrent cells, which the explorer, the gate pages and cell interventions read by their
# W_hh; a minGRU has no W_hh, so it is a recurrent CharModel kind but not one of KINDS.
RECURRENT_MODEL_KINDS = (*KINDS, "mingru")  # the kinds whose state is h_t (and c_t): vectors of H per layer
# CharModel builds these and STATE_KINDS (xLSTM's sLSTM and mLSTM, the selective SSM, linear attention: a state
# of several tensors per layer, rnnviz.core.state_stack); each carries a fixed-size state.
CHAR_MODEL_KINDS = (*RECURRENT_MODEL_KINDS, *STATE_KINDS)
MODEL_KINDS = (*CHAR_MODEL_KINDS, "transformer")  # every kind a character model can be


def kind_label(kind: str) -> str:
    """How pages and the CLI name a kind: "RNN", "LSTM", "GRU", "minGRU", "sLSTM", "mLSTM", "selective SSM",
    "linear attention", "Transformer"."""
    return {"mingru": "minGRU", "transformer": "Transformer", **STATE_KIND_LABELS}.get(kind, kind.upper())


def shape_label(config) -> str:
    """"L × H kind" of a ModelConfig or TrainConfig, as every page and the CLI write it: "2 × 256 LSTM"; a run
    whose width grows (TrainConfig.grow_from) says from what: "1 × 256→448 LSTM"."""
    grown_from = getattr(config, "grow_from", 0)
    width = f"{grown_from}→{config.hidden}" if grown_from else f"{config.hidden}"
    return f"{config.layers} × {width} {kind_label(config.kind)}"


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a character model; frozen so it can key caches and travel in checkpoints."""

    vocab_size: int  # V, distinct characters
    kind: str = "lstm"  # one of MODEL_KINDS: "rnn", "lstm", "gru", "mingru", "slstm", "mlstm", "selective", …
    layers: int = 1  # L, stacked recurrent layers (Transformer: blocks)
    hidden: int = 128  # H, units per layer (Transformer: C, the width of the residual stream)
    embedding: bool = True  # False feeds one-hot x_t, to show an embedding is a column lookup of W_xh
    embed_dim: int = 64  # E, width of the learned embedding when ``embedding`` is on (Transformer: unused, E = C)
    dropout: float = 0.0  # between stacked layers, training only (Transformer: on attention, residuals, embeddings)
    nonlinearity: str = "tanh"  # vanilla RNN only: "tanh" or "relu"
    forget_bias: float | None = None  # LSTM only: initial b_f = b_ih,f + b_hh,f; None keeps torch's uniform init
    n_head: int = 4  # Transformer, sLSTM, mLSTM, linear attention: h heads, each d = H / h wide
    block_size: int = 64  # Transformer only: the context, how many positions have an embedding P[t]

    def __post_init__(self):
        if self.vocab_size < 2:
            raise ValueError(f"a character model needs at least 2 distinct characters, got {self.vocab_size}")
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MODEL_KINDS)}, not {self.kind!r}")
        if self.layers < 1 or self.hidden < 1 or self.embed_dim < 1:
            raise ValueError("layers, hidden size and embedding width must all be at least 1")
        if self.kind == "transformer":
            check_transformer_shape(self.hidden, self.n_head, self.block_size, self.embedding)
        check_heads(self.kind, self.hidden, self.n_head)

    @property
    def input_size(self) -> int:
        """Width of x_t fed to the first recurrent layer (a Transformer's embeddings are C = hidden wide)."""
        if self.kind == "transformer":
            return self.hidden
        return self.embed_dim if self.embedding else self.vocab_size

    @property
    def carries_state(self) -> bool:
        """Whether the model carries a state from one chunk into the next: h_t (and c_t), not a Transformer."""
        return self.kind != "transformer"


def check_heads(kind: str, hidden: int, n_head: int) -> None:
    """ValueError in words unless an sLSTM's, mLSTM's or linear attention's width H splits into n_head heads."""
    if kind in HEADED_KINDS and (n_head < 1 or hidden % n_head):
        raise ValueError(f"the {kind_label(kind)}'s width H = {hidden} must divide evenly into {n_head} heads "
                         "(at least 1)")


def check_transformer_shape(hidden: int, n_head: int, block_size: int, embedding: bool = True) -> None:
    """ValueError in words unless C = hidden splits into n_head heads and the context is at least 1."""
    if n_head < 1 or block_size < 1:
        raise ValueError("a Transformer needs at least 1 attention head and a context of at least 1")
    if hidden % n_head:
        raise ValueError(f"the width C = {hidden} must divide evenly into {n_head} attention heads")
    if not embedding:
        raise ValueError("a Transformer reads a learned token embedding; one-hot input is for recurrent kinds")
