"""Holm's adjustment, the sign-flip test without its interval, order flips, τ_b intervals and identical selections: hand-computed cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from frameselect._core.stats import flip_p, holm, paired_difference, sign_flip_test, tau_interval
from frameselect._studies.analysis import identical_selections, same_note


@pytest.mark.parametrize(
    ("pvalues", "adjusted"),
    [
        # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> made monotone: 0.02, 0.03, 0.06, 0.06
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        # 0.001 * 3, 0.02 * 2, 0.04 * 1 = 0.003, 0.04, 0.04
        ([0.04, 0.001, 0.02], [0.04, 0.003, 0.04]),
        # capped at 1: 0.5 * 2 = 1.0, then max(1.0, 0.6)
        ([0.6, 0.5], [1.0, 1.0]),
        # a NaN is not in the family (m = 2): 0.01 * 2, max(0.02, 0.011)
        ([0.011, math.nan, 0.01], [0.02, math.nan, 0.02]),
        ([0.03], [0.03]),
        ([], []),
    ],
)
def test_holm_step_down_by_hand(pvalues: list[float], adjusted: list[float]) -> None:
    got = holm(pvalues)
    assert len(got) == len(adjusted)
    for g, want in zip(got, adjusted, strict=True):
        assert (math.isnan(g) and math.isnan(want)) or g == pytest.approx(want, abs=1e-12)


def test_holm_rejects_what_the_step_down_procedure_rejects() -> None:
    """Holm at α: reject the i-th smallest while p_(i) <= α / (m - i + 1); stop at the first that fails."""
    rng = np.random.default_rng(5)
    for _ in range(50):
        p = list(rng.uniform(0, 0.05, size=6))
        alpha = 0.05
        order = sorted(range(6), key=lambda i: p[i])
        rejected = set()
        for rank, i in enumerate(order):
            if p[i] > alpha / (6 - rank):
                break
            rejected.add(i)
        assert {i for i, a in enumerate(holm(p)) if a <= alpha} == rejected


def test_sign_flip_test_by_enumeration_and_equal_to_paired_difference() -> None:
    a = [1, 1, 0, 1, 1, 0, 1, 1]
    b = [0, 1, 0, 0, 0, 1, 0, 1]
    clusters = ["v1", "v1", "v2", "v3", "v3", "v4", "v5", "v5"]
    sums = {c: sum(x - y for x, y, k in zip(a, b, clusters, strict=True) if k == c) for c in dict.fromkeys(clusters)}
    observed = sum(sums.values())
    extreme = sum(abs(sum(s * v for s, v in zip(signs, sums.values(), strict=True))) >= abs(observed) for signs in itertools.product([1, -1], repeat=len(sums)))
    diff, p = sign_flip_test(a, b, clusters)
    assert diff == pytest.approx(observed / len(a))
    assert p == pytest.approx(extreme / 2 ** len(sums))
    assert p == pytest.approx(paired_difference(a, b, clusters).p_value)
    assert sign_flip_test([1, 0], [1, 0]) == (0.0, 1.0)


def test_flip_p_needs_opposite_directions() -> None:
    assert flip_p(0.2, 0.01, -0.1, 0.04) == 0.04
    assert flip_p(-0.2, 0.03, 0.1, 0.002) == 0.03
    assert math.isnan(flip_p(0.2, 0.01, 0.1, 0.04))
    assert math.isnan(flip_p(0.0, 0.01, -0.1, 0.04))
    assert math.isnan(flip_p(math.nan, 0.01, -0.1, 0.04))


def _resampled_means(data: dict[str, dict[str, float]], clusters: dict[str, str], order: list[str], counts: np.ndarray, entries: list[str]) -> list[float]:
    """Entry means over a resample that repeats each cluster's samples ``counts[c]`` times (the transliteration)."""
    out = []
    for e in entries:
        vals = [v for sid, v in data[e].items() for _ in range(int(counts[order.index(clusters[sid])]))]
        out.append(sum(vals) / len(vals) if vals else math.nan)
    return out


