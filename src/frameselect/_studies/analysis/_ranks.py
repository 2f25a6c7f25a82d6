"""Rankings from the stored runs: rank tables per group and rankings across datasets (:mod:`frameselect._studies.analysis`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from frameselect._core.render import Column, Table, render
from frameselect._core.stats import (
    DEFAULT_BOOT,
    DEFAULT_LEVEL,
    Flip,
    Interval,
    RankGroup,
    Ranking,
    RankReport,
    TauLine,
    compare_conditions,
    format_p,
    holm_flips,
    rank_analysis,
)
from frameselect._studies.analysis._tables import MetricSpec, StoredRun, _subsets, metric_specs, select_metrics

__all__ = ["Agreement", "agreement", "agreement_lines", "agreement_tables", "group_label", "rank_groups", "rank_report", "rank_tables", "render_ranks"]


def rank_groups(runs: Sequence[StoredRun], metrics: Sequence[str] | None = None, by: str | None = "kind") -> tuple[list[RankGroup], list[tuple[str, int, int]]]:
    """Ranking groups (dataset × metric × question subset) and the comparisons between them.

    Compared: the same metric across datasets (all questions); the same
    dataset and metric across values of ``by``; the same dataset across
    metrics (all questions).
    """
    select_metrics(metric_specs(runs), metrics)  # an unknown name is an error
    groups: list[RankGroup] = []
    index: dict[tuple[str, str, str], int] = {}
    for dataset in dict.fromkeys(run.dataset for run in runs):
        members = [run for run in runs if run.dataset == dataset]
        specs = select_metrics(metric_specs(members), metrics, strict=False)
        clusters: dict[str, Hashable] = {}
        for run in members:
            for r, c in zip(run.records, run.clusters, strict=True):
                clusters.setdefault(r.sample_id, c)
        subsets = ["all"] + ([f"{by}={v}" for v in _subsets([r for run in members for r in run.records], by)] if by else [])
        for spec in specs:
            for subset in subsets:
                data: dict[str, dict[str, Any]] = {}
                for run in members:
                    chosen = [r for r in run.records if subset == "all" or (by is not None and by in r.metadata and f"{by}={r.metadata[by]}" == subset)]
                    if spec.is_mean:
                        data[run.label] = {r.sample_id: float(r.metrics.get(spec.name, math.nan)) for r in chosen}
                    else:
                        data[run.label] = {r.sample_id: r for r in chosen}
                key = (dataset, spec.name, subset)
                index[key] = len(groups)
                groups.append(RankGroup(key, data, clusters, None if spec.is_mean else spec.stat, spec.higher_is_better))
    comparisons: list[tuple[str, int, int]] = []
    keys = list(index)
    for a_pos, a in enumerate(keys):
        for b in keys[a_pos + 1 :]:
            if a[1] == b[1] and a[2] == b[2] == "all" and a[0] != b[0]:
                comparisons.append(("dataset", index[a], index[b]))
            elif a[0] == b[0] and a[1] == b[1] and "all" not in (a[2], b[2]):
                comparisons.append((by or "subset", index[a], index[b]))
            elif a[0] == b[0] and a[2] == b[2] == "all" and a[1] != b[1]:
                comparisons.append(("metric", index[a], index[b]))
    return groups, comparisons


def rank_report(
    runs: Sequence[StoredRun],
    metrics: Sequence[str] | None = None,
    by: str | None = "kind",
    *,
    alpha: float = 0.05,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> RankReport:
    groups, comparisons = rank_groups(runs, metrics, by)
    return rank_analysis(groups, comparisons, alpha=alpha, n_boot=n_boot, level=level, seed=seed)


def _value(x: float) -> str:
    if math.isnan(x):
        return "–"
    return f"{x:.3f}" if x == 0 or 0.01 <= abs(x) < 1e4 else f"{x:.3g}"


def group_label(key: Sequence[str]) -> str:
    return " · ".join(key)


def _ranking_text(ranking: Ranking) -> str:
    """``a (0.9) > b (0.5) = c (0.5)``: entries best first, ``=`` between tied values."""
    if not ranking.order:
        return "–"
    parts = [f"{ranking.order[0]} ({_value(ranking.values[ranking.order[0]])})"]
    for prev, entry in zip(ranking.order, ranking.order[1:], strict=False):
        parts.append(("= " if ranking.values[entry] == ranking.values[prev] else "> ") + f"{entry} ({_value(ranking.values[entry])})")
    return " ".join(parts)


def _tau(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.3f}"


def rank_tables(report: RankReport, *, note: str = "") -> list[Table]:
    """Rankings, Kendall τ_b between them and the significant inversions, as three tables."""
    rankings = Table([Column("dataset"), Column("metric"), Column("questions"), Column("ranking")], title="Rankings (best first)", note=note)
    for ranking in report.rankings:
        rankings.add(*ranking.key, _ranking_text(ranking))
    taus = Table(
        [Column("axis"), Column("A"), Column("B"), Column("τ_b", "number", fmt=_tau), Column("selectors", "int")],
        title="Kendall τ_b between rankings",
        empty="no rankings to compare",
    )
    for t in report.taus:
        taus.add(t.axis, group_label(t.key_a), group_label(t.key_b), t.tau, t.entries)
    inversions = Table(
        [
            Column("axis"),
            Column("A"),
            Column("B"),
            Column("better in A"),
            Column("worse in A"),
            Column("Δ in A", "interval", signed=True),
            Column("p in A", "number", fmt=format_p),
            Column("Δ in B", "interval", signed=True),
            Column("p in B", "number", fmt=format_p),
            Column("p Holm", "number", fmt=format_p),
        ],
        title=(
            f"Order flips significant in both groups (paired sign-flip tests; the flip's p is the larger of the two, "
            f"Holm over the pairs of each comparison, α = {report.alpha:g})"
        ),
        empty="none",
    )
    for inv in report.inversions:
        da = Interval(inv.in_a.mean_diff, inv.in_a.low, inv.in_a.high)
        db = Interval(inv.in_b.mean_diff, inv.in_b.low, inv.in_b.high)
        inversions.add(inv.axis, group_label(inv.key_a), group_label(inv.key_b), inv.better, inv.worse, da, inv.in_a.p_value, db, inv.in_b.p_value, inv.p_holm)
    return [rankings, taus, inversions]


def render_ranks(report: RankReport, *, note: str = "", fmt: str = "markdown") -> str:
    """:func:`rank_tables` in ``fmt``."""
    return render(rank_tables(report, note=note), fmt)


@dataclass
class Agreement:
    """τ_b between the rankings of several datasets (or subsets) on one metric, and the pairs whose order flips significantly."""

    metric: str
    taus: list[TauLine]
    flips: list[Flip]  # candidate flips, each with its Holm p over the pairs of its comparison
    family: int  # the most pairs in one comparison
    alpha: float = 0.05
    n_boot: int = DEFAULT_BOOT

    @property
    def significant(self) -> list[Flip]:
        return [f for f in self.flips if f.significant(self.alpha)]


def _agreement_metric(runs: Sequence[StoredRun], metrics: Sequence[str] | None) -> MetricSpec | None:
    specs = [s for s in select_metrics(metric_specs(runs), metrics, strict=False) if s.is_mean]
    preferred = [s for s in specs if s.name == "mc_accuracy"]
    chosen = preferred or specs
    return chosen[0] if chosen else None


def agreement(
    runs: Sequence[StoredRun],
    metrics: Sequence[str] | None = None,
    by: str | None = None,
    *,
    alpha: float = 0.05,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> Agreement | None:
    """Rank agreement across the datasets of ``runs`` (and across the values of ``by`` within each), or None with nothing to compare.

    The runs are matched across datasets by label. The metric is
    ``mc_accuracy`` when stored, else the first plain-mean metric (of
    ``metrics`` when given). τ_b comes with its cluster-bootstrap interval
    (:func:`frameselect._core.stats.tau_interval`; one draw over the videos of both
    conditions); a pair flips significantly when its paired differences are
    significant in opposite directions in the two conditions
    (:func:`frameselect._core.stats.compare_conditions`), after Holm's correction
    over the pairs of each comparison (the pairs of runs of one comparison are one family).
    """
    spec = _agreement_metric(runs, metrics)
    if spec is None:
        return None
    conditions: dict[str, dict[str, dict[str, float]]] = {}
    clusters: dict[str, Hashable] = {}
    comparisons: list[tuple[str, str, str]] = []
    datasets = list(dict.fromkeys(run.dataset for run in runs))
    for dataset in datasets:
        for run in (r for r in runs if r.dataset == dataset):
            for record, cluster in zip(run.records, run.clusters, strict=True):
                sid = f"{dataset}\x1f{record.sample_id}"
                clusters.setdefault(sid, (dataset, cluster))
                value = float(record.metrics.get(spec.name, math.nan))
                value = value if spec.higher_is_better else -value
                conditions.setdefault(dataset, {}).setdefault(run.label, {})[sid] = value
                if by and by in record.metadata:
                    conditions.setdefault(f"{dataset} · {by}={record.metadata[by]}", {}).setdefault(run.label, {})[sid] = value
    if len(datasets) > 1:
        comparisons += [("dataset", a, b) for a, b in itertools.combinations(datasets, 2)]
    if by:
        for dataset in datasets:
            subsets = sorted(label for label in conditions if label.startswith(f"{dataset} · {by}="))
            comparisons += [(by, a, b) for a, b in itertools.combinations(subsets, 2)]
    if not comparisons:
        return None
    taus, flips, pairs = compare_conditions(conditions, comparisons, clusters, n_boot=n_boot, seed=seed)
    holm_flips(flips, pairs)
    return Agreement(spec.name, taus, flips, max(pairs.values(), default=0), alpha, n_boot)


def agreement_tables(report: Agreement) -> list[Table]:
    """τ_b with intervals, and the significant flips (a table titled "invert" only when one exists)."""
    taus = Table(
        [Column("axis"), Column("A"), Column("B"), Column("τ_b", "interval", signed=True), Column("runs", "int")],
        title=f"Rankings across datasets (and --by subsets) on {report.metric}: Kendall τ_b [95% bootstrap interval over videos]",
        note="–: undefined (a ranking ties every run)",
    )
    for t in report.taus:
        taus.add(t.axis, t.a, t.b, Interval(t.tau.tau, t.tau.low, t.tau.high), t.tau.entries)
    test = (
        f"paired differences significant in opposite directions in A and in B (sign-flip tests over videos; the larger p), "
        f"Holm over the pairs of runs of each comparison (up to {report.family}), α = {report.alpha:g}"
    )
    significant = report.significant
    if not significant:
        flips = Table([Column("order flips")], title="Order flips significant after Holm", note=test)
        flips.add(f"none ({len(report.flips)} pair(s) change order by their estimates alone)")
        return [taus, flips]
    flips = Table(
        [
            Column("axis"),
            Column("A"),
            Column("B"),
            Column("better in A"),
            Column("better in B"),
            Column("p in A", "number", fmt=format_p),
            Column("p in B", "number", fmt=format_p),
            Column("p Holm", "number", fmt=format_p),
        ],
        title="These pairs of runs invert",
        note=test,
    )
    for f in significant:
        flips.add(f.axis, f.a, f.b, f.better, f.worse, f.p_a, f.p_b, f.p_holm)
    return [taus, flips]


def agreement_lines(report: Agreement) -> list[str]:
    """The same as text lines (for the HTML report)."""
    lines = [
        f"{t.axis}: {t.a} vs {t.b}: τ_b = {Interval(t.tau.tau, t.tau.low, t.tau.high).__str__() if not math.isnan(t.tau.tau) else '–'} over {t.tau.entries} runs"
        for t in report.taus
    ]
    significant = report.significant
    if significant:
        lines += [
            f"invert: {f.better} > {f.worse} on {f.a} (p={format_p(f.p_a)}), the other way on {f.b} (p={format_p(f.p_b)}); Holm p={format_p(f.p_holm)}"
            for f in significant
        ]
    else:
        lines.append(
            f"order flips significant after Holm (over the pairs of each comparison): none ({len(report.flips)} change order by their estimates alone)"
        )
    return lines
