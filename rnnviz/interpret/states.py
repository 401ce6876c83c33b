"""Hidden states from anywhere: a states file with one vector per character, read as LSTMVis takes them.

A model trained elsewhere (another framework, too large for this server) leaves its states s_t ∈ ℝ^H, one after
each character text[t], t = 0 … T−1, the same alignment as h_t in ``finder.trace_cells``. They come as

- ``.npy``: one array, (T, H) or (L, T, H) for L layers;
- ``.npz``: one or more such arrays (``numpy.savez(f, h=…, c=…)``);
- HDF5 (``.h5``, LSTMVis's own format): one or more such datasets, in any groups (e.g. "states1", or one per
  quantity: "h", "c").

The format is told by the bytes' magic, not by the file's name. Every 2-D or 3-D numeric array is a candidate;
shapes are checked before any data is read, and a candidate that cannot be used (wrong length, too large, NaN)
is left out with its reason in ``ImportedStates.skipped``; when none is left the reason is a StatesError.
Nothing is unpickled, and HDF5 soft links, external links, external storage and virtual datasets, which would
reach files on the server, are never followed.

What a file declares is bounded before it is read (rnnviz.limits): a zip's list of members, the values of every
array and, for HDF5, what its chunks hold: a compressed dataset is read only with filters whose output can be
measured first (gzip, shuffle, fletcher32), and each chunk is inflated once, to at most its declared size, before
the HDF5 library reads it.

A 3-D array is always read as (L, T, H); a batch (B, T, H) of B texts would be taken as B layers.
"""

from __future__ import annotations

import io
import lzma
import math
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import MappingProxyType

import numpy as np

