"""Peak memory of a pixel-selector run against video length.

    .venv/bin/python benchmarks/memory.py [--minutes 10 30 60] [--selector scenedetect_content] [--pool fps=1]

Writes low-resolution test videos (160 x 90, 1 frame per second, a new
scene every 20 s with a bar moving across it) of each length into a
temporary folder, then, for each, runs ``frameselect.evaluate`` with a
pixel-based selector on one question about that video in a fresh
subprocess with an empty feature cache, and prints the subprocess's peak
resident set size (``VmHWM``, else ``ru_maxrss``), its peak anonymous (private) memory
sampled every 5 ms from ``/proc/self/status`` where that file exists, and the
ratio of the longest to the shortest video. The goal: the 60/10 ratio of
peak RSS stays under 1.3 (memory flat in video length).
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors``
# module, which subprocess imports: keep this folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.append(_HERE)  # for _rss, after the standard library

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _rss import peak_rss_mib  # noqa: E402

WIDTH, HEIGHT = 160, 90


def make_video(path: Path, minutes: int) -> Path:
    """A 1-fps video: a new flat-coloured scene every 20 s, a white bar moving across each scene."""
    from frameselect._core.video.synth import write_video

    rng = np.random.default_rng(minutes)
    colours = rng.integers(0, 256, size=(minutes * 3 + 1, 3), dtype=np.uint8)

    def draw(i: int) -> np.ndarray:
        frame = np.empty((HEIGHT, WIDTH, 3), np.uint8)
        frame[:] = colours[i // 20]
        x = (i % 20) * WIDTH // 20
        frame[:, x : x + 8] = 255
        return frame

    return write_video(path, minutes * 60, draw, fps=1.0, gop=30)


class _AnonPeak:
    """Samples the process's anonymous resident memory (RssAnon) in a thread; keeps the maximum (KiB)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> int:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._read())
            time.sleep(0.005)

    def __enter__(self) -> _AnonPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._read())


def child(video: str, selector: str, pool: str, workdir: str) -> None:
    """One run in this process; prints a JSON line with its peaks."""
    import frameselect
    from frameselect.datasets.base import InMemoryDataset
    from frameselect.types import Query, Sample, Span

    sample = Sample("long/q", video, Query("when does the scene change?"), "A", (Span(60.0, 80.0),))
    with _AnonPeak() as anon:
        t0 = time.perf_counter()
        result = frameselect.evaluate(
            selector=selector,
            evaluators=("evidence_recall",),
            dataset=InMemoryDataset([sample]),
            k=8,
            store=os.path.join(workdir, "store.sqlite"),
            options=frameselect.RunOptions(pool=pool, cache_dir=os.path.join(workdir, "cache"), progress=False),
        )
        seconds = time.perf_counter() - t0
    if result.failed:
        raise SystemExit(f"the run failed: {result.failed[0].error}")
    print(json.dumps({"peak_rss_mib": peak_rss_mib(), "peak_anon_mib": anon.peak / 1024, "seconds": seconds}))


def measure(video: Path, selector: str, pool: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(video), "--selector", selector, "--pool", pool, "--workdir", work],
            check=True,
            capture_output=True,
            text=True,
        )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=int, nargs="+", default=[10, 30, 60])
    ap.add_argument("--selector", default="scenedetect_content")
    ap.add_argument("--pool", default="fps=1")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.selector, args.pool, args.workdir)
        return
    print(f"selector {args.selector}, pool {args.pool}, videos {WIDTH}x{HEIGHT} at 1 fps")
    print(f"{'minutes':>8} {'pool frames':>12} {'peak RSS MiB':>13} {'peak anon MiB':>14} {'seconds':>8}")
    rows: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for minutes in args.minutes:
            video = make_video(Path(tmp) / f"{minutes}min.mp4", minutes)
            rows[minutes] = measure(video, args.selector, args.pool)
            r = rows[minutes]
            print(f"{minutes:>8} {minutes * 60:>12} {r['peak_rss_mib']:>13.1f} {r['peak_anon_mib']:>14.1f} {r['seconds']:>8.2f}", flush=True)
    lo, hi = min(rows), max(rows)
    ratio = rows[hi]["peak_rss_mib"] / rows[lo]["peak_rss_mib"]
    anon_ratio = rows[hi]["peak_anon_mib"] / rows[lo]["peak_anon_mib"] if rows[lo]["peak_anon_mib"] else float("nan")
    verdict = "ok" if ratio < 1.3 else "ABOVE the 1.3 goal"
    print(f"peak RSS ratio {hi}/{lo} min: {ratio:.3f} ({verdict}); peak anonymous memory ratio: {anon_ratio:.3f}")


if __name__ == "__main__":
    main()
