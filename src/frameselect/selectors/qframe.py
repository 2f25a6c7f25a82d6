"""Q-Frame: query-aware frame selection by Gumbel-max sampling.

Zhang et al., "Q-Frame: Query-aware Frame Selection and Multi-Resolution
Adaptation for Video-LLMs", ICCV 2025. Reference code:
github.com/xiaomi-research/q-frame, ``lmms_eval/models/qwen2_vl_w_qframe.py``
(function ``TextImageMatching``, called with ``tau=0.8``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.selectors.multires import scales_by_rank, tiered_scales
from frameselect.types import CandidatePool, Features, Query, Selection

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
    precision, where tiny probabilities become ``-inf``).

    Multi-resolution (``multires=True``, off by default): the reference's
    step after the ranking in ``Qwen2_VL.generate_until`` of the same file
    sends the ``high_frames`` (6) best-ranked frames at half the decoded width
    and height, the next ``mid_frames`` (6) at a quarter, the next
    ``low_frames`` (8) at an eighth (PIL resize to ``(width // s, height //
    s)``), in their time order, and drops the other candidates of its
    32-frame pool. Here each selected frame's scale (1/2, 1/4, 1/8 by its
    rank in the perturbed order) is carried by the selection, and the run
    sends it at the floored size (``frameselect._engine.token_budget.scaled_size``,
    equal to ``side // s``). Departures: the budget ``k`` decides how many
    frames are kept (the reference keeps ``high + mid + low`` = 20; at
    ``k = 20`` the two agree), and ranks past the three tiers are sent at
    1/8; the reference sends each frame as its own image (for Qwen2-VL each
    pays for its own two-frame temporal patch), while a run here sends and
    prices the frames of each size as one video
    (:meth:`frameselect.tokens.TokenModel.selection_tokens`). The paper
    states the tiers as keeping the most relevant frames at higher
    resolution; the code's "high" tier is already half the decoded size.
    """

    param_ranges = {
        "tau": Range(gt=0),
        "high_frames": Range(ge=0, integer=True),
        "mid_frames": Range(ge=0, integer=True),
        "low_frames": Range(ge=0, integer=True),
    }

    needs = frozenset({"relevance"})
    tau: float = 0.8
    multires: bool = False
    high_frames: int = 6
    mid_frames: int = 6
    low_frames: int = 8

    def frame_scales(self, n: int) -> tuple[float, ...] | None:
        if not self.multires:
            return None
        return tiered_scales(n, [(self.high_frames, 0.5), (self.mid_frames, 0.25), (self.low_frames, 0.125)], 0.125)

    def select(
        self,
        pool: CandidatePool,
        query: Query | None,
        k: int,
        features: Features | None = None,
        *,
        seed: int = 0,
        rng: np.random.Generator | None = None,
    ) -> Selection:
        chosen = super().select(pool, query, k, features, seed=seed, rng=rng)
        by_rank = self.frame_scales(len(chosen.indices))
        if by_rank is None or chosen.scores is None:
            return chosen
        # the perturbed order: higher first, the earlier frame on exact ties (gumbel_ranking's stable sort)
        ranking = [i for _, i in sorted(zip(chosen.scores, chosen.indices, strict=True), key=lambda pair: (-pair[0], pair[1]))]
        return dataclasses.replace(chosen, scales=scales_by_rank(chosen.indices, ranking, by_rank))

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        if not self.tau > 0:
            raise SelectionError(f"qframe needs tau > 0, got {self.tau}")
        similarity = features.relevance()
        order, perturbed = gumbel_ranking(similarity, self.tau, rng.random(len(similarity)))
        chosen = sorted(int(i) for i in order[:k])
        return Scored(chosen, [float(perturbed[i]) for i in chosen])
