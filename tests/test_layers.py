"""The package's layers: no import cycles, no module importing a layer above it, base classes that load no built-in.

The graph is read from the source (``ast``), so it holds every import a module
can run: at the top, inside functions and methods, and ``importlib.import_module``
with a constant name. Imports under ``if TYPE_CHECKING:`` never run and are left
out, as are the implicit imports of a module's own parent packages (a package's
``__init__`` is the facade of its modules, above them).
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "frameselect"

#: modules whose module-level ``__getattr__`` forwards a deprecated alias, left out of the graph (none since 0.2.0)
DEPRECATED_ALIASES: dict[str, str] = {}

#: the engine's modules: held to the same rules as every module, and checked apart too, so that a failure names the engine
ENGINE = frozenset(
    {
        "frameselect._engine.checks",
        "frameselect._engine.budgets",
        "frameselect._engine.scopes",
        "frameselect._engine.scopes.scope",
        "frameselect._engine.scopes.across",
        "frameselect._engine.scopes.stream",
        "frameselect._engine.work",
        "frameselect._engine.answering",
        "frameselect._engine.aggregate",
        "frameselect._engine.prepare",
        "frameselect._engine.plan",
        "frameselect._engine.run",
        "frameselect._engine.pipeline",
        "frameselect._engine.executors",
    }
)

_KINDS = ("selectors", "encoders", "evaluators", "datasets", "answerers", "routing", "streaming")

#: the layers, bottom first: a module may import its own layer and those below, never one above
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "core: foundation",
        (
            "frameselect._version",
            "frameselect.errors",
            "frameselect.types",
            "frameselect._core",
            "frameselect._core.*",
            "frameselect._core.video.pixels",
            "frameselect._core.video.synth",
        ),
    ),
    ("core: parts and registry", ("frameselect.parts", "frameselect.registry")),
    ("base classes of the kinds of parts", tuple(f"frameselect.{kind}{suffix}" for kind in _KINDS for suffix in ("", ".base"))),
    ("core: media and storage", ("frameselect._core.video", "frameselect._core.video.*", "frameselect._core.cache", "frameselect.store")),
    (
        "built-in parts (one package per kind)",
        (
            "frameselect.selectors.*",
            "frameselect.encoders.*",
            "frameselect.evaluators.*",
            "frameselect.datasets.*",
            "frameselect.answerers.*",
            "frameselect.routing.*",
            "frameselect.streaming.*",
            "frameselect.crossvideo",
            "frameselect.crossvideo.*",
            "frameselect.learned",
            "frameselect.learned.*",
            "frameselect.tokens",
            "frameselect._token_base",
            "frameselect._token_per_frame",
            "frameselect.arrays",
            "frameselect.testing",
            "frameselect.testing.*",
        ),
    ),
    ("engine", ("frameselect._engine", "frameselect._engine.*")),
    ("studies", ("frameselect._studies", "frameselect._studies.*")),
    (
        "command line, integrations and the package's facade",
        ("frameselect.cli", "frameselect.cli.*", "frameselect.integrations", "frameselect.integrations.*", "frameselect"),
    ),
)


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree: ast.Module, module: str, is_package: bool, skip_getattr: bool) -> Iterable[tuple[str, str | None]]:
    """(module or package named, attribute imported from it or None) for every import ``tree`` can run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    if skip_getattr:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                skipped.update(id(n) for n in ast.walk(node))
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                stem = base[: len(base) - node.level + 1]
                name = ".".join(stem + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                yield name, alias.name
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called == "import_module":
                yield node.args[0].value, None


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, frozenset[str]]:
    """Module → the modules of ``frameselect`` it imports (directly, at any depth of its code)."""
    modules = _module_names()
    graph = {}
    for module, path in modules.items():
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, attribute in _imported(tree, module, path.name == "__init__.py", module in DEPRECATED_ALIASES):
            if not name.startswith("frameselect"):
                continue
            if attribute is not None and f"{name}.{attribute}" in modules:
                targets.add(f"{name}.{attribute}")
                continue
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                targets.add(name)
        targets.discard(module)
        graph[module] = frozenset(targets)
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of a module: its exact name first, else the most specific pattern that matches it."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for i, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern == module:
                return i
            if fnmatchcase(module, pattern) and (best is None or len(pattern) > best[0]):
                best = (len(pattern), i)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py and to the picture in docs/design.md")
    return best[1]


def _without(graph: Mapping[str, frozenset[str]], modules: frozenset[str]) -> dict[str, frozenset[str]]:
    return {m: targets - modules for m, targets in graph.items() if m not in modules}


# -- the graph reader, on hand-made modules ---------------------------------------------------------------------------


