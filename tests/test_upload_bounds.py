"""Issue 60's probe, file by file: each crafted upload is refused in words that name the limit it met, within 5 s
and without the memory it claims (``within_bounds`` lets the reader map at most 300 MB more: an allocation of the
claimed size fails instead)."""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile

import h5py
import numpy as np
import pytest
import torch

from rnnviz.captioning.checkpoint import CaptionerError, load_captioner
from rnnviz.charlm.checkpoint import CheckpointError, load_checkpoint
from rnnviz.charlm.foreign import load_any, load_foreign, parse_vocab
from rnnviz.interpret.states import StatesError, read_states
from rnnviz.limits import MAX_PARAMETERS, MAX_RECORD_BYTES, MAX_VALUES, OWN_FILE_LIMITS, FileLimits
from rnnviz.seq2seq.checkpoint import Seq2SeqError, load_model
from tests.upload_helpers import (
    CHARS,
    TEXT_LENGTH,
    captioner_file,
    npz_file,
    plain_state_dict,
    resaved,
    rnnviz_checkpoint,
    seq2seq_file,
    torch_bytes,
    vocab_json,
    within_bounds,
    zlib_zeros,
)

GIB = 1 << 30


def h5_with_one_chunk(chunks: tuple[int, int], stream: bytes, shape: tuple[int, int] = (200, 16)) -> bytes:
    """An HDF5 file whose float32 dataset "h" has its first chunk written as ``stream`` (a gzip chunk)."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        dataset = handle.create_dataset("h", shape=shape, maxshape=(None, None), chunks=chunks, dtype="f4",
                                        compression="gzip")
        dataset.id.write_direct_chunk((0, 0), stream)
    return buffer.getvalue()


# --- HDF5 ----------------------------------------------------------------------------------------------------


def test_an_hdf5_dataset_of_200_by_16_whose_gzip_chunk_inflates_to_1_gb_is_refused_from_its_chunk_shape():
    data = h5_with_one_chunk((16384, 16384), zlib_zeros(GIB))  # (200, 16) in one 16384 × 16384 float32 chunk
    assert len(data) < 2_000_000
    with within_bounds(), pytest.raises(StatesError) as refusal:
        read_states(data, "states.h5", 200)
    assert (f"its shape holds 3,200 values, but it is stored in 1 chunk of 268,435,456 values each, 268,435,456 "
            f"values to decompress, 6.7× the {MAX_VALUES:,} read from one file here") in str(refusal.value)


def test_an_hdf5_chunk_whose_gzip_stream_inflates_past_its_declared_size_is_refused_before_hdf5_reads_it():
    data = h5_with_one_chunk((200, 16), zlib_zeros(GIB))  # a 12,800-byte chunk whose stream holds 1 GB
    with within_bounds(), pytest.raises(StatesError, match=r"its chunk at \(0, 0\) inflates to more than the 12,800 "
                                                           r"bytes its chunk shape holds"):
        read_states(data, "states.h5", 200)


def test_an_hdf5_dataset_compressed_with_a_filter_whose_output_cannot_be_measured_is_refused_unread():
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        handle.create_dataset("h", data=np.zeros((TEXT_LENGTH, 4), np.float32), chunks=(4, 4), compression="lzf")
    with within_bounds(), pytest.raises(StatesError, match=r"compressed with HDF5 filter 32000 \(lzf\), which is not "
                                                           r"read here.*compression=\"gzip\" or none"):
        read_states(buffer.getvalue(), "states.h5", TEXT_LENGTH)


def test_an_hdf5_dataset_in_more_chunks_than_the_limit_is_refused_before_the_library_lists_them():
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:  # 400,000 chunks of one value, none written: the header says so
        handle.create_dataset("h", shape=(TEXT_LENGTH, 400_000), chunks=(TEXT_LENGTH, 1), dtype="f4",
                              compression="gzip")
    with within_bounds(), pytest.raises(StatesError, match=r"stored in 400,000 chunks, 4× the 100,000 read from one "
                                                           r"dataset here"):
        read_states(buffer.getvalue(), "states.h5", TEXT_LENGTH)


def test_every_one_byte_corruption_of_a_small_hdf5_file_is_refused_in_words_or_read():
    """The probe's damaged headers raised RuntimeError ("Object visitation failed"), KeyError ("invalid dataset
    size") and OverflowError from inside h5py; every byte of the file, set to 0x00 and to 0xFF, must end in a
    StatesError or a read."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        handle.create_dataset("h", data=np.arange(TEXT_LENGTH * 4, dtype=np.float32).reshape(TEXT_LENGTH, 4))
    data = buffer.getvalue()
    outcomes = {"refused": 0, "read": 0}
    with within_bounds(seconds=10):
        for at in range(len(data)):
            for value in {0x00, 0xFF} - {data[at]}:
                try:
                    read_states(data[:at] + bytes([value]) + data[at + 1 :], "states.h5", TEXT_LENGTH)
                    outcomes["read"] += 1
                except StatesError:
                    outcomes["refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["read"] > 100


# --- zip files -----------------------------------------------------------------------------------------------


def with_extract_version(data: bytes, version: int) -> bytes:
    """A zip whose first member's central-directory entry asks for zip ``version`` (12.7 is 127) to extract it."""
    at = data.rindex(b"PK\x01\x02")
    while data.rfind(b"PK\x01\x02", 0, at) >= 0:  # the first entry of the central directory
        at = data.rfind(b"PK\x01\x02", 0, at)
    return data[: at + 6] + struct.pack("<H", version) + data[at + 8 :]


@pytest.mark.parametrize("kind", ["checkpoint", "plain", "npz"])
def test_a_zip_header_that_says_version_12_7_is_refused_in_words(kind):
    if kind == "npz":
        with within_bounds(), pytest.raises(StatesError, match=r"zip header asks for .*zip file version 12\.7"):
            read_states(with_extract_version(npz_file(), 127), "states.npz", TEXT_LENGTH)
        return
    raw = with_extract_version(rnnviz_checkpoint() if kind == "checkpoint" else plain_state_dict(), 127)
    with within_bounds(), pytest.raises(CheckpointError, match=r"zip header asks for .*zip file version 12\.7"):
        load_any(raw, vocab_json())


def test_a_zip_whose_list_of_members_is_longer_than_the_limit_is_refused_before_it_is_parsed():
    """40,000 entries of one member in the zip's list (2 MB): Python's zipfile would build each before reading one."""
    npz = npz_file()
    start = npz.rindex(b"PK\x01\x02", 0, npz.rindex(b"PK\x01\x02"))  # the first central-directory entry
    entry = npz[start : npz.index(b"PK\x01\x02", start + 4)]
    directory = entry * 40_000
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0xFFFF, 0xFFFF, len(directory), start, 0)
    data = npz[:start] + directory + end
    with within_bounds(), pytest.raises(StatesError, match=rf"its list of members takes {len(directory):,} bytes, "
                                                           r"2× the 1,000,000 read here"):
        read_states(data, "states.npz", TEXT_LENGTH)


