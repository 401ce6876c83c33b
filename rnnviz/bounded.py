"""Checks a reader of user bytes makes before it allocates: a zip file's members, the tensors a file holds, the
plain values around them. Each answers with the problem in words (None when there is none), and the reader raises
its own error class (CheckpointError, StatesError, …) with it.

A file's declared sizes are what a reader would allocate or decompress; they are checked against the limits of
``rnnviz.limits`` first, and a refusal says which limit it met and by how much.
"""

from __future__ import annotations

import io
import pickle
import warnings
import zipfile
import zlib

import torch
from torch import Tensor

from rnnviz.limits import MAX_RECORD_BYTES, MAX_ZIP_DIRECTORY_BYTES, quoted

ZIP_MAGIC = b"PK\x03\x04"
ZIP_END = b"PK\x05\x06"  # the end of a zip's list of members: where it starts and how many bytes it takes
ZIP64_END = b"PK\x06\x06"
ZIP_END_BYTES, ZIP64_END_BYTES, ZIP64_LOCATOR_BYTES = 22, 56, 20
ZIP_LONGEST_COMMENT = 65_535
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
               zipfile.ZIP_LZMA: "lzma"}  # every method Python's zipfile reads
ZIP_ENCRYPTED = 0x1  # bit 0 of a member's flags
BIGGEST_INT = 2**63  # the plain numbers a file may hold: int64's range, and far fewer digits than str() refuses
# What a weights-only file may hold besides tensors and containers, each of bounded size; torch's own small types
# (a dtype or device stored beside the weights) included.
PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes, bytearray, torch.dtype, torch.device, torch.layout,
               torch.memory_format)
PAYLOAD_DEPTH = 10  # lists and dicts nested in a file; a checkpoint nests 4 (optimizer/state/0/exp_avg)


class ZipRefused(ValueError):
    """A zip archive that is not opened, with the reason in words."""


def times(size: float, limit: float) -> str:
    """How many times ``limit`` ``size`` is, for a refusal: "1.5×", "32×", "20,000×"."""
    ratio = size / limit
    return f"{ratio:.2g}×" if ratio < 10 else f"{ratio:,.0f}×"


# ---------------------------------------------------------------------------------------------------------
# Zip archives (torch.save's .pt, numpy's .npz)


def open_zip(data: bytes, *, stored_only: bool = False) -> zipfile.ZipFile:
    """``data`` as a ZipFile, once its list of members is known to be small and every member readable.

    ``stored_only``: every member must be stored as it is, as torch.save writes them, so that what the members
    hold adds up to no more than the file itself (a deflated or overlapping member could hold far more). Every
    refusal is a ZipRefused in words.
    """
    directory = _directory_bytes(data)
    if directory is not None and directory > MAX_ZIP_DIRECTORY_BYTES:
        raise ZipRefused(f"its list of members takes {directory:,} bytes, {times(directory, MAX_ZIP_DIRECTORY_BYTES)} "
                         f"the {MAX_ZIP_DIRECTORY_BYTES:,} read here")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except NotImplementedError as err:  # e.g. "zip file version 12.7": a member asks for a newer zip reader
        raise ZipRefused(f"its zip header asks for something this reader does not do ({quoted(err)})") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, OverflowError) as err:
        raise ZipRefused(f"it is truncated or damaged ({quoted(err)})") from None
    try:
        _check_members(archive, len(data), stored_only)
    except ZipRefused:
        archive.close()
        raise
    return archive


def _check_members(archive: zipfile.ZipFile, length: int, stored_only: bool) -> None:
    total = 0
    for info in archive.infolist():
        name = quoted(info.filename)
        if info.flag_bits & ZIP_ENCRYPTED:
            raise ZipRefused(f"its member {name} is encrypted")
        method = ZIP_METHODS.get(info.compress_type)
        if method is None:
            raise ZipRefused(f"its member {name} is compressed with method {info.compress_type}, which Python's "
                             f"zipfile does not read (it reads {', '.join(ZIP_METHODS.values())})")
        if stored_only and (info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size):
            raise ZipRefused(f"its member {name} is compressed ({method}); torch.save stores every member as it is")
        total += info.file_size
    if stored_only and total > length:
        raise ZipRefused(f"its members claim {total:,} bytes in all, {times(total, length)} the {length:,} bytes of "
                         "the file itself: they overlap or their sizes are damaged")


