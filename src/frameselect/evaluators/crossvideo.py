"""Official scoring of the cross-video benchmarks: CVBench (two parsers) and CrossVid.

**CVBench** ships two scorers that parse replies differently; both are here, named:

- ``parsing="lmms_eval"``: its lmms-eval task, Hokhim2/CVBench@f8dc8f7
  ``lmms-eval/lmms_eval/tasks/mvr/utils.py`` (``extract_characters_regex``,
  ``mvr_process_results``, ``mvr_aggregate_results``): the answer prefixes are
  removed, a reply of more than ten words without any of the capitals
  ``ABCDYESNO`` is empty, else the first match of ``(?i)([ABCD]|YES|NO)``
  (so the "a" of "a dog" is A), upper-cased, against ``answer`` upper-cased.
  Per task type: questions whose ``"<id>_<task_type>"`` contains the type
  (lower case); overall: all questions, in percent.
- ``parsing="video_r1"``: its Video-R1 script, ``Video-R1/src/eval_bench.py``
  (``extract_answer``, ``reward_fn`` with ``"multiple choice"``): the text
  inside the first ``<answer>..</answer>``, else the whole reply, stripped,
  compared exactly (case-sensitive) with ``answer``; the overall mean is taken
  in float32 (``torch.tensor(mean_acc).mean()``), per task in percent to one
  decimal.

**CrossVid**: chuntianli666/CrossVid@5b44760 ``eval/BU.py``, ``CC.py``,
``NC.py``, ``PEA.py``: ``correct = answer == "".join(pair["answer"])`` on the
raw reply (no parsing at all: ``"B"`` is right, ``"B."`` and ``" B"`` are
wrong); each task's accuracy is correct / answered (a request that failed three
times is left out of the denominator; here a failed answer is a failed record,
also left out). The scripts print one number per task; ``overall`` here is
the mean over all questions (ours: the scripts give none).

**MVU-Eval**: NJU-LINK/MVU-Eval@a5937ad ``inference/analyze.py``
(``compute_accuracy_per_category``): the prediction is the first character of
``str(model_output).strip().upper()``, compared with ``ground_truth`` as
written (so ``" b"`` counts for B, ``"(B)"`` and ``""`` are wrong, and
``"Answer: B"`` reads as A); per ``task`` and overall, correct / total in
percent. ``inference/main.py`` writes no record for a question whose model
call failed (or returned no content), so such a question is absent from the
totals. ``mvu_eval_acc`` counts a failed sample it is given as wrong (the
denominator is every question asked); ``reference_exact=True`` (key
``mvu_eval_acc_ref``) leaves it out, as the script does, and compares with
``ground_truth`` as written rather than the loader's letter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from frameselect.errors import PartConfigError
from frameselect.evaluators.base import Evaluator
from frameselect.evaluators.kfs import REFERENCE_SUFFIX
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = [
    "CVBENCH_TASKS",
    "CVBENCH_PARSERS",
    "cvbench_extract_lmms_eval",
    "cvbench_extract_video_r1",
    "cvbench_correct",
    "cvbench_aggregate",
    "crossvid_correct",
    "mvu_eval_prediction",
    "mvu_eval_correct",
    "mvu_eval_aggregate",
]

#: CVBench's task types in its scripts' order (``TASK_CATEGORIES``)
CVBENCH_TASKS = (
    "Cross-video Anomaly Detection",
    "Cross-video Scene Recognition",
    "Multi-video Key-Action Recognition",
    "Cross-video Event Retrieval",
    "Cross-video Object Recognition",
    "Multi-video Attribute Recognition",
    "Joint-video Counting",
    "Cross-video Entity Matching",
    "Multi-view Scene Understanding",
    "Multi-video Temporal Reasoning",
    "Joint-video Spatial Navigating",
    "Video Difference Caption",
    "Cross-video Counterfactual Reasoning",
    "Joint-video Summarization",
    "Cross-video Procedural Transfer",
)
CVBENCH_PARSERS = ("lmms_eval", "video_r1")

_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
)
_ANY_CAPITAL = re.compile("[ABCDYESNO]")
_FIRST = re.compile(r"(?i)([ABCD]|YES|NO)")
_ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)


def cvbench_extract_lmms_eval(reply: str) -> str:
    """The answer CVBench's lmms-eval task reads from a reply (upper case; ``""`` when none).

    >>> cvbench_extract_lmms_eval("The best answer is B."), cvbench_extract_lmms_eval("no, it does not")
    ('B', 'NO')
    >>> cvbench_extract_lmms_eval("Both videos show it")  # the first letter A-D or YES/NO wins
    'B'
    """
    s = reply.strip()
    for prefix in _PREFIXES:
        s = s.replace(prefix, "")
    if len(s.split()) > 10 and not _ANY_CAPITAL.search(s):
        return ""
    m = _FIRST.search(s)
    return "" if m is None else m[0].upper().strip()


def cvbench_extract_video_r1(reply: str) -> str:
    """The answer CVBench's Video-R1 script reads: inside the first ``<answer>`` tags, else the whole reply; stripped.

    >>> cvbench_extract_video_r1("<think>hmm</think><answer> No </answer>"), cvbench_extract_video_r1("B.")
    ('No', 'B.')
    """
    m = _ANSWER_TAG.search(reply)
    found = m.group(1).strip() if m else ""
    return (found if found else reply).strip()


def cvbench_correct(reply: str, official_answer: str, parsing: str = "lmms_eval") -> bool:
    """Whether CVBench's scorer ``parsing`` counts ``reply`` right for the ``answer`` field as written."""
    if parsing == "lmms_eval":
        return cvbench_extract_lmms_eval(reply) == official_answer.strip().upper()
    if parsing == "video_r1":
        gt = cvbench_extract_video_r1(f"<answer>{official_answer}</answer>")
        return cvbench_extract_video_r1(reply) == gt
    raise PartConfigError(f"cvbench_acc: unknown parsing {parsing!r}; choose {' or '.join(CVBENCH_PARSERS)}")


