"""Every reader of an uploaded file, fed random corruptions of a small valid file of its kind (byte flips,
truncations, insertions, header fields set to edge values, and members of a zip changed behind checksums that still
match), ends in a refusal in words (the reader's own error class) or in a valid result: within 5 s and 300 MB of
memory per file (issue 60's bound), never a traceback. Seeded: the same cases on every run."""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rnnviz.captioning.checkpoint import CaptionerError, load_captioner
from rnnviz.charlm.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from rnnviz.charlm.foreign import load_any, load_foreign
from rnnviz.interpret.states import ImportedStates, StatesError, read_states
from rnnviz.seq2seq.checkpoint import Seq2SeqError, load_model
from tests.upload_helpers import (
    SECONDS,
    TEXT_LENGTH,
    captioner_file,
    h5_file,
    npy_file,
    npz_file,
    plain_state_dict,
    rezipped,
    rnnviz_checkpoint,
    seq2seq_file,
    vocab_json,
    within_bounds,
)

EXAMPLES = 300  # corrupted files per kind
MESSAGE_CHARS = 2_000  # a refusal is a sentence or two, with at most a 200-character quote of the file
HEADER_BYTES = 2_048  # where a file's header fields lie: the HDF5 superblock and object headers, an .npy's header
EDGE_VALUES = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 2**63 - 1, 2**64 - 1)
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06")
SNIPPETS = (b"[" * 3000, b'"\\ud800"', b"9" * 5000, "²".encode(), b"1e999", b"\xff" * 8, b"\x00" * 64,
            b"PK\x03\x04", b"\x89HDF\r\n\x1a\n", b"\x93NUMPY")  # what the probe sent, and magics inside a file


@dataclass(frozen=True)
class Kind:
    """One kind of upload: a small valid file and the reader a page passes it to."""

    valid: Callable[[], bytes]
    read: Callable[[bytes], object]
    error: type[Exception]


def _checkpoint(data: bytes) -> Checkpoint:
    checkpoint = load_checkpoint(data)
    load_any(data)  # the explorer's reader, which tells an rnnviz checkpoint from a plain state_dict
    return checkpoint


KINDS = {
    "checkpoint": Kind(rnnviz_checkpoint, _checkpoint, CheckpointError),
    "state_dict": Kind(plain_state_dict, lambda data: load_any(data, vocab_json())[0], CheckpointError),
    "vocab": Kind(vocab_json, lambda data: load_foreign(plain_state_dict(), data).checkpoint, CheckpointError),
    "seq2seq": Kind(seq2seq_file, lambda data: load_model(data)[0], Seq2SeqError),
    "captioner": Kind(captioner_file, lambda data: load_captioner(data)[0], CaptionerError),
    "npy": Kind(npy_file, lambda data: read_states(data, "states.npy", TEXT_LENGTH), StatesError),
    "npz": Kind(npz_file, lambda data: read_states(data, "states.npz", TEXT_LENGTH), StatesError),
    "h5": Kind(h5_file, lambda data: read_states(data, "states.h5", TEXT_LENGTH), StatesError),
}
OUTCOMES: Counter = Counter()  # (kind, "read" or "refused"): what the cases came to, for a reader of the log


# --- corruptions ---------------------------------------------------------------------------------------------


@st.composite
def flipped(draw, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        out[draw(st.integers(0, len(out) - 1))] ^= draw(st.integers(1, 255))
    return bytes(out)


@st.composite
def truncated(draw, data: bytes) -> bytes:
    return data[: draw(st.integers(0, len(data) - 1))]


@st.composite
def inserted(draw, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    piece = draw(st.sampled_from(SNIPPETS) | st.binary(min_size=1, max_size=64))
    return data[:at] + piece + data[at:]


@st.composite
def header_field(draw, data: bytes) -> bytes:
    """An integer field (1, 2, 4 or 8 bytes, little-endian) set to an edge value, where headers lie: after a zip
    signature (sizes, offsets, methods, versions, name lengths) or in the first 2 KB (HDF5's and .npy's headers)."""
    starts = [i for sig in ZIP_SIGNATURES for i in range(len(data)) if data.startswith(sig, i)]
    if starts and draw(st.booleans()):
        at = draw(st.sampled_from(starts)) + draw(st.integers(4, 46))
    else:
        at = draw(st.integers(0, min(len(data), HEADER_BYTES) - 1))
    width = draw(st.sampled_from((1, 2, 4, 8)))
    value = draw(st.sampled_from(EDGE_VALUES) | st.integers(0, 2**64 - 1)) % (1 << (8 * width))
    return data[:at] + value.to_bytes(width, "little") + data[at + width :]


@st.composite
def member_changed(draw, data: bytes) -> bytes:
    """One member of a zip (a torch file's data.pkl or a tensor's bytes, an .npz's array) corrupted, and the zip
    written again with checksums that match: past the zip's own checks, into the pickle or the array's header."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = draw(st.sampled_from([info.filename for info in archive.infolist()]))
        corrupt = draw(st.sampled_from((flipped, truncated, inserted, header_field)))
        new = draw(corrupt(archive.read(name)) if archive.read(name) else st.just(b"\x80"))
    return rezipped(data, lambda member, old: new if member == name else old)


def corruptions(data: bytes) -> st.SearchStrategy[bytes]:
    ways = [flipped(data), truncated(data), inserted(data), header_field(data)]
    if data.startswith(b"PK\x03\x04"):
        ways += [member_changed(data)] * 3  # most byte flips only break a checksum: reach the contents too
    return st.one_of(ways)


# --- the check -----------------------------------------------------------------------------------------------


def read_or_refuse(kind: Kind, data: bytes) -> str:
    """"read" or "refused"; anything else (another exception, an unbounded message, a result that is not usable,
    more than 5 s or 300 MB) fails."""
    with within_bounds():
        try:
            result = kind.read(data)
        except kind.error as err:
            message = str(err)
            assert 0 < len(message) < MESSAGE_CHARS, message[:MESSAGE_CHARS]
            message.encode("utf-8")  # a page can send it: no half of a surrogate pair
            return "refused"
    if isinstance(result, ImportedStates):
        assert all(a.dtype == np.float32 and np.isfinite(a).all() for a in result.datasets.values())
    elif isinstance(result, Checkpoint | torch.nn.Module):
        model = result.model if isinstance(result, Checkpoint) else result
        assert all(torch.isfinite(t).all() for t in model.state_dict().values() if t.is_floating_point())
    return "read"


@pytest.mark.parametrize("name", list(KINDS))
def test_a_corrupted_upload_is_read_or_refused_in_words_within_bounds(name):
    kind = KINDS[name]
    assert read_or_refuse(kind, kind.valid()) == "read"  # the uncorrupted file reads

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=timedelta(seconds=SECONDS),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(corruptions(kind.valid()))
    def corrupted(data: bytes):
        OUTCOMES[name, read_or_refuse(kind, data)] += 1

    corrupted()
    assert OUTCOMES[name, "refused"] > 0
