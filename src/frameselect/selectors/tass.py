"""TASS: DATE's time-aware similarity sampling.

Yuan et al., "DATE: Dynamic Absolute Time Enhancement for Long Video
Understanding", arXiv 2509.09263 (2025). Reference code: github.com/yuanc3/DATE
(commit c396128), ``utils/sampling.py`` (``tass_sampling``, ``get_final_indices``),
with the relevance of ``utils/clip_sim.py`` (``process_video_question``: CLIP
cosine of the question, or an LLM caption of it, to frames at 2 fps, as
``demo.py`` drives it). See :class:`TASS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["TASS", "tass_select"]


def tass_select(times: NDArray[np.floating], relevance: NDArray[np.floating], k: int, interval: float = 20.0, decay: float = 0.5, cap: int = 4) -> list[int]:
    """``tass_sampling`` with the above-mean count: positions in the order picked, possibly fewer than ``k``.

    The candidates are the frames whose relevance exceeds the mean (at most
    ``cap * k`` of them, the most relevant), best first. If they are no more
    than ``k``, all are returned. Otherwise passes over them, best first,
    take every frame at least ``interval`` seconds from those taken, and the
    interval halves after each pass until ``k`` are taken.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    n = rel.shape[0]
    if n == 0:
        return []
    mean = sum(float(v) for v in rel) / n  # the reference's Python sum, term by term
    topk = min(int(np.count_nonzero(rel > mean)), cap * k)
    order = [int(i) for i in np.argsort(-rel, kind="stable")[:topk]]
    if len(order) <= k:
        return order
    chosen: list[int] = []
    gap = float(interval)
    while len(chosen) < k:
        for i in order:
            if i in chosen:
                continue
            if all(abs(t[i] - t[j]) >= gap for j in chosen):
                chosen.append(i)
                if len(chosen) >= k:
                    break
        gap *= decay
    return chosen


@selectors.register("tass")
@dataclass(frozen=True)
class TASS(Selector):
    """TASS (DATE, arXiv 2509.09263): the above-mean frames, spread by a shrinking minimum time gap.

    Follows ``tass_sampling`` and ``get_final_indices`` in
    ``utils/sampling.py`` of github.com/yuanc3/DATE: keep the frames whose
    relevance is above the mean (at most ``4 k``), and take them best first
    while they are at least ``interval`` (20 s) from every frame taken,
    halving the interval after each pass (:func:`tass_select`). Relevance is
    ``features.relevance()`` (the reference: CLIP ViT-B/32 cosine to the
    question, or to an LLM caption of it, at 2 fps).

    Code and paper: ``tass_sampling`` computes the above-mean count only when
    its ``topk`` argument is not ``None``, and ``demo.py`` passes ``None``,
    which raises ``TypeError`` (``min(None, 4 k)``); with any integer the
    given value is ignored and the above-mean count used, the paper's rule,
    which this follows. When no more than ``k`` frames are above the mean
    the reference returns just those (none for a constant curve);
    ``reference_exact=True`` does the same, in time order (the order the
    frames are fed in). The default fills to ``min(k, N)`` with the shared
    :func:`fill_to_k` rule, priority = relevance.
    """

    param_ranges = {"interval": Range(gt=0), "decay": Range(gt=0, lt=1), "cap": Range(ge=1, integer=True)}

    needs = frozenset({"relevance"})
    interval: float = 20.0
    decay: float = 0.5
    cap: int = 4
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        rel = features.relevance()
        picked = tass_select(pool.timestamps, rel, k, self.interval, self.decay, self.cap)
        idx = sorted(picked) if self.reference_exact else fill_to_k(picked, k, len(pool), priority=rel)
        return Scored(idx, [float(rel[i]) for i in idx])
