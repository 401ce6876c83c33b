"""What one user's input may cost a shared server, named in one place, and how a message quotes that input.

Every reader of user bytes checks its input against these before it reads or allocates, and a refusal says which
limit it met and by how much. No streamlit here; the README's limits table lists the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUOTE_CHARS = 200  # of what a user sent, at most this many characters appear in a message

# Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and the marks U+200E, U+200F,
# U+061C: one of them in user text turns the words around it back to front ("hello" shown as "olleh").
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
LONE_SURROGATES = re.compile("[\ud800-\udfff]")


def name_bidi_controls(text: str) -> str:
    """``text`` with each bidirectional control shown by name (‹U+202E›) instead of reordering what follows."""
    return BIDI_CONTROLS.sub(lambda m: f"‹U+{ord(m.group()):04X}›", text)


def quoted(text: object, limit: int = QUOTE_CHARS) -> str:
    """``repr``-free text of a user's input cut to ``limit`` characters, saying how much more there was; a lone
    surrogate (half of a UTF-16 pair, which no page can encode) is written as its escape, \\ud800."""
    text = str(text)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    return LONE_SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# ---------------------------------------------------------------------------------------------------------
# What a reader of an uploaded file reads at most. Each is checked against what the file declares (shapes, chunk
# sizes, a zip's list of members, a config) before the reader allocates or decompresses anything.

MAX_PARAMETERS = 2_000_000  # a model's parameters, trained live or read from a file: beyond it a CPU is too slow
MAX_CORPUS_BYTES = 4_000_000  # uploaded or pasted text a session trains on (UTF-8 bytes)
MAX_UPLOAD_BYTES = 20_000_000  # text read by corpus.load_text when its caller names no smaller cap
MAX_VOCAB = 1000  # distinct characters of a text: emoji-rich text fits, arbitrary binary does not
MAX_SAMPLE_LENGTH = 2000  # characters of one sample: sampling runs one model step per character
MAX_BEAM_LENGTH = 300  # characters of a beam search, which costs width × length steps
UPLOAD_MAX_VALUES = 5_000_000  # numbers read from a states file uploaded without a model (20 MB as float32)
MAX_VALUES = 40_000_000  # numbers read from one states file (160 MB as float32); an upload passes its own, smaller
MAX_H5_CHUNKS = 100_000  # chunks one HDF5 dataset is stored in: the HDF5 library keeps a record for each it reads
MAX_ARRAYS = 1_000  # arrays, groups and datasets in one states file
MAX_ZIP_DIRECTORY_BYTES = 1_000_000  # a zip file's list of its members (.pt, .npz): about 10,000 members
# The records of a .pt file (its data.pkl: config, history, optimizer settings; the tensors are stored apart).
# torch's weights-only unpickler runs in Python at about 1 µs an instruction, so this is about 3 s at worst; it
# holds the history of some 40,000 training steps.
MAX_RECORD_BYTES = 3_000_000
MAX_HISTORY_RECORDS = 100_000  # training steps and evaluations a checkpoint's history may list
MAX_JSON_BYTES = 1_000_000  # a vocabulary file (JSON)
MAX_JSON_DEPTH = 8  # lists and objects nested in a vocabulary file (a vocabulary needs 3)


@dataclass(frozen=True)
class FileLimits:
    """What a reader of a model file reads at most; None: no bound."""

    parameters: int | None = MAX_PARAMETERS  # the model's
    record_bytes: int | None = MAX_RECORD_BYTES  # a .pt file's data.pkl
    history_records: int | None = MAX_HISTORY_RECORDS  # a checkpoint's training steps, and as many evaluations


UPLOAD_LIMITS = FileLimits()  # a file from a browser: every page's upload, and every reader's default
OWN_FILE_LIMITS = FileLimits(None, None, None)  # the operator's own file (the command line, rnnviz app --model)