def test_tau_interval_is_scipys_tau_on_the_same_cluster_resamples() -> None:
    rng = np.random.default_rng(3)
    videos = [f"v{i}" for i in range(6)]
    entries = ["uniform", "topk", "kcenter", "random"]
    ids_a = [f"a{i}" for i in range(18)]  # condition A: one kind of question, condition B: another, on the same videos
    ids_b = [f"b{i}" for i in range(12)]
    clusters = {sid: videos[i % 6] for i, sid in enumerate(ids_a)} | {sid: videos[i % 6] for i, sid in enumerate(ids_b)}
    a = {e: {sid: float(rng.random() < 0.3 + 0.15 * j) for sid in ids_a} for j, e in enumerate(entries)}
    b = {e: {sid: float(rng.random() < 0.8 - 0.15 * j) for sid in ids_b} for j, e in enumerate(entries)}
    res = tau_interval(a, b, clusters, n_boot=300, seed=7)
    means_a = [np.mean(list(a[e].values())) for e in entries]
    means_b = [np.mean(list(b[e].values())) for e in entries]
    assert res.tau == pytest.approx(kendalltau(means_a, means_b, variant="b").statistic)
    assert res.entries == 4 and res.clusters == 6
    # the same draws by hand: clusters in first-seen order (A's samples, then B's), multiplicities from one multinomial per resample
    order = list(dict.fromkeys(clusters[s] for s in ids_a + ids_b))
    draws = np.random.default_rng(7).multinomial(6, [1 / 6] * 6, size=300)
    taus = []
    for counts in draws:
        x = _resampled_means(a, clusters, order, counts, entries)
        y = _resampled_means(b, clusters, order, counts, entries)
        t = kendalltau(x, y, variant="b").statistic if len(set(x)) > 1 and len(set(y)) > 1 else math.nan
        taus.append(t)
    finite = [t for t in taus if not math.isnan(t)]
    assert (res.low, res.high) == pytest.approx(tuple(np.quantile(finite, [0.025, 0.975])))
    assert res.low <= res.tau <= res.high or math.isnan(res.tau)


def test_tau_interval_of_identical_rankings_and_too_few_entries() -> None:
    clusters = {f"s{i}": f"v{i}" for i in range(8)}
    data = {e: {f"s{i}": float(i < 2 + 2 * j) for i in range(8)} for j, e in enumerate("xyz")}
    res = tau_interval(data, data, clusters, n_boot=100)
    assert res.tau == pytest.approx(1.0) and res.high == pytest.approx(1.0)
    assert math.isnan(tau_interval({"x": data["x"]}, {"x": data["x"]}, clusters).tau)


def test_identical_selections_threshold_order_and_sets() -> None:
    base = {f"q{i}": (i, i + 10) for i in range(20)}
    nineteen = {**base, "q0": (3, 4)}  # 19/20 = 95 %: the same selection
    eighteen = {**base, "q0": (3, 4), "q1": (5, 6)}  # 18/20 = 90 %: not
    reordered = {sid: tuple(reversed(ix)) for sid, ix in base.items()}  # frame order does not matter
    got = identical_selections({"kcenter": eighteen, "fixed_fps": nineteen, "uniform": base, "multires": reordered}, prefer=["uniform"])
    assert got == {"fixed_fps": ("uniform", 19, 20), "multires": ("uniform", 20, 20)}
    # without a preference the first entry given is the representative
    assert identical_selections({"aks": base, "topk": base}) == {"topk": ("aks", 20, 20)}
    assert identical_selections({"aks": base, "topk": base}, prefer=["topk"]) == {"aks": ("topk", 20, 20)}
    # only shared questions count
    assert identical_selections({"a": {"q0": (1,)}, "b": {"q1": (1,)}}) == {}
    assert same_note("uniform", 81, 81) == "uniform (81/81)"


