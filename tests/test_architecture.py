"""The layering of ``tidal/`` (ARCHITECTURE.md): imports point down only, and no module imports itself back.

Every ``import`` in every module counts, including those inside functions (a lazy import is still
a dependency; it only hides a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "tidal"

# layer -> the layers it may import (besides itself); anything not listed is a layering break
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "expr": {"core"},
    "ops": {"core", "expr"},
    "state": {"core"},
    "testing": {"core", "expr"},
    "io": {"core", "expr", "ops"},
    "plan": {"core", "expr", "ops"},
    "agg": {"core", "ops"},
    "errors": {"core"},
    "tx": {"core", "expr", "ops", "plan"},
    "stream": {"core", "expr", "ops", "io", "state", "plan", "tx"},
    "sql": {"core", "expr", "ops", "io", "state", "plan", "stream", "agg"},
    "spark": {"core", "expr", "ops", "io", "state", "plan", "stream", "agg", "sql"},
    "cli": {"core", "expr", "ops", "io", "state", "plan", "stream", "agg", "sql", "spark", "tidal", "errors"},
    "tidal": {"core", "expr", "ops", "io", "state", "plan", "stream", "agg", "testing", "tx", "errors"},
}
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(name: str) -> bool:
    return (ROOT.parent / Path(*name.split(".")) / "__init__.py").exists()


def _imports(path: Path) -> set[str]:
    """The tidal modules ``path`` imports (``from x import y`` counts ``x.y`` when ``y`` is a module)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "tidal"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "tidal":
                continue
            subs = [f"{target}.{a.name}" for a in node.names if _is_package(target)]
            subs = [s for s in subs if _is_package(s) or (ROOT.parent / (s.replace(".", "/") + ".py")).exists()]
            found |= set(subs) if subs else {target}
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tidal"


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in ROOT.rglob("*.py")}


def test_imports_point_down_the_layers():
    breaks = []
    for module, targets in _graph().items():
        here = _layer(module)
        assert here in ALLOWED, f"{module}: layer {here!r} is not in the architecture test's table"
        for target in targets:
            there = _layer(target)
            if there != here and there not in ALLOWED[here]:
                breaks.append(f"{module} -> {target}")
    assert not breaks, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(breaks))


def test_no_import_cycles():
    graph = _graph()
    # Tarjan's strongly connected components over modules
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    # a package's __init__ re-exporting its own modules, which import siblings, is not a cycle of meaning
    cycles = [c for c in cycles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]
    assert not cycles, f"import cycles: {cycles}"


def test_modules_stay_small():
    big = {_module_name(p): n for p in ROOT.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


def test_the_checker_sees_a_break(tmp_path, monkeypatch):
    """A module of ``ops`` importing ``stream`` (relatively, inside a function) is found and refused."""
    fake = tmp_path / "tidal"
    (fake / "ops").mkdir(parents=True)
    (fake / "stream").mkdir()
    for init in (fake / "__init__.py", fake / "ops" / "__init__.py", fake / "stream" / "__init__.py"):
        init.write_text("")
    (fake / "stream" / "streamable.py").write_text("X = 1\n")
    (fake / "ops" / "bad.py").write_text("def f():\n    from ..stream.streamable import X\n    return X\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", fake)
    assert _imports(fake / "ops" / "bad.py") == {"tidal.stream.streamable"}
    with pytest.raises(AssertionError, match="tidal.ops.bad -> tidal.stream.streamable"):
        test_imports_point_down_the_layers()
