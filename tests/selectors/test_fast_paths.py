"""Fast paths that must compute exactly what the plain numpy code computed.

Each restructured computation is compared, bit for bit, with the numpy
expression it replaced, on seeded inputs chosen to stress rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from frameselect.selectors.aks import aks_leaves, aks_select
from frameselect.selectors.base import normalize_minmax
from frameselect.selectors.focus import _mean_var_as_numpy, _weighted_choice


def awkward_values(rng: np.random.Generator, n: int, kind: int) -> list[float]:
    """Short float lists: uniform, wide magnitudes, large offset (cancellation), two-decimal values."""
    if kind == 0:
        v = rng.random(n)
    elif kind == 1:
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    elif kind == 2:
        v = 1e8 + rng.random(n)
    else:
        v = np.round(rng.random(n), 2)
    return [float(x) for x in v]


@pytest.mark.parametrize("n", range(1, 12))
def test_focus_arm_mean_and_variance_equal_numpys_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for trial in range(4000):
        values = awkward_values(rng, n, trial % 4)
        assert _mean_var_as_numpy(values) == (float(np.mean(values)), float(np.var(values))), values


def plain_aks_leaves(scores: np.ndarray, m: int, t1: float, t2: float, all_depth: int) -> list[tuple[int, int, int]]:
    """AKS's halving with one stable sort and numpy's mean and std per segment (the plain form)."""
    leaves, level, depth = [], [(0, len(scores))], 0
    while level:
        nxt = []
        for start, stop in level:
            if stop <= start:
                continue
            seg = scores[start:stop]
            top = seg[np.argsort(-seg, kind="stable")[:m]]
            if (float(np.mean(top) - np.mean(seg)) > t1 and float(np.std(seg)) > t2) or depth >= all_depth:
                leaves.append((start, stop, depth))
            else:
                mid = start + (stop - start) // 2
                nxt += [(start, mid), (mid, stop)]
        level, depth = nxt, depth + 1
    return leaves


def plain_aks_select(scores: np.ndarray, m: int, ratio: int, t1: float, t2: float, all_depth: int) -> list[int]:
    frames = np.arange(len(scores) // ratio) * ratio
    if len(frames) < m:
        return frames.tolist()
    norm = normalize_minmax(scores[frames])
    out: list[int] = []
    for start, stop, depth in plain_aks_leaves(norm, m, t1, t2, all_depth):
        seg = norm[start:stop]
        out += [int(frames[start + j]) for j in np.argsort(-seg, kind="stable")[: int(m / 2**depth)]]
    return sorted(out)


@pytest.mark.parametrize("seed", range(12))
def test_aks_with_one_sort_equals_a_sort_per_segment(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 4000))
    scores = rng.random(n) ** int(rng.integers(1, 6))
    if seed % 3 == 0:
        scores = np.round(scores, 1)  # many ties
    m, ratio = int(rng.integers(1, 80)), int(rng.integers(1, 4))
    t1, t2 = [(0.8, -100.0), (0.3, 0.1), (0.5, 0.25)][seed % 3]
    norm = normalize_minmax(scores)
    assert aks_leaves(norm, m, t1, t2, 5) == plain_aks_leaves(norm, m, t1, t2, 5)
    assert aks_select(scores, m, ratio, t1, t2, 5) == plain_aks_select(scores, m, ratio, t1, t2, 5)


def test_focus_weighted_draw_equals_generator_choice_and_leaves_the_same_state() -> None:
    """FOCUS's softmax draw without Generator.choice's argument checks: the same frames, the same stream after."""
    for case in range(3000):
        g = np.random.default_rng(case)
        n = int(g.integers(1, 40))
        size = int(g.integers(1, n + 1))
        values = g.random(n)
        if case % 3 == 0:
            values = np.round(values, 1)  # ties
        logits = values / 0.06  # FOCUS's softmax at its default temperature
        probs = np.exp(logits - logits.max())
        probs = probs / probs.sum()
        ours, theirs = np.random.default_rng(10**6 + case), np.random.default_rng(10**6 + case)
        assert _weighted_choice(ours, size, probs) == theirs.choice(n, size=size, p=probs, replace=False).tolist()
        assert ours.bit_generator.state == theirs.bit_generator.state
