"""The package's shape: subpackages by concept, imports that point down, no cycles, short modules.

Every ``import`` statement of ``pageweaver_edu`` counts, also the ones inside functions (the
GPU and plotting imports are deferred, but they are still dependencies).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pageweaver_edu"
# A subpackage may import only subpackages of a lower layer (never its own layer's peers).
LAYERS = {
    "core": 0, "records": 0,
    "regroup": 1, "replay": 1, "pagepairs": 1,
    "workloads": 2, "gpu": 2, "peers": 2,
    "notebook": 3,
    "report": 4, "puzzles": 4,
    "cli": 5,
}
TOP = 6  # pageweaver_edu/__init__.py re-exports; nothing imports it
MAX_LINES = 300


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """The ``pageweaver_edu`` modules ``module`` imports (``from pkg import sub`` names sub)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return {m for m in out if m in MODULES and m != module}


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    if len(parts) == 1:
        return "pageweaver_edu", TOP
    return parts[1], LAYERS[parts[1]]


def test_top_level_holds_only_init_cli_and_subpackages():
    files = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert files == {"__init__.py", "cli.py"}
    assert packages == set(LAYERS) - {"cli"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    group, layer = _layer(module)
    wrong = sorted(m for m in _imports(module)
                   if _layer(m)[0] != group and _layer(m)[1] >= layer)
    assert not wrong, f"{module} ({group}, layer {layer}) imports {wrong}"


def test_no_import_cycles():
    graph = {m: _imports(m) for m in MODULES}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_are_short(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines (at most {MAX_LINES})"
