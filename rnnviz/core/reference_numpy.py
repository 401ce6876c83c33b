"""The RNN and LSTM forward passes unrolled in plain NumPy, for teaching: every line is one equation.

Weights use torch's layout (W_ih (G·H, D), W_hh (G·H, H), LSTM gates stacked i, f, g, o), so the
parameters of ``nn.RNN`` / ``nn.LSTM`` can be passed in as ``.numpy()`` arrays. Inputs are (N, T, D).
"""

from __future__ import annotations

import numpy as np


def sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1 / (1 + e^(−x)), written to stay finite for large |x|."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def rnn_forward(x, h0, w_ih, w_hh, b_ih, b_hh, nonlinearity="tanh"):
    """h_t = φ(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) for t = 1…T; returns all h_t (N, T, H) and h_T."""
    phi = np.tanh if nonlinearity == "tanh" else (lambda a: np.maximum(a, 0.0))
    h = h0  # (N, H)
    outputs = []
    for t in range(x.shape[1]):
        a_t = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh  # (N, H)
        h = phi(a_t)
        outputs.append(h)
    return np.stack(outputs, axis=1), h


def lstm_forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    """The LSTM recurrence; returns all h_t (N, T, H), h_T and c_T.

    i_t, f_t, o_t = σ(·), g_t = tanh(·) from W_ih x_t + b_ih + W_hh h_{t-1} + b_hh
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t,  h_t = o_t ⊙ tanh(c_t)
    """
    h, c = h0, c0  # (N, H)
    hidden = h0.shape[-1]
    outputs = []
    for t in range(x.shape[1]):
        gates = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh  # (N, 4H)
        i_t = sigmoid(gates[:, 0 * hidden : 1 * hidden])
        f_t = sigmoid(gates[:, 1 * hidden : 2 * hidden])
        g_t = np.tanh(gates[:, 2 * hidden : 3 * hidden])
        o_t = sigmoid(gates[:, 3 * hidden : 4 * hidden])
        c = f_t * c + i_t * g_t
        h = o_t * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c