def test_multiway_bootstrap_weights_a_question_by_the_product_of_its_videos_multiplicities() -> None:
    from frameselect._core.stats import multiway_mean, multiway_weights

    groups = [("a", "b"), ("b", "c"), ("c",), ("a", "b", "c")]
    values = np.array([1.0, 0.0, 1.0, 0.5])
    weights, n_videos = multiway_weights(groups, 400, seed=9)
    draws = np.random.default_rng(9).multinomial(3, [1 / 3] * 3, size=400)  # videos in first-seen order a, b, c
    by_hand = np.stack([draws[:, 0] * draws[:, 1], draws[:, 1] * draws[:, 2], draws[:, 2], draws[:, 0] * draws[:, 1] * draws[:, 2]], axis=1)
    assert n_videos == 3 and np.array_equal(weights, by_hand)
    iv = multiway_mean(values, groups, n_boot=400, seed=9)
    with np.errstate(invalid="ignore"):
        reps = (by_hand @ values) / by_hand.sum(axis=1)
    reps = reps[np.isfinite(reps)]
    assert (iv.low, iv.high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    assert iv.estimate == pytest.approx(0.625) and iv.clusters == 3


def test_multiway_paired_p_value_never_below_what_an_exact_test_over_the_videos_could_give() -> None:
    from frameselect._core.stats import multiway_paired

    groups = [("a", "b"), ("b", "c"), ("a", "c")] * 4
    better = multiway_paired([1.0] * 12, [0.0] * 12, groups, n_boot=500)
    assert better.mean_diff == 1.0 and better.p_value == pytest.approx(2.0 ** (1 - 3))  # every resample is +1: the floor for 3 videos
    assert multiway_paired([1.0, 0.0] * 6, [1.0, 0.0] * 6, groups).p_value == 1.0
    many = [(f"v{i}", f"v{(i + 1) % 30}") for i in range(30)]
    strong = multiway_paired([1.0] * 30, [0.0] * 30, many, n_boot=999)
    assert strong.p_value == pytest.approx(1 / 1000)  # 30 videos: the floor 2^-29 is below 1 / (n_boot + 1)


def test_rank_analysis_inversions_survive_holm_only() -> None:
    """Three entries, 6 videos: each flip's p is 2/64 in both groups, below 0.05 alone; Holm over the 3 pairs: 3 x 2/64 > 0.05."""
    from frameselect._core.stats import RankGroup, rank_analysis

    def group(key: str, a: float, b: float, c: float) -> RankGroup:
        data = {name: {f"s{i}": v for i in range(6)} for name, v in (("A", a), ("B", b), ("C", c))}
        return RankGroup(("ds", "m", key), data)

    report = rank_analysis([group("x", 1.0, 0.0, 0.5), group("y", 0.0, 1.0, 0.5)], [("kind", 0, 1)], alpha=0.05)
    assert report.inversions == []
    loose = rank_analysis([group("x", 1.0, 0.0, 0.5), group("y", 0.0, 1.0, 0.5)], [("kind", 0, 1)], alpha=0.1)
    assert {(i.better, i.worse) for i in loose.inversions} == {("A", "B"), ("A", "C"), ("C", "B")}
    assert all(i.p_holm == pytest.approx(3 * 2 / 64) for i in loose.inversions)


def test_vectorised_tau_b_equals_scipys_row_by_row() -> None:
    from frameselect._core.stats._rankings import _taus

    rng = np.random.default_rng(2)
    va = rng.integers(0, 4, size=(300, 6)).astype(float) / 3  # many ties
    vb = rng.integers(0, 4, size=(300, 6)).astype(float) / 3
    va[0] = 0.5  # a constant row: undefined
    got = _taus(va, vb)
    for r in range(300):
        want = kendalltau(va[r], vb[r], variant="b").statistic if len(set(va[r])) > 1 and len(set(vb[r])) > 1 else math.nan
        assert (math.isnan(got[r]) and math.isnan(want)) or got[r] == pytest.approx(want, abs=1e-12)
