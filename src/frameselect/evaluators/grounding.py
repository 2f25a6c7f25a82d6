"""Temporal grounding of a selection: IoU / IoP with the evidence, R@IoU, NExT-GQA Acc@GQA.

A selection's *grounding window* is the span from its first to its last
selected timestamp. It is compared with each evidence span as NExT-GQA's
``get_tIoU`` does (github.com/doc-doc/NExT-GQA, ``code/TempGQA/eval_ground.py``):

- IoU = intersection / (hull of the two spans), IoP = intersection / (window length);
- a window of zero length (one frame) has IoU 0 and IoP 1 when it lies in the span, else 0;
- over several evidence spans the best value is kept, and never below 0.

``get_tIoU`` itself returns a *negative* IoU and IoP for disjoint spans (the
gap divided by the hull, or by the window); ``eval_ground`` keeps the best
value per question starting from 0, so its numbers never see them.
``signed=True`` (on the helpers and on ``iou`` / ``iop``, whose keys become
``iou_signed`` / ``iop_signed``) returns ``get_tIoU``'s values as they are and
the best over spans without the floor at 0: the per-segment numbers of the
reference code.

NExT-GQA's headline grounding numbers (``eval_ground``) are mIoP, IoP@0.3,
IoP@0.5, mIoU, IoU@0.3 and IoU@0.5 over the questions that have a prediction
(``nextgqa_grounding``), and Acc@GQA (``nextgqa_acc_gqa``). Its Gaussian-mask
models predict windows as fractions of the video; the reference's ``gs=True``
path scales them by the annotated duration and rounds to 0.1 s
(``np.round(span * duration, 1)``): ``units="fraction"`` does the same with a
window an answer carries.

Grounded answers: an answer that names time windows (``Answer.windows``, in
seconds; the backends ask for them on grounding questions, see
:mod:`frameselect._core.windows`) is judged by its first window (the model's best)
instead of the selection's, by ``nextgqa_grounding``, ``nextgqa_acc_gqa`` and
``recall_at_iou``; these evaluators declare ``uses_answer``, so a run with an
answerer asks for answers. Each writes ``grounding_from_answer`` per sample
when the run has answers: 1.0 when the answer's window was scored, 0.0 when
the selection's was; its mean in the table is the share of questions scored
from the model's own windows (NaN for a run without answers: the selection's
windows were scored).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from frameselect._core.windows import fraction_to_seconds
from frameselect.evaluators.answer import answer_letters, check_extraction, extract_letter
from frameselect.evaluators.base import Evaluator
from frameselect.parts import Range
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection, Span

__all__ = [
    "selection_window",
    "temporal_iou_iop",
    "best_iou_iop",
    "recall_at_iou",
    "acc_gqa",
    "fraction_to_seconds",
    "GROUNDING_UNITS",
    "IoU",
    "IoP",
    "RecallAtIoU",
    "NExTGQAAccGQA",
    "NExTGQAGrounding",
    "prediction_window",
    "answer_window",
    "GROUNDING_SOURCE",
    "GroundedEvaluator",
    "grounding_source",
]

Window = tuple[float, float]

#: how a window an answer carries is given: in seconds, or as fractions of the video (NExT-GQA ``gs=True``)
GROUNDING_UNITS: tuple[str, ...] = ("seconds", "fraction")

#: the per-sample key saying which window was scored: 1.0 the answer's own, 0.0 the selection's
GROUNDING_SOURCE = "grounding_from_answer"


def selection_window(times: Sequence[float]) -> Window | None:
    """The span from the first to the last selected time (None for no frame).

    >>> selection_window([4.0, 1.0, 2.5])
    (1.0, 4.0)
    """
    if not times:
        return None
    return float(min(times)), float(max(times))


def temporal_iou_iop(window: Window, span: Window, signed: bool = False) -> tuple[float, float]:
    """IoU and IoP of a predicted ``window`` against one ground-truth ``span``.

    Follows NExT-GQA's ``get_tIoU(loc=span, span=window)``; disjoint spans give
    a negative intersection there, clipped to 0 here unless ``signed``.

    >>> temporal_iou_iop((2.0, 6.0), (4.0, 8.0))
    (0.3333333333333333, 0.5)
    >>> temporal_iou_iop((5.0, 5.0), (4.0, 8.0))
    (0.0, 1.0)
    >>> temporal_iou_iop((10.0, 12.0), (4.0, 8.0), signed=True)
    (-0.25, -1.0)
    """
    w0, w1 = window
    s0, s1 = span
    if w0 == w1:
        return 0.0, (1.0 if s0 <= w0 <= s1 else 0.0)
    inter = min(w1, s1) - max(w0, s0)
    hull = max(w1, s1) - min(w0, s0)
    iou = inter / hull if hull > 0 else 0.0
    iop = inter / (w1 - w0) if w1 > w0 else 0.0
    if signed:
        return iou, iop
    return max(0.0, iou), max(0.0, iop)


def best_iou_iop(window: Window | None, spans: Sequence[Span], signed: bool = False) -> tuple[float, float]:
    """The best IoU and the best IoP over the evidence spans (NaN, NaN without spans or window).

    Never below 0, as ``eval_ground``; ``signed``: the best of ``get_tIoU``'s
    signed values, negative when the window misses every span.
    """
    if window is None or not spans:
        return math.nan, math.nan
    values = [temporal_iou_iop(window, (span.start, span.end), signed) for span in spans]
    best_iou, best_iop = max(v[0] for v in values), max(v[1] for v in values)
    if signed:
        return best_iou, best_iop
    return max(0.0, best_iou), max(0.0, best_iop)


def recall_at_iou(window: Window | None, spans: Sequence[Span], thresholds: Sequence[float] = (0.3, 0.5, 0.7)) -> dict[float, float]:
    """1.0 per threshold that the best IoU reaches (``>=``), else 0.0; NaN without spans.

    >>> recall_at_iou((2.0, 6.0), [Span(3.0, 6.0)])
    {0.3: 1.0, 0.5: 1.0, 0.7: 1.0}
    """
    iou, _ = best_iou_iop(window, spans)
    return {t: (math.nan if math.isnan(iou) else float(iou >= t)) for t in thresholds}


def acc_gqa(correct: float, iop: float, threshold: float = 0.5) -> float:
    """NExT-GQA Acc@GQA for one question: right answer and IoP at least ``threshold``.

    >>> acc_gqa(1.0, 0.6), acc_gqa(1.0, 0.4), acc_gqa(0.0, 0.9)
    (1.0, 0.0, 0.0)
    """
    if math.isnan(correct) or math.isnan(iop):
        return math.nan
    return 1.0 if correct == 1.0 and iop >= threshold else 0.0


def _window(pool: CandidatePool, selection: Selection) -> Window | None:
    return selection_window(selection.timestamps(pool))


class _GroundingEvaluator(Evaluator):
    def __init__(self, signed: bool = False) -> None:
        self.signed = bool(signed)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (f"{self.name}_signed" if self.signed else self.name,)

    def _best(self, sample: Sample, pool: CandidatePool, selection: Selection) -> tuple[float, float]:
        return best_iou_iop(_window(pool, selection), sample.evidence, self.signed)


class GroundedEvaluator(Evaluator):
    """An evaluator that scores the answer's windows when there are some; its ``metrics`` end with ``grounding_from_answer``."""

    uses_answer = True


