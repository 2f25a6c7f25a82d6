"""Resampling statistics: percentile bootstrap means and statistics, clustered; paired differences with sign-flip p-values; Kendall's tau (:mod:`frameselect._core.stats`)."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
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


def _sign_flip_ps(rows: Sequence[NDArray[np.float64]], exact: bool, n_random: int, seed: int) -> list[float]:
    """:func:`_sign_flip_p` of each row of cluster sums, every row with ``np.random.default_rng(seed)``: the same p-values, computed faster.

    Random patterns depend only on the generator and the number of clusters,
    not on the sums, so rows with the same number of clusters share one
    ``scipy.stats.permutation_test`` over a 2-D array (each row its own
    test, the same sign patterns as one call each). The patterns are drawn
    in batches, which bound memory and draw the same patterns.
    """
    out = [math.nan] * len(rows)
    groups: dict[int, list[int]] = {}
    for i, sums in enumerate(rows):
        if exact or sums.shape[0] == 1 or abs(float(sums.sum())) <= 1e-12 * max(1.0, float(np.abs(sums).max())):
            out[i] = _sign_flip_p(sums, exact, n_random, np.random.default_rng(seed))[0]
        else:
            groups.setdefault(int(sums.shape[0]), []).append(i)
    if groups:
        from scipy.stats import permutation_test

        for n, members in groups.items():
            batch = max(1, min(n_random, 4_000_000 // max(1, n * len(members))))  # about 64 MB of permuted sums a batch
            res = permutation_test(
                (np.stack([rows[i] for i in members]),),
                _abs_sum,
                permutation_type="samples",
                vectorized=True,
                n_resamples=n_random,
                alternative="greater",
                rng=np.random.default_rng(seed),
                axis=-1,
                batch=batch,
            )
            for i, pvalue in zip(members, np.atleast_1d(res.pvalue), strict=True):
                out[i] = float(pvalue)
    return out


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


# -- multiple comparisons, order flips, τ_b intervals ------------------------------


# -- rankings compared across conditions ---------------------------------------------
