"""xLSTM's sLSTM and mLSTM against loops of the paper's equations written here without the stabiliser (float64:
exp(ĩ) does not overflow at these sizes), forward and gradients; the mLSTM's parallel form against its recurrence;
a carried state and the stabiliser's m against the same loops."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.core.layer_kit import state_nbytes, state_numel
from rnnviz.core.state_stack import StateStack
from rnnviz.core.xlstm import MLSTM, SLSTM, MLSTMState, SLSTMState
from tests.short_conv_reference import short_conv_loop

TIGHT = dict(rtol=1e-10, atol=1e-12)


def slstm_loop(layer: SLSTM, x, h, c, n):
    """The sLSTM of Beck et al. (2024), eqs. 8–14, with R block-diagonal (one d × d block per gate and head) and
    σ forget gates; c and n are the paper's, unscaled. Returns h_t for every t, (N, T, H), and the final h, c, n."""
    hidden = layer.hidden_size
    r_full = torch.cat([torch.block_diag(*layer.weight_hh[g]) for g in range(4)])  # (4H, H), gate-major
    out = []
    for t in range(x.size(1)):
        pre = x[:, t] @ layer.weight_ih.T + h @ r_full.T + layer.bias
        i_pre, f_pre, z_pre, o_pre = pre.split(hidden, dim=-1)
        i, f = torch.exp(i_pre), torch.sigmoid(f_pre)
        c = f * c + i * torch.tanh(z_pre)
        n = f * n + i
        h = torch.sigmoid(o_pre) * c / n
        out.append(h)
    return torch.stack(out, dim=1), h, c, n


def mlstm_loop(layer: MLSTM, x, C, n, conv_buffer=None):
    """The mLSTM of Beck et al. (2024), eqs. 19–27 (σ forget gate, k scaled by 1/√d), after the short convolution,
    with C and n unscaled. Returns h_t for every t (N, T, H) and the final C, n."""
    hidden, heads, d = layer.hidden_size, layer.heads, layer.head_dim
    x_conv = short_conv_loop(x, layer.conv.weight, layer.conv.bias, conv_buffer)
    w_c, b_c = layer.from_conv.weight, layer.from_conv.bias
    w_x, b_x = layer.from_input.weight, layer.from_input.bias
    out = []
    for t in range(x.size(1)):
        pre = x_conv[:, t] @ w_c.T + b_c
        q = pre[:, :hidden].reshape(-1, heads, d)
        k = pre[:, hidden : 2 * hidden].reshape(-1, heads, d) / math.sqrt(d)
        i = torch.exp(pre[:, 2 * hidden : 2 * hidden + heads])  # (N, heads)
        f = torch.sigmoid(pre[:, 2 * hidden + heads :])
        v_o = x[:, t] @ w_x.T + b_x
        v, o = v_o[:, :hidden].reshape(-1, heads, d), torch.sigmoid(v_o[:, hidden:])
        C = f[..., None, None] * C + i[..., None, None] * torch.einsum("nha,nhb->nhab", v, k)
        n = f[..., None] * n + i[..., None] * k
        read = torch.einsum("nhab,nhb->nha", C, q)
        scale = torch.clamp((n * q).sum(-1).abs(), min=1.0)
        out.append(o * (read / scale[..., None]).reshape(-1, hidden))
    return torch.stack(out, dim=1), C, n


def _grads(output, weights, params):
    return torch.autograd.grad((output * weights).sum(), params)


# -- sLSTM ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("carried", [False, True])
def test_slstm_equals_the_papers_equations_forward_and_gradients(carried):
    torch.manual_seed(0)
    layer = SLSTM(3, 6, heads=2).double()
    x = torch.randn(2, 7, 3, dtype=torch.float64, requires_grad=True)
    zeros = torch.zeros(2, 6, dtype=torch.float64)
    if carried:  # a state as a trained model leaves it: n > 0, and the stabiliser m far from 0
        state = SLSTMState(torch.randn(2, 6).double(), torch.randn(2, 6).double(), torch.rand(2, 6).double() + 0.5,
                           3 * torch.randn(2, 6).double())
        # the paper's c and n are the stored ones times exp(m)
        h0, c0, n0 = state.h, state.c * state.m.exp(), state.n * state.m.exp()
    else:
        state, (h0, c0, n0) = None, (zeros, zeros, zeros)
    reference, h_T, c_T, n_T = slstm_loop(layer, x, h0, c0, n0)
    out, final = layer(x, state)
    traced = layer.trace(x, state)
    assert_close(out, reference, **TIGHT)
    assert_close(traced.output, reference, **TIGHT)
    assert_close(final.h, h_T, **TIGHT)
    assert_close(final.c * final.m.exp(), c_T, **TIGHT)
    assert_close(final.n * final.m.exp(), n_T, **TIGHT)
    weights = torch.randn_like(reference)
    params = [x, layer.weight_ih, layer.weight_hh, layer.bias]
    expected = _grads(reference, weights, params)
    for path in (out, traced.output):
        for got, want in zip(_grads(path, weights, params), expected):
            assert_close(got, want, **TIGHT)


