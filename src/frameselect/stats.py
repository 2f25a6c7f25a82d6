"""Statistics over per-sample results: bootstrap intervals, paired tests, Kendall's τ, rank analysis.

Everything here is seeded. The tests themselves are scipy's; what this module
adds is the *cluster* glue: questions about the same video are correlated, so
the unit of resampling and of permutation is the video (a cluster per sample
when no cluster keys are given).

**Bootstrap intervals.** A run's aggregate (a mean, or any statistic of its
records such as MLVU's M-Avg or Video-MME-v2's group score) gets a percentile
interval from ``n_boot`` resamples (default 1000, level 95%). Whole clusters
are drawn with replacement: the cluster multiplicities come from one
multinomial draw per resample, so a mean's replicate is
``Σ w_c S_c / Σ w_c N_c`` over cluster sums ``S_c`` and counts ``N_c`` (one
matrix product for all resamples), and a general statistic sees each
cluster's items repeated ``w_c`` times. This stays a thin glue rather than
:func:`scipy.stats.bootstrap`: scipy resamples observations with
``rng.integers``, so driving it with cluster indices gives the same
distribution of intervals but other numbers for a given seed than every
table published so far, and no vectorised ratio-of-sums path; the tests
check the glue against scipy's percentile bootstrap on cluster indices.

**Paired comparison** of two selectors on the same samples: the mean of the
per-sample differences, its cluster-bootstrap interval, and a two-sided
p-value from a *sign-flip permutation test* on cluster sums of differences
(:func:`scipy.stats.permutation_test`, ``permutation_type="samples"`` on
one sample; under the null the two selectors are exchangeable within each
cluster, so every cluster's difference is as likely negated). With up to
:data:`EXACT_MAX_CLUSTERS` clusters all ``2^C`` sign patterns are enumerated
and ``p`` is exact (the share of patterns at least as extreme, the observed
one included); beyond, ``n_boot`` random patterns give
``p = (1 + #extreme) / (n_boot + 1)``. For a general statistic the test swaps
whole clusters between the two runs (scipy's paired ``"samples"``
permutation over cluster indices).

**Kendall τ_b** between two rankings, with ties: :func:`scipy.stats.kendalltau`;
:func:`tau_interval` adds a cluster-bootstrap interval: one draw of clusters
serves both rankings (the entries' values in each condition are recomputed
on the same resampled videos), and τ_b is taken per resample.

**Multiple comparisons.** :func:`holm` gives Holm's step-down adjusted
p-values over a family of tests (``p_(i)`` times ``m - i + 1``, made
monotone, capped at 1); a test is significant at ``alpha`` when its adjusted
p-value is below ``alpha``. This controls the family-wise error rate under
any dependence between the tests.

**Samples over several videos.** A question over two to four videos shares
videos with other questions, so neither the question nor its set of videos
is an independent unit. :func:`multiway_mean` and :func:`multiway_paired`
use the product-weight ("pigeonhole") bootstrap of crossed designs (Owen,
2007): each resample draws the videos with replacement, and a question
weighs the product of its videos' multiplicities, so every question that
shares a video with another moves with it. Its p-value is the bootstrap
test dual to the interval: twice the smaller share of resampled differences
on either side of zero, and never below ``2^(1 - V)`` for ``V`` videos, the
smallest p-value an exact sign-flip test over ``V`` independent videos can
give (a bootstrap over a handful of videos would otherwise claim what no
exact test could).

**Order flips.** A pair of entries *flips* between conditions A and B when
its paired difference is significant in opposite directions in A and in B.
:func:`flip_p` gives the intersection-union p-value of that claim, the larger
of the two two-sided sign-flip p-values (NaN when the estimates do not point
opposite ways); the flip is significant when that p-value survives Holm
over the pairs of its comparison (:func:`holm_flips`; the pairs that do not
flip by their estimates count with p = 1).

**Rank analysis** over a set of ranking groups (a dataset, a metric, a subset
of questions): each group's ranking of the entries (selectors), τ_b between
the rankings of compared groups, and the *inversions*: pairs of entries whose
order flips between two groups while their paired difference is significant
in both, after Holm's correction over the pairs of that comparison (see
*Order flips* below).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_BOOT",
    "DEFAULT_LEVEL",
    "EXACT_MAX_CLUSTERS",
    "Interval",
    "PairedDifference",
    "format_interval",
    "cluster_codes",
    "bootstrap_mean",
    "bootstrap",
    "paired_difference",
    "paired_difference_stat",
    "kendall_tau",
    "RankGroup",
    "Ranking",
    "TauResult",
    "Inversion",
    "RankReport",
    "rank_analysis",
    "holm",
    "sign_flip_test",
    "flip_p",
    "TauInterval",
    "tau_interval",
    "multiway_weights",
    "multiway_mean",
    "multiway_paired",
    "TauLine",
    "Flip",
    "compare_conditions",
    "holm_flips",
]

DEFAULT_BOOT = 1000
DEFAULT_LEVEL = 0.95
#: up to this many clusters the sign-flip test enumerates every sign pattern
EXACT_MAX_CLUSTERS = 12
#: random sign patterns beyond that, where a whole family of tests is corrected (Holm over m tests needs well over m / alpha)
DEFAULT_PERMUTATIONS = 20000

Stat = Callable[[Sequence[Any]], float]


@dataclass(frozen=True)
class Interval:
    """An estimate with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    level: float = DEFAULT_LEVEL
    n: int = 0
    clusters: int = 0

    def __str__(self) -> str:
        return format_interval(self)