def grounding_source(answer: Answer | None) -> dict[str, float]:
    """``grounding_from_answer`` for a run with answers (nothing without)."""
    return {} if answer is None else {GROUNDING_SOURCE: float(answer_window(answer) is not None)}


@evaluators.register("iou")
class IoU(_GroundingEvaluator):
    """Best temporal IoU of the selection's window (first to last frame) with an evidence span.

    Definition as NExT-GQA ``code/TempGQA/eval_ground.py`` (``get_tIoU``, mIoU).
    NaN for samples without evidence. ``signed=True`` (key ``iou_signed``):
    ``get_tIoU``'s signed value, negative for a window that misses every span.
    """

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.metrics[0]: self._best(sample, pool, selection)[0]}


@evaluators.register("iop")
class IoP(_GroundingEvaluator):
    """Best intersection over prediction of the selection's window with an evidence span.

    Definition as NExT-GQA ``code/TempGQA/eval_ground.py`` (``get_tIoU``, mIoP):
    the fraction of the window that lies in the evidence. NaN without evidence.
    ``signed=True`` (key ``iop_signed``): ``get_tIoU``'s signed value.
    """

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.metrics[0]: self._best(sample, pool, selection)[1]}


@evaluators.register("recall_at_iou")
class RecallAtIoU(GroundedEvaluator):
    """R@IoU: whether the predicted window reaches IoU 0.3 / 0.5 / 0.7 with an evidence span.

    Writes ``recall_at_iou@0.3``, ``@0.5``, ``@0.7`` (the thresholds of
    NExT-GQA's IoU@0.3/0.5 and moment retrieval's R1@0.5/0.7: Charades-STA's
    R1@IoU). The predicted window is the answer's first window (the model's
    top-1 moment, in seconds) when it names one, else the selection's window
    from its first to its last frame; ``grounding_from_answer`` says which.
    """

    param_ranges = {"thresholds": Range(ge=0, le=1)}

    def __init__(self, thresholds: Sequence[float] = (0.3, 0.5, 0.7)) -> None:
        self.thresholds = tuple(float(t) for t in thresholds)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (*(f"recall_at_iou@{t:g}" for t in self.thresholds), GROUNDING_SOURCE)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        window = answer_window(answer) or _window(pool, selection)
        hits = recall_at_iou(window, sample.evidence, self.thresholds)
        return {**{f"recall_at_iou@{t:g}": v for t, v in hits.items()}, **grounding_source(answer)}


def answer_window(answer: Answer | None) -> Window | None:
    """The window an answer names itself: the first of ``Answer.windows`` (the model's best), if any.

    >>> answer_window(Answer("B", windows=((3.0, 6.5), (10.0, 12.0))))
    (3.0, 6.5)
    """
    if answer is None or not answer.windows:
        return None
    return answer.windows[0]


