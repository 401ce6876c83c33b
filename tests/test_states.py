"""States from a file without a model (rnnviz.interpret.states): a shipped model's trace written as .npy, .npz and
HDF5 and read back equal, ranked the same; each refusal's message; the circular-shift baseline against hand
constructions."""

import io
import zipfile

import h5py
import numpy as np
import pytest
import torch

from rnnviz.charlm.checkpoint import load_checkpoint
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.core.charmodel import CharModel
from rnnviz.core.config import ModelConfig
from rnnviz.interpret.finder import (
    QUANTITIES,
    QUANTITY_LABELS,
    CellId,
    CellTrace,
    correlations,
    rank_cells,
    trace_cells,
)
from rnnviz.interpret.states import StatesError, read_states, shifted_trace, states_file_bytes
from rnnviz.interpret.textfeatures import feature_tracks

CODE = '''def parse(line, sep=","):
    """Split a line into fields (quoted ones kept whole)."""
    fields, quoted = [], False
    for part in line.split(sep):
        if quoted:
            fields[-1] += sep + part
        else:
            fields.append(part)
        quoted = part.count('"') % 2 == 1 if not quoted else part.count('"') % 2 == 0
    return [f.strip() for f in fields]  # no empty names

result = parse('a, "b, c", d[0]')
'''
T = 50  # characters of the small hand-made texts below


@pytest.fixture(scope="module")
def shipped_trace() -> CellTrace:
    checkpoint = load_checkpoint(MODELS_DIR / "lstm-python-stdlib.pt")
    return trace_cells(checkpoint.model, checkpoint.vocab.encode(CODE))


@pytest.fixture(scope="module")
def two_layer_trace() -> CellTrace:
    torch.manual_seed(0)
    model = CharModel(ModelConfig(vocab_size=7, kind="gru", layers=2, hidden=6, embed_dim=3))
    return trace_cells(model, torch.randint(0, 7, (80,)))