@dataclass(frozen=True)
class PairedDifference:
    """Mean difference A − B over paired samples, its interval and a two-sided p-value."""

    mean_diff: float
    low: float
    high: float
    p_value: float
    n: int
    clusters: int
    level: float = DEFAULT_LEVEL
    method: str = ""

    def __str__(self) -> str:
        return f"{format_interval(Interval(self.mean_diff, self.low, self.high), signed=True)} p={format_p(self.p_value)}"


def _fmt(x: float, spec: str) -> str:
    return "–" if math.isnan(x) else format(x, spec)


def format_interval(iv: Interval, signed: bool = False) -> str:
    """``"0.667 [0.50, 0.83]"``: estimate to 3 decimals, bounds to 2; 3 significant digits for tiny or huge values.

    >>> format_interval(Interval(2 / 3, 0.5, 0.8333))
    '0.667 [0.50, 0.83]'
    >>> format_interval(Interval(0.000123, 0.0001, 0.00015))
    '0.000123 [0.0001, 0.00015]'
    """
    if math.isnan(iv.estimate):
        return "–"
    sign = "+" if signed else ""
    finite = [abs(v) for v in (iv.estimate, iv.low, iv.high) if not math.isnan(v)]
    mag = max(finite)
    if mag != 0 and (mag < 0.01 or mag >= 1e4):
        return f"{iv.estimate:{sign}.3g} [{_fmt(iv.low, '.3g')}, {_fmt(iv.high, '.3g')}]"
    return f"{iv.estimate:{sign}.3f} [{_fmt(iv.low, '.2f')}, {_fmt(iv.high, '.2f')}]"


def format_p(p: float) -> str:
    """A p-value to 3 decimals, or ``<0.001``."""
    if math.isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def cluster_codes(n: int, clusters: Sequence[Hashable] | None) -> tuple[NDArray[np.int64], int]:
    """Cluster keys mapped to 0..C-1 in first-seen order (one cluster per item without keys)."""
    if clusters is None:
        return np.arange(n, dtype=np.int64), n
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster keys for {n} values")
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(key, len(index)) for key in clusters], dtype=np.int64)
    return codes, len(index)


def _draws(rng: np.random.Generator, n_clusters: int, n_boot: int) -> NDArray[np.int64]:
    """Cluster multiplicities of ``n_boot`` resamples of ``n_clusters`` clusters with replacement."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)


def _percentiles(replicates: NDArray[np.float64], level: float) -> tuple[float, float]:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - level
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _check(n_boot: int, level: float) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _cluster_sums(values: NDArray[np.float64], clusters: Sequence[Hashable] | None) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Per-cluster sums and counts of the finite values; clusters with none are dropped."""
    if clusters is not None and len(clusters) != values.shape[0]:
        raise ValueError(f"{len(clusters)} cluster keys for {values.shape[0]} values")
    valid = ~np.isnan(values)
    keys = None if clusters is None else [k for k, ok in zip(clusters, valid, strict=True) if ok]
    codes, n_clusters = cluster_codes(int(valid.sum()), keys)
    sums = np.bincount(codes, weights=values[valid], minlength=n_clusters).astype(np.float64)
    counts = np.bincount(codes, minlength=n_clusters).astype(np.float64)
    return sums, counts, int(valid.sum())


