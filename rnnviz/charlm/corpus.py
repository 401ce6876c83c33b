"""Text corpora for character models: built-in texts, user uploads, a vocabulary, splits and TBPTT batches.

Built in (``BUILTIN_CORPORA``):

- ``tiny-shakespeare``: Karpathy's 1,115,394-byte Shakespeare, downloaded on demand into a cache folder
  (``~/.cache/rnnviz``, or ``$RNNVIZ_CACHE``) and verified against its sha256.
- ``python-stdlib``: the standard library's .py files, sorted by path, capped (1 MB by default).
- ``english-docs``: the prose of ``pydoc_data.topics`` (about 465k characters).
- ``hello``: the lecture's toy, the string "hello" with vocabulary {h, e, l, o}.

A corpus is split 90/10 with val the last 10%, as nanoGPT's shakespeare_char does. Training reads it as
B parallel streams cut into chunks of T characters (truncated BPTT): chunk k of every stream continues
chunk k − 1, so the hidden state carries across the boundary (detached) while the gradient stops there.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import http.client
import os
import sysconfig
import tempfile
import unicodedata
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from rnnviz.limits import MAX_UPLOAD_BYTES, MAX_VOCAB  # noqa: F401 (callers read them here)

TINY_SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
TINY_SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
TINY_SHAKESPEARE_BYTES = 1_115_394
TINY_SHAKESPEARE_FILE = "tinyshakespeare.txt"

BUILTIN_CORPORA = ("tiny-shakespeare", "python-stdlib", "english-docs", "hello")
DOWNLOADED_CORPORA = ("tiny-shakespeare",)  # the built-in corpora fetched from the network on first use

MIN_TEXT_CHARS = 100  # shortest user text we train on
STDLIB_MAX_CHARS = 1_000_000  # default size of the python-stdlib corpus
VAL_FRACTION = 0.1  # val is the last 10% of the text

OFFLINE_HINT = "Use a built-in corpus (python-stdlib, english-docs) or upload a text file instead."

ProgressFn = Callable[[int, int], None]  # (bytes so far, total bytes or 0 when unknown)


class CorpusError(ValueError):
    """A problem with a text, said in words a page can show as they are."""


class UnknownCharactersError(CorpusError):
    """Text holds characters outside the vocabulary; ``chars`` lists them, sorted."""

    def __init__(self, chars: list[str], vocab_size: int):
        self.chars = chars
        shown = ", ".join(repr(c) for c in chars[:20]) + (" …" if len(chars) > 20 else "")
        super().__init__(
            f"{len(chars)} character(s) are not in the model's vocabulary of {vocab_size}: {shown}. "
            "Remove them, or train on a text that contains them."
        )


@dataclass(frozen=True)
class Vocab:
    """The distinct characters of a text, sorted by code point; character ``chars[i]`` has id i."""

    chars: str  # each distinct character once, in code-point order
    _codes: np.ndarray = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        codes = np.array([ord(c) for c in self.chars], dtype=np.int64)
        if len(codes) != len(set(self.chars)) or np.any(np.diff(codes) <= 0):
            raise CorpusError("vocabulary characters must be distinct and sorted by code point")
        object.__setattr__(self, "_codes", codes)

    @classmethod
    def from_text(cls, text: str) -> Vocab:
        return cls("".join(sorted(set(text))))

    @property
    def size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Tensor:
        """Character ids of ``text`` as a 1-D long tensor; unknown characters raise UnknownCharactersError."""
        codes = _code_points(text)
        ids = np.searchsorted(self._codes, codes)
        ids_in_range = np.minimum(ids, len(self._codes) - 1)
        unknown = self._codes[ids_in_range] != codes
        if unknown.any():
            raise UnknownCharactersError(sorted({chr(c) for c in codes[unknown]}), self.size)
        return torch.from_numpy(ids)

    def decode(self, ids) -> str:
        """The text of a sequence of ids (a tensor, array or list of ints)."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        return "".join(self.chars[i] for i in ids)


