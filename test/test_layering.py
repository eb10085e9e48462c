"""Imports run one way: base <- dialects <- passes <- interpreters and backends <- runner and
front end <- tools, and no module imports itself through others. Checked on the source with
`ast`, so function-local and type-checking imports count too (a lazy import still ties two
modules together)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FOLDERS = {  # source folder -> installed package (pyproject.toml's package-dir)
    "core": "ccopt",
    "dialects": "ccopt.dialects",
    "passes": "ccopt.passes",
    "sim": "ccopt.sim",
    "algorithms": "ccopt.algorithms",
    "interpreters": "ccopt.interpreters",
    "backends": "ccopt.backends",
    "frontend": "ccopt.frontend",
    "tools": "ccopt.tools",
}

LAYERS = {  # a module may import modules of its own layer or a lower one
    "ccopt.mesh": 0,
    "ccopt.diagnostics": 0,
    "ccopt.files": 0,
    "ccopt.collection": 0,
    "ccopt.dialects": 1,
    "ccopt.ir": 1,
    "ccopt.streams": 1,
    "ccopt.kernel_function": 1,
    "ccopt.verifier": 1,
    "ccopt.program": 1,
    "ccopt.passes": 2,
    "ccopt.sim": 2,
    "ccopt.algorithms": 2,
    "ccopt.interpreters": 3,
    "ccopt.backends": 3,
    "ccopt.runner": 4,
    "ccopt.simulation": 4,  # `ccopt.simulate`: loads, resizes, applies a pipeline, simulates
    "ccopt.frontend": 4,
    "ccopt": 4,  # the package root: `ccopt.run`, `ccopt.build`, ... (a façade over the runner)
    "ccopt.tools": 5,
}


def modules() -> dict[str, Path]:
    """Every module of the installed packages by its installed name."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def layer(name: str) -> int:
    owner = max((k for k in LAYERS if name == k or name.startswith(k + ".")), key=len)
    return LAYERS[owner]


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ccopt modules a module imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in known else base)
    return {m for m in out if m == "ccopt" or m.startswith("ccopt.")}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_every_core_module_has_a_layer() -> None:
    """A new module of the package root must say where it sits (else it would pass for the
    runner's level and could import anything)."""
    core = [n for n, path in modules().items() if path.parent == ROOT / "core" and n != "ccopt"]
    assert [n for n in core if n not in LAYERS] == []


def test_imports_name_existing_modules(graph: dict[str, set[str]]) -> None:
    missing = sorted((n, m) for n, deps in graph.items() for m in deps if m not in graph)
    assert not missing


def test_no_module_imports_a_higher_layer(graph: dict[str, set[str]]) -> None:
    upward = sorted(
        f"{n} (layer {layer(n)}) imports {m} (layer {layer(m)})"
        for n, deps in graph.items()
        for m in deps
        if layer(m) > layer(n)
    )
    assert not upward, "\n".join(upward)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a path that ends where it starts), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return None
        for dep in sorted(graph.get(node, ())):
            cycle = visit(dep, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    cycle = find_cycle({n: deps - {n} for n, deps in graph.items()})
    assert cycle is None, " -> ".join(cycle or [])


def test_the_checks_see_function_local_imports_and_cycles(tmp_path: Path) -> None:
    """The rules would catch what they are for: a lazy import upwards and a two-module cycle."""
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from ccopt.runner import run\n    return run\n")
    deps = imported("ccopt.backends.lazy", lazy, {"ccopt.runner": lazy})
    assert deps == {"ccopt.runner"} and layer("ccopt.runner") > layer("ccopt.backends.lazy")
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
