"""The package's layers import only downward, and no two modules import each other (even lazily).

The order, lowest first, is :data:`LAYERS`; a module may import its own layer and the layers below it.
Every ``import`` counts: top-level, inside functions, and under ``TYPE_CHECKING`` (a lazy import that
closes a circle is still a circle). A failure prints each offending pair.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "memprm"

#: lowest first. Single-module layers at the package root are named by their module.
LAYERS = (
    ("logs", "configtools", "atomic", "timing", "prompts"),
    ("eval",),
    ("credit",),
    ("memory",),
    ("data",),
    ("llm",),
    ("env",),
    ("rollout",),
    ("models",),
    ("callbacks",),
    ("inspect",),
    ("stages",),
    ("config",),
    ("fit",),
    ("cli", "__main__", "__init__"),
)
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The memprm modules ``name`` imports (``from memprm.x import y`` counts ``memprm.x.y`` when that is a
    module, else ``memprm.x``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "memprm")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "memprm":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    out.discard(name)
    return out


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def upward_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    bad = []
    for src, targets in sorted(edges.items()):
        for dst in sorted(targets):
            if RANK[layer_of(dst)] > RANK[layer_of(src)]:
                bad.append((src, dst))
    return bad


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_package_has_a_layer():
    missing = sorted({layer_of(m) for m in modules()} - set(RANK))
    assert not missing, f"add these to LAYERS in {__file__}: {missing}"


def test_imports_only_point_down():
    bad = upward_imports(graph())
    assert not bad, "upward imports (importer -> imported):\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


def test_no_import_circles():
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join("  " + " <-> ".join(c) for c in found)


def test_file_names_are_unique():
    seen: dict[str, list[str]] = {}
    for path in ROOT.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, f"file names used more than once in memprm/: {twice}"


@pytest.mark.parametrize(
    ("edges", "upward", "circle"),
    [
        ({"memprm.env.a": {"memprm.models.b"}, "memprm.models.b": set()}, [("memprm.env.a", "memprm.models.b")], []),
        ({"memprm.models.b": {"memprm.env.a"}, "memprm.env.a": set()}, [], []),
        (
            {"memprm.models.a": {"memprm.models.b"}, "memprm.models.b": {"memprm.models.a"}},
            [],
            [["memprm.models.a", "memprm.models.b"]],
        ),
    ],
)
def test_the_checks_catch_what_they_should(edges, upward, circle):
    assert upward_imports(edges) == upward
    assert circles(edges) == circle


def test_lazy_and_relative_imports_are_seen(tmp_path):
    pkg = tmp_path / "memprm" / "env"
    pkg.mkdir(parents=True)
    src = pkg / "a.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from memprm.models import b\n"
        "def f():\n    from .c import g\n"
    )
    got = imports_of("memprm.env.a", src, {"memprm.models.b", "memprm.env.c"})
    assert got == {"memprm.models.b", "memprm.env.c"}


def test_module_docstrings_are_at_most_15_lines():
    """What the module is for and the one idea a reader needs; details belong on functions or in docs/."""
    long = {}
    for path in sorted(ROOT.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc and len(doc.strip("\n").splitlines()) > 15:
            long[str(path.relative_to(ROOT))] = len(doc.strip("\n").splitlines())
    assert not long, f"module docstrings over 15 lines: {long}"


def test_loading_the_config_imports_neither_torch_nor_lightning():
    """A bad key on the command line is rejected in a second: the config sections stay import-cheap."""
    import subprocess
    import sys

    code = "import sys, memprm.config; print(sorted(m for m in ('torch', 'lightning') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", f"memprm.config pulls in {out.stdout.strip()}"