def cvbench_aggregate(rows: Sequence[tuple[Any, str, bool]], parsing: str = "lmms_eval") -> dict[str, float]:
    """CVBench's official numbers from ``(id, task_type, correct)`` per question: ``overall`` and one entry per task type, in percent.

    ``lmms_eval``: a task counts the questions whose ``"<id>_<task_type>"``
    contains the task's name (lower case), percent as a float; ``video_r1``:
    exact task type, percent rounded to one decimal as its table prints it,
    the overall mean in float32 (times 100). A task with no question is left
    out (the scripts print 0 or N/A).
    """
    out: dict[str, float] = {}
    if parsing == "lmms_eval":
        keys: dict[str, list[int]] = {}
        for qid, task, _ok in rows:
            keys.setdefault(f"{qid}_{task}", [0, 0])
        for qid, task, ok in rows:
            entry = keys[f"{qid}_{task}"]
            entry[0] += int(bool(ok))
            entry[1] += 1
        for name in CVBENCH_TASKS:
            c = sum(v[0] for k, v in keys.items() if name.lower() in k.lower())
            n = sum(v[1] for k, v in keys.items() if name.lower() in k.lower())
            if n:
                out[name] = 100 * c / n
        c, n = sum(v[0] for v in keys.values()), sum(v[1] for v in keys.values())
        out["overall"] = 100 * c / n if n else float("nan")
        return out
    if parsing == "video_r1":
        for name in CVBENCH_TASKS:
            flags = [bool(ok) for _, task, ok in rows if task == name]
            if flags:
                out[name] = round(100 * sum(flags) / len(flags), 1)
        values = np.asarray([1.0 if ok else 0.0 for _, _, ok in rows], dtype=np.float32)
        out["overall"] = float(100 * float(values.mean(dtype=np.float32))) if len(values) else float("nan")
        return out
    raise PartConfigError(f"cvbench_acc: unknown parsing {parsing!r}; choose {' or '.join(CVBENCH_PARSERS)}")


def crossvid_correct(reply: str, official_answer: str | Sequence[str]) -> bool:
    """CrossVid's rule: the raw reply equals the answer (a list of letters joined), with no parsing at all."""
    gt = official_answer if isinstance(official_answer, str) else "".join(official_answer)
    return reply == gt


def _official_answer(sample: Sample) -> str:
    value = sample.metadata.get("official_answer")
    if value is None:
        if sample.answer is None:
            return ""
        return sample.answer
    return str(value)


@evaluators.register("cvbench_acc")
class CVBenchAccuracy(Evaluator):
    """CVBench accuracy with one of its two official reply parsers (``lmms_eval``, ``video_r1``); per task type in the table breakdown.

    Compares with ``metadata["official_answer"]`` (the release's ``answer``
    field, a letter or Yes/No), else the sample's answer letter.
    """

    needs_answer = True

    def __init__(self, parsing: str = "lmms_eval") -> None:
        if parsing not in CVBENCH_PARSERS:
            raise PartConfigError(f"cvbench_acc: unknown parsing {parsing!r}; choose {' or '.join(CVBENCH_PARSERS)}")
        self.parsing = parsing

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        reply = "" if answer is None else answer.text
        return {self.name: float(cvbench_correct(reply, _official_answer(sample), self.parsing))}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        rows = [
            (r.sample_id, str(r.metadata.get("task_type", "")), r.metrics.get(self.name, 0.0) >= 1.0)
            for r in records
            if r.status == "ok" and self.name in r.metrics
        ]
        return {self.name: cvbench_aggregate(rows, self.parsing)["overall"] / 100 if rows else float("nan")}


