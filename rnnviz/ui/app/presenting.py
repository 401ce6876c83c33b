"""Presenting mode: a page made for a projector and the back of a room, and controls a teacher hides by link.

``?present=1`` (or the "Presenting" switch at the top of every page) hides the sidebar and the help icons, lets
the page use the whole width, and draws every text and figure label 1.25 times larger. ``?hide=sigma,K`` hides the
controls that the page's link parameters name (kit.links), so that a class sees one knob at a time; the values
they hold still apply, and a link can set them (``?sigma=1.1&hide=sigma``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from rnnviz.ui.app.text import on_off

PRESENT_KEY = "presenting"  # the switch's session-state key; its CSS class is st-key-presenting
PRESENT_PARAM = "present"
HIDE_PARAM = "hide"
SWITCH_CONTAINER = "presenting_switch"
_RESTORED = "_presenting_restored"
ROOM_SCALE = 1.25  # text and figure labels, against the app's own sizes (Streamlit's 16 px text, figures' 16 px)

# Where the switch sits on every page: in the header's empty middle, left of Streamlit's menu, out of the page's flow
# (its wrapper too, which would otherwise add a gap above the title and push a one-screen section past the screen).
SWITCH_CSS = f"""<style>
.st-key-{SWITCH_CONTAINER} {{ position: fixed; top: 0.65rem; right: 4.5rem; z-index: 999991; width: auto; }}
[data-testid="stLayoutWrapper"]:has(> .st-key-{SWITCH_CONTAINER}) {{ display: contents; }}
</style>"""

# Streamlit sizes its text, spacing and widgets in rem, so one root size scales the whole page. A button with help=
# sits inside the same tooltip wrapper as a label's help icon, so only wrappers that hold no button are hidden.
ROOM_CSS = f"""<style>
html {{ font-size: {16 * ROOM_SCALE:g}px; }}
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stTooltipIcon"]:not(:has([data-testid^="stBaseButton"], [data-testid^="stBaseLinkButton"]))
{{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: none; padding: 3.5rem 2.5rem 2rem 2.5rem; }}
</style>"""

_CSS_SAFE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def presenting() -> bool:
    """Whether this session presents (the switch, or ?present=1 in the link it opened)."""
    return bool(st.session_state.get(PRESENT_KEY, False))


def presenting_switch() -> None:
    """The "Presenting" switch of every page; ?present=1 turns it on once per session, and the address follows it,
    so that a copied link presents too. Call before the page runs."""
    if not st.session_state.get(_RESTORED):
        st.session_state[_RESTORED] = True
        text = st.query_params.get(PRESENT_PARAM)
        if text is not None:
            if on_off(text) is not None:
                st.session_state[PRESENT_KEY] = on_off(text)
            else:
                st.warning("present= in the link is neither 1 nor 0, so the page is shown as usual; the Presenting "
                           "switch at the top turns presenting on.", icon=":material/link_off:")
    st.html(SWITCH_CSS)
    with st.container(key=SWITCH_CONTAINER):
        st.toggle("Presenting", key=PRESENT_KEY,
                  help="For a projector: hides the sidebar and the help icons and draws text and figures 1.25 times "
                       "larger. The address gets ?present=1, so a copied link presents too. Add hide= with the names "
                       "of the page's link settings (hide=sigma) to hide their controls.")
    if presenting():
        st.html(ROOM_CSS)
        if st.query_params.get(PRESENT_PARAM) != "1":
            st.query_params[PRESENT_PARAM] = "1"
    elif PRESENT_PARAM in st.query_params:
        del st.query_params[PRESENT_PARAM]


def hidden_names() -> list[str]:
    """The names in ?hide=, in their order, without blanks or repeats."""
    text = st.query_params.get(HIDE_PARAM) or ""
    return list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def hide_controls(names: Sequence[str], keys_by_name: dict[str, str]) -> list[str]:
    """Hide the controls whose link names are in ``names`` (their widgets' keys in ``keys_by_name``); returns the
    names this page does not know. Called on every run: the style lives as long as the run that drew it."""
    keys = [keys_by_name[name] for name in names if name in keys_by_name]
    selectors = [f".st-key-{key}" for key in keys if _CSS_SAFE_KEY.match(key)]
    if selectors:
        st.html(f"<style>{', '.join(selectors)} {{ display: none !important; }}</style>")
    return [name for name in names if name not in keys_by_name]
