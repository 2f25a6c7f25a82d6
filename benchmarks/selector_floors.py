"""What the selectors above 50 ms cannot avoid: each one's time beside the work its output is defined by.

    .venv/bin/python benchmarks/selector_floors.py [--n 3600] [--k 32] [--dim 512] [--repeats 5]

Same seeded inputs and one-core pinning as ``benchmarks/selectors.py``. For
each selector above the 50 ms target it prints the selector's median CPU
time and, measured in the same run, the operations that fix its result
(a matrix product whose rounding the selection depends on, the random
draws a reference-exact selector must make in the reference's order, one
pass over the pixels). A selector cannot go below its floor without
computing something else. Figures are medians of ``--repeats`` runs of
``time.process_time`` after a warm-up.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import selectors as _stdlib_selectors  # noqa: E402,F401  (the standard library's, before _HERE returns)

sys.path.append(_HERE)

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from frameselect.registry import selectors  # noqa: E402
from frameselect.types import Features  # noqa: E402


def cpu_ms(call: Callable[[], Any], repeats: int) -> float:
    """Median CPU milliseconds of ``call`` after one warm-up."""
    call()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000.0


def lloyd_rounds(x: np.ndarray, k: int) -> int:
    """Rounds ``kmeans`` runs at seed 0: the smallest ``max_iter`` that gives the default's centroids."""
    from frameselect.selectors.classical import kmeans_centroids

    full = kmeans_centroids(x, k, np.random.default_rng(0))
    for rounds in range(1, 101):
        if np.array_equal(kmeans_centroids(x, k, np.random.default_rng(0), max_iter=rounds), full):
            return rounds
    return 100