@evaluators.register("crossvid_acc")
class CrossVidAccuracy(Evaluator):
    """CrossVid accuracy: the raw reply equals the answer letters (its ``eval/*.py``); per task in the table breakdown."""

    needs_answer = True

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        reply = "" if answer is None else answer.text
        return {self.name: float(crossvid_correct(reply, _official_answer(sample)))}


def mvu_eval_prediction(reply: Any) -> str:
    """The letter MVU-Eval's ``analyze.py`` reads from a reply: its first character after ``strip()`` and ``upper()``.

    >>> [mvu_eval_prediction(r) for r in ("  b", "(A)", "Answer: B", "", None)]
    ['B', '(', 'A', '', 'N']

    (``None`` never reaches the script's scorer: ``main.py`` writes no record for it.)
    """
    return str(reply).strip().upper()[:1]


def mvu_eval_correct(reply: Any, ground_truth: str) -> bool:
    """MVU-Eval's rule: the reply's first character (upper case) equals ``ground_truth`` as given (no other normalisation)."""
    return mvu_eval_prediction(reply) == ground_truth


def mvu_eval_aggregate(rows: Sequence[tuple[str, bool | None]], reference_exact: bool = False) -> dict[str, float]:
    """MVU-Eval's numbers from ``(task, correct)`` per question: ``overall`` and one entry per task, in percent.

    ``correct`` is None for a question with no reply (its model call failed):
    counted as wrong, or with ``reference_exact`` left out as ``analyze.py``
    never sees it. Tasks appear in the order first met, as the script's row
    lists them; an aggregate over no question is ``{"overall": nan}``.

    >>> mvu_eval_aggregate([("Counting", True), ("Counting", None), ("OR", False)])
    {'Counting': 50.0, 'OR': 0.0, 'overall': 33.333333333333336}
    >>> mvu_eval_aggregate([("Counting", True), ("Counting", None), ("OR", False)], reference_exact=True)
    {'Counting': 100.0, 'OR': 0.0, 'overall': 50.0}
    """
    by_task: dict[str, list[int]] = {}
    correct = total = 0
    for task, ok in rows:
        if ok is None and reference_exact:
            continue
        entry = by_task.setdefault(task, [0, 0])
        entry[0] += int(bool(ok))
        entry[1] += 1
        correct += int(bool(ok))
        total += 1
    out = {task: 100 * c / n for task, (c, n) in by_task.items()}
    out["overall"] = 100 * correct / total if total else float("nan")
    return out


@evaluators.register("mvu_eval_acc")
class MVUEvalAccuracy(Evaluator):
    """MVU-Eval accuracy as its ``inference/analyze.py`` scores: the reply's first character against the answer letter.

    Per task in the table breakdown (``metadata["task_type"]``), and all of
    them at once with :func:`mvu_eval_aggregate`. By default a failed sample
    given to :meth:`aggregate` counts as wrong and the comparison is with the
    sample's answer letter; ``reference_exact=True`` (key ``mvu_eval_acc_ref``)
    leaves failed samples out and compares with ``metadata["official_answer"]``
    (``ground_truth`` as written), as the script does.
    """

    needs_answer = True

    def __init__(self, reference_exact: bool = False) -> None:
        self.reference_exact = bool(reference_exact)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.name + REFERENCE_SUFFIX if self.reference_exact else self.name,)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        reply = "" if answer is None else answer.text
        truth = _official_answer(sample) if self.reference_exact else (sample.answer or "")
        return {self.metrics[0]: float(bool(truth) and mvu_eval_correct(reply, truth))}  # no ground truth: never right

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        key = self.metrics[0]
        rows: list[tuple[str, bool | None]] = []
        for r in records:
            task = str(r.metadata.get("task_type", ""))
            if r.status == "ok" and key in r.metrics:
                rows.append((task, r.metrics[key] >= 1.0))
            elif r.status != "ok":
                rows.append((task, None))
        return {key: mvu_eval_aggregate(rows, self.reference_exact)["overall"] / 100 if rows else float("nan")}