def bootstrap_mean(
    values: Sequence[float] | NDArray[Any],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Interval:
    """The mean of the non-NaN ``values`` with a cluster-bootstrap percentile interval.

    >>> iv = bootstrap_mean([1.0, 1.0, 0.0, 1.0], n_boot=200)
    >>> iv.estimate, iv.low <= iv.estimate <= iv.high
    (0.75, True)
    """
    _check(n_boot, level)
    v = np.asarray(values, dtype=np.float64)
    sums, counts, n = _cluster_sums(v, clusters)
    n_clusters = sums.shape[0]
    if n_clusters == 0:
        return Interval(math.nan, math.nan, math.nan, level, 0, 0)
    estimate = float(sums.sum() / counts.sum())
    weights = _draws(np.random.default_rng(seed), n_clusters, n_boot).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (weights @ sums) / (weights @ counts)
    low, high = _percentiles(replicates, level)
    return Interval(estimate, low, high, level, n, n_clusters)


def _members(codes: NDArray[np.int64], n_clusters: int) -> list[list[int]]:
    members: list[list[int]] = [[] for _ in range(n_clusters)]
    for i, c in enumerate(codes):
        members[int(c)].append(i)
    return members


def _resample(items: Sequence[Any], members: list[list[int]], weights: NDArray[np.int64]) -> list[Any]:
    out: list[Any] = []
    for cluster, w in enumerate(weights):
        for _ in range(int(w)):
            out.extend(items[i] for i in members[cluster])
    return out


def bootstrap(
    items: Sequence[Any],
    stat: Stat,
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Interval:
    """``stat(items)`` with a cluster-bootstrap percentile interval; ``stat`` sees resampled lists.

    A resampled list repeats a drawn cluster's items as often as it was
    drawn, so ``stat`` must accept repeated items.

    >>> iv = bootstrap([3.0, 1.0, 2.0], lambda xs: float(np.median(xs)), n_boot=100)
    >>> iv.estimate
    2.0
    """
    _check(n_boot, level)
    items = list(items)
    codes, n_clusters = cluster_codes(len(items), clusters)
    if n_clusters == 0:
        return Interval(math.nan, math.nan, math.nan, level, 0, 0)
    estimate = float(stat(items))
    if math.isnan(estimate):
        return Interval(math.nan, math.nan, math.nan, level, len(items), n_clusters)
    members = _members(codes, n_clusters)
    weights = _draws(np.random.default_rng(seed), n_clusters, n_boot)
    replicates = np.array([float(stat(_resample(items, members, w))) for w in weights])
    low, high = _percentiles(replicates, level)
    return Interval(estimate, low, high, level, len(items), n_clusters)


def _abs_sum(x: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    return np.asarray(np.abs(x.sum(axis=axis)), dtype=np.float64)


def _sign_flip_p(cluster_sums: NDArray[np.float64], exact: bool, n_random: int, rng: np.random.Generator) -> tuple[float, int]:
    """Two-sided sign-flip p-value of the total of ``cluster_sums`` and the number of patterns used.

    Beyond the exact range, ``n_random`` random patterns give at best
    ``1 / (n_random + 1)``: a caller that corrects for ``m`` tests needs
    ``n_random`` well above ``m / alpha`` for any test to be able to pass.

    ``scipy.stats.permutation_test`` with one sample and ``permutation_type="samples"``
    flips the sign of each cluster's sum; the statistic is ``|Σ ± S_c|``, so
    ``alternative="greater"`` counts the patterns at least as extreme as the observed one.
    """
    from scipy.stats import permutation_test

    if cluster_sums.shape[0] == 1:  # scipy needs two observations; ±S are equally extreme
        return 1.0, 2
    if abs(float(cluster_sums.sum())) <= 1e-12 * max(1.0, float(np.abs(cluster_sums).max())):
        return 1.0, 2 ** cluster_sums.shape[0] if exact else n_random  # a zero total (up to rounding): every pattern is as extreme
    if exact:  # the exact p depends on the cluster sums alone (not on the generator): many pairs of a table share them
        return _exact_sign_flip_p(tuple(float(x) for x in cluster_sums))
    res = permutation_test(
        (cluster_sums,),
        _abs_sum,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_random,
        alternative="greater",
        rng=rng,
    )
    return float(res.pvalue), int(np.asarray(res.null_distribution).shape[0])


@functools.lru_cache(maxsize=65536)
def _exact_sign_flip_p(cluster_sums: tuple[float, ...]) -> tuple[float, int]:
    from scipy.stats import permutation_test

    res = permutation_test((np.asarray(cluster_sums),), _abs_sum, permutation_type="samples", vectorized=True, n_resamples=np.inf, alternative="greater")
    return float(res.pvalue), int(np.asarray(res.null_distribution).shape[0])


def paired_difference(
    a: Sequence[float] | NDArray[Any],
    b: Sequence[float] | NDArray[Any],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    exact_max: int = EXACT_MAX_CLUSTERS,
    n_permutations: int | None = None,
) -> PairedDifference:
    """Paired comparison of per-sample values ``a`` and ``b`` (same samples, same order).

    Pairs where either value is NaN are left out. Returns the mean difference
    a − b, its cluster-bootstrap interval and the sign-flip p-value (see the
    module docstring).

    >>> d = paired_difference([1, 1, 1, 0], [0, 0, 1, 0])
    >>> d.mean_diff, d.p_value
    (0.5, 0.5)
    """
    _check(n_boot, level)
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length: {x.shape[0]} and {y.shape[0]}")
    sums, counts, n = _cluster_sums(x - y, clusters)
    n_clusters = sums.shape[0]
    if n_clusters == 0:
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, 0, 0, level, "")
    total = counts.sum()
    observed = float(sums.sum() / total)
    rng = np.random.default_rng(seed)
    weights = _draws(rng, n_clusters, n_boot).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (weights @ sums) / (weights @ counts)
    low, high = _percentiles(replicates, level)
    exact = n_clusters <= exact_max
    n_random = n_permutations or n_boot
    p, _ = _sign_flip_p(sums, exact, n_random, rng)
    method = f"sign-flip, exact over {2**n_clusters} patterns" if exact else f"sign-flip, {n_random} random patterns"
    return PairedDifference(observed, low, high, p, n, n_clusters, level, method)


def paired_difference_stat(
    items_a: Sequence[Any],
    items_b: Sequence[Any],
    stat: Stat,
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    exact_max: int = 10,
) -> PairedDifference:
    """Paired comparison of ``stat`` over two runs' items (paired by position).

    The interval resamples clusters (the same draw for both runs); the
    p-value swaps whole clusters between the runs (all patterns up to
    ``exact_max`` clusters, else ``n_boot`` random ones).
    """
    _check(n_boot, level)
    if len(items_a) != len(items_b):
        raise ValueError(f"paired items differ in length: {len(items_a)} and {len(items_b)}")
    a, b = list(items_a), list(items_b)
    codes, n_clusters = cluster_codes(len(a), clusters)
    if n_clusters == 0:
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, 0, 0, level, "")
    observed = float(stat(a)) - float(stat(b))
    if math.isnan(observed):
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, len(a), n_clusters, level, "")
    members = _members(codes, n_clusters)
    rng = np.random.default_rng(seed)
    weights = _draws(rng, n_clusters, n_boot)
    replicates = np.array([float(stat(_resample(a, members, w))) - float(stat(_resample(b, members, w))) for w in weights])
    low, high = _percentiles(replicates, level)
    exact = n_clusters <= exact_max
    p, n_patterns = _cluster_swap_p(a, b, stat, members, exact, n_boot, rng)
    method = f"cluster swap, exact over {n_patterns} patterns" if exact else f"cluster swap, {n_boot} random patterns"
    return PairedDifference(observed, low, high, p, len(a), n_clusters, level, method)