def focus_draws(scores: np.ndarray, k: int) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """The generator calls FOCUS's reference makes (``choice``, with and without weights), recorded from
    its re-statement on the benchmark's inputs; ours makes the same draws by other calls."""
    import _reference_impls as ref

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class Recording:
        def __init__(self, rng: np.random.Generator) -> None:
            self.rng = rng

        def choice(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(("choice", args, kwargs))
            return self.rng.choice(*args, **kwargs)

    ref.focus_reference(scores, 1.0, k, Recording(np.random.default_rng(42)))  # type: ignore[arg-type]
    return calls


def main(argv: list[str] | None = None) -> int:
    import importlib.util

    import _reference_impls as ref

    # benchmarks/selectors.py (its file name is the standard library's module's): inputs and pinning from there
    spec = importlib.util.spec_from_file_location("_selector_bench", os.path.join(_HERE, "selectors.py"))
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    PIXEL_SHAPE, features_for, make_inputs = bench.PIXEL_SHAPE, bench.features_for, bench.make_inputs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3600)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    pinned = bench._pin_one_core()
    n, k, r = args.n, args.k, args.repeats
    pool, query, arrays = make_inputs(n, args.dim)
    cache: dict[frozenset[str], Features] = {}
    x = arrays["embeddings"]
    pixels = arrays["pixels"]
    print(f"# floors: N={n}, k={k}, D={args.dim}, pixels {PIXEL_SHAPE[0]}x{PIXEL_SHAPE[1]}, one thread, {pinned}; median CPU ms of {r} runs")
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    def selector_ms(name: str) -> float:
        selector = selectors.create(name)
        features = features_for(frozenset(getattr(selectors.get(name), "needs", frozenset())), arrays, cache)
        return cpu_ms(lambda: selector.select(pool, query, k, features, seed=0), r)

    rows: list[tuple[str, float, str, float]] = []
    rows.append(("facility_location", selector_ms("facility_location"), "x @ x.T (the float32 N x N similarity, BLAS syrk)", cpu_ms(lambda: x @ x.T, r)))
    centres = x[:k].copy()
    onehot = np.zeros((k, n), dtype=np.float32)
    onehot[np.arange(n) % k, np.arange(n)] = 1.0
    per_round = cpu_ms(lambda: x @ centres.T, r)
    first = cpu_ms(lambda: onehot @ x, r)
    rounds = lloyd_rounds(x, k)
    rows.append(("kmeans", selector_ms("kmeans"), f"{rounds} Lloyd rounds x 1 product (N, D) x (D, k) + the first sums, float32", rounds * per_round + first))
    q = np.random.RandomState(42).normal(size=(args.dim, 18)).astype(np.float32)
    products = cpu_ms(lambda: (x @ q, x.T @ x[:, :18]), r) / 2
    rows.append(("maxinfo", selector_ms("maxinfo"), "12 float32 products (N, D) x (D, 18) of the randomized SVD", 12 * products))
    videotree_floor = 0.0
    for clusters in (8, 16, 32):
        c = x[:clusters].copy()
        hot = np.zeros((clusters, n), dtype=np.float32)
        hot[np.arange(n) % clusters, np.arange(n)] = 1.0
        videotree_floor += 15 * cpu_ms(lambda c=c: x @ c.T, r) + cpu_ms(lambda hot=hot: hot @ x, r)
    rows.append(("videotree", selector_ms("videotree"), "3 k-means (8, 16, 32 centres) x 15 rounds x 1 product + the first sums, float32", videotree_floor))
    from frameselect.selectors.dkts import dhash_nibbles, segment_scatters

    rows.append(
        (
            "dkts",
            selector_ms("dkts"),
            "dHash of every frame + the kernel band and scatters",
            cpu_ms(lambda: (dhash_nibbles(pixels), segment_scatters(x, 338)), r),
        )
    )
    copy_ms = cpu_ms(lambda: pixels.copy(), r)
    for name in ("scenedetect_content", "scenedetect_adaptive", "mgsampler", "katna"):
        rows.append((name, selector_ms(name), f"one copy of the {pixels.nbytes / 1e6:.0f} MB pixel stack", copy_ms))
    try:
        import cv2

        cv2.setNumThreads(1)
        flat = pixels.reshape(-1, PIXEL_SHAPE[1], 3)
        for name, code in (("scenedetect_*", "COLOR_RGB2HSV"), ("mgsampler", "COLOR_RGB2GRAY"), ("katna", "COLOR_RGB2Luv")):
            convert = getattr(cv2, code)
            rows.append(
                (f"({name})", float("nan"), f"OpenCV's cvtColor {code} of every pixel, nothing else", cpu_ms(lambda c=convert: cv2.cvtColor(flat, c), r))
            )
    except ImportError:
        print("# OpenCV not installed: no cvtColor figures")
    scores = arrays["scores"]
    calls = focus_draws(scores, k)

    def draws() -> None:
        rng = np.random.default_rng(42)
        for method, a, kw in calls:
            getattr(rng, method)(*a, **kw)

    relevance = Features(encoder_id="bench", scores=scores)
    focus = selectors.create("focus", reference_exact=True)
    ours = cpu_ms(lambda: focus.select(pool, None, k, relevance, rng=np.random.default_rng(42)), max(r, 11))
    theirs = cpu_ms(lambda: ref.focus_reference(scores, 1.0, k, np.random.default_rng(42)), max(r, 11))
    draw_ms = cpu_ms(draws, max(r, 11))
    rows.append(("focus", ours, f"the reference's {len(calls)} generator calls alone (ours makes the same draws by other calls)", draw_ms))
    print(f"{'selector':<22}  {'selector ms':>11}  {'floor ms':>9}  floor")
    for name, total, what, floor in rows:
        shown = "-" if total != total else f"{total:.1f}"
        print(f"{name:<22}  {shown:>11}  {floor:>9.1f}  {what}")
    print(f"# focus: reference {theirs:.1f} ms, ours {ours:.1f} ms ({theirs / ours:.1f}x); at most {theirs / draw_ms:.1f}x if only the draws cost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
