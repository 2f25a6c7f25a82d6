"""OVO-Bench's official scoring (evaluator ``ovo_bench``), as the repository's ``utils/OVOBenchScore.py`` computes it.

See :mod:`frameselect.datasets.ovo_bench` for the benchmark, its layout and the
scoring's quirks (followed exactly).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = ["OVOBenchScore", "BACKWARD_TASKS", "REALTIME_TASKS", "FORWARD_TASKS", "CATEGORIES", "category_of", "ovo_correct", "ovo_scores"]

BACKWARD_TASKS = ("EPM", "ASI", "HLD")
REALTIME_TASKS = ("OCR", "ACR", "ATR", "STU", "FPD", "OJR")
FORWARD_TASKS = ("REC", "SSR", "CRR")
CATEGORIES = ("backward", "realtime", "forward")


def category_of(task: str) -> str:
    """``backward``, ``realtime`` or ``forward`` for an OVO-Bench task name; ``""`` for another."""
    if task in BACKWARD_TASKS:
        return "backward"
    if task in REALTIME_TASKS:
        return "realtime"
    return "forward" if task in FORWARD_TASKS else ""


def ovo_correct(sample: Sample, response: str | None) -> float:
    """1.0 or 0.0: the official per-question (per check point) score of ``response`` (``utils/OVOBenchScore.py``)."""
    if response is None:
        return 0.0
    task = str(sample.metadata.get("task", ""))
    if task == "REC":
        return float("".join(re.findall(r"\d+", response)) == str(sample.metadata.get("count", sample.answer)))
    if task in ("SSR", "CRR"):
        kind = int(sample.metadata.get("type", 1 if sample.answer == "Yes" else 0))
        if (response == "N" and kind == 0) or (response == "Y" and kind == 1):
            return 1.0
        return float(("Yes" if kind == 1 else "No") in response)
    return float((sample.answer or "") in response) if sample.answer else 0.0


def ovo_scores(records: Sequence[SampleRecord], key: str = "ovo_correct") -> dict[str, float]:
    """Per-task accuracies (``ovo/<task>``), category scores (``ovo_backward``, ...) and ``ovo_total``, as fractions.

    A category's score is the mean of its tasks' accuracies; the total the
    mean of the categories present.
    """
    by_task: dict[str, list[float]] = {}
    for r in records:
        if r.status != "ok" or key not in r.metrics:
            continue
        by_task.setdefault(str(r.metadata.get("task", "")), []).append(float(r.metrics[key]))
    out: dict[str, float] = {}
    categories: dict[str, list[float]] = {}
    for task, values in sorted(by_task.items()):
        acc = sum(values) / len(values)
        out[f"ovo/{task}"] = acc
        if category_of(task):
            categories.setdefault(category_of(task), []).append(acc)
    for cat in CATEGORIES:
        if cat in categories:
            out[f"ovo_{cat}"] = sum(categories[cat]) / len(categories[cat])
    present = [out[f"ovo_{c}"] for c in CATEGORIES if f"ovo_{c}" in out]
    out["ovo_total"] = sum(present) / len(present) if present else math.nan
    return out


@evaluators.register("ovo_bench")
class OVOBenchScore(Evaluator):
    """OVO-Bench's official scoring (``JoeLeelyf/OVO-Bench``, ``utils/OVOBenchScore.py``): per task, per category, total.

    Per sample ``ovo_correct`` (:func:`ovo_correct`); the table holds
    ``ovo_backward``, ``ovo_realtime``, ``ovo_forward`` (the categories
    present) and ``ovo_total`` (fractions; the script prints percentages).
    """

    needs_answer: ClassVar[bool] = True

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("ovo_backward", "ovo_realtime", "ovo_forward", "ovo_total")

    @property
    def score_keys(self) -> tuple[str, ...]:
        return ("ovo_correct",)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {"ovo_correct": ovo_correct(sample, None if answer is None else answer.text)}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        scores = ovo_scores(records)
        return {m: scores[m] for m in self.metrics if m in scores}