def npy(array, allow_pickle=False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def h5(**datasets) -> bytes:
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        for name, value in datasets.items():
            handle[name] = value
    return buffer.getvalue()


def refusal(data: bytes, filename: str = "states.npy", text_length: int = T, **kwargs) -> str:
    with pytest.raises(StatesError) as caught:
        read_states(data, filename, text_length, **kwargs)
    return str(caught.value)


def noise(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


# --- round trips --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["npy", "npz", "h5"])
def test_a_shipped_models_states_read_back_equal_and_rank_the_same(shipped_trace, fmt):
    # An .npy holds one array; its name (the file's stem) "h" keeps it the quantity h.
    imported = read_states(states_file_bytes(shipped_trace, fmt), f"h.{fmt}", len(CODE))
    trace = imported.trace()
    assert trace.kind == "states" and trace.length == len(CODE)
    expected = ("h",) if fmt == "npy" else QUANTITIES["lstm"]
    assert trace.quantities == expected
    original = shipped_trace.values[[shipped_trace.quantities.index(q) for q in expected]]
    np.testing.assert_array_equal(trace.values, original)
    assert trace.values.dtype == np.float32 and not trace.values.flags.writeable
    assert trace.next_ids.shape == trace.next_probs.shape == (len(CODE), 0)
    if fmt != "npy":
        assert trace.values is imported.block[1]  # the datasets' one block, not a second copy

    tracks = feature_tracks(CODE, "code")
    if fmt == "npy":  # only h: rank the original's h alone
        shipped_trace = CellTrace("lstm", ("h",), shipped_trace.values[:1], shipped_trace.next_ids,
                                  shipped_trace.next_probs)
    ours, theirs = rank_cells(trace, tracks), rank_cells(shipped_trace, tracks)
    for name in tracks:
        for mine, original in ((ours[name].by_correlation, theirs[name].by_correlation),
                               (ours[name].by_accuracy, theirs[name].by_accuracy)):
            assert [(c.cell, c.r, c.accuracy) for c in mine] == [(c.cell, c.r, c.accuracy) for c in original]
    assert abs(ours["string"].best.r) > 0.5  # a real model's string cell, not an empty comparison


@pytest.mark.parametrize("fmt", ["npy", "npz", "h5"])
def test_layers_round_trip_as_layers_t_h(two_layer_trace, fmt):
    data = states_file_bytes(two_layer_trace, fmt)
    imported = read_states(data, "states.bin", two_layer_trace.length)  # the magic tells the format, not the name
    assert imported.format == fmt
    trace = imported.trace()
    assert trace.quantities == (("s",) if fmt == "npy" else QUANTITIES["gru"])  # "states.bin" names no quantity
    np.testing.assert_array_equal(trace.values, two_layer_trace.values[:1] if fmt == "npy" else two_layer_trace.values)
    assert trace.values.shape[1:] == (2, 80, 6)


def test_one_layer_is_written_as_t_h_as_lstmvis_reads_it(shipped_trace):
    with h5py.File(io.BytesIO(states_file_bytes(shipped_trace, "h5")), "r") as handle:
        assert sorted(handle) == sorted(QUANTITIES["lstm"])
        assert handle["c"].shape == (len(CODE), 256) and handle["c"].dtype == np.float32
    assert np.load(io.BytesIO(states_file_bytes(shipped_trace, "npy", quantity="c"))).shape == (len(CODE), 256)


# --- names and quantities -----------------------------------------------------------------------------------


def test_lstmvis_dataset_names_become_s_and_quantity_names_are_kept():
    states = noise(T, 4)
    imported = read_states(h5(states1=states), "states.h5", T)
    assert (imported.name, imported.format, imported.names, imported.length) == ("states.h5", "h5", ("states1",), T)
    trace = imported.trace()
    assert trace.quantities == ("s",) and "s" in QUANTITY_LABELS
    np.testing.assert_array_equal(trace.cell(CellId(0, 2, "s")), states[:, 2].astype(np.float32))
    with pytest.raises(ValueError, match="these states have no quantity 'c'; choose s"):
        trace.check(CellId(0, 0, "c"))

    grouped = read_states(h5(**{"lstm/c": noise(T, 4, seed=1), "lstm/h": states, "extra": noise(T, 4, seed=2)}),
                          "states.h5", T)
    assert grouped.trace().quantities == ("h", "c", "s")  # finder's order, h first
    assert grouped.trace(["extra", "lstm/c"]).quantities == ("c", "s")


def test_datasets_that_cannot_go_together_are_refused_and_the_default_falls_back_to_one():
    imported = read_states(npz(states1=noise(T, 4), states2=noise(T, 4, seed=1), h=noise(2, T, 3)), "s.npz", T)
    assert imported.default_names() == ("h",)
    with pytest.raises(StatesError, match="'states1', 'states2' would all be shown as s"):
        imported.trace(["states1", "states2"])
    with pytest.raises(StatesError, match=r"different shapes.*states1 \(1, 50, 4\), h \(2, 50, 3\)"):
        imported.trace(["states1", "h"])
    with pytest.raises(StatesError, match="no dataset 'nope'"):
        imported.trace(["nope"])
    assert imported.trace(["states2"]).quantities == ("s",)


def test_arrays_that_are_not_states_are_left_out_with_their_reason():
    imported = read_states(npz(h=noise(T, 4), ids=np.arange(T), embedding=noise(96, 8)), "s.npz", T)
    assert imported.names == ("h",)
    assert "1-D" in imported.skipped["ids"]
    assert "holds 96 states but the text has 50 characters" in imported.skipped["embedding"]


# --- refusals -----------------------------------------------------------------------------------------------


def test_wrong_length_says_both_numbers():
    message = refusal(npy(noise(100, 8)))
    assert "(100, 8) holds 100 states but the text has 50 characters" in message
    assert "longer text" in message


def test_transposed_and_misordered_states_are_named():
    assert "looks transposed" in refusal(npy(noise(8, T)))
    assert "states.transpose(0, 2, 1)" in refusal(npy(noise(2, 8, T)))
    assert "np.moveaxis(states, 1, 0)" in refusal(npy(noise(T, 2, 8)))


def test_off_by_one_and_word_level_states_are_named():
    assert "one state too many, perhaps the initial state before the first character (h_0)" in refusal(
        npy(noise(T + 1, 8)))
    assert "one state too few" in refusal(npy(noise(2, T - 1, 8)))
    assert "one per word or token, as LSTMVis's word-level files hold" in refusal(npy(noise(9, 8)))


def test_nan_and_infinity_are_counted_with_the_first_position():
    states = noise(T, 8)
    states[30, 1] = np.nan
    states[7, 5] = np.nan
    states[40, 0] = -np.inf
    message = refusal(npy(states))
    assert "3 of its 400 values are NaN or infinite (2 NaN), the first at character 7, unit 5" in message
    layered = noise(2, T, 3).astype(np.float32)
    layered[1, 4, 2] = np.inf
    assert "1 of its 300 values is infinite, the first at character 4, unit 2, layer 1" in refusal(npy(layered))
    huge = noise(T, 8)
    huge[9, 3] = 1e300
    assert "beyond float32's range" in refusal(npy(huge))


def test_too_many_values_are_refused_before_reading():
    message = refusal(npy(noise(T, 8)), max_values=399)
    assert "holds 400 values, (50, 8)" in message and "more than the 399" in message
    assert read_states(npy(noise(T, 8)), "s.npy", T, max_values=400).names == ("s",)
    several = read_states(npz(h=noise(T, 8), c=noise(T, 8)), "s.npz", T, max_values=600)
    assert several.names == ("h",) and "with the 400 values read before it, 800" in several.skipped["c"]


def test_odd_arrays_are_refused_in_words():
    assert "never unpickled" in refusal(npy(np.array([[object()]] * T), allow_pickle=True))
    assert "complex" in refusal(npy(noise(T, 3) + 1j))
    assert "text, not numbers" in refusal(npy(np.full((T, 3), "a")))
    assert "no values" in refusal(npy(np.zeros((T, 0))))
    assert "1-D" in refusal(npy(noise(T)))
    assert "4 dimensions" in refusal(npy(noise(1, 1, T, 3)))


def test_files_that_are_not_states_are_named():
    assert refusal(b"a,b\n1,2\n", "states.csv").startswith(
        "states.csv is not a states file: its bytes are text (comma-separated values?). Save your states with "
        "numpy.save")
    assert "Python pickle" in refusal(b"\x80\x04K\x01.", "states.pkl")
    assert "neither NumPy's (.npy, .npz) nor HDF5's" in refusal(bytes(range(256)), "states.bin")
    assert "empty" in refusal(b"", "states.npy")
    assert "PyTorch" in refusal((MODELS_DIR / "lstm-python-stdlib.pt").read_bytes(), "model.npz")
    assert "not a readable .npy array" in refusal(npy(noise(T, 3))[:12])


def test_empty_npz_and_a_zip_without_arrays():
    assert "is an empty .npz: it holds no arrays" in refusal(npz(), "s.npz")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    assert "no .npy arrays inside ('notes.txt')" in refusal(buffer.getvalue(), "s.npz")


def test_hdf5_without_a_2d_or_3d_dataset():
    message = refusal(h5(ids=np.arange(T), name="hello", **{"meta/scale": 2.0}), "s.h5")
    assert message.startswith("s.h5 holds no 2-D or 3-D dataset of numbers")
    assert "'ids': it is 1-D" in message and "'name': it holds text" in message


def test_hdf5_never_reaches_other_files(tmp_path):
    secret = tmp_path / "secret.h5"
    with h5py.File(secret, "w") as handle:
        handle["states"] = noise(T, 4)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(noise(T, 4).tobytes())
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        handle["h"] = noise(T, 4)
        handle["linked"] = h5py.ExternalLink(str(secret), "/states")
        handle["soft"] = h5py.SoftLink("/h")
        handle.create_dataset("stored", shape=(T, 4), dtype="f8", external=[(str(raw), 0, T * 4 * 8)])
    imported = read_states(buffer.getvalue(), "s.h5", T)
    assert imported.names == ("h",)
    assert "other files" in imported.skipped["stored"]


# --- the chance baseline ------------------------------------------------------------------------------------


def test_shift_keeps_each_units_values_and_moves_it_within_bounds():
    values = noise(2, 3, 200, 5).astype(np.float32)  # (Q, L, T, H), all distinct
    trace = CellTrace("states", ("h", "s"), values, np.zeros((200, 0), int), np.zeros((200, 0)))
    shifted = shifted_trace(trace, seed=7)
    assert shifted.values.shape == values.shape and not shifted.values.flags.writeable
    offsets = set()
    for layer in range(3):
        for unit in range(5):
            series, moved = values[:, layer, :, unit], shifted.values[:, layer, :, unit]  # (Q, T)
            np.testing.assert_array_equal(np.sort(moved, axis=1), np.sort(series, axis=1))
            found = [k for k in range(200) if np.array_equal(np.roll(series, k, axis=1), moved)]
            assert len(found) == 1 and 20 <= found[0] <= 180  # one offset in [T/10, 9T/10] for both quantities
            offsets.add(found[0])
    assert len(offsets) > 5  # each unit its own offset
    np.testing.assert_array_equal(shifted_trace(trace, seed=7).values, shifted.values)
    assert not np.array_equal(shifted_trace(trace, seed=8).values, shifted.values)


def test_shift_drops_a_feature_tracking_unit_to_chance():
    """Units equal to two feature tracks: |r| = 1 before; after, what the track gets against its own circular
    shifts at offsets in [T/10, 9T/10] (at most 0.21 for this text). A text that repeats itself would not do:
    a shift by its period aligns it again."""
    tracks = feature_tracks(CODE, "code")
    length = len(CODE)
    values = noise(1, 1, length, 4, seed=3).astype(np.float32)
    values[0, 0, :, 0] = tracks["bracket_depth"]
    values[0, 0, :, 1] = tracks["string"]
    trace = CellTrace("states", ("s",), values, np.zeros((length, 0), int), np.zeros((length, 0)))
    before = rank_cells(trace, tracks)
    assert before["bracket_depth"].best.cell == CellId(0, 0, "s") and before["bracket_depth"].best.r > 0.9999
    assert before["string"].best.cell == CellId(0, 1, "s") and before["string"].best.r > 0.9999
    after = {"bracket_depth": [], "string": []}
    for seed in range(10):
        r = correlations(shifted_trace(trace, seed), tracks)  # (Q, L, H, F)
        after["bracket_depth"].append(abs(r[0, 0, 0, list(tracks).index("bracket_depth")]))
        after["string"].append(abs(r[0, 0, 1, list(tracks).index("string")]))
    for name, rs in after.items():
        y = tracks[name].astype(np.float64)
        chance = [abs(np.corrcoef(np.roll(y, k), y)[0, 1]) for k in range(length // 10 + 1, 9 * length // 10)]
        assert max(rs) <= max(chance) + 1e-6 < 0.25
        assert np.median(rs) < 0.2


def test_shift_needs_two_steps():
    trace = CellTrace("states", ("s",), np.zeros((1, 1, 1, 2), np.float32), np.zeros((1, 0), int), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="at least 2 characters"):
        shifted_trace(trace, 0)


def test_unknown_export_format():
    trace = CellTrace("states", ("s",), np.zeros((1, 1, 3, 2), np.float32), np.zeros((3, 0), int), np.zeros((3, 0)))
    with pytest.raises(ValueError, match="fmt must be one of npy, npz, h5"):
        states_file_bytes(trace, "csv")
