"""The UI layer's layout rule (docs/engine.md, "The UI layers"): ``rnnviz/ui`` is two shared layers and one package
(or one module) per page. ``app`` (the server, navigation, sessions) imports no other part of the UI; ``kit`` (what
every page may use) imports only ``app``; a page's package imports only ``app``, ``kit`` and itself, never another
page's; and each script in ``app_pages`` draws at most one page's package. What two pages share moves into kit.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "rnnviz" / "ui"
SHARED = ("app", "kit")
MAX_LINES = 450


def ui_part(module: str) -> str | None:
    """``rnnviz.ui.live.run`` → ``live``; None for a module outside the UI (or the UI package itself)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["rnnviz", "ui"] else None


def imported_ui_parts(path: Path) -> set[str]:
    """The parts of the UI a file imports, by its import statements (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            part = ui_part(name)
            if part is not None and (name.count(".") > 2 or (UI / part).is_dir() or (UI / f"{part}.py").exists()):
                found.add(part)
    return found


def ui_files() -> list[Path]:
    return sorted(p for p in UI.rglob("*.py") if "__pycache__" not in p.parts)


def part_of(path: Path) -> str:
    relative = path.relative_to(UI)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_the_ui_is_app_kit_and_one_package_or_module_per_page():
    for path in ui_files():
        relative = path.relative_to(UI)
        assert len(relative.parts) <= 2, f"{relative}: the UI is one level of packages deep"
    pages = {part_of(p) for p in ui_files()} - {*SHARED, "__init__"}
    assert {"live", "explorer", "hidden_state", "mechanics", "memory"} <= pages
    for page in pages:
        assert (UI / page / "__init__.py").exists() or (UI / f"{page}.py").exists()


@pytest.mark.parametrize("path", ui_files(), ids=lambda p: str(p.relative_to(UI)))
def test_a_ui_module_imports_only_the_shared_layers_and_its_own_page(path: Path):
    part = part_of(path)
    allowed = {"app"} if part == "app" else {"app", "kit"} if part == "kit" else {"app", "kit", part}
    foreign = imported_ui_parts(path) - allowed
    assert not foreign, f"{path.relative_to(ROOT)} imports {sorted(foreign)}: move what they share into kit"


@pytest.mark.parametrize("path", sorted((ROOT / "app_pages").glob("*.py")), ids=lambda p: p.name)
def test_a_page_script_draws_at_most_one_page_package(path: Path):
    pages = imported_ui_parts(path) - set(SHARED)
    assert len(pages) <= 1, f"{path.name} imports the pages {sorted(pages)}"


def test_no_ui_file_is_over_450_lines():
    long = {str(p.relative_to(UI)): n for p in ui_files() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these by what the user sees: {long}"


def test_the_rule_sees_a_page_that_imports_another(tmp_path):
    """The checker itself: a made-up page module importing another page's package is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("from rnnviz.ui.live.run import current_run\nfrom rnnviz.ui.kit import widgets\n"
                    "def f():\n    from rnnviz.ui.explorer import data\n")
    assert imported_ui_parts(fake) == {"live", "kit", "explorer"}


def test_session_state_is_never_indexed_by_a_bare_string():
    """Session keys are declared once per package (its ``keys`` module or key helper), never retyped."""
    literal_key = re.compile(r"""st\.session_state\[\s*f?["']""")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in [*ui_files(), *sorted((ROOT / "app_pages").glob("*.py"))]
             for i, line in enumerate(p.read_text().splitlines(), 1) if literal_key.search(line)]
    assert not found, f"bare session keys: {found}"
