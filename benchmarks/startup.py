"""Start-up time of ``import frameselect``, ``frameselect --help`` and ``frameselect list selectors``.

    .venv/bin/python benchmarks/startup.py [--runs 7] [--importtime]

Each command runs ``--runs`` times in a fresh interpreter, interleaved; the
table gives the median wall time and the median user, system and total CPU
time of the child, beside two baselines measured in the same run: an empty
interpreter and ``import numpy``. CPU time is the figure to compare on a
loaded machine, where wall time includes waiting for a core. The console
script ``frameselect`` is ``frameselect.cli:main``, run here as
``python -c "from frameselect.cli import main; main([...])"``, which imports
the same modules. ``--importtime`` adds the slowest modules of one
``list selectors`` start from ``python -X importtime``.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py would shadow the standard library's ``selectors``, which subprocess imports
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")

COMMANDS: dict[str, str] = {
    "python (empty)": "pass",
    "import numpy": "import numpy",
    "import frameselect": "import frameselect",
    "frameselect --help": "import sys\nfrom frameselect.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "frameselect list selectors": "from frameselect.cli import main\nmain(['list', 'selectors'])",
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH", "")) if p)}


def _use_source(path: str) -> None:
    global SRC
    SRC = os.path.abspath(path)


def run_once(code: str, extra: tuple[str, ...] = ()) -> tuple[float, float, float, str]:
    """Wall seconds, the child's user and system CPU seconds, and its stderr, for one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *extra, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, done.stderr


def slowest_imports(code: str, top: int) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the ``top`` slowest top-level imports, from ``-X importtime``."""
    *_, err = run_once(code, ("-X", "importtime"))
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line.split("|")
        rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per command (default: %(default)s)")
    parser.add_argument("--importtime", action="store_true", help="also list the slowest imports of 'list selectors'")
    parser.add_argument("--src", default=SRC, help="the package's source folder to time, e.g. another checkout's (default: this one's)")
    args = parser.parse_args(argv)
    _use_source(args.src)
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in COMMANDS}
    for code in COMMANDS.values():  # warm the file cache and bytecode once
        run_once(code)
    for _ in range(args.runs):
        for name, code in COMMANDS.items():
            wall, user, system, _ = run_once(code)
            samples[name].append((wall, user, system))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# start-up of {SRC}: median of {args.runs} fresh interpreters each, interleaved; python {sys.version.split()[0]}; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'command':<28}  {'wall ms':>8}  {'user ms':>8}  {'sys ms':>8}  {'cpu ms':>8}")
    for name, runs in samples.items():
        wall, user, system, cpu = (statistics.median(v) * 1000 for v in zip(*((w, u, s, u + s) for w, u, s in runs)))
        print(f"{name:<28}  {wall:>8.0f}  {user:>8.0f}  {system:>8.0f}  {cpu:>8.0f}")
    if args.importtime:
        print("# slowest imports of 'frameselect list selectors' (cumulative ms, -X importtime)")
        for micros, module in slowest_imports(COMMANDS["frameselect list selectors"], 12):
            print(f"{micros / 1000:>8.1f}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
