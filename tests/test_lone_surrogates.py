"""A browser message whose text holds half a character (a lone UTF-16 surrogate, written by the browser's encoder as
ED A0–BF 80–BF) parses with U+FFFD in its place, and nothing but string fields is touched."""

import struct

import pytest
from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg

from rnnviz.ui.app.lone_surrogates import RepairingBackMsg, repair_lone_surrogates

HIGH, LOW = b"\xed\xa0\xbd", b"\xed\xb8\x80"  # U+D83D and U+DE00 (the halves of 😀) as the browser writes each alone
PLACEHOLDER = "@@@"  # three ASCII bytes, replaced below by a surrogate's three: every length prefix stays right
NUMBER = struct.unpack("<d", b"\x00\x00\x00\x00" + HIGH + b"\x40")[0]  # a double whose bytes hold the same three


def message_from_browser(text: str, surrogate: bytes) -> bytes:
    """A rerun message with a text box's value ``text`` (its PLACEHOLDER standing for ``surrogate``), a slider's
    NUMBER and a bytes value holding the same three bytes, as the browser sends it."""
    msg = BackMsg()
    msg.rerun_script.query_string = "page=live"
    states = msg.rerun_script.widget_states.widgets
    states.add(id="paste", string_value=text)
    states.add(id="slider", double_value=NUMBER)
    states.add(id="raw", bytes_value=b"keep " + surrogate)
    data = msg.SerializeToString()
    assert data.count(PLACEHOLDER.encode()) == 1
    return data.replace(PLACEHOLDER.encode(), surrogate)


@pytest.mark.parametrize("surrogate", [HIGH, LOW])
def test_a_lone_surrogate_becomes_u_fffd_and_the_rest_of_the_message_is_kept(surrogate):
    data = message_from_browser("pasted text ending in half an emoji " + PLACEHOLDER, surrogate)
    with pytest.raises(DecodeError, match="UTF-8"):
        BackMsg().ParseFromString(data)  # what Streamlit's endpoint does, and then closes the connection
    fixed, repaired = repair_lone_surrogates(data)
    assert len(fixed) == len(data)
    msg = BackMsg()
    msg.ParseFromString(fixed)
    text, slider, raw = msg.rerun_script.widget_states.widgets
    assert text.string_value == "pasted text ending in half an emoji \ufffd"
    assert repaired == ["pasted text ending in half an emoji \ufffd"]
    assert slider.double_value == NUMBER and raw.bytes_value == b"keep " + surrogate
    assert msg.rerun_script.query_string == "page=live"


def test_the_stand_in_parses_as_backmsg_does_and_refuses_what_is_broken_otherwise():
    good = message_from_browser(f"plain {PLACEHOLDER}", b"abc")
    stand_in = RepairingBackMsg()
    stand_in.ParseFromString(good)
    assert stand_in.WhichOneof("type") == "rerun_script" and stand_in.message == BackMsg.FromString(good)
    repaired = RepairingBackMsg()
    repaired.ParseFromString(message_from_browser(PLACEHOLDER, HIGH))
    assert repaired.rerun_script.widget_states.widgets[0].string_value == "\ufffd"
    for broken in (good[:-3], message_from_browser(PLACEHOLDER, b"\xff\xfe\xfd")):
        assert repair_lone_surrogates(broken)[1] == []
        with pytest.raises(DecodeError):
            RepairingBackMsg().ParseFromString(broken)
