"""QVHighlights moment retrieval: MR-mAP and MR-R1 of a selection's windows.

QVHighlights (Lei et al., "QVHighlights: Detecting Moments and Highlights in
Videos via Natural Language Queries", NeurIPS 2021) scores predicted moments
(start, end, score) against the annotated ``relevant_windows``. Reference:
github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
(``eval_submission``, ``eval_moment_retrieval``, ``compute_mr_ap``,
``compute_mr_r1``, ``get_data_by_range``) and ``standalone_eval/utils.py``
(``compute_average_precision_detection``, ``interpolated_precision_recall``).

The keys are the ones ``eval_submission`` writes, flattened the way its
``brief`` part names them: for each length bucket ``full`` (every window),
``short``, ``middle`` and ``long`` (ground-truth windows of length in
(0, 10], (10, 30] and (30, 150] seconds, the others dropped):

- ``MR-<bucket>-mAP@<t>``: per question, the average precision of its
  predictions (the 10 first, ranked by score) at temporal-IoU threshold ``t``
  in 0.5, 0.55, ..., 0.95: a prediction is a true positive when its best-IoU
  ground-truth window not yet matched reaches ``t``; precision interpolated as
  in VOC 2011;
- ``MR-<bucket>-mAP``: the mean over the ten thresholds (``eval_submission``'s
  ``"average"``);
- ``MR-<bucket>-R1@<t>``: 1 when the *first* predicted window (in the order
  given, not re-ranked) has an IoU of at least ``t`` with the bucket's window
  it overlaps best, else 0; as ``compute_mr_r1``, the best window is chosen by
  IoU over the union and the final IoU divides by the hull of the two windows
  (the same value whenever they overlap).

Each is averaged over the questions that have a window in the bucket (a
question without one is NaN there, as ``get_data_by_range`` leaves it out).
``eval_submission``'s brief keys are ``MR-full-mAP``, ``MR-full-mAP@0.5``,
``MR-full-mAP@0.75``, ``MR-short-mAP``, ``MR-middle-mAP``, ``MR-long-mAP``,
``MR-full-R1@0.5`` and ``MR-full-R1@0.7``.

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
in time order, best first (so the first window, which R1 judges, is the best
scored one). Ground truth: the sample's evidence spans (the loader's
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
from frameselect.parts import Range
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection

__all__ = [
    "MR_BRIEF_KEYS",
    "MR_BUCKETS",
    "MR_FULL_KEYS",
    "MR_IOU_THRESHOLDS",
    "MR_LENGTH_BUCKETS",
    "MR_MAX_WINDOWS",
    "MR_REPORTS",
    "moment_ap",
    "moment_r1",
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

#: the buckets of ``eval_moment_retrieval``: ``full`` keeps every window, the others one length range
MR_BUCKETS: tuple[str, ...] = ("full", *MR_LENGTH_BUCKETS)


def _bucket_keys(bucket: str) -> list[str]:
    return [f"MR-{bucket}-mAP"] + [f"MR-{bucket}-mAP@{t}" for t in MR_IOU_THRESHOLDS] + [f"MR-{bucket}-R1@{t}" for t in MR_IOU_THRESHOLDS]


#: every key of ``eval_submission``'s moment-retrieval part, per bucket: mAP, mAP@t and R1@t for each threshold
MR_FULL_KEYS: tuple[str, ...] = tuple(key for bucket in MR_BUCKETS for key in _bucket_keys(bucket))

#: the moment-retrieval keys of ``eval_submission``'s ``brief`` dictionary
MR_BRIEF_KEYS: tuple[str, ...] = (
    "MR-full-mAP",
    "MR-full-mAP@0.5",
    "MR-full-mAP@0.75",
    "MR-short-mAP",
    "MR-middle-mAP",
    "MR-long-mAP",
    "MR-full-R1@0.5",
    "MR-full-R1@0.7",
)

#: what :class:`MomentRetrievalMAP` aggregates into a table row
MR_REPORTS: dict[str, tuple[str, ...]] = {"brief": MR_BRIEF_KEYS, "full": MR_FULL_KEYS}

Moment = tuple[float, float, float]


def _ious(start: float, end: float, gt: NDArray[np.float64]) -> NDArray[np.float64]:
    """Temporal IoU of one window with each ground-truth window (0 where the union is empty)."""
    inter = np.clip(np.minimum(end, gt[:, 1]) - np.maximum(start, gt[:, 0]), 0.0, None)
    union = (end - start) + (gt[:, 1] - gt[:, 0]) - inter
    ious: NDArray[np.float64] = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return ious


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


def moment_r1(first: tuple[float, float], ground_truth: Sequence[tuple[float, float]], thresholds: Sequence[float] = MR_IOU_THRESHOLDS) -> NDArray[np.float64]:
    """R1 of one question: 1.0 per threshold that the first predicted window reaches, else 0.0.

    As moment_detr's ``compute_mr_r1``: the ground-truth window is the one of
    highest IoU (over the union; the first on ties) with ``first``, and the IoU
    then compared is intersection over the hull of the two windows. NaN
    without ground truth.

    >>> moment_r1((0.0, 10.0), [(30.0, 40.0), (2.0, 10.0)], (0.5, 0.8, 0.85))
    array([1., 1., 0.])
    """
    if not ground_truth:
        return np.full(len(thresholds), math.nan)
    gt = np.asarray(ground_truth, dtype=np.float64).reshape(-1, 2)
    start, end = float(first[0]), float(first[1])
    inter = np.clip(np.minimum(end, gt[:, 1]) - np.maximum(start, gt[:, 0]), 0.0, None)
    union = (end - start) + (gt[:, 1] - gt[:, 0]) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        best = gt[int(np.argmax(inter / union))]
    overlap = max(0.0, min(end, best[1]) - max(start, best[0]))
    hull = max(end, best[1]) - min(start, best[0])
    iou = overlap / hull if hull != 0 else 0.0
    return np.array([1.0 if iou >= t else 0.0 for t in thresholds])


def _in_bucket(ground_truth: Sequence[tuple[float, float]], bucket: str) -> list[tuple[float, float]]:
    if bucket == "full":
        return list(ground_truth)
    low, high = MR_LENGTH_BUCKETS[bucket]
    return [w for w in ground_truth if low < w[1] - w[0] <= high]


def moment_retrieval_scores(predictions: Sequence[Moment], ground_truth: Sequence[tuple[float, float]], max_windows: int = MR_MAX_WINDOWS) -> dict[str, float]:
    """Every moment-retrieval key of ``eval_submission`` (:data:`MR_FULL_KEYS`) for one question.

    NaN for all without predictions or ground truth, and for a bucket holding
    no ground-truth window. Only the first ``max_windows`` predictions count
    for mAP, in the order given, as the reference cuts ``pred_relevant_windows``
    (which moment_detr writes best first) before ranking them by score; R1
    judges the first prediction given.
    """
    out = dict.fromkeys(MR_FULL_KEYS, math.nan)
    if not predictions or not ground_truth:
        return out
    kept = list(predictions)[:max_windows]
    first = (float(kept[0][0]), float(kept[0][1]))
    for bucket in MR_BUCKETS:
        windows = _in_bucket(ground_truth, bucket)
        if not windows:
            continue
        ap = moment_ap(kept, windows)
        r1 = moment_r1(first, windows)
        out[f"MR-{bucket}-mAP"] = float(np.mean(ap))
        for t, a, r in zip(MR_IOU_THRESHOLDS, ap, r1, strict=True):
            out[f"MR-{bucket}-mAP@{t}"] = float(a)
            out[f"MR-{bucket}-R1@{t}"] = float(r)
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
    """QVHighlights moment retrieval of the selection's (or the answer's) windows: MR-mAP and MR-R1 per IoU threshold and length bucket.

    Reference: github.com/jayleicn/moment_detr ``standalone_eval/eval.py``
    (``eval_submission``, ``eval_moment_retrieval``, ``compute_mr_ap``,
    ``compute_mr_r1``) and ``standalone_eval/utils.py``
    (``compute_average_precision_detection``). Every record carries every key
    of ``eval_submission``'s moment-retrieval part (:data:`MR_FULL_KEYS`:
    ``MR-<bucket>-mAP``, ``MR-<bucket>-mAP@<t>`` and ``MR-<bucket>-R1@<t>`` for
    the buckets full, short, middle and long and the thresholds 0.5, ...,
    0.95); ``report`` chooses the table's columns: ``"brief"`` (default)
    ``eval_submission``'s brief keys (:data:`MR_BRIEF_KEYS`), ``"full"`` all of
    them. Means over questions, NaN ones left out (the reference leaves out
    questions without predictions or without a window in a bucket).
    ``clip_length`` (seconds; default the sample's ``metadata["clip_length"]``,
    else 2) sets how frames become windows; ``max_windows`` how many count
    (the reference's 10). An answer's own windows, when it names some, are
    the predictions instead, ranked in the order the model gave them.
    """

    param_ranges = {"clip_length": Range(gt=0), "max_windows": Range(ge=1, integer=True)}

    def __init__(self, clip_length: float | None = None, max_windows: int = MR_MAX_WINDOWS, report: str = "brief") -> None:
        if clip_length is not None and not clip_length > 0:
            raise ValueError(f"clip_length must be positive, got {clip_length!r}")
        if max_windows < 1:
            raise ValueError(f"max_windows must be at least 1, got {max_windows!r}")
        if report not in MR_REPORTS:
            raise ValueError(f"unknown report {report!r}; use 'brief' (eval_submission's brief keys) or 'full' (every threshold and bucket)")
        self.clip_length = None if clip_length is None else float(clip_length)
        self.max_windows = int(max_windows)
        self.report = report

    @property
    def metrics(self) -> tuple[str, ...]:
        return (*MR_REPORTS[self.report], GROUNDING_SOURCE)

    @property
    def score_keys(self) -> tuple[str, ...]:
        return (*MR_FULL_KEYS, GROUNDING_SOURCE)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        clip_length = self.clip_length or float(sample.metadata.get("clip_length", 2.0))
        duration = sample.metadata.get("duration", pool.duration)
        if answer is not None and answer.windows:
            moments = [(start, end, float(len(answer.windows) - i)) for i, (start, end) in enumerate(answer.windows)]
        else:
            moments = selection_moments(pool, selection, clip_length, None if duration is None else float(duration), features)
        gt = [(s.start, s.end) for s in sample.evidence]
        return {**moment_retrieval_scores(moments, gt, self.max_windows), **grounding_source(answer)}
