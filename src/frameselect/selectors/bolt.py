"""BOLT: inverse transform sampling over query relevance.

Liu et al., "BOLT: Boost Large VLMs without Training for Long-form Video
Understanding", CVPR 2025. Reference code: github.com/sming256/BOLT (commit
8a9ba45), ``select_frames.py`` (function ``inverse_transform_sampling``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["BOLT", "inverse_transform_sampling"]


def inverse_transform_sampling(scores: NDArray[np.float64], n: int, power: float = 1.0, *, constant_as_uniform: bool = False) -> NDArray[np.int64]:
    """The reference's ``inverse_transform_sampling``: ``n`` indices, ascending, repeats kept.

    Scores are shifted to start at 0 and divided by their maximum, raised to
    ``power`` (``power == -1``, the reference's "off" value, and ``1`` leave
    them as they are), normalised into a distribution whose CDF is inverted at
    ``linspace(1/n, 1 - 1/n, n)`` with ``searchsorted`` (left side). A
    constant score vector gives NaNs and index 0 throughout, as in the
    reference, unless ``constant_as_uniform``; ``n = 1`` asks for the
    quantile 1.0, which rounding can push one past the last frame.

    >>> inverse_transform_sampling(np.array([0.0, 1.0, 1.0, 0.0, 2.0]), 4)
    array([1, 2, 4, 4])
    """
    score = np.asarray(scores, dtype=np.float64)
    if constant_as_uniform and score.size and np.max(score) == np.min(score):
        score = np.ones_like(score)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            score = score - np.min(score)
            score = score / np.max(score)
            if power != -1:
                score = score**power
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf = np.cumsum(score / np.sum(score))
    quantiles = np.linspace(1 / n, 1 - 1 / n, n)
    return np.searchsorted(cdf, quantiles).astype(np.int64)


@selectors.register("bolt")
@dataclass(frozen=True)
class BOLT(Selector):
    """BOLT inverse transform sampling (Liu et al., CVPR 2025).

    Follows ``inverse_transform_sampling`` in ``select_frames.py`` of
    github.com/sming256/BOLT: relevance is min-max normalised, raised to
    ``power``, turned into a CDF, and frames are read off at the quantiles
    ``linspace(1/k, 1 - 1/k, k)``. ``power=1`` (default) is the reference's
    default (its ``--power -1`` means "no power"; ``-1`` is accepted here
    with the same meaning); the paper's scripts use 2.5 (LongVideoBench) and
    3 (Video-MME, MLVU). The reference scores are CLIP/SigLIP logits, an
    affine map of cosine similarity, which min-max normalisation removes, so
    ``embeddings · text`` gives the same selection.

    The reference repeats frames where the mass is concentrated (several
    quantiles in one frame; for k = 2 both quantiles are 1/2, so always),
    returns exactly k indices also when k > N (then necessarily with
    repeats), and can step past the last frame for k = 1.
    ``reference_exact=True`` returns the reference's k indices as they are,
    for the budget as given, repeats included; an index past the last frame
    names no frame and raises :class:`~frameselect.errors.SelectionError`.
    The default drops repeats and out-of-range indices and fills up to
    ``min(k, N)`` with the shared :func:`fill_to_k` rule, priority =
    relevance; a constant relevance vector (NaN in the reference) is read
    as uniform weights.

    Code and scripts: ``select_frames.py``'s default ``--power -1`` applies
    no power at all, while the repository's ``scripts/frame_selection.sh``
    passes ``--power 3`` (Video-MME) and ``--power 2.5`` (LongVideoBench),
    and ``demo.py`` defaults to 3; this follows ``select_frames.py``
    (``power=1`` here, ``-1`` accepted with the same meaning).
    """

    param_ranges = {"power": Range(ge=0)}

    needs = frozenset({"relevance"})
    power: float = 1.0
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        scores = features.relevance()
        n = len(pool)
        if self.reference_exact:
            return [int(i) for i in inverse_transform_sampling(scores, k, self.power)]
        chosen = inverse_transform_sampling(scores, k, self.power, constant_as_uniform=True)
        return fill_to_k(list(chosen), k, n, priority=scores)
