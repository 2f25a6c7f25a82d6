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

#: the engine's modules, reshaped on their own branch: the cycle among them is checked separately (strict xfail)
ENGINE = frozenset(
    {
        "frameselect.run",
        "frameselect.pipeline",
        "frameselect.executors",
        "frameselect.selections",
        "frameselect.bench.runner",
        "frameselect.learned.train",
    }
)

_KINDS = ("selectors", "encoders", "evaluators", "datasets", "answerers", "routing", "streaming")

#: the layers, bottom first: a module may import its own layer and those below, never one above
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "frameselect._version",
            "frameselect._autoload",
            "frameselect._bundled",
            "frameselect._cpus",
            "frameselect._hub",
            "frameselect._memo",
            "frameselect._queues",
            "frameselect.errors",
            "frameselect.types",
            "frameselect.fingerprint",
            "frameselect.fill",
            "frameselect.counters",
            "frameselect.windows",
            "frameselect.stats",
            "frameselect.progress",
            "frameselect.render",
            "frameselect.video.pixels",
            "frameselect.video.synth",
        ),
    ),
    ("parts and registry", ("frameselect.parts", "frameselect._builtin_names", "frameselect.registry")),
    ("base classes", tuple(f"frameselect.{kind}{suffix}" for kind in _KINDS for suffix in ("", ".base"))),
    (
        "media and storage",
        (
            "frameselect.video",
            "frameselect.video.*",
            "frameselect.video.container",
            "frameselect.video.counter",
            "frameselect.video.memo",
            "frameselect.video.hashing",
            "frameselect.video.slices",
            "frameselect.video.probing",
            "frameselect.video.policy",
            "frameselect.video.source",
            "frameselect.video.pool",
            "frameselect.cache",
            "frameselect.store",
        ),
    ),
    (
        "built-in parts",
        (
            "frameselect.selectors.*",
            "frameselect.encoders.*",
            "frameselect.evaluators.*",
            "frameselect.datasets.*",
            "frameselect.answerers.*",
            "frameselect.routing.*",
            "frameselect.learned",
            "frameselect.learned.checkpoint",
            "frameselect.learned.inputs",
            "frameselect.learned.policy",
            "frameselect.tokens",
            "frameselect.token_budget",
            "frameselect.streaming.*",
            "frameselect.crossvideo",
            "frameselect.crossvideo.*",
            "frameselect.arrays",
            "frameselect.testing",
            "frameselect.testing.*",
        ),
    ),
    ("plan and run", ("frameselect.plan", "frameselect.run", "frameselect.pipeline", "frameselect.executors", "frameselect.executors.*")),
    (
        "evaluate, replay, bench, studies, reports",
        (
            "frameselect.replay",
            "frameselect.own",
            "frameselect.streaming.evaluate",
            "frameselect.crossvideo.run",
            "frameselect.selections",
            "frameselect.analysis",
            "frameselect.bench",
            "frameselect.bench.*",
            "frameselect.learned.*",
            "frameselect.routing.study",
            "frameselect.htmlreport",
            "frameselect.htmlreport.*",
        ),
    ),
    (
        "command line, integrations and the package's facade",
        ("frameselect.commands", "frameselect.commands.*", "frameselect.cli", "frameselect.integrations", "frameselect.integrations.*", "frameselect"),
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
        "if TYPE_CHECKING:\n    from frameselect.run import Run\n"
        "def f():\n    from frameselect import registry\n    from .base import Selector\n"
        "    import importlib\n    importlib.import_module('frameselect.store')\n"
        "def __getattr__(name):\n    from frameselect.pipeline import evaluate\n"
    )
    found = set(_imported(tree, "frameselect.selectors.aks", False, skip_getattr=False))
    assert found == {
        ("typing", "TYPE_CHECKING"),
        ("frameselect", "registry"),
        ("frameselect.selectors.base", "Selector"),
        ("importlib", None),
        ("frameselect.store", None),
        ("frameselect.pipeline", "evaluate"),
    }
    skipped = set(_imported(tree, "frameselect.selectors.aks", False, skip_getattr=True))
    assert ("frameselect.pipeline", "evaluate") not in skipped and ("frameselect.store", None) in skipped


def test_the_graph_holds_imports_made_inside_functions() -> None:
    graph = import_graph()
    assert "frameselect.cache" in graph["frameselect.encoders._onnx"]  # onnx_dir() imports it when called
    assert "frameselect.pipeline" in graph["frameselect.routing.study"]  # inside run_study-like functions


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

    from frameselect.answerers.base import AnswerRequest, answer_cache_key
    from frameselect.answerers.oracle import Oracle
    from frameselect.run import answer_cache_key as run_key
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
