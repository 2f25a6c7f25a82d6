"""Bootstrap intervals, paired tests, Kendall τ_b and rank analysis."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from frameselect._core.stats import (
    Interval,
    RankGroup,
    bootstrap,
    bootstrap_mean,
    format_interval,
    kendall_tau,
    paired_difference,
    paired_difference_stat,
    rank_analysis,
)


def test_bootstrap_mean_estimate_interval_and_seed() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    iv = bootstrap_mean(values, seed=3)
    assert iv.estimate == pytest.approx(0.7)
    assert iv.low <= 0.7 <= iv.high and iv.low < iv.high
    assert iv.n == 10 and iv.clusters == 10 and iv.level == 0.95
    assert bootstrap_mean(values, seed=3) == iv
    assert bootstrap_mean(values, seed=4) != iv
    assert bootstrap_mean(values, n_boot=2000, level=0.5, seed=3).high - bootstrap_mean(values, n_boot=2000, level=0.5, seed=3).low < iv.high - iv.low


def test_bootstrap_mean_is_the_percentile_of_cluster_resamples() -> None:
    """Transliteration: draw clusters with replacement, mean of the drawn items, 2.5/97.5 percentiles."""
    values = np.array([0.2, 0.4, 0.9, 0.1, 0.5, 0.7])
    clusters = ["a", "a", "b", "c", "c", "c"]
    iv = bootstrap_mean(values, clusters, n_boot=500, seed=11)
    rng = np.random.default_rng(11)
    members = {"a": [0, 1], "b": [2], "c": [3, 4, 5]}
    reps = []
    for counts in rng.multinomial(3, [1 / 3] * 3, size=500):
        drawn = [i for key, w in zip("abc", counts, strict=True) for _ in range(w) for i in members[key]]
        reps.append(values[drawn].mean())
    assert (iv.low, iv.high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    assert iv.clusters == 3 and iv.estimate == pytest.approx(values.mean())


def test_clusters_resample_whole_videos() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0]
    doubled = [v for v in values for _ in range(2)]
    videos = [i for i in range(5) for _ in range(2)]
    # two identical questions per video, resampled by video == the single questions resampled alone
    by_video, alone = bootstrap_mean(doubled, videos, seed=1), bootstrap_mean(values, seed=1)
    assert (by_video.estimate, by_video.low, by_video.high) == pytest.approx((alone.estimate, alone.low, alone.high))
    assert by_video.clusters == 5 and by_video.n == 10
    per_sample = bootstrap_mean(doubled, seed=1)
    per_video = bootstrap_mean(doubled, videos, seed=1)
    assert per_video.high - per_video.low > per_sample.high - per_sample.low  # clustering widens the interval


def test_nan_values_are_skipped_and_degenerate_cases() -> None:
    iv = bootstrap_mean([1.0, math.nan, 0.0, 1.0])
    assert iv.estimate == pytest.approx(2 / 3) and iv.n == 3
    assert math.isnan(bootstrap_mean([math.nan]).estimate)
    assert bootstrap_mean([0.5, 0.5, 0.5]) == Interval(0.5, 0.5, 0.5, 0.95, 3, 3)
    with pytest.raises(ValueError, match="cluster keys"):
        bootstrap_mean([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="level"):
        bootstrap_mean([1.0], level=95)


def test_generic_bootstrap_agrees_with_the_mean_path() -> None:
    values = [0.3, 0.9, 0.1, 0.4, 0.8, 0.2, 0.6]
    clusters = [0, 0, 1, 2, 2, 3, 4]
    fast = bootstrap_mean(values, clusters, seed=5)
    slow = bootstrap(values, lambda xs: float(np.mean(xs)), clusters, seed=5)
    assert (slow.estimate, slow.low, slow.high) == pytest.approx((fast.estimate, fast.low, fast.high))


def test_format_interval() -> None:
    assert format_interval(Interval(2 / 3, 0.5, 0.8333)) == "0.667 [0.50, 0.83]"
    assert format_interval(Interval(math.nan, math.nan, math.nan)) == "–"
    assert format_interval(Interval(0.1, -0.05, 0.25), signed=True) == "+0.100 [-0.05, 0.25]"
    assert str(Interval(12.0, 9.0, 12.0)) == "12.000 [9.00, 12.00]"


def test_paired_difference_exact_sign_flip_p_values() -> None:
    d = paired_difference([1, 1, 1, 1, 1], [0, 0, 0, 0, 0])
    assert d.mean_diff == 1.0 and d.p_value == pytest.approx(2 / 32)
    assert paired_difference([1] * 6, [0] * 6).p_value == pytest.approx(2 / 64)
    same = paired_difference([0.3, 0.5, 0.7], [0.3, 0.5, 0.7])
    assert same.mean_diff == 0.0 and same.p_value == 1.0
    mixed = paired_difference([1, 1, 0, 0], [0, 0, 0, 0])
    assert mixed.p_value == pytest.approx(0.5)  # |±1 ±1| >= 2 in 8 of 16 patterns
    # two clusters, cluster sums 2 and 1: |±2 ±1| >= 3 in 2 of 4 patterns
    clustered = paired_difference([1, 1, 1], [0, 0, 0], ["v1", "v1", "v2"])
    assert clustered.clusters == 2 and clustered.p_value == pytest.approx(0.5)
    # NaN pairs are left out
    assert paired_difference([1, math.nan, 1], [0, 0, 0]).n == 2


def test_paired_difference_p_value_against_brute_force() -> None:
    a = np.array([0.9, 0.4, 0.7, 0.8, 0.3, 0.95, 0.6])
    b = np.array([0.5, 0.5, 0.2, 0.6, 0.35, 0.4, 0.1])
    d = a - b
    extreme = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= abs(d.sum()) - 1e-12 for signs in itertools.product([1, -1], repeat=len(d)))
    res = paired_difference(a, b)
    assert res.p_value == pytest.approx(extreme / 2 ** len(d))
    assert res.mean_diff == pytest.approx(d.mean())
    assert res.low <= res.mean_diff <= res.high


def test_monte_carlo_sign_flip_beyond_exact_limit() -> None:
    res = paired_difference([1.0] * 20, [0.0] * 20, n_boot=999)
    assert "random" in res.method
    assert res.p_value == pytest.approx(1 / 1000, abs=2e-3)


def test_generic_paired_difference_agrees_with_the_mean_path() -> None:
    a = [0.9, 0.4, 0.7, 0.8, 0.3, 0.95]
    b = [0.5, 0.5, 0.2, 0.6, 0.35, 0.4]
    clusters = ["x", "x", "y", "z", "z", "w"]
    fast = paired_difference(a, b, clusters, seed=2)
    slow = paired_difference_stat(a, b, lambda xs: float(np.mean(xs)), clusters, seed=2)
    assert slow.mean_diff == pytest.approx(fast.mean_diff)
    assert slow.p_value == pytest.approx(fast.p_value)


TAU_CASES = [
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]),
    ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]),
    ([1, 2, 3, 4], [1, 3, 2, 4]),
    ([1, 1, 2, 3], [1, 2, 2, 3]),
    ([0.5, 0.5, 0.5, 0.9], [0.1, 0.3, 0.2, 0.4]),
    ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]),
]


@pytest.mark.parametrize(("x", "y"), TAU_CASES)
def test_kendall_tau_b_matches_scipy(x: list[float], y: list[float]) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.kendalltau(x, y, variant="b").statistic
    assert kendall_tau(x, y) == pytest.approx(expected)


def test_kendall_tau_hand_cases() -> None:
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    assert math.isnan(kendall_tau([1], [1]))


def _group(key: str, a: list[float], b: list[float], c: list[float] | None = None, higher: bool = True) -> RankGroup:
    data = {"A": {f"s{i}": v for i, v in enumerate(a)}, "B": {f"s{i}": v for i, v in enumerate(b)}}
    if c is not None:
        data["C"] = {f"s{i}": v for i, v in enumerate(c)}
    return RankGroup(("ds", "m", key), data, higher_is_better=higher)


def test_rank_analysis_finds_significant_inversions_only() -> None:
    groups = [
        _group("x", [1.0] * 8, [0.0] * 8, [0.5] * 8),  # A > C > B, A vs B significant (p = 2/256)
        _group("y", [0.0] * 8, [1.0] * 8, [0.5] * 8),  # B > C > A
        _group("z", [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5] * 3),  # B > C > A but only 3 samples (p = 0.25)
    ]
    report = rank_analysis(groups, [("kind", 0, 1), ("kind", 0, 2)], alpha=0.05)
    assert [r.order for r in report.rankings] == [("A", "C", "B"), ("B", "C", "A"), ("B", "C", "A")]
    assert [t.tau for t in report.taus] == [pytest.approx(-1.0), pytest.approx(-1.0)]
    flipped = {(inv.key_b[2], inv.better, inv.worse) for inv in report.inversions}
    assert flipped == {("y", "A", "B"), ("y", "A", "C"), ("y", "C", "B")}
    inv = next(i for i in report.inversions if (i.better, i.worse) == ("A", "B"))
    assert inv.in_a.mean_diff == 1.0 and inv.in_b.mean_diff == -1.0
    assert inv.in_a.p_value == pytest.approx(2 / 256) and inv.in_b.p_value == pytest.approx(2 / 256)


def test_rank_analysis_respects_lower_is_better_and_stats() -> None:
    lower = _group("cost", [0.1] * 6, [0.9] * 6, higher=False)
    higher = _group("acc", [0.1] * 6, [0.9] * 6)
    report = rank_analysis([lower, higher], [("metric", 0, 1)])
    assert report.rankings[0].order == ("A", "B") and report.rankings[1].order == ("B", "A")
    assert report.taus[0].tau == pytest.approx(-1.0)
    assert len(report.inversions) == 1
    median = RankGroup(
        ("ds", "median", "all"), {"A": {"1": 1.0, "2": 5.0, "3": 2.0}, "B": {"1": 0.0, "2": 0.0, "3": 9.0}}, stat=lambda xs: float(np.median(xs))
    )
    assert rank_analysis([median], []).rankings[0].values == {"A": 2.0, "B": 0.0}


def test_cluster_bootstrap_agrees_with_scipys_percentile_bootstrap_over_clusters() -> None:
    """The glue draws cluster multiplicities; scipy.stats.bootstrap resampling cluster ids gives the same interval up to Monte Carlo error."""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    clusters = [int(c) for c in rng.integers(0, 12, size=40)]
    values = rng.random(40) ** 2
    ours = bootstrap_mean(values, clusters, n_boot=20000, seed=1)
    codes = sorted(set(clusters))
    sums = np.array([values[[c == k for c in clusters]].sum() for k in codes])
    counts = np.array([sum(c == k for c in clusters) for k in codes], dtype=float)
    theirs = scipy_stats.bootstrap(
        (np.arange(len(codes)),),
        lambda idx, axis: sums[idx].sum(axis=axis) / counts[idx].sum(axis=axis),
        method="percentile",
        n_resamples=20000,
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert ours.low == pytest.approx(theirs.low, abs=0.01) and ours.high == pytest.approx(theirs.high, abs=0.01)
    assert ours.estimate == pytest.approx(values.mean())


def test_cluster_swap_p_value_against_brute_force() -> None:
    """The general-statistic test swaps whole clusters: every one of the 2^C swap patterns, counted by hand."""
    a = [0.9, 0.4, 0.7, 0.8, 0.3, 0.95, 0.2]
    b = [0.5, 0.5, 0.2, 0.6, 0.35, 0.4, 0.6]
    clusters = ["x", "x", "y", "z", "z", "w", "v"]
    members = {k: [i for i, c in enumerate(clusters) if c == k] for k in dict.fromkeys(clusters)}
    observed = float(np.median(a) - np.median(b))
    extreme = 0
    for swaps in itertools.product([False, True], repeat=len(members)):
        first, second = list(a), list(b)
        for swap, idx in zip(swaps, members.values(), strict=True):
            for i in idx if swap else ():
                first[i], second[i] = b[i], a[i]
        extreme += abs(float(np.median(first) - np.median(second))) >= abs(observed) - 1e-12
    res = paired_difference_stat(a, b, lambda xs: float(np.median(xs)), clusters)
    assert res.mean_diff == pytest.approx(observed)
    assert res.p_value == pytest.approx(extreme / 2 ** len(members)) and res.method == "cluster swap, exact over 32 patterns"


def test_sign_flip_tests_give_each_pairs_own_test() -> None:
    # many pairs at once: the same (difference, p) as one sign_flip_test each, on the random path
    # (more clusters than the exact limit) and the exact one, zero totals and clusters of several items included
    from frameselect._core.stats import sign_flip_test, sign_flip_tests
    from frameselect._core.stats._resampling import _cluster_sums, _sign_flip_p

    rng = np.random.default_rng(7)
    cases = []
    for i in range(40):
        n = 20 if i % 4 else 9  # 20 clusters: random patterns; 9: exact
        a = rng.integers(0, 2, 2 * n).astype(float)
        b = rng.integers(0, 2, 2 * n).astype(float) if i % 7 else a.copy()  # every seventh: a zero total
        cases.append((a, b, [j // 2 for j in range(2 * n)]))
    together = sign_flip_tests(cases, seed=3, n_random=2000)
    alone = [sign_flip_test(a, b, c, seed=3, n_random=2000) for a, b, c in cases]
    assert together == alone
    # and each p is scipy's own test of that pair alone (one permutation_test per pair, as before the batching)
    for (a, b, c), (diff, p) in zip(cases, together, strict=True):
        sums, counts, _ = _cluster_sums(np.asarray(a) - np.asarray(b), c)
        assert diff == float(sums.sum() / counts.sum())
        assert p == _sign_flip_p(sums, sums.shape[0] <= 12, 2000, np.random.default_rng(3))[0]
    assert len({p for _, p in alone}) > 10  # the p-values differ from pair to pair: the comparison is not of constants
    with pytest.raises(ValueError, match="differ in length"):
        sign_flip_tests([([1.0, 0.0], [1.0], None)])
