"""Whether query relevance gains from the question's options: the bench's query-aware selectors with ``query_text`` ``question`` against ``question+options``.

    PYTHONPATH=src .venv/bin/python benchmarks/query_text.py [-s topk -s aks ...] [-k 8 -k 16] [-a label_ocr_reader] [-e imagenet_label] [--n-videos 32] [--store FILE]

Runs (or resumes from ``--store``) the main section of ``frameselect bench``
twice on the default suite, with the same selectors, budgets, answering
backend and encoder: once embedding the question alone (``--query-text
question``, the default) and once the question followed by its options
(``--query-text question+options``). The same commands, one per mode::

    frameselect bench -s topk -s aks -s mmr -s focus -s tstar -a label_ocr_reader -k 8 -k 16 --no-cross-video --query-text question
    frameselect bench -s topk -s aks -s mmr -s focus -s tstar -a label_ocr_reader -k 8 -k 16 --no-cross-video --query-text question+options

For each selector and budget, the paired difference in accuracy (options
minus question alone) over the same questions, with its 95 % cluster-bootstrap
interval and sign-flip p-value clustered by video
(:func:`frameselect._core.stats.paired_difference`, as the bench's own
comparisons); and, on balance, the same for each question's accuracy averaged
over every selector and budget. The p-values are Holm-corrected over these
comparisons together. A row per question kind follows (descriptive,
uncorrected). The same again for the selections' evidence recall (how much
of each question's evidence the frames cover; a family of its own).
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py would shadow the standard library's ``selectors``
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from typing import Any  # noqa: E402

MODES = ("question", "question+options")
SELECTORS = ("topk", "aks", "mmr", "focus", "tstar")


def _run(mode: str, args: argparse.Namespace) -> Any:
    from frameselect._studies.bench.runner import BenchConfig, run_bench

    config = BenchConfig(
        budgets=tuple(args.k or (8, 16)),
        selectors=tuple(args.selector or SELECTORS),
        answerers=(args.answerer,),
        encoder=args.encoder,
        store=args.store,
        cache_dir=args.cache_dir,
        n_videos=args.n_videos,
        query_text=mode,
        executor=args.executor,
        workers=args.workers,
    )
    return run_bench(config, progress=False)


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _table(
    name: str,
    values_a: Mapping[tuple[str, int], Mapping[str, float]],
    values_b: Mapping[tuple[str, int], Mapping[str, float]],
    videos: Mapping[str, str],
    kinds: Mapping[str, str],
) -> list[str]:
    """One metric's rows: per selector and budget, on balance (Holm over these), then on balance per question kind."""
    from frameselect._core.stats import holm, paired_difference
    from frameselect._core.stats._resampling import DEFAULT_PERMUTATIONS

    def paired(a: Mapping[str, float], b: Mapping[str, float]) -> Any:
        shared = sorted(s for s in a if s in b and not math.isnan(a[s]) and not math.isnan(b[s]))
        return paired_difference(
            [a[s] for s in shared], [b[s] for s in shared], [videos.get(s, s) for s in shared], seed=0, n_permutations=DEFAULT_PERMUTATIONS
        )

    conditions = [c for c in values_b if c in values_a]
    lines: list[tuple[str, Any, float, float]] = []
    per_sample: dict[str, list[tuple[float, float]]] = {}
    for sel, k in conditions:
        a, b = values_a[(sel, k)], values_b[(sel, k)]
        lines.append((f"{sel} @ k={k}", paired(a, b), _mean(list(b.values())), _mean(list(a.values()))))
        for s in a:
            if s in b:
                per_sample.setdefault(s, []).append((a[s], b[s]))
    full = {s: v for s, v in per_sample.items() if len(v) == len(conditions)}
    pooled_a = {s: _mean([x for x, _ in v]) for s, v in full.items()}
    pooled_b = {s: _mean([y for _, y in v]) for s, v in full.items()}
    lines.append(("on balance (mean over the rows above)", paired(pooled_a, pooled_b), _mean(list(pooled_b.values())), _mean(list(pooled_a.values()))))
    adjusted = holm([d.p_value for _, d, _, _ in lines])
    out = [
        f"{name}, {len(full)} questions over {len(set(videos.values()))} videos; Δ = question+options − question, "
        "[95 % cluster-bootstrap interval], sign-flip p clustered by video, Holm over the rows",
        "",
        "| selector @ budget | question | question+options | Δ [95 % CI] | p | p (Holm) |",
        "|---|---|---|---|---|---|",
    ]
    for (label, d, b_mean, a_mean), p_holm in zip(lines, adjusted, strict=True):
        out.append(f"| {label} | {b_mean:.3f} | {a_mean:.3f} | {d.mean_diff:+.3f} [{d.low:+.3f}, {d.high:+.3f}] | {d.p_value:.3g} | {p_holm:.3g} |")
    out += ["", f"{name} by question kind, on balance (descriptive, uncorrected):", "", "| kind | question | question+options | Δ [95 % CI] | p |"]
    out.append("|---|---|---|---|---|")
    for kind in sorted({kinds.get(s, "?") for s in full}):
        ids = [s for s in full if kinds.get(s) == kind]
        d = paired({s: pooled_a[s] for s in ids}, {s: pooled_b[s] for s in ids})
        out.append(
            f"| {kind} | {_mean([pooled_b[s] for s in ids]):.3f} | {_mean([pooled_a[s] for s in ids]):.3f} | "
            f"{d.mean_diff:+.3f} [{d.low:+.3f}, {d.high:+.3f}] | {d.p_value:.3g} |"
        )
    return out


