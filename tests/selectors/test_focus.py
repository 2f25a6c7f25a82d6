"""FOCUS against a direct re-statement of NUS-HPC-AI-Lab/FOCUS (``select_keyframe.py`` + ``focus.py``).

The re-statement follows the released code step by step, drawing from the same
numpy Generator. The default selector is the released code (plus the shared fill
where it returns fewer than k frames); ``keep_arms`` / ``score_fine`` switch on the
two repairs the selector offers (``keep_arm_scores``: arms keep their coarse
scores; ``score_fine``: fine samples are scored).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.base import fill_to_k
from frameselect.selectors.focus import FOCUS
from frameselect.types import CandidatePool, Features

ARGS = dict(
    coarse_every_sec=16.0,
    fine_every_sec=1.0,
    zoom_ratio=0.25,
    min_coarse_segments=8,
    min_zoom_segments=4,
    region_half_window_sec=None,
    extra_samples_per_region=2,
    min_variance_threshold=1e-6,
    fine_uniform_ratio=0.5,
    interpolation_method="nearest",
    final_min_arms=4,
    final_max_arms=32,
    top_ratio=0.2,
    temperature=0.06,
    min_gap_sec=1.0,
    disable_gap_below_sec=0.2,
    gap_ratio_of_avg=0.25,
)


# -- focus.py, restated -------------------------------------------------------------------------


def setup_arms(total_frames, coarse_stride):  # type: ignore[no-untyped-def]
    num_regions = max(1, total_frames // coarse_stride)
    region_size = max(1, total_frames // num_regions)
    arms = []
    for r in range(num_regions):
        start, end = r * region_size, min((r + 1) * region_size, total_frames)
        if end > start:
            arms.append(dict(start=start, end=end - 1, samples=0, mean_sim=0.0, variance=0.0, focus_score=0.0, sampled_indices=[], sampled_scores=[]))
    return arms


def coarse_sampling_in_arms(arms, extra, rng):  # type: ignore[no-untyped-def]
    out = []
    for arm in arms:
        center = (arm["start"] + arm["end"]) // 2
        sampled = [center]
        available = list(range(arm["start"], arm["end"] + 1))
        available.remove(center)
        if available:
            sampled.extend(rng.choice(available, size=min(extra, len(available)), replace=False).tolist())
        arm["sampled_indices"] = sampled
        out.extend(sampled)
    return out


def update_arms_with_scores(arms, indices, sims):  # type: ignore[no-untyped-def]
    idx_to_score = dict(zip(indices, sims, strict=True))
    for arm in arms:
        for idx in arm["sampled_indices"]:
            if idx in idx_to_score and idx not in [s[0] for s in arm["sampled_scores"]]:
                arm["sampled_scores"].append((idx, idx_to_score[idx]))
        if arm["sampled_scores"]:
            values = [s for _, s in arm["sampled_scores"]]
            arm["samples"] = len(values)
            arm["mean_sim"] = float(np.mean(values))
            arm["variance"] = float(np.var(values)) if len(values) > 1 else 0.0


def update_focus_scores(arms, min_var):  # type: ignore[no-untyped-def]
    total = sum(a["samples"] for a in arms)
    for arm in arms:
        n_i, score = arm["samples"], arm["mean_sim"]
        var = max(arm["variance"], min_var)
        if total > 1 and n_i > 0:
            score += math.sqrt(max(0.0, 2 * math.log(total) * var / n_i))
            score += 3 * math.log(total) / n_i
        arm["focus_score"] = score


def fine_sampling_in_arms(selected, total_frames, fine_stride, half, coarse_set, uniform_ratio, rng):  # type: ignore[no-untyped-def]
    fine = set()
    for arm in selected:
        center = (arm["start"] + arm["end"]) // 2
        start, end = max(0, center - half), min(total_frames - 1, center + half)
        window = end - start + 1
        required = max(1, window // fine_stride)
        n_uniform = int(round(required * uniform_ratio))
        n_random = required - n_uniform
        if n_uniform > 0:
            if window <= n_uniform:
                c = (start + end) // 2
                if c not in coarse_set and c not in fine:
                    fine.add(c)
            else:
                interval = window / n_uniform
                for i in range(n_uniform):
                    u = min(start + int(i * interval + interval / 2), end)
                    if u not in coarse_set and u not in fine:
                        fine.add(u)
        if n_random > 0:
            available = [i for i in range(start, end + 1) if i not in coarse_set and i not in fine]
            if available:
                for idx in rng.choice(available, size=min(n_random, len(available)), replace=False):
                    fine.add(int(idx))
    return sorted(fine)


def estimate_nearest(sampled_idx, sampled_scores, start, end):  # type: ignore[no-untyped-def]
    if not sampled_idx:
        return {}
    xs, ys = np.array(sampled_idx, dtype=float), np.array(sampled_scores, dtype=float)
    out = {}
    for c in range(start, end + 1):
        out[c] = float(np.clip(ys[np.argmin(np.abs(xs - c))], 0.0, 1.0))
    return out


def sample_remaining(arms, remaining, selected, min_gap_sec, fps, temperature, zoom_ratio, rng, min_arms, max_arms):  # type: ignore[no-untyped-def]
    gap = int(round(min_gap_sec * fps)) if min_gap_sec > 0 else 0

    def respects_gap(c, chosen):  # type: ignore[no-untyped-def]
        return gap <= 0 or all(abs(c - f) >= gap for f in chosen)

    s = int(np.ceil(len(arms) * max(0.0, min(1.0, float(zoom_ratio)))))
    s = min(max(min_arms, s), max_arms, len(arms))
    top = sorted(list(enumerate(arms)), key=lambda x: x[1]["focus_score"], reverse=True)[:s]
    need = [remaining // s + (1 if i < remaining % s else 0) for i in range(s)]
    new, current = [], set(selected)
    for rank, (_, arm) in enumerate(top):
        if need[rank] == 0:
            continue
        available = [c for c in range(arm["start"], arm["end"] + 1) if c not in current]
        if not available:
            continue
        est = estimate_nearest([i for i, _ in arm["sampled_scores"]], [v for _, v in arm["sampled_scores"]], arm["start"], arm["end"])
        scored = [(c, est[c]) for c in available if c in est and (gap == 0 or respects_gap(c, current))]
        if not scored:
            scored = [(c, est[c]) for c in available if c in est]
        if scored:
            cands = [c for c, _ in scored]
            values = np.array([v for _, v in scored], dtype=np.float64)
            values = (values - values.min()) / (values.max() - values.min()) if values.max() > values.min() else np.ones_like(values)
            logits = values / max(1e-12, temperature)
            probs = np.exp(logits - logits.max())
            probs = probs / probs.sum()
            for pos in rng.choice(len(cands), size=min(need[rank], len(cands)), p=probs, replace=False):
                new.append(int(cands[pos]))
                current.add(int(cands[pos]))
        else:
            use = available
            if gap > 0:
                use = [c for c in available if respects_gap(c, current)] or available
            for idx in rng.choice(use, size=min(need[rank], len(use)), replace=False):
                new.append(int(idx))
                current.add(int(idx))
    return new


def ref_focus(scores, fps, k, rng, keep_arms=False, score_fine=False, a=ARGS):  # type: ignore[no-untyped-def]
    """process_single_video + run_focus_algorithm."""
    total = len(scores)
    duration = float(total) / max(1.0, fps)
    avg = duration / max(1, k)
    gap_sec = 0.0 if avg <= a["disable_gap_below_sec"] else min(a["gap_ratio_of_avg"] * avg, a["min_gap_sec"])
    desired = max(a["min_coarse_segments"], int(np.ceil(duration / max(1e-6, a["coarse_every_sec"]))))
    stride = max(1, int(np.floor(total / desired)))
    arms = setup_arms(total, stride)
    coarse = coarse_sampling_in_arms(arms, a["extra_samples_per_region"], rng)
    coarse_sims = [float(scores[i]) for i in coarse]
    fine_stride = min(max(1, int(round(a["fine_every_sec"] * fps))), stride)
    half = max(1, int(round(max(1.0 / fps, max(1e-6, duration / max(1, desired)) / 2.0) * fps)))
    # run_focus_algorithm
    if not keep_arms:
        arms = setup_arms(total, stride)  # the released code starts again from fresh arms
    update_arms_with_scores(arms, coarse, coarse_sims)
    update_focus_scores(arms, a["min_variance_threshold"])
    zoom = min(max(a["min_zoom_segments"], int(np.ceil(len(arms) * a["zoom_ratio"]))), len(arms))
    promising = sorted(arms, key=lambda x: x["focus_score"], reverse=True)[:zoom]
    fine = fine_sampling_in_arms(promising, total, fine_stride, half, set(coarse), a["fine_uniform_ratio"], rng)
    known = dict(zip(coarse, coarse_sims, strict=True))
    if score_fine:
        known.update({i: float(scores[i]) for i in fine})
    k_top = int(round(a["top_ratio"] * min(k, len(known))))
    selected = [i for i, _ in sorted(known.items(), key=lambda x: x[1], reverse=True)[:k_top]]
    remaining = max(0, k - len(selected))
    if remaining > 0:
        selected += sample_remaining(arms, remaining, selected, gap_sec, fps, a["temperature"], a["zoom_ratio"], rng, a["final_min_arms"], a["final_max_arms"])
    return sorted(dict.fromkeys(selected))[:k]


# -- tests --------------------------------------------------------------------------------------

REPAIRED = FOCUS(keep_arm_scores=True, score_fine=True)


def pool_of(n: int, fps: float = 1.0) -> CandidatePool:
    return CandidatePool(video_id="v", timestamps=np.arange(n) / fps, frame_indices=np.arange(n), duration=n / fps)


def run(selector: FOCUS, scores: np.ndarray, k: int, seed: int, fps: float = 1.0) -> list[int]:
    pool = pool_of(len(scores), fps)
    return list(selector.select(pool, None, k, Features(scores=scores), rng=np.random.default_rng(seed)).indices)


# (n, fps, k); in the last two the released code returns fewer than k frames (arms smaller than their share)
CASES = [(40, 1.0, 8), (100, 1.0, 16), (333, 2.0, 32), (600, 1.0, 32), (1200, 4.0, 64), (150, 1.0, 4), (20, 1.0, 16), (48, 2.0, 30)]


@pytest.mark.parametrize(("n", "fps", "k"), CASES)
def test_reference_exact_matches_the_released_code_draw_for_draw(n: int, fps: float, k: int) -> None:
    scores = np.random.default_rng(n).random(n)
    for seed in range(3):
        want = ref_focus(scores, fps, k, np.random.default_rng(seed))
        assert run(FOCUS(reference_exact=True, normalize=False), scores, k, seed, fps) == want
        assert run(FOCUS(reference_exact=True), scores, k, seed, fps) == want


@pytest.mark.parametrize(("n", "fps", "k"), CASES)
def test_default_is_the_released_code_filled_to_k(n: int, fps: float, k: int) -> None:
    scores = np.random.default_rng(n + 1).random(n) ** 3
    for seed in range(3):
        released = ref_focus(scores, fps, k, np.random.default_rng(seed))
        want = fill_to_k(released, k, n, priority=scores)
        assert run(FOCUS(), scores, k, seed, fps) == want
        assert run(FOCUS(normalize=False), scores, k, seed, fps) == want
        # without scores in the arms, nothing reads interpolated scores or the variance floor
        assert run(FOCUS(interpolation_method="uniform", temperature=1.0, min_variance_threshold=0.5), scores, k, seed, fps) == want


def test_the_cases_cover_a_released_shortfall_and_a_full_selection() -> None:
    short = [len(ref_focus(np.random.default_rng(n + 1).random(n) ** 3, fps, k, np.random.default_rng(0))) < min(k, n) for n, fps, k in CASES]
    assert any(short) and not all(short)


@pytest.mark.parametrize(("n", "fps", "k"), CASES)
def test_repairs_match_the_restatement_with_the_same_repairs(n: int, fps: float, k: int) -> None:
    scores = np.random.default_rng(n + 2).random(n) ** 3
    variants = [(REPAIRED, True, True), (FOCUS(keep_arm_scores=True), True, False), (FOCUS(score_fine=True), False, True)]
    for seed in range(2):
        for selector, keep_arms, score_fine in variants:
            released = ref_focus(scores, fps, k, np.random.default_rng(seed), keep_arms=keep_arms, score_fine=score_fine)
            assert run(dataclasses.replace(selector, normalize=False), scores, k, seed, fps) == fill_to_k(released, k, n, priority=scores)


def test_hand_worked_one_frame_arms() -> None:
    # 8 frames at 1 fps: 8 arms of one frame, every frame probed (no random draw decides anything).
    # top_ratio: round(0.2 * 4) = 1 -> frame 1 (0.9). The other 3 go one each to the first three of the top
    # max(4, ceil(8 * .25)) = 4 arms.
    scores = np.array([0.1, 0.9, 0.3, 0.8, 0.2, 0.7, 0.4, 0.6])
    for seed in range(5):
        # released: all UCBs 0, so the "top" arms are the first four in time -> 0, (1 taken), 2 = [0, 1, 2];
        # reference_exact returns that, the default fills the shortfall with the most relevant frame left, 3
        assert ref_focus(scores, 1.0, 4, np.random.default_rng(seed)) == [0, 1, 2]
        assert run(FOCUS(normalize=False, reference_exact=True), scores, 4, seed) == [0, 1, 2]
        assert run(FOCUS(), scores, 4, seed) == [0, 1, 2, 3]
        # repaired: by UCB (= by score) frames 1 (taken), 3, 5 -> [1, 3, 5]; the fill adds 7
        assert run(FOCUS(normalize=False, keep_arm_scores=True), scores, 4, seed) == [1, 3, 5, 7]
        assert run(REPAIRED, scores, 4, seed) == [1, 3, 5, 7]


def test_same_generator_seed_reproduces_and_seeds_differ() -> None:
    scores = np.random.default_rng(0).random(900)
    for selector in (FOCUS(), REPAIRED, FOCUS(reference_exact=True)):
        first = run(selector, scores, 32, seed=11)
        assert run(selector, scores, 32, seed=11) == first
        assert len({tuple(run(selector, scores, 32, seed=s)) for s in range(6)}) > 1
    by_seed = FOCUS().select(pool_of(900), None, 32, Features(scores=scores), seed=11).indices
    assert by_seed == FOCUS().select(pool_of(900), None, 32, Features(scores=scores), seed=11).indices
    assert list(by_seed) == run(FOCUS(), scores, 32, seed=11)  # seed=s is default_rng(s)


def test_the_repaired_ucb_finds_the_relevant_stretch_the_released_code_misses() -> None:
    # 20 minutes at 1 fps: 75 arms of 16 frames, relevant only in [600, 640) (arms 37-39). Top ratio takes
    # round(0.2 * 16) = 3 probed frames (all in the stretch); the other 13 go one each to the 13 best of the
    # top 19 arms. In the released code (the default) every UCB is 0, so the 13 go to the first 13 arms in
    # time (frames < 13 * 16 = 208); with the repaired UCB the stretch's arms lead.
    scores = np.full(1200, 0.1) + 0.01 * np.random.default_rng(1).random(1200)
    scores[600:640] = 0.9
    for seed in range(4):
        released = run(FOCUS(), scores, 16, seed)
        assert released == run(FOCUS(reference_exact=True), scores, 16, seed)
        assert sum(600 <= i < 640 for i in released) == 3
        assert all(i < 208 for i in released if not 600 <= i < 640)
        for repaired in (REPAIRED, FOCUS(keep_arm_scores=True)):
            assert sum(600 <= i < 640 for i in run(repaired, scores, 16, seed)) >= 5


def test_irregular_pool_uses_timestamps_for_arms() -> None:
    rng = np.random.default_rng(2)
    ts = np.cumsum(rng.uniform(0.25, 1.5, size=300))
    pool = CandidatePool(video_id="v", timestamps=ts, frame_indices=np.arange(300), duration=float(ts[-1] + 1.0))
    for selector in (FOCUS(), REPAIRED):
        sel = selector.select(pool, None, 24, Features(scores=rng.random(300)), rng=np.random.default_rng(0))
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
    testing.check_selector("focus", params={"keep_arm_scores": True, "score_fine": True})
    testing.check_selector("focus", params={"keep_arm_scores": True, "interpolation_method": "linear"})
    testing.check_selector("focus", params={"reference_exact": True})


def test_bad_hyper_parameters_raise() -> None:
    bad_ones = (
        FOCUS(interpolation_method="cubic"),
        FOCUS(temperature=0.0),
        FOCUS(reference_exact=True, keep_arm_scores=True),
        FOCUS(reference_exact=True, score_fine=True),
    )
    for bad in bad_ones:
        with pytest.raises(SelectionError):
            bad.select(pool_of(50), None, 8, Features(scores=np.linspace(0, 1, 50)))
