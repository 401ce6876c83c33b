"""Pure one-step functions for the vanilla RNN, LSTM and GRU cells.

Each cell takes (x_t, state, weights) and returns a named tuple holding every intermediate, so that pages
can show the numbers and tests can compare them with torch. Weights use torch's layout: W_ih is
(G·H, D) and W_hh is (G·H, H), with the G gate blocks stacked in torch's order (LSTM: i, f, g, o;
GRU: r, z, n). Shapes: x_t (N, D), h_{t-1} and c_{t-1} (N, H).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class CellWeights(NamedTuple):
    """One layer's parameters in torch's layout; biases may be None."""

    w_ih: Tensor  # (G·H, D)
    w_hh: Tensor  # (G·H, H)
    b_ih: Tensor | None = None  # (G·H,)
    b_hh: Tensor | None = None  # (G·H,)


class RNNStep(NamedTuple):
    """Intermediates of one vanilla RNN step."""

    a_t: Tensor  # (N, H) pre-activation W_ih x_t + b_ih + W_hh h_{t-1} + b_hh
    h_t: Tensor  # (N, H)


class LSTMStep(NamedTuple):
    """Intermediates of one LSTM step."""

    i_t: Tensor  # (N, H) input gate
    f_t: Tensor  # (N, H) forget gate
    g_t: Tensor  # (N, H) candidate
    o_t: Tensor  # (N, H) output gate
    c_t: Tensor  # (N, H) cell state
    tanh_c_t: Tensor  # (N, H)
    h_t: Tensor  # (N, H)


class GRUStep(NamedTuple):
    """Intermediates of one GRU step."""

    r_t: Tensor  # (N, H) reset gate
    z_t: Tensor  # (N, H) update gate
    n_t: Tensor  # (N, H) candidate
    h_t: Tensor  # (N, H)


NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


def _affine(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """x Wᵀ + b, the product torch's cells use."""
    out = x @ w.t()
    return out if b is None else out + b


def rnn_cell(x_t: Tensor, h_prev: Tensor, weights: CellWeights, nonlinearity: str = "tanh") -> RNNStep:
    """One Elman RNN step.

    a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh
    h_t = φ(a_t),  φ ∈ {tanh, ReLU}
    """
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}")
    a_t = _affine(x_t, weights.w_ih, weights.b_ih) + _affine(h_prev, weights.w_hh, weights.b_hh)  # (N, H)
    return RNNStep(a_t=a_t, h_t=NONLINEARITIES[nonlinearity](a_t))


def lstm_cell(x_t: Tensor, state: tuple[Tensor, Tensor], weights: CellWeights) -> LSTMStep:
    """One LSTM step; state is (h_{t-1}, c_{t-1}).

    [i_t; f_t; g_t; o_t] = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh, then
    i_t = σ(·), f_t = σ(·), g_t = tanh(·), o_t = σ(·)
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t
    h_t = o_t ⊙ tanh(c_t)
    """
    h_prev, c_prev = state
    gates = _affine(x_t, weights.w_ih, weights.b_ih) + _affine(h_prev, weights.w_hh, weights.b_hh)  # (N, 4H)
    i_pre, f_pre, g_pre, o_pre = gates.chunk(4, dim=-1)
    i_t, f_t, g_t, o_t = torch.sigmoid(i_pre), torch.sigmoid(f_pre), torch.tanh(g_pre), torch.sigmoid(o_pre)
    c_t = f_t * c_prev + i_t * g_t
    tanh_c_t = torch.tanh(c_t)
    return LSTMStep(i_t=i_t, f_t=f_t, g_t=g_t, o_t=o_t, c_t=c_t, tanh_c_t=tanh_c_t, h_t=o_t * tanh_c_t)


def gru_cell(x_t: Tensor, h_prev: Tensor, weights: CellWeights) -> GRUStep:
    """One GRU step, in torch's convention (the reset gate scales W_hn h_{t-1} + b_hn).

    r_t = σ(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = σ(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t-1} + b_hn))
    h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t-1}
    """
    gi = _affine(x_t, weights.w_ih, weights.b_ih)  # (N, 3H)
    gh = _affine(h_prev, weights.w_hh, weights.b_hh)  # (N, 3H)
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r_t = torch.sigmoid(i_r + h_r)
    z_t = torch.sigmoid(i_z + h_z)
    n_t = torch.tanh(i_n + r_t * h_n)
    return GRUStep(r_t=r_t, z_t=z_t, n_t=n_t, h_t=(1 - z_t) * n_t + z_t * h_prev)
