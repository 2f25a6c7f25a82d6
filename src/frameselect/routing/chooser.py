"""Budgets a question chooses: a budget chooser decides how many frames each question gets, within a cap.

A run with a budget chooser (``evaluate(..., choose_budget="relevance_mass",
choose_params={"cap": 32})``, CLI ``frameselect run --choose-budget NAME -C cap=32``)
asks the chooser, for each question, for a frame count ``k_i`` in
``[min_k, min(cap, pool size)]``; the selector then selects ``k_i`` frames as it
would at a fixed budget (the chooser says how many, the selector which). Each
record stores its ``k_i`` (``SampleRecord.k`` and ``metadata["chosen_budget"]``),
and the run's table reports the mean (``budget``) and the spread
(``budget_std``, ``budget_min``, ``budget_max``) beside accuracy.

Two choosers are built in. Both are this project's own rules, inspired by
published methods whose reference code is not public: they are not
reproductions.

``relevance_mass`` (a count predicted from the question and the pool, in the
spirit of FrameOracle, which predicts how many frames a question needs)::

    z_i = (r_i - min r) / (max r - min r)      (all 1 for a flat r)
    p_i = exp(z_i / temperature) / sum_j exp(z_j / temperature)
    s   = mass + (1 - mass) * text_weight * text_demand(question)
    k   = the fewest candidates whose largest p_i sum to at least s

clipped to ``[min_k, min(cap, n)]``. A peaked relevance profile needs few
frames to hold the share ``s``; a flat one needs many. ``text_demand``
(:func:`frameselect.routing.routers.text_demand`) raises the share for counting
and whole-video questions (1.0) and ordering ones (0.6) over a question about
one moment (0.1).

``marginal_stop`` (adaptive stopping in the selector's order, in the spirit of
EFS and AdaQ, which stop adding frames when more stop helping): the selector's
frames at the cap, ranked by relevance (highest first, ties by position), are
added one at a time; a frame at candidate ``j`` covers candidates
``j - radius .. j + radius``, and its gain is the mass ``p`` (as above) of the
candidates it newly covers. Frames are added while the gain is at least
``threshold``; the first frame below it stops the count (at least ``min_k``).

Both need query relevance (``needs = {"relevance"}``): the run needs a
text-capable encoder, checked at plan time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Part, Range
from frameselect.registry import Registry

__all__ = ["BudgetChooser", "RelevanceMassChooser", "MarginalStopChooser", "budget_choosers", "relevance_mass_share", "coverage_gains"]

#: the registry of budget choosers (plug-ins: entry-point group ``frameselect.budget_choosers``)
budget_choosers: Registry[BudgetChooser] = Registry("budget_choosers", ("frameselect.routing.chooser",), None, singular="budget chooser")


class BudgetChooser(Part):
    """Base of budget choosers: :meth:`choose` gives one question's frame count in ``[min_k, min(cap, n)]``.

    ``uses_order``: the chooser reads the selector's frames at the cap
    (``order``), so the run asks the selector for them first.
    """

    kind: ClassVar[str] = "budget_choosers"
    needs: ClassVar[frozenset[str]] = frozenset({"relevance"})
    uses_order: ClassVar[bool] = False
    param_ranges = {"cap": Range(ge=1, integer=True), "min_k": Range(ge=1, integer=True)}

    def __init__(self, cap: int = 64, min_k: int = 1) -> None:
        if int(min_k) > int(cap):
            raise ValueError(f"min_k={min_k} is above cap={cap}; give min_k <= cap")
        self.cap = int(cap)
        self.min_k = int(min_k)

    def choose(self, question: str, relevance: NDArray[np.float64], order: Sequence[int] = ()) -> int:
        """The frame count for one question: ``relevance`` over its pool; ``order`` the selector's frames at the cap, best first."""
        raise NotImplementedError

    def clip(self, k: int, n: int) -> int:
        """``k`` within ``[min_k, min(cap, n)]`` (at least 1)."""
        return max(1, min(max(int(k), self.min_k), self.cap, n))