def test_cycles_are_found_through_imports_inside_functions_and_not_through_type_checking() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from frameselect._engine.run import Run\n"
        "def f():\n    from frameselect import registry\n    from .base import Selector\n"
        "    import importlib\n    importlib.import_module('frameselect.store')\n"
        "def __getattr__(name):\n    from frameselect._engine.pipeline import evaluate\n"
    )
    found = set(_imported(tree, "frameselect.selectors.aks", False, skip_getattr=False))
    assert found == {
        ("typing", "TYPE_CHECKING"),
        ("frameselect", "registry"),
        ("frameselect.selectors.base", "Selector"),
        ("importlib", None),
        ("frameselect.store", None),
        ("frameselect._engine.pipeline", "evaluate"),
    }
    skipped = set(_imported(tree, "frameselect.selectors.aks", False, skip_getattr=True))
    assert ("frameselect._engine.pipeline", "evaluate") not in skipped and ("frameselect.store", None) in skipped


def test_the_graph_holds_imports_made_inside_functions() -> None:
    graph = import_graph()
    assert "frameselect._core.cache" in graph["frameselect.encoders._onnx"]  # onnx_dir() imports it when called
    assert "frameselect._engine.pipeline" in graph["frameselect._studies.routing_study"]  # inside run_study-like functions


# -- the package ----------------------------------------------------------------------------------------------------


def test_no_import_cycle_outside_the_engine() -> None:
    found = cycles(_without(import_graph(), ENGINE))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_cycle_at_all() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def _upward(graph: Mapping[str, frozenset[str]]) -> list[str]:
    names = {i: name for i, (name, _) in enumerate(LAYERS)}
    out = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(module):
                out.append(f"{module} ({names[layer_of(module)]}) imports {target} ({names[layer_of(target)]})")
    return out


def test_every_module_has_a_layer_and_imports_none_above_it_outside_the_engine() -> None:
    upward = _upward(_without(import_graph(), ENGINE))
    assert not upward, "imports of a layer above:\n" + "\n".join(upward)


def test_the_engine_imports_no_layer_above_it() -> None:
    upward = _upward({m: t for m, t in import_graph().items() if m in ENGINE})
    assert not upward, "imports of a layer above:\n" + "\n".join(upward)


def _builtin_part_modules() -> list[str]:
    """The public modules of every part package (a package holding a ``base.py``), base classes excluded."""
    out = []
    for base in sorted(PACKAGE.glob("*/base.py")):
        package = f"frameselect.{base.parent.name}"
        out += [f"{package}.{p.stem}" for p in sorted(base.parent.glob("*.py")) if not p.stem.startswith("_") and p.stem != "base"]
    return out


@pytest.mark.slow
def test_importing_the_base_classes_loads_no_built_in_part() -> None:
    bases = [f"frameselect.{p.parent.name}.base" for p in sorted(PACKAGE.glob("*/base.py"))]
    assert len(bases) >= 6
    code = "import json, sys\n" + "".join(f"import {b}\n" for b in bases) + "print(json.dumps(sorted(m for m in sys.modules if m.startswith('frameselect'))))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
    assert set(bases) <= loaded
    builtins = _builtin_part_modules()
    assert "frameselect.selectors.aks" in builtins and "frameselect.encoders.hub" in builtins
    assert sorted(loaded & set(builtins)) == []


def test_the_answer_key_below_the_run_is_the_runs() -> None:
    """``answerers.base.answer_cache_key`` (what option log-probabilities are keyed by, below the run) keys as the run does."""
    import dataclasses

    from frameselect._engine.run import answer_cache_key as run_key
    from frameselect.answerers.base import AnswerRequest, answer_cache_key
    from frameselect.answerers.oracle import Oracle
    from frameselect.types import CandidatePool, Query, Sample, Selection

    pool = CandidatePool.from_timestamps([0.0, 1.0, 2.0], video_id="v")
    plain = Sample("q", "v.mp4", Query("why?", ("a", "b")), answer="B", metadata={"duration": 30.0})
    grounded = dataclasses.replace(plain, metadata={"answer_windows": "fraction", "duration": 30.0})
    oracle = Oracle()
    keys = []
    for sample in (plain, grounded):
        request = AnswerRequest(sample, pool, Selection((0, 2)))
        assert answer_cache_key(oracle, request) == run_key(oracle, request)
        keys.append(answer_cache_key(oracle, request))
    assert keys[0] != keys[1]  # the windows asked for change the key


#: the longest a module may be: longer ones are split along a real seam (CONTRIBUTING.md, "Layout")
MAX_LINES = 700


def test_no_module_is_longer_than_the_limit() -> None:
    long = sorted((len(path.read_text(encoding="utf-8").splitlines()), module) for module, path in _module_names().items())
    over = [f"{module}: {n} lines" for n, module in long if n > MAX_LINES]
    assert long[-1][0] > 300  # the modules were read
    assert over == [], "modules over the limit:\n" + "\n".join(over)


#: the public modules and packages at the top of the package: the core the API documents, the kinds of parts, the command line, the integrations
PUBLIC = frozenset({"types", "errors", "parts", "registry", "store", "tokens", "arrays", "testing", "integrations", "cli", "learned", "crossvideo", *_KINDS})


def test_everything_else_at_the_top_is_private() -> None:
    top = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert {"_core", "_engine", "_studies"} <= top
    assert sorted(name for name in top if not name.startswith("_") and name not in PUBLIC) == []
