"""Regenerate the tables and figures that README.md and docs/*.md quote.

    bash scripts/figures.sh [--list] [--only NAME ...] [--out DIR]

Each entry below is one command that a page quotes a table or a figure from;
the page's provenance line names the entry (``scripts/figures.sh --only
NAME``). Every command runs in its own process and its output (standard output
and standard error, in order) goes to ``DIR/NAME.txt``, headed by the command
and the machine (cores, CPU model, load average, date) and followed by its wall
time and exit status. Stores and reports of ``frameselect bench`` go to
``DIR/NAME.sqlite`` (and ``.html``), so every entry starts from an empty store;
the feature cache is the usual one (``FRAMESELECT_CACHE`` or the default), so
later entries reuse the pools' features of earlier ones.

``--list`` prints the commands without running anything. The default folder is
a new ``figures/`` folder under the system's temporary directory.

Times measure the machine as much as the code: compare them only within one
folder (one machine, one load), as the header of each file says.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors``: keep this folder off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Entry:
    """One quoted command: ``argv`` starts with ``frameselect`` (the CLI) or a ``benchmarks/*.py`` script.

    ``{out}`` in an argument is replaced by the entry's output path without extension.
    """

    name: str
    argv: tuple[str, ...]
    docs: tuple[str, ...]
    what: str


def _bench(*args: str) -> tuple[str, ...]:
    return ("frameselect", "bench", *args, "--store", "{out}.sqlite")


ENTRIES: tuple[Entry, ...] = (
    Entry("selectors", ("frameselect", "list", "selectors"), ("docs/bench.md",), "the registered selectors (the count docs quote)"),
    Entry(
        "bench-main",
        _bench("--executor", "process", "--no-cross-video"),
        ("docs/bench.md",),
        "the default benchmark's main section: detectable difference, tables, rank section, fill rule",
    ),
    Entry(
        "bench-small",
        _bench(
            "-s", "uniform", "-s", "topk", "-s", "multires", "-s", "fixed_fps", "-s", "aks", "-s", "kcenter", "--n-videos", "3", "--minutes", "1", "-k", "8"
        ),
        ("docs/bench.md",),
        "the form of the bench tables on 3 one-minute videos",
    ),
    Entry(
        "bench-six",
        _bench("-s", "uniform", "-s", "topk", "-s", "kcenter", "-s", "random", "-s", "fixed_fps", "-s", "multires", "--no-report"),
        ("docs/bench.md",),
        "six selectors on the default suite",
    ),
    Entry("bench-fill", _bench("--selector", "aks", "--selector", "topk", "--selector", "uniform"), ("docs/bench.md",), "AKS and its fill rule"),
    Entry("cross-video", _bench("--cross-video"), ("docs/bench.md", "docs/crossvideo.md"), "the cross-video section alone, on the default suite"),
    Entry(
        "cross-video-small",
        _bench("--cross-video", "--n-videos", "3", "--minutes", "1", "-k", "8"),
        ("docs/crossvideo.md",),
        "the cross-video tables on 3 one-minute videos",
    ),
    Entry(
        "stream",
        _bench("--stream", "-M", "4", "-M", "32", "-s", "sliding_window", "-s", "reservoir", "-s", "stream_kcenter", "--encoder", "color_histogram"),
        ("docs/streaming.md",),
        "the streaming section of the bench",
    ),
    Entry(
        "tokens",
        _bench(
            "-s",
            "uniform",
            "-s",
            "random",
            "-s",
            "topk",
            "-s",
            "kcenter",
            "-s",
            "aks",
            "-s",
            "focus",
            "-s",
            "mmr",
            "-s",
            "multires",
            "--answerer",
            "label_ocr_reader",
            "--answerer",
            "oracle",
            "--no-cross-video",
            "--no-report",
            "--tokens",
        ),
        ("docs/tokens.md",),
        "eight selectors with the token section",
    ),
    Entry("chosen-budget", _bench("--chosen-budget", "-C", "cap=32"), ("docs/chosen-budgets.md",), "chosen budgets against fixed budgets at equal mean spend"),
    Entry(
        "chosen-budget-stop",
        _bench("--chosen-budget", "marginal_stop", "-C", "cap=32"),
        ("docs/chosen-budgets.md",),
        "the same with the marginal stopper",
    ),
    Entry(
        "route-study",
        (
            "frameselect",
            "route-report",
            "--study",
            "-d",
            "haystack",
            "-e",
            "imagenet_label",
            "-a",
            "label_ocr_reader",
            "--evaluator",
            "mc_accuracy",
            "--evaluator",
            "evidence_recall",
            "--bank",
            "uniform,topk",
            "--store",
            "{out}.sqlite",
        ),
        ("docs/routing.md",),
        "routed against constant budgets",
    ),
    Entry(
        "query-text",
        ("benchmarks/query_text.py", "--store", "{out}.sqlite"),
        ("docs/bench.md",),
        "query relevance from the question alone against the question and its options",
    ),
    Entry("tokens-overhead", ("benchmarks/tokens.py",), ("docs/tokens.md",), "planning and pricing by tokens against selection time"),
    Entry("streaming-latency", ("benchmarks/streaming.py",), ("docs/streaming.md",), "streaming selectors on a 1-hour stream"),
    Entry("selectors-time", ("benchmarks/selectors.py",), ("docs/performance-selectors.md",), "selector latency and the reference re-statements"),
    Entry("selector-floors", ("benchmarks/selector_floors.py",), ("docs/performance-selectors.md",), "CPU-time floors of the slow selectors"),
    Entry("encoders", ("benchmarks/encoders.py", "--frames", "64", "--repeats", "2"), ("docs/performance.md",), "encoder throughput, eager against ONNX"),
    Entry("memory", ("benchmarks/memory.py",), ("docs/performance.md",), "peak memory against video length"),
    Entry("executors", ("benchmarks/executors.py",), ("docs/scale.md",), "executors side by side"),
    Entry("learned", ("benchmarks/learned.py",), ("docs/learned.md",), "training time and held-out accuracy of the learned selector"),
    Entry("cache", ("benchmarks/cache.py",), ("docs/design.md",), "feature-cache read cost with checksums"),
    Entry("startup", ("benchmarks/startup.py",), ("docs/performance-selectors.md",), "start-up time of the commands"),
)

BY_NAME = {e.name: e for e in ENTRIES}


def command_line(entry: Entry, out: Path | None = None) -> list[str]:
    """The process to start: the CLI as ``python -m frameselect.cli``, a script with this interpreter."""
    base = str(out / entry.name) if out is not None else entry.name
    args = [a.replace("{out}", base) for a in entry.argv]
    if args[0] == "frameselect":
        return [sys.executable, "-m", "frameselect.cli", *args[1:]]
    return [sys.executable, str(ROOT / args[0]), *args[1:]]


def shown(entry: Entry) -> str:
    """The command as the docs write it."""
    return shlex.join(entry.argv).replace("'{out}.sqlite'", "{out}.sqlite")


def machine() -> str:
    """Cores, CPU model, load average and the date: what every time depends on."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{os.cpu_count()} cores ({model}), load average {load}, {date}"


def run(entry: Entry, out: Path) -> int:
    cmd = command_line(entry, out)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    target = out / f"{entry.name}.txt"
    with target.open("w", encoding="utf-8") as fh:
        fh.write(f"# entry: {entry.name} ({entry.what}; quoted in {', '.join(entry.docs)})\n")
        fh.write(f"# command: {shown(entry).replace('{out}', str(out / entry.name))}\n")
        fh.write(f"# machine: {machine()}\n\n")
        fh.flush()
        start = time.perf_counter()
        rc = subprocess.call(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - start
        fh.write(f"\n# wall time: {wall:.1f} s; exit status {rc}; at the end: {machine()}\n")
    print(f"{entry.name}: exit {rc}, {wall:.1f} s -> {target}")
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the entries and their commands, run nothing")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this entry (repeatable)")
    parser.add_argument("--out", type=Path, help="output folder (default: a new figures/ folder under the temporary directory)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.only or () if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown entry {', '.join(unknown)}; entries: {', '.join(BY_NAME)}")
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(ENTRIES)
    if args.list:
        for e in chosen:
            print(f"{e.name}\t{shown(e)}\t# {e.what}; quoted in {', '.join(e.docs)}")
        return 0
    out = args.out if args.out is not None else Path(tempfile.mkdtemp()) / "figures"
    out.mkdir(parents=True, exist_ok=True)
    failed = [e.name for e in chosen if run(e, out) != 0]
    print(f"{len(chosen) - len(failed)} of {len(chosen)} entries in {out}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
