"""CharModel: the shared forward interface, the trace path, and one-hot input as a column lookup."""

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("embedding", [True, False])
def test_forward_shapes_loss_and_trace_agree(kind, embedding):
    model = CharModel(ModelConfig(vocab_size=7, kind=kind, layers=2, hidden=8, embedding=embedding, embed_dim=5))
    idx = torch.randint(0, 7, (3, 6))
    targets = torch.randint(0, 7, (3, 6))
    logits, loss, state = model(idx, targets)
    assert logits.shape == (3, 6, 7)
    assert_close(loss, F.cross_entropy(logits.reshape(-1, 7), targets.reshape(-1)))
    trace_logits, trace = model.trace(idx)
    assert_close(trace_logits, logits)
    h_n = state[0] if kind == "lstm" else state
    assert_close(trace.final_state[0] if kind == "lstm" else trace.final_state, h_n)


def test_state_carries_across_calls():
    model = CharModel(ModelConfig(vocab_size=5, kind="lstm", hidden=6))
    idx = torch.randint(0, 5, (2, 8))
    whole, _, _ = model(idx)
    _, _, state = model(idx[:, :5])
    second, _, _ = model(idx[:, 5:], state=state)
    assert_close(second, whole[:, 5:])


def test_one_hot_input_is_a_column_lookup_of_w_xh():
    model = CharModel(ModelConfig(vocab_size=4, kind="rnn", hidden=3, embedding=False))
    idx = torch.tensor([[2]])
    x = model.inputs(idx)  # (1, 1, 4)
    w_xh = model.rnn.weight_ih_l0  # (H, V)
    assert_close(x[0, 0] @ w_xh.T, w_xh[:, 2])


def test_parameter_count_matches_torch():
    model = CharModel(ModelConfig(vocab_size=10, kind="lstm", layers=2, hidden=16, embed_dim=8))
    expected = 10 * 8 + (4 * 16 * (8 + 16) + 8 * 16) + (4 * 16 * (16 + 16) + 8 * 16) + (16 * 10 + 10)
    assert model.num_parameters() == expected


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="2 distinct"):
        ModelConfig(vocab_size=1)
    with pytest.raises(ValueError, match="kind"):
        ModelConfig(vocab_size=5, kind="cnn")


def test_forget_bias_init_sets_b_f_and_leaves_other_gates():
    torch.manual_seed(3)
    plain = CharModel(ModelConfig(vocab_size=6, kind="lstm", layers=2, hidden=4))
    torch.manual_seed(3)
    model = CharModel(ModelConfig(vocab_size=6, kind="lstm", layers=2, hidden=4, forget_bias=1.0))
    for layer in range(2):
        b_ih, b_hh = getattr(model.rnn, f"bias_ih_l{layer}"), getattr(model.rnn, f"bias_hh_l{layer}")
        assert_close(b_ih[4:8] + b_hh[4:8], torch.ones(4))  # gates stacked (i, f, g, o)
        assert_close(b_ih[:4], getattr(plain.rnn, f"bias_ih_l{layer}")[:4])
        assert_close(b_hh[8:], getattr(plain.rnn, f"bias_hh_l{layer}")[8:])
    # f_t at the first step of a zero state is σ(W_if x_t + b_f): with zero input weights it is σ(1).
    model.rnn.weight_ih_l0.data.zero_()
    _, trace = model.trace(torch.tensor([[2]]))
    assert_close(trace["f"][0, 0], torch.full((1, 4), torch.sigmoid(torch.tensor(1.0)).item()))
