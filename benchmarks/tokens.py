"""Overhead of planning and pricing by visual tokens against the selection time, on the default suite.

    .venv/bin/python benchmarks/tokens.py [--selectors all | -s uniform -s topk ...] [--n-videos 9] [--minutes 3] [--k 8 --k 16]

The suite is the one ``frameselect bench`` builds (the haystack suite, seed 0,
pool ``fps=1.0``), with the bench's selectors (every registered selector it
runs: those whose needs its encoder, ``imagenet_label`` by default, meets and
that need no trained weights) and its encoder: every pool is encoded into the
feature cache first, and each selector runs once at ``k`` frames before it is
timed (the bench's own run at that budget), so its features come from the
cache. Each selector then runs at the token budget of the bench's token
section for each ``k`` (what ``k`` frames of the suite cost Qwen2.5-VL,
policy ``fixed_res``), serially in this process. Timed in those runs:

planning
    ``token_plans`` (every sample's frames x resolution, before the first
    sample), cold (its memos emptied, as in the first run of a process; the
    probes it reads stay in the run's context, where the run's own pools find
    them, so reading them is work the run no longer does later: shown apart)
    and warm (again, as in every later run of a process);
pricing
    ``priced_selection`` of every selection;

against two measures of the selection time of the same run: (a) the
selector's own latency summed over the questions (``selection_latency_s``)
and (b) the run's whole selection stage (each question's pool, its features
from the cache and the selector: the prepare step, pricing taken out).

A last check runs one cheap selector (``--wall-selector``) at ``k`` frames
without a cost model and at the matching token budget with every memo
emptied, alternately, and compares the runs' wall times and their selection
stage plus planning: where the probes planning reads are the run's own, the
difference is what planning costs a first run.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py would shadow the standard library's ``selectors``
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

TOKEN_POLICY = "fixed_res"
EVALUATORS = ("evidence_recall", "frame_precision")


@dataclass
class Timed:
    """Seconds spent in one run (or summed over runs)."""

    latency: float = 0.0  # (a) the selector's own selection latency
    stage: float = 0.0  # (b) the selection stage: pool + features + selector (pricing taken out)
    cold: float = 0.0  # planning with its memos emptied
    probes: float = 0.0  # of which reading probes (the run's own pools then read none)
    warm: float = 0.0  # planning again, memos filled
    price: float = 0.0  # pricing every selection

    def add(self, other: Timed) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2%}" if whole > 0 else "–"


def _clear_token_memos() -> None:
    from frameselect._engine import token_budget, token_runs

    token_budget._PLANS.clear()
    token_runs._FACTS.clear()
    token_runs._COSTS.clear()
    token_budget._SENT.clear()


class _Probe:
    """Times what happens inside a run: patches the budgets' calls into ``token_runs`` and the prepare step."""

    def __init__(self) -> None:
        from frameselect._core.cache import Cache
        from frameselect._engine import pipeline, token_runs

        self.now = Timed()
        self._plans, self._price, self._step = token_runs.token_plans, token_runs.priced_selection, pipeline.SelectStep.__call__
        self._load_probe = Cache.load_probe
        # the budgets import these from token_runs when they run, so patching the module is enough
        token_runs.token_plans = self.token_plans  # type: ignore[assignment]
        token_runs.priced_selection = self.priced_selection  # type: ignore[assignment]
        probe = self

        def step(select: Any, *a: Any, **kw: Any) -> Any:
            return probe.select_step(select, *a, **kw)

        pipeline.SelectStep.__call__ = step  # type: ignore[method-assign]

    def reset(self) -> Timed:
        out, self.now = self.now, Timed()
        return out

    def token_plans(self, *a: Any, **kw: Any) -> Any:
        from frameselect._core.cache import Cache

        _clear_token_memos()  # cold: as the first run of a process
        reads = [0.0]
        load = self._load_probe

        def timed_load(cache: Any, video_hash: str) -> Any:
            start = time.perf_counter()
            try:
                return load(cache, video_hash)
            finally:
                reads[0] += time.perf_counter() - start

        Cache.load_probe = timed_load  # type: ignore[method-assign]
        start = time.perf_counter()
        try:
            plans = self._plans(*a, **kw)
        finally:
            self.now.cold += time.perf_counter() - start
            Cache.load_probe = load  # type: ignore[method-assign]
            self.now.probes += reads[0]
        start = time.perf_counter()  # warm: as every later run of a process over the same videos
        again = self._plans(*a, **kw)
        self.now.warm += time.perf_counter() - start
        assert again == plans
        return plans

    def priced_selection(self, *a: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._price(*a, **kw)
        finally:
            self.now.price += time.perf_counter() - start

    def select_step(self, *a: Any, **kw: Any) -> Any:
        price = self.now.price
        start = time.perf_counter()
        try:
            return self._step(*a, **kw)
        finally:
            self.now.stage += time.perf_counter() - start - (self.now.price - price)


def main(argv: list[str] | None = None) -> int:
    from frameselect._engine.budgets import Tokens
    from frameselect._engine.pipeline import encode_pools, evaluate
    from frameselect._engine.plan import RunOptions, resolve
    from frameselect._studies.bench.runner import _selectors
    from frameselect._studies.bench.token_section import TOKEN_MODEL, token_budgets
    from frameselect.datasets.haystack import HaystackDataset

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-videos", type=int, default=9)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--k", type=int, action="append", help="frame budgets whose token cost is run (default: the bench's, 8 and 16)")
    parser.add_argument("--selectors", default="all", help="'all' (the bench's selectors) or comma-separated names/patterns")
    parser.add_argument("--selector", "-s", action="append", help="a selector (name or pattern) to run; repeatable; overrides --selectors")
    parser.add_argument("--encoder", default="imagenet_label", help="the bench's encoder (default imagenet_label); 'none': selectors without features only")
    parser.add_argument("--pool", default="fps=1.0")
    parser.add_argument("--wall-selector", default="uniform", help="the selector of the last check (wall time with and without tokens); 'none' skips it")
    parser.add_argument("--wall-repeats", type=int, default=9)
    parser.add_argument("--cache-dir", default=None, help="suite and feature cache (default: a temporary folder)")
    args = parser.parse_args(argv)
    ks = tuple(args.k or (8, 16))
    root = args.cache_dir or tempfile.mkdtemp(prefix="frameselect-tokens-bench-")
    features = os.path.join(root, "features")
    patterns: tuple[str, ...] = tuple(args.selector or (() if args.selectors == "all" else [p for p in args.selectors.split(",") if p]))

    start = time.perf_counter()
    dataset = HaystackDataset(n_videos=args.n_videos, minutes=args.minutes, seed=0, root=os.path.join(root, "bench"))
    samples = list(dataset.samples())
    encoder = None if args.encoder.lower() == "none" else resolve("encoders", args.encoder)
    if encoder is not None:
        encode_pools(samples, encoder, args.pool, features)
    notes: list[str] = []
    chosen = _selectors(patterns, encoder, notes)
    budgets = token_budgets(samples, args.pool, ks, features)
    print(
        f"suite: {args.n_videos} videos x {args.minutes:g} min, {len(samples)} questions, pool {args.pool}; encoder {args.encoder}; "
        f"{len(chosen)} selectors; {TOKEN_MODEL}, policy {TOKEN_POLICY}, "
        + ", ".join(f"{t} tokens (k={k})" for k, t in budgets.items())
        + f"; suite and encoding {time.perf_counter() - start:.0f} s"
    )
    for note in notes:
        print(f"note: {note}")

    probe = _Probe()
    print(
        "\nms per run of the suite's questions; overhead = planning + pricing; (a) the selector's own latency, "
        "(b) the selection stage (pool + features from the cache + selector)\n"
    )
    print(
        "| selector | k | tokens | mean frames | (a) latency | (b) stage | planning cold | of which probe reads | planning warm | pricing "
        "| warm overhead / (a) | warm overhead / (b) | cold overhead / (b) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    total = Timed()
    per_selector: dict[str, Timed] = {}
    failed = 0
    options = RunOptions(pool=args.pool, cache_dir=features, progress=False)
    for name, sel in chosen:
        encodes = set(sel.needs) & {"embeddings", "text", "relevance"}
        run_args: dict[str, Any] = dict(selector=sel, evaluators=list(EVALUATORS), dataset=samples, encoder=encoder if encodes else None, options=options)
        evaluate(k=max(ks), **run_args)  # the bench's run at k frames: its features into the cache
        probe.reset()
        mine = per_selector.setdefault(name, Timed())
        for k, tokens in budgets.items():
            result = evaluate(k=Tokens(tokens, TOKEN_POLICY, k, TOKEN_MODEL), **run_args)
            t = probe.reset()
            t.latency = sum(r.metrics.get("selection_latency_s", 0.0) for r in result.records)
            failed += len(result.failed)
            mine.add(t)
            warm, cold = t.warm + t.price, t.cold + t.price
            print(
                f"| {name} | {k} | {tokens} | {result.table.get('mean_k', 0):.1f} | {1e3 * t.latency:.2f} | {1e3 * t.stage:.1f} | {1e3 * t.cold:.2f} "
                f"| {1e3 * t.probes:.2f} | {1e3 * t.warm:.3f} | {1e3 * t.price:.3f} | {_ratio(warm, t.latency)} | {_ratio(warm, t.stage)} | {_ratio(cold, t.stage)} |",
                flush=True,
            )
        total.add(mine)

    warm, cold, net = total.warm + total.price, total.cold + total.price, total.cold - total.probes + total.price
    runs = len(chosen) * len(budgets)
    print(
        f"\nsuite-wide, {runs} runs of {len(chosen)} selectors ({failed} failed questions): selection (a) {total.latency:.2f} s, (b) {total.stage:.2f} s; "
        f"planning cold {1e3 * total.cold:.1f} ms (probe reads {1e3 * total.probes:.1f} ms), warm {1e3 * total.warm:.1f} ms; pricing {1e3 * total.price:.1f} ms"
    )
    print(f"suite-wide overhead / selection, warm planning (later runs of a process): {_ratio(warm, total.latency)} of (a), {_ratio(warm, total.stage)} of (b)")
    print(
        f"suite-wide overhead / selection, cold planning (every run the first of its process): {_ratio(cold, total.latency)} of (a), "
        f"{_ratio(cold, total.stage)} of (b); without the probe reads the run would make anyway: {_ratio(net, total.latency)} of (a), {_ratio(net, total.stage)} of (b)"
    )
    for label, whole in (("(a)", "latency"), ("(b)", "stage")):
        under = [n for n, t in per_selector.items() if (t.warm + t.price) < 0.01 * getattr(t, whole)]
        over = [f"{n} {_ratio(t.warm + t.price, getattr(t, whole))}" for n, t in per_selector.items() if n not in under]
        print(f"selectors under 1 % against {label}, warm: {len(under)} of {len(per_selector)}; over: {', '.join(over) or 'none'}")

    if args.wall_selector.lower() != "none":
        _wall_check(probe, args.wall_selector, max(ks), budgets[max(ks)], samples, args.pool, features, args.wall_repeats, evaluate)
    return 0


def _wall_check(probe: _Probe, name: str, k: int, tokens: int, samples: Any, pool: str, features: str, repeats: int, evaluate: Any) -> None:
    """One selector at ``k`` frames (no cost model) and at ``tokens`` tokens, every memo emptied before each run, alternately."""
    from frameselect._engine.budgets import Budget, Tokens
    from frameselect._engine.plan import RunOptions

    walls: dict[str, list[float]] = {"frames": [], "tokens": []}
    stages: dict[str, list[float]] = {"frames": [], "tokens": []}
    cold: list[float] = []
    for _ in range(repeats):
        for kind in ("frames", "tokens"):
            _clear_token_memos()
            budget: Budget | int = Tokens(tokens, TOKEN_POLICY, k, "qwen2_5_vl") if kind == "tokens" else k
            probe.reset()
            start = time.perf_counter()
            evaluate(name, list(EVALUATORS), samples, budget, options=RunOptions(pool=pool, cache_dir=features, progress=False))
            elapsed = time.perf_counter() - start
            t = probe.reset()
            walls[kind].append(elapsed - t.warm)  # the benchmark's own second planning call is not the run's
            stages[kind].append(t.stage + t.cold + t.price)  # planning (cold) and pricing count against the token run
            if kind == "tokens":
                cold.append(t.cold)
    med = {kind: statistics.median(v) for kind, v in walls.items()}
    stage = {kind: statistics.median(v) for kind, v in stages.items()}
    print(
        f"\n{name}, {repeats} runs each, alternately, every memo emptied first (medians): wall {1e3 * med['frames']:.1f} ms at k={k} without a cost model, "
        f"{1e3 * med['tokens']:.1f} ms at {tokens} tokens ({med['tokens'] / med['frames'] - 1:+.1%}); selection stage + planning + pricing "
        f"{1e3 * stage['frames']:.1f} ms against {1e3 * stage['tokens']:.1f} ms ({1e3 * (stage['tokens'] - stage['frames']):+.2f} ms; "
        f"cold planning alone {1e3 * statistics.median(cold):.2f} ms)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
