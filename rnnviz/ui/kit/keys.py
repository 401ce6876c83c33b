"""Session and widget keys: each page names its own as ``<page>_<name>`` through one ``PageKeys``, so that no
two pages can collide and no key is spelled twice by hand."""

from __future__ import annotations


class PageKeys:
    """``page_key("colour", 2)`` → ``"cap_colour_2"`` for ``page_key = PageKeys("cap")``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, *parts: object) -> str:
        return "_".join((self.prefix, *map(str, parts)))

    def __repr__(self) -> str:
        return f"PageKeys({self.prefix!r})"
