"""QVHighlights moment retrieval: MR-mAP of a selection's windows.

QVHighlights (Lei et al., "QVHighlights: Detecting Moments and Highlights in
Videos via Natural Language Queries", NeurIPS 2021) scores predicted moments
(start, end, score) against the annotated ``relevant_windows``. Reference:
github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
(``eval_moment_retrieval``, ``compute_mr_ap``, ``get_data_by_range``) and
``standalone_eval/utils.py`` (``compute_average_precision_detection``,
``interpolated_precision_recall``):

- per question, the average precision of its predictions (the 10 first,
  ranked by score) at each temporal-IoU threshold 0.5, 0.55, ..., 0.95:
  a prediction is a true positive when its best-IoU ground-truth window not
  yet matched reaches the threshold; precision interpolated as in VOC 2011;
- ``mr_map`` is the mean over the ten thresholds, ``mr_map@0.5`` and
  ``mr_map@0.75`` single thresholds, each averaged over questions;
- ``mr_map_short``, ``_middle``, ``_long``: the same mean with only the
  ground-truth windows of length in (0, 10], (10, 30] and (30, 150] seconds; a
  question without such a window is left out of that bucket (NaN here).

Values are fractions (the reference prints percentages rounded to 0.01).
Edge cases, as the reference defines them: a question without predicted
windows (an empty selection) is left out of every mean (the reference builds
its question list from the predictions), so it is NaN here; a bucket that no
question falls in makes the reference raise ``TypeError`` (it zips the
thresholds with the NaN mean of an empty array); here its mean is NaN.

The selection's predicted windows: the ``clip_length``-second clips (2 s in
QVHighlights; ``metadata["clip_length"]``) that hold a selected frame,
consecutive clips merged into one window, cut at ``metadata["duration"]``
when known; a window's score is the best score of its frames (the
selection's own scores, else the run's query relevance, else 1), ties kept
in time order. Ground truth: the sample's evidence spans (the loader's
``relevant_windows``).

Grounded answers: an answer that names windows (``Answer.windows``, the
model's moments in seconds, best first) is scored instead of the selection,
its windows ranked in the order given; ``grounding_from_answer`` says which
(see :mod:`frameselect.evaluators.grounding`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from frameselect.evaluators.grounding import GROUNDING_SOURCE, GroundedEvaluator, grounding_source
from frameselect.evaluators.highlight import frame_scores
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection

__all__ = [
    "MR_IOU_THRESHOLDS",
    "MR_LENGTH_BUCKETS",
    "MR_MAX_WINDOWS",
    "moment_ap",
    "moment_retrieval_scores",
    "selection_moments",
    "MomentRetrievalMAP",
]

#: temporal-IoU thresholds of MR-mAP: 0.5, 0.55, ..., 0.95
MR_IOU_THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))

#: ground-truth window length buckets (exclusive, inclusive], seconds
MR_LENGTH_BUCKETS: dict[str, tuple[float, float]] = {"short": (0.0, 10.0), "middle": (10.0, 30.0), "long": (30.0, 150.0)}

#: predicted windows scored per question (the reference's ``max_pred_windows``)
MR_MAX_WINDOWS = 10

Moment = tuple[float, float, float]


def _ious(start: float, end: float, gt: NDArray[np.float64]) -> NDArray[np.float64]:
    """Temporal IoU of one window with each ground-truth window (0 where the union is empty)."""
    inter = np.clip(np.minimum(end, gt[:, 1]) - np.maximum(start, gt[:, 0]), 0.0, None)
    union = (end - start) + (gt[:, 1] - gt[:, 0]) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)  # type: ignore[no-any-return]


def _interpolated_ap(precision: NDArray[np.float64], recall: NDArray[np.float64]) -> float:
    """Area under the precision envelope at each recall step (VOC 2011)."""
    p = np.concatenate([[0.0], precision, [0.0]])
    r = np.concatenate([[0.0], recall, [1.0]])
    p = np.maximum.accumulate(p[::-1])[::-1]
    steps = np.flatnonzero(r[1:] != r[:-1]) + 1
    return float(np.sum((r[steps] - r[steps - 1]) * p[steps]))


def moment_ap(
    predictions: Sequence[Moment], ground_truth: Sequence[tuple[float, float]], thresholds: Sequence[float] = MR_IOU_THRESHOLDS
) -> NDArray[np.float64]:
    """Average precision of one question's ``(start, end, score)`` predictions at each IoU threshold.

    Predictions are ranked by score (ties keep their order); each claims the
    unmatched ground-truth window of highest IoU when that IoU reaches the
    threshold. All zeros without predictions, NaN without ground truth.

    >>> moment_ap([(0.0, 10.0, 0.9), (20.0, 30.0, 0.5)], [(0.0, 10.0)], (0.5,))
    array([1.])
    """
    n_thr = len(thresholds)
    if not ground_truth:
        return np.full(n_thr, math.nan)
    if not predictions:
        return np.zeros(n_thr)
    gt = np.asarray(ground_truth, dtype=np.float64).reshape(-1, 2)
    ranked = sorted(predictions, key=lambda m: -float(m[2]))
    taken = np.zeros((n_thr, gt.shape[0]), dtype=bool)
    tp = np.zeros((n_thr, len(ranked)))
    for i, (start, end, _score) in enumerate(ranked):
        ious = _ious(float(start), float(end), gt)
        best_first = np.argsort(ious)[::-1]
        for t, threshold in enumerate(thresholds):
            for j in best_first:
                if ious[j] < threshold:
                    break
                if not taken[t, j]:
                    taken[t, j] = True
                    tp[t, i] = 1.0
                    break
    hits = np.cumsum(tp, axis=1)
    precision = hits / np.arange(1, len(ranked) + 1)
    recall = hits / gt.shape[0]
    return np.array([_interpolated_ap(precision[t], recall[t]) for t in range(n_thr)])


def moment_retrieval_scores(predictions: Sequence[Moment], ground_truth: Sequence[tuple[float, float]], max_windows: int = MR_MAX_WINDOWS) -> dict[str, float]:
    """MR-mAP (mean over thresholds), @0.5, @0.75 and per length bucket of one question.

    NaN for all without predictions or ground truth, and for a bucket holding
    no ground-truth window. Only the first ``max_windows`` predictions count,
    in the order given, as the reference cuts ``pred_relevant_windows`` (which
    moment_detr writes best first) before ranking them by score.
    """
    keys = ["mr_map", "mr_map@0.5", "mr_map@0.75"] + [f"mr_map_{b}" for b in MR_LENGTH_BUCKETS]
    if not predictions or not ground_truth:
        return dict.fromkeys(keys, math.nan)
    kept = list(predictions)[:max_windows]
    ap = moment_ap(kept, ground_truth)
    out = {"mr_map": float(np.mean(ap)), "mr_map@0.5": float(ap[MR_IOU_THRESHOLDS.index(0.5)]), "mr_map@0.75": float(ap[MR_IOU_THRESHOLDS.index(0.75)])}
    for bucket, (low, high) in MR_LENGTH_BUCKETS.items():
        inside = [w for w in ground_truth if low < w[1] - w[0] <= high]
        out[f"mr_map_{bucket}"] = float(np.mean(moment_ap(kept, inside))) if inside else math.nan
    return out


def selection_moments(
    pool: CandidatePool, selection: Selection, clip_length: float = 2.0, duration: float | None = None, features: Features | None = None
) -> list[Moment]:
    """The selection's predicted windows (see the module docstring), best score first."""
    scores = frame_scores(pool, selection, features)
    best: dict[int, float] = {}
    for t, s in zip(selection.timestamps(pool), scores, strict=True):
        clip = int(t // clip_length)
        best[clip] = max(best.get(clip, -math.inf), float(s))
    windows: list[Moment] = []
    clips = sorted(best)
    run_start = 0
    for i in range(1, len(clips) + 1):
        if i == len(clips) or clips[i] != clips[i - 1] + 1:
            first, last = clips[run_start], clips[i - 1]
            end = (last + 1) * clip_length
            if duration is not None:
                end = min(end, float(duration))
            windows.append((first * clip_length, max(end, first * clip_length), max(best[c] for c in clips[run_start:i])))
            run_start = i
    return sorted(windows, key=lambda m: -m[2])


@evaluators.register("mr_map")
class MomentRetrievalMAP(GroundedEvaluator):
    """QVHighlights moment retrieval mAP of the selection's windows, overall, @0.5, @0.75 and by length.

    Reference: github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
    (``eval_moment_retrieval``, ``compute_mr_ap``) and ``standalone_eval/utils.py``
    (``compute_average_precision_detection``). Writes ``mr_map``,
    ``mr_map@0.5``, ``mr_map@0.75``, ``mr_map_short``, ``mr_map_middle`` and
    ``mr_map_long``, means over questions (NaN ones left out, as the reference
    leaves out questions without predictions or without a window in a bucket).
    ``clip_length`` (seconds; default the sample's ``metadata["clip_length"]``,
    else 2) sets how frames become windows; ``max_windows`` how many count
    (the reference's 10). An answer's own windows, when it names some, are
    the predictions instead, ranked in the order the model gave them.
    """

    def __init__(self, clip_length: float | None = None, max_windows: int = MR_MAX_WINDOWS) -> None:
        if clip_length is not None and not clip_length > 0:
            raise ValueError(f"clip_length must be positive, got {clip_length!r}")
        if max_windows < 1:
            raise ValueError(f"max_windows must be at least 1, got {max_windows!r}")
        self.clip_length = None if clip_length is None else float(clip_length)
        self.max_windows = int(max_windows)

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("mr_map", "mr_map@0.5", "mr_map@0.75", "mr_map_short", "mr_map_middle", "mr_map_long", GROUNDING_SOURCE)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        clip_length = self.clip_length or float(sample.metadata.get("clip_length", 2.0))
        duration = sample.metadata.get("duration", pool.duration)
        if answer is not None and answer.windows:
            moments = [(start, end, float(len(answer.windows) - i)) for i, (start, end) in enumerate(answer.windows)]
        else:
            moments = selection_moments(pool, selection, clip_length, None if duration is None else float(duration), features)
        gt = [(s.start, s.end) for s in sample.evidence]
        return {**moment_retrieval_scores(moments, gt, self.max_windows), **grounding_source(answer)}
