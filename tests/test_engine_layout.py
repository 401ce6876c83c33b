"""The engine's layers: every part of ``rnnviz`` imports only the parts in the layers below its own, so no import
goes up, sideways or round in a circle, and no module imports another's private (``_x``) names.

The layers, bottom to top (a part is a package or a single module directly under ``rnnviz/``):

1. ``limits``, ``style``: caps and quoting of user text; the colours and CSS that the engine's HTML and the figures
   share. Plain constants and functions, no torch.
2. ``bounded``: readers of untrusted files, held to the limits.
3. ``core``, ``pairs``: what every model is made of (cells, recurrent layers, the character model, the
   Transformer); what the captioning and seq2seq engines share (two joins trained side by side, their checkpoint
   bytes, their command lines).
4. ``charlm``: the character model itself: corpora, training, sampling, checkpoints, presets, shipped models.
5. ``interpret``, ``experiments``, ``captioning``, ``seq2seq``, ``serving``: what is built on a trained model or
   beside it (readings, memory experiments, the two newer engines, and what a class's server needs: live runs,
   training slots, the race, the cool-down, the run store, the backends and their settings).
6. ``lessons``: the math behind the mechanics pages (one of them trains on an experiment's task).
7. ``figures``: plotly figure builders for all of the above.
8. ``api``, ``launch``, ``cli``, ``__main__``: what a user calls (the Python API, ``rnnviz app``, the commands).
9. ``ui``: the only part that imports streamlit (its own floors: tests/test_ui_layout.py).

The package's ``__init__`` stands outside the layers: Python runs it before any module of the package, and it
reaches ``api`` only lazily (``rnnviz.load`` and the rest of the Python API).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rnnviz"
LAYERS = (
    ("limits", "style"),
    ("bounded",),
    ("core", "pairs"),
    ("charlm",),
    ("interpret", "experiments", "captioning", "seq2seq", "serving"),
    ("lessons",),
    ("figures",),
    ("api", "launch", "cli", "__main__"),
    ("ui",),
)
LAYER = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str, modules: dict[str, Path]) -> list[tuple[str, str | None, int]]:
    """(module imported, name taken from it or None, line) for every import statement of the file, top level or
    inside functions; a ``from a import b`` where ``a.b`` is a module imports that module."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(target, None, node.lineno) for alias in node.names if (target := known(alias.name))]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1 packages
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                if whole in modules:
                    found.append((whole, None, node.lineno))
                elif target := known(base):
                    found.append((target, alias.name, node.lineno))
    return found


def imports_by_module(modules: dict[str, Path]) -> dict[str, list[tuple[str, str | None, int]]]:
    return {name: imports(path, name, modules) for name, path in modules.items()}


@functools.cache
def engine() -> tuple[dict[str, Path], dict[str, list[tuple[str, str | None, int]]]]:
    """This tree's modules and their imports, read once for all the tests here."""
    modules = module_files()
    return modules, imports_by_module(modules)


def part_of(module: str) -> str | None:
    """``rnnviz.serving.live`` → ``serving``; None for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def import_graph(found: dict[str, list]) -> dict[str, dict[str, tuple[str | None, int]]]:
    """module → {module it imports: (a name taken from it, line)}, without a module's imports of itself."""
    graph: dict[str, dict[str, tuple[str | None, int]]] = {}
    for name, imported in found.items():
        edges = graph.setdefault(name, {})
        for target, taken, line in imported:
            if target != name:
                edges.setdefault(target, (taken, line))
    return graph


def circles(graph: dict[str, dict]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted: every one holds a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while not members or members[-1] != node:
                members.append(stack.pop())
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def private_imports(modules: dict[str, Path], found_imports: dict[str, list]) -> list[str]:
    found = []
    for name, imported in found_imports.items():
        for target, taken, line in imported:
            if target != name and taken and taken.startswith("_") and not taken.endswith("__"):
                found.append(f"{shown(modules[name])}:{line} takes {taken} from {target}")
    return found


def arrows_against_the_layers(modules: dict[str, Path], found_imports: dict[str, list]) -> list[str]:
    found = []
    for name, edges in import_graph(found_imports).items():
        source = part_of(name)
        for target, (_, line) in edges.items():
            goal = part_of(target)
            if source is None or goal is None or goal == source:
                continue
            if LAYER[goal] >= LAYER[source]:
                way = "sideways" if LAYER[goal] == LAYER[source] else "up"
                found.append(f"{shown(modules[name])}:{line} imports {target} ({source} → {goal}: {way})")
    return found


def test_every_part_of_the_engine_has_a_layer():
    parts = {part_of(name) for name in engine()[0]} - {None}
    assert not parts - set(LAYER), f"put these in a layer of LAYERS (and the docstring): {sorted(parts - set(LAYER))}"


def test_no_import_goes_up_or_sideways():
    wrong = arrows_against_the_layers(*engine())
    assert not wrong, "imports against the layers (this file's docstring):\n" + "\n".join(wrong)


def test_no_import_circle():
    found = circles(import_graph(engine()[1]))
    assert not found, "modules that import each other, in a circle: " + "; ".join(" ⇄ ".join(c) for c in found)


def test_no_module_imports_another_modules_private_names():
    found = private_imports(*engine())
    assert not found, "private names imported across modules (make them public, or move the caller):\n" + "\n".join(
        found)


def test_the_checker_sees_what_it_forbids(tmp_path):
    """The checker itself, on a made-up package: an import inside a function that goes up, a circle of two
    modules, and a private name taken across modules."""
    package = tmp_path / "rnnviz"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "cells.py").write_text("def f():\n    from rnnviz.figures import live\n")
    (package / "figures").mkdir()
    (package / "figures" / "__init__.py").write_text("from rnnviz.figures.live import _draw\n")
    (package / "figures" / "live.py").write_text("from rnnviz import figures\n\ndef _draw():\n    pass\n")
    modules = module_files(package)
    found = imports_by_module(modules)
    assert circles(import_graph(found)) == [["rnnviz.figures", "rnnviz.figures.live"]]
    assert arrows_against_the_layers(modules, found) == [
        f"{package / 'core' / 'cells.py'}:2 imports rnnviz.figures.live (core → figures: up)"]
    assert private_imports(modules, found)[0].endswith("takes _draw from rnnviz.figures.live")
