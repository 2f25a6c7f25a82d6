"""Rankings and their comparisons: rank analysis, Holm's correction, order flips, tau_b intervals, several-way clustered resampling, rankings compared across conditions (:mod:`frameselect._core.stats`)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.stats._resampling import (
    DEFAULT_BOOT,
    DEFAULT_LEVEL,
    DEFAULT_PERMUTATIONS,
    EXACT_MAX_CLUSTERS,
    Interval,
    PairedDifference,
    Stat,
    _check,
    _cluster_sums,
    _draws,
    _fmt,
    _percentiles,
    _sign_flip_ps,
    kendall_tau,
    paired_difference,
    paired_difference_stat,
)

__all__ = [
    "ALPHA",
    "Flip",
    "Inversion",
    "RankGroup",
    "RankReport",
    "Ranking",
    "TauInterval",
    "TauLine",
    "TauResult",
    "compare_conditions",
    "flip_p",
    "holm",
    "holm_flips",
    "multiway_mean",
    "multiway_paired",
    "multiway_weights",
    "rank_analysis",
    "sign_flip_test",
    "sign_flip_tests",
    "tau_interval",
]


@dataclass(frozen=True)
class RankGroup:
    """Entries (selectors) compared on one metric over one set of samples.

    ``data[entry][sample_id]`` is a per-sample value (``stat=None``: the
    group's value is the NaN-skipping mean) or an item for ``stat``.
    ``clusters`` maps sample ids to resampling clusters (missing: own cluster).
    """

    key: tuple[str, ...]
    data: Mapping[str, Mapping[str, Any]]
    clusters: Mapping[str, Hashable] = field(default_factory=dict)
    stat: Stat | None = None
    higher_is_better: bool = True

    def value(self, entry: str) -> float:
        items = list(self.data[entry].values())
        if self.stat is not None:
            return float(self.stat(items)) if items else math.nan
        v = np.asarray(items, dtype=np.float64)
        v = v[~np.isnan(v)]
        return float(v.mean()) if v.size else math.nan

    def goodness(self, entry: str) -> float:
        """The value, negated when lower is better, so that larger is always better."""
        value = self.value(entry)
        return value if self.higher_is_better else -value

    def compare(self, first: str, second: str, *, n_boot: int, level: float, seed: int) -> PairedDifference:
        """Paired difference first − second over the samples both have."""
        da, db = self.data[first], self.data[second]
        shared = [sid for sid in da if sid in db]
        clusters = [self.clusters.get(sid, ("sample", sid)) for sid in shared]
        if self.stat is None:
            return paired_difference([da[s] for s in shared], [db[s] for s in shared], clusters, n_boot=n_boot, level=level, seed=seed)
        return paired_difference_stat([da[s] for s in shared], [db[s] for s in shared], self.stat, clusters, n_boot=n_boot, level=level, seed=seed)


@dataclass(frozen=True)
class Ranking:
    """One group's entries, best first, with their values."""

    key: tuple[str, ...]
    order: tuple[str, ...]
    values: Mapping[str, float]


@dataclass(frozen=True)
class TauResult:
    """Kendall τ_b between the rankings of two groups over their shared entries."""

    axis: str
    key_a: tuple[str, ...]
    key_b: tuple[str, ...]
    tau: float
    entries: int


@dataclass(frozen=True)
class Inversion:
    """A pair ordered ``better`` > ``worse`` in group A and the other way in group B, significantly in both."""

    axis: str
    key_a: tuple[str, ...]
    key_b: tuple[str, ...]
    better: str
    worse: str
    in_a: PairedDifference
    in_b: PairedDifference
    #: Holm-adjusted p-value of the flip (``max`` of the two p-values) over the pairs of its comparison
    p_holm: float = math.nan


@dataclass
class RankReport:
    rankings: list[Ranking]
    taus: list[TauResult]
    inversions: list[Inversion]
    alpha: float


def _ranking(group: RankGroup) -> Ranking:
    values = {entry: group.value(entry) for entry in group.data}
    finite = [e for e in values if not math.isnan(values[e])]
    order = sorted(finite, key=lambda e: (-group.goodness(e), e))
    return Ranking(group.key, tuple(order), values)


def rank_analysis(
    groups: Sequence[RankGroup],
    comparisons: Sequence[tuple[str, int, int]],
    *,
    alpha: float = 0.05,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> RankReport:
    """Rankings of every group; τ_b and significant inversions for each ``(axis, i, j)`` comparison.

    An inversion needs a strict order flip of the groups' values and paired
    differences significant in both groups: the flip's p-value (the larger
    of the two, :func:`flip_p`) below ``alpha`` after Holm's correction over
    the pairs of entries of its comparison (pairs whose order does not flip
    count with p = 1).
    """
    rankings = [_ranking(g) for g in groups]
    tests: dict[tuple[int, str, str], PairedDifference] = {}

    def test(gi: int, first: str, second: str) -> PairedDifference:
        if (gi, first, second) not in tests:
            tests[(gi, first, second)] = groups[gi].compare(first, second, n_boot=n_boot, level=level, seed=seed)
        return tests[(gi, first, second)]

    taus: list[TauResult] = []
    inversions: list[Inversion] = []
    for axis, i, j in comparisons:
        candidates: list[Inversion] = []
        flip_ps: list[float] = []
        untested = 0
        ga, gb = groups[i], groups[j]
        shared = [e for e in rankings[i].order if e in set(rankings[j].order)]
        good_a = {e: ga.goodness(e) for e in shared}
        good_b = {e: gb.goodness(e) for e in shared}
        tau = kendall_tau([good_a[e] for e in shared], [good_b[e] for e in shared]) if len(shared) >= 2 else math.nan
        taus.append(TauResult(axis, ga.key, gb.key, tau, len(shared)))
        for x, y in itertools.combinations(shared, 2):
            da, db = good_a[x] - good_a[y], good_b[x] - good_b[y]
            if da * db >= 0:
                untested += 1
                continue
            better, worse = (x, y) if da > 0 else (y, x)
            in_a, in_b = test(i, better, worse), test(j, better, worse)
            p = max(in_a.p_value, in_b.p_value)
            if math.isnan(p):
                untested += 1
                continue
            candidates.append(Inversion(axis, ga.key, gb.key, better, worse, in_a, in_b))
            flip_ps.append(p)
        adjusted = holm(flip_ps + [1.0] * untested)
        inversions += [dataclasses.replace(inv, p_holm=p) for inv, p in zip(candidates, adjusted, strict=False) if p < alpha]
    return RankReport(rankings, taus, inversions, alpha)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given; NaN stays NaN and is not counted in the family.

    The ``i``-th smallest of ``m`` p-values becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]
    """
    finite = [i for i, p in enumerate(pvalues) if not math.isnan(float(p))]
    m = len(finite)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(finite, key=lambda i: (float(pvalues[i]), i))):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        out[i] = round(running, 15)
    return out


def sign_flip_test(
    a: Sequence[float] | NDArray[Any],
    b: Sequence[float] | NDArray[Any],
    clusters: Sequence[Hashable] | None = None,
    *,
    seed: int = 0,
    n_random: int = DEFAULT_BOOT,
    exact_max: int = EXACT_MAX_CLUSTERS,
) -> tuple[float, float]:
    """``(mean difference a − b, two-sided sign-flip p)``: :func:`paired_difference` without its interval.

    >>> sign_flip_test([1, 1, 1, 0], [0, 0, 1, 0])
    (0.5, 0.5)
    """
    return sign_flip_tests([(a, b, clusters)], seed=seed, n_random=n_random, exact_max=exact_max)[0]


def sign_flip_tests(
    cases: Sequence[tuple[Sequence[float] | NDArray[Any], Sequence[float] | NDArray[Any], Sequence[Hashable] | None]],
    *,
    seed: int = 0,
    n_random: int = DEFAULT_BOOT,
    exact_max: int = EXACT_MAX_CLUSTERS,
) -> list[tuple[float, float]]:
    """:func:`sign_flip_test` of each ``(a, b, clusters)``, the random tests of one cluster count run together (each with the patterns of ``seed``, as if alone).

    >>> sign_flip_tests([([1, 1, 1, 0], [0, 0, 1, 0], None), ([2, 0], [0, 0], None)])
    [(0.5, 0.5), (1.0, 1.0)]
    """
    diffs: list[float] = []
    sums_of: list[NDArray[np.float64]] = []
    for a, b, clusters in cases:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"paired values differ in length: {x.shape[0]} and {y.shape[0]}")
        sums, counts, _ = _cluster_sums(x - y, clusters)
        sums_of.append(sums)
        diffs.append(float(sums.sum() / counts.sum()) if sums.shape[0] else math.nan)
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(cases)
    for exact in (True, False):
        mine = [i for i, sums in enumerate(sums_of) if sums.shape[0] and (sums.shape[0] <= exact_max) == exact]
        for i, p in zip(mine, _sign_flip_ps([sums_of[i] for i in mine], exact, n_random, seed), strict=True):
            out[i] = (diffs[i], p)
    return out


def flip_p(diff_a: float, p_a: float, diff_b: float, p_b: float) -> float:
    """The p-value of "the pair's order differs between A and B": ``max(p_a, p_b)`` when the differences point opposite ways, else NaN.

    An intersection-union test: the flip is claimed only when both
    directions are claimed, so the larger p-value is a valid p-value for the
    conjunction.

    >>> flip_p(0.2, 0.01, -0.1, 0.03), flip_p(0.2, 0.01, 0.1, 0.03)
    (0.03, nan)
    """
    if math.isnan(diff_a) or math.isnan(diff_b) or diff_a * diff_b >= 0:
        return math.nan
    return max(float(p_a), float(p_b))


@dataclass(frozen=True)
class TauInterval:
    """Kendall τ_b between two conditions' rankings with its cluster-bootstrap percentile interval."""

    tau: float
    low: float
    high: float
    entries: int
    clusters: int
    level: float = DEFAULT_LEVEL

    def __str__(self) -> str:
        if math.isnan(self.tau):
            return "–"
        return f"{self.tau:+.2f} [{_fmt(self.low, '+.2f')}, {_fmt(self.high, '+.2f')}]"


def _entry_sums(
    data: Mapping[str, Mapping[str, float]], entries: Sequence[str], index: Mapping[Hashable, int], clusters: Mapping[str, Hashable]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per entry and cluster, the sum and count of the finite per-sample values (entries × clusters)."""
    sums = np.zeros((len(entries), len(index)))
    counts = np.zeros((len(entries), len(index)))
    for e, entry in enumerate(entries):
        for sid, value in data[entry].items():
            v = float(value)
            if math.isnan(v):
                continue
            c = index[clusters.get(sid, ("sample", sid))]
            sums[e, c] += v
            counts[e, c] += 1
    return sums, counts


def _taus(va: NDArray[np.float64], vb: NDArray[np.float64]) -> NDArray[np.float64]:
    """τ_b between the rows of ``va`` and ``vb`` (one per resample); NaN where a row has a NaN or is constant.

    Vectorised over the rows: with ``sx``, ``sy`` the signs of the pairwise
    differences (a difference within ``1e-12`` is a tie), τ_b =
    ``Σ sx·sy / sqrt((P − ties_x)(P − ties_y))`` over the ``P`` pairs, which is
    :func:`scipy.stats.kendalltau`'s τ_b (the tests compare them row by row).
    """
    i, j = np.triu_indices(va.shape[1], k=1)

    def signs(v: NDArray[np.float64]) -> NDArray[np.float64]:
        d = v[:, i] - v[:, j]
        return np.where(np.abs(d) <= 1e-12, 0.0, np.sign(d))

    sx, sy = signs(va), signs(vb)
    pairs = float(i.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(axis=1) / np.sqrt((pairs - (sx == 0).sum(axis=1)) * (pairs - (sy == 0).sum(axis=1)))
    finite = np.isfinite(va).all(axis=1) & np.isfinite(vb).all(axis=1) & np.isfinite(tau)
    return np.asarray(np.where(finite, np.clip(tau, -1.0, 1.0), math.nan), dtype=np.float64)


def tau_interval(
    a: Mapping[str, Mapping[str, float]],
    b: Mapping[str, Mapping[str, float]],
    clusters: Mapping[str, Hashable],
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> TauInterval:
    """τ_b between the entries' mean values in condition ``a`` and in ``b``, with a cluster-bootstrap interval.

    ``a[entry][sample_id]`` and ``b[entry][sample_id]`` are per-sample values
    (the two conditions may hold different samples, e.g. two question
    kinds); ``clusters`` maps sample ids to clusters (a sample missing from
    it is its own cluster). Each resample draws the clusters once, with
    replacement, and recomputes every entry's mean in both conditions on it.
    Entries in both conditions with a finite mean in each are compared.
    """
    _check(n_boot, level)
    shared = [e for e in a if e in b]
    index: dict[Hashable, int] = {}
    for data in (a, b):
        for entry in shared:
            for sid in data[entry]:
                index.setdefault(clusters.get(sid, ("sample", sid)), len(index))
    sa, na = _entry_sums(a, shared, index, clusters)
    sb, nb = _entry_sums(b, shared, index, clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = (na.sum(axis=1) > 0) & (nb.sum(axis=1) > 0)
    sa, na, sb, nb = sa[keep], na[keep], sb[keep], nb[keep]
    n_entries, n_clusters = int(keep.sum()), len(index)
    if n_entries < 2:
        return TauInterval(math.nan, math.nan, math.nan, n_entries, n_clusters, level)
    estimate = kendall_tau(sa.sum(axis=1) / na.sum(axis=1), sb.sum(axis=1) / nb.sum(axis=1))
    weights = _draws(np.random.default_rng(seed), n_clusters, n_boot).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = _taus((weights @ sa.T) / (weights @ na.T), (weights @ sb.T) / (weights @ nb.T))
    low, high = _percentiles(replicates, level)
    return TauInterval(estimate, low, high, n_entries, n_clusters, level)


def multiway_weights(groups: Sequence[Sequence[Hashable]], n_boot: int, seed: int) -> tuple[NDArray[np.float64], int]:
    """Per resample and sample, the product of its videos' multiplicities (``n_boot`` × samples), and the number of videos.

    The videos (in first-seen order) are drawn with replacement by one multinomial per resample.
    """
    index: dict[Hashable, int] = {}
    for group in groups:
        for video in group:
            index.setdefault(video, len(index))
    if not index:
        return np.zeros((n_boot, len(groups))), 0
    draws = _draws(np.random.default_rng(seed), len(index), n_boot).astype(np.float64)
    weights = np.ones((n_boot, len(groups)))
    for i, group in enumerate(groups):
        for video in dict.fromkeys(group):
            weights[:, i] *= draws[:, index[video]]
    return weights, len(index)


def _weighted_means(values: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    valid = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((weights[:, valid] @ values[valid]) / weights[:, valid].sum(axis=1), dtype=np.float64)


def multiway_mean(
    values: Sequence[float] | NDArray[Any], groups: Sequence[Sequence[Hashable]], *, n_boot: int = DEFAULT_BOOT, level: float = DEFAULT_LEVEL, seed: int = 0
) -> Interval:
    """The mean of the non-NaN ``values`` with a product-weight bootstrap interval over the videos each sample names (``groups[i]``).

    >>> iv = multiway_mean([1.0, 0.0, 1.0], [["a", "b"], ["b", "c"], ["c", "a"]], n_boot=200)
    >>> round(iv.estimate, 3), iv.clusters
    (0.667, 3)
    """
    _check(n_boot, level)
    v = np.asarray(values, dtype=np.float64)
    if v.shape[0] != len(groups):
        raise ValueError(f"{len(groups)} video groups for {v.shape[0]} values")
    finite = v[~np.isnan(v)]
    if finite.size == 0:
        return Interval(math.nan, math.nan, math.nan, level, 0, 0)
    weights, n_videos = multiway_weights(groups, n_boot, seed)
    low, high = _percentiles(_weighted_means(v, weights), level)
    return Interval(float(finite.mean()), low, high, level, int(finite.size), n_videos)


def multiway_paired(
    a: Sequence[float] | NDArray[Any],
    b: Sequence[float] | NDArray[Any],
    groups: Sequence[Sequence[Hashable]],
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> PairedDifference:
    """Paired difference a − b with the product-weight bootstrap interval and its dual two-sided p-value (module docstring)."""
    _check(n_boot, level)
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.shape[0] != len(groups):
        raise ValueError(f"paired values and video groups differ in length: {x.shape[0]}, {y.shape[0]} and {len(groups)}")
    d = x - y
    finite = d[~np.isnan(d)]
    if finite.size == 0:
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, 0, 0, level, "")
    weights, n_videos = multiway_weights(groups, n_boot, seed)
    replicates = _weighted_means(d, weights)
    low, high = _percentiles(replicates, level)
    reps = replicates[np.isfinite(replicates)]
    if reps.size == 0 or np.all(finite == 0):
        p = 1.0
    else:
        floor = max(1.0 / (reps.size + 1), 2.0 ** (1 - n_videos))
        p = min(1.0, max(2 * min(float(np.mean(reps <= 0)), float(np.mean(reps >= 0))), floor))
    method = f"product-weight bootstrap over {n_videos} videos, {n_boot} resamples"
    return PairedDifference(float(finite.mean()), low, high, p, int(finite.size), n_videos, level, method)


ALPHA = 0.05


@dataclass
class TauLine:
    """τ_b between two conditions' rankings."""

    axis: str
    a: str
    b: str
    tau: TauInterval


@dataclass
class Flip:
    """A selector pair ordered ``better`` > ``worse`` in condition ``a`` and the other way in ``b`` (by the estimates)."""

    axis: str
    a: str
    b: str
    better: str
    worse: str
    diff_a: float
    p_a: float
    diff_b: float
    p_b: float
    p: float
    p_holm: float = math.nan

    def significant(self, alpha: float = ALPHA) -> bool:
        return not math.isnan(self.p_holm) and self.p_holm < alpha


def _mean_of(values: Mapping[str, float]) -> float:
    finite = [float(v) for v in values.values() if not math.isnan(float(v))]
    return sum(finite) / len(finite) if finite else math.nan


def _ranked(values: Mapping[str, Mapping[str, float]]) -> list[str]:
    means = {e: _mean_of(v) for e, v in values.items()}
    return sorted((e for e in means if not math.isnan(means[e])), key=lambda e: (-means[e], e))


def compare_conditions(
    conditions: Mapping[str, Mapping[str, Mapping[str, float]]],
    comparisons: Sequence[tuple[str, str, str]],
    clusters: Mapping[str, Hashable],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    n_permutations: int = DEFAULT_PERMUTATIONS,
) -> tuple[list[TauLine], list[Flip], dict[tuple[str, str, str], int]]:
    """τ_b with its interval for each ``(axis, a, b)`` comparison of conditions, and the candidate order flips.

    ``conditions[label][entry][sample_id]`` is a per-sample value. For every
    pair of entries ranked in both conditions whose mean differences point
    opposite ways, the sign-flip test over ``clusters`` in each condition
    gives :func:`flip_p`; the other pairs are hypotheses with p = 1. Returns
    ``(taus, flips, pairs per comparison)``; :func:`holm_flips` sets each
    flip's ``p_holm`` over the pairs of its comparison.
    """
    taus = [TauLine(axis, a, b, tau_interval(conditions[a], conditions[b], clusters, n_boot=n_boot, seed=seed)) for axis, a, b in comparisons]
    means = {label: {e: _mean_of(v) for e, v in entries.items()} for label, entries in conditions.items()}
    candidates: list[tuple[str, str, str, str, str]] = []  # (axis, a, b, better, worse): the pairs whose estimates point opposite ways
    pairs: dict[tuple[str, str, str], int] = {}
    for axis, a, b in comparisons:
        ca, cb = conditions[a], conditions[b]
        shared = [e for e in _ranked(ca) if e in set(_ranked(cb))]
        pairs[(axis, a, b)] = len(shared) * (len(shared) - 1) // 2
        for x, y in itertools.combinations(sorted(shared), 2):
            ma, mb = means[a][x] - means[a][y], means[b][x] - means[b][y]
            if ma * mb < 0:
                candidates.append((axis, a, b, *((x, y) if ma > 0 else (y, x))))
    # every test the flips need, computed together (the same p-values as one sign_flip_test each)
    keys = list(dict.fromkeys(key for _, a, b, better, worse in candidates for key in ((a, better, worse), (b, better, worse))))
    tests = dict(
        zip(keys, sign_flip_tests([_paired_values(conditions[label], x, y, clusters) for label, x, y in keys], seed=seed, n_random=n_permutations), strict=True)
    )
    flips: list[Flip] = []
    for axis, a, b, better, worse in candidates:
        da, pa = tests[(a, better, worse)]
        db, pb = tests[(b, better, worse)]
        p = flip_p(da, pa, db, pb)
        if not math.isnan(p):
            flips.append(Flip(axis, a, b, better, worse, da, pa, db, pb, p))
    return taus, flips, pairs


def _paired_values(
    entries: Mapping[str, Mapping[str, float]], x: str, y: str, clusters: Mapping[str, Hashable]
) -> tuple[list[float], list[float], list[Hashable]]:
    """The values of ``x`` and ``y`` on the samples both have, and those samples' clusters."""
    da, db = entries[x], entries[y]
    shared = [s for s in da if s in db]
    return [da[s] for s in shared], [db[s] for s in shared], [clusters.get(s, s) for s in shared]


def holm_flips(flips: Sequence[Flip], pairs: Mapping[tuple[str, str, str], int]) -> None:
    """Sets each flip's ``p_holm``: Holm over the pairs of its comparison (the pairs that are not candidate flips count with p = 1)."""
    for key, n_pairs in pairs.items():
        mine = [f for f in flips if (f.axis, f.a, f.b) == key]
        adjusted = holm([f.p for f in mine] + [1.0] * max(0, n_pairs - len(mine)))
        for f, p in zip(mine, adjusted, strict=False):
            f.p_holm = p