def test_slstm_recurrent_matrix_is_block_diagonal_per_head():
    """A unit's gates read h_{t−1} of its own head only: changing head 0's h_0 leaves head 1's first step alone."""
    torch.manual_seed(1)
    layer = SLSTM(2, 6, heads=3)
    x = torch.randn(1, 1, 2)
    state = layer.zero_state(1)
    moved = SLSTMState(state.h.clone(), state.c, state.n, state.m)
    moved.h[0, :2] = 5.0  # head 0 is units 0–1
    out, _ = layer(x, state)
    out_moved, _ = layer(x, moved)
    assert not torch.allclose(out[..., :2], out_moved[..., :2])
    assert torch.equal(out[..., 2:], out_moved[..., 2:])


def test_slstm_stabiliser_keeps_float32_finite_where_exp_overflows():
    """ĩ near 120: exp(ĩ) is inf in float32, but the stabilised cell stays finite and equals the float64 loop."""
    torch.manual_seed(2)
    layer = SLSTM(3, 4, heads=2)
    with torch.no_grad():
        layer.bias[:4] = 120.0  # the input gate's bias: exp(120) ≈ 1.3e52 > float32's 3.4e38
    x = torch.randn(2, 9, 3)
    out, final = layer(x)
    assert torch.isfinite(out).all() and all(torch.isfinite(t).all() for t in final)
    zeros = torch.zeros(2, 4, dtype=torch.float64)
    reference, *_ = slstm_loop(layer.double(), x.double(), zeros, zeros, zeros)
    assert_close(out.double(), reference, rtol=1e-5, atol=1e-6)


# -- mLSTM ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("carried", [False, True])
def test_mlstm_both_forms_equal_the_papers_equations_forward_and_gradients(carried):
    torch.manual_seed(3)
    layer = MLSTM(3, 8, heads=2, conv=3).double()
    x = torch.randn(2, 9, 3, dtype=torch.float64, requires_grad=True)
    if carried:
        stored_C, stored_n = torch.randn(2, 2, 4, 4).double(), torch.randn(2, 2, 4).double()
        m0, buffer = 2 * torch.randn(2, 2).double(), torch.randn(2, 2, 3).double()
        state = MLSTMState(stored_C, stored_n, m0, buffer)
        C0, n0 = stored_C * m0.exp()[..., None, None], stored_n * m0.exp()[..., None]  # the paper's C, n
    else:
        state, buffer = None, None
        C0, n0 = torch.zeros(2, 2, 4, 4).double(), torch.zeros(2, 2, 4).double()
    reference, C_T, n_T = mlstm_loop(layer, x, C0, n0, buffer)
    out, final = layer(x, state)  # the parallel form
    traced = layer.trace(x, state)  # the recurrence
    assert_close(out, reference, **TIGHT)
    assert_close(traced.output, reference, **TIGHT)
    for got in (final, traced.final_state):
        assert_close(got.C * got.m.exp()[..., None, None], C_T, **TIGHT)
        assert_close(got.n * got.m.exp()[..., None], n_T, **TIGHT)
        assert_close(got.conv, x[:, -2:].detach(), **TIGHT)  # the last K − 1 = 2 inputs
    weights = torch.randn_like(reference)
    params = [x, layer.conv.weight, layer.from_conv.weight, layer.from_conv.bias, layer.from_input.weight]
    expected = _grads(reference, weights, params)
    for path in (out, traced.output):
        for got, want in zip(_grads(path, weights, params), expected):
            assert_close(got, want, **TIGHT)


