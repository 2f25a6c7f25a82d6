"""How a question's frame budget is shared among its videos.

A :class:`BudgetPolicy` turns a total budget into one share per video,
``{video_id: k_v}``. Every policy registered here except the two named after
official scripts keeps the total exactly: ``Σ k_v = min(total, Σ N_v)`` (a
video never gets more frames than its pool holds; what it cannot take goes to
the others). Shares are whole numbers found by the largest-remainder rule
(:func:`largest_remainder`), ties to the earlier video, so the same inputs
always give the same shares.

==================  ===========================================================
``equal``           the same share per video (what CrossVid's scripts do, but
                    with the remainder given out instead of dropped)
``duration``        shares proportional to each video's duration
``relevance``       query-driven: shares proportional to the relevance mass a
                    video holds among the ``total`` most relevant frames of the
                    union of the pools (plus a floor), like a router at a fixed
                    mean, here at a fixed total
``per_video``       a fixed share per video (``k`` each), whatever the total
``crossvid``        CrossVid's official sampling: ``total // n`` frames per
                    video (the remainder is dropped, as in its ``eval/*.py``)
``mvu_eval``        MVU-Eval's official sampling: 32 frames per video (its
                    ``inference/main.py --nframes``), every frame of a
                    shorter video
==================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.crossvideo._registry import budget_policies
from frameselect.errors import SelectionError
from frameselect.parts import Part, Range
from frameselect.types import CandidatePool, Features, Sample

__all__ = ["BudgetPolicy", "largest_remainder", "pool_duration"]


def largest_remainder(weights: Sequence[float] | NDArray[Any], total: int, caps: Sequence[int] | None = None, minimum: int = 0) -> list[int]:
    """Whole shares of ``total`` proportional to ``weights``, each within ``[minimum, cap]``, summing to ``min(total, Σ caps)``.

    Hamilton's rule: floors of the exact quotas, then one more to the largest
    remainders (ties to the earlier entry); a share above its cap is cut and
    the excess shared again among the others. ``minimum`` (when ``total``
    allows it) is given first. All-zero weights share equally.

    >>> largest_remainder([1, 1, 1], 8)
    [3, 3, 2]
    >>> largest_remainder([3, 1], 8, caps=[2, 100])
    [2, 6]
    >>> largest_remainder([1.0, 0.0], 4, minimum=1)
    [3, 1]
    """
    w = np.asarray(weights, dtype=np.float64)
    n = int(w.shape[0])
    if n == 0:
        return []
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"share weights must be finite and non-negative, got {w.tolist()}")
    if isinstance(total, bool) or int(total) != total or total < 0:
        raise ValueError(f"a total budget is a non-negative whole number, got {total!r}")
    if total > 2**53:
        raise ValueError(f"a total budget of {total} is too large to share exactly (at most 2**53)")
    cap = np.asarray(caps if caps is not None else [int(total)] * n, dtype=np.int64)
    if cap.shape != (n,) or np.any(cap < 0):
        raise ValueError("caps must be one non-negative whole number per entry")
    out = np.zeros(n, dtype=np.int64)
    remaining = min(int(total), int(cap.sum()))
    if minimum > 0 and remaining >= minimum * n:
        out = np.minimum(cap, minimum)
        remaining -= int(out.sum())
    while remaining > 0:
        open_ = out < cap
        ww = np.where(open_, w, 0.0)
        if ww.sum() <= 0:
            ww = open_.astype(np.float64)
        quota = ww / ww.sum() * remaining
        room = cap - out
        add = np.minimum(np.floor(quota).astype(np.int64), room)
        left = remaining - int(add.sum())
        if left > 0:
            frac = np.where(open_ & (add < room), quota - np.floor(quota), -1.0)
            order = np.lexsort((np.arange(n), -frac))
            for i in order[:left]:
                if frac[i] < 0:
                    break
                add[i] += 1
        if int(add.sum()) == 0:  # every quota rounded to nothing: one frame to the first open entry by weight
            add[int(np.lexsort((np.arange(n), -ww))[0])] = 1
        out = out + add
        remaining -= int(add.sum())
    return [int(x) for x in out]


def pool_duration(pool: CandidatePool) -> float:
    """A pool's duration: the video's when known, else the span of its timestamps."""
    if pool.duration is not None and pool.duration > 0:
        return float(pool.duration)
    ts = pool.timestamps
    return float(ts[-1] - ts[0]) if len(ts) > 1 else 0.0


class BudgetPolicy(Part):
    """Base of budget policies. ``needs``: ``{"relevance"}`` for a query-driven policy."""

    kind: ClassVar[str] = "budget_policies"
    needs: ClassVar[frozenset[str]] = frozenset()
    #: False for a policy that reproduces an official script that does not keep the total
    keeps_total: ClassVar[bool] = True

    def shares(self, sample: Sample, pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features] | None = None) -> dict[str, int]:
        """``{video_id: k_v}`` for the sample's videos, in the sample's order."""
        ids = [v.id for v in sample.video_refs]
        missing = [i for i in ids if i not in pools]
        if missing:
            raise SelectionError(f"sample {sample.id!r}: no candidate pool for video(s) {missing}")
        if "relevance" in self.needs:
            missing = [i for i in ids if features is None or i not in features]
            if missing:
                raise SelectionError(f"budget policy {self.name!r} needs query relevance for every video; none for {missing}")
        return self._shares(ids, pools, int(total), features or {})

    def weights(self, sample: Sample, pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features] | None = None) -> list[float] | None:
        """What the policy shares a question's budget in proportion to, one weight per video in the sample's order.

        A budget counted in other units than frames (visual tokens:
        :mod:`frameselect._engine.token_budget`) is shared by these weights; ``total``
        is the frame count that budget stands for (``relevance`` reads the
        ``total`` most relevant frames). None for a policy whose shares are no
        proportion (a fixed count per video, or an official script's rounding).
        """
        ids = [v.id for v in sample.video_refs]
        if "relevance" in self.needs:
            missing = [i for i in ids if features is None or i not in features]
            if missing:
                raise SelectionError(f"budget policy {self.name!r} needs query relevance for every video; none for {missing}")
        found = self._weights(ids, pools, int(total), features or {})
        return None if found is None else [float(w) for w in found]

    def _weights(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> list[float] | None:
        return None

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        raise NotImplementedError


def _caps(ids: list[str], pools: Mapping[str, CandidatePool]) -> list[int]:
    return [len(pools[i]) for i in ids]


@budget_policies.register("equal")
class EqualShare(BudgetPolicy):
    """The same share per video; the remainder goes to the earliest videos (total kept)."""

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        return dict(zip(ids, largest_remainder([1.0] * len(ids), total, _caps(ids, pools))))

    def _weights(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> list[float] | None:
        return [1.0] * len(ids)


@budget_policies.register("duration")
class DurationShare(BudgetPolicy):
    """Shares proportional to each video's duration (total kept; every video gets ``min_per_video`` first when the total allows)."""

    param_ranges = {"min_per_video": Range(ge=0, integer=True)}

    def __init__(self, min_per_video: int = 1) -> None:
        self.min_per_video = int(min_per_video)

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        weights = [pool_duration(pools[i]) for i in ids]
        return dict(zip(ids, largest_remainder(weights, total, _caps(ids, pools), self.min_per_video)))

    def _weights(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> list[float] | None:
        return [pool_duration(pools[i]) for i in ids]


def union_relevance(ids: list[str], features: Mapping[str, Features]) -> dict[str, NDArray[np.float64]]:
    """Each video's relevance, min-max normalised to [0, 1] over the union of the pools (one scale for all videos)."""
    rel = {i: np.asarray(features[i].relevance(), dtype=np.float64) for i in ids}
    allv = np.concatenate([rel[i] for i in ids]) if ids else np.zeros(0)
    if allv.size and not np.all(np.isfinite(allv)):
        raise SelectionError("query relevance holds NaN or infinite values; clean the features before selecting")
    lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 0.0)
    span = hi - lo
    return {i: (rel[i] - lo) / span if span > 0 else np.zeros_like(rel[i]) for i in ids}


@budget_policies.register("relevance")
class RelevanceShare(BudgetPolicy):
    """Query-driven shares at a fixed total: proportional to ``floor + mass_v``.

    ``mass_v`` is the share of relevance (normalised over the union of the
    pools) that video ``v`` holds among the ``total`` most relevant frames of
    the union; ``floor`` (a fraction of the mean mass) keeps a video with no
    relevant frame in the count. Every video gets ``min_per_video`` first when
    the total allows.
    """

    needs = frozenset({"relevance"})
    param_ranges = {"floor": Range(ge=0), "min_per_video": Range(ge=0, integer=True)}

    def __init__(self, floor: float = 0.1, min_per_video: int = 1) -> None:
        self.floor = float(floor)
        self.min_per_video = int(min_per_video)

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        weights = self._weights(ids, pools, total, features)
        return dict(zip(ids, largest_remainder(weights, total, _caps(ids, pools), self.min_per_video)))

    def _weights(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> list[float]:
        rel = union_relevance(ids, features)
        owner = np.concatenate([np.full(len(rel[i]), j) for j, i in enumerate(ids)])
        values = np.concatenate([rel[i] for i in ids])
        top = np.lexsort((np.arange(values.shape[0]), -values))[:total]
        mass = np.bincount(owner[top], weights=values[top], minlength=len(ids))
        mass = mass / mass.sum() if mass.sum() > 0 else np.full(len(ids), 1.0 / len(ids))
        return [float(w) for w in self.floor / len(ids) + mass]


@budget_policies.register("per_video")
class PerVideoShare(BudgetPolicy):
    """A fixed budget per video (``k`` each, at most its pool); the total asked for is ignored."""

    keeps_total = False
    param_ranges = {"k": Range(ge=1, integer=True)}

    def __init__(self, k: int = 8) -> None:
        self.k = int(k)

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        return {i: min(self.k, len(pools[i])) for i in ids}


@budget_policies.register("mvu_eval")
class MVUEvalShare(PerVideoShare):
    """MVU-Eval's sampling: ``k=32`` frames per video, every frame of a video with fewer; the total asked for is ignored.

    NJU-LINK/MVU-Eval@a5937ad, ``inference/main.py`` (``encode_video``):
    ``np.linspace(0, total - 1, nframes, dtype=int)`` over the video's decoded
    frames, or all of them when ``total <= nframes`` (``--nframes`` 32). This
    policy gives the count; the frames are the selector's. With the pool
    policy ``all`` (every frame) and ``uniform`` (its default ``linspace``
    convention) the frames are the script's indices; over another pool (say
    ``fps=1``) the same rule runs over that pool's frames instead.
    """

    def __init__(self, k: int = 32) -> None:
        super().__init__(k)


@budget_policies.register("crossvid")
class CrossVidShare(BudgetPolicy):
    """CrossVid's official sampling: ``total // n`` frames per video, the remainder dropped.

    chuntianli666/CrossVid@5b44760, ``eval/BU.py`` (and CC, NC, PEA):
    ``frames_per_video = total_frames // len(videos)`` with ``total_frames = 128``;
    three videos get 42 each (126 frames, not 128). Use ``equal`` for the same
    split with the total kept.
    """

    keeps_total = False

    def shares(self, sample: Sample, pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features] | None = None) -> dict[str, int]:
        n = len(sample.video_refs)
        if 0 < int(total) < n:
            raise SelectionError(
                f"sample {sample.id!r}: budget policy 'crossvid' gives each of its {n} videos {int(total)} // {n} = 0 frames "
                f"(CrossVid's scripts drop the remainder); give a budget of at least {n} frames, or use budget policy 'equal', which keeps the total"
            )
        return super().shares(sample, pools, total, features)

    def _shares(self, ids: list[str], pools: Mapping[str, CandidatePool], total: int, features: Mapping[str, Features]) -> dict[str, int]:
        return {i: min(total // len(ids), len(pools[i])) for i in ids}
