"""What the upload tests share: the issue's bound on a bad file (within 5 s and 300 MB of server memory), small valid
files of every kind a page reads, and the crafted streams the probe used."""

from __future__ import annotations

import functools
import io
import json
import resource
import time
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np
import torch
from torch import nn

from rnnviz.captioning.checkpoint import save_captioner
from rnnviz.captioning.model import CaptionConfig, Captioner
from rnnviz.charlm.checkpoint import checkpoint_bytes
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.seq2seq.checkpoint import save_model
from rnnviz.seq2seq.model import Seq2Seq, Seq2SeqConfig

SECONDS = 5.0  # issue 60's bound on one bad file: refused within 5 s …
MEMORY = 300 * 2**20  # … and 300 MB of server memory
STATM = Path("/proc/self/statm")
TEXT_LENGTH = 12  # characters the small states files are for
CHARS = "\n abcdehlo"  # the plain model's vocabulary, in id order


def mapped_bytes() -> int:
    """The process's address space now (Linux)."""
    return int(STATM.read_text().split()[0]) * resource.getpagesize()


@contextmanager
def within_bounds(seconds: float = SECONDS, memory: int = MEMORY):
    """The block must end within ``seconds``, and may map at most ``memory`` more bytes: past that an allocation
    fails (MemoryError, or the library's own error) instead of taking the machine's memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if STATM.exists():
        limit = mapped_bytes() + memory
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    start = time.perf_counter()
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"took {elapsed:.1f} s, more than {seconds} s"


# --- crafted streams -----------------------------------------------------------------------------------------


def zlib_zeros(size: int, piece: int = 1 << 20) -> bytes:
    """A zlib stream that inflates to ``size`` zero bytes (a multiple of ``piece``), made in milliseconds: raw
    deflate pieces that end in a full flush are independent, so one piece repeats."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    repeated = deflater.compress(bytes(piece)) + deflater.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    adler = ((size % 65521) << 16 | 1).to_bytes(4, "big")  # Adler-32 of zeros: a = 1, b = size mod 65521
    return b"\x78\xda" + repeated * (size // piece) + end + adler


def torch_bytes(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def resaved(raw: bytes, edit) -> bytes:
    """A torch file with ``edit(payload)`` applied to what it holds."""
    payload = torch.load(io.BytesIO(raw), weights_only=True)
    edit(payload)
    return torch_bytes(payload)


def rezipped(raw: bytes, change) -> bytes:
    """A zip file with each member's bytes passed through ``change(name, data)`` and written back stored, with
    checksums that match: what a reader sees past the zip's own checks."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            target.writestr(info.filename, change(info.filename, source.read(info)))
    return out.getvalue()


# --- valid files of each kind, small -------------------------------------------------------------------------


@functools.cache
def rnnviz_checkpoint() -> bytes:
    """A 2-step LSTM (H = 8) on "hello", with Adam's state and history: what the live page lets one download."""
    trainer = Trainer(TrainConfig(hidden=8, embed_dim=4, batch=1, seq_len=4, device="cpu"), load_builtin("hello"))
    trainer.run(2)
    return checkpoint_bytes(trainer, "hello")


class PlainLSTM(nn.Module):
    """Embedding → nn.LSTM → Linear, as a user writes it."""

    def __init__(self, vocab: int = len(CHARS), hidden: int = 8):
        super().__init__()
        self.emb = nn.Embedding(vocab, 4)
        self.lstm = nn.LSTM(4, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)


@functools.cache
def plain_state_dict() -> bytes:
    torch.manual_seed(0)
    return torch_bytes(PlainLSTM().state_dict())


@functools.cache
def vocab_json() -> bytes:
    return json.dumps(list(CHARS)).encode()


@functools.cache
def seq2seq_file() -> bytes:
    torch.manual_seed(0)
    return save_model(Seq2Seq(Seq2SeqConfig(alphabet_size=4, train_max=4, embed=4, enc_hidden=4, dec_hidden=4,
                                            attn=4)))


@functools.cache
def captioner_file() -> bytes:
    torch.manual_seed(0)
    return save_captioner(Captioner(CaptionConfig(channels=(2, 2, 2), v_dim=4, embed=4, hidden=4)))


def states(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((TEXT_LENGTH, 4)).astype(np.float32)  # (T, H)


@functools.cache
def npy_file() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, states())
    return buffer.getvalue()


@functools.cache
def npz_file() -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, h=states(0), c=states(1))
    return buffer.getvalue()


@functools.cache
def h5_file() -> bytes:
    """h gzip-compressed in chunks (with shuffle and a checksum), c contiguous: both layouts a reader meets."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        handle.create_dataset("h", data=states(0), chunks=(4, 4), compression="gzip", shuffle=True, fletcher32=True)
        handle.create_dataset("c", data=states(1))
    return buffer.getvalue()
