"""Q-Frame: query-aware frame selection by Gumbel-max sampling.

Zhang et al., "Q-Frame: Query-aware Frame Selection and Multi-Resolution
Adaptation for Video-LLMs", ICCV 2025. Reference code:
github.com/xiaomi-research/q-frame, ``lmms_eval/models/qwen2_vl_w_qframe.py``
(function ``TextImageMatching``, called with ``tau=0.8``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["QFrame", "gumbel_ranking"]


def gumbel_ranking(similarity: NDArray[np.float64], tau: float, uniform: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Frames ranked by ``log softmax(similarity / tau) + Gumbel noise``, best first.

    The noise is the reference's ``-log(-log(u + 1e-10) + 1e-10)`` for the
    given uniform draws ``u``. Returns the ranking (earlier frame first on
    exact ties) and the perturbed log-probabilities.

    >>> order, _ = gumbel_ranking(np.array([0.0, 5.0, 1.0]), 0.8, np.array([0.5, 0.5, 0.5]))
    >>> order.tolist()
    [1, 2, 0]
    """
    z = np.asarray(similarity, dtype=np.float64) / tau
    zmax = float(np.max(z))
    log_probs = z - (zmax + float(np.log(np.sum(np.exp(z - zmax)))))
    gumbel = -np.log(-np.log(np.asarray(uniform, dtype=np.float64) + 1e-10) + 1e-10)
    perturbed = log_probs + gumbel
    return np.argsort(-perturbed, kind="stable"), perturbed


@selectors.register("qframe")
@dataclass(frozen=True)
class QFrame(Selector):
    """Q-Frame (Zhang et al., ICCV 2025): Gumbel-max top-k over softmax(similarity / tau).

    Follows ``TextImageMatching`` in the reference: per-frame query
    similarity, divided by ``tau`` (0.8, the value every reference script
    passes), soft-maxed, its log perturbed with Gumbel noise
    ``-log(-log(u + 1e-10) + 1e-10)``; frames ranked by the perturbed value
    and the top k kept — sampling k frames without replacement with
    probabilities softmax(similarity / tau). The uniform draws come from the
    run's seeded ``rng``, so a seed fixes the selection. ``Selection.scores``
    holds the perturbed log-probabilities of the chosen frames.

    Deviations: the reference's similarity is LongCLIP's raw (not
    normalised) ``text_features @ image_features.T``; here it is
    :meth:`Features.relevance` (given scores, else embeddings · text), so the
    effective temperature depends on the scale of those scores. The log-softmax
    is computed stably (the reference takes ``log(softmax)`` in reduced
    precision, where tiny probabilities become ``-inf``). The reference's
    multi-resolution step (6 frames at 1/2, 6 at 1/4, 8 at 1/8 of the
    resolution, by rank) belongs to the answering side and is not applied.
    """

    param_ranges = {"tau": Range(gt=0)}

    needs = frozenset({"relevance"})
    tau: float = 0.8

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        if not self.tau > 0:
            raise SelectionError(f"qframe needs tau > 0, got {self.tau}")
        similarity = features.relevance()
        order, perturbed = gumbel_ranking(similarity, self.tau, rng.random(len(similarity)))
        chosen = sorted(int(i) for i in order[:k])
        return Scored(chosen, [float(perturbed[i]) for i in chosen])
