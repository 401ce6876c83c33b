"""Every page's settings travel in its address (rnnviz/ui/kit/links.py), checked over the page registry, so a new
page is covered without a new test: a link with every parameter set to its example reopens the page with those
values (in the widgets' state and in the address), and a link with junk in every parameter says so in a notice,
leaves the defaults and raises nothing. The sidebar's seed travels the same way on every page."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rnnviz.ui.app.navigation import SEED_KEY
from rnnviz.ui.app.registry import PAGES
from rnnviz.ui.kit.links import DECLARED
from tests.apptest_helpers import APP

# Not a number, not a choice, longer than any text box takes, with markup and a bidirectional override in it.
JUNK = "\u202ejunk<b>*" + "x" * 400
LESSONS = [spec for spec in PAGES if spec.on_course]
# Settings whose example must be the default value, and why: nothing else on the page can take another.
NO_OTHER_VALUE = {("hidden-cell-explorer", "layer"): "every shipped recurrent model has a single layer"}


def open_link(spec, query: dict | None = None) -> AppTest:
    """The page as a browser opens its link: the default page's first run draws it with the link's query; another
    page needs a first run (of Home, without the query: AppTest switches pages only after one) before it."""
    at = AppTest.from_file(APP, default_timeout=120)
    if not spec.default:
        at.run()
        at.switch_page(spec.path)
    at.query_params.update(query or {})
    return at.run()


def declared(at, spec):
    assert DECLARED in at.session_state, f"{spec.path}: restore_from_link was never called"
    page, params = at.session_state[DECLARED]
    assert spec.path != "app_pages/home.py" or page == "home", page
    assert spec.path == "app_pages/home.py" or page != "home", f"{spec.path} declares no link parameters"
    return params


def query_value(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def link_notices(at) -> str:
    return "\n".join(w.value for w in at.warning if "in the link" in w.value)


@pytest.mark.parametrize("spec", LESSONS, ids=lambda spec: spec.url_path)
def test_a_link_with_every_setting_reopens_the_page_with_them(spec):
    plain = open_link(spec)
    assert not plain.exception, plain.exception
    params = declared(plain, spec)
    defaults = {p.name: plain.session_state[p.key] if p.key in plain.session_state else None for p in params}
    for p in params:  # the address the page writes at its defaults reads back as them (F5, Copy link)
        if p.key in plain.session_state:
            written = query_value(plain, p.name)
            assert written is not None, f"{spec.path}: ?{p.name}= is not in the address the page writes"
            assert p.parse(written) == defaults[p.name], f"{spec.path}: ?{p.name}={written} reads back differently"
    for p in params:
        assert p.example, f"{spec.path}: ?{p.name}= has no example value"
        if (spec.url_path, p.name) not in NO_OTHER_VALUE:
            assert p.parse(p.example) != defaults[p.name], f"{spec.path}: ?{p.name}={p.example} is the default"

    linked = open_link(spec, {p.name: p.example for p in params} | {"seed": "7"})
    assert not linked.exception, linked.exception
    assert not link_notices(linked), link_notices(linked)
    for p in params:
        assert linked.session_state[p.key] == p.parse(p.example), p.name
        assert query_value(linked, p.name) == p.example, p.name
    assert linked.session_state[SEED_KEY] == 7 and linked.number_input(key=SEED_KEY).value == 7
    assert query_value(linked, "seed") == "7"


@pytest.mark.parametrize("spec", LESSONS, ids=lambda spec: spec.url_path)
def test_a_link_with_junk_in_every_setting_says_so_and_keeps_the_defaults(spec):
    plain = open_link(spec)
    params = declared(plain, spec)
    junk = open_link(spec, {p.name: JUNK for p in params} | {"seed": JUNK})
    assert not junk.exception, junk.exception
    said = link_notices(junk)
    for p in params:
        assert f"{p.name}=" in said, f"?{p.name}= junk was not named: {said}"
        if p.key in plain.session_state:
            assert junk.session_state[p.key] == plain.session_state[p.key], p.name
    assert "seed=" in said and junk.session_state[SEED_KEY] == 0
    assert "\u202e" not in said and "‹U+202E›" in said
