"""Text that ends in half a character reaches the page with U+FFFD in its place, and the user is told so, instead
of the tab going deaf.

A browser text box can hold a lone UTF-16 surrogate (a paste cut between the two halves of an emoji). Streamlit's
protobuf encoder in the browser writes it as three bytes, ED A0–BF 80–BF, which are not UTF-8; Python's protobuf
then refuses the whole message from the tab, and Streamlit 1.67's websocket endpoint
(streamlit/web/server/starlette/starlette_websocket.py) closes the connection: the tab stops answering, with no
word. This module, for that Streamlit version only, lets that endpoint parse such a message again after each
surrogate inside a string field is replaced by U+FFFD's three bytes, EF BF BD (every length prefix stays right),
and notes the session, whose next script run says what happened (``say_repaired_text``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from contextvars import ContextVar

import streamlit as st
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg

from rnnviz.ui.app.sessions import current_session_id
from rnnviz.ui.app.text import literal

_LOGGER = logging.getLogger(__name__)

TARGET_STREAMLIT = "1.67."  # the version whose websocket endpoint this was written against and tested with
SURROGATE_UTF8 = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")  # U+D800–U+DFFF as a browser's encoder writes them
REPLACEMENT_UTF8 = "\ufffd".encode()
EXCERPT_CHARS = 60  # of the repaired text, the notice quotes this much around its first U+FFFD
SHOWN_KEY = "_repaired_text_shown"  # session key: digests of the repaired texts this session was told about
MAX_PENDING_SESSIONS = 1_000  # notes for sessions that never run a script again are dropped beyond this

_pending: dict[str, dict[str, str]] = {}  # session id → {digest of a repaired text: its excerpt}, not yet said
_pending_lock = threading.Lock()
_decided: list[bool] = []  # [whether the repair is in place], once install_repair has decided
_install_lock = threading.Lock()
# What the message just parsed in this websocket task had repaired: set by its parse, read by its delivery, which
# the endpoint does right after the parse, in the same asyncio task, with no await between them.
_just_repaired: ContextVar[tuple[str, ...]] = ContextVar("rnnviz_just_repaired", default=())


def _varint(data: bytearray, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("a varint runs past its field")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _repair_fields(data: bytearray, pos: int, end: int, descriptor: Descriptor | None, repaired: list[str]) -> None:
    """Replace the surrogates inside the string fields of the message ``data[pos:end]`` of type ``descriptor``, in
    place; bytes fields, numbers and unknown fields are left as they are."""
    while pos < end:
        tag, pos = _varint(data, pos, end)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            _, pos = _varint(data, pos, end)
        elif wire_type in (1, 5):
            pos += 8 if wire_type == 1 else 4
        elif wire_type == 2:
            length, pos = _varint(data, pos, end)
            if pos + length > end:
                raise ValueError("a field runs past its message")
            field = descriptor.fields_by_number.get(number) if descriptor is not None else None
            if field is not None and field.type == FieldDescriptor.TYPE_STRING:
                fixed = SURROGATE_UTF8.sub(REPLACEMENT_UTF8, bytes(data[pos:pos + length]))
                if fixed != data[pos:pos + length]:
                    data[pos:pos + length] = fixed  # as long as before: three bytes for three
                    repaired.append(fixed.decode("utf-8", errors="replace"))
            elif field is not None and field.type == FieldDescriptor.TYPE_MESSAGE:
                _repair_fields(data, pos, pos + length, field.message_type, repaired)
            pos += length
        else:
            raise ValueError(f"wire type {wire_type} is not used by Streamlit's messages")
        if pos > end:
            raise ValueError("a field runs past its message")


def repair_lone_surrogates(data: bytes, descriptor: Descriptor = BackMsg.DESCRIPTOR) -> tuple[bytes, list[str]]:
    """``data`` (a serialized ``descriptor`` message) with each lone surrogate in a string field replaced by
    U+FFFD, and the repaired strings; (``data``, []) when there is none or the bytes are not such a message."""
    fixed, repaired = bytearray(data), []
    try:
        _repair_fields(fixed, 0, len(fixed), descriptor, repaired)
    except (ValueError, IndexError):
        return data, []
    return bytes(fixed), repaired


class RepairingBackMsg:
    """Stands in for BackMsg in Streamlit's websocket endpoint: parses as BackMsg does, and a message refused for
    lone surrogates only is parsed again repaired. ``message`` is the BackMsg itself."""

    __slots__ = ("message",)

    def __init__(self) -> None:
        self.message = BackMsg()

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802 (protobuf's name)
        _just_repaired.set(())
        try:
            return self.message.ParseFromString(data)
        except DecodeError:
            fixed, repaired = repair_lone_surrogates(data)
            if not repaired:
                raise
            read = self.message.ParseFromString(fixed)
            _just_repaired.set(tuple(repaired))
            return read

    def __getattr__(self, name: str):
        return getattr(self.message, name)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """At most ``limit`` characters of ``text`` that end a little after its first U+FFFD (a paste is long, and the
    half character is usually at its end)."""
    at = text.find("\ufffd")
    end = min(len(text), max(at + 1 + limit // 4, limit))
    start = max(0, end - limit)
    return f"{'…' if start else ''}{text[start:end]}{'…' if end < len(text) else ''}"


def _note(session_id: str, repaired: tuple[str, ...]) -> None:
    with _pending_lock:
        if session_id not in _pending and len(_pending) >= MAX_PENDING_SESSIONS:
            _pending.clear()
        notes = _pending.setdefault(session_id, {})
        for text in repaired:
            notes.setdefault(hashlib.sha256(text.encode()).hexdigest(), excerpt(text))


def _delivering(handle_backmsg):
    def handle(session_id, msg, *args, **kwargs):
        if isinstance(msg, RepairingBackMsg):
            repaired = _just_repaired.get()
            if repaired:
                _note(session_id, repaired)
            msg = msg.message
        return handle_backmsg(session_id, msg, *args, **kwargs)

    return handle


def install_repair() -> bool:
    """Once per server process, on Streamlit 1.67 only: the websocket endpoint parses messages with
    ``RepairingBackMsg`` and the runtime notes repaired ones for their session. True when it is in place."""
    from streamlit.runtime import Runtime

    if _decided or not Runtime.exists():  # no runtime (AppTest, bare mode): no websocket either
        return bool(_decided and _decided[0])
    with _install_lock:
        if not _decided:
            _decided.append(_install(Runtime.instance()))
    return _decided[0]


def _install(runtime) -> bool:
    try:
        from streamlit.web.server.starlette import starlette_websocket
    except ImportError:
        starlette_websocket = None
    if (not st.__version__.startswith(TARGET_STREAMLIT) or starlette_websocket is None
            or getattr(starlette_websocket, "BackMsg", None) is not BackMsg):
        _LOGGER.warning("Text with a lone surrogate is not repaired: this was written for Streamlit %sx, and this is "
                        "%s; such a text closes its tab's connection.", TARGET_STREAMLIT, st.__version__)
        return False
    runtime.handle_backmsg = _delivering(runtime.handle_backmsg)
    starlette_websocket.BackMsg = RepairingBackMsg
    return True


def say_repaired_text() -> None:
    """Tell this session, once per text, that what it typed or pasted held half a character, now U+FFFD. A note
    leaves the queue only once its toast is sent: a run cut short by the next click says it in the next run."""
    session_id = current_session_id()
    if session_id is None:
        return
    with _pending_lock:
        notes = dict(_pending.get(session_id, {}))
    if not notes:
        return
    shown = st.session_state.setdefault(SHOWN_KEY, set())
    for digest, text in notes.items():
        if digest not in shown:
            st.toast(f"The page reads � (U+FFFD) where your text holds half of a character (a lone UTF-16 "
                     f"surrogate, as a copy cut inside an emoji leaves): “{literal(text)}”",
                     icon=":material/warning:", duration="infinite")
            shown.add(digest)
        with _pending_lock:
            _pending.get(session_id, {}).pop(digest, None)
    with _pending_lock:
        if not _pending.get(session_id, True):
            del _pending[session_id]
