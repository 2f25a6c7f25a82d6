"""Overhead of planning by visual tokens against the selection time, on the benchmark suite.

    .venv/bin/python benchmarks/tokens.py [--n-videos 9] [--minutes 3] [--tokens 6000] [-s uniform -s random ...]

For each selector the suite is run twice in this process, at ``k`` frames and
at ``--tokens`` tokens under the Qwen2.5-VL cost model (``fixed_res`` and
``search``). Timed: the planning step before the first sample
(``token_plans``, every sample's frames x resolution, with the plan memo
emptied first), and pricing each selection (``priced_selection``), against
the selection time the same run records (the sum of ``selection_latency_s``).
The table prints both and their ratio; pools and probes come from the
feature cache, as in a benchmark run.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py would shadow the standard library's ``selectors``
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from frameselect import pipeline, token_budget
    from frameselect.datasets.haystack import HaystackDataset

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-videos", type=int, default=9)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--tokens", type=int, default=6000)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--selector", "-s", action="append", help="selectors without encoder features (default: uniform, random, tsn)")
    parser.add_argument("--cache-dir", default=None, help="suite and feature cache (default: a temporary folder)")
    args = parser.parse_args(argv)
    root = args.cache_dir or tempfile.mkdtemp(prefix="frameselect-tokens-bench-")
    dataset = HaystackDataset(n_videos=args.n_videos, minutes=args.minutes, seed=0, root=os.path.join(root, "bench"))
    samples = list(dataset.samples())

    timed = {"plan": 0.0, "price": 0.0}
    plan_tokens, price = token_budget.token_plans, token_budget.priced_selection

    def timed_plans(*a: Any, **kw: Any) -> Any:
        token_budget._PLANS.clear()
        start = time.perf_counter()
        try:
            return plan_tokens(*a, **kw)
        finally:
            timed["plan"] += time.perf_counter() - start

    def timed_price(*a: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return price(*a, **kw)
        finally:
            timed["price"] += time.perf_counter() - start

    pipeline.token_plans = timed_plans  # type: ignore[assignment]
    pipeline.priced_selection = timed_price  # type: ignore[assignment]
    cache = os.path.join(root, "features")
    print(f"suite: {args.n_videos} videos x {args.minutes:g} min, {len(samples)} questions; qwen2_5_vl, {args.tokens} tokens\n")
    print("| selector | budget | mean frames | mean tokens | selection (ms) | planning (ms) | pricing (ms) | overhead / selection |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.selector or ["uniform", "random", "tsn"]:
        pipeline.evaluate(name, ["evidence_recall"], samples, args.k, cache_dir=cache, progress=False)  # warm the probes and pools
        for budget in (f"k={args.k}", "fixed_res", "search"):
            timed.update(plan=0.0, price=0.0)
            extra: dict[str, Any] = {"token_model": "qwen2_5_vl"}
            if not budget.startswith("k="):
                extra.update(tokens=args.tokens, token_policy=budget)
            result = pipeline.evaluate(name, ["evidence_recall"], samples, args.k, cache_dir=cache, progress=False, **extra)
            selection = sum(r.metrics.get("selection_latency_s", 0.0) for r in result.records)
            overhead = timed["plan"] + timed["price"]
            ratio = overhead / selection if selection > 0 else float("nan")
            print(
                f"| {name} | {budget} | {result.table.get('mean_k', 0):.1f} | {result.table.get('tokens', 0):.0f} | {1e3 * selection:.2f} | "
                f"{1e3 * timed['plan']:.2f} | {1e3 * timed['price']:.2f} | {ratio:.1%} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