def test_mlstm_chunks_with_the_carried_state_equal_one_pass():
    torch.manual_seed(4)
    layer = MLSTM(4, 8, heads=4, conv=4)
    x = torch.randn(3, 20, 4)
    whole, _ = layer(x)
    first, state = layer(x[:, :7])
    second, _ = layer(x[:, 7:], state)
    assert_close(torch.cat([first, second], dim=1), whole, rtol=1e-5, atol=1e-6)
    traced = layer.trace(x[:, 7:], state)  # the recurrence from the parallel form's state
    assert_close(traced.output, second, rtol=1e-5, atol=1e-6)


def test_mlstm_trace_records_the_memory_as_outer_products():
    """C_t − f′_t C_{t−1} is i′_t v_t k_tᵀ, a rank-one matrix, at every step; the normaliser follows k_t alike."""
    torch.manual_seed(5)
    layer = MLSTM(3, 8, heads=2, conv=2).double()
    trace = layer.trace(torch.randn(2, 6, 3, dtype=torch.float64))
    C, i, f, v, k = trace["C"], trace["i"], trace["f"], trace["v"], trace["k"]
    assert C.shape == (6, 2, 2, 4, 4) and trace["m"].shape == (6, 2, 2) and trace["h"].shape == (6, 2, 8)
    previous = torch.cat([torch.zeros_like(C[:1]), C[:-1]])
    written = C - f[..., None, None] * previous
    assert_close(written, i[..., None, None] * v.unsqueeze(-1) * k.unsqueeze(-2), **TIGHT)
    assert (torch.linalg.matrix_rank(written.reshape(-1, 4, 4)) == 1).all()
    assert ((i > 0) & (i <= 1)).all() and ((f > 0) & (f <= 1)).all()  # the stabilised gates


def test_mlstm_stabiliser_keeps_float32_finite_where_exp_overflows():
    torch.manual_seed(6)
    layer = MLSTM(3, 8, heads=2, conv=2)
    with torch.no_grad():
        layer.from_conv.bias[16:18] = 120.0  # b_i: exp(120) overflows float32
    x = torch.randn(2, 10, 3)
    out, _ = layer(x)
    traced = layer.trace(x)
    assert torch.isfinite(out).all() and torch.isfinite(traced.output).all()
    reference, _, _ = mlstm_loop(layer.double(), x.double(), torch.zeros(2, 2, 4, 4).double(),
                                 torch.zeros(2, 2, 4).double())
    assert_close(out.double(), reference, rtol=1e-4, atol=1e-5)
    assert_close(traced.output.double(), reference, rtol=1e-4, atol=1e-5)


# -- sizes and errors -------------------------------------------------------------------------------------------


def test_state_sizes_counted_by_hand():
    # sLSTM, H = 6: h, c, n, m of 6 each
    assert state_numel(SLSTM(3, 6, heads=2).zero_state(1)) == 4 * 6
    # mLSTM, H = 8 in 2 heads of d = 4, D = 3, K = 4: C 2·4·4 + n 2·4 + m 2 + convolution 3·3
    layer = MLSTM(3, 8, heads=2, conv=4)
    assert state_numel(layer.zero_state(1)) == 32 + 8 + 2 + 9
    assert state_nbytes(layer.zero_state(5)) == 5 * (32 + 8 + 2 + 9) * 4
    stack = StateStack("mlstm", 3, 8, layers=2, heads=2, conv=4)  # layer 2 reads H = 8: its buffer is 3·8
    assert stack.state_numel() == (32 + 8 + 2 + 9) + (32 + 8 + 2 + 24)
    assert stack.shape_label() == "2 × 8 mLSTM"


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="divide evenly into 4 heads"):
        MLSTM(3, 10, heads=4)
    layer = SLSTM(3, 4, heads=2)
    with pytest.raises(ValueError, match=r"shape \(N, T, 3\)"):
        layer(torch.zeros(2, 5, 4))
    with pytest.raises(ValueError, match="an sLSTM state is"):
        layer(torch.zeros(2, 5, 3), (torch.zeros(2, 4),) * 3)
    with pytest.raises(ValueError, match="an mLSTM state is"):
        MLSTM(3, 4, heads=2)(torch.zeros(1, 2, 3), MLSTMState(*(torch.zeros(1, 1) for _ in range(4))))


def test_sigmoid_forget_gate_bias_starts_open():
    layer = MLSTM(3, 8, heads=2)
    assert F.logsigmoid(layer.from_conv.bias[18:]).exp().min() > 0.95  # f = σ(b_f) with b_f in [3, 6]