from rnnviz.bounded import ZipRefused, open_zip, times
from rnnviz.interpret.finder import QUANTITY_LABELS, CellTrace
from rnnviz.limits import MAX_ARRAYS, MAX_H5_CHUNKS, MAX_VALUES, name_bidi_controls, quoted

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members; an empty zip (only its directory's end)
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"  # at byte 0, or at 512, 1024, 2048 … after a user block
PICKLE_MAGIC = b"\x80"
FORMATS = ("npy", "npz", "h5")
STATE_QUANTITY = "s"  # the quantity of a dataset whose name is none of finder's (h, c, i, f, g, o, r, z, n)
NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats
SHOWN = 4  # datasets named in a message before "and n more"
# HDF5 filters whose output size can be measured before the HDF5 library decodes a chunk: gzip is inflated here
# first, at most to the chunk's size; shuffle keeps the size; fletcher32 adds a 4-byte checksum.
H5_DEFLATE, H5_SHUFFLE, H5_FLETCHER32 = 1, 2, 3
H5_FILTERS = {H5_DEFLATE: "gzip", H5_SHUFFLE: "shuffle", H5_FLETCHER32: "fletcher32"}
FLETCHER32_BYTES = 4
INFLATE_PIECE = 1 << 20  # bytes inflated at a time while a chunk is measured
ZIP_READ_ERRORS = (OSError, EOFError, ValueError, NotImplementedError, zipfile.BadZipFile, zlib.error, lzma.LZMAError)


class StatesError(ValueError):
    """A states file that cannot be used, with the reason in words."""


@dataclass(frozen=True, eq=False)
class ImportedStates:
    """The usable states of one file, by dataset name, each (L, T, H) float32 and read-only, in file order."""

    name: str  # the file's name, as given, cut to QUOTE_CHARS characters (``names`` are its datasets', cut too)
    format: str  # "npy", "npz" or "h5", from the bytes' magic
    datasets: Mapping[str, np.ndarray]  # name → (L, T, H) float32, read-only
    skipped: Mapping[str, str] = field(default_factory=dict)  # name → why it was left out
    # When every dataset has one shape: (their names in QUANTITY_LABELS order, (Q, L, T, H) holding them all), so
    # that the default trace is a view and not a second copy; ``datasets`` are then views into it.
    block: tuple[tuple[str, ...], np.ndarray] | None = field(default=None, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.datasets)

    @property
    def length(self) -> int:
        """T, the number of characters (every dataset has the same)."""
        return next(iter(self.datasets.values())).shape[1]

    def default_names(self) -> tuple[str, ...]:
        """Every dataset when they can be shown together (see ``trace``), else the one named h, else the first."""
        try:
            _quantities(self.datasets, self.names)
            return self.names
        except StatesError:
            return (next((n for n in self.names if _quantity_of(n) == "h"), self.names[0]),)

    def trace(self, names: Sequence[str] | None = None) -> CellTrace:
        """The datasets ``names`` (default: ``default_names()``) as a CellTrace of kind "states".

        A dataset named after one of finder's quantities (the last part of its path: h, c, i, f, g, o, r, z, n)
        keeps that name; any other becomes the quantity s. Datasets shown together must share one (L, T, H)
        and be distinct quantities; they are ordered as QUANTITY_LABELS (h first). There is no model, so no
        predictions: next_ids and next_probs are (T, 0).
        """
        chosen = self.default_names() if names is None else tuple(names)
        quantities = _quantities(self.datasets, chosen)  # (name, quantity) in QUANTITY_LABELS order
        arrays = [self.datasets[name] for name, _ in quantities]
        if len(arrays) == 1:
            values = arrays[0][None]  # (1, L, T, H), a read-only view
        elif self.block is not None and tuple(name for name, _ in quantities) == self.block[0]:
            values = self.block[1]  # (Q, L, T, H), read-only
        else:
            values = np.stack(arrays)  # (Q, L, T, H)
            values.flags.writeable = False
        length = values.shape[2]
        next_ids, next_probs = np.zeros((length, 0), dtype=np.int64), np.zeros((length, 0), dtype=np.float32)
        for array in (next_ids, next_probs):
            array.flags.writeable = False
        return CellTrace("states", tuple(q for _, q in quantities), values, next_ids, next_probs)


def _quantity_of(name: str) -> str:
    last = name.rsplit("/", 1)[-1]
    return last if last in QUANTITY_LABELS else STATE_QUANTITY


def _quantities(datasets: Mapping[str, np.ndarray], names: Sequence[str]) -> list[tuple[str, str]]:
    """(name, quantity) of each chosen dataset, in QUANTITY_LABELS order; StatesError when they cannot go together."""
    if not names:
        raise StatesError("Choose at least one dataset of the states file.")
    unknown = [n for n in names if n not in datasets]
    if unknown:
        raise StatesError(f"The states file has no dataset {unknown[0]!r}; it has {_listing(list(datasets))}.")
    if len(set(names)) < len(names):
        raise StatesError("Each dataset can be chosen once.")
    shapes = {datasets[n].shape for n in names}
    if len(shapes) > 1:
        shown = ", ".join(f"{n} {_shape(datasets[n].shape)}" for n in names[:SHOWN])
        raise StatesError(f"Datasets of different shapes cannot be shown together ({shown}); choose datasets of "
                          "one shape (layers, characters, units).")
    pairs = [(n, _quantity_of(n)) for n in names]
    by_quantity: dict[str, list[str]] = {}
    for n, q in pairs:
        by_quantity.setdefault(q, []).append(n)
    for q, same in by_quantity.items():
        if len(same) > 1:
            what = "a state from your file" if q == STATE_QUANTITY else "the same quantity"
            raise StatesError(f"{_listing(same)} would all be shown as {q} ({what}); choose one of them, or name "
                              f"the datasets after quantities ({', '.join(k for k in QUANTITY_LABELS if k != 's')}).")
    order = list(QUANTITY_LABELS)
    return sorted(pairs, key=lambda pair: order.index(pair[1]))


# ---------------------------------------------------------------------------------------------------------
# Reading


def read_states(data: bytes, filename: str, text_length: int, *, max_values: int = MAX_VALUES) -> ImportedStates:
    """The states in ``data`` (the bytes of ``filename``) for a text of ``text_length`` characters.

    ``max_values``: the most values read from the file in all; every dataset's shape is checked against it
    before its data is read. Every failure is a StatesError that says what to change.
    """
    if text_length < 1:
        raise StatesError("The text is empty: states need the characters they were computed over.")
    filename = _shown_name(filename)
    if not data:
        raise StatesError(f"{filename} is empty.")
    fmt = _format(data, filename)
    entries, close = {"npy": _npy_entries, "npz": _npz_entries, "h5": _h5_entries}[fmt](data, filename)
    skipped: dict[str, str] = {}
    datasets: dict[str, np.ndarray] = {}
    total = candidates = 0
    try:
        for entry in entries:
            if entry.name in datasets or entry.name in skipped:
                continue  # a zip may list one name twice, and names are cut to be shown: the first one counts
            problem = entry.refused or _not_a_candidate(entry.shape, entry.dtype)
            if problem:
                skipped[entry.name] = problem
                continue
            candidates += 1
            problem = (_wrong_shape(entry.shape, text_length) or _too_large(entry.shape, total, max_values)
                       or _stored_too_large(entry, total, max_values))
            if problem:
                skipped[entry.name] = problem
                continue
            try:
                array = _as_states(entry.load())
            except StatesError as err:
                skipped[entry.name] = str(err)
                continue
            datasets[entry.name] = array
            total += array.size
    finally:
        close()
    if not datasets:
        raise StatesError(_nothing_usable(filename, fmt, skipped, candidates))
    block = None
    if len(datasets) > 1 and len({a.shape for a in datasets.values()}) == 1:
        in_file = list(datasets)
        order = tuple(sorted(in_file, key=lambda n: list(QUANTITY_LABELS).index(_quantity_of(n))))  # stable
        stacked = np.empty((len(order), *datasets[order[0]].shape), dtype=np.float32)  # (Q, L, T, H)
        for q, name in enumerate(order):
            stacked[q] = datasets.pop(name)  # each separate copy is freed once it is in the block
        stacked.flags.writeable = False
        datasets = {name: stacked[order.index(name)] for name in in_file}
        block = (order, stacked)
    return ImportedStates(filename, fmt, MappingProxyType(datasets), MappingProxyType(skipped), block)


def _format(data: bytes, filename: str) -> str:
    """"npy", "npz" or "h5" from the magic; StatesError, in words, for anything else."""
    if data.startswith(NPY_MAGIC):
        return "npy"
    if data.startswith(ZIP_MAGICS):
        return "npz"
    offset = 0
    while offset < len(data):
        if data.startswith(HDF5_MAGIC, offset):
            return "h5"
        offset = 512 if offset == 0 else offset * 2
    if data.startswith(PICKLE_MAGIC):
        found = "its bytes are a Python pickle, which could run any code when loaded and is never unpickled here"
    elif _looks_like_text(data):
        found = "its bytes are text" + (" (comma-separated values?)" if b"," in data[:4096] else "")
    else:
        found = "its bytes are neither NumPy's (.npy, .npz) nor HDF5's"
    raise StatesError(f"{filename} is not a states file: {found}. Save your states with numpy.save (.npy), "
                      "numpy.savez (.npz) or h5py (.h5), one vector per character: (T, H) or (layers, T, H).")


def _looks_like_text(data: bytes) -> bool:
    """Whether the file starts as UTF-8 text (a CSV, a JSON list, a text dump of numbers)."""
    head = data[:4096]
    try:
        decoded = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if len(data) <= len(head) or err.start < len(head) - 3:  # not just a character cut by the sample's end
            return False
        decoded = head[: err.start].decode("utf-8")
    return all(c.isprintable() or c in "\t\n\r" for c in decoded)


@dataclass(frozen=True)
class _Entry:
    """One array of a file, known by its header; ``load()`` reads its data."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    load: Callable[[], np.ndarray]
    refused: str | None = None  # why it is never read, whatever its shape
    chunks: tuple[int, int] | None = None  # an HDF5 dataset's (chunks it is read from, values each chunk holds)


def _npy_header(stream, what: str) -> tuple[tuple[int, ...], np.dtype, bool]:
    """(shape, dtype, fortran_order) from an .npy stream positioned at its magic; the data is not read."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(stream)
        else:
            raise ValueError(f"version {version} of the format is unknown")
    except Exception as err:  # noqa: BLE001 - numpy's header parser raises ValueError, SyntaxError, TokenError …
        raise StatesError(f"{what} is not a readable .npy array ({quoted(err)}).") from None
    if any(n < 0 for n in shape):
        raise StatesError(f"{what} is not a readable .npy array (its header gives the shape {quoted(shape)}).")
    return tuple(shape), np.dtype(dtype), fortran


def _read_npy_data(stream, shape: tuple[int, ...], dtype: np.dtype, fortran: bool, what: str) -> np.ndarray:
    """The data that follows an .npy header (already read); never unpickled."""
    size = math.prod(shape) * dtype.itemsize
    try:
        raw = stream.read(size)
    except ZIP_READ_ERRORS as err:
        raise StatesError(f"it could not be read ({quoted(err)})") from None
    if len(raw) < size:
        raise StatesError(f"it is cut short: its header promises {math.prod(shape):,} values, {what} holds fewer")
    array = np.frombuffer(raw, dtype=dtype)
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def _npy_entries(data: bytes, filename: str) -> tuple[Iterable[_Entry], Callable[[], None]]:
    stream = io.BytesIO(data)
    shape, dtype, fortran = _npy_header(stream, filename)
    name = PurePosixPath(filename).stem or "states"
    return [_Entry(name, shape, dtype, lambda: _read_npy_data(stream, shape, dtype, fortran, filename))], stream.close


def _npz_entries(data: bytes, filename: str) -> tuple[Iterable[_Entry], Callable[[], None]]:
    try:
        archive = open_zip(data)
    except ZipRefused as err:
        raise StatesError(f"{filename} starts like a zip file (.npz) but cannot be read as one: {err}.") from None
    members = archive.infolist()
    if len(members) > MAX_ARRAYS:
        archive.close()
        raise StatesError(f"{filename} holds {len(members):,} members, {times(len(members), MAX_ARRAYS)} the "
                          f"{MAX_ARRAYS:,} arrays read from one file here.")
    arrays = [info for info in members if info.filename.endswith(".npy")]  # not is_dir(): it fails on a name ""
    if not arrays:
        archive.close()
        if not members:
            raise StatesError(f"{filename} is an empty .npz: it holds no arrays. Save the states with "
                              "numpy.savez(file, h=states), (T, H) or (layers, T, H).")
        torch_hint = (" It looks like a PyTorch file (torch.save), which holds a model, not states."
                      if any(info.filename.endswith("data.pkl") for info in members) else "")
        inside = _listing([_shown_name(info.filename) for info in members])
        raise StatesError(f"{filename} is a zip file with no .npy arrays inside ({inside}).{torch_hint}"
                          f" Save the states with numpy.savez(file, h=states), (T, H) or (layers, T, H).")

    def entries() -> Iterator[_Entry]:
        for info in arrays:
            name = _shown_name(info.filename[: -len(".npy")])
            what = f"{filename}: {name}"
            try:
                stream = archive.open(info)
            except (*ZIP_READ_ERRORS, RuntimeError) as err:  # RuntimeError: encrypted
                raise StatesError(f"{what} cannot be read from the zip file ({quoted(err)}).") from None
            with stream:  # read while open: read_states loads an entry before it asks for the next
                shape, dtype, fortran = _npy_header(stream, what)
                yield _Entry(name, shape, dtype,
                             lambda s=stream, h=(shape, dtype, fortran), w=what: _read_npy_data(s, *h, w))

    return entries(), archive.close


def _h5_entries(data: bytes, filename: str) -> tuple[Iterable[_Entry], Callable[[], None]]:
    import h5py  # only when an HDF5 file comes

    # A damaged header makes the HDF5 library raise OSError, RuntimeError ("Object visitation failed"), KeyError,
    # OverflowError, ValueError …: every one of them is a file that cannot be read.
    try:
        handle = h5py.File(io.BytesIO(data), "r")
    except Exception as err:  # noqa: BLE001
        raise StatesError(f"{filename} starts like an HDF5 file but cannot be opened as one ({quoted(err)}).") from None
    found: list = []

    def visit(name, obj):
        found.append((name, obj))
        return True if len(found) > MAX_ARRAYS else None  # anything but None stops the visit

    # visititems reaches objects through hard links only, each once (loops included): soft and external links,
    # which could name other files on the server, are never followed.
    try:
        handle.visititems(visit)
    except Exception as err:  # noqa: BLE001
        handle.close()
        raise StatesError(f"{filename} is an HDF5 file whose groups cannot be read ({quoted(err)}).") from None
    if len(found) > MAX_ARRAYS:
        handle.close()
        raise StatesError(f"{filename} holds more than {MAX_ARRAYS:,} groups and datasets, the most read from one "
                          "file here.")

    def entries() -> Iterator[_Entry]:
        for name, obj in found:
            if not isinstance(obj, h5py.Dataset):
                continue
            shown = _shown_name(name)
            try:
                yield _h5_entry(shown, obj, h5py)
            except Exception as err:  # noqa: BLE001 - a damaged dataset header
                yield _Entry(shown, (), np.dtype(np.float32), _unread, f"its header cannot be read ({quoted(err)})")

    return entries(), handle.close


def _unread() -> np.ndarray:
    raise StatesError("it is never read")


def _h5_entry(name: str, dataset, h5py) -> _Entry:
    """An HDF5 dataset's entry from its header; its layout and filters are checked before any chunk is read."""
    shape = tuple(dataset.shape or ())
    refused, chunks = None, None
    if dataset.is_virtual or dataset.external:
        refused = "its data lies in other files (a virtual dataset or external storage), never read here"
    elif h5py.check_string_dtype(dataset.dtype) is not None:
        refused = "it holds text, not numbers"
    elif dataset.dtype.hasobject:
        refused = "its values are not numbers (variable-length data or references)"
    elif dataset.chunks is not None:
        refused, chunks = _h5_chunking(dataset, shape)
    return _Entry(name, shape, dataset.dtype, lambda: _read_h5(dataset, shape), refused, chunks)


def _h5_chunking(dataset, shape: tuple[int, ...]) -> tuple[str | None, tuple[int, int] | None]:
    """(why a chunked dataset is never read, or None; (chunks read, values each holds)), from its header only."""
    chunk = tuple(dataset.chunks)
    if len(chunk) != len(shape) or min(chunk, default=1) < 1:
        return f"its chunks {_shape(chunk)} do not fit its shape {_shape(shape)}", None
    plist = dataset.id.get_create_plist()
    filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    codes = [code for code, *_ in filters]
    for code, _, _, label in filters:
        if code not in H5_FILTERS:
            label = quoted(label.decode("utf-8", "replace") if isinstance(label, bytes) else label, 40)
            return (f"it is compressed with HDF5 filter {code} ({label}), which is not read here: only gzip, shuffle "
                    "and fletcher32 are, whose output can be measured before it is decoded; save it with "
                    'compression="gzip" or none'), None
    if len(set(codes)) < len(codes):
        return "its HDF5 filters repeat one filter", None
    read = math.prod(math.ceil(n / c) for n, c in zip(shape, chunk, strict=True))
    stored = dataset.id.get_num_chunks()
    for count in (read, stored):
        if count > MAX_H5_CHUNKS:
            return (f"it is stored in {count:,} chunks, {times(count, MAX_H5_CHUNKS)} the {MAX_H5_CHUNKS:,} read "
                    "from one dataset here; save it with larger chunks (chunks=True lets h5py choose)"), None
    return None, (read, math.prod(chunk))


def _read_h5(dataset, shape: tuple[int, ...]) -> np.ndarray:
    try:
        if dataset.chunks is not None and dataset.id.get_create_plist().get_nfilters():
            _check_chunks(dataset, shape)
        return np.asarray(dataset[()])
    except StatesError:
        raise
    except Exception as err:  # noqa: BLE001 - the HDF5 library's many errors for damaged data
        raise StatesError(f"it could not be read ({quoted(err)})") from None


def _check_chunks(dataset, shape: tuple[int, ...]) -> None:
    """StatesError unless every stored chunk inside ``shape`` decodes to at most its declared size.

    The HDF5 library inflates a gzip chunk into a buffer it doubles until the stream ends, whatever size the chunk
    declares: 1 MB of zeros inflates to 1 GB. Here each chunk is inflated once, in pieces that are dropped, and
    measured against its declared size before the library reads it.
    """
    plist = dataset.id.get_create_plist()
    codes = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    chunk_bytes = math.prod(dataset.chunks) * dataset.dtype.itemsize
    offsets = []
    if hasattr(dataset.id, "chunk_iter"):
        dataset.id.chunk_iter(lambda info: offsets.append(info.chunk_offset))
    else:
        offsets = [dataset.id.get_chunk_info(i).chunk_offset for i in range(dataset.id.get_num_chunks())]
    for offset in offsets:
        if any(o >= n for o, n in zip(offset, shape, strict=True)):
            continue  # beyond the dataset's extent: never read
        mask, raw = dataset.id.read_direct_chunk(offset)
        size = _decoded_size(memoryview(raw), mask, codes, chunk_bytes)
        if size is None:
            raise StatesError(f"its chunk at {_shape(offset)} is damaged: its compressed data cannot be inflated")
        if size > chunk_bytes:
            raise StatesError(f"its chunk at {_shape(offset)} inflates to more than the {chunk_bytes:,} bytes its "
                              f"chunk shape holds (at least {size:,}, {times(size, chunk_bytes)} as many): the file "
                              "is damaged or made to exhaust memory")


def _decoded_size(raw: memoryview, mask: int, codes: list[int], limit: int) -> int | None:
    """Bytes a chunk decodes to through ``codes`` (write order; bit i of ``mask``: filter i skipped), counted up to
    a little past ``limit``; None when its gzip stream is damaged."""
    size = len(raw)
    for index in reversed(range(len(codes))):
        if mask & (1 << index):
            continue
        if codes[index] == H5_FLETCHER32:
            if len(raw) < FLETCHER32_BYTES:
                return None
            raw = raw[:-FLETCHER32_BYTES]
            size = len(raw)
        elif codes[index] == H5_DEFLATE:
            size = _inflated_size(raw, limit)
            if size is None or size > limit:
                return size
            raw = None  # what came before it keeps the size (shuffle)
    return size


def _inflated_size(stream: memoryview, limit: int) -> int | None:
    """Bytes a zlib stream inflates to, counted in pieces that are dropped, up to a piece past ``limit``."""
    inflater = zlib.decompressobj()
    size, pending = 0, stream
    try:
        while not inflater.eof and size <= limit:
            piece = inflater.decompress(pending, INFLATE_PIECE)
            pending = inflater.unconsumed_tail
            size += len(piece)
            if not piece and not pending:
                break
    except zlib.error:
        return None
    return size


# ---------------------------------------------------------------------------------------------------------
# Checks, each before the data is read unless it needs the values


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(f"{n:,}" for n in shape) + ")"


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _not_a_candidate(shape: tuple[int, ...], dtype: np.dtype) -> str | None:
    """Why an array with this shape and dtype cannot hold states, or None."""
    if dtype.hasobject:
        return ("it holds Python objects, which only pickle could read, and an upload is never unpickled; save "
                "a float array: np.asarray(states, dtype=np.float32)")
    if dtype.kind == "c":
        return "it holds complex numbers; save their real part (states.real) or magnitude"
    if dtype.kind in "US":
        return "it holds text, not numbers"
    if dtype.kind not in NUMERIC_KINDS:
        return f"its values are not numbers (dtype {dtype})"
    if len(shape) not in (2, 3):
        if len(shape) == 0:
            return "it holds a single value, not one vector per character"
        if len(shape) == 1:
            return (f"it is 1-D, {_shape(shape)}: states need one vector per character, (T, H) or (layers, T, H); "
                    "a single unit's values go in as states[:, None]")
        batch = " (for a batch of one, drop its axis: states[0])" if shape[0] == 1 else ""
        return (f"it has {len(shape)} dimensions, {_shape(shape)}: states have 2, (T, H), or 3, (layers, T, H)"
                f"{batch}; save several quantities as separate arrays of an .npz or datasets of an .h5")
    if math.prod(shape) == 0:
        return f"it has no values, shape {_shape(shape)}"
    return None


def _wrong_shape(shape: tuple[int, ...], text_length: int) -> str | None:
    """Why a 2-D or 3-D shape does not give one vector per character of the text, or None."""
    axis = 0 if len(shape) == 2 else 1
    steps = shape[axis]
    if steps == text_length:
        return None
    head = (f"its shape {_shape(shape)} holds {steps:,} states but the text has {text_length:,} characters; "
            "it needs one state per character")
    layout = "(T, H)" if len(shape) == 2 else "(layers, T, H)"
    if shape[-1] == text_length:
        fix = "states.T" if len(shape) == 2 else "states.transpose(0, 2, 1)"
        return f"{head}: it looks transposed, units before characters; save {fix} as {layout}"
    if len(shape) == 3 and shape[0] == text_length:
        return f"{head}: it looks like (T, layers, H); save np.moveaxis(states, 1, 0) as (layers, T, H)"
    cut = "states[1:]" if len(shape) == 2 else "states[:, 1:]"
    if steps == text_length + 1:
        return (f"{head}: one state too many, perhaps the initial state before the first character (h_0); "
                f"drop it ({cut})")
    if steps == text_length - 1:
        return (f"{head}: one state too few, as when a model reads text[:-1] to predict text[1:]; give the text "
                "without its last character, or add the state after it")
    if steps < text_length:
        return (f"{head}: with fewer states than characters these may be one per word or token, as LSTMVis's "
                "word-level files hold, while rnnviz needs one per character")
    return f"{head}: were the states computed over a longer text? Give that same text"


def _shown_name(name: str) -> str:
    """A name from the file (or the file's own) as messages and the page show it: cut, bidi controls named."""
    return name_bidi_controls(quoted(name))


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 10e6 else f"{size / 1e6:.2g} MB"


def _too_large(shape: tuple[int, ...], total: int, max_values: int) -> str | None:
    size = math.prod(shape)
    if total + size <= max_values:
        return None
    before = f" (with the {total:,} values read before it, {total + size:,})" if total else ""
    return (f"it holds {size:,} values, {_shape(shape)}{before}, more than the {max_values:,} read from one file "
            f"here ({_megabytes(max_values * 4)} as float32); save fewer characters or units")


def _stored_too_large(entry: _Entry, total: int, max_values: int) -> str | None:
    """Why an HDF5 dataset's chunks hold too much to decompress, though its shape fits, or None."""
    if entry.chunks is None:
        return None
    count, each = entry.chunks
    size = count * each
    if total + size <= max_values:
        return None
    return (f"its shape holds {math.prod(entry.shape):,} values, but it is stored in {count:,} chunk"
            f"{'s' * (count != 1)} of {each:,} values each, {size:,} values to decompress, "
            f"{times(total + size, max_values)} the {max_values:,} read from one file here; save it with chunks "
            "that fit its shape (chunks=True lets h5py choose)")


def _as_states(array: np.ndarray) -> np.ndarray:
    """(L, T, H) float32, read-only; StatesError for NaN, infinity or values beyond float32's range."""
    if array.dtype.kind == "f":
        _check_finite(array)
    with np.errstate(over="ignore"):  # values beyond float32's range become ±inf, reported just below
        out = np.ascontiguousarray(array, dtype=np.float32)
    if array.dtype.kind == "f" and array.dtype.itemsize > 4:
        _check_finite(out, beyond_float32=True)
    if out.ndim == 2:
        out = out[None]  # (1, T, H)
    out.flags.writeable = False
    return out


def _check_finite(array: np.ndarray, beyond_float32: bool = False) -> None:
    """StatesError with the count and the first position (in time) of values that are not finite."""
    bad = ~np.isfinite(array)
    count = int(bad.sum())
    if not count:
        return
    layered = bad if bad.ndim == 3 else bad[None]  # (L, T, H)
    t = int(np.argmax(layered.any(axis=(0, 2))))
    layer, unit = (int(k) for k in np.argwhere(layered[:, t])[0])
    where = f"character {t:,}, unit {unit}" + (f", layer {layer}" if bad.ndim == 3 else "")
    nan = int(np.isnan(array).sum())
    if beyond_float32:
        what = "beyond float32's range (±3.4e38)"
    else:
        what = "NaN" if nan == count else "infinite" if nan == 0 else f"NaN or infinite ({nan:,} NaN)"
    verb = "is" if count == 1 else "are"
    raise StatesError(f"{count:,} of its {array.size:,} values {verb} {what}, the first at {where}; states must "
                      "be finite numbers")


def _nothing_usable(filename: str, fmt: str, skipped: Mapping[str, str], candidates: int) -> str:
    """The message when no dataset of the file can be used."""
    if not skipped:
        return f"{filename} holds no arrays."
    if len(skipped) == 1:
        name, reason = next(iter(skipped.items()))
        return f"{filename if fmt == 'npy' else f'{filename}: {name!r}'} cannot be used: {reason}."
    reasons = "; ".join(f"{name!r}: {reason}" for name, reason in list(skipped.items())[:SHOWN])
    more = f"; and {len(skipped) - SHOWN} more" if len(skipped) > SHOWN else ""
    if not candidates:
        kind = "dataset" if fmt == "h5" else "array"
        return (f"{filename} holds no 2-D or 3-D {kind} of numbers, one vector per character ((T, H) or "
                f"(layers, T, H)): {reasons}{more}.")
    return f"None of the {len(skipped)} arrays of {filename} can be used: {reasons}{more}."


# ---------------------------------------------------------------------------------------------------------
# The chance baseline, and writing states files


def shifted_trace(trace: CellTrace, seed: int) -> CellTrace:
    """``trace`` with every unit's time series circularly shifted by its own random offset in [T/10, 9T/10].

    The chance baseline for states without a model. With a model, the explorer ranks a randomly initialised
    model of the same shape to show which |r| chance alone gives; with states only there is none. Shuffling the
    time steps would be wrong: it makes every unit white noise, and a slow, smooth unit (a counter) correlates by
    chance with a smooth feature (bracket depth) far more than noise does, so the baseline would look too low.
    A circular shift a'_t = a_{(t − k) mod T} keeps each unit's values and its autocorrelation (but for one seam)
    and breaks only its alignment with the text. Offsets stay at least T/10 from 0 and from T, so that a unit is
    never read a few characters late and still aligned. All quantities of one (layer, unit) share an offset,
    as they move together. A text that repeats itself with period P is aligned again by a shift of P, and there
    the baseline runs high. The same ``seed`` gives the same trace; there are no predictions ((T, 0)).
    """
    n_q, n_l, length, hidden = trace.values.shape
    if length < 2:
        raise ValueError(f"a shift needs at least 2 characters, the trace has {length}")
    low, high = max(1, math.ceil(length / 10)), max(1, (9 * length) // 10)
    offsets = np.random.default_rng(seed).integers(low, high, size=(n_l, hidden), endpoint=True)  # (L, H)
    values = np.empty_like(trace.values)  # (Q, L, T, H)
    steps = np.arange(length)[:, None]  # (T, 1)
    for layer in range(n_l):
        source = (steps - offsets[layer][None, :]) % length  # (T, H): a'_t = a_{(t − k) mod T}
        for q in range(n_q):
            values[q, layer] = np.take_along_axis(trace.values[q, layer], source, axis=0)
    next_ids, next_probs = np.zeros((length, 0), dtype=np.int64), np.zeros((length, 0), dtype=np.float32)
    for array in (values, next_ids, next_probs):
        array.flags.writeable = False
    return CellTrace(trace.kind, trace.quantities, values, next_ids, next_probs)


def states_file_bytes(trace: CellTrace, fmt: str, quantity: str | None = None) -> bytes:
    """``trace``'s states as a file LSTMVis and ``read_states`` take: "npy", "npz" or "h5".

    npy holds one array, ``quantity`` (default the first, h for a model's trace); npz and h5 hold one array or
    dataset per quantity, named after it. Each is (T, H) for one layer, as LSTMVis reads it, else (L, T, H).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")

    def states(q: str) -> np.ndarray:
        values = trace.values[trace.quantities.index(q)]  # (L, T, H)
        return np.ascontiguousarray(values[0] if values.shape[0] == 1 else values, dtype=np.float32)

    buffer = io.BytesIO()
    if fmt == "npy":
        chosen = trace.quantities[0] if quantity is None else quantity
        if chosen not in trace.quantities:
            raise ValueError(f"the trace has no quantity {chosen!r}; choose {', '.join(trace.quantities)}")
        np.save(buffer, states(chosen), allow_pickle=False)
    elif fmt == "npz":
        np.savez(buffer, **{q: states(q) for q in trace.quantities})
    else:
        import h5py

        with h5py.File(buffer, "w") as handle:
            for q in trace.quantities:
                handle.create_dataset(q, data=states(q))
    return buffer.getvalue()
