"""The statistics the bench prints: intervals, paired comparisons, rank agreement, order flips, identical selections.

Everything is computed from the per-question values of the bench's rows
(:class:`frameselect._studies.bench.runner.BenchRow`), with the video as the unit of
resampling and of permutation (questions about one video are correlated):

- every accuracy cell: the mean and its 95 % cluster-bootstrap interval
  (:func:`frameselect._core.stats.bootstrap_mean`);
- per budget and answering backend, every selector against ``uniform``, and
  (for the ranking backend) every selector against the next one in the
  printed ranking: paired differences with the sign-flip permutation test
  (:func:`frameselect._core.stats.paired_difference`);
- Kendall τ_b between the rankings of two *conditions* with a cluster-bootstrap
  interval (:func:`frameselect._core.stats.tau_interval`): question kinds against
  each other (per budget, ranking backend), backends against each other (per
  budget, all questions), budgets against each other (per backend), and,
  when the token section ran, each budget's ranking at ``k`` frames against
  the ranking at the token cost of ``k`` frames;
- order flips: a selector pair whose paired difference is significant in
  opposite directions in the two conditions of a comparison
  (:func:`frameselect._core.stats.flip_p`, the larger of the two p-values);
- Holm's correction (:func:`frameselect._core.stats.holm`) over two kinds of
  family: every comparison the main tables print (against uniform, every
  backend and budget, and between adjacent ranks) is one family; the
  selector pairs of one comparison of conditions are another (one flip
  hypothesis per pair; a pair whose estimates do not point opposite ways is
  in the family with p = 1). One family over every printed p-value would
  hold some 10^4 hypotheses on the default run, more than any attainable
  p-value (at best 2^(1-V) exactly, 1 / 20001 by random sign patterns) can
  survive: no test could pass, whatever the data. A claim is marked only
  where its Holm-adjusted p-value is below ``alpha``.

Identical selections (:func:`frameselect._studies.analysis.identical_selections`):
a selector whose frames equal another's on at least 95 % of the questions at
a budget is said beside its row (``same frames as: uniform (24/24)``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from frameselect._core.stats import (
    ALPHA,
    DEFAULT_BOOT,
    DEFAULT_PERMUTATIONS,
    Flip,
    Interval,
    PairedDifference,
    TauLine,
    bootstrap_mean,
    compare_conditions,
    holm,
    holm_flips,
    paired_difference,
)
from frameselect._studies.analysis import IDENTICAL_SHARE

__all__ = ["ALPHA", "Comparison", "TauLine", "Flip", "BenchClaims", "bench_claims", "IDENTICAL_SHARE"]

BASELINE = "uniform"

#: per (selector, budget, backend): {sample id: value}
Values = Mapping[tuple[str, int, str], Mapping[str, float]]


@dataclass
class Comparison:
    """One paired comparison the main table prints: ``first`` − ``second`` at one budget under one backend."""

    what: str  # "vs uniform" or "vs next"
    k: int
    answerer: str
    first: str
    second: str
    diff: PairedDifference
    p_holm: float = math.nan

    def significant(self, alpha: float = ALPHA) -> bool:
        return not math.isnan(self.p_holm) and self.p_holm < alpha


@dataclass
class BenchClaims:
    intervals: dict[tuple[str, int, str], Interval]
    comparisons: list[Comparison]
    taus: list[TauLine]
    flips: list[Flip]  # candidate flips (estimates opposite), with their Holm p
    family: int  # the number of comparisons in the main tables' Holm family
    flip_family: int = 0  # the most selector pairs in one comparison of conditions (each comparison is a Holm family)
    same: dict[tuple[str, int], tuple[str, int, int]] = field(default_factory=dict)  # (selector, k) -> (same as, identical, questions)
    alpha: float = ALPHA
    n_boot: int = DEFAULT_BOOT
    clusters: int = 0

    def comparison(self, what: str, k: int, answerer: str, first: str) -> Comparison | None:
        for c in self.comparisons:
            if (c.what, c.k, c.answerer, c.first) == (what, k, answerer, first):
                return c
        return None

    @property
    def significant_flips(self) -> list[Flip]:
        return [f for f in self.flips if f.significant(self.alpha)]


def _mean(values: Mapping[str, float]) -> float:
    finite = [v for v in values.values() if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def ranking(values: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The entries by mean value, best first (name breaks ties); entries without a value left out."""
    means = {e: _mean(v) for e, v in values.items()}
    return sorted((e for e in means if not math.isnan(means[e])), key=lambda e: (-means[e], e))


