"""``frameselect bench --cross-video``: the cross-video section (docs/crossvideo.md).

The questions of :mod:`frameselect.datasets._cross_suite` over the default haystack suite's own videos
(same configuration, so their features are shared with the default run), answered by one
answering backend (default ``label_ocr_reader``) after each *arm* chooses frames at the same
total budget per question:

``uniform/equal``  uniform in each video, the total shared equally (what CrossVid's script does)
``topk/equal``     the most relevant frames of each video, shared equally (per-video top-k)
``topk_union``     the most relevant frames of the union of the videos (joint)
``binding``        relevant frames that match a frame of another video, in pairs (joint)
``holmes``         the HOLMES-style slots, localisation, audit and gate (joint, reads out)

``holmes`` is reported twice: its answers after its gate (the arm as run), and ``holmes
(no gate)``, the backend's answer over the same frames before the gate rewrote it
(``metadata["holmes"]["backend_answer"]``), so that its selection and its answer
post-processing are measured apart.

**Statistics.** The question sets share videos (in the default suite every video is in
several sets, and the sets form one connected group), so neither a question nor a set is
an independent unit. Intervals and tests use the product-weight bootstrap over videos
(:func:`frameselect._core.stats.multiway_mean`, :func:`frameselect._core.stats.multiway_paired`):
each resample draws the suite's videos with replacement and a question weighs the product
of its videos' multiplicities. Every pair of arms is compared at each budget (paired
difference, interval, bootstrap p-value), with Holm's correction over all the comparisons
printed. The table prints random-option chance (the mean of ``1 / options`` over the
questions) beside the ``uniform/equal`` baseline.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ARMS", "NO_GATE", "CrossBenchConfig", "CrossArmRow", "ArmComparison", "compare_arms", "run_cross_bench", "format_cross_report"]

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
    per_sample: dict[str, float] = field(default_factory=dict)  # sample id -> mc_accuracy (ok samples)
    videos: dict[str, tuple[str, ...]] = field(default_factory=dict)  # sample id -> the suite videos it asks about
    chance: float = math.nan  # mean of 1 / options over the questions
    n_boot: int = 2000
    seed: int = 0


def _mean(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def run_cross_bench(config: CrossBenchConfig, say: Callable[[str], None] | None = None) -> list[CrossArmRow]:
    """Every arm at every budget on the cross-video suite, stored in ``config.store``."""
    from frameselect._core.cache import default_cache_dir
    from frameselect._core.stats import multiway_mean, multiway_paired
    from frameselect._engine.evaluate_across import evaluate_across
    from frameselect.errors import ConfigError

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
    samples = _samples(dataset_params)
    truth = {s.id: s.answer for s in samples}
    chance = _mean([1.0 / len(s.query.options) for s in samples if s.query.options])
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
            videos = {r.sample_id: tuple(str(v) for v in r.metadata.get("videos", [r.sample_id])) for r in ok}
            row = CrossArmRow(
                arm=arm,
                k=k,
                n=len(result.records),
                failed=len(result.records) - len(ok),
                accuracy=multiway_mean(list(acc.values()), list(videos.values()), n_boot=config.n_boot, seed=config.seed),
                evidence_recall=_mean([float(r.metrics.get("evidence_recall", math.nan)) for r in ok]),
                by_level=result.by_level,
                slot_fill_rate=_mean([float(r.metrics.get("slot_fill_rate", math.nan)) for r in ok]),
                gate_passed=_mean([float(r.metrics.get("gate_passed", math.nan)) for r in ok]),
                binding_accuracy=_mean([float(r.metrics.get("binding_accuracy", math.nan)) for r in ok]),
                run_id=result.run_id,
                per_sample=acc,
                videos=videos,
                chance=chance,
                n_boot=config.n_boot,
                seed=config.seed,
            )
            rows.append(row)
            if say is not None:
                say(f"k={k} {arm}: accuracy {row.accuracy}")
            if selector == "holmes":
                ungated = {r.sample_id: _backend_right(r, truth) for r in ok}
                by_arm[NO_GATE] = ungated
                rows.append(
                    CrossArmRow(
                        arm=NO_GATE, k=k, n=row.n, failed=row.failed,
                        accuracy=multiway_mean(list(ungated.values()), list(videos.values()), n_boot=config.n_boot, seed=config.seed),
                        evidence_recall=row.evidence_recall, by_level=_by_level(ok, ungated), slot_fill_rate=row.slot_fill_rate,
                        run_id=result.run_id, per_sample=ungated, videos=videos, chance=chance, n_boot=config.n_boot, seed=config.seed,
                    )
                )  # fmt: skip
        base = by_arm.get(BASELINE)
        if base is not None:
            for row in rows:
                if row.k != k or row.arm == BASELINE:
                    continue
                mine = by_arm[row.arm]
                ids = [i for i in base if i in mine]
                row.versus_baseline = multiway_paired(
                    [mine[i] for i in ids], [base[i] for i in ids], [row.videos.get(i, (i,)) for i in ids], n_boot=config.n_boot, seed=config.seed
                )
    return rows


#: the row of holmes' answers before its gate
NO_GATE = "holmes (no gate)"


def _samples(dataset_params: dict[str, Any]) -> list[Any]:
    from frameselect.datasets.haystack_cross import HaystackCrossDataset

    return list(HaystackCrossDataset(**dataset_params).samples())


def _backend_right(record: Any, truth: dict[str, str | None]) -> float:
    """1 when holmes' backend answered the right letter before the gate, else 0 (NaN when the record has no read-out)."""
    readout = record.metadata.get("holmes")
    if not isinstance(readout, dict) or "backend_answer" not in readout:
        return math.nan
    said = str(readout.get("backend_answer") or "").strip().upper()
    right = str(truth.get(record.sample_id) or "").strip().upper()
    return float(bool(said) and said == right)


