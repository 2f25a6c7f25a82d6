"""Latency of every registered selector on one core.

    .venv/bin/python benchmarks/selectors.py [--n 3600] [--k 32] [--dim 512] [--repeats 5] [PATTERN]

Features are random but seeded: N frame embeddings (D-dim, L2-normalised), a
text embedding, relevance scores (embeddings · text) and, for pixel-based
selectors, N frames of 72 × 128 × 3 uint8. Each selector is timed around
``select()`` (validation included), median of ``--repeats`` runs after one
warm-up (fewer repeats for selectors slower than a second), and reported as a
ratio to ``uniform``'s median measured in the same run. Selectors above the
``--flag-ms`` threshold (50 ms) are flagged.
"""

from __future__ import annotations

import os
import sys

# this file is named like the standard library's ``selectors`` module, which
# asyncio/socket import: keep its folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

# one core: pin the BLAS/OpenMP pools before numpy (or torch) is imported
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from frameselect.registry import selectors  # noqa: E402
from frameselect.types import CandidatePool, Features, Query  # noqa: E402

PIXEL_SHAPE = (72, 128)


def make_inputs(n: int, dim: int, seed: int = 0) -> tuple[CandidatePool, Query, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = rng.standard_normal(dim).astype(np.float32)
    text /= np.linalg.norm(text)
    arrays = {
        "embeddings": emb,
        "text": text,
        "scores": emb.astype(np.float64) @ text.astype(np.float64),
        "pixels": rng.integers(0, 256, size=(n, *PIXEL_SHAPE, 3), dtype=np.uint8),
    }
    pool = CandidatePool.from_timestamps(np.arange(n, dtype=np.float64), video_id="bench")  # 1 fps: one hour at N = 3600
    return pool, Query("What happens after the person opens the door?", ("A", "B", "C", "D")), arrays


def features_for(needs: frozenset[str], arrays: dict[str, Any], cache: dict[frozenset[str], Features]) -> Features:
    """Exactly what the pipeline would hand the selector; built once per combination of needs."""
    if needs not in cache:
        wanted: dict[str, Any] = {}
        if needs & {"embeddings", "text", "relevance"}:
            wanted["embeddings"] = arrays["embeddings"]
        if needs & {"text", "relevance"}:
            wanted["text"] = arrays["text"]
            wanted["scores"] = arrays["scores"]
        if "pixels" in needs:
            wanted["pixels"] = arrays["pixels"]
        cache[needs] = Features(encoder_id="bench", **wanted)
    return cache[needs]


def time_selector(name: str, pool: CandidatePool, query: Query, k: int, features: Features, repeats: int) -> float:
    """Median seconds of ``select()``, after one warm-up call."""
    selector = selectors.create(name)
    start = time.perf_counter()
    selector.select(pool, query, k, features, seed=0)
    first = time.perf_counter() - start
    runs = 1 if first > 5.0 else 2 if first > 1.0 else repeats
    times = []
    for r in range(runs):
        start = time.perf_counter()
        selector.select(pool, query, k, features, seed=r)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pattern", nargs="?", default="*", help="wildcard over selector names")
    parser.add_argument("--n", type=int, default=3600, help="candidate frames (default: %(default)s)")
    parser.add_argument("--k", type=int, default=32, help="frame budget (default: %(default)s)")
    parser.add_argument("--dim", type=int, default=512, help="embedding dimension (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per selector (default: %(default)s)")
    parser.add_argument("--flag-ms", type=float, default=50.0, help="flag selectors slower than this (default: %(default)s)")
    args = parser.parse_args(argv)

    pinned = _pin_one_core()
    try:
        import torch  # noqa: F401  (only if a selector brought it in: keep it on one thread too)

        torch.set_num_threads(1)
    except ImportError:
        pass
    pool, query, arrays = make_inputs(args.n, args.dim)
    cache: dict[frozenset[str], Features] = {}
    names = selectors.names(args.pattern)
    print(f"# selector latency: N={args.n}, k={args.k}, D={args.dim}, pixels {PIXEL_SHAPE[0]}x{PIXEL_SHAPE[1]}, one thread, {pinned}")
    print(f"# numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}; median of {args.repeats} runs after a warm-up")
    uniform_s = time_selector("uniform", pool, query, args.k, features_for(frozenset(), arrays, cache), args.repeats)
    rows: list[tuple[str, str, float | None, str]] = []
    for name in names:
        try:
            needs = frozenset(getattr(selectors.get(name), "needs", frozenset()))
            seconds = uniform_s if name == "uniform" else time_selector(name, pool, query, args.k, features_for(needs, arrays, cache), args.repeats)
            rows.append((name, ",".join(sorted(needs)) or "-", seconds, ""))
        except Exception as exc:  # report and go on: one broken selector must not hide the others
            rows.append((name, "?", None, f"error: {type(exc).__name__}: {exc}"[:120]))
    width = max([len(r[0]) for r in rows] + [8])
    print(f"{'selector':<{width}}  {'needs':<27}  {'median ms':>10}  {'x uniform':>10}  flag")
    flagged = 0
    for name, needs_text, seconds, note in rows:
        if seconds is None:
            print(f"{name:<{width}}  {needs_text:<27}  {'-':>10}  {'-':>10}  {note}")
            continue
        ms = seconds * 1000
        ratio = seconds / uniform_s if uniform_s > 0 else float("inf")
        flag = f"> {args.flag_ms:g} ms" if ms > args.flag_ms else ""
        flagged += bool(flag)
        print(f"{name:<{width}}  {needs_text:<27}  {ms:>10.3f}  {ratio:>10.1f}  {flag}")
    print(f"# uniform: {uniform_s * 1e6:.1f} us; {flagged} of {len(rows)} selectors above {args.flag_ms:g} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
