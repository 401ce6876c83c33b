"""Something a session holds, kept in its address as ``?<param>=<token>``: a live run (``?run=``) or a race
(``?race=``).

A reload or a new tab is a new session. It finds the thing again through the server's registry by the
unguessable token in its address, while a session that holds it is alive (open, or closed less than
``server.disconnectedSessionTTL`` ago). Nothing else leads to it, so a student without the token sees none of
another's. A token the server does not hold is said once, in words, and dropped from the address; a token this
session let go (Reset, New race) is dropped without a word and never taken up again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from rnnviz.serving.live import RunRegistry
from rnnviz.ui.app.sessions import current_session_id, session_alive

NOTICE_STYLES = {"error": (st.error, ":material/error:"), "warning": (st.warning, ":material/warning:")}


@dataclass(frozen=True)
class HeldInAddress:
    """How a page keeps what a session holds in its address; one per kind of thing (see the module docstring)."""

    param: str  # the query parameter: ?<param>=<token>
    registry: Callable[[], RunRegistry]  # the server's registry of these things, by token
    owner_key: str  # session key: this session's own id, when Streamlit gives none
    notice_key: str  # session key: (kind, text) said once, at the next ``show_notice``
    let_go_key: str  # session key: tokens this session let go
    gone_text: Callable[[], str]  # what an address whose token the server does not hold is told
    owner_prefix: str = ""

    def owner(self) -> str:
        """This session's own id, made once (who queues for a training slot, when nothing else names it)."""
        return st.session_state.setdefault(self.owner_key, f"{self.owner_prefix}{uuid.uuid4().hex}")

    def holder(self) -> str:
        """This session, as a holder in the registry."""
        return current_session_id() or self.owner()

    def register(self, held: Any) -> None:
        """Give ``held`` its token in the registry, held by this session."""
        self.registry().register(held, self.holder())

    def let_go(self, token: str | None) -> None:
        """This session gives ``token`` up for good: released, and never taken up again from its address."""
        if token:
            self.registry().release(token, self.holder())
            st.session_state[self.let_go_key] = (*st.session_state.get(self.let_go_key, ()), token)

    def take_up(self, held_token: str | None, elsewhere: Callable[[str], Any] | None = None) -> Any | None:
        """What the address names, when it names something other than ``held_token`` (what the session holds)
        and the server holds it (or ``elsewhere(token)`` finds it, e.g. on a Ray cluster); else None, and a
        token that leads nowhere is dropped from the address with a notice."""
        token = st.query_params.get(self.param)
        if not token or token == held_token:
            return None
        let_go = token in st.session_state.get(self.let_go_key, ())
        found = None if let_go else self.registry().attach(token, self.holder(), session_alive)
        if found is None and not let_go and elsewhere is not None:
            found = elsewhere(token)
            if found is not None:
                self.registry().adopt(found, self.holder())
        if found is None:
            del st.query_params[self.param]
            if not let_go and self.notice_key not in st.session_state:  # ``elsewhere`` may have said why already
                self.notice("warning", self.gone_text())
        return found

    def keep(self, token: str | None) -> None:
        """The address names ``token``, or nothing of this kind when the session holds none."""
        if token and st.query_params.get(self.param) != token:
            st.query_params[self.param] = token
        elif token is None and self.param in st.query_params:
            del st.query_params[self.param]

    def notice(self, kind: str, text: str) -> None:
        """Say ``text`` (markdown) once, where the page next calls ``show_notice``: from a callback, or before
        the part of the page that shows it is drawn."""
        st.session_state[self.notice_key] = (kind, text)

    def show_notice(self) -> None:
        notice = st.session_state.pop(self.notice_key, None)
        if notice is not None:
            kind, text = notice
            draw, icon = NOTICE_STYLES.get(kind, (st.info, ":material/info:"))
            draw(text, icon=icon)