def test_a_checkpoint_whose_members_are_deflated_or_overlap_is_refused_before_torch_reads_them():
    raw = rnnviz_checkpoint()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    with within_bounds(), pytest.raises(CheckpointError, match=r"is compressed \(deflate\); torch\.save stores every "
                                                               r"member as it is"):
        load_checkpoint(out.getvalue())


def test_a_checkpoint_whose_records_take_more_than_the_limit_is_refused_before_they_are_unpickled():
    """A history of 700,000 references to one record: 3.5 MB of data.pkl that unfold into 700,000 StepRecords."""
    def long_history(payload):
        payload["history"] = [payload["history"][0]] * 700_000

    raw = resaved(rnnviz_checkpoint(), long_history)
    with within_bounds(seconds=2), pytest.raises(CheckpointError) as refusal:
        load_checkpoint(raw)
    assert re.search(rf"records \(its data\.pkl: config, history, settings\) take [\d,]+ bytes, 1\.\d× the "
                     rf"{MAX_RECORD_BYTES:,} read here", str(refusal.value))


# --- tensors -------------------------------------------------------------------------------------------------


def test_a_2_kb_state_dict_of_zero_stride_views_is_refused_before_a_64_million_parameter_lstm_is_built():
    """torch.zeros(1).expand(16000, 4000): 64 M values stored in 4 bytes, read as a one-hot 1 × 4000 LSTM."""
    views = {"lstm.weight_ih_l0": torch.zeros(1).expand(16000, len(CHARS)),
             "lstm.weight_hh_l0": torch.zeros(1).expand(16000, 4000),
             "lstm.bias_ih_l0": torch.zeros(1).expand(16000), "lstm.bias_hh_l0": torch.zeros(1).expand(16000),
             "fc.weight": torch.zeros(1).expand(len(CHARS), 4000), "fc.bias": torch.zeros(len(CHARS))}
    raw = torch_bytes(views)
    assert len(raw) < 4000
    with within_bounds(), pytest.raises(CheckpointError) as refusal:
        load_any(raw, vocab_json())
    assert re.search(r"its [\d,]+ values are a view that repeats what 4 bytes hold \(a stride of 0, as "
                     r"torch\.zeros\(1\)\.expand\(…\) makes\)", str(refusal.value))


