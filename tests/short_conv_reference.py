"""The short causal convolution of rnnviz.core.layer_kit written out as a loop, for the kinds' equation tests."""

import torch
import torch.nn.functional as F


def short_conv_loop(x, weight, bias, buffer=None):
    """x̃_t = SiLU(Σ_{j<K} w_j ⊙ x_{t−(K−1)+j} + b), with the K − 1 inputs before x_1 from ``buffer`` (zeros if None).
    x (N, T, D), weight (D, K), bias (D,) → (N, T, D)."""
    n, t_len, d = x.shape
    width = weight.size(1)
    before = torch.zeros(n, width - 1, d, dtype=x.dtype) if buffer is None else buffer
    history = [before[:, j] for j in range(width - 1)] + [x[:, t] for t in range(t_len)]
    out = []
    for t in range(t_len):
        window = history[t : t + width]  # x_{t−K+1} … x_t, oldest first
        out.append(F.silu(sum(weight[:, j] * window[j] for j in range(width)) + bias))
    return torch.stack(out, dim=1)