def _cluster_swap_p(
    a: Sequence[Any], b: Sequence[Any], stat: Stat, members: list[list[int]], exact: bool, n_random: int, rng: np.random.Generator
) -> tuple[float, int]:
    """Two-sided p-value of ``stat(a) - stat(b)`` when whole clusters may swap runs.

    ``scipy.stats.permutation_test`` with the paired ``"samples"`` permutation
    swaps the entries of the two samples position by position; the samples are
    cluster ids (``c`` for run A's cluster ``c``, ``C + c`` for run B's), so a
    swap moves one whole cluster. A NaN difference counts as 0.
    """
    from scipy.stats import permutation_test

    n_clusters = len(members)
    if n_clusters == 1:  # scipy needs two observations; a swap only negates the difference
        return 1.0, 2

    def items(ids: NDArray[np.int64]) -> list[Any]:
        return [(a if c < n_clusters else b)[i] for c in ids for i in members[int(c) % n_clusters]]

    def statistic(x: NDArray[np.int64], y: NDArray[np.int64]) -> float:
        diff = float(stat(items(x))) - float(stat(items(y)))
        return 0.0 if math.isnan(diff) else abs(diff)

    ids = np.arange(n_clusters, dtype=np.int64)
    res = permutation_test(
        (ids, ids + n_clusters),
        statistic,
        permutation_type="samples",
        vectorized=False,
        n_resamples=np.inf if exact else n_random,
        alternative="greater",
        rng=rng,
    )
    return float(res.pvalue), int(np.asarray(res.null_distribution).shape[0])