def _directory_bytes(data: bytes) -> int | None:
    """The size a zip's end record gives its list of members (as zipfile reads it), or None without one."""
    at = data.rfind(ZIP_END, max(0, len(data) - ZIP_END_BYTES - ZIP_LONGEST_COMMENT))
    if at < 0 or at + ZIP_END_BYTES > len(data):
        return None
    size = int.from_bytes(data[at + 12 : at + 16], "little")
    record = at - ZIP64_LOCATOR_BYTES - ZIP64_END_BYTES  # where zipfile looks for the zip64 end record
    if record >= 0 and data[record : record + 4] == ZIP64_END:
        size = max(size, int.from_bytes(data[record + 40 : record + 48], "little"))
    return size


# ---------------------------------------------------------------------------------------------------------
# torch.save's files


def load_torch_file(raw: bytes, error: type[Exception] = ValueError, noun: str = "file", pickled_hint: str = "",
                    max_record_bytes: int | None = MAX_RECORD_BYTES):
    """``torch.load(..., weights_only=True, map_location="cpu")`` of a file's bytes, a zip archive checked whole
    before anything is unpickled; every failure an ``error`` in words that calls the file ``noun``.

    The archive's members must be stored as torch.save stores them, and its records (data.pkl) take at most
    ``max_record_bytes`` (None: any size): torch unpickles them in Python. What it holds must be plain data
    (``plain_tensors``) and every tensor own its values (``storage_problem``).
    """
    if raw.startswith(ZIP_MAGIC):  # torch.save's zip archive (the legacy format is a bare pickle)
        try:
            with open_zip(raw, stored_only=True) as archive:
                records = sum(info.file_size for info in archive.infolist() if info.filename.endswith(".pkl"))
                damaged = archive.testzip() if max_record_bytes is None or records <= max_record_bytes else None
        except ZipRefused as err:
            raise error(f"The {noun} file cannot be read: {err}.") from None
        except (zipfile.BadZipFile, EOFError, ValueError, OSError, NotImplementedError, RuntimeError, zlib.error):
            raise error(f"The {noun} file is truncated or damaged; save or download it again.") from None
        _check_records(records, max_record_bytes, error, noun)
        if damaged is not None:
            raise error(f"The {noun} file is damaged ({quoted(damaged)} does not match its checksum).")
    else:  # torch's format before 1.6: its records and tensors are one pickle stream
        _check_records(len(raw), max_record_bytes, error, noun)
    try:
        with warnings.catch_warnings():  # e.g. "Detected pickle protocol 4": the words below say what matters
            warnings.simplefilter("ignore", UserWarning)
            payload = torch.load(io.BytesIO(raw), weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        raise error(
            f"The {noun} holds Python objects other than tensors and plain values (it may try to run code), so it "
            f"was refused without running it.{pickled_hint}"
        ) from None
    except Exception as err:  # torch raises RuntimeError and friends for damaged archives
        raise error(f"The {noun} could not be read ({type(err).__name__}); it may be damaged.") from None
    problem, tensors = plain_tensors(payload, PAYLOAD_DEPTH)
    if problem:
        raise error(f"The {noun} holds more than tensors and plain values: {problem}.")
    for where, tensor in tensors:
        problem = storage_problem(tensor)
        if problem:
            raise error(f"The {noun}'s tensor {where or '(the whole file)'} cannot be used: {problem}.")
    return payload


def _check_records(size: int, limit: int | None, error: type[Exception], noun: str) -> None:
    if limit is not None and size > limit:
        raise error(f"The {noun}'s records (its data.pkl: config, history, settings) take {size:,} bytes, "
                    f"{times(size, limit)} the {limit:,} read here: torch reads them in Python, "
                    "about a second a megabyte. A history of tens of thousands of steps is more than a file may carry.")


# ---------------------------------------------------------------------------------------------------------
# Tensors and the plain values around them


def storage_problem(tensor: Tensor) -> str | None:
    """Why ``tensor`` does not own the values it shows, or None.

    Each value of a tensor read from a file must have its own place in the tensor's storage: a view with a stride
    of 0 (``torch.zeros(1).expand(16000, 4000)``) or overlapping strides shows millions of values stored in a few
    bytes, which pass a file-size limit and then cost their full size in every copy and product.
    """
    if tensor.layout != torch.strided or tensor.device.type != "cpu":
        return f"it is a {str(tensor.layout).removeprefix('torch.')} tensor on {tensor.device.type}, not a dense one"
    if tensor.numel() == 0:
        return None
    extent = 0  # the farthest element from the first, in elements
    dims = sorted((stride, size) for size, stride in zip(tensor.shape, tensor.stride(), strict=True) if size > 1)
    for stride, size in dims:
        if stride <= extent:
            stored = tensor.untyped_storage().nbytes()
            return (f"its {tensor.numel():,} values are a view that repeats what {stored:,} bytes hold (a stride "
                    f"of {stride}, as torch.zeros(1).expand(…) makes); save real tensors, e.g. "
                    "{k: v.clone() for k, v in model.state_dict().items()}")
        extent += stride * (size - 1)
    needed = (tensor.storage_offset() + extent + 1) * tensor.element_size()
    stored = tensor.untyped_storage().nbytes()
    if needed > stored:
        return f"it reaches {needed:,} bytes into a storage of {stored:,}"
    return None


def nonfinite_problem(tensor: Tensor) -> str | None:
    """How many of a floating-point tensor's values are NaN or infinite, or None when all are finite."""
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return None
    finite = torch.isfinite(tensor)
    if bool(finite.all()):
        return None
    bad = tensor.numel() - int(finite.sum())
    nan = int(torch.isnan(tensor).sum())
    what = "NaN" if nan == bad else "infinite" if nan == 0 else f"NaN or infinite ({nan:,} NaN)"
    verb = "is" if bad == 1 else "are"
    return f"{bad:,} of its {tensor.numel():,} values {verb} {what}"


def plain_tensors(value, max_depth: int) -> tuple[str | None, list[tuple[str, Tensor]]]:
    """(why ``value`` is not plain data, or None; (where, tensor) for each tensor in it, once: "optimizer/state/0").

    Plain data is dicts keyed by names or ints, lists and tuples, at most ``max_depth`` deep, of PLAIN values (ints
    in int64's range) and tensors. Each container is looked at once, however often it is referred to, so that a
    file whose lists share their items (a few bytes that unfold into billions) costs no more than its own size.
    """
    if isinstance(value, Tensor):
        return None, [("", value)]
    seen, found = {id(value)}, []
    stack = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, Tensor):
            found.append((path, item))
            continue
        if isinstance(item, dict):
            if not all(type(key) in (str, int) for key in item):
                return "it has a dict whose keys are neither names nor numbers", found
            pairs = item.items()
        elif isinstance(item, list | tuple):
            pairs = enumerate(item)
        else:
            return _odd_leaf(item), found
        if depth >= max_depth:
            return f"it nests lists or dicts more than {max_depth} deep", found
        for key, child in pairs:
            if type(child) in PLAIN_TYPES:  # most items: a number, a name, one record referred to again
                if type(child) is int and not -BIGGEST_INT <= child < BIGGEST_INT:
                    return _odd_leaf(child), found
                continue
            if id(child) in seen:
                continue
            seen.add(id(child))
            if not isinstance(child, Tensor | dict | list | tuple):
                problem = _odd_leaf(child)
                if problem:
                    return problem, found
                continue
            stack.append((child, f"{path}/{quoted(key, 40)}" if path else quoted(key, 40), depth + 1))
    return None, found


def _odd_leaf(item) -> str | None:
    """Why a value that is no container or tensor is not plain, or None."""
    if not isinstance(item, PLAIN_TYPES):
        return f"it holds a value of type {type(item).__name__}, which is no plain value"
    if isinstance(item, int) and not -BIGGEST_INT <= item < BIGGEST_INT:
        return f"it holds a number of {item.bit_length():,} bits; the numbers of a model file fit in 64"
    return None
