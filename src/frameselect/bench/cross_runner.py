"""``frameselect bench --cross-video``: the cross-video section (docs/crossvideo.md).

The questions of :mod:`frameselect.bench.cross` over the default haystack suite's own videos
(same configuration, so their features are shared with the default run), answered by one
answering backend (default ``label_ocr_reader``) after each *arm* chooses frames at the same
total budget per question:

``uniform/equal``  uniform in each video, the total shared equally (what CrossVid's script does)
``topk/equal``     the most relevant frames of each video, shared equally (per-video top-k)
``topk_union``     the most relevant frames of the union of the videos (joint)
``binding``        relevant frames that match a frame of another video, in pairs (joint)
``holmes``         the HOLMES-style slots, localisation, audit and gate (joint, reads out)

Each arm's accuracy comes with a cluster-bootstrap interval (clusters: the question sets), and
each arm's paired difference to ``uniform/equal`` with its interval and sign-flip p-value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ARMS", "CrossBenchConfig", "CrossArmRow", "run_cross_bench", "format_cross_report"]

#: arm name -> (selector, budget policy)
ARMS: dict[str, tuple[str, str | None]] = {
    "uniform/equal": ("uniform", "equal"),
    "topk/equal": ("topk", "equal"),
    "topk_union": ("topk_union", None),
    "binding": ("binding", None),
    "holmes": ("holmes", None),
}
BASELINE = "uniform/equal"


@dataclass(frozen=True)
class CrossBenchConfig:
    budgets: tuple[int, ...] = (8, 16)
    arms: tuple[str, ...] = tuple(ARMS)
    encoder: str = "imagenet_label"
    answerer: str = "label_ocr_reader"
    store: str | os.PathLike[str] = "frameselect-bench.sqlite"
    cache_dir: str | os.PathLike[str] | None = None
    n_videos: int = 32
    minutes: float = 1.0
    seed: int = 0
    pool: str = "fps=1.0"
    n_boot: int = 2000
    #: the section asks its questions over the suite's first ``max_videos`` videos (question sets grow with the videos:
    #: 12 one-minute videos give 76 questions over 13 sets, all 32 would give 199 over 34 at 2.6 times the cost)
    max_videos: int = 12


@dataclass
class CrossArmRow:
    arm: str
    k: int
    n: int
    failed: int
    accuracy: Any  # stats.Interval
    evidence_recall: float
    by_level: dict[str, float] = field(default_factory=dict)
    versus_baseline: Any = None  # stats.PairedDifference
    slot_fill_rate: float = math.nan
    gate_passed: float = math.nan
    binding_accuracy: float = math.nan
    run_id: str = ""


def _mean(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def run_cross_bench(config: CrossBenchConfig, say: Callable[[str], None] | None = None) -> list[CrossArmRow]:
    """Every arm at every budget on the cross-video suite, stored in ``config.store``."""
    from frameselect.cache import default_cache_dir
    from frameselect.crossvideo.run import evaluate_across
    from frameselect.errors import ConfigError
    from frameselect.stats import bootstrap_mean, paired_difference

    unknown = [a for a in config.arms if a not in ARMS]
    if unknown:
        raise ConfigError(f"unknown cross-video arm(s) {unknown}; known: {', '.join(ARMS)}")
    if any(k < 1 for k in config.budgets):
        raise ConfigError(f"budgets must be at least 1, got {list(config.budgets)}")
    cache = Path(config.cache_dir) if config.cache_dir is not None else default_cache_dir()
    if config.max_videos < 2:
        raise ConfigError(f"max_videos must be at least 2 (questions span 2-4 videos), got {config.max_videos}")
    n_videos = min(config.n_videos, config.max_videos)  # the suite's first videos: plans depend on the index and seed only
    dataset_params = {"n_videos": n_videos, "minutes": config.minutes, "seed": config.seed, "root": cache / "bench"}
    rows: list[CrossArmRow] = []
    for k in config.budgets:
        by_arm: dict[str, dict[str, Any]] = {}
        for arm in config.arms:
            selector, policy = ARMS[arm]
            result = evaluate_across(
                "haystack_cross",
                selector,
                k,
                budget_policy=policy,
                encoder=config.encoder if selector != "uniform" else None,
                answerer=config.answerer,
                pool=config.pool,
                seed=config.seed,
                store=config.store,
                cache_dir=cache / "features",
                dataset_params=dataset_params,
            )
            ok = [r for r in result.records if r.status == "ok"]
            acc = {r.sample_id: float(r.metrics.get("mc_accuracy", math.nan)) for r in ok}
            by_arm[arm] = acc
            clusters = [r.metadata.get("videos", [r.sample_id]) for r in ok]
            row = CrossArmRow(
                arm=arm,
                k=k,
                n=len(result.records),
                failed=len(result.records) - len(ok),
                accuracy=bootstrap_mean(list(acc.values()), ["+".join(c) for c in clusters], n_boot=config.n_boot, seed=config.seed),
                evidence_recall=_mean([float(r.metrics.get("evidence_recall", math.nan)) for r in ok]),
                by_level=result.by_level,
                slot_fill_rate=_mean([float(r.metrics.get("slot_fill_rate", math.nan)) for r in ok]),
                gate_passed=_mean([float(r.metrics.get("gate_passed", math.nan)) for r in ok]),
                binding_accuracy=_mean([float(r.metrics.get("binding_accuracy", math.nan)) for r in ok]),
                run_id=result.run_id,
            )
            rows.append(row)
            if say is not None:
                say(f"k={k} {arm}: accuracy {row.accuracy}")
        base = by_arm.get(BASELINE)
        if base is not None:
            for row in rows:
                if row.k != k or row.arm == BASELINE:
                    continue
                mine = by_arm[row.arm]
                ids = [i for i in base if i in mine]
                clusters = [i.split("/")[0] for i in ids]  # the question set
                row.versus_baseline = paired_difference([mine[i] for i in ids], [base[i] for i in ids], clusters, n_boot=config.n_boot, seed=config.seed)
    return rows


def format_cross_report(rows: Sequence[CrossArmRow], answerer: str = "") -> str:
    """One table per budget: accuracy [95% interval], difference to uniform/equal, evidence recall, accuracy by level, HOLMES' rates."""
    from frameselect.stats import format_interval

    out = []
    for k in sorted({r.k for r in rows}):
        out.append(f"cross-video suite, total budget k={k} per question{f', answered by {answerer}' if answerer else ''}")
        out.append(
            f"{'arm':<14} {'n':>3} {'accuracy [95% CI]':<24} {'vs uniform/equal (p)':<30} {'ev.recall':>9} {'comparison':>10} {'track/retr':>10} {'integrated':>10} {'slots':>6} {'gate':>5}"
        )
        for r in rows:
            if r.k != k:
                continue
            vs = "" if r.versus_baseline is None else f"{format_interval_diff(r.versus_baseline)}"
            lv = [r.by_level.get(level, math.nan) for level in ("comparison", "tracking_retrieval", "integrated")]
            out.append(
                f"{r.arm:<14} {r.n:>3} {format_interval(r.accuracy):<24} {vs:<30} {r.evidence_recall:>9.3f} "
                + " ".join(f"{v:>10.3f}" for v in lv)
                + f" {_fmt(r.slot_fill_rate):>6} {_fmt(r.gate_passed):>5}"
            )
        out.append("")
    return "\n".join(out).rstrip()


def _fmt(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.2f}"


def format_interval_diff(d: Any) -> str:
    return f"{d.mean_diff:+.3f} [{d.low:+.3f}, {d.high:+.3f}] (p={d.p_value:.3f})"
