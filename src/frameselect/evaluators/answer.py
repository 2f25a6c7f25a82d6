"""Answer-level evaluators: multiple-choice accuracy and MLVU's M-Avg.

The answer letter is pulled out of the model's free text the way lmms-eval
does it (``extract_characters_regex`` in ``lmms_eval/tasks/videomme/utils.py``
and ``lmms_eval/tasks/mlvu/utils.py``): strip a few known answer prefixes,
then take the first capital letter among the allowed option letters.
Breakdowns by sample metadata (duration group, task type, ...) are done by
:func:`frameselect.pipeline.breakdown`, or over stored records by
:func:`accuracy_by`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = [
    "LMMS_EVAL_PREFIXES",
    "CLEAN_PREFIXES",
    "answer_letters",
    "extract_answer_letter",
    "mc_accuracy",
    "accuracy_by",
    "mlvu_m_avg",
    "MCAccuracy",
    "MLVUMAvg",
]

#: The answer prefixes lmms-eval strips, as Python actually evaluates its list:
#: two missing commas fuse "The best option is" + "The correct option is" and
#: "Best answer:" + "Best option:" into strings that never occur, so those four
#: prefixes are never removed (and "Best answer: C" extracts the "B" of "Best").
#: Kept fused so that scores match lmms-eval's.
LMMS_EVAL_PREFIXES: tuple[str, ...] = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option isThe correct option is",
    "Best answer:Best option:",
)

#: The intended list, as Video-MME-v2's ``extract_characters_regex_v2`` has it.
CLEAN_PREFIXES: tuple[str, ...] = (
    "Final Answer:",
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
    "Answer:",
    "Option:",
)

_PREFIX_SETS = {"lmms_eval": LMMS_EVAL_PREFIXES, "clean": CLEAN_PREFIXES}


def answer_letters(n_options: int) -> str:
    """The letters searched for: A–D for up to four options (as lmms-eval), else A.. up to H.

    >>> answer_letters(2), answer_letters(5), answer_letters(12)
    ('ABCD', 'ABCDE', 'ABCDEFGH')
    """
    return "ABCDEFGH"[: min(8, max(4, n_options))]


def _prefixes(extraction: str) -> tuple[str, ...]:
    try:
        return _PREFIX_SETS[extraction]
    except KeyError:
        raise ValueError(f"unknown answer extraction {extraction!r}; use 'lmms_eval' or 'clean'") from None


def extract_answer_letter(text: str, letters: str = "ABCD", prefixes: Sequence[str] = LMMS_EVAL_PREFIXES) -> str:
    """The option letter a model's reply names, or ``""`` when it names none.

    Strips each prefix (in order, everywhere in the text), then returns the
    first character of ``letters`` found. lmms-eval also returns ``""`` for
    replies of more than ten words without a letter, which the search already
    implies.

    >>> extract_answer_letter("The best answer is (C) the red car.")
    'C'
    >>> extract_answer_letter("it is probably the red one")
    ''
    >>> extract_answer_letter("Final Answer: E.", "ABCDEFGH", CLEAN_PREFIXES)
    'E'
    """
    s = text.strip()
    for prefix in prefixes:
        s = s.replace(prefix, "")
    match = re.search(f"[{re.escape(letters)}]", s)
    return match.group(0) if match else ""


def mc_accuracy(text: str, truth: str | None, n_options: int = 4, extraction: str = "lmms_eval") -> float:
    """1.0 when the letter extracted from ``text`` is ``truth`` (case-insensitive), else 0.0.

    NaN when the sample has no ground truth. A reply naming no letter is wrong.

    >>> mc_accuracy("B. green", "B"), mc_accuracy("I think A", "B"), mc_accuracy("B", None)
    (1.0, 0.0, nan)
    """
    if truth is None:
        return math.nan
    letter = extract_answer_letter(text, answer_letters(n_options), _prefixes(extraction))
    return 1.0 if letter and letter.lower() == truth.strip().lower() else 0.0


def accuracy_by(records: Sequence[SampleRecord], field: str, metric: str = "mc_accuracy") -> dict[str, float]:
    """Mean of ``metric`` over the ``ok`` records, per value of ``metadata[field]``.

    Records without the field are left out. Values are keyed by ``str(value)``,
    sorted.
    """
    groups: dict[str, list[SampleRecord]] = {}
    for record in records:
        if field in record.metadata:
            groups.setdefault(str(record.metadata[field]), []).append(record)
    return {key: mean_of(group, metric) for key, group in sorted(groups.items())}


def mlvu_m_avg(correct: Sequence[float], tasks: Sequence[str]) -> float:
    """MLVU's M-Avg: the unweighted mean over task types of each type's accuracy.

    NaN values in ``correct`` are left out. lmms-eval divides by its fixed list
    of nine task types even when some are absent (counting them as 0); here the
    mean is over the task types present, which is the same on the full set.

    >>> mlvu_m_avg([1, 1, 1, 0], ["TR", "TR", "TR", "AR"])
    0.5
    """
    if len(correct) != len(tasks):
        raise ValueError(f"{len(correct)} correctness values for {len(tasks)} task types")
    per_task: dict[str, list[float]] = {}
    for value, task in zip(correct, tasks, strict=True):
        if not math.isnan(float(value)):
            per_task.setdefault(str(task), []).append(float(value))
    if not per_task:
        return math.nan
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


@evaluators.register("mc_accuracy")
class MCAccuracy(Evaluator):
    """Multiple-choice accuracy with lmms-eval's answer-letter extraction.

    Reference: lmms-eval, ``lmms_eval/tasks/videomme/utils.py``
    (``extract_characters_regex``, ``videomme_process_results``). Letters A–D
    for up to four options, up to A–H for more. ``extraction="lmms_eval"``
    (default) strips exactly the prefixes lmms-eval strips (see
    :data:`LMMS_EVAL_PREFIXES`); ``"clean"`` strips the intended list.
    """

    needs_answer = True

    def __init__(self, extraction: str = "lmms_eval") -> None:
        _prefixes(extraction)
        self.extraction = extraction

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        text = "" if answer is None else answer.text
        return {self.name: mc_accuracy(text, sample.answer, len(sample.query.options), self.extraction)}


@evaluators.register("mlvu_m_avg")
class MLVUMAvg(Evaluator):
    """MLVU M-Avg: mean over task types (``metadata["task_type"]``) of per-type accuracy.

    Reference: MLVU (Zhou et al., 2024); lmms-eval ``lmms_eval/tasks/mlvu/utils.py``
    (``extract_characters_regex``, ``mlvu_aggregate_results``): letters A–D,
    exact (case-sensitive) comparison with the ground truth. Each record
    stores ``mlvu_correct``; the aggregate is ``mlvu_m_avg``. Samples without
    a task type count under ``"unknown"``. Deviation: the mean is over the task
    types present (lmms-eval divides by all nine).
    """

    needs_answer = True

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("mlvu_m_avg",)

    @property
    def record_keys(self) -> tuple[str, ...]:
        return ("mlvu_correct",)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if sample.answer is None:
            return {"mlvu_correct": math.nan}
        letter = extract_answer_letter("" if answer is None else answer.text, answer_letters(len(sample.query.options)), LMMS_EVAL_PREFIXES)
        return {"mlvu_correct": 1.0 if letter == sample.answer.strip() else 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        ok = [r for r in records if r.status == "ok" and "mlvu_correct" in r.metrics]
        correct = [float(r.metrics["mlvu_correct"]) for r in ok]
        tasks = [str(r.metadata.get("task_type", "unknown")) for r in ok]
        return {"mlvu_m_avg": mlvu_m_avg(correct, tasks)}