def test_a_plain_state_dict_with_more_parameters_than_the_limit_says_how_many_times_over():
    weights = plain_state_dict()
    with within_bounds(), pytest.raises(CheckpointError, match=r"The model is too large: The 1 × 8 LSTM holds 578 "
                                                               r"parameters, 5\.8× the 100 a model may have here"):
        load_any(weights, vocab_json(), limits=FileLimits(parameters=100))
    checkpoint, _ = load_any(weights, vocab_json(), limits=OWN_FILE_LIMITS)  # the operator's own file: any size
    assert sum(p.numel() for p in checkpoint.model.parameters()) == 10 * 4 + 4 * 8 * (4 + 8 + 2) + 8 * 10 + 10


@pytest.mark.parametrize("reader", ["checkpoint", "seq2seq", "captioner"])
def test_a_config_that_claims_100000_hidden_units_is_refused_before_the_model_is_built(reader):
    """The probe's checkpoint (config hidden = 100000) made torch try to allocate 160,000,000,000 bytes."""
    def wide(payload):
        payload["config"]["enc_hidden" if reader == "seq2seq" else "hidden"] = 100_000

    source, load, error = {"checkpoint": (rnnviz_checkpoint, load_checkpoint, CheckpointError),
                           "seq2seq": (seq2seq_file, load_model, Seq2SeqError),
                           "captioner": (captioner_file, load_captioner, CaptionerError)}[reader]
    with within_bounds(), pytest.raises(error) as refusal:
        load(resaved(source(), wide))
    match = re.search(rf"holds ([\d,]+) parameters, ([\d,]+)× the {MAX_PARAMETERS:,} a model may have here",
                      str(refusal.value))
    count = int(match[1].replace(",", ""))
    if reader == "checkpoint":  # V = 4 ("ehlo"), E = 4: embedding V·E, LSTM 4H·(E + H + 2), readout H·V + V
        assert count == 4 * 4 + 4 * 100_000 * (4 + 100_000 + 2) + 100_000 * 4 + 4
    assert count > 10**9 and match[2] == f"{count / MAX_PARAMETERS:,.0f}"


def one_nan(tensors: dict, everywhere: bool = False) -> None:
    name = next(k for k, v in tensors.items() if v.is_floating_point() and v.dim() == 2)
    tensors[name] = tensors[name].clone()
    if everywhere:
        tensors[name].fill_(float("nan"))
    else:
        tensors[name][0, 0] = float("nan")


