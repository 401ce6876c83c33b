"""cells.py against torch's own single-step cells, with copied weights."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from rnnviz.core.cells import CellWeights, gru_cell, lstm_cell, rnn_cell


def _weights(cell: nn.Module) -> CellWeights:
    return CellWeights(cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_matches_torch(nonlinearity):
    ref = nn.RNNCell(5, 4, nonlinearity=nonlinearity)
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    step = rnn_cell(x, h, _weights(ref), nonlinearity)
    assert_close(step.h_t, ref(x, h))
    assert_close(step.a_t, x @ ref.weight_ih.T + ref.bias_ih + h @ ref.weight_hh.T + ref.bias_hh)


def test_lstm_cell_matches_torch_and_its_own_equations():
    ref = nn.LSTMCell(5, 4)
    x, h, c = torch.randn(3, 5), torch.randn(3, 4), torch.randn(3, 4)
    step = lstm_cell(x, (h, c), _weights(ref))
    h_ref, c_ref = ref(x, (h, c))
    assert_close(step.h_t, h_ref)
    assert_close(step.c_t, c_ref)
    assert_close(step.c_t, step.f_t * c + step.i_t * step.g_t)
    assert_close(step.h_t, step.o_t * torch.tanh(step.c_t))
    for gate in (step.i_t, step.f_t, step.o_t):
        assert ((gate > 0) & (gate < 1)).all()


def test_gru_cell_matches_torch():
    ref = nn.GRUCell(5, 4)
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    step = gru_cell(x, h, _weights(ref))
    assert_close(step.h_t, ref(x, h))
    assert_close(step.h_t, (1 - step.z_t) * step.n_t + step.z_t * h)


def test_relu_rnn_cell_by_hand():
    weights = CellWeights(torch.tensor([[1.0], [-1.0]]), torch.eye(2))
    step = rnn_cell(torch.tensor([[2.0]]), torch.tensor([[0.5, 0.5]]), weights, "relu")
    assert step.a_t.tolist() == [[2.5, -1.5]]
    assert step.h_t.tolist() == [[2.5, 0.0]]


def test_unknown_nonlinearity_is_a_clear_error():
    weights = CellWeights(torch.ones(1, 1), torch.ones(1, 1))
    with pytest.raises(ValueError, match="tanh"):
        rnn_cell(torch.ones(1, 1), torch.ones(1, 1), weights, "sigmoid")
