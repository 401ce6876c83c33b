"""The UI layer's layout rule (docs/engine.md, "The UI layers"): ``rnnviz/ui`` is two shared layers and one package
per page, named after the page's script in ``app_pages``. ``app`` (the server, navigation, sessions) imports no other
part of the UI; ``kit`` (what every page may use) imports only ``app``; a page's package imports only ``app``, ``kit``
and itself, never another page's; and each script in ``app_pages`` is the registry's entry and one call into the
package named after it. What two pages share moves into kit.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "rnnviz" / "ui"
SCRIPTS = sorted((ROOT / "app_pages").glob("*.py"))
SHARED = ("app", "kit")
MAX_LINES = 450
MAX_SCRIPT_LINES = 60


def ui_part(module: str) -> str | None:
    """``rnnviz.ui.live_training.run`` → ``live_training``; None outside the UI (or for the UI package itself)."""
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


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports by name (``from a.b import c`` gives ``a.b``), at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def test_the_ui_is_app_kit_and_one_package_per_page_named_after_its_script():
    for path in ui_files():
        relative = path.relative_to(UI)
        assert len(relative.parts) <= 2, f"{relative}: the UI is one level of packages deep"
    loose = sorted(p.name for p in UI.glob("*.py") if p.name != "__init__.py")
    packages = {p.name for p in UI.iterdir() if (p / "__init__.py").exists()} - set(SHARED)
    scripts = {p.stem for p in SCRIPTS}
    problems = [f"{what}: {sorted(names)}" for what, names in (
        ("modules where a page's package belongs", loose),
        ("packages named after no app_pages script", packages - scripts),
        ("pages without their package rnnviz/ui/<page>/", scripts - packages),
    ) if names]
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_a_page_script_is_one_call_into_the_package_named_after_it(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_SCRIPT_LINES, f"{path.name} has {lines} lines: its code belongs in rnnviz/ui/{path.stem}/"
    own = f"rnnviz.ui.{path.stem}"
    assert imported_modules(path) == {own}, f"{path.name} imports {sorted(imported_modules(path))}, not only {own}"
    body = ast.parse(path.read_text(encoding="utf-8")).body[1:]  # after the docstring
    calls = [node for node in body if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    others = [type(node).__name__ for node in body if not isinstance(node, ast.ImportFrom) and node not in calls]
    assert len(calls) == 1 and not others, f"{path.name}: a page script is its docstring, one import and one call"


@pytest.mark.parametrize("path", ui_files(), ids=lambda p: str(p.relative_to(UI)))
def test_a_ui_module_imports_only_the_shared_layers_and_its_own_page(path: Path):
    part = part_of(path)
    allowed = {"app"} if part == "app" else {"app", "kit"} if part == "kit" else {"app", "kit", part}
    foreign = imported_ui_parts(path) - allowed
    assert not foreign, f"{path.relative_to(ROOT)} imports {sorted(foreign)}: move what they share into kit"


def test_no_ui_file_is_over_450_lines():
    long = {str(p.relative_to(UI)): n for p in ui_files() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these by what the user sees: {long}"


def test_the_rule_sees_a_page_that_imports_another(tmp_path):
    """The checker itself: a made-up page module importing another page's package is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("from rnnviz.ui.live_training.run import current_run\nfrom rnnviz.ui.kit import widgets\n"
                    "def f():\n    from rnnviz.ui.hidden_cell_explorer import data\n")
    assert imported_ui_parts(fake) == {"live_training", "kit", "hidden_cell_explorer"}


def test_session_state_is_never_indexed_by_a_bare_string():
    """Session keys are declared once per package (its ``keys`` module or key helper), never retyped."""
    literal_key = re.compile(r"""st\.session_state\[\s*f?["']""")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in [*ui_files(), *SCRIPTS]
             for i, line in enumerate(p.read_text().splitlines(), 1) if literal_key.search(line)]
    assert not found, f"bare session keys: {found}"