def _code_points(text: str) -> np.ndarray:
    """Unicode code points of ``text`` as int64, fast for megabytes of text."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


@dataclass(frozen=True, eq=False)
class Corpus:
    """A named text with its vocabulary and ids; ``split()`` gives the train and val ids."""

    name: str  # shown on pages and stored in checkpoints
    text: str = field(repr=False)
    vocab: Vocab = field(init=False)
    ids: Tensor = field(init=False, repr=False)  # (n,) long

    def __post_init__(self):
        if len(self.text) < 2:
            raise CorpusError("a corpus needs at least 2 characters")
        vocab = Vocab.from_text(self.text)
        object.__setattr__(self, "vocab", vocab)
        object.__setattr__(self, "ids", vocab.encode(self.text))

    def __len__(self) -> int:
        return len(self.text)

    def split(self, val_fraction: float = VAL_FRACTION) -> tuple[Tensor, Tensor]:
        """(train ids, val ids): val is the last ``val_fraction`` of the text.

        A toy shorter than MIN_TEXT_CHARS (only the built-in "hello") has no held-out part: train and
        val are then both the whole text.
        """
        if len(self.ids) < MIN_TEXT_CHARS:
            return self.ids, self.ids
        n_train = int(len(self.ids) * (1 - val_fraction))
        return self.ids[:n_train], self.ids[n_train:]


# ---------------------------------------------------------------------------------------------------------
# User text


def _looks_like_utf16(raw: bytes) -> bool:
    """UTF-16 without a byte-order mark: mostly Latin text puts a NUL in every other byte (odd bytes for little-
    endian, even for big-endian), which binary files almost never do."""
    sample = raw[: 1 << 16]
    if len(sample) < 4:
        return False
    half = len(sample) // 2
    return max(sample[1::2].count(0), sample[0::2].count(0)) >= 0.9 * half and sample.count(0) <= 0.6 * len(sample)


def corpus_from_user_text(
    data: bytes | str, name: str = "upload", max_bytes: int = MAX_UPLOAD_BYTES, max_vocab: int = MAX_VOCAB
) -> Corpus:
    """A corpus from uploaded bytes (decoded as UTF-8) or a str, checked with clear errors.

    Rejects UTF-16 and UTF-32 (by their byte-order mark, or UTF-16's NUL in every other byte), binary data (NUL
    bytes, or more than 5% control characters), non-UTF-8 bytes, texts over ``max_bytes`` (UTF-8 size), under
    MIN_TEXT_CHARS characters or under 2 distinct ones, and more than ``max_vocab`` distinct characters. Windows
    and old-Mac line ends become "\\n".
    """
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise CorpusError(f"The text is {len(raw):,} bytes; the limit is {max_bytes:,}. Upload a shorter file.")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise CorpusError("The file is UTF-16 (or UTF-32) text, not UTF-8. Save it as UTF-8 and upload it again.")
    if b"\x00" in raw:
        if _looks_like_utf16(raw):
            raise CorpusError("The file looks like UTF-16 text without a byte-order mark, not UTF-8. Save it as UTF-8 "
                              "and upload it again.")
        raise CorpusError("This looks like a binary file (it contains NUL bytes), not text. Upload a plain-text file.")
    if isinstance(data, str):
        text = data
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise CorpusError(
                f"The file is not UTF-8 text (byte 0x{raw[err.start]:02x} at position {err.start} is invalid). "
                "Save it as UTF-8 and upload it again."
            ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    control = sum(1 for c in text if c not in "\n\t\f" and unicodedata.category(c) == "Cc")
    if text and control > 0.05 * len(text):
        raise CorpusError(
            f"This looks like binary data: {control / len(text):.0%} of its characters are control characters."
        )
    if len(text) < MIN_TEXT_CHARS:
        raise CorpusError(f"The text has {len(text)} characters; a character model needs at least {MIN_TEXT_CHARS}.")
    distinct = len(set(text))
    if distinct < 2:
        raise CorpusError("The text uses a single distinct character; there is nothing to predict.")
    if distinct > max_vocab:
        raise CorpusError(
            f"The text has {distinct:,} distinct characters; the limit is {max_vocab:,}. "
            "Use a text in fewer scripts, or strip unusual symbols."
        )
    return Corpus(name, text)


# ---------------------------------------------------------------------------------------------------------
# Built-in corpora


def cache_dir() -> Path:
    """Where downloads are kept: $RNNVIZ_CACHE, else ~/.cache/rnnviz."""
    return Path(os.environ.get("RNNVIZ_CACHE") or Path.home() / ".cache" / "rnnviz")


def load_builtin(
    name: str,
    *,
    max_chars: int = STDLIB_MAX_CHARS,
    progress: ProgressFn | None = None,
    cache: Path | None = None,
    url: str | None = None,
    timeout: float = 30.0,
) -> Corpus:
    """One of BUILTIN_CORPORA. ``max_chars`` caps python-stdlib; the other options concern the download."""
    if name == "hello":
        return Corpus("hello", "hello")
    if name == "english-docs":
        return Corpus(name, english_docs_text())
    if name == "python-stdlib":
        return Corpus(name, python_stdlib_text(max_chars))
    if name == "tiny-shakespeare":
        path = tiny_shakespeare_path(cache=cache, url=url, progress=progress, timeout=timeout)
        return Corpus(name, path.read_text(encoding="utf-8"))
    raise CorpusError(f"Unknown corpus {name!r}; choose one of {', '.join(BUILTIN_CORPORA)}.")


def load_corpus(spec: str, progress: ProgressFn | None = None) -> Corpus:
    """A built-in corpus by name, or a UTF-8 text file by path (relative to the current folder)."""
    if spec in BUILTIN_CORPORA:
        return load_builtin(spec, progress=progress)
    path = Path(spec)
    if not path.is_file():
        raise CorpusError(f"--corpus must be one of {', '.join(BUILTIN_CORPORA)} or a text file; {spec!r} is neither")
    return corpus_from_user_text(path.read_bytes(), name=path.name)


def english_docs_text() -> str:
    """The help topics of pydoc_data, in sorted topic order, blank-line separated."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key].strip("\n") for key in sorted(topics)) + "\n"