def _check_units(units: str) -> str:
    if units not in GROUNDING_UNITS:
        raise ValueError(f"unknown grounding units {units!r}; use 'seconds' or 'fraction'")
    return units


def prediction_window(sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, units: str = "seconds") -> Window | None:
    """The window a question's grounding is judged on: the answer's own, else the selection's.

    With ``units="fraction"`` the answer's window is taken as fractions of the
    video and converted by :func:`fraction_to_seconds` with
    ``metadata["duration"]`` (NExT-GQA's annotated duration), else the pool's.
    The selection's window is in seconds already.
    """
    window = answer_window(answer)
    if window is None:
        return _window(pool, selection)
    if _check_units(units) == "seconds":
        return window
    duration = sample.metadata.get("duration", pool.duration)
    if duration is None:
        raise ValueError(f"sample {sample.id!r}: a grounding in fractions of the video needs metadata['duration']")
    return fraction_to_seconds(window, float(duration))


@evaluators.register("nextgqa_grounding")
class NExTGQAGrounding(GroundedEvaluator):
    """NExT-GQA's grounding numbers: mIoP, IoP@0.3, IoP@0.5, mIoU, IoU@0.3, IoU@0.5.

    Reference: Xiao et al., "Can I Trust Your Answer? Visually Grounded Video
    Question Answering" (CVPR 2024); github.com/doc-doc/NExT-GQA
    ``code/TempGQA/eval_ground.py`` (``eval_ground``, ``get_tIoU``): per
    question the best IoU and IoP over its annotated spans (never below 0),
    hits at ``>= 0.3`` and ``>= 0.5``, means over the questions with a
    prediction. Writes ``nextgqa_miop``, ``nextgqa_iop@0.3``,
    ``nextgqa_iop@0.5``, ``nextgqa_miou``, ``nextgqa_iou@0.3`` and
    ``nextgqa_iou@0.5`` (fractions; the reference prints percentages). The
    window is the answer's own grounding when it carries one (``units``:
    ``"seconds"``, default, or ``"fraction"`` of the video as the reference's
    ``gs=True``), else the selection's first-to-last-frame window;
    ``grounding_from_answer`` says which. The built-in backends give windows
    in seconds (they convert NExT-GQA's fractions with the same rounding), so
    ``units="fraction"`` is for answers that carry the raw fractions. NaN for a
    question without evidence or without a window (the reference skips
    questions without a prediction).
    """

    def __init__(self, units: str = "seconds") -> None:
        self.units = _check_units(units)

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("nextgqa_miop", "nextgqa_iop@0.3", "nextgqa_iop@0.5", "nextgqa_miou", "nextgqa_iou@0.3", "nextgqa_iou@0.5", GROUNDING_SOURCE)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        iou, iop = best_iou_iop(prediction_window(sample, pool, selection, answer, self.units), sample.evidence)
        if math.isnan(iou):
            return {**dict.fromkeys(self.metrics[:-1], math.nan), **grounding_source(answer)}
        return {
            **grounding_source(answer),
            "nextgqa_miop": iop,
            "nextgqa_iop@0.3": float(iop >= 0.3),
            "nextgqa_iop@0.5": float(iop >= 0.5),
            "nextgqa_miou": iou,
            "nextgqa_iou@0.3": float(iou >= 0.3),
            "nextgqa_iou@0.5": float(iou >= 0.5),
        }


@evaluators.register("nextgqa_acc_gqa")
class NExTGQAAccGQA(GroundedEvaluator):
    """NExT-GQA Acc@GQA: the answer is right AND its grounding has IoP ≥ 0.5 with the evidence.

    Reference: Xiao et al., "Can I Trust Your Answer? Visually Grounded Video
    Question Answering" (CVPR 2024); github.com/doc-doc/NExT-GQA
    ``code/TempGQA/eval_ground.py`` (``eval_ground``: ``max_tIoP >= 0.5`` and
    answer == prediction). The grounding window is the one the answer carries
    (the first of ``Answer.windows``, for backends that ground their
    answers; ``units`` as :class:`NExTGQAGrounding`), else the selection's
    window from its first to its last frame. Answer letters as lmms-eval (A–E
    for NExT-QA's five options), ``extraction`` as
    :class:`~frameselect.evaluators.answer.MCAccuracy`. NaN without ground
    truth or evidence.
    """

    param_ranges = {"threshold": Range(ge=0, le=1)}

    needs_answer = True

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.name, GROUNDING_SOURCE)

    def __init__(self, threshold: float = 0.5, units: str = "seconds", extraction: str = "lmms_eval") -> None:
        self.threshold = float(threshold)
        self.units = _check_units(units)
        self.extraction = check_extraction(extraction)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if sample.answer is None:
            return {self.name: math.nan, **grounding_source(answer)}
        letter = extract_letter("" if answer is None else answer.text, answer_letters(len(sample.query.options)), self.extraction)
        correct = 1.0 if letter and letter.lower() == sample.answer.strip().lower() else 0.0
        _, iop = best_iou_iop(prediction_window(sample, pool, selection, answer, self.units), sample.evidence)
        return {self.name: acc_gqa(correct, iop, self.threshold), **grounding_source(answer)}
