"""The project's prose holds together: every relative link and picture in README.md, CONTRIBUTING.md, docs/*.md and
bench/README.md points at a file that exists, every #anchor at a heading of its file (as GitHub makes heading
anchors), and the README stays short and leads to each page of docs/. Links with a scheme (https:, mailto:) are
left alone: nothing here uses the network."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300

INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def prose_files() -> list[Path]:
    named = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md"]
    return [p for p in named if p.exists()] + sorted((ROOT / "docs").glob("*.md"))


def prose_lines(path: Path, keep_code_spans: bool = False) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks; inline code spans taken out unless kept (a
    heading's code is part of its anchor, but a link written in code is no link)."""
    lines, fence = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        marker = re.match(r"\s*(`{3,}|~{3,})", line)
        if marker and (fence is None or marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence)):
            fence = marker.group(1) if fence is None else None
            continue
        if fence is None:
            lines.append((number, line if keep_code_spans else CODE_SPAN.sub("", line)))
    return lines


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower-cased, without what is not a letter, mark, digit, connector,
    hyphen or space, and with each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    kept = "".join(c for c in text if c in "- " or unicodedata.category(c)[0] in "LM"
                   or unicodedata.category(c) in ("Nd", "Pc"))
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path, keep_code_spans=True):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(path):
        for pattern in (INLINE_LINK, REFERENCE_LINK, HTML_LINK):
            found += [(number, match.group(1)) for match in pattern.finditer(line)]
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        address, _, anchor = target.partition("#")
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        linked = (path.parent / unquote(address)).resolve() if address else path
        if not linked.exists():
            problems.append(f"{where}: no file {linked.relative_to(ROOT) if linked.is_relative_to(ROOT) else linked}")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked):
            problems.append(f"{where}: no heading of {linked.relative_to(ROOT)} has the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("path", prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_every_anchor_a_heading(path):
    assert links(path), f"{path.relative_to(ROOT)} links nowhere"
    problems = broken_links(path)
    assert not problems, "\n".join(problems)


def test_the_readme_reads_in_minutes_and_leads_to_every_page_of_the_docs():
    readme = ROOT / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    linked = {(readme.parent / target.partition("#")[0]).resolve() for _, target in links(readme)
              if not SCHEME.match(target)}
    required = [ROOT / "docs" / f"{name}.md" for name in ("deploying", "testing", "engine")]
    pages = dict.fromkeys([*required, *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md",
                           ROOT / "CONTRIBUTING.md"])
    unreached = [str(page.relative_to(ROOT)) for page in pages if not page.exists() or page.resolve() not in linked]
    assert not unreached, f"README.md leads to none of: {', '.join(unreached)}"