def _by_level(records: Sequence[Any], values: dict[str, float]) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for r in records:
        groups.setdefault(str(r.metadata.get("level", "unknown")), []).append(values.get(r.sample_id, math.nan))
    return {level: _mean(v) for level, v in groups.items()}


@dataclass
class ArmComparison:
    k: int
    first: str
    second: str
    diff: Any  # stats.PairedDifference
    p_holm: float = math.nan


def compare_arms(rows: Sequence[CrossArmRow]) -> list[ArmComparison]:
    """Every pair of arms at each budget (first − second, in the rows' order), with Holm's correction over all of them."""
    from frameselect._core.stats import holm, multiway_paired

    out: list[ArmComparison] = []
    for k in sorted({r.k for r in rows}):
        at = [r for r in rows if r.k == k and r.per_sample]
        for a, b in itertools.combinations(at, 2):
            ids = [i for i in a.per_sample if i in b.per_sample]
            groups = [a.videos.get(i, (i,)) for i in ids]
            diff = multiway_paired([a.per_sample[i] for i in ids], [b.per_sample[i] for i in ids], groups, n_boot=a.n_boot, seed=a.seed)
            out.append(ArmComparison(k, a.arm, b.arm, diff))
    for c, p in zip(out, holm([c.diff.p_value for c in out]), strict=True):
        c.p_holm = p
    return out


def format_cross_report(rows: Sequence[CrossArmRow], answerer: str = "") -> str:
    """One table per budget: accuracy [95% interval], difference to uniform/equal, evidence recall, accuracy by level,
    HOLMES' rates; then chance, and every pair of arms compared with Holm's correction."""
    from frameselect._core.stats import format_interval, format_p
    from frameselect.answerers.oracle import answerer_label

    comparisons = compare_arms(rows)
    family = len(comparisons)
    out = []
    for k in sorted({r.k for r in rows}):
        out.append(f"cross-video suite, total budget k={k} per question{f', answered by {answerer_label(answerer)}' if answerer else ''}")
        out.append(
            f"{'arm':<17} {'n':>3} {'accuracy [95% CI]':<24} {'vs uniform/equal [95% CI] (p Holm)':<38} {'ev.recall':>9} {'comparison':>10} {'track/retr':>10} {'integrated':>10} {'slots':>6} {'gate':>5}"
        )
        for r in rows:
            if r.k != k:
                continue
            base = next((c for c in comparisons if c.k == k and {c.first, c.second} == {r.arm, BASELINE}), None)
            vs = "" if base is None else format_interval_diff(base.diff, base.p_holm, sign=1 if base.first == r.arm else -1)
            lv = [r.by_level.get(level, math.nan) for level in ("comparison", "tracking_retrieval", "integrated")]
            out.append(
                f"{r.arm:<17} {r.n:>3} {format_interval(r.accuracy):<24} {vs:<38} {r.evidence_recall:>9.3f} "
                + " ".join(f"{v:>10.3f}" for v in lv)
                + f" {_fmt(r.slot_fill_rate):>6} {_fmt(r.gate_passed):>5}"
            )
        chance = next((r.chance for r in rows if r.k == k and not math.isnan(r.chance)), math.nan)
        baseline = next((r for r in rows if r.k == k and r.arm == BASELINE), None)
        out.append(
            f"chance (one option at random): {_fmt3(chance)}"
            + (f"; baseline {BASELINE}: {format_interval(baseline.accuracy)}" if baseline is not None else "")
            + (
                f"; {NO_GATE}: holmes' backend answer over the same frames, before its gate rewrote it"
                if any(r.arm == NO_GATE for r in rows if r.k == k)
                else ""
            )
        )
        pairs = [c for c in comparisons if c.k == k]
        if pairs:
            clusters = max((c.diff.clusters for c in pairs), default=0)
            out.append(
                f"every pair of arms (first − second; product-weight bootstrap over the {clusters} videos, "
                f"Holm over all {family} comparisons printed; * significant at 0.05):"
            )
            for c in pairs:
                star = " *" if c.p_holm < 0.05 else ""
                out.append(
                    f"  {c.first} − {c.second}: {format_interval(_as_interval(c.diff), signed=True)} p={format_p(c.diff.p_value)} p Holm={format_p(c.p_holm)}{star}"
                )
        out.append("")
    return "\n".join(out).rstrip()


def _as_interval(d: Any) -> Any:
    from frameselect._core.stats import Interval

    return Interval(d.mean_diff, d.low, d.high)


def _fmt3(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.3f}"


def _fmt(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.2f}"


def format_interval_diff(d: Any, p_holm: float | None = None, sign: int = 1) -> str:
    """``+0.091 [+0.000, +0.167] (p=0.500)``: a paired difference (negated with ``sign=-1``) and its p-value (Holm's when given)."""
    from frameselect._core.stats import format_p

    low, high = (d.low, d.high) if sign > 0 else (-d.high, -d.low)
    p = d.p_value if p_holm is None else p_holm
    return f"{sign * d.mean_diff:+.3f} [{low:+.3f}, {high:+.3f}] (p={format_p(p)})"
