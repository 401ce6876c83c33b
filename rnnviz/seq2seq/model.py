"""An encoder–decoder LSTM, joined by a fixed context or by attention (Cho et al. 2014; Bahdanau et al. 2015).

Encoder: a bidirectional LSTM (``RecurrentLSTM``, torch's ``nn.LSTM`` with ``bidirectional=True``) over the embedded
input x_1 … x_T, giving h_j = [h→_j; h←_j] (N, T, 2H_e) and the final states h→_T, h←_1 (and their cells).
Both decoders start from the same bridge of those finals (a linear c_0, as the captioner's h₀ join found):

    s_0 = tanh(W_h [h→_T; h←_1] + b_h),   c_0 = W_c [c→_T; c←_1] + b_c

Decoder: one LSTM layer (``make_recurrent``), stepped token by token through ``cells.lstm_cell`` on its own
``weight_ih_l0`` … so every state can be traced; the fixed join trains through torch's fused kernel on the same weights.

- **fixed**: s_i = LSTM(E y_{i−1}, s_{i−1}),  p(y_i) = softmax(W_o s_i + b_o). It reads nothing after s_0.
- **attention** (Bahdanau's additive): the state before the step queries every encoder state,
      e_ij = v_a · tanh(W_a s_{i−1} + U_a h_j + b_a),  α_ij = softmax_j(e_ij) over the real positions (0 on <PAD>),
      ctx_i = Σ_j α_ij h_j,  s_i = LSTM([E y_{i−1}; ctx_i], s_{i−1}),  p(y_i) = softmax(W_o [s_i; ctx_i] + b_o).
  Why additive with s_{i−1}: the alignment is decided before the token is written, as in the paper's Figure 3, so row
  i of the heatmap is exactly what the decoder looked at to write y_i; Luong's dot product on s_i would need the
  context after the step.

``init_pair`` draws both from one seed with every shared weight equal; the trainer steps both on the same batches.
Shapes: src (N, T_in) ids with lengths (N,); decoder inputs and targets (N, T_out).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from rnnviz.core.cells import lstm_cell
from rnnviz.core.recurrent import RecurrentLSTM, make_recurrent
from rnnviz.seq2seq import task

JOINS = {"fixed": "fixed context: the decoder starts from the encoder's final states and reads nothing else",
         "attention": "Bahdanau attention over every encoder state at every output step"}


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Task, architecture and training of one pair; hashable, so it keys caches."""

    join: str = "attention"  # "fixed" or "attention" (init_pair makes both)
    alphabet_size: int = 26  # the letters a… of the task
    train_min: int = 1  # shortest training string
    train_max: int = 20  # longest training string (L); the model reads up to 2L
    embed: int = 32  # token embedding size (x_t, y_t)
    enc_hidden: int = 64  # encoder LSTM units per direction (H_e)
    dec_hidden: int = 128  # decoder LSTM units (H_d)
    attn: int = 64  # size of the additive attention's hidden layer (A)
    steps: int = 400  # optimizer steps (about a minute for both on 2 cores)
    batch: int = 64  # strings per step
    lr: float = 3e-3  # Adam, cosine decay to lr/10
    clip: float = 1.0  # gradient-norm clip
    seed: int = 0  # weights and batches

    @property
    def letters(self) -> str:
        return task.alphabet(self.alphabet_size)

    @property
    def max_input(self) -> int:
        """The longest input the model accepts: twice the longest training string."""
        return 2 * self.train_max

    def validate(self) -> Seq2SeqConfig:
        if self.join not in JOINS:
            raise ValueError(f"join must be one of {', '.join(JOINS)}, not {self.join!r}")
        task.alphabet(self.alphabet_size)
        for name in ("train_min", "embed", "enc_hidden", "dec_hidden", "attn", "steps", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.train_max < self.train_min:
            raise ValueError(f"train_max ({self.train_max}) must be at least train_min ({self.train_min})")
        if not self.lr > 0:
            raise ValueError(f"The learning rate must be positive, not {self.lr}")
        return self


@dataclass(eq=False)
class Memory:
    """What the encoder hands the decoder."""

    states: Tensor  # (N, T_in, 2H_e): h_j = [h→_j; h←_j], zeros on <PAD>
    mask: Tensor  # (N, T_in) bool: True on real positions
    final_h: Tensor  # (N, 2H_e): [h→_T; h←_1]
    final_c: Tensor  # (N, 2H_e): [c→_T; c←_1]
    keys: Tensor | None  # (N, T_in, A): U_a h_j + b_a, for the attention join

    def select(self, rows: Tensor) -> Memory:
        """The memory of some rows (beam search)."""
        keys = None if self.keys is None else self.keys[rows]
        return Memory(self.states[rows], self.mask[rows], self.final_h[rows], self.final_c[rows], keys)


@dataclass(eq=False)
class Output:
    """A teacher-forced run."""

    logits: Tensor  # (N, T_out, V)
    loss: Tensor | None  # mean cross-entropy over non-<PAD> targets
    attention: Tensor | None  # (N, T_out, T_in): α_ij, None for the fixed join
    states: Tensor  # (N, T_out, H_d): the decoder's s_i


State = tuple[Tensor, Tensor]  # (s, c), each (N, H_d)


class Seq2Seq(nn.Module):
    """Bidirectional LSTM encoder → LSTM decoder, joined by a fixed context or by attention (module docstring)."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config.validate()
        c = config
        vocab = len(task.vocab(c.letters))
        both = 2 * c.enc_hidden
        self.embed = nn.Embedding(vocab, c.embed, padding_idx=task.PAD_ID)  # E, shared by encoder and decoder
        self.encoder = RecurrentLSTM(c.embed, c.enc_hidden, batch_first=True, bidirectional=True)
        self.init_h = nn.Linear(both, c.dec_hidden)  # W_h, b_h of s_0
        self.init_c = nn.Linear(both, c.dec_hidden)  # W_c, b_c of c_0
        attention = c.join == "attention"
        self.decoder = make_recurrent("lstm", c.embed + (both if attention else 0), c.dec_hidden)
        self.attn_query = nn.Linear(c.dec_hidden, c.attn, bias=False) if attention else None  # W_a
        self.attn_key = nn.Linear(both, c.attn) if attention else None  # U_a, b_a
        self.attn_score = nn.Linear(c.attn, 1, bias=False) if attention else None  # v_a
        self.out = nn.Linear(c.dec_hidden + (both if attention else 0), vocab)  # W_o, b_o

    @property
    def join(self) -> str:
        return self.config.join

    @property
    def letters(self) -> str:
        return self.config.letters

    def encode(self, src: Tensor, lengths: Tensor) -> Memory:
        """The encoder's states for src (N, T_in) with lengths (N,); padding is skipped by packing."""
        if src.dim() != 2 or lengths.shape != src.shape[:1]:
            raise ValueError(f"src must be (N, T_in) with lengths (N,), not {tuple(src.shape)}, {tuple(lengths.shape)}")
        if int(lengths.min()) < 1 or int(lengths.max()) > src.size(1):
            raise ValueError(f"lengths must be in 1..{src.size(1)}")
        packed = pack_padded_sequence(self.embed(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, c_n) = self.encoder(packed)  # h_n, c_n: (2, N, H_e), forward then backward
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))  # (N, T_in, 2H_e)
        mask = torch.arange(src.size(1))[None] < lengths[:, None]  # (N, T_in)
        keys = self.attn_key(states) if self.attn_key is not None else None  # (N, T_in, A)
        return Memory(states, mask, torch.cat([h_n[0], h_n[1]], -1), torch.cat([c_n[0], c_n[1]], -1), keys)

    def initial_state(self, memory: Memory) -> State:
        """(s_0, c_0), each (N, H_d), from the encoder's final states only."""
        return torch.tanh(self.init_h(memory.final_h)), self.init_c(memory.final_c)

    def attend(self, s_prev: Tensor, memory: Memory) -> tuple[Tensor, Tensor]:
        """(α (N, T_in), ctx (N, 2H_e)) for the state before the step, s_prev (N, H_d); α is 0 on <PAD>."""
        e = self.attn_score(torch.tanh(self.attn_query(s_prev)[:, None] + memory.keys))[..., 0]  # (N, T_in)
        alpha = torch.softmax(e.masked_fill(~memory.mask, float("-inf")), dim=-1)  # (N, T_in)
        return alpha, torch.bmm(alpha[:, None], memory.states)[:, 0]

    def step(self, tokens: Tensor, state: State, memory: Memory) -> tuple[Tensor, State, Tensor | None]:
        """One decoding step for tokens (N,): (logits (N, V), new (s, c), α (N, T_in) or None)."""
        x = self.embed(tokens)  # (N, E)
        alpha = ctx = None
        if self.attn_key is not None:
            alpha, ctx = self.attend(state[0], memory)
            x = torch.cat([x, ctx], -1)  # (N, E + 2H_e)
        cell = lstm_cell(x, state, self.decoder.layer_weights(0))
        out = cell.h_t if ctx is None else torch.cat([cell.h_t, ctx], -1)
        return self.out(out), (cell.h_t, cell.c_t), alpha

    def forward(self, src: Tensor, lengths: Tensor, tgt_in: Tensor, targets: Tensor | None = None) -> Output:
        """Teacher forcing: decoder inputs tgt_in (N, T_out) after <START>; loss against targets when given."""
        memory = self.encode(src, lengths)
        s0, c0 = self.initial_state(memory)
        if self.attn_key is None:  # the fixed join reads nothing per step: torch's fused LSTM, same weights
            states, _ = self.decoder(self.embed(tgt_in), (s0[None].contiguous(), c0[None].contiguous()))
            logits, attention = self.out(states), None  # (N, T_out, V)
        else:  # step() unrolled, with E y and W_o outside the loop (tests check it equals step())
            weights = self.decoder.layer_weights(0)
            x = self.embed(tgt_in)  # (N, T_out, E)
            state, alphas, ctxs, hs = (s0, c0), [], [], []
            for i in range(tgt_in.size(1)):
                alpha, ctx = self.attend(state[0], memory)
                cell = lstm_cell(torch.cat([x[:, i], ctx], -1), state, weights)
                state = (cell.h_t, cell.c_t)
                alphas.append(alpha)
                ctxs.append(ctx)
                hs.append(cell.h_t)
            attention, states = torch.stack(alphas, 1), torch.stack(hs, 1)  # (N, T_out, T_in), (N, T_out, H_d)
            logits = self.out(torch.cat([states, torch.stack(ctxs, 1)], -1))  # (N, T_out, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=task.PAD_ID)
        return Output(logits, loss, attention, states)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def init_pair(config: Seq2SeqConfig) -> dict[str, Seq2Seq]:
    """Both joins from ``config.seed`` with every shared weight equal: the attention model is drawn first; the fixed
    model copies its E, encoder, bridge, W_hh and biases, the y columns of W_ih and the s columns of W_o."""
    from dataclasses import replace

    torch.manual_seed(config.seed)
    attention = Seq2Seq(replace(config, join="attention"))
    fixed = Seq2Seq(replace(config, join="fixed"))
    shared = attention.state_dict()
    with torch.no_grad():
        for name, tensor in fixed.state_dict().items():
            if name in shared:
                tensor.copy_(shared[name][tuple(slice(0, n) for n in tensor.shape)])
    return {"fixed": fixed, "attention": attention}
