"""Fast paths that must compute exactly what the plain numpy code computed.

Each restructured computation is compared, bit for bit, with the numpy
expression it replaced, on seeded inputs chosen to stress rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from frameselect.selectors._classical_common import _squared_norms
from frameselect.selectors._draws import BoundedDraws, numpy_draws_as_expected, weighted_index, weighted_sample
from frameselect.selectors.aks import aks_leaves, aks_select
from frameselect.selectors.base import normalize_minmax
from frameselect.selectors.diversity import _lloyd, _nearest_distinct, kmeans_centroids, kmeans_plus_plus
from frameselect.selectors.focus import _floyd_rows, _mean_var_rows


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
    """Every row at once (FOCUS's arms, grouped by their number of probes) against numpy on each row's list."""
    rng = np.random.default_rng(n)
    rows = [awkward_values(rng, n, trial % 4) for trial in range(4000)]
    mean, var = _mean_var_rows(np.array(rows))
    assert mean.tolist() == [float(np.mean(values)) for values in rows]
    assert var.tolist() == [float(np.var(values)) for values in rows]


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
        assert weighted_sample(ours.random, size, probs) == theirs.choice(n, size=size, p=probs, replace=False).tolist()
        assert ours.bit_generator.state == theirs.bit_generator.state


def awkward_weights(rng: np.random.Generator, case: int) -> np.ndarray:
    """Probabilities as numpy accepts them: uniform, with zeros (leading, trailing, runs), tiny beside large, one non-zero, ties, unnormalised by rounding."""
    n = int(rng.integers(1, 60))
    kind = case % 6
    w = rng.random(n)
    if kind == 1:
        w[rng.random(n) < 0.5] = 0.0
        w[rng.integers(n)] += 0.1  # at least one non-zero
    elif kind == 2:
        w = w * 10.0 ** rng.integers(-300, 1, n).astype(np.float64)
    elif kind == 3:
        w = np.zeros(n)
        w[rng.integers(n)] = rng.random() + 0.1
    elif kind == 4:
        w = np.round(w, 1) + 0.1
    elif kind == 5:
        w[: rng.integers(0, n)] = 0.0  # leading zeros, possibly a single non-zero at the end
        w[-1] = max(w[-1], 1e-3)
    p: np.ndarray = w / w.sum()
    if case % 7 == 0:
        p[-1] += 1e-9  # within numpy's tolerance of 1, not exactly 1
    return p


def _generator(kind: str, seed: int) -> np.random.RandomState | np.random.Generator:
    return np.random.RandomState(seed) if kind == "RandomState" else np.random.default_rng(seed)


def _uniform(gen: np.random.RandomState | np.random.Generator) -> Callable[[int], np.ndarray]:
    return gen.random_sample if isinstance(gen, np.random.RandomState) else gen.random


def _state(gen: np.random.RandomState | np.random.Generator) -> object:
    """The generator's whole state, as values ``==`` compares (RandomState's key array as a list)."""
    if isinstance(gen, np.random.RandomState):
        name, key, *rest = gen.get_state()
        return (name, key.tolist(), *rest)
    return gen.bit_generator.state


@pytest.mark.slow  # many generator states, drawn one call at a time
@pytest.mark.parametrize("kind", ["RandomState", "Generator"])
def test_weighted_sample_equals_choice_without_replacement_and_leaves_the_same_state(kind: str) -> None:
    """``choice(n, size, replace=False, p=p)`` of either generator, without the argument checks."""
    for case in range(4000):
        g = np.random.default_rng(case)
        p = awkward_weights(g, case)
        size = int(g.integers(1, np.count_nonzero(p > 0) + 1))
        ours, theirs = _generator(kind, case), _generator(kind, case)  # T*'s draws use a RandomState, FOCUS's a Generator
        assert weighted_sample(_uniform(ours), size, p) == theirs.choice(len(p), size=size, replace=False, p=p).tolist(), case
        assert _state(ours) == _state(theirs), case


def _choice_cases(g: np.random.Generator, case: int) -> list[tuple[int, int]]:
    """A run of ``(n, size)`` requests: FOCUS's small arms and windows, whole ranges, empty draws,
    now and then a range past 10,000 (numpy's tail shuffle) and one near 2**31 (about one draw in
    two rejected by Lemire's step)."""
    cases = []
    for _ in range(int(g.integers(1, 40))):
        n = int(g.integers(0, 40))
        cases.append((n, int(g.integers(0, n + 1))))
    if case % 25 == 0:
        n = int(g.integers(10_001, 40_000))
        cases.append((n, int(g.integers(n // 50 + 1, n // 8))))  # tail shuffle
        cases.append((n, int(g.integers(1, n // 50 + 1))))  # Floyd on a large range
    if case % 5 == 0:
        cases.append((2**31 + int(g.integers(0, 2**30)), int(g.integers(1, 12))))
    return cases


def _plain(state: object) -> object:
    """A bit generator's state with its arrays (MT19937's key, Philox's counter) as lists, for ``==``."""
    if isinstance(state, dict):
        return {key: _plain(value) for key, value in state.items()}
    return state.tolist() if isinstance(state, np.ndarray) else state


@pytest.mark.slow  # many generator states, drawn one call at a time
@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64])
def test_bounded_draws_equal_generator_choice_without_weights_and_leave_the_same_state(bit_generator: type[np.random.BitGenerator]) -> None:
    """FOCUS's arm draws (``Generator.choice(n, size, replace=False)``) read ahead in blocks: the same
    values call for call, and the generator where numpy's calls leave it (its next draws agree)."""
    for case in range(600):
        requests = _choice_cases(np.random.default_rng(case), case)
        ours, theirs = np.random.Generator(bit_generator(case)), np.random.Generator(bit_generator(case))
        ours.random(case % 3)  # start at every phase of a buffered 32-bit output
        theirs.random(case % 3)
        with BoundedDraws(ours, block=1 + case % 64) as draws:  # small blocks: the read-ahead refills mid-request
            got = [draws.choice(n, size) for n, size in requests]
        assert got == [theirs.choice(n, size=size, replace=False).tolist() for n, size in requests], case
        assert _plain(ours.bit_generator.state) == _plain(theirs.bit_generator.state), case
        assert ours.integers(0, 2**32, size=3, dtype=np.uint32).tolist() == theirs.integers(0, 2**32, size=3, dtype=np.uint32).tolist(), case


@pytest.mark.slow  # many generator states, drawn one call at a time
def test_floyd_rows_equal_one_choice_call_per_arm_and_leave_the_same_state() -> None:
    """FOCUS's coarse draws: every arm's ``choice(n, s, replace=False)`` from one ``integers`` call, grouped by size."""
    for case in range(1500):
        g = np.random.default_rng(case)
        arms = int(g.integers(1, 300))
        pops = g.integers(0, [40, 17, 10_001][case % 3], size=arms)
        sizes = np.minimum(int(g.integers(0, 10)), pops) if case % 4 else np.minimum(g.integers(0, 10, size=arms), pops)
        groups = [(int(s), np.flatnonzero(sizes == s)) for s in np.unique(sizes).tolist()]
        ours, theirs = np.random.default_rng(case), np.random.default_rng(case)
        drawn = _floyd_rows(pops, sizes, groups, ours)
        got: list[list[int]] = [[] for _ in range(arms)]
        for s, rows in groups:
            for r, row in zip(rows.tolist(), drawn[s].tolist(), strict=True):
                got[r] = row
        assert got == [theirs.choice(int(n), size=int(s), replace=False).tolist() for n, s in zip(pops, sizes, strict=True)], case
        assert ours.bit_generator.state == theirs.bit_generator.state, case


def test_this_numpy_draws_as_the_read_ahead_expects() -> None:
    """The once-per-process check passes here; were it to fail (a numpy that draws otherwise), FOCUS falls back."""
    assert numpy_draws_as_expected()


def test_focus_falls_back_to_numpys_calls_with_the_same_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback (numpy's own ``choice`` calls) and the read-ahead give the same frames and generator state."""
    from frameselect.selectors import _draws, focus

    def run(seed: int) -> tuple[list[int], list[int]]:
        g = np.random.default_rng(seed)
        n = int(g.integers(20, 3600))
        rng = np.random.default_rng(seed)
        frames = focus.focus_select(g.random(n), np.arange(n, dtype=np.float64), float(n), int(g.integers(1, 64)), focus.FOCUS(reference_exact=True), rng)
        return frames, rng.integers(0, 2**32, size=3, dtype=np.uint32).tolist()

    fast = [run(seed) for seed in range(40)]
    monkeypatch.setattr(_draws, "numpy_draws_as_expected", lambda: False)
    monkeypatch.setattr(focus, "numpy_draws_as_expected", lambda: False)
    assert isinstance(_draws.choice_draws(np.random.default_rng(0)), _draws.NumpyChoice)
    assert [run(seed) for seed in range(40)] == fast


def test_bounded_draws_refuse_what_numpy_would_and_are_spent_after_the_block() -> None:
    rng = np.random.default_rng(0)
    with BoundedDraws(rng) as draws:
        with pytest.raises(ValueError, match="size <= n"):
            draws.choice(3, 4)
        with pytest.raises(ValueError, match="size <= n"):
            draws.choice(2**32 - 1, 1)
        assert draws.draws([0, 0]) == [0, 0]  # numpy draws nothing for [0, 0]
    with pytest.raises(RuntimeError, match="closed"):
        draws.choice(100, 90)


def test_weighted_index_equals_generator_choice_and_leaves_the_same_state() -> None:
    """k-means++'s draws (``Generator.choice(n, p=p)``, one with replacement) without the argument checks."""
    for case in range(6000):
        g = np.random.default_rng(case)
        p = awkward_weights(g, case)
        ours, theirs = np.random.default_rng(case), np.random.default_rng(case)
        for _ in range(3):
            assert weighted_index(ours, p) == int(theirs.choice(len(p), p=p)), case
        assert ours.bit_generator.state == theirs.bit_generator.state


def plain_kmeans_plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> list[int]:
    """k-means++ as it was written with ``rng.choice`` (frameselect 0.2.0.dev0)."""
    pts = np.asarray(x, dtype=np.float32)
    n = pts.shape[0]
    k = min(k, n)
    sq = np.einsum("ij,ij->i", pts, pts, dtype=np.float64)

    def dist2(i: int) -> np.ndarray:
        d: np.ndarray = np.maximum(sq - 2.0 * (pts @ pts[i]).astype(np.float64) + sq[i], 0.0)
        return d

    centres = [int(rng.integers(n))]
    d2 = dist2(centres[0])
    taken = np.zeros(n, dtype=bool)
    taken[centres[0]] = True
    while len(centres) < k:
        weights = np.where(taken, 0.0, d2)
        total = float(weights.sum())
        i = int(rng.choice(n, p=weights / total)) if total > 0.0 else int(rng.choice(np.flatnonzero(~taken)))
        centres.append(i)
        taken[i] = True
        d2 = np.minimum(d2, dist2(i))
    return centres


def seeded_points(seed: int) -> np.ndarray:
    """Random, clustered or repeated (exact duplicates) unit rows."""
    g = np.random.default_rng(seed)
    n, d = int(g.integers(2, 300)), int(g.choice([3, 16, 64]))
    if seed % 3 == 0:
        x = g.standard_normal((n, d))
    elif seed % 3 == 1:
        centres = g.standard_normal((int(g.integers(2, 8)), d))
        x = centres[g.integers(0, len(centres), n)] + 0.1 * g.standard_normal((n, d))
    else:
        distinct = int(g.integers(1, 6))
        x = g.standard_normal((distinct, d))[g.integers(0, distinct, n)]
    x = x.astype(np.float32)
    unit: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit


@pytest.mark.parametrize("seed", range(300))
def test_kmeans_plus_plus_equals_the_form_with_generator_choice(seed: int) -> None:
    x = seeded_points(seed)
    k = 1 + seed % 40
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    assert kmeans_plus_plus(x, k, ours) == plain_kmeans_plus_plus(x, k, theirs)
    assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("seed", range(300))
def test_nearest_distinct_equals_the_assignment(seed: int) -> None:
    """Per-row argmins where they are the assignment's unique optimum, the assignment otherwise (duplicates)."""
    from scipy.optimize import linear_sum_assignment

    x = seeded_points(seed)
    k = 1 + seed % min(40, len(x))
    centroids = kmeans_centroids(x, k, np.random.default_rng(seed))
    c32 = centroids.astype(np.float32)
    cost = (x @ (c32 * np.float32(-2.0)).T).T.astype(np.float64)
    cost += np.einsum("ij,ij->i", x, x, dtype=np.float64)[None, :] + np.einsum("ij,ij->i", c32, c32, dtype=np.float64)[:, None]
    expected = sorted(int(c) for c in linear_sum_assignment(np.maximum(cost, 0.0))[1])
    assert _nearest_distinct(x, centroids) == expected
    # the same with the norms and the last round's product handed over, as the selector does
    again, product = _lloyd(x, _squared_norms(x), k, np.random.default_rng(seed), 100, 1e-4)
    assert np.array_equal(again, centroids)
    assert _nearest_distinct(x, again, _squared_norms(x), product) == expected
