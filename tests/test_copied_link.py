"""The "Copy link" box (rnnviz.ui.kit.links.share_link) offers an address that reopens the page with the settings
shown: read the copied link itself, open it in a new session, and the page comes back at those settings."""

from urllib.parse import parse_qsl, urlsplit

from tests.apptest_helpers import instant_shown, move_instant, open_page

PAGE = "app_pages/hand_built_rnn.py"


def copied_link(at) -> str:
    """The address in the Copy-link box: the one code block that holds an address with a query."""
    links = [c.value for c in at.code if "?" in c.value and "=" in c.value.split("?", 1)[1]]
    assert len(links) == 1, [c.value for c in at.code]
    return links[0]


def bits(at) -> str:
    """The input bits the page reads, written together (the box may space them otherwise)."""
    return "".join(ch for ch in at.text_input(key="handbuilt_bits").value if ch in "01")


def test_the_copied_link_reopens_the_hand_built_page_at_the_bits_and_the_step_shown():
    at = open_page(PAGE)
    at.text_input(key="handbuilt_bits").set_value("1, 1, 0, 1").run()
    move_instant(at, "handbuilt_step", 3)  # as the stepper reports a move made in the browser
    assert not at.exception, [e.value for e in at.exception]
    assert "time step **t = 3** of 4" in instant_shown(at, "handbuilt_step")[1]
    query = dict(parse_qsl(urlsplit(copied_link(at)).query))
    opened = open_page(PAGE, query=query)  # whoever the link was sent to: a new session with only the address
    assert not opened.exception, [e.value for e in opened.exception]
    assert not opened.warning, [w.value for w in opened.warning]  # nothing in the link was refused
    assert bits(opened) == bits(at) == "1101"
    assert "time step **t = 3** of 4" in instant_shown(opened, "handbuilt_step")[1], query
