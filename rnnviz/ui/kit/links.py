"""Shareable links: a page's main settings live in the URL's query string, and a copied link restores them.

A page declares its ``LinkParam``s once, calls ``restore_from_link`` before it creates the widgets, and
``mirror_to_link`` after. Bad or unknown values fall back to the defaults with a small notice.

Widgets that a link can set take their default from session state, not from ``value=``, or Streamlit
warns that the value was set twice::

    restore_from_link("gradients", PARAMS)
    st.session_state.setdefault("gradients_sigma", 1.05)
    st.slider("σ₁", 0.5, 1.5, key="gradients_sigma")
    mirror_to_link(PARAMS)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from rnnviz.limits import quoted
from rnnviz.ui.app.navigation import DEFAULT_SEED, LINK_VALUE_CHARS, SEED_PARAM
from rnnviz.ui.app.presenting import HIDE_PARAM, hidden_names, hide_controls
from rnnviz.ui.app.text import on_off
from rnnviz.ui.kit.widgets import literal, seed

DECLARED = "_link_params"  # session key: (page, its LinkParams), as the page drawn last declared them


@dataclass(frozen=True)
class LinkParam:
    """One setting carried in the URL: ?name=text ⇄ st.session_state[key]."""

    name: str  # query parameter, short and readable: "sigma", "bits"
    key: str  # the widget key that holds the value
    parse: Callable[[str], Any]  # text → value; raises ValueError (or TypeError) when the text is bad
    format: Callable[[Any], str] = str  # value → text
    # A valid value's text other than the default: the registry test (tests/test_every_link.py) opens every page
    # with every parameter set to its example and checks that the page shows it.
    example: str = ""


def parse_float_in(low: float, high: float) -> Callable[[str], float]:
    """A parser for a finite float within [low, high]."""

    def parse(text: str) -> float:
        value = float(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}…{high}")
        return value

    return parse


def parse_int_in(low: int, high: int) -> Callable[[str], int]:
    """A parser for an integer within [low, high]."""

    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}…{high}")
        return value

    return parse


def parse_choice(options: Sequence[Any]) -> Callable[[str], Any]:
    """A parser that accepts the text of one of the options."""
    by_text = {str(o): o for o in options}

    def parse(text: str) -> Any:
        if text not in by_text:
            raise ValueError(f"{text!r} is not one of {', '.join(by_text)}")
        return by_text[text]

    return parse


def parse_bool(text: str) -> bool:
    """A parser for an on/off setting: 1/0, true/false, on/off, yes/no (the words ?present= takes)."""
    value = on_off(text)
    if value is None:
        raise ValueError("not 1 or 0")
    return value


def format_bool(value: bool) -> str:
    return "1" if value else "0"


def parse_text(max_chars: int) -> Callable[[str], str]:
    """A parser for free text (a sentence, words) of at most ``max_chars`` characters, as its text box allows."""

    def parse(text: str) -> str:
        if len(text) > max_chars:
            raise ValueError(f"longer than {max_chars} characters")
        return text

    return parse


def parse_choices(options: Sequence[Any]) -> Callable[[str], list]:
    """A parser for several of the options, comma-separated ("2,4,8"), kept in the options' order."""
    one = parse_choice(options)

    def parse(text: str) -> list:
        chosen = {one(part.strip()) for part in text.split(",") if part.strip()}
        return [o for o in options if o in chosen]

    return parse


def format_choices(values: Sequence[Any]) -> str:
    return ",".join(map(str, values))


def restore_from_link(page: str, params: Sequence[LinkParam]) -> None:
    """Once per session and page, seed the widgets' state from the URL; note any value that was ignored. On every
    run, hide the controls that ?hide= names (rnnviz.ui.app.presenting)."""
    unknown = hide_controls(hidden_names(), {param.name: param.key for param in params})
    st.session_state[DECLARED] = (page, tuple(params))
    flag = f"_link_restored_{page}"
    if st.session_state.get(flag):
        return
    st.session_state[flag] = True
    ignored = []
    for param in params:
        text = st.query_params.get(param.name)
        if text is None:
            continue
        try:
            st.session_state[param.key] = param.parse(text)
        except (ValueError, TypeError) as err:
            ignored.append(f"{param.name}={literal(quoted(text, LINK_VALUE_CHARS))} ({literal(quoted(err))})")
    if ignored:
        st.warning("Some settings in the link were not valid and were left at their defaults: " + "; ".join(ignored),
                   icon=":material/link_off:")
    if unknown:
        st.warning(f"{HIDE_PARAM}= in the link names controls this page does not have "
                   f"({literal(quoted(', '.join(unknown)))}), so nothing was hidden for them. This page "
                   f"can hide: {', '.join(param.name for param in params)}.", icon=":material/link_off:")


def mirror_to_link(params: Sequence[LinkParam]) -> None:
    """Write the widgets' current values into the URL, so that copying the address shares them."""
    for param in params:
        if param.key in st.session_state:
            text = param.format(st.session_state[param.key])
            if st.query_params.get(param.name) != text:
                st.query_params[param.name] = text


def share_link(params: Sequence[LinkParam]) -> None:
    """A "Copy link" box: the page's address with its settings, in a code block with a copy button."""
    base = (st.context.url or "").split("?")[0]
    values = {p.name: p.format(st.session_state[p.key]) for p in params if p.key in st.session_state}
    if seed() != DEFAULT_SEED:  # the sidebar's seed: the same numbers for everyone who opens the link
        values[SEED_PARAM] = str(seed())
    hidden = [name for name in hidden_names() if name in {p.name for p in params}]
    if hidden:  # the controls the teacher hid stay hidden for whoever opens the link; presenting is the teacher's
        values[HIDE_PARAM] = ",".join(hidden)
    query = urlencode(values, safe=",")
    with st.popover("Copy link", icon=":material/link:"):
        st.caption("This address reopens the page with the settings you see now.")
        st.code(f"{base}?{query}" if query else base, language=None)
