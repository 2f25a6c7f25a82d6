"""Latency of every registered selector on one core.

    .venv/bin/python benchmarks/selectors.py [--n 3600] [--k 32] [--dim 512] [--repeats 5] [--cpu] [PATTERN]

Features are random but seeded: N frame embeddings (D-dim, L2-normalised), a
text embedding, relevance scores (embeddings · text) and, for pixel-based
selectors, N frames of 72 × 128 × 3 uint8. Each selector is timed around
``select()`` (validation included), median of ``--repeats`` runs after one
warm-up (fewer repeats for selectors slower than a second), and reported as a
ratio to ``uniform``'s median measured in the same run. Selectors above the
``--flag-ms`` threshold (50 ms) are flagged. Times are wall-clock, or with
``--cpu`` the process's CPU time, which other jobs on a shared machine
inflate less.

A second table times AKS, BOLT, MDP3 and FOCUS against re-statements of their
reference code (``_reference_impls.py``: the reference's own libraries, numpy
or float32 torch on one thread) on the same inputs: our selector in
``reference_exact`` mode, the reference, their ratio, and whether both return
the same frames; the two alternate, and the ratio is the median of the
per-pair ratios. References slower than 5 s run once (MDP3's takes one to
three minutes at N = 3,600). ``--no-reference`` skips the table.
"""

from __future__ import annotations

import os
import sys

# this file is named like the standard library's ``selectors`` module, which
# asyncio/socket import: keep its folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import selectors as _stdlib_selectors  # noqa: E402,F401  (the standard library's, cached before _HERE returns)

sys.path.append(_HERE)  # for _reference_impls; ``selectors`` already resolves to the standard library

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

#: the clock every figure is read from; ``--cpu`` switches it to the process's CPU time
CLOCK = time.perf_counter


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
    start = CLOCK()
    selector.select(pool, query, k, features, seed=0)
    first = CLOCK() - start
    runs = 1 if first > 5.0 else 2 if first > 1.0 else repeats
    times = []
    for r in range(runs):
        start = CLOCK()
        selector.select(pool, query, k, features, seed=r)
        times.append(CLOCK() - start)
    return statistics.median(times)


def _time_pair(ours: Any, theirs: Any, repeats: int) -> tuple[float, float, float, Any, Any]:
    """Our and the reference's median seconds, the median of their per-pair ratios, and both results.

    The two calls alternate (one warm-up each), so a change in the machine's
    load hits both alike; a reference slower than 5 s runs once, after ours.
    """

    def timed(call: Any) -> tuple[float, Any]:
        start = CLOCK()
        result = call()
        return CLOCK() - start, result

    our_s, our_out = timed(ours)
    ref_s, ref_out = timed(theirs)
    if ref_s > 5.0:
        return our_s, ref_s, ref_s / our_s, our_out, ref_out
    pairs = []
    for _ in range(1 if ref_s > 1.0 else max(repeats, 11)):
        our_s, our_out = timed(ours)
        ref_s, ref_out = timed(theirs)
        pairs.append((our_s, ref_s))
    return (
        statistics.median(o for o, _ in pairs),
        statistics.median(r for _, r in pairs),
        statistics.median(r / o for o, r in pairs),
        our_out,
        ref_out,
    )


def reference_rows(names: list[str], pool: CandidatePool, k: int, arrays: dict[str, Any], repeats: int) -> list[tuple[str, float, float, float, bool]]:
    """(name, our seconds, reference seconds, ratio, same frames) for each selector with a re-stated reference."""
    import _reference_impls as ref

    scores = arrays["scores"]
    relevance = Features(encoder_id="bench", scores=scores)
    listed = scores.tolist()  # the AKS reference reads its scores from JSON lists
    seed = 42  # FOCUS's driver seeds np.random.default_rng(42)

    def ours(name: str, features: Features, **params: Any) -> Any:
        selector = selectors.create(name, reference_exact=True, **params)
        return lambda: list(selector.select(pool, None, k, features, rng=np.random.default_rng(seed)).indices)

    cases: dict[str, tuple[Any, Any]] = {
        "aks": (ours("aks", relevance), lambda: ref.aks_reference(listed, k)),
        "bolt": (ours("bolt", relevance), lambda: ref.bolt_reference(scores, k).tolist()),
        "focus": (ours("focus", relevance), lambda: ref.focus_reference(scores, 1.0, k, np.random.default_rng(seed))),
    }
    if "mdp3" in names:
        import torch

        torch.set_num_threads(1)
        emb, text = torch.from_numpy(arrays["embeddings"]), torch.from_numpy(arrays["text"][None, :])
        embedded = Features(encoder_id="bench", embeddings=arrays["embeddings"], text=arrays["text"])
        cases["mdp3"] = (ours("mdp3", embedded), lambda: ref.mdp3_reference(emb, text, k))
    rows = []
    for name in sorted(set(cases) & set(names)):
        our_s, ref_s, ratio, our_out, ref_out = _time_pair(*cases[name], repeats)
        rows.append((name, our_s, ref_s, ratio, [int(i) for i in our_out] == [int(i) for i in ref_out]))
    return rows


def print_reference_rows(rows: list[tuple[str, float, float, float, bool]]) -> None:
    print("# against the reference code: ours in reference_exact mode, same inputs (FOCUS: default_rng(42)), calls alternating;")
    print("# medians of the times and of the per-pair ratios")
    print(f"{'selector':<10}  {'ours ms':>10}  {'reference ms':>13}  {'x faster':>9}  same frames")
    for name, our_s, ref_s, ratio, same in rows:
        print(f"{name:<10}  {our_s * 1000:>10.3f}  {ref_s * 1000:>13.3f}  {ratio:>9.1f}  {'yes' if same else 'NO'}")


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
    parser.add_argument("--no-reference", action="store_true", help="skip timing the re-stated reference implementations")
    parser.add_argument("--cpu", action="store_true", help="CPU time of this process instead of wall time (steadier on a shared machine)")
    args = parser.parse_args(argv)
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time

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
    clock = "CPU" if args.cpu else "wall"
    print(f"# numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}; {clock} time, median of {args.repeats} runs after a warm-up")
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    uniform_s = time_selector("uniform", pool, query, args.k, features_for(frozenset(), arrays, cache), args.repeats)
    rows: list[tuple[str, str, float | None, str]] = []
    for name in names:
        try:
            needs = frozenset(selectors.create(name).needs)  # an instance: some selectors derive it from their settings
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
    if not args.no_reference:
        print_reference_rows(reference_rows(names, pool, args.k, arrays, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
