"""StreamingBench's official scoring (evaluator ``streamingbench``), as the repository's ``src/data/count.py`` computes it.

See :mod:`frameselect.datasets.streamingbench` for the benchmark, its layout,
what is loaded and what is left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = [
    "StreamingBenchScore",
    "REALTIME_TASKS",
    "OMNI_TASKS",
    "CONTEXTUAL_TASKS",
    "CATEGORIES",
    "category_of",
    "sb_correct",
    "sb_scores",
]

#: real-time visual understanding (``questions_real.json``), task names as the release spells them
REALTIME_TASKS = (
    "Object Recognition",
    "Causal Reasoning",
    "Clips Summarize",
    "Attribute Recognition",
    "Event Understanding",
    "Text-Rich Understanding",
    "Prospective Reasoning",
    "Spatial Understanding",
    "Action Recognition",
    "Counting",
)
#: omni-source understanding (in ``questions_omni.json``): their questions are about the audio track as well
OMNI_TASKS = ("Emotion Recognition", "Scene Understanding", "Source Discrimination", "Multimodal Alignment")
#: contextual understanding: two in ``questions_omni.json``, sequential questions in ``questions_sqa.json``;
#: "Proactive Output" (``questions_proactive.json``) is named here but not loaded
CONTEXTUAL_TASKS = ("Misleading Context Understanding", "Anomaly Context Understanding", "Sequential Question Answering", "Proactive Output")
CATEGORIES = ("realtime", "omni", "contextual")


def category_of(task: str) -> str:
    """``realtime``, ``omni`` or ``contextual`` for a StreamingBench task name; ``""`` for another."""
    if task in REALTIME_TASKS:
        return "realtime"
    if task in OMNI_TASKS:
        return "omni"
    return "contextual" if task in CONTEXTUAL_TASKS else ""


def sb_correct(sample: Sample, response: str | None) -> float:
    """1.0 or 0.0: ``count.py``'s test, the response's *first character* equal to the answer letter.

    ``"B. a tire"`` counts for B; ``" B"``, ``"b"`` and ``"The answer is B"``
    do not. An empty response, on which the script stops with an
    ``IndexError``, counts as wrong here; no response at all (a failed
    sample) is left out of every score, as the script leaves out a question
    without the model's key.
    """
    if not response or not sample.answer:
        return 0.0
    return float(response[0] == sample.answer)


def sb_scores(records: Sequence[SampleRecord], key: str = "sb_correct") -> dict[str, float]:
    """Per-task accuracies (``sb/<task>``), per-category accuracies (``sb_realtime``, ...) and ``sb_total``, as fractions.

    Every score is over questions (correct / answered), as ``count.py``'s
    per-task rows and its per-file ``total`` row are; a category is all of
    its questions together (real-time is the whole of ``questions_real.json``,
    so ``sb_realtime`` is that file's ``total`` row).
    """
    by_task: dict[str, list[float]] = {}
    for r in records:
        if r.status != "ok" or key not in r.metrics or math.isnan(float(r.metrics[key])):
            continue
        by_task.setdefault(str(r.metadata.get("task", "")), []).append(float(r.metrics[key]))
    out: dict[str, float] = {}
    by_category: dict[str, list[float]] = {}
    every: list[float] = []
    for task, values in sorted(by_task.items()):
        out[f"sb/{task}"] = sum(values) / len(values)
        every.extend(values)
        if category_of(task):
            by_category.setdefault(category_of(task), []).extend(values)
    for cat in CATEGORIES:
        if cat in by_category:
            out[f"sb_{cat}"] = sum(by_category[cat]) / len(by_category[cat])
    out["sb_total"] = sum(every) / len(every) if every else math.nan
    return out


@evaluators.register("streamingbench")
class StreamingBenchScore(Evaluator):
    """StreamingBench's official scoring (``THUNLP-MT/StreamingBench``, ``src/data/count.py``): per task, per category, total.

    Per sample ``sb_correct`` (:func:`sb_correct`: the response's first
    character is the answer letter); the table holds ``sb_realtime``,
    ``sb_omni``, ``sb_contextual`` (the categories present) and ``sb_total``
    (fractions over questions).
    """

    needs_answer: ClassVar[bool] = True

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("sb_realtime", "sb_omni", "sb_contextual", "sb_total")

    @property
    def score_keys(self) -> tuple[str, ...]:
        return ("sb_correct",)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {"sb_correct": sb_correct(sample, None if answer is None else answer.text)}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        scores = sb_scores(records)
        return {m: scores[m] for m in self.metrics if m in scores}
