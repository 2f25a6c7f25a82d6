"""FOCUS: Frame-Optimistic Confidence Upper-bound Selection.

"FOCUS: Efficient Keyframe Selection for Long Video Understanding", ICLR
2026. Reference code: github.com/NUS-HPC-AI-Lab/FOCUS at commit e28a555
("focus warpup"): ``focus.py`` (class ``FOCUS``, method ``select_keyframes``
and the stages it calls) driven by ``select_keyframe.py`` (``ray_worker``'s
adaptive minimum gap, command-line defaults, ``np.random.default_rng(seed)``
with seed 42). See :class:`FOCUS`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors._draws import BoundedDraws, NumpyChoice, choice_draws, numpy_draws_as_expected, weighted_sample
from frameselect.selectors.base import Selector, fill_to_k, normalize_minmax
from frameselect.types import CandidatePool, Features, Query

__all__ = ["FOCUS", "FocusPlan", "focus_arms", "focus_plan", "focus_select", "native_rate"]


@dataclass(frozen=True)
class FocusPlan:
    """The frame-unit quantities the reference derives from length and frame rate."""

    fps: float
    duration: float
    desired_coarse: int
    coarse_stride: int
    fine_stride: int
    region_half_window: int
    gap_frames: int


def native_rate(n: int, duration: float) -> float:
    """The pool's frame rate ``n / duration``, snapped to a round value it misses only by float noise.

    A pool of every frame of a 30-fps video gives 30.0 exactly, as the
    reference's ``get_avg_fps()``; a 29.97-fps (30000/1001) one stays as it is.

    >>> native_rate(601, round(601 / 30, 9))
    30.0
    """
    fps = n / duration
    snapped = round(fps, 6)
    return snapped if abs(fps - snapped) <= 1e-10 * fps else fps


def focus_plan(n: int, duration: float, k: int, p: FOCUS) -> FocusPlan:
    """Strides, windows and minimum gap in pool frames, as ``select_keyframes`` and ``ray_worker`` compute them.

    The pool's frames play the video's frames, at the pool's rate
    :func:`native_rate`. The minimum gap is ``select_keyframe.py``'s
    adaptive rule: none when the average spacing ``duration / k`` is at most
    ``disable_gap_below_sec``, else ``min(gap_ratio_of_avg * spacing,
    min_gap_sec)``.
    """
    fps = native_rate(n, duration)
    avg_spacing = duration / max(1, k)
    if avg_spacing <= p.disable_gap_below_sec:
        min_gap = 0.0
    else:
        min_gap = min(p.gap_ratio_of_avg * avg_spacing, p.min_gap_sec)
    desired = max(p.min_coarse_segments, int(np.ceil(duration / max(1e-6, p.coarse_every_sec))))
    coarse_stride = max(1, int(round(p.coarse_every_sec * fps)))
    if desired > 0:
        coarse_stride = max(1, int(np.floor(n / desired)))
    fine_stride = min(max(1, int(round(p.fine_every_sec * fps))), coarse_stride)
    half_sec = p.region_half_window_sec
    if half_sec is None:
        half_sec = max(1.0 / fps, max(1e-6, duration / max(1, desired)) / 2.0)
    half = max(1, int(round(half_sec * fps)))
    gap = int(round(min_gap * fps)) if min_gap > 0 else 0
    return FocusPlan(fps, duration, desired, coarse_stride, fine_stride, half, gap)


def focus_arms(timestamps: NDArray[np.float64], coarse_stride: int, fps: float) -> list[tuple[int, int]]:
    """Arms as inclusive ``(start, end)`` index ranges, cut by time.

    The reference cuts ``n // coarse_stride`` regions of ``n // regions``
    frames each (frames past the last region belong to no arm). Here region
    j spans the times ``[j, j + 1) * size / fps`` after the first frame, so a
    uniformly spaced pool gets exactly the reference's arms and an irregular
    one gets arms of equal duration; empty arms are skipped, as the
    reference skips empty regions.
    """
    n = len(timestamps)
    regions = max(1, n // coarse_stride)
    size = max(1, n // regions)
    rel = np.asarray(timestamps, dtype=np.float64) - float(timestamps[0])
    tol = 1e-6 / fps
    edges = np.searchsorted(rel, np.arange(regions + 1) * (size / fps) - tol, side="left")
    return [(int(a), int(b) - 1) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


@dataclass(frozen=True)
class _Arms:
    """The arms after coarse sampling: their frames, probes and bounds, arm ``i`` at position ``i``.

    Arm ``i`` spans pool frames ``starts[i]..ends[i]`` (inclusive); its probes
    (its centre, then the frames drawn, in the order drawn) are
    ``probes[offsets[i]:offsets[i + 1]]``, scored ``values[...]``.
    """

    starts: list[int]
    ends: list[int]
    offsets: list[int]
    probes: list[int]
    values: list[float]
    mean: NDArray[np.float64]
    by_ucb: list[int]  # positions by descending bound, the earlier arm first on ties (Python's stable sort)

    def __len__(self) -> int:
        return len(self.starts)

    def probed(self, i: int) -> tuple[list[int], list[float]]:
        """Arm ``i``'s probes and their scores, in the order recorded."""
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.probes[a:b], self.values[a:b]


