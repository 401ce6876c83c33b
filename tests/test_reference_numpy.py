"""The NumPy teaching implementation agrees with torch's fused modules."""

import numpy as np
import pytest
import torch
from torch import nn

from rnnviz.core import reference_numpy as ref


def _np(t):
    return t.detach().double().numpy()


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_numpy_rnn_equals_torch(nonlinearity):
    rnn = nn.RNN(3, 5, batch_first=True, nonlinearity=nonlinearity)
    x, h0 = torch.randn(2, 7, 3), torch.randn(1, 2, 5)
    out, h_n = rnn(x, h0)
    out_np, h_np = ref.rnn_forward(_np(x), _np(h0[0]), *(_np(p) for p in rnn.parameters()), nonlinearity)
    np.testing.assert_allclose(out_np, _np(out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_np, _np(h_n[0]), rtol=1e-5, atol=1e-6)


def test_numpy_lstm_equals_torch():
    lstm = nn.LSTM(3, 5, batch_first=True)
    x, h0, c0 = torch.randn(2, 7, 3), torch.randn(1, 2, 5), torch.randn(1, 2, 5)
    out, (h_n, c_n) = lstm(x, (h0, c0))
    params = [_np(p) for p in lstm.parameters()]  # W_ih, W_hh, b_ih, b_hh
    out_np, h_np, c_np = ref.lstm_forward(_np(x), _np(h0[0]), _np(c0[0]), *params)
    np.testing.assert_allclose(out_np, _np(out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_np, _np(h_n[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_np, _np(c_n[0]), rtol=1e-5, atol=1e-6)


def test_sigmoid_is_finite_for_large_inputs():
    assert np.all(np.isfinite(ref.sigmoid(np.array([-1e4, 0.0, 1e4]))))
    np.testing.assert_allclose(ref.sigmoid(np.array([0.0])), [0.5])
