"""Selection over a question's videos: per video under a budget policy, or jointly.

:func:`select_across_videos` is what a sample loop calls for a question over
several videos: either a :class:`JointSelector` chooses over the union of the
pools, or a budget policy shares the total among the videos and any
single-video selector runs in each video under its share. A one-video sample
goes through the same function and gets the selector's own selection.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.crossvideo._registry import joint_selectors
from frameselect.crossvideo.budget import BudgetPolicy, EqualShare, union_relevance
from frameselect.errors import SelectionError
from frameselect.parts import Part, Range
from frameselect.selectors.base import Selector, check_budget
from frameselect.types import Answer, CandidatePool, Features, MultiSelection, Sample, Selection

__all__ = ["JointSelector", "TopKUnion", "BindingSelector", "select_across_videos", "video_seed", "one_video_sample"]


def video_seed(seed: int, video_id: str) -> int:
    """A per-video seed: the run's seed combined with a CRC of the video's id (order-independent)."""
    return (int(seed) * 1_000_003 + zlib.crc32(video_id.encode())) % (2**32)


class JointSelector(Part):
    """Base of selectors that choose frames over all of a question's videos at once."""

    kind: ClassVar[str] = "joint_selectors"
    needs: ClassVar[frozenset[str]] = frozenset({"relevance"})
    #: the selector drives the answerer (``holmes``): the run hands it the encoder
    #: (:meth:`use_encoder`), shows the answerer :meth:`answer_view` of its selection and takes the
    #: answer through :meth:`read_out`. Such a selector needs an answerer, a router may assign it only
    #: alone, a replay cannot swap the answerer in, and selecting from arrays refuses it.
    drives_answerer: ClassVar[bool] = False

    def use_encoder(self, encoder: Any) -> None:
        """Take the run's encoder (a live object, not configuration), for a selector that scores its own text targets; default: unused."""

    def answer_view(self, multi: MultiSelection) -> MultiSelection:
        """The selections the answerer sees, of the ones :meth:`select` made; default: all of them."""
        return multi

    def audit(self, sample: Sample) -> tuple[list[int], dict[str, Any]] | None:
        """What :meth:`read_out` needs of this sample's selection, taken right after it (a run may select several samples before answering); default: nothing."""
        return None

    def read_out(self, sample: Sample, answer: Answer, audited: tuple[list[int], dict[str, Any]] | None = None) -> tuple[Answer, dict[str, Any]]:
        """The answer a selector that drives the answerer gives for the backend's ``answer``, and the record the run stores under the selector's name."""
        raise NotImplementedError(f"joint selector {self.name!r} does not drive the answerer (drives_answerer is false)")

    @staticmethod
    def metrics(record: Mapping[str, Any]) -> dict[str, float]:
        """The metrics a :meth:`read_out` record adds to the sample's; default: none."""
        return {}

    def frame_scales(self, n: int) -> tuple[float, ...] | None:
        """Joint selectors send every frame at its decoded size (no mixed resolution): None, as :meth:`Selector.frame_scales` says."""
        return None

    def select(self, sample: Sample, pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int) -> MultiSelection:
        total = check_budget(total)
        ids = [v.id for v in sample.video_refs]
        missing = [i for i in ids if i not in pools or i not in features]
        if missing:
            raise SelectionError(f"sample {sample.id!r}: joint selector {self.name!r} needs a pool and features for every video; none for {missing}")
        for i in ids:
            if len(pools[i]) == 0:
                raise SelectionError(f"candidate pool of video {i!r} of sample {sample.id!r} is empty")
        start = time.perf_counter()
        chosen, bindings = self._select(ids, pools, features, min(total, sum(len(pools[i]) for i in ids)))
        latency = time.perf_counter() - start
        by_video = {}
        for i in ids:
            idx = sorted({int(x) for x in chosen.get(i, [])})
            if idx and (idx[0] < 0 or idx[-1] >= len(pools[i])):
                raise SelectionError(f"joint selector {self.name!r} chose indices outside the pool of video {i!r}")
            by_video[i] = Selection(indices=tuple(idx), selector=self.name, latency_s=latency / len(ids))
        return MultiSelection(by_video, budget=total, selector=self.name, policy="joint", bindings=tuple(bindings))

    def _select(
        self, ids: list[str], pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int
    ) -> tuple[dict[str, list[int]], list[tuple[str, int, str, int]]]:
        raise NotImplementedError


