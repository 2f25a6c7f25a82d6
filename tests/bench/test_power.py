"""The detectable-difference line: hand-computed cases of the formula and of the run's SD of per-video differences."""

from __future__ import annotations

import math

import pytest

from frameselect._studies.bench.power import detectable_difference, pair_sds, run_detectable_difference


def _t2(p: float) -> float:
    """Student's t quantile with 2 degrees of freedom, in closed form: (2p - 1) / sqrt(2 p (1 - p))."""
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


def test_detectable_difference_by_hand() -> None:
    # 3 videos (2 df): (t_.975 + t_.8) * sd / sqrt(3), quantiles in closed form: 4.3027 + 1.0607
    assert _t2(0.975) == pytest.approx(4.302653, abs=1e-6) and _t2(0.8) == pytest.approx(1.060660, abs=1e-6)
    assert detectable_difference(1.0, 3) == pytest.approx((_t2(0.975) + _t2(0.8)) / math.sqrt(3), rel=1e-9)
    # Holm over m = 10 pairs: the strictest step tests at 0.05 / 10, two-sided: t_(1 - 0.0025)
    assert detectable_difference(0.5, 3, 10) == pytest.approx((_t2(1 - 0.0025) + _t2(0.8)) * 0.5 / math.sqrt(3), rel=1e-9)
    # 25 videos, from a printed t table: t_.975,24 = 2.0639, t_.8,24 = 0.8569 -> 2.9208 / 5
    assert detectable_difference(1.0, 25) == pytest.approx(0.58416, abs=1e-4)
    # more videos detect smaller differences; more comparisons need larger ones
    assert detectable_difference(1.0, 32, 378) < detectable_difference(1.0, 9, 378)
    assert detectable_difference(1.0, 32, 378) > detectable_difference(1.0, 32, 1)
    with pytest.raises(ValueError, match="2 clusters"):
        detectable_difference(1.0, 1)


def test_run_sd_is_the_median_over_pairs_of_per_video_differences() -> None:
    by_video = {"a": {"v1": 1.0, "v2": 0.0, "v3": 1.0}, "b": {"v1": 0.0, "v2": 0.0, "v3": 1.0}, "c": {"v1": 1.0, "v2": 0.0, "v3": 1.0}}
    # a - b = (1, 0, 0): sd sqrt(1/3); a - c = (0, 0, 0): 0; b - c = (-1, 0, 0): sqrt(1/3)
    assert pair_sds(by_video) == pytest.approx([math.sqrt(1 / 3), 0.0, math.sqrt(1 / 3)])
    found = run_detectable_difference(by_video)
    assert found is not None and (found.n_videos, found.m) == (3, 3)
    assert found.sd == pytest.approx(math.sqrt(1 / 3))
    assert found.delta == pytest.approx((_t2(1 - 0.05 / 3 / 2) + _t2(0.8)) * math.sqrt(1 / 3) / math.sqrt(3), rel=1e-9)
    assert "detectable difference: " in found.line("mc_accuracy", 8, "label_ocr_reader") and "/ 3 pairs" in found.line("mc_accuracy", 8, "x")
    assert run_detectable_difference({"a": {"v1": 1.0, "v2": 0.0}}) is None  # one selector: no pair


def test_the_family_in_force_sets_the_level() -> None:
    """The bench passes the main tables' Holm family: the level is alpha / family, not alpha / pairs."""
    by_video = {"a": {"v1": 1.0, "v2": 0.0, "v3": 1.0}, "b": {"v1": 0.0, "v2": 0.0, "v3": 1.0}, "c": {"v1": 1.0, "v2": 0.0, "v3": 1.0}}
    found = run_detectable_difference(by_video, family=10)
    assert found is not None and found.m == 10
    assert found.delta == pytest.approx((_t2(1 - 0.05 / 10 / 2) + _t2(0.8)) * math.sqrt(1 / 3) / math.sqrt(3), rel=1e-9)
    assert "/ 10 comparisons the main tables print" in found.line("mc_accuracy", 8, "x")
    assert found.delta > run_detectable_difference(by_video).delta  # type: ignore[union-attr]