def _paired(first: Mapping[str, float], second: Mapping[str, float], clusters: Mapping[str, Hashable], n_boot: int, seed: int) -> PairedDifference:
    shared = [s for s in first if s in second]
    a, b = [first[s] for s in shared], [second[s] for s in shared]
    return paired_difference(a, b, [clusters.get(s, s) for s in shared], n_boot=n_boot, seed=seed, n_permutations=DEFAULT_PERMUTATIONS)


def bench_claims(
    values: Values,
    clusters: Mapping[str, Hashable],
    kinds: Mapping[str, str],
    *,
    budgets: Sequence[int],
    answerers: Sequence[str],
    primary: str,
    selections: Mapping[tuple[str, int], Mapping[str, Sequence[int]]] | None = None,
    order: Mapping[int, Sequence[str]] | None = None,
    prefer: Sequence[str] = (),
    token_values: Mapping[tuple[str, int], Mapping[str, float]] | None = None,
    alpha: float = ALPHA,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> BenchClaims:
    """Every statistic the bench prints (see the module docstring).

    ``values[(selector, k, answerer)][sample_id]`` is the sample's accuracy,
    ``clusters[sample_id]`` its video and ``kinds[sample_id]`` its question
    kind; ``token_values[(selector, k)]`` the ``primary`` backend's
    accuracies at the token cost of ``k`` frames (the token section, when
    run: compared with the ranking at ``k`` frames on the axis "frames vs
    tokens"); ``order[k]`` the printed ranking at ``k`` (default: by the
    ``primary`` backend's accuracy); identical selections are said beside
    the later of ``uniform``, then ``prefer``, then the printed order.
    """
    from frameselect._studies.analysis import identical_selections

    intervals = {key: bootstrap_mean(list(v.values()), [clusters.get(s, s) for s in v], n_boot=n_boot, seed=seed) for key, v in values.items()}
    comparisons: list[Comparison] = []
    for k in budgets:
        for ans in answerers:
            at = {s: v for (s, kk, a), v in values.items() if kk == k and a == ans}
            if BASELINE in at:
                for s in at:
                    if s != BASELINE:
                        comparisons.append(Comparison("vs uniform", k, ans, s, BASELINE, _paired(at[s], at[BASELINE], clusters, n_boot, seed)))
            if ans == primary:
                ranked = [s for s in (order or {}).get(k, ranking(at)) if s in at]
                for first, second in itertools.pairwise(ranked):
                    comparisons.append(Comparison("vs next", k, ans, first, second, _paired(at[first], at[second], clusters, n_boot, seed)))

    conditions: dict[str, dict[str, Mapping[str, float]]] = {}
    comparisons_of: list[tuple[str, str, str]] = []

    def condition(label: str, k: int, ans: str, kind: str | None) -> str:
        if label not in conditions:
            conditions[label] = {
                s: {sid: v for sid, v in vals.items() if kind is None or kinds.get(sid) == kind} for (s, kk, a), vals in values.items() if kk == k and a == ans
            }
        return label

    kind_names = list(dict.fromkeys(kinds.values()))
    for k in budgets:
        labels = [condition(f"k={k} · {primary} · {kind}", k, primary, kind) for kind in kind_names]
        comparisons_of += [("question kind", a, b) for a, b in itertools.combinations(labels, 2)]
    for k in budgets:
        labels = [condition(f"k={k} · {ans}", k, ans, None) for ans in answerers]
        comparisons_of += [("answerer", a, b) for a, b in itertools.combinations(labels, 2)]
    for ans in answerers:
        labels = [condition(f"k={k} · {ans}", k, ans, None) for k in budgets]
        comparisons_of += [("budget", a, b) for a, b in itertools.combinations(labels, 2)]
    for k in budgets:
        at_tokens: dict[str, Mapping[str, float]] = {s: v for (s, kk), v in (token_values or {}).items() if kk == k}
        if len(at_tokens) >= 2:
            frames = condition(f"k={k} · {primary}", k, primary, None)
            conditions[f"tokens of k={k} · {primary}"] = at_tokens
            comparisons_of.append(("frames vs tokens", frames, f"tokens of k={k} · {primary}"))

    taus, flips, pairs = compare_conditions(conditions, comparisons_of, clusters, n_boot=n_boot, seed=seed)
    holm_flips(flips, pairs)

    pvalues = [c.diff.p_value for c in comparisons]
    for c, p in zip(comparisons, holm(pvalues), strict=True):
        c.p_holm = p
    family = sum(1 for p in pvalues if not math.isnan(p))

    same: dict[tuple[str, int], tuple[str, int, int]] = {}
    for k in budgets:
        by_selector = {s: sel for (s, kk), sel in (selections or {}).items() if kk == k}
        table_order = list((order or {}).get(k, by_selector))
        for s, (rep, n_same, total) in identical_selections(by_selector, prefer=[BASELINE, *prefer, *table_order]).items():
            same[(s, k)] = (rep, n_same, total)
    n_clusters = len({clusters.get(s, s) for v in values.values() for s in v})
    return BenchClaims(intervals, comparisons, taus, flips, family, max(pairs.values(), default=0), same, alpha, n_boot, n_clusters)


def _p(p: float) -> str:
    from frameselect._core.stats import format_p

    return format_p(p)


def mark(claims: BenchClaims, k: int, answerer: str, selector: str) -> str:
    """``" ▲"`` / ``" ▼"`` where the selector differs from uniform at ``k`` under ``answerer`` after Holm, else ``""``."""
    c = claims.comparison("vs uniform", k, answerer, selector)
    if c is None or not c.significant(claims.alpha):
        return ""
    return " ▲" if c.diff.mean_diff > 0 else " ▼"


def format_rank_section(claims: BenchClaims) -> list[str]:
    """Rank agreement (τ_b with intervals) and the selector pairs whose order flips significantly."""
    from frameselect._core.render import Column, Table, render

    out = ["", "## Rankings across conditions", ""]
    out.append(
        f"Kendall τ_b between two conditions' rankings of the selectors, with {claims.n_boot}-resample bootstrap 95 % intervals "
        f"over the {claims.clusters} videos (one draw of videos for both rankings):"
    )
    table = Table([Column("axis"), Column("A"), Column("B"), Column("τ_b [95% CI]", "interval", signed=True), Column("selectors", "int")])
    for t in claims.taus:
        table.add(t.axis, t.a, t.b, Interval(t.tau.tau, t.tau.low, t.tau.high), t.tau.entries)
    out.append(render(table))
    out.append("(–: undefined, one of the rankings ties every selector)")
    out.append("")
    significant = claims.significant_flips
    test = (
        f"a flip: the pair's paired difference is significant in opposite directions in A and in B; sign-flip tests over videos, "
        f"p = the larger of the two, Holm over the selector pairs of each comparison (up to {claims.flip_family}), α = {claims.alpha:g}"
    )
    if not significant:
        out.append(f"Order flips: none is significant; {len(claims.flips)} pair(s) change order by their estimates alone ({test}).")
        return out
    out.append(f"These selector pairs invert ({test}):")
    flips = Table(
        [Column("axis"), Column("A"), Column("B"), Column("better in A"), Column("better in B"), Column("Δ in A"), Column("Δ in B"), Column("p (Holm)")]
    )
    for f in significant:
        flips.add(f.axis, f.a, f.b, f.better, f.worse, f"{f.diff_a:+.3f} (p={_p(f.p_a)})", f"{f.diff_b:+.3f} (p={_p(f.p_b)})", _p(f.p_holm))
    out.append(render(flips))
    return out


def summary_line(claims: BenchClaims) -> str:
    """What the marks of the main table mean, and how many comparisons are significant."""
    n_sig = sum(1 for c in claims.comparisons if c.significant(claims.alpha))
    return (
        f"(cells: accuracy [95 % bootstrap interval, {claims.n_boot} resamples of the {claims.clusters} videos]; "
        f"▲/▼: above/below uniform, paired sign-flip test over videos, significant after Holm over the {claims.family} comparisons "
        f"the main tables print (α = {claims.alpha:g}); {n_sig} of them are)"
    )


def values_of(rows: Sequence[Any]) -> dict[tuple[str, int, str], dict[str, float]]:
    """Per-sample values of the bench's rows that carry them."""
    return {(r.selector, r.k, r.answerer): dict(r.per_sample) for r in rows if r.per_sample}