@pytest.mark.parametrize("everywhere", [False, True], ids=["one NaN", "all NaN"])
@pytest.mark.parametrize("reader", ["checkpoint", "plain", "seq2seq", "captioner"])
def test_a_model_with_nan_weights_is_refused_on_upload_not_when_it_samples(reader, everywhere):
    if reader == "plain":
        raw = resaved(plain_state_dict(), lambda weights: one_nan(weights, everywhere))
        with within_bounds(), pytest.raises(CheckpointError, match=r"values (is|are) NaN"):
            load_foreign(raw, vocab_json())
        return
    source, load, error, field = {"checkpoint": (rnnviz_checkpoint, load_checkpoint, CheckpointError, "model"),
                                  "seq2seq": (seq2seq_file, load_model, Seq2SeqError, "state"),
                                  "captioner": (captioner_file, load_captioner, CaptionerError, "state")}[reader]
    with within_bounds(), pytest.raises(error, match=r"values (is|are) NaN"):
        load(resaved(source(), lambda payload: one_nan(payload[field], everywhere)))


# --- vocabulary JSON and the words of messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("vocab", "words"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nests lists or objects 100,000 deep, 12,500× the 8 read here"),
        ('{"0": "a", "\u00b2": "b"}'.encode(), "ids must be the numbers 0 to 1, each once"),
        (b'{"a": 0, "b": ' + b"9" * 5000 + b"}", "holds a number of 5,000 digits"),
        (b'["a", "\\ud800"]', "Entry 1 of the vocabulary, '\\ud800', is half of a UTF-16 surrogate pair"),
    ],
    ids=["nested 100,000 deep", "key ²", "5,000-digit number", "lone surrogate"],
)
def test_a_vocabulary_file_the_probe_sent_is_refused_in_words(vocab, words):
    with within_bounds(), pytest.raises(CheckpointError, match=re.escape(words)):
        parse_vocab(vocab)


def test_a_long_vocabulary_entry_is_quoted_in_a_short_message():
    """The probe's 15.7 MB entry was shown whole (24 s to draw): a message quotes at most 200 characters of it."""
    words = "vocabulary file takes 15,700,009 bytes, 16× the 1,000,000"
    with within_bounds(), pytest.raises(CheckpointError, match=words) as refusal:
        parse_vocab(json.dumps(["a", "x" * 15_700_000]).encode())
    assert len(str(refusal.value)) < 300
    with pytest.raises(CheckpointError) as refusal:
        parse_vocab(json.dumps(["a", "x" * 900_000]).encode())
    assert "'xxxxx" in str(refusal.value) and "(899,800 more characters)" in str(refusal.value)
    assert len(str(refusal.value)) < 400


@pytest.mark.parametrize("reader", ["plain", "npz"])
def test_a_name_of_60000_characters_is_quoted_in_a_short_message(reader):
    name = "w" * 60_000  # a zip's names end at 65,535 bytes
    if reader == "plain":
        with within_bounds(), pytest.raises(CheckpointError) as refusal:
            load_any(torch_bytes({name: torch.zeros(2, 2)}), vocab_json())
    else:
        buffer = io.BytesIO()
        np.savez(buffer, **{name: np.zeros((3, 4), np.float32)})
        with within_bounds(), pytest.raises(StatesError) as refusal:
            read_states(buffer.getvalue(), name + ".npz", TEXT_LENGTH)
    assert "(59,800 more characters)" in str(refusal.value) and len(str(refusal.value)) < 1000


def test_the_readme_s_limits_table_names_every_limit_with_its_value():
    import re
    from pathlib import Path

    from rnnviz import limits

    deploying = (Path(__file__).resolve().parents[1] / "docs" / "deploying.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)`[^|]*\| ([\d,]+)", deploying, flags=re.M))
    named = {name: value for name, value in vars(limits).items() if name.isupper() and isinstance(value, int)}
    assert named and set(named) <= set(rows), set(named) - set(rows)
    assert {name: int(rows[name].replace(",", "")) for name in named} == named
