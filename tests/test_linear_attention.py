"""Causal linear attention: both forms against a loop of Katharopoulos et al. (2020)'s recurrence written here,
forward and gradients, with and without the normaliser; the parallel form against softmax-free attention weights;
a carried state; the state's size."""

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.core.layer_kit import state_numel
from rnnviz.core.linear_attention import LinearAttention, LinearAttentionState, feature_map
from tests.short_conv_reference import short_conv_loop

TIGHT = dict(rtol=1e-10, atol=1e-12)
EPS = 1e-6  # added to the normaliser, as in the authors' code (fast-transformers' LinearAttention)


def recurrence_loop(layer: LinearAttention, x, S, z, normalize, buffer=None):
    """S_t = S_{t−1} + v_t φ(k_t)ᵀ, z_t = z_{t−1} + φ(k_t), y_t = S_t φ(q_t) / (z_tᵀ φ(q_t) + ε) (eqs. 16–20 of the
    paper), φ = elu + 1, per head; q, k from the short convolution of x, v from x. Returns y (N, T, H), S, z."""
    hidden, heads, d = layer.hidden_size, layer.heads, layer.head_dim
    x_conv = short_conv_loop(x, layer.conv.weight, layer.conv.bias, buffer)
    out = []
    for t in range(x.size(1)):
        qk = x_conv[:, t] @ layer.query_key.weight.T + layer.query_key.bias
        phi_q = (F.elu(qk[:, :hidden]) + 1).reshape(-1, heads, d)
        phi_k = (F.elu(qk[:, hidden:]) + 1).reshape(-1, heads, d)
        v = (x[:, t] @ layer.value.weight.T + layer.value.bias).reshape(-1, heads, d)
        S = S + torch.einsum("nha,nhb->nhab", v, phi_k)
        z = z + phi_k
        y = torch.einsum("nhab,nhb->nha", S, phi_q)
        if normalize:
            y = y / ((z * phi_q).sum(-1, keepdim=True) + EPS)
        out.append(y.reshape(-1, hidden))
    return torch.stack(out, dim=1), S, z


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("carried", [False, True])
def test_both_forms_equal_the_recurrence_forward_and_gradients(normalize, carried):
    torch.manual_seed(0)
    layer = LinearAttention(3, 8, heads=2, conv=3, normalize=normalize).double()
    x = torch.randn(2, 9, 3, dtype=torch.float64, requires_grad=True)
    if carried:
        S0, z0 = torch.randn(2, 2, 4, 4).double(), torch.rand(2, 2, 4).double() + 1.0
        buffer = torch.randn(2, 2, 3).double()
        state = LinearAttentionState(S0, z0, buffer)
    else:
        state, buffer = None, None
        S0, z0 = torch.zeros(2, 2, 4, 4).double(), torch.zeros(2, 2, 4).double()
    reference, S_T, z_T = recurrence_loop(layer, x, S0, z0, normalize, buffer)
    out, final = layer(x, state)
    traced = layer.trace(x, state)
    for path, got in ((out, final), (traced.output, traced.final_state)):
        assert_close(path, reference, **TIGHT)
        assert_close(got.S, S_T, **TIGHT)
        assert_close(got.z, z_T, **TIGHT)
    weights = torch.randn_like(reference)
    params = [x, layer.conv.weight, layer.query_key.weight, layer.value.weight, layer.value.bias]
    expected = torch.autograd.grad((reference * weights).sum(), params)
    for path in (out, traced.output):
        for got, want in zip(torch.autograd.grad((path * weights).sum(), params), expected):
            assert_close(got, want, **TIGHT)


def test_normalised_read_is_attention_with_phi_in_place_of_exp():
    """From a zero state, y_t = Σ_{s≤t} a_ts v_s with a_ts = φ(q_t)·φ(k_s) / (Σ_{s′≤t} φ(q_t)·φ(k_s′) + ε): weights
    that sum to 1 over the past (less ε), as softmax attention's do."""
    torch.manual_seed(1)
    layer = LinearAttention(4, 4, heads=1, conv=0).double()
    x = torch.randn(1, 6, 4, dtype=torch.float64)
    phi_q = F.elu(x @ layer.query_key.weight[:4].T + layer.query_key.bias[:4]) + 1
    phi_k = F.elu(x @ layer.query_key.weight[4:].T + layer.query_key.bias[4:]) + 1
    v = x @ layer.value.weight.T + layer.value.bias
    scores = (phi_q[0] @ phi_k[0].T).tril()  # (T, T), 0 where s > t
    weights = scores / (scores.sum(-1, keepdim=True) + EPS)
    assert_close(layer(x)[0][0], weights @ v[0], **TIGHT)


def test_feature_map_is_elu_plus_one_and_never_rounds_to_zero():
    a = torch.linspace(-15, 5, 41, dtype=torch.float64)
    assert_close(feature_map(a), F.elu(a) + 1, **TIGHT)
    far = torch.tensor([-30.0, -80.0])  # elu(a) + 1 is exactly 0 here in float32
    assert (F.elu(far) + 1 == 0).all() and (feature_map(far) > 0).all()


def test_read_and_its_gradient_stay_finite_where_keys_and_queries_are_far_negative():
    """φ(q), φ(k) near exp(−60): their products, the denominator, are exp(−120), 0 in float32, as are the
    numerator's; the ε of the read keeps both passes finite (it ended a training run at lr 10⁻² in NaN)."""
    torch.manual_seed(2)
    layer = LinearAttention(3, 4, heads=1, conv=0)
    with torch.no_grad():
        layer.query_key.bias.fill_(-60.0)
    x = (0.1 * torch.randn(2, 8, 3)).requires_grad_()
    for path in (layer(x)[0], layer.trace(x).output):
        assert torch.isfinite(path).all()
        (grad,) = torch.autograd.grad(path.sum(), x)
        assert torch.isfinite(grad).all()


def test_state_size_counted_by_hand_and_fixed_in_t():
    layer = LinearAttention(5, 8, heads=2, conv=4)
    # S 2·4·4 + z 2·4 + the convolution's last 3 inputs of width 5
    assert state_numel(layer.zero_state(1)) == 32 + 8 + 15
    _, short = layer(torch.randn(1, 3, 5))
    _, long = layer(torch.randn(1, 300, 5))
    assert state_numel(short) == state_numel(long) == 55


def test_a_bad_state_is_a_clear_error():
    layer = LinearAttention(3, 4, heads=2)
    with pytest.raises(ValueError, match="a linear attention state is"):
        layer(torch.zeros(1, 2, 3), (torch.zeros(1, 2, 2, 2), torch.zeros(1, 2, 2)))
