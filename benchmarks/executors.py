"""The default benchmark cold on each executor, side by side; the driver's write rate; overlap.

    .venv/bin/python benchmarks/executors.py [--workers 2] [--executors serial,process,ray] [--rounds 1]
        [-s PATTERN ...] [-a ANSWERER ...] [--n-videos 9] [--minutes 3] [--records 20000]

1. ``frameselect bench`` (every selector x budgets 8, 16 x the default answering
   backends on the haystack suite) once per executor, each from an empty
   feature cache and an empty store (the suite's videos are built once and
   shared). With ``--rounds R`` every executor but ``serial`` runs R times, every
   other round in reverse order (A B B A), and the medians are compared. Prints
   each wall time, its ratio to ``serial`` measured in the same run, the CPU
   seconds it took (this process, its workers, and daemons such as a local Ray
   cluster's, read from ``/proc``: on a shared machine the part of the
   comparison that other jobs' load does not move), and whether every table
   equals serial's (timings aside).
2. The driver's write rate: records per second that :meth:`Store.write_sample`
   takes (the ceiling of any number of workers: the driver alone writes, one
   transaction per sample), the rate a run of many cached samples reaches with
   ``process`` workers, and the store's size per record (and per million).
3. Overlap: encoding the suite's pools with frames decoded on a prefetch thread
   against decoding in line; answering a slow local HTTP server from the driver's
   thread while the next videos are prepared against the serial loop.

The machine's load average is printed before and after: on a shared machine
every ratio is only as good as the load was steady.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors``: keep this folder off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


class TreeCPU:
    """CPU seconds of this process and of every process started under it (workers, a local Ray cluster's daemons).

    Read from ``/proc`` on a thread every ``interval`` s: each process's own user + system time, its
    last reading kept after it exits; Linux only, elsewhere only this process. The reading is kept
    light (a command line read once per process, once a second): this thread's CPU counts as the
    driver's, and on 2 cores it is taken from the workers. ``part()`` gives the seconds since the last call, by kind: ``driver`` (this process), ``workers`` (pool processes and
    Ray workers) and ``daemons`` (the rest: Ray's GCS, raylet and agents, the resource tracker).
    """

    def __init__(self, interval: float = 1.0) -> None:
        import threading

        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.seen: dict[int, tuple[str, float]] = {}
        self.taken: dict[str, float] = {"driver": 0.0, "workers": 0.0, "daemons": 0.0}
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, args=(interval,), daemon=True)
        self.thread.start()

    def _loop(self, interval: float) -> None:
        while not self.stop.wait(interval):
            self._sample()

    def _sample(self) -> None:
        if not os.path.isdir("/proc/self"):
            return
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    raw = f.read().decode(errors="replace")
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = (int(fields[11]) + int(fields[12])) / self.tick
        mine, frontier = set(), [os.getpid()]
        while frontier:
            pid = frontier.pop()
            kids = [c for c, p in parents.items() if p == pid and c not in mine]
            mine.update(kids)
            frontier.extend(kids)
        with self.lock:
            for pid in mine:
                cmd = self.seen[pid][0] if pid in self.seen else self._cmdline(pid)
                self.seen[pid] = (cmd, max(times[pid], self.seen.get(pid, ("", 0.0))[1]))

    @staticmethod
    def _cmdline(pid: int) -> str:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""

    @staticmethod
    def kind(cmd: str) -> str:
        if "multiprocessing.spawn" in cmd and "resource_tracker" not in cmd:
            return "workers"
        if cmd.startswith("ray::") or "default_worker.py" in cmd:
            return "workers"
        return "daemons"

    def totals(self) -> dict[str, float]:
        import resource

        self._sample()
        own = resource.getrusage(resource.RUSAGE_SELF)
        out = {"driver": own.ru_utime + own.ru_stime, "workers": 0.0, "daemons": 0.0}
        with self.lock:
            for cmd, seconds in self.seen.values():
                out[self.kind(cmd)] += seconds
        return out

    def part(self) -> dict[str, float]:
        """CPU seconds by kind since the previous call."""
        now = self.totals()
        diff = {k: now[k] - self.taken[k] for k in now}
        self.taken = now
        return diff

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def table_key(row: Any) -> tuple[Any, ...]:
    return (row.selector, row.k, row.answerer)


def comparable(table: dict[str, float]) -> dict[str, float]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in table.items() if "latency" not in k}  # type: ignore[misc]


def bench_on(name: str, tag: str, args: argparse.Namespace, suite_dir: Path, work: Path, cpu: TreeCPU) -> tuple[float, float, Any, dict[str, float]]:
    """One cold benchmark on executor ``name``: an empty feature cache and store (named ``tag``), the shared suite.

    The executor is started first (its start-up timed apart: processes spawned, a Ray cluster started).
    Returns start-up and bench seconds, the bench's result and its CPU seconds by kind (:class:`TreeCPU`).
    """
    from frameselect._engine.executors import ExecutorSpec, make_executor
    from frameselect._studies.bench.runner import BenchConfig, run_bench

    cache = work / tag
    cache.mkdir()
    (cache / "bench").symlink_to(suite_dir, target_is_directory=True)
    config = BenchConfig(
        selectors=tuple(args.selector or ()),
        answerers=tuple(args.answerer) if args.answerer else BenchConfig.answerers,
        store=str(work / f"{tag}.sqlite"),
        cache_dir=str(cache),
        n_videos=args.n_videos,
        minutes=args.minutes,
        executor=name,
        workers=None if name == "serial" else args.workers,
    )
    start = time.perf_counter()
    executor = None if name == "serial" else make_executor(ExecutorSpec(name, args.workers))
    try:
        if executor is not None:
            executor.submit(os.getpid).result()  # a worker is up
        started = time.perf_counter() - start
        cpu.part()
        start = time.perf_counter()
        result = run_bench(config, log=lambda msg: None, executor=executor)
        seconds = time.perf_counter() - start
        return started, seconds, result, cpu.part()
    finally:
        if executor is not None:
            executor.close()


def schedule(executors: list[str], rounds: int) -> list[str]:
    """The order of the cold runs: ``serial`` once, first; the others ``rounds`` times, every other round reversed.

    With two executors and two rounds that is A B B A: a load that drifts steadily over the
    measurement weighs on both alike.
    """
    others = [e for e in executors if e != "serial"]
    order = ["serial"] if "serial" in executors else []
    for r in range(rounds):
        order += others if r % 2 == 0 else others[::-1]
    return order


def executors_side_by_side(args: argparse.Namespace, work: Path) -> None:
    import statistics

    from frameselect.datasets.haystack import HaystackDataset

    suite_dir = work / "suite"
    samples = list(HaystackDataset(n_videos=args.n_videos, minutes=args.minutes, root=suite_dir))
    print(f"suite: {args.n_videos} videos x {args.minutes:g} min, {len(samples)} questions; {load()}")
    runs: dict[str, list[tuple[float, float, Any, dict[str, float]]]] = {name: [] for name in args.executors}
    cpu = TreeCPU()
    try:
        for i, name in enumerate(schedule(args.executors, args.rounds)):
            started, seconds, result, used = bench_on(name, f"{name}{i}", args, suite_dir, work, cpu)
            runs[name].append((started, seconds, result, used))
            t = result.timings
            print(
                f"{name:>8}: {seconds:7.1f} s after {started:.1f} s start-up (encode {t.get('encode', 0.0):.1f} s, selectors {t.get('selectors', 0.0):.1f} s; "
                f"{len(result.rows)} runs, {sum(r.computed for r in result.rows)} samples computed; CPU s: "
                + ", ".join(f"{k} {v:.1f}" for k, v in used.items())
                + f"; {load()})",
                flush=True,
            )
    finally:
        cpu.close()
    seconds = {name: statistics.median(r[1] for r in rs) for name, rs in runs.items()}
    cpus = {name: {k: statistics.median(r[3][k] for r in rs) for k in ("driver", "workers", "daemons")} for name, rs in runs.items()}
    base = runs["serial"][0][2] if "serial" in runs else None
    print()
    if args.rounds > 1:
        print(f"medians of {args.rounds} cold runs per executor (serial: one), in the order {' '.join(schedule(args.executors, args.rounds))}")
    print("| executor | workers | start-up s | bench s | speed-up vs serial | CPU s (driver + workers + daemons) | CPU vs serial | tables equal serial |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.executors:
        same = "–"
        if base is not None:
            theirs = {table_key(r): comparable(r.table) for r in base.rows}
            differ = [sum({table_key(r): comparable(r.table) for r in run[2].rows}.get(k) != v for k, v in theirs.items()) for run in runs[name]]
            same = "yes" if not any(differ) else f"NO ({max(differ)} differ)"
        ratio = seconds["serial"] / seconds[name] if "serial" in seconds else math.nan
        c = cpus[name]
        total = sum(c.values())
        cpu_ratio = total / sum(cpus["serial"].values()) if "serial" in cpus else math.nan
        each = "" if len(runs[name]) == 1 else " (" + ", ".join(f"{r[1]:.1f}" for r in runs[name]) + ")"
        print(
            f"| {name} | {1 if name == 'serial' else args.workers} | {statistics.median(r[0] for r in runs[name]):.1f} | {seconds[name]:.1f}{each} | {ratio:.2f}x "
            f"| {total:.0f} ({c['driver']:.0f} + {c['workers']:.0f} + {c['daemons']:.0f}) | {cpu_ratio:.2f}x | {same} |"
        )
    if "process" in seconds and "ray" in seconds:
        pairs = ", ".join(f"{r[1] / p[1]:.2f}" for r, p in zip(runs["ray"], runs["process"], strict=True))
        print(f"\nray / process wall time: {seconds['ray'] / seconds['process']:.2f} (each round: {pairs}; goal: within 1.15); process vs serial goal: >= 1.6x")


def write_rate(args: argparse.Namespace, work: Path) -> None:
    """Records per second into the SQLite store: the raw ceiling and what a run of cached samples reaches."""
    from frameselect.store import Store
    from frameselect.types import SampleRecord, Selection

    path = work / "rate.sqlite"
    store = Store(path)
    store.open_run("r" * 32, {"label": "rate"}, kind="run", label="rate")
    metrics = {
        "evidence_recall": 0.5,
        "frame_precision": 0.25,
        "mc_accuracy": 1.0,
        "selection_latency_s": 0.001,
        "answer_latency_s": 0.2,
        "answer_tokens": 120.0,
    }
    indices = tuple(range(0, 160, 10))
    start = time.perf_counter()
    for i in range(args.records):
        record = SampleRecord(
            sample_id=f"video{i // 3:06d}/question{i % 3}",
            metrics=metrics,
            answer="B",
            selection=indices,
            timestamps=tuple(float(t) for t in indices),
            k=16,
            policy="fps=1",
            metadata={"kind": "needle", "duration": "long"},
        )
        store.write_sample("r" * 32, record, Selection(indices=indices, selector="uniform", latency_s=0.001), video_id=f"{i // 3:064x}", policy="fps=1")
    rate = args.records / (time.perf_counter() - start)
    store.close()
    size = path.stat().st_size + sum(p.stat().st_size for p in work.glob("rate.sqlite-*"))
    print(
        f"\nStore.write_sample: {rate:,.0f} records/s (one transaction each, WAL); {size / args.records:,.0f} bytes per record -> {size / args.records:.0f} MB per million records"
    )


def driver_under_workers(args: argparse.Namespace, work: Path) -> None:
    """A run of many cached samples on ``process`` workers: the driver's records per second end to end."""
    import frameselect
    from frameselect._engine.executors import ProcessExecutor
    from frameselect.datasets.base import InMemoryDataset
    from frameselect.datasets.tiny import TinyDataset
    from frameselect.types import Sample

    tiny = list(TinyDataset(work / "tiny"))
    copies = max(1, args.driver_samples // len(tiny))
    samples = [Sample(f"{s.id}#{i}", s.video, s.query, s.answer, s.evidence, s.metadata) for i in range(copies) for s in tiny]
    ds = InMemoryDataset(samples, name="tiny_many")
    kw: dict[str, Any] = dict(selector="uniform", evaluators=["evidence_recall", "frame_precision"], dataset=ds, k=4)
    cached = frameselect.RunOptions(cache_dir=work / "tiny_cache")
    frameselect.evaluate(**kw, options=replace(cached, limit=len(tiny)))  # probes cached
    for workers in (1, args.many_workers):
        with ProcessExecutor(workers) as ex:
            frameselect.evaluate(**kw, options=replace(cached, limit=len(tiny), executor=ex))  # workers started
            start = time.perf_counter()
            result = frameselect.evaluate(**kw, store=work / f"driver{workers}.sqlite", options=replace(cached, executor=ex))
            rate = len(result.records) / (time.perf_counter() - start)
        print(f"driver, {workers} process worker(s), cached pools, {len(result.records)} samples on 2 videos: {rate:,.0f} records/s")


def overlap(args: argparse.Namespace, work: Path) -> None:
    """Prefetching decoded frames against in-line decoding; HTTP answers overlapping the next videos against the serial loop."""
    from frameselect._core.cache import Cache
    from frameselect._engine.pipeline import featurize
    from frameselect._engine.plan import resolve
    from frameselect._engine.run import RunContext, build_pool
    from frameselect.datasets.haystack import HaystackDataset

    samples = list(HaystackDataset(n_videos=args.n_videos, minutes=args.minutes, root=work / "suite"))
    videos = list({s.video: s for s in samples}.values())[: args.overlap_videos]
    encoder = resolve("encoders", "imagenet_label")
    timings: dict[int, list[float]] = {0: [], 2: []}
    for rep in range(2):
        for depth in (0, 2) if rep % 2 == 0 else (2, 0):
            ctx = RunContext(cache=Cache(None), prefetch=depth)
            pools = [build_pool(s, "fps=1.0", ctx) for s in videos]
            start = time.perf_counter()
            for pool, s in zip(pools, videos):
                featurize(pool, s, {"embeddings"}, encoder, ctx)
            timings[depth].append(time.perf_counter() - start)
    inline, ahead = min(timings[0]), min(timings[2])
    print(f"\nencoding {len(videos)} pools (imagenet_label): decode in line {inline:.1f} s, decode on a prefetch thread {ahead:.1f} s: {inline / ahead:.2f}x")

    sys.path.insert(0, str(Path(_HERE).parent / "tests"))
    import frameselect
    from chat_server import ChatServer
    from frameselect._engine.executors import InlineExecutor
    from frameselect.answerers.http import OpenAIHTTPAnswerer

    chosen = {s.video for s in videos}
    questions = [s for s in samples if s.video in chosen]
    with ChatServer(lambda n, body, prompt: {"text": "B", "sleep": args.server_delay}) as server:
        kw: dict[str, Any] = dict(selector="kcenter", evaluators=["mc_accuracy"], dataset=questions, k=8, encoder="imagenet_label")
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", concurrency=4, max_retries=0)
        t0 = time.perf_counter()
        frameselect.evaluate(**kw, answerer=ans, store=work / "http_serial.sqlite", options=frameselect.RunOptions(cache_dir=work / "http_serial"))
        t1 = time.perf_counter()
        overlapping = frameselect.RunOptions(cache_dir=work / "http_overlap", executor=InlineExecutor())
        frameselect.evaluate(**kw, answerer=ans, store=work / "http_overlap.sqlite", options=overlapping)
        t2 = time.perf_counter()
    print(
        f"{len(questions)} questions on {len(videos)} videos, pools encoded cold, server {args.server_delay:g} s per answer, 4 in flight: "
        f"serial loop {t1 - t0:.1f} s, answers overlapping the next videos (driver thread) {t2 - t1:.1f} s: {(t1 - t0) / (t2 - t1):.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executors", default="serial,process,ray")
    parser.add_argument("--rounds", type=int, default=1, help="cold runs per executor other than serial, every other round in reverse order (A B B A)")
    parser.add_argument("-s", "--selector", action="append", help="selector patterns (default: every registered selector)")
    parser.add_argument("-a", "--answerer", action="append", help="answering backends (default: the bench's)")
    parser.add_argument("--n-videos", type=int, default=9)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--records", type=int, default=20000, help="records written in the write-rate measurement")
    parser.add_argument("--driver-samples", type=int, default=600)
    parser.add_argument("--many-workers", type=int, default=8)
    parser.add_argument("--overlap-videos", type=int, default=3)
    parser.add_argument("--server-delay", type=float, default=0.2)
    parser.add_argument("--skip", action="append", default=[], help="parts to skip: bench, rate, driver, overlap")
    args = parser.parse_args()
    args.executors = [e.strip() for e in args.executors.split(",") if e.strip()]
    print(f"start: {load()}")
    with tempfile.TemporaryDirectory(prefix="fs-executors-") as tmp:
        work = Path(tmp)
        if "bench" not in args.skip:
            executors_side_by_side(args, work)
        if "rate" not in args.skip:
            write_rate(args, work)
        if "driver" not in args.skip:
            driver_under_workers(args, work)
        if "overlap" not in args.skip:
            overlap(args, work)
    print(f"\nend: {load()}")


if __name__ == "__main__":
    main()