def _mean_var_rows(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each row's ``np.mean(row)`` and ``np.var(row)``, bit for bit, for every row at once.

    An arm holds a handful of probes (3 by default) and there are hundreds of
    arms: two numpy reductions per arm cost more than the rest of the stage.
    Below 8 elements numpy's pairwise summation is a plain left-to-right sum
    from 0.0, which a running sum over the columns repeats for all rows;
    wider rows go to numpy row by row.
    """
    rows, width = values.shape
    if width >= 8:
        return np.array([np.mean(row) for row in values]), np.array([np.var(row) for row in values])
    total = np.zeros(rows)
    for j in range(width):
        total += values[:, j]
    mean = total / width
    dev = values - mean[:, None]
    dev *= dev
    squares = np.zeros(rows)
    for j in range(width):
        squares += dev[:, j]
    return mean, squares / width


def _coarse_stage(bounds: list[tuple[int, int]], extra: int, scores: NDArray[np.float64], min_variance: float, rng: np.random.Generator) -> _Arms:
    """Stage 1: ``FOCUS._coarse_sampling_in_arms``, ``_update_arms_with_scores`` and the bounds, for all arms at once.

    Each arm is probed at its centre plus ``extra`` distinct random frames of
    it: ``rng.choice(others, size, replace=False)`` over its frames but the
    centre, arm after arm (none for a one-frame arm). It records its probes'
    scores, their mean and variance (0 for one probe) and the Bernstein upper
    confidence bound ``mean + sqrt(2 ln n var / n_i) + 3 ln n / n_i``
    (variance at least ``min_variance``; ``n`` all probes, ``n_i`` the arm's).

    The ``choice`` calls follow one another with nothing else drawn in
    between, and their bounds are known beforehand, so all their integer
    draws come from one ``rng.integers`` call (:func:`_floyd_rows`); arms of
    over 10,000 frames, where numpy may shuffle the whole range instead, take
    :class:`BoundedDraws` (and every arm takes numpy's own calls where
    :func:`~frameselect.selectors._draws.numpy_draws_as_expected` finds that
    this numpy draws otherwise). Arms with as many probes are then computed
    together, every operation the reference's scalar one, elementwise.
    """
    starts = np.array([a for a, _ in bounds], dtype=np.int64)
    others = np.array([b for _, b in bounds], dtype=np.int64) - starts  # the arm's frames but its centre
    centres = starts + others // 2
    sizes = np.minimum(extra, others)
    widths = sizes + 1
    offsets = np.concatenate([[0], np.cumsum(widths)])
    groups = [(int(s), np.flatnonzero(sizes == s)) for s in np.unique(sizes).tolist()]
    if (len(bounds) and int(others.max()) > 10_000) or not numpy_draws_as_expected():
        with choice_draws(rng) as draws:
            picks = [draws.choice(o, s) for o, s in zip(others.tolist(), sizes.tolist(), strict=True)]
        drawn = {s: np.array([picks[r] for r in rows], dtype=np.int64).reshape(len(rows), s) for s, rows in groups}
    else:
        drawn = _floyd_rows(others, sizes, groups, rng)
    probes = np.empty(int(offsets[-1]), dtype=np.int64)
    mean, variance = np.zeros(len(bounds)), np.zeros(len(bounds))
    for s, rows in groups:
        cols = offsets[rows][:, None] + np.arange(s + 1)
        centre = centres[rows][:, None]
        frame = starts[rows][:, None] + drawn[s]  # position j of the frames but the centre is frame start + j, one further on from it
        probes[cols] = np.concatenate([centre, frame + (frame >= centre)], axis=1)
        mean[rows], var = _mean_var_rows(scores[probes[cols]])
        if s:
            variance[rows] = var
    total = int(offsets[-1])
    ucb = mean.copy()
    if total > 1:
        log_total = math.log(total)
        ucb += np.sqrt(np.maximum(0.0, 2 * log_total * np.maximum(variance, min_variance) / widths))
        ucb += 3 * log_total / widths
    by_ucb: list[int] = np.argsort(-ucb, kind="stable").tolist()
    return _Arms(starts.tolist(), (starts + others).tolist(), offsets.tolist(), probes.tolist(), scores[probes].tolist(), mean, by_ucb)


def _floyd_rows(
    pops: NDArray[np.int64], sizes: NDArray[np.int64], groups: list[tuple[int, NDArray[np.intp]]], rng: np.random.Generator
) -> dict[int, NDArray[np.int64]]:
    """``rng.choice(n, s, replace=False)`` for each ``(n, s)`` in turn (all ``n <= 10,000``), with one draw call; by size, a row per call.

    numpy draws, per call, ``[0, j]`` for ``j = n - s .. n - 1`` (Floyd's
    algorithm) and then ``[0, i]`` for ``i = s - 1 .. 1`` (the shuffle's
    swaps), each by Lemire's method; ``rng.integers(0, bounds,
    endpoint=True, dtype=np.uint32)`` draws an array of bounds one after
    another the same way (a bound of 0 consumes nothing in both).
    ``tests/selectors/test_fast_paths.py`` compares it with the calls.
    """
    lengths = np.where(sizes > 0, 2 * sizes - 1, 0)
    offsets = np.cumsum(lengths) - lengths
    bounds = np.zeros(int(lengths.sum()), dtype=np.int64)
    for s, rows in groups:
        if s:
            cols = offsets[rows][:, None] + np.arange(2 * s - 1)
            bounds[cols] = np.concatenate([pops[rows][:, None] - s + np.arange(s), np.broadcast_to(np.arange(s - 1, 0, -1), (len(rows), s - 1))], axis=1)
    values = rng.integers(0, bounds, endpoint=True, dtype=np.uint32).astype(np.int64) if len(bounds) else bounds
    out: dict[int, NDArray[np.int64]] = {}
    for s, rows in groups:
        d = values[offsets[rows][:, None] + np.arange(2 * s - 1)]
        picked = np.empty((len(rows), s), dtype=np.int64)
        for t in range(s):  # Floyd: a value drawn before is replaced by j = n - s + t, which cannot have been
            seen = (picked[:, :t] == d[:, t, None]).any(axis=1)
            picked[:, t] = np.where(seen, pops[rows] - s + t, d[:, t])
        every = np.arange(len(rows))
        for t, i in enumerate(range(s - 1, 0, -1)):  # the shuffle: position i swaps with the drawn one
            j = d[:, s + t]
            held = picked[every, j]
            picked[every, j] = picked[:, i]
            picked[:, i] = held
        out[s] = picked
    return out


def _fine_sampling(arms: Sequence[tuple[int, int]], n: int, plan: FocusPlan, coarse: set[int], uniform_ratio: float, rng: np.random.Generator) -> list[int]:
    """``FOCUS._fine_sampling_in_arms``: uniform plus random frames in a window around each arm's centre."""
    chosen: set[int] = set()
    with choice_draws(rng) as draws:  # rng.choice(len(available), size, replace=False) per arm, the same draws
        for start, end in arms:
            _fine_probes((start + end) // 2, n, plan, coarse, uniform_ratio, chosen, draws)
    return sorted(chosen)


def _fine_probes(centre: int, n: int, plan: FocusPlan, coarse: set[int], uniform_ratio: float, chosen: set[int], draws: BoundedDraws | NumpyChoice) -> None:
    """One arm of :func:`_fine_sampling`: the evenly spaced and random probes of the window around its centre join ``chosen``."""
    start = max(0, centre - plan.region_half_window)
    end = min(n - 1, centre + plan.region_half_window)
    window = end - start + 1
    required = max(1, window // plan.fine_stride)
    n_uniform = int(round(required * uniform_ratio))
    n_random = required - n_uniform
    if n_uniform > 0:
        if window <= n_uniform:
            targets = [(start + end) // 2]
        else:
            step = window / n_uniform
            targets = [min(start + int(i * step + step / 2), end) for i in range(n_uniform)]
        chosen.update(t for t in targets if t not in coarse)
    if n_random > 0:
        available = [i for i in range(start, end + 1) if i not in coarse and i not in chosen]
        if available:
            chosen.update(available[j] for j in draws.choice(len(available), min(n_random, len(available))))


def _estimate_nearest(start: int, end: int, xs: list[int], values: list[float]) -> dict[int, float]:
    """:func:`_estimate` with ``"nearest"`` in plain Python: the score of the nearest probe (the first on ties), clipped to [0, 1].

    Probe indices are integers, so the distances are exact either way, and
    ``min(max(v, 0), 1)`` is numpy's clip for every finite score: the same
    numbers without a dozen numpy calls on arrays of a few elements.
    """
    ys = [min(max(v, 0.0), 1.0) for v in values]
    out: dict[int, float] = {}
    for c in range(start, end + 1):
        best, dist = 0, abs(xs[0] - c)
        for j in range(1, len(xs)):
            d = abs(xs[j] - c)
            if d < dist:
                best, dist = j, d
        out[c] = ys[best]
    return out


def _estimate(start: int, end: int, probes: list[int], values: list[float], method: str) -> dict[int, float]:
    """``estimate_arm_scores``: every frame ``start..end`` of an arm scored from its probes, clipped to [0, 1]."""
    if not probes:
        return {}
    if method == "nearest":
        return _estimate_nearest(start, end, probes, values)
    xs = np.array(probes, dtype=float)
    ys = np.array(values, dtype=float)
    cands = np.arange(start, end + 1, dtype=float)
    try:
        if method == "linear":
            est = np.interp(cands, xs, ys) if len(xs) >= 2 else np.full_like(cands, ys[0])
        elif method == "rbf":
            if len(xs) >= 2:
                from scipy.interpolate import Rbf

                est = np.asarray(Rbf(xs, ys, function="gaussian", smooth=0.0)(cands), dtype=float)
            else:
                est = np.full_like(cands, ys[0])
        else:
            raise ValueError(f"unknown interpolation method {method!r}")
        est = np.clip(est, 0.0, 1.0)
    except Exception:  # as the reference: any failure falls back to the arm's mean score
        est = np.full_like(cands, float(np.mean(ys)))
    return dict(zip(range(start, end + 1), est.tolist(), strict=True))


def _final_allocation(arms: _Arms, remaining: int, selected: list[int], plan: FocusPlan, p: FOCUS, rng: np.random.Generator) -> list[int]:
    """``FOCUS._select_remaining_frames``: the remaining budget spread over the top arms (by UCB, or by mean with ``final_rank="mean"``)."""
    gap = plan.gap_frames
    current = set(selected)

    def respects_gap(c: int) -> bool:
        # no chosen frame f with |c - f| < gap: look up the 2 gap - 1 frames around c, or scan the chosen, whichever is fewer.
        # Only frames not chosen yet are asked about, so a gap of 1 (|c - f| >= 1: c is not chosen) always holds.
        if gap <= 1:
            return True
        if 2 * gap - 1 < len(current):
            return not any(f in current for f in range(c - gap + 1, c + gap))
        return all(abs(c - f) >= gap for f in current)

    def draw_uniform(available: list[int], need: int) -> list[int]:
        spaced = [c for c in available if respects_gap(c)] if gap > 0 else available
        candidates = spaced or available
        draw = rng.choice(len(candidates), size=min(need, len(candidates)), replace=False)
        return [candidates[int(j)] for j in draw]

    def draw_softmax(scored: list[tuple[int, float]], need: int) -> list[int]:
        listed = [v for _, v in scored]
        values = np.array(listed, dtype=np.float64)
        lo, hi = min(listed), max(listed)
        if hi > lo:
            values = (values - lo) / (hi - lo)
        else:
            values = np.ones_like(values)
        logits = values / max(1e-12, p.temperature)
        probs = np.exp(logits - logits.max())
        probs = probs / probs.sum()
        # rng.choice(len(probs), size, replace=False, p=probs) without its argument checks (4x the draw on an arm's few frames)
        draw = weighted_sample(rng.random, min(need, len(scored)), probs)
        return [scored[j][0] for j in draw]

    s = int(np.ceil(len(arms) * max(0.0, min(1.0, float(p.zoom_ratio)))))
    s = min(max(p.final_min_arms, s), p.final_max_arms, len(arms))
    if s <= 0:
        return []
    base, extra = divmod(remaining, s)
    new: list[int] = []
    order = arms.by_ucb if p.final_rank == "ucb" else np.argsort(-arms.mean, kind="stable").tolist()  # sorted(..., reverse=True)
    for rank, pos in enumerate(order[:s]):
        need = base + (1 if rank < extra else 0)
        start, end = arms.starts[pos], arms.ends[pos]
        available = [c for c in range(start, end + 1) if c not in current]
        if need == 0 or not available:
            continue
        if p.interpolation_method == "uniform":
            picks = draw_uniform(available, need)
        else:
            est = _estimate(start, end, *arms.probed(pos), p.interpolation_method)
            scored = [(c, est[c]) for c in available if c in est and respects_gap(c)]
            if not scored:  # ignore the gap rather than take nothing
                scored = [(c, est[c]) for c in available if c in est]
            picks = draw_softmax(scored, need) if scored else draw_uniform(available, need)
        for c in picks:
            new.append(int(c))
            current.add(int(c))
    return new


def focus_select(scores: NDArray[np.float64], timestamps: NDArray[np.float64], duration: float, k: int, p: FOCUS, rng: np.random.Generator) -> list[int]:
    """FOCUS on one pool, as ``FOCUS.select_keyframes``: ascending, distinct, possibly fewer than ``k``.

    ``scores`` are the relevance the reference gets from BLIP (in [0, 1]);
    every call on ``rng`` is the reference's, in its order: one
    ``choice`` per arm for the coarse extras, one per promising arm for the
    random fine samples, one per final arm for the softmax (or uniform) draw.
    """
    n = len(scores)
    plan = focus_plan(n, duration, k, p)
    # stage 1: coarse probes; each arm keeps its probes' scores
    arms = _coarse_stage(focus_arms(timestamps, plan.coarse_stride, plan.fps), p.extra_samples_per_region, scores, p.min_variance_threshold, rng)
    coarse = arms.probes
    known = dict(zip(coarse, arms.values, strict=True))
    # stages 2-3: fine probes around the centres of the arms with the highest UCB. Their scores join
    # the top-ratio pool only: the reference records in an arm just its coarse probes, so the arm
    # statistics (and the UCB) do not change.
    zoom = min(max(p.min_zoom_segments, int(np.ceil(len(arms) * p.zoom_ratio))), len(arms))
    promising = [(arms.starts[i], arms.ends[i]) for i in arms.by_ucb[:zoom]]
    fine = _fine_sampling(promising, n, plan, set(coarse), p.fine_uniform_ratio, rng)
    known.update(zip(fine, scores[fine].tolist(), strict=True))
    # stage 4: the top ``top_ratio`` probed frames, then the rest spread over the best arms by UCB
    selected: list[int] = []
    if known and k > 0:
        k_top = int(round(p.top_ratio * min(k, len(known))))
        selected = [i for i, _ in heapq.nlargest(k_top, known.items(), key=itemgetter(1))]  # sorted(..., reverse=True)[:k_top], ties in order
        remaining = max(0, k - len(selected))
        if remaining > 0 and arms:
            selected += _final_allocation(arms, remaining, selected, plan, p, rng)
    return sorted(dict.fromkeys(selected))[:k]


def _pool_duration(pool: CandidatePool, *, from_frames: bool = False) -> float:
    """Seconds the pool spans: its video's duration, else N times the mean frame spacing.

    ``from_frames`` always takes N times the mean spacing, as the reference's
    ``total_frames / fps`` (a container's duration can differ from it by a
    fraction of a frame).
    """
    n = len(pool)
    if not from_frames and pool.duration is not None and pool.duration > 0:
        return float(pool.duration)
    ts = np.asarray(pool.timestamps, dtype=np.float64)
    span = float(ts[-1] - ts[0]) if n > 1 else 0.0
    if span > 0:
        return round(span * n / (n - 1), 9)
    return float(pool.duration) if pool.duration is not None and pool.duration > 0 else float(n)


@selectors.register("focus")
@dataclass(frozen=True)
class FOCUS(Selector):
    """FOCUS (ICLR 2026): bandit-style coarse-to-fine keyframe selection.

    Follows ``FOCUS.select_keyframes`` in ``focus.py`` of
    github.com/NUS-HPC-AI-Lab/FOCUS (commit e28a555) with the minimum-gap rule
    and command-line defaults of its driver ``select_keyframe.py``. The pool
    is cut into arms of about ``coarse_every_sec`` seconds (at least
    ``min_coarse_segments``; frames past the last whole arm belong to none);
    each arm is probed at its centre plus ``extra_samples_per_region``
    random frames and keeps its probes' scores. Each arm gets the Bernstein
    upper confidence bound ``mean + sqrt(2 ln n var / n_i) + 3 ln n / n_i``
    (variance at least ``min_variance_threshold``); the ``zoom_ratio`` of
    the arms with the highest bound (at least ``min_zoom_segments``) get fine
    probes in a window around their centre (``fine_uniform_ratio`` of them
    evenly spaced, the rest random, one per ``fine_every_sec``). The top
    ``top_ratio`` of all probed frames are kept; the rest of the budget is
    spread evenly over the best arms (``zoom_ratio`` of them, between
    ``final_min_arms`` and ``final_max_arms``), inside each drawn without
    replacement by a softmax (``temperature``) over the min-max normalised
    scores interpolated from the arm's coarse probes
    (``interpolation_method``), keeping a minimum gap: none when
    ``duration / k <= disable_gap_below_sec``, else
    ``min(gap_ratio_of_avg * duration / k, min_gap_sec)``. All defaults are
    the reference's. Randomness comes only from the ``rng`` passed in, call
    for call as the reference uses its Generator (its driver seeds
    ``np.random.default_rng(42)``).

    Paper and code disagree, and this follows the code:

    - final arm selection: the paper (Sec. 2.3.2) recommends arms by their
      empirical mean; the code ranks them by the optimistic bound
      (NUS-HPC-AI-Lab/FOCUS#8). ``final_rank="mean"`` is the paper's rule
      (not in reference-exact mode);
    - the fine probes' scores enter only the top-ratio pool: the code records
      in an arm just its coarse probes, so the fine stage never updates an
      arm's statistics and the interpolation sees coarse probes only.

    The first release (commit 864fff0) rebuilt the arms after coarse
    sampling and passed no fine scores, so every bound was 0; commit e28a555
    fixed that, and this follows e28a555.

    ``reference_exact=True`` returns the reference's output as is: scores as
    given (``normalize`` does not apply; the reference's are BLIP match
    probabilities in [0, 1], and the bound is not invariant to rescaling),
    the budget unclamped, possibly fewer than ``k`` frames (an arm smaller
    than its share, a pool shorter than ``k``), never duplicates. The default
    min-max normalises relevance first (``normalize=True``, for cosine
    relevance) and fills a shortfall with the shared :func:`fill_to_k` rule,
    priority = relevance.

    Adaptation: the reference works on a video's frames at its frame rate;
    here the pool's frames play that part at the pool's rate ``N /
    duration`` (see :func:`native_rate`): a pool of every native frame is the
    reference's case exactly; for a subsampled pool, index-based steps (arm
    centres, fine windows, the gap) are exact when it is uniformly spaced.
    The duration is the pool's own (in reference-exact mode N times the mean
    frame spacing, as the reference's ``frames / fps``; the two differ only
    below 1 fps, where the reference divides by ``max(1, fps)``). Arm boundaries come from the timestamps, so an
    irregular pool gets arms of equal duration.
    """

    param_ranges = {
        "coarse_every_sec": Range(gt=0),
        "fine_every_sec": Range(gt=0),
        "zoom_ratio": Range(ge=0, le=1),
        "min_coarse_segments": Range(ge=1, integer=True),
        "min_zoom_segments": Range(ge=0, integer=True),
        "region_half_window_sec": Range(ge=0),
        "extra_samples_per_region": Range(ge=0, integer=True),
        "min_variance_threshold": Range(ge=0),
        "fine_uniform_ratio": Range(ge=0, le=1),
        "final_min_arms": Range(ge=1, integer=True),
        "final_max_arms": Range(ge=1, integer=True),
        "top_ratio": Range(ge=0, le=1),
        "temperature": Range(gt=0),
        "min_gap_sec": Range(ge=0),
        "disable_gap_below_sec": Range(ge=0),
        "gap_ratio_of_avg": Range(ge=0),
    }

    needs = frozenset({"relevance"})
    coarse_every_sec: float = 16.0
    fine_every_sec: float = 1.0
    zoom_ratio: float = 0.25
    min_coarse_segments: int = 8
    min_zoom_segments: int = 4
    region_half_window_sec: float | None = None
    extra_samples_per_region: int = 2
    min_variance_threshold: float = 1e-6
    fine_uniform_ratio: float = 0.5
    interpolation_method: str = "nearest"
    final_min_arms: int = 4
    final_max_arms: int = 32
    top_ratio: float = 0.2
    temperature: float = 0.06
    min_gap_sec: float = 1.0
    disable_gap_below_sec: float = 0.2
    gap_ratio_of_avg: float = 0.25
    final_rank: str = "ucb"
    normalize: bool = True
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.interpolation_method not in ("nearest", "linear", "rbf", "uniform"):
            raise SelectionError(f"unknown interpolation_method {self.interpolation_method!r}; use 'nearest', 'linear', 'rbf' or 'uniform'")
        if self.coarse_every_sec <= 0 or self.fine_every_sec <= 0 or self.temperature <= 0:
            raise SelectionError("focus needs coarse_every_sec, fine_every_sec and temperature > 0")
        if self.final_rank not in ("ucb", "mean"):
            raise SelectionError(f"focus: unknown final_rank {self.final_rank!r}; use 'ucb' (the released code) or 'mean' (the paper)")
        if self.reference_exact and self.final_rank != "ucb":
            raise SelectionError("focus: reference_exact=True follows the released code, which ranks the final arms by UCB; drop final_rank or reference_exact")
        relevance = features.relevance()
        if self.reference_exact:
            return focus_select(relevance, np.asarray(pool.timestamps), _pool_duration(pool, from_frames=True), k, self, rng)
        scores = normalize_minmax(relevance) if self.normalize else relevance
        chosen = focus_select(scores, np.asarray(pool.timestamps), _pool_duration(pool), k, self, rng)
        return fill_to_k(chosen, k, len(pool), priority=relevance)