def _union_order(ids: list[str], values: Mapping[str, NDArray[np.float64]]) -> list[tuple[str, int]]:
    """Every (video, index) of the union, by descending value; ties to the earlier video, then the earlier frame."""
    owner = np.concatenate([np.full(len(values[i]), j) for j, i in enumerate(ids)])
    local = np.concatenate([np.arange(len(values[i])) for i in ids])
    v = np.concatenate([values[i] for i in ids])
    order = np.lexsort((local, owner, -v))
    return [(ids[int(owner[o])], int(local[o])) for o in order]


@joint_selectors.register("topk_union")
class TopKUnion(JointSelector):
    """The ``total`` most relevant frames of the union of the pools (relevance on one scale across videos)."""

    def _select(
        self, ids: list[str], pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int
    ) -> tuple[dict[str, list[int]], list[tuple[str, int, str, int]]]:
        rel = {i: np.asarray(features[i].relevance(), dtype=np.float64) for i in ids}
        for i in ids:
            if rel[i].shape != (len(pools[i]),):
                raise SelectionError(f"relevance of video {i!r} has shape {rel[i].shape}, expected ({len(pools[i])},)")
        out: dict[str, list[int]] = {i: [] for i in ids}
        for vid, idx in _union_order(ids, union_relevance(ids, features))[:total]:
            out[vid].append(idx)
        return out, []


@joint_selectors.register("binding")
class BindingSelector(JointSelector):
    """Frames relevant to the question that also match a frame of another video, taken in pairs.

    Each frame ``i`` scores ``(1 - lam) r_i + lam b_i``: ``r`` is relevance
    min-max normalised over the union of the pools, ``b_i = max_j cos(e_i, e_j)
    r_j`` over the frames ``j`` of the other videos (a relevant frame seen
    again elsewhere). Greedily, the best-scoring frame not yet taken is chosen
    with its partner ``j`` (when the budget has room), and the pair is recorded
    as a binding; so a comparison gets both sides. ``min_similarity``: a
    partner less similar than this is not taken (the frame is chosen alone).
    """

    needs = frozenset({"relevance", "embeddings"})
    param_ranges = {"lam": Range(ge=0, le=1), "min_similarity": Range(ge=-1, le=1)}

    def __init__(self, lam: float = 0.5, min_similarity: float = 0.5) -> None:
        self.lam = float(lam)
        self.min_similarity = float(min_similarity)

    def _select(
        self, ids: list[str], pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int
    ) -> tuple[dict[str, list[int]], list[tuple[str, int, str, int]]]:
        emb = {}
        for i in ids:
            e = features[i].embeddings
            if e is None or e.shape[0] != len(pools[i]):
                raise SelectionError(f"joint selector 'binding' needs one frame embedding per candidate of video {i!r}")
            e64 = np.asarray(e, dtype=np.float64)
            norms = np.linalg.norm(e64, axis=1, keepdims=True)
            emb[i] = e64 / np.where(norms > 0, norms, 1.0)
        rel = union_relevance(ids, features)
        partner: dict[str, tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]] = {}
        score = {}
        for i in ids:
            best_w = np.full(len(pools[i]), -np.inf)
            best_v = np.zeros(len(pools[i]), dtype=np.int64)
            best_j = np.zeros(len(pools[i]), dtype=np.int64)
            best_sim = np.zeros(len(pools[i]))
            for b, other in enumerate(ids):
                if other == i:
                    continue
                sim = emb[i] @ emb[other].T
                weighted = sim * rel[other][None, :]
                j = np.argmax(weighted, axis=1)
                w = weighted[np.arange(len(j)), j]
                better = w > best_w
                best_w = np.where(better, w, best_w)
                best_v = np.where(better, b, best_v)
                best_j = np.where(better, j, best_j)
                best_sim = np.where(better, sim[np.arange(len(j)), j], best_sim)
            bind = np.where(np.isfinite(best_w), best_w, 0.0)
            partner[i] = (best_v, best_j, best_sim, bind)
            score[i] = (1.0 - self.lam) * rel[i] + self.lam * bind
        taken = {i: np.zeros(len(pools[i]), dtype=bool) for i in ids}
        out: dict[str, list[int]] = {i: [] for i in ids}
        bindings: list[tuple[str, int, str, int]] = []
        count = 0
        for vid, idx in _union_order(ids, score):
            if count >= total:
                break
            if taken[vid][idx]:
                continue
            taken[vid][idx] = True
            out[vid].append(idx)
            count += 1
            if len(ids) < 2:
                continue
            pv, pj, psim, _ = partner[vid]
            other, j = ids[int(pv[idx])], int(pj[idx])
            if psim[idx] < self.min_similarity:
                continue
            if not taken[other][j] and count < total:
                taken[other][j] = True
                out[other].append(j)
                count += 1
            if taken[other][j]:
                bindings.append((vid, idx, other, j))
        return out, bindings


