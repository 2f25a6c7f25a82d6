"""Start-up stays light: importing the package and listing parts load no heavy framework.

Each check runs in a fresh interpreter (``sys.modules`` of this test process
holds whatever other tests imported). Timing is measured by
``benchmarks/startup.py``, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test starts a fresh interpreter

HEAVY = ("torch", "scipy", "av")
SRC = str(Path(__file__).resolve().parents[1] / "src")


def fresh(code: str) -> object:
    """Run ``code`` in a new interpreter with this checkout first on the path; it prints one JSON value."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


LOADED = f"import json, sys; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"


def test_import_frameselect_loads_no_heavy_module() -> None:
    assert fresh("import frameselect\n" + LOADED) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["list", "selectors"],
        ["list", "encoders"],
        ["list", "answerers"],
        ["list", "streaming"],
        ["list", "budget_policies"],
        ["list", "joint_selectors"],
        ["list", "token_models"],
    ],
    ids=" ".join,
)
def test_listing_parts_from_the_command_line_loads_no_heavy_module(argv: list[str]) -> None:
    code = f"import contextlib, io\nfrom frameselect.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})\n" + LOADED
    assert fresh(code) == []


def test_cli_list_prints_every_registered_name() -> None:
    code = (
        "import contextlib, io, json\nfrom frameselect.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n    main(['list', 'selectors'])\n"
        "from frameselect.registry import selectors\nselectors._load_builtins()\n"
        "print(json.dumps([out.getvalue().split(), sorted(selectors._entries)]))"
    )
    listed, registered = fresh(code)  # type: ignore[misc]
    assert listed == registered and "uniform" in listed


def test_listing_names_imports_no_builtin_module_and_get_still_loads_them() -> None:
    code = (
        "import json, sys\nfrom frameselect.registry import selectors\nnames = selectors.names('k*')\n"
        "before = 'frameselect.selectors.diversity' in sys.modules\ncls = selectors.get('kmeans')\n"
        "print(json.dumps([names, before, cls.__module__, 'frameselect.selectors.diversity' in sys.modules]))"
    )
    assert fresh(code) == [["katna", "kcenter", "kmeans", "ktv"], False, "frameselect.selectors.diversity", True]


def test_the_static_name_index_equals_what_the_builtin_modules_register() -> None:
    from frameselect._core.builtin_names import BUILTIN_NAMES

    registered = fresh("import json\nfrom frameselect.registry import registered_by_modules\nprint(json.dumps(registered_by_modules()))")
    table = "".join(f"    {k!r}: {tuple(v)!r},\n".replace("'", '"') for k, v in registered.items())  # type: ignore[union-attr]
    assert {k: list(v) for k, v in BUILTIN_NAMES.items()} == registered, f"update BUILTIN_NAMES in src/frameselect/_core/builtin_names.py to:\n{table}"


def test_bench_parser_defaults_equal_the_runner_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect._studies.bench import runner
    from frameselect.cli.commands import bench

    monkeypatch.setenv("FRAMESELECT_BENCH_STORE", "elsewhere.sqlite")
    assert (bench.N_VIDEOS, bench.MINUTES) == (runner.BenchConfig.n_videos, runner.BenchConfig.minutes)
    assert bench.default_store() == runner.default_store() == "elsewhere.sqlite"


def test_import_frameselect_and_the_parser_load_no_numpy() -> None:
    """The package and the command line's parser (--help) import nothing that holds arrays."""
    numpy_loaded = "import json, sys; print(json.dumps('numpy' in sys.modules))"
    assert fresh("import frameselect\n" + numpy_loaded) is False
    assert fresh("from frameselect.cli import build_parser\nbuild_parser()\n" + numpy_loaded) is False
