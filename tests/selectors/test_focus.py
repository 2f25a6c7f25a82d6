"""FOCUS: hand-worked cases and properties.

Agreement with the reference code itself (NUS-HPC-AI-Lab/FOCUS, ``FOCUS.select_keyframes``)
on seeded inputs is in ``test_focus_reference.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.focus import FOCUS, focus_plan, native_rate
from frameselect.types import CandidatePool, Features


def pool_of(n: int, fps: float = 1.0) -> CandidatePool:
    return CandidatePool(video_id="v", timestamps=np.arange(n) / fps, frame_indices=np.arange(n), duration=n / fps)


def run(selector: FOCUS, scores: np.ndarray, k: int, seed: int, fps: float = 1.0) -> list[int]:
    pool = pool_of(len(scores), fps)
    return list(selector.select(pool, None, k, Features(scores=scores), rng=np.random.default_rng(seed)).indices)


def test_hand_worked_one_frame_arms() -> None:
    # 8 frames at 1 fps: 8 arms of one frame, every frame probed, no fine probe left (a window of 3 frames,
    # all probed). The UCB orders the arms as their single scores: 1, 3, 5, 7 are the top max(4, ceil(8/4))
    # arms. top_ratio: round(0.2 * 4) = 1 -> frame 1; the other 3 go one each to the first three top arms:
    # arm 1 has nothing left, 3 and 5 give themselves. The reference returns [1, 3, 5]; the default fills
    # the shortfall with the most relevant frame left, 7.
    scores = np.array([0.1, 0.9, 0.3, 0.8, 0.2, 0.7, 0.4, 0.6])
    for seed in range(5):
        assert run(FOCUS(reference_exact=True), scores, 4, seed) == [1, 3, 5]
        assert run(FOCUS(), scores, 4, seed) == [1, 3, 5, 7]


def test_final_arms_by_ucb_as_the_code_or_by_mean_as_the_paper() -> None:
    # 16 frames at 1 fps in two arms of 8 (min_coarse_segments=2). Arm A (0-7) scores 0.6 everywhere; arm B
    # (8-15) scores 1.0 at its centre 11 and 0 elsewhere, so its three probes give mean 1/3, variance 2/9:
    # UCB(B) = 1/3 + sqrt(2 ln 6 (2/9) / 3) + ln 6 > UCB(A) = 0.6 + sqrt(2 ln 6 1e-6 / 3) + ln 6, while
    # mean(A) > mean(B). With one final arm (final_min_arms=1) and k=2 (no top-ratio frame), both frames
    # come from the UCB's arm B in the code and from the mean's arm A in the paper's rule.
    scores = np.r_[np.full(8, 0.6), np.zeros(8)]
    scores[11] = 1.0
    base = FOCUS(min_coarse_segments=2, final_min_arms=1, normalize=False)
    for seed in range(4):
        assert all(8 <= i <= 15 for i in run(FOCUS(min_coarse_segments=2, final_min_arms=1, reference_exact=True), scores, 2, seed))
        assert all(8 <= i <= 15 for i in run(base, scores, 2, seed))
        by_mean = run(FOCUS(min_coarse_segments=2, final_min_arms=1, normalize=False, final_rank="mean"), scores, 2, seed)
        assert len(by_mean) == 2 and all(0 <= i <= 7 for i in by_mean)


def test_plan_of_a_30_fps_video() -> None:
    # 10 minutes at 30 fps, k = 32: ceil(600 / 16) = 38 arms of floor(18000 / 38) = 473 frames; fine stride
    # 30 frames; half window round(600 / 38 / 2 * 30) = 237 frames; gap min(0.25 * 600 / 32, 1.0) s = 30 frames
    plan = focus_plan(18000, 600.0, 32, FOCUS())
    assert (plan.fps, plan.desired_coarse, plan.coarse_stride, plan.fine_stride, plan.region_half_window, plan.gap_frames) == (30.0, 38, 473, 30, 237, 30)
    # a dense budget drops the gap: 20 s / 128 = 0.156 s <= 0.2 s
    assert focus_plan(600, 20.0, 128, FOCUS()).gap_frames == 0


def test_native_rate_snaps_float_noise_only() -> None:
    assert native_rate(601, round(601 / 30, 9)) == 30.0
    assert native_rate(30000, 30000 * 1001 / 30000) == pytest.approx(30000 / 1001, rel=1e-12)
    assert native_rate(30000, 30000 * 1001 / 30000) != round(30000 / 1001, 6)


def test_same_generator_seed_reproduces_and_seeds_differ() -> None:
    scores = np.random.default_rng(0).random(900)
    for selector in (FOCUS(), FOCUS(reference_exact=True)):
        first = run(selector, scores, 32, seed=11)
        assert run(selector, scores, 32, seed=11) == first
        assert len({tuple(run(selector, scores, 32, seed=s)) for s in range(6)}) > 1
    by_seed = FOCUS().select(pool_of(900), None, 32, Features(scores=scores), seed=11).indices
    assert list(by_seed) == run(FOCUS(), scores, 32, seed=11)  # seed=s is default_rng(s)


def test_the_ucb_finds_the_relevant_stretch() -> None:
    # 20 minutes at 1 fps: 75 arms of 16 frames, relevant only in [600, 640) (arms 37-39). Top ratio takes
    # round(0.2 * 16) = 3 probed frames, all in the stretch; the stretch's arms lead the UCB, so the final
    # draw adds more there.
    scores = np.full(1200, 0.1) + 0.01 * np.random.default_rng(1).random(1200)
    scores[600:640] = 0.9
    for seed in range(4):
        assert sum(600 <= i < 640 for i in run(FOCUS(), scores, 16, seed)) >= 5


def test_irregular_pool_uses_timestamps_for_arms() -> None:
    rng = np.random.default_rng(2)
    ts = np.cumsum(rng.uniform(0.25, 1.5, size=300))
    pool = CandidatePool(video_id="v", timestamps=ts, frame_indices=np.arange(300), duration=float(ts[-1] + 1.0))
    sel = FOCUS().select(pool, None, 24, Features(scores=rng.random(300)), rng=np.random.default_rng(0))
    assert len(sel.indices) == 24 and len(set(sel.indices)) == 24 and list(sel.indices) == sorted(sel.indices)


def test_non_finite_scores_raise() -> None:
    scores = np.linspace(0, 1, 50)
    scores[10] = np.nan
    with pytest.raises(SelectionError):
        FOCUS().select(pool_of(50), None, 8, Features(scores=scores))


def test_registered_and_conformant() -> None:
    assert selectors.get("focus") is FOCUS
    testing = pytest.importorskip("frameselect.testing")
    testing.check_selector("focus")
    testing.check_selector("focus", params={"interpolation_method": "linear"})
    testing.check_selector("focus", params={"final_rank": "mean"})
    testing.check_selector("focus", params={"reference_exact": True})


def test_bad_hyper_parameters_raise() -> None:
    bad_ones = (
        FOCUS(interpolation_method="cubic"),
        FOCUS(temperature=0.0),
        FOCUS(final_rank="median"),
        FOCUS(reference_exact=True, final_rank="mean"),
    )
    for bad in bad_ones:
        with pytest.raises(SelectionError):
            bad.select(pool_of(50), None, 8, Features(scores=np.linspace(0, 1, 50)))