def one_video_sample(sample: Sample, video: str) -> Sample:
    """The one-video view of one of ``sample``'s videos (its path and evidence), for pools and features."""
    ref = next(r for r in sample.video_refs if r.id == video)
    return Sample(id=f"{sample.id}#{ref.id}", video=ref.path, query=sample.query, answer=sample.answer, evidence=ref.evidence, metadata={})


def select_across_videos(
    sample: Sample,
    pools: Mapping[str, CandidatePool],
    features: Mapping[str, Features],
    total_budget: int,
    *,
    selector: Selector | JointSelector,
    policy: BudgetPolicy | None = None,
    seed: int = 0,
    shares: Mapping[str, int] | None = None,
) -> MultiSelection:
    """The sample's frames, one :class:`Selection` per video, keyed by :attr:`VideoRef.id`.

    ``selector`` is a :class:`JointSelector` (it chooses over the union; no
    policy) or a single-video :class:`Selector`, run in each video under the
    share ``policy`` (default ``equal``) gives it; a video whose share is 0
    gets an empty selection. ``pools``/``features`` are keyed by video id.
    The loop calls this once per sample; a one-video sample gets its one
    selection under the key ``"video_1"``. ``shares`` (``{video_id: k_v}``)
    gives shares planned beforehand (a token budget's plan), in place of the
    policy's; ``total_budget`` is then their sum.
    """
    total = check_budget(total_budget)
    if isinstance(selector, JointSelector):
        if policy is not None:
            raise SelectionError(f"joint selector {selector.name!r} chooses over all videos itself; give no budget policy")
        return selector.select(sample, pools, features, total)
    policy = policy if policy is not None else EqualShare()
    if shares is None:
        shares = policy.shares(sample, pools, total, features)
    else:
        missing = [r.id for r in sample.video_refs if r.id not in shares]
        if missing:
            raise SelectionError(f"sample {sample.id!r}: no planned share for video(s) {missing}")
    by_video = {}
    for ref in sample.video_refs:
        k = shares[ref.id]
        if k == 0:
            by_video[ref.id] = Selection(indices=(), selector=selector.name)
            continue
        by_video[ref.id] = selector.select(pools[ref.id], sample.query, k, features.get(ref.id), seed=video_seed(seed, ref.id))
    return MultiSelection(by_video, budget=total, selector=selector.name, policy=policy.name)
