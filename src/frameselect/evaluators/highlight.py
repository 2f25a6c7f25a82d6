"""QVHighlights highlight detection: HL-mAP and HL-Hit@1 of a selection.

QVHighlights (Lei et al., "QVHighlights: Detecting Moments and Highlights in
Videos via Natural Language Queries", NeurIPS 2021) rates every 2-second clip
of a video with saliency scores 0–4 by three annotators. Reference:
github.com/jayleicn/moment_detr ``standalone_eval/eval.py`` (``eval_highlight``,
``compute_hl_hit1``, ``compute_hl_ap``, ``mk_gt_scores``) and
``standalone_eval/utils.py`` (``get_ap``):

- a clip is positive for an annotator when its score is at least ``min_score``
  (2 "Fair", 3 "Good", 4 "VeryGood"; the reported numbers use 4, the default);
- HL-Hit@1: the clip with the highest predicted saliency is positive for at
  least one annotator;
- HL-mAP: per annotator, the interpolated average precision of the clips
  ranked by predicted saliency (``get_ap``: precision made monotone from the
  low-score end, averaged at each rank where recall grows; 1 when every clip is
  positive, 0 when none is); mean over annotators, then over questions.

Ground truth from ``sample.metadata``: ``saliency_scores`` as one entry per
clip of the whole video (a number, or a list of annotators' numbers), or in
QVHighlights' own form, the scores of ``relevant_clip_ids`` only, the video
being ``duration`` seconds long (else the pool's duration); ``clip_length``
(seconds, default 2).

Predicted saliency of a clip is the best score of the frames the selection
took in it: the selection's own scores when it has them, else the run's
query relevance when the features hold it, else 1. Clips without a selected
frame rank below every clip with one (tied). This scores the *selection*,
not a full saliency curve: a selector gets credit only for clips it picked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.evaluators.base import Evaluator
from frameselect.parts import Range
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection

__all__ = ["saliency_ap", "hl_scores", "gt_saliency", "frame_scores", "clip_saliency", "HLmAP", "HLHit1"]


def saliency_ap(y_true: Sequence[float] | NDArray[Any], y_score: Sequence[float] | NDArray[Any]) -> float:
    """Interpolated average precision of binary labels ranked by score (moment_detr's ``get_ap``).

    Tied scores form one threshold. 1.0 when every label is positive, 0.0 when
    none is.

    >>> saliency_ap([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])
    0.8333333333333333
    """
    truth = np.asarray(y_true, dtype=np.float64)
    score = np.asarray(y_score, dtype=np.float64)
    if truth.shape != score.shape:
        raise ValueError(f"{truth.shape[0]} labels for {score.shape[0]} scores")
    if truth.size == 0 or np.all(truth == 0):
        return 0.0
    if np.all(truth == 1):
        return 1.0
    thresholds = np.unique(score)[::-1]  # distinct scores, descending
    tp = np.array([truth[score >= t].sum() for t in thresholds])
    taken = np.array([np.count_nonzero(score >= t) for t in thresholds])
    precision = tp / taken
    recall = tp / truth.sum()
    # interpolate: the best precision at this or any lower threshold (higher recall)
    best = np.maximum.accumulate(precision[::-1])[::-1]
    grows = np.diff(np.concatenate([[0.0], recall])) != 0
    return float(np.mean(best[grows]))


def hl_scores(gt: NDArray[Any], predicted: NDArray[Any], min_score: float = 4) -> tuple[float, float]:
    """(HL-mAP, HL-Hit@1) of one question: ``gt`` is (clips, annotators) saliency, ``predicted`` (clips,).

    Predictions shorter than the ground truth are padded with zeros and longer
    ones cut, as the reference does for AP; Hit@1 is 0 when the top clip lies
    beyond the ground truth.
    """
    labels = (np.asarray(gt, dtype=np.float64) >= min_score).astype(np.float64)
    if labels.ndim == 1:
        labels = labels[:, None]
    pred = np.asarray(predicted, dtype=np.float64)
    top = int(np.argmax(pred))
    hit = float(np.max(labels[top])) if top < labels.shape[0] else 0.0
    fitted = np.zeros(labels.shape[0])
    n = min(labels.shape[0], pred.shape[0])
    fitted[:n] = pred[:n]
    ap = float(np.mean([saliency_ap(labels[:, w], fitted) for w in range(labels.shape[1])]))
    return ap, hit


def gt_saliency(sample: Sample, pool: CandidatePool | None = None, clip_length: float = 2.0) -> NDArray[np.float64] | None:
    """The (clips, annotators) ground-truth saliency of a sample, or None when it has none."""
    md = sample.metadata
    if "saliency_scores" not in md:
        return None
    rows = [np.atleast_1d(np.asarray(s, dtype=np.float64)) for s in md["saliency_scores"]]
    width = max((r.shape[0] for r in rows), default=1)
    scores = np.array([np.resize(r, width) for r in rows], dtype=np.float64).reshape(-1, width)
    if "relevant_clip_ids" not in md:
        return scores
    duration = md.get("duration", pool.duration if pool is not None else None)
    if duration is None and pool is not None and len(pool):
        duration = float(pool.timestamps[-1])
    if duration is None:
        raise ValueError(f"sample {sample.id!r}: saliency of relevant_clip_ids needs metadata['duration']")
    full = np.zeros((int(float(duration) / clip_length), width))
    ids = np.asarray(md["relevant_clip_ids"], dtype=np.int64)
    if ids.shape[0] != scores.shape[0]:
        raise ValueError(f"sample {sample.id!r}: {ids.shape[0]} relevant_clip_ids for {scores.shape[0]} saliency rows")
    keep = ids < full.shape[0]
    full[ids[keep]] = scores[keep]
    return full


def frame_scores(pool: CandidatePool, selection: Selection, features: Features | None) -> NDArray[np.float64]:
    """A score per selected frame: the selection's own, else the run's relevance, else 1."""
    k = len(selection.indices)
    if selection.scores is not None and len(selection.scores) == k:
        return np.asarray(selection.scores, dtype=np.float64)
    if selection.scores is not None and len(selection.scores) == len(pool):
        return np.asarray(selection.scores, dtype=np.float64)[list(selection.indices)]
    if features is not None:
        try:
            relevance = features.relevance()
        except ValueError:
            relevance = None
        if relevance is not None and relevance.shape[0] == len(pool):
            return np.asarray(relevance, dtype=np.float64)[list(selection.indices)]
    return np.ones(k)


def clip_saliency(pool: CandidatePool, selection: Selection, n_clips: int, clip_length: float = 2.0, features: Features | None = None) -> NDArray[np.float64]:
    """Predicted saliency per clip: the best selected frame in it; clips without one rank below all."""
    scores = frame_scores(pool, selection, features)
    floor = (float(np.min(scores)) - 1.0) if scores.size else 0.0
    out = np.full(n_clips, floor)
    for t, s in zip(selection.timestamps(pool), scores, strict=True):
        clip = int(t // clip_length)
        if 0 <= clip < n_clips:
            out[clip] = max(out[clip], float(s))
    return out


class _HighlightEvaluator(Evaluator):
    param_ranges = {"min_score": Range(), "clip_length": Range(gt=0)}
    which: ClassVar[int] = 0

    def __init__(self, min_score: float = 4, clip_length: float | None = None) -> None:
        self.min_score = float(min_score)
        self.clip_length = None if clip_length is None else float(clip_length)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        clip_length = self.clip_length or float(sample.metadata.get("clip_length", 2.0))
        gt = gt_saliency(sample, pool, clip_length)
        if gt is None or gt.shape[0] == 0:
            return {self.name: math.nan}
        predicted = clip_saliency(pool, selection, gt.shape[0], clip_length, features)
        return {self.name: hl_scores(gt, predicted, self.min_score)[self.which]}


@evaluators.register("hl_map")
class HLmAP(_HighlightEvaluator):
    """QVHighlights HL-mAP of the selection's clip saliency (min score 4, "VeryGood").

    Reference: github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
    (``compute_hl_ap``) and ``standalone_eval/utils.py`` (``get_ap``).
    Ground truth and predicted saliency as the module docstring says.
    """

    which = 0


@evaluators.register("hl_hit1")
class HLHit1(_HighlightEvaluator):
    """QVHighlights HL-Hit@1: the selection's top-scored clip is a highlight for some annotator.

    Reference: github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
    (``compute_hl_hit1``; the first clip wins ties, as ``np.argmax``).
    """

    which = 1