def kendall_tau(x: Sequence[float] | NDArray[Any], y: Sequence[float] | NDArray[Any]) -> float:
    """Kendall's τ_b between two score lists over the same items (``scipy.stats.kendalltau``; NaN if undefined).

    >>> round(kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]), 6)
    0.666667
    >>> round(kendall_tau([1, 1, 2], [1, 2, 3]), 6)
    0.816497
    """
    from scipy.stats import kendalltau

    u = np.asarray(x, dtype=np.float64)
    v = np.asarray(y, dtype=np.float64)
    if u.shape != v.shape:
        raise ValueError(f"rankings differ in length: {u.shape[0]} and {v.shape[0]}")
    if u.shape[0] < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant ranking: τ_b is undefined, scipy warns and returns NaN
        return float(kendalltau(u, v, variant="b").statistic)


# -- rank analysis --------------------------------------------------------------


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


# -- multiple comparisons, order flips, τ_b intervals ------------------------------


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
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length: {x.shape[0]} and {y.shape[0]}")
    sums, counts, _ = _cluster_sums(x - y, clusters)
    if sums.shape[0] == 0:
        return math.nan, math.nan
    p, _ = _sign_flip_p(sums, sums.shape[0] <= exact_max, n_random, np.random.default_rng(seed))
    return float(sums.sum() / counts.sum()), p


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


# -- rankings compared across conditions ---------------------------------------------

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
    tests: dict[tuple[str, str, str], tuple[float, float]] = {}

    def test(label: str, x: str, y: str) -> tuple[float, float]:
        if (label, x, y) not in tests:
            da, db = conditions[label][x], conditions[label][y]
            shared = [s for s in da if s in db]
            clusters_xy = [clusters.get(s, s) for s in shared]
            tests[(label, x, y)] = sign_flip_test([da[s] for s in shared], [db[s] for s in shared], clusters_xy, seed=seed, n_random=n_permutations)
        return tests[(label, x, y)]

    flips: list[Flip] = []
    pairs: dict[tuple[str, str, str], int] = {}
    for axis, a, b in comparisons:
        ca, cb = conditions[a], conditions[b]
        shared = [e for e in _ranked(ca) if e in set(_ranked(cb))]
        pairs[(axis, a, b)] = len(shared) * (len(shared) - 1) // 2
        for x, y in itertools.combinations(sorted(shared), 2):
            ma, mb = _mean_of(ca[x]) - _mean_of(ca[y]), _mean_of(cb[x]) - _mean_of(cb[y])
            if ma * mb >= 0:
                continue
            better, worse = (x, y) if ma > 0 else (y, x)
            da, pa = test(a, better, worse)
            db, pb = test(b, better, worse)
            p = flip_p(da, pa, db, pb)
            if not math.isnan(p):
                flips.append(Flip(axis, a, b, better, worse, da, pa, db, pb, p))
    return taus, flips, pairs


def holm_flips(flips: Sequence[Flip], pairs: Mapping[tuple[str, str, str], int]) -> None:
    """Sets each flip's ``p_holm``: Holm over the pairs of its comparison (the pairs that are not candidate flips count with p = 1)."""
    for key, n_pairs in pairs.items():
        mine = [f for f in flips if (f.axis, f.a, f.b) == key]
        adjusted = holm([f.p for f in mine] + [1.0] * max(0, n_pairs - len(mine)))
        for f, p in zip(mine, adjusted, strict=False):
            f.p_holm = p