def _mass(relevance: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """``p``: min-max-normalised relevance through a softmax at ``temperature`` (a flat signal gives equal mass)."""
    r = np.asarray(relevance, dtype=np.float64)
    lo, hi = float(r.min()), float(r.max())
    z = (r - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(r)
    w = np.exp((z - 1.0) / temperature)  # shifted by the maximum: the same softmax, no overflow
    out: NDArray[np.float64] = w / w.sum()
    return out


def relevance_mass_share(p: NDArray[np.float64], share: float) -> int:
    """The fewest entries of ``p`` (largest first) whose sum reaches ``share``.

    >>> relevance_mass_share(np.array([0.5, 0.3, 0.2]), 0.75)
    2
    """
    cum = np.cumsum(np.sort(np.asarray(p, dtype=np.float64))[::-1])
    return min(int(np.searchsorted(cum, share - 1e-12)) + 1, len(cum))


def coverage_gains(p: NDArray[np.float64], order: Sequence[int], radius: int) -> list[float]:
    """The mass each frame of ``order`` newly covers (a frame covers ``radius`` candidates either side), in order.

    >>> coverage_gains(np.array([0.1, 0.2, 0.3, 0.4]), [3, 2, 0], 1)
    [0.7, 0.2, 0.1]
    """
    covered = np.zeros(len(p), dtype=bool)
    gains = []
    for j in order:
        lo, hi = max(0, j - radius), min(len(p), j + radius + 1)
        fresh = ~covered[lo:hi]
        gains.append(round(float(p[lo:hi][fresh].sum()), 12))
        covered[lo:hi] = True
    return gains


@budget_choosers.register("relevance_mass")
class RelevanceMassChooser(BudgetChooser):
    """As many frames as hold a share of the pool's relevance mass; the share rises with the question's text demand (module docs)."""

    param_ranges = {
        **BudgetChooser.param_ranges,
        "mass": Range(gt=0, le=1),
        "temperature": Range(gt=0),
        "text_weight": Range(ge=0, le=1),
    }

    def __init__(self, cap: int = 64, min_k: int = 1, mass: float = 0.5, temperature: float = 0.2, text_weight: float = 0.5) -> None:
        super().__init__(cap, min_k)
        self.mass = float(mass)
        self.temperature = float(temperature)
        self.text_weight = float(text_weight)

    def share(self, question: str) -> float:
        """``mass + (1 - mass) * text_weight * text_demand(question)``."""
        from frameselect.routing.routers import text_demand

        return self.mass + (1.0 - self.mass) * self.text_weight * text_demand(question)

    def choose(self, question: str, relevance: NDArray[np.float64], order: Sequence[int] = ()) -> int:
        p = _mass(relevance, self.temperature)
        return self.clip(relevance_mass_share(p, self.share(question)), len(p))


@budget_choosers.register("marginal_stop")
class MarginalStopChooser(BudgetChooser):
    """Frames in the selector's order, ranked by relevance, until one newly covers less than ``threshold`` of the relevance mass (module docs)."""

    uses_order = True
    param_ranges = {
        **BudgetChooser.param_ranges,
        "threshold": Range(ge=0, le=1),
        "radius": Range(ge=0, integer=True),
        "temperature": Range(gt=0),
    }

    def __init__(self, cap: int = 64, min_k: int = 1, threshold: float = 0.005, radius: int = 2, temperature: float = 0.3) -> None:
        super().__init__(cap, min_k)
        self.threshold = float(threshold)
        self.radius = int(radius)
        self.temperature = float(temperature)

    def choose(self, question: str, relevance: NDArray[np.float64], order: Sequence[int] = ()) -> int:
        p = _mass(relevance, self.temperature)
        r = np.asarray(relevance, dtype=np.float64)
        ranked = sorted((int(j) for j in order), key=lambda j: (-r[j], j))
        k = 0
        for gain in coverage_gains(p, ranked, self.radius):
            if gain < self.threshold:
                break
            k += 1
        return self.clip(k, len(p))


def spread(ks: Sequence[int]) -> dict[str, float]:
    """Mean, population standard deviation, minimum and maximum of per-question budgets.

    >>> spread([4, 8, 12])
    {'budget': 8.0, 'budget_std': 3.265986, 'budget_min': 4.0, 'budget_max': 12.0}
    """
    a = np.asarray(ks, dtype=np.float64)
    if a.size == 0:
        return {}
    return {"budget": float(a.mean()), "budget_std": round(float(a.std()), 6), "budget_min": float(a.min()), "budget_max": float(a.max())}


def honest_mean(mean: float) -> int:
    """A realised mean budget as a whole frame count for the fixed-budget references: rounded half up (never silently down to favour them).

    >>> honest_mean(13.5), honest_mean(13.49)
    (14, 13)
    """
    return max(1, int(math.floor(mean + 0.5)))
