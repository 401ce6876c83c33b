"""A link's value that the page cannot use is said in words, never swapped silently: a cell the explorer's model
lacks, a hand-built step past the end of the bits; user text with bidirectional controls cannot turn a notice back
to front; a UTF-16 file without a byte-order mark is called UTF-16, not binary."""

import pytest

from rnnviz.charlm.corpus import CorpusError, corpus_from_user_text
from rnnviz.ui.kit.widgets import literal
from tests.apptest_helpers import open_page

EXPLORER = "app_pages/hidden_cell_explorer.py"


def explorer_cell(at) -> tuple:
    state = at.session_state
    return state["explorer_layer"], state["explorer_unit"], state["explorer_quantity"]


def link_warnings(at) -> list[str]:
    return [w.value for w in at.warning if "in the link" in w.value or "past the end" in w.value]


@pytest.mark.parametrize("query, named", [
    ({"layer": "5"}, "layer 5, unit"),
    ({"unit": "60000"}, "unit 60000"),
    ({"q": "z"}, "an LSTM has no quantity 'z'"),
])
def test_the_explorer_says_when_the_link_names_a_cell_its_model_lacks(query, named):
    at = open_page(EXPLORER, query=query, timeout=120)
    assert not at.exception
    said = link_warnings(at)
    assert len(said) == 1 and named in said[0], said
    layer, unit, quantity = explorer_cell(at)
    assert f"so the page shows layer {layer}, unit {unit}, {quantity}, the clearest" in said[0]


def test_a_link_to_a_cell_the_model_has_is_taken_as_it_is():
    at = open_page(EXPLORER, query={"unit": "3", "q": "h"}, timeout=120)
    assert not at.exception and not link_warnings(at)
    assert explorer_cell(at) == (0, 3, "h")
    assert at.query_params["unit"] in ("3", ["3"])


def test_the_hand_built_page_says_when_the_link_s_step_is_past_the_end():
    at = open_page("app_pages/hand_built_rnn.py", query={"t": "20"})
    assert link_warnings(at) == ["t = 20 is past the end of these 9 bits, so the page shows t = 9."]
    assert at.session_state["handbuilt_step"] == 9
    fine = open_page("app_pages/hand_built_rnn.py", query={"t": "3"})
    assert not link_warnings(fine) and fine.session_state["handbuilt_step"] == 3


def test_a_bidi_override_in_a_link_is_shown_by_name_and_reverses_nothing():
    at = open_page("app_pages/gradient_decay.py", query={"sigma": "\u202e9.5"})
    notice = next(w.value for w in at.warning if "not valid" in w.value)
    assert "‹U+202E›9.5" in notice and "\u202e" not in notice
    assert literal("a\u2066b\u2069c") == "a‹U+2066›b‹U+2069›c"
    assert literal("שלום") == "שלום"  # right-to-left letters themselves are text, left as they are


def test_utf16_without_a_byte_order_mark_is_called_utf16_not_binary():
    for raw in (("some plain text, " * 20).encode("utf-16-le"), ("some plain text, " * 20).encode("utf-16-be")):
        with pytest.raises(CorpusError, match="looks like UTF-16 text without a byte-order mark"):
            corpus_from_user_text(raw)
    with pytest.raises(CorpusError, match="looks like a binary file"):
        corpus_from_user_text(bytes(range(256)) * 4)


def test_a_junk_link_s_notice_quotes_a_bounded_part_of_it():
    """A link of 100,000 characters in a value and 5,000 names in hide= makes notices of a few hundred characters."""
    junk = "x" * 100_000
    names = ",".join(f"n{i}" for i in range(5_000))
    at = open_page("app_pages/gradient_decay.py", query={"sigma": junk, "hide": names})
    notices = [w.value for w in at.warning if "link" in w.value]
    assert len(notices) == 2, notices
    assert all(len(notice) < 1_000 for notice in notices), [len(notice) for notice in notices]
    assert all("more characters)" in notice for notice in notices)
    assert "sigma=" + "x" * 40 + "… (99,960 more characters)" in notices[0]