def compare(results: Mapping[str, Any], answerer: str, store: str) -> str:
    """The comparison tables of the two modes' bench results: the answerer's accuracy, then the selections' evidence recall (read from ``store``)."""
    from frameselect.store import Store

    base, other = results["question"], results["question+options"]
    rows = {mode: {(r.selector, r.k): r for r in results[mode].rows if r.answerer == answerer} for mode in MODES}
    accuracy = {mode: {c: r.per_sample for c, r in rows[mode].items()} for mode in MODES}
    with Store(store) as st:
        recall = {
            mode: {
                c: {rec.sample_id: float(rec.metrics.get("evidence_recall", math.nan)) for rec in st.records(r.run_id, status="ok")}
                for c, r in rows[mode].items()
            }
            for mode in MODES
        }
    out = _table(f"{answerer} accuracy", accuracy["question+options"], accuracy["question"], base.videos, base.sample_kinds)
    out += [""] + _table("evidence recall", recall["question+options"], recall["question"], other.videos, other.sample_kinds)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--selector", "-s", action="append", help=f"query-aware selectors (repeatable; default: {', '.join(SELECTORS)})")
    p.add_argument("--k", "-k", type=int, action="append", help="frame budgets (repeatable; default: 8 and 16)")
    p.add_argument("--answerer", "-a", default="label_ocr_reader", help="answering backend (default: %(default)s)")
    p.add_argument("--encoder", "-e", default="imagenet_label", help="encoder of the relevance (default: %(default)s; alternative: ocr_text)")
    p.add_argument("--n-videos", type=int, default=32, help="videos in the suite (default: %(default)s, the bench's)")
    p.add_argument("--store", default="frameselect-bench.sqlite", help="SQLite results file, shared by both modes (default: %(default)s)")
    p.add_argument("--cache-dir", default=None, help="cache folder, as frameselect bench's --cache-dir")
    p.add_argument("--executor", default="serial", help="serial, process or ray (default: %(default)s)")
    p.add_argument("--workers", type=int, default=None, help="workers of the process executor")
    args = p.parse_args(argv)
    results = {}
    for mode in MODES:
        start = time.perf_counter()
        results[mode] = _run(mode, args)
        print(f"query_text={mode}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(compare(results, args.answerer, args.store))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