def python_stdlib_text(max_chars: int = STDLIB_MAX_CHARS) -> str:
    """The standard library's .py files, each under a "# path" line, cut at the last line end before max_chars.

    Files come in sorted path order (a depth-first walk with names sorted at every level), skipping
    site-packages and files that are not valid UTF-8. The walk stops once the cap is reached.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, total = [], 0
    for path in _sorted_sources(root):
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "\x00" in source:
            continue
        piece = f"# {path.relative_to(root).as_posix()}\n{source.rstrip()}\n\n"
        parts.append(piece)
        total += len(piece)
        if total >= max_chars:
            break
    text = "".join(parts)
    if len(text) > max_chars:
        cut = text.rfind("\n", 0, max_chars)
        text = text[: cut + 1 if cut > 0 else max_chars]
    return text


def _sorted_sources(folder: Path):
    """.py files under ``folder`` in sorted path order, lazily."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in ("site-packages", "dist-packages", "__pycache__"):
                yield from _sorted_sources(Path(entry.path))
        elif entry.name.endswith(".py"):
            yield Path(entry.path)


def tiny_shakespeare_path(
    *,
    cache: Path | None = None,
    url: str | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 30.0,
) -> Path:
    """The verified Tiny Shakespeare file in the cache, downloaded first when missing or damaged.

    The URL is TINY_SHAKESPEARE_URL unless ``url`` or $RNNVIZ_TINY_SHAKESPEARE_URL says otherwise.
    A download goes to a temporary file that is renamed into place only after its size and sha256
    check out, so a failed download never leaves a bad file in the cache.
    """
    cache = Path(cache) if cache is not None else cache_dir()
    target = cache / TINY_SHAKESPEARE_FILE
    if tiny_shakespeare_cached(cache):
        return target
    url = url or os.environ.get("RNNVIZ_TINY_SHAKESPEARE_URL") or TINY_SHAKESPEARE_URL
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=cache, prefix=".download-", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest = _download(url, out, progress, timeout)
        size = tmp.stat().st_size
        if size != TINY_SHAKESPEARE_BYTES:
            raise CorpusError(
                f"The Tiny Shakespeare download from {url} is {size:,} bytes, not {TINY_SHAKESPEARE_BYTES:,} "
                f"(an interrupted or altered download). {OFFLINE_HINT}"
            )
        if digest != TINY_SHAKESPEARE_SHA256:
            raise CorpusError(
                f"The Tiny Shakespeare download from {url} has sha256 {digest[:12]}…, not the published "
                f"{TINY_SHAKESPEARE_SHA256[:12]}…; it was not kept. {OFFLINE_HINT}"
            )
        tmp.chmod(0o644)  # mkstemp made it private; a cache file is ordinary data
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _download(url: str, out, progress: ProgressFn | None, timeout: float) -> str:
    """Stream ``url`` into ``out``; returns the sha256 hex digest. Network trouble becomes a CorpusError."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            while True:
                block = response.read(64 * 1024)
                if not block:
                    break
                out.write(block)
                digest.update(block)
                done += len(block)
                if done > 2 * TINY_SHAKESPEARE_BYTES:
                    raise CorpusError(f"The download from {url} is far larger than Tiny Shakespeare; stopped.")
                if progress is not None:
                    progress(done, total)
    except CorpusError:
        raise
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
        reason = getattr(err, "reason", None) or err
        raise CorpusError(f"Could not download Tiny Shakespeare from {url} ({reason}). {OFFLINE_HINT}") from None
    return digest.hexdigest()


def _is_verified(path: Path) -> bool:
    if path.stat().st_size != TINY_SHAKESPEARE_BYTES:
        return False
    return hashlib.sha256(path.read_bytes()).hexdigest() == TINY_SHAKESPEARE_SHA256


def tiny_shakespeare_cached(cache: Path | None = None) -> bool:
    """True when the cache holds a Tiny Shakespeare whose sha256 checks out; never downloads.

    The hash is computed once per (path, size, modification time), so a page may ask on every rerun; a file
    damaged or replaced since has a new modification time and is checked again.
    """
    target = (Path(cache) if cache is not None else cache_dir()) / TINY_SHAKESPEARE_FILE
    try:
        stat = target.stat()
    except OSError:
        return False
    return stat.st_size == TINY_SHAKESPEARE_BYTES and _verified_file(str(target), stat.st_size, stat.st_mtime_ns)


def tiny_shakespeare_damaged(cache: Path | None = None) -> bool:
    """True when a Tiny Shakespeare file is in the cache but fails its size or sha256 check."""
    target = (Path(cache) if cache is not None else cache_dir()) / TINY_SHAKESPEARE_FILE
    return target.exists() and not tiny_shakespeare_cached(cache)


def needs_download(name: str, cache: Path | None = None) -> bool:
    """True when the built-in corpus ``name`` must be downloaded before it loads: Tiny Shakespeare with no copy in
    the cache (``cache``, else cache_dir()) that passes its sha256 check, since a damaged copy is downloaded again.
    False for every other name. Never downloads, and cheap enough to ask on every rerun."""
    return name in DOWNLOADED_CORPORA and not tiny_shakespeare_cached(cache)


@functools.lru_cache(maxsize=8)
def _verified_file(path: str, size: int, mtime_ns: int) -> bool:
    """``_is_verified``, remembered for one version of one file (size and mtime are part of the key)."""
    return _is_verified(Path(path))


# ---------------------------------------------------------------------------------------------------------
# Truncated-BPTT batches


class TBPTTBatcher:
    """B parallel streams over ``ids``, read T characters at a time, with the state meant to carry over.

    Stream b is the contiguous slice ids[b·S : (b+1)·S + 1] with S = (n − 1) // B, so chunk k of every
    stream continues chunk k − 1: inputs x = ids[b·S + kT : b·S + (k+1)T], targets y the same shifted by
    one. After the last whole chunk it wraps to chunk 0 and ``next_batch`` says so, because the carried
    state no longer matches the text and must restart from zeros.

    A text too short for B × T shrinks the batch first, then T; ``batch`` and ``seq_len`` hold what is used.
    """

    def __init__(self, ids: Tensor, batch: int, seq_len: int):
        if batch < 1 or seq_len < 1:
            raise ValueError("batch and T must both be at least 1")
        pairs = len(ids) - 1
        if pairs < 1:
            raise CorpusError("the text is too short to make a single (input, target) pair")
        batch = max(1, min(batch, pairs // seq_len))
        stream = pairs // batch  # S
        seq_len = min(seq_len, stream)
        self.batch, self.seq_len = batch, seq_len
        self.chunks_per_epoch = stream // seq_len
        width = self.chunks_per_epoch * seq_len
        self.inputs = ids[: batch * stream].view(batch, stream)[:, :width]  # (B, S')
        self.targets = ids[1 : batch * stream + 1].view(batch, stream)[:, :width]  # (B, S')
        self.position = 0  # index of the next chunk

    def to(self, device: torch.device | str) -> TBPTTBatcher:
        """Move the streams to ``device`` once, so that batches need no copies."""
        self.inputs, self.targets = self.inputs.to(device), self.targets.to(device)
        return self

    @property
    def chars_per_batch(self) -> int:
        return self.batch * self.seq_len

    def next_batch(self) -> tuple[Tensor, Tensor, bool]:
        """(x (B, T), y (B, T), starts_epoch): the chunk at ``position``; True when the state must restart."""
        k = self.position
        start = k * self.seq_len
        x = self.inputs[:, start : start + self.seq_len]
        y = self.targets[:, start : start + self.seq_len]
        self.position = (k + 1) % self.chunks_per_epoch
        return x, y, k == 0
