"""The recurrent layers are torch's modules built with our arguments, the trace path equals the fast path, and
state_dicts round-trip."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from rnnviz.core.recurrent import TORCH_CLASSES, TRACE_FIELDS, detach_state, make_recurrent

configs = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["rnn", "lstm", "gru"]),
        "nonlinearity": st.sampled_from(["tanh", "relu"]),
        "layers": st.integers(1, 3),
        "batch": st.integers(1, 4),
        "steps": st.integers(1, 7),
        "input_size": st.integers(1, 6),
        "hidden": st.integers(1, 8),
        "seed": st.integers(0, 10_000),
        "with_state": st.booleans(),
    }
)


def _build(cfg):
    torch.manual_seed(cfg["seed"])
    ours = make_recurrent(cfg["kind"], cfg["input_size"], cfg["hidden"], cfg["layers"], cfg["nonlinearity"])
    extra = {"nonlinearity": cfg["nonlinearity"]} if cfg["kind"] == "rnn" else {}
    ref = TORCH_CLASSES[cfg["kind"]](cfg["input_size"], cfg["hidden"], cfg["layers"], batch_first=True, **extra)
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(cfg["batch"], cfg["steps"], cfg["input_size"])
    state = None
    if cfg["with_state"]:
        h0 = torch.randn(cfg["layers"], cfg["batch"], cfg["hidden"])
        state = (h0, torch.randn_like(h0)) if cfg["kind"] == "lstm" else h0
    return ours, ref, x, state


def _flatten(state):
    return list(state) if isinstance(state, tuple) else [state]


def _grads(module, out, probe):
    module.zero_grad()
    (out * probe).sum().backward()
    return {name: p.grad.clone() for name, p in module.named_parameters()}


@settings(max_examples=40, deadline=None)
@given(configs)
def test_make_recurrent_builds_torchs_module_with_our_arguments_and_parameter_layout(cfg):
    """The fast path is torch's own ``forward`` (not overridden), so what can differ is how the module is built:
    its class, its constructor arguments, and its parameters' names, shapes and order. A wrong argument
    (batch_first, nonlinearity, layers) also shows in the outputs against a module built by hand."""
    ours, ref, x, state = _build(cfg)
    torch_class = TORCH_CLASSES[cfg["kind"]]
    assert isinstance(ours, torch_class) and type(ours).forward is torch_class.forward
    mode = {"lstm": "LSTM", "gru": "GRU"}.get(cfg["kind"], f"RNN_{cfg['nonlinearity'].upper()}")  # torch's names
    assert (ours.mode, ours.input_size, ours.hidden_size, ours.num_layers) == (
        mode, cfg["input_size"], cfg["hidden"], cfg["layers"])
    assert ours.batch_first and ours.bias and not ours.bidirectional and ours.dropout == 0.0 and ours.proj_size == 0
    layout = [(name, tuple(p.shape)) for name, p in ours.named_parameters()]
    assert layout == [(name, tuple(p.shape)) for name, p in ref.named_parameters()]
    out, final = ours(x, state)
    out_ref, final_ref = ref(x, state)
    assert_close(out, out_ref)
    for a, b in zip(_flatten(final), _flatten(final_ref)):
        assert_close(a, b)


@settings(max_examples=40, deadline=None)
@given(configs)
def test_trace_path_equals_fast_path_on_outputs_states_and_gradients(cfg):
    ours, _, x, state = _build(cfg)
    out, final = ours(x, state)
    trace = ours.trace(x, state)
    assert_close(trace.output, out)
    for a, b in zip(_flatten(trace.final_state), _flatten(final)):
        assert_close(a, b)
    for name in TRACE_FIELDS[cfg["kind"]]:
        assert trace[name].shape == (cfg["layers"], cfg["steps"], cfg["batch"], cfg["hidden"])
    probe = torch.randn_like(out)
    fast_grads = _grads(ours, out, probe)
    trace_grads = _grads(ours, ours.trace(x, state).output, probe)
    for name in fast_grads:
        assert_close(trace_grads[name], fast_grads[name])


def test_trace_records_h0_and_c0():
    lstm = make_recurrent("lstm", 3, 4, num_layers=2)
    h0, c0 = torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    trace = lstm.trace(torch.randn(5, 6, 3), (h0, c0))
    assert_close(trace.h0, h0)
    assert_close(trace.c0, c0)
    # The first step's cell state is built from c_0: c_1 = f_1 ⊙ c_0 + i_1 ⊙ g_1.
    assert_close(trace["c"][:, 0], trace["f"][:, 0] * c0 + trace["i"][:, 0] * trace["g"][:, 0])


def test_state_dict_round_trips_through_torch_modules():
    for kind, cls in TORCH_CLASSES.items():
        ours = make_recurrent(kind, 4, 6, num_layers=3)
        ref = cls(4, 6, 3, batch_first=True)
        ref.load_state_dict(ours.state_dict(), strict=True)
        back = make_recurrent(kind, 4, 6, num_layers=3)
        back.load_state_dict(ref.state_dict(), strict=True)
        for (name, a), (name_b, b) in zip(ours.state_dict().items(), back.state_dict().items()):
            assert name == name_b
            assert torch.equal(a, b)
        assert list(ours.state_dict()) == list(ref.state_dict())


def test_detach_state_keeps_values_and_cuts_graph():
    h = torch.randn(1, 2, 3, requires_grad=True)
    pair = (h * 2, h * 3)
    detached = detach_state(pair)
    assert all(not s.requires_grad for s in detached)
    assert_close(detached[0], pair[0])
    assert detach_state(None) is None


def test_bad_arguments_are_clear_errors():
    import pytest

    with pytest.raises(ValueError, match="kind"):
        make_recurrent("transformer", 2, 2)
    with pytest.raises(ValueError, match="at least 1"):
        make_recurrent("lstm", 2, 0)
    with pytest.raises(ValueError, match="nonlinearity"):
        make_recurrent("rnn", 2, 2, nonlinearity="sigmoid")
