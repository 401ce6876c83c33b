"""The selective SSM: the scan and the step-by-step trace against a loop of Mamba's equations written here (Gu and
Dao 2023, Algorithm 2 with zero-order hold), forward and gradients; a carried state; what Δ_t selects."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.core.layer_kit import state_numel
from rnnviz.core.selective import Selective, SelectiveState
from tests.short_conv_reference import short_conv_loop

TIGHT = dict(rtol=1e-10, atol=1e-12)


def mamba_loop(layer: Selective, x, s, buffer=None):
    """Per channel c and state index j: Ā = exp(Δ_t,c A_cj), B̄u = Δ_t,c u_t,c B_t,j,
    s_t,cj = Ā s_{t−1},cj + B̄u, y_t,c = Σ_j s_t,cj C_t,j + D_c u_t,c, h_t,c = y_t,c · SiLU(z_t,c); u, Δ, B, C from
    the short convolution of x, z from x. Returns h (N, T, H) and the final s."""
    hidden, size = layer.hidden_size, layer.state_size
    x_conv = short_conv_loop(x, layer.conv.weight, layer.conv.bias, buffer)
    A = -torch.exp(layer.A_log)
    out = []
    for t in range(x.size(1)):
        pre = x_conv[:, t] @ layer.from_conv.weight.T + layer.from_conv.bias
        u, delta = pre[:, :hidden], F.softplus(pre[:, hidden : 2 * hidden])
        B, C = pre[:, 2 * hidden : 2 * hidden + size], pre[:, 2 * hidden + size :]
        z = x[:, t] @ layer.gate.weight.T + layer.gate.bias
        new = torch.empty_like(s)
        for c in range(hidden):
            for j in range(size):
                new[:, c, j] = torch.exp(delta[:, c] * A[c, j]) * s[:, c, j] + delta[:, c] * u[:, c] * B[:, j]
        s = new
        y = torch.stack([(s[:, c] * C).sum(-1) + layer.D[c] * u[:, c] for c in range(hidden)], dim=-1)
        out.append(y * z * torch.sigmoid(z))
    return torch.stack(out, dim=1), s


@pytest.mark.parametrize("carried", [False, True])
def test_scan_and_trace_equal_mambas_equations_forward_and_gradients(carried):
    torch.manual_seed(0)
    layer = Selective(3, 4, state_size=3, conv=3).double()
    with torch.no_grad():  # A and D away from their init, so that a swapped index would show
        layer.A_log.copy_(torch.randn(4, 3))
        layer.D.copy_(torch.randn(4))
    x = torch.randn(2, 7, 3, dtype=torch.float64, requires_grad=True)
    if carried:
        s0, buffer = torch.randn(2, 4, 3).double(), torch.randn(2, 2, 3).double()
        state = SelectiveState(s0, buffer)
    else:
        state, buffer, s0 = None, None, torch.zeros(2, 4, 3).double()
    reference, s_T = mamba_loop(layer, x, s0, buffer)
    out, final = layer(x, state)
    traced = layer.trace(x, state)
    for path, got in ((out, final), (traced.output, traced.final_state)):
        assert_close(path, reference, **TIGHT)
        assert_close(got.s, s_T, **TIGHT)
        assert_close(got.conv, x[:, -2:].detach(), **TIGHT)
    weights = torch.randn_like(reference)
    params = [x, layer.A_log, layer.D, layer.conv.weight, layer.from_conv.weight, layer.gate.weight]
    expected = torch.autograd.grad((reference * weights).sum(), params)
    for path in (out, traced.output):
        for got, want in zip(torch.autograd.grad((path * weights).sum(), params), expected):
            assert_close(got, want, **TIGHT)


def test_trace_records_delta_and_the_state_it_kept():
    """s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t u_t B_tᵀ, read off the recorded Δ, u, B and s, with A from its parameter."""
    torch.manual_seed(1)
    layer = Selective(3, 5, state_size=4, conv=2).double()
    trace = layer.trace(torch.randn(2, 6, 3, dtype=torch.float64))
    s, delta, u, B = trace["s"], trace["delta"], trace["u"], trace["B"]
    assert s.shape == (6, 2, 5, 4) and delta.shape == (6, 2, 5) and B.shape == (6, 2, 4)
    previous = torch.cat([torch.zeros_like(s[:1]), s[:-1]])
    A = -torch.exp(layer.A_log)
    kept = torch.exp(delta.unsqueeze(-1) * A) * previous
    assert_close(s, kept + (delta * u).unsqueeze(-1) * B.unsqueeze(-2), **TIGHT)
    assert (delta > 0).all()


def test_a_large_delta_forgets_and_a_small_one_keeps():
    """With Δ_t → 0 the state passes the token by (s_t = s_{t−1}); with Δ_t large it decays to nothing."""
    layer = Selective(2, 3, state_size=2, conv=0).double()
    s0 = torch.ones(1, 3, 2, dtype=torch.float64)
    x = torch.zeros(1, 1, 2, dtype=torch.float64)
    for bias, expected in ((-40.0, s0), (40.0, torch.zeros_like(s0))):
        with torch.no_grad():
            layer.from_conv.bias[3:6] = bias  # the Δ pre-activation: softplus(−40) ≈ 4e−18, softplus(40) = 40
            layer.from_conv.bias[6:] = 0.0  # B = 0: nothing is written
        _, final = layer(x, SelectiveState(s0, torch.zeros(1, 0, 2, dtype=torch.float64)))
        assert_close(final.s, expected, rtol=1e-9, atol=1e-12)


def test_init_follows_mamba():
    layer = Selective(4, 6, state_size=5)
    assert_close(-torch.exp(layer.A_log), -torch.arange(1.0, 6.0).repeat(6, 1))  # A = −[1, …, S] per channel
    delta = F.softplus(layer.from_conv.bias[6:12])
    assert ((delta >= 1e-3 * (1 - 1e-5)) & (delta <= 0.1 * (1 + 1e-5))).all()  # Δ at init in [0.001, 0.1]
    assert math.isclose(layer.D.sum().item(), 6.0)


def test_state_size_counted_by_hand():
    # s is H·S = 6·5, and the convolution's last K − 1 = 3 inputs of width D = 4
    assert state_numel(Selective(4, 6, state_size=5, conv=4).zero_state(1)) == 30 + 12
    assert state_numel(Selective(4, 6, state_size=5, conv=0).zero_state(2)) == 2 * 30


def test_a_bad_state_is_a_clear_error():
    with pytest.raises(ValueError, match="a selective SSM state is"):
        Selective(3, 4, state_size=2)(torch.zeros(1, 2, 3), (torch.zeros(1, 4, 3),))
