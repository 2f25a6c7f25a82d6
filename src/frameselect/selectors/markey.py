"""MarKey: greedy keyframe selection by a surrogate marginal utility.

Shi et al., "MarKey: Marginal Utility Guided Greedy Keyframe Selection for
Long Video Understanding", arXiv 2609.15408 (2026). No code has been
released; this follows the paper: Eqs. (4), (6), (9), (10) and (12),
Algorithm 1, and the settings of Sec. 4.1 and 4.8 (alpha 0.7, delta 0.2,
lambda 0.1, 648 anchors, window 28). See :class:`MarKey`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["MarKey", "markey_anchors", "markey_greedy"]


def _unit(x: NDArray[np.floating]) -> NDArray[np.float64]:
    f = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(f, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: NDArray[np.float64] = f / norms
    return out


def _spread(total: int, sizes: list[int]) -> list[int]:
    """``total`` split over bins of the given capacities in proportion to them (largest remainders, earlier bin on ties), capped at each size."""
    cap = sum(sizes)
    if cap == 0 or total <= 0:
        return [0] * len(sizes)
    raw = np.asarray(sizes, dtype=np.float64) * min(total, cap) / cap
    out = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - out), kind="stable")[: min(total, cap) - int(out.sum())]:
        out[i] += 1
    return [int(v) for v in np.minimum(out, sizes)]


def markey_anchors(relevance: NDArray[np.floating], times: NDArray[np.floating], budget: int = 648, clip_s: float = 10.0) -> NDArray[np.int64]:
    """Anchor positions: every frame when there are at most ``budget``, else temporal-relevance stratified sampling.

    The paper cuts the video into 10-second clips, ranks each clip's frames
    by relevance, splits them into high, medium and low strata and draws
    anchors from all three under one global budget (Sec. 3.3), without
    saying how the budget is split or how frames are drawn. Here: the budget
    goes to clips in proportion to their frame counts, a clip's share to its
    three strata (``array_split`` of the ranking) in proportion to their
    sizes, and a stratum's share to evenly spaced ranks within it — no
    randomness.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    n = rel.shape[0]
    if n <= budget:
        return np.arange(n, dtype=np.int64)
    t = np.asarray(times, dtype=np.float64)
    clip = np.floor((t - t[0]) / clip_s).astype(np.int64)
    groups = [np.flatnonzero(clip == c) for c in np.unique(clip)]
    out: list[int] = []
    for members, share in zip(groups, _spread(budget, [len(g) for g in groups]), strict=True):
        ranked = members[np.argsort(-rel[members], kind="stable")]
        strata = np.array_split(ranked, 3)
        for stratum, take in zip(strata, _spread(share, [len(s) for s in strata]), strict=True):
            if take:
                picks = np.unique(np.round(np.linspace(0, len(stratum) - 1, take)).astype(np.int64))
                out.extend(int(i) for i in stratum[picks])
    return np.asarray(sorted(out), dtype=np.int64)


def markey_greedy(
    embeddings: NDArray[np.floating],
    relevance: NDArray[np.floating],
    k: int,
    anchors: NDArray[np.int64] | None = None,
    *,
    alpha: float = 0.7,
    delta: float = 0.2,
    lam: float = 0.1,
    window: int = 28,
) -> list[int]:
    """Algorithm 1: ``k`` frames in the order picked, each maximising ``alpha r_i + delta kappa_i - lam rho_i``.

    ``r``: relevance (Eq. 4). ``kappa_i``: the mean over anchors ``u`` of
    ``max(s_ui - m_u, 0)``, ``m_u`` the anchor's best similarity to every
    frame picked so far, 0 before the first (Eqs. 6, 12; Algorithm 1, line
    15). ``rho_i``: the largest cosine similarity to the last ``window``
    frames picked, 0 before the first (Eq. 9 over the active context of
    Eq. 13). Similarities are cosines of the embeddings; ties go to the
    earlier frame.
    """
    g = _unit(embeddings)
    rel = np.asarray(relevance, dtype=np.float64)
    n = g.shape[0]
    k = min(int(k), n)
    anchor_idx = np.arange(n) if anchors is None else np.asarray(anchors, dtype=np.int64)
    sim_anchor = g[anchor_idx] @ g.T  # (A, N): s_ui
    cover = np.zeros(len(anchor_idx))
    available = np.ones(n, dtype=bool)
    chosen: list[int] = []
    for _ in range(k):
        gain = np.maximum(sim_anchor - cover[:, None], 0.0).mean(axis=0) if len(anchor_idx) else np.zeros(n)
        context = chosen[-window:] if window > 0 else []
        redundancy = np.max(g @ g[context].T, axis=1) if context else np.zeros(n)
        utility = alpha * rel + delta * gain - lam * redundancy
        utility[~available] = -np.inf
        best = int(np.argmax(utility))
        chosen.append(best)
        available[best] = False
        cover = np.maximum(cover, sim_anchor[:, best])
    return chosen


@selectors.register("markey")
@dataclass(frozen=True)
class MarKey(Selector):
    """MarKey (arXiv 2609.15408, 2026): greedy relevance + anchor coverage gain − windowed redundancy.

    Each step takes the frame of highest ``alpha * r + delta * kappa -
    lam * rho`` (:func:`markey_greedy`): ``r`` the query relevance (CLIP
    cosine in the paper; ``features.relevance()`` here), ``kappa`` the gain
    in mean anchor coverage, ``rho`` the largest similarity to the last
    ``window`` frames picked. Defaults are the paper's (alpha 0.7, delta
    0.2, lambda 0.1, ``anchors=648``, ``window=28``).

    Reading of the paper (no code is public): coverage state ``m`` is kept
    over every frame picked, as Algorithm 1 (line 15) updates it, while
    the text says coverage is also evaluated against the window; the
    redundancy term uses the window. Pools of at most ``anchors`` frames
    use every frame as an anchor, as the paper does when fewer frames are
    available; larger pools use :func:`markey_anchors`, whose split of the
    anchor budget across clips and relevance strata is this library's
    choice (the paper leaves it open). The paper scores frames at 1 fps;
    the pool is used as given.
    """

    param_ranges = {
        "alpha": Range(),
        "delta": Range(),
        "lam": Range(),
        "anchors": Range(ge=1, integer=True),
        "window": Range(ge=0, integer=True),
        "clip_s": Range(gt=0),
    }

    needs = frozenset({"embeddings", "relevance"})
    alpha: float = 0.7
    delta: float = 0.2
    lam: float = 0.1
    anchors: int = 648
    window: int = 28
    clip_s: float = 10.0

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        assert features.embeddings is not None
        rel = features.relevance()
        anchor_idx = markey_anchors(rel, pool.timestamps, self.anchors, self.clip_s)
        picked = markey_greedy(features.embeddings, rel, k, anchor_idx, alpha=self.alpha, delta=self.delta, lam=self.lam, window=self.window)
        idx = sorted(picked)
        return Scored(idx, [float(rel[i]) for i in idx])
