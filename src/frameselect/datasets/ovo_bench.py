"""OVO-Bench loader (``ovo_bench``) and its official scoring (evaluator ``ovo_bench``).

OVO-Bench (Li et al., "OVO-Bench: How Far is Your Video-LLMs from Real-World
Online Video Understanding?", CVPR 2025; repository ``JoeLeelyf/OVO-Bench``):
questions asked at a moment of a video, in three categories of tasks:

- backward tracing (``EPM``, ``ASI``, ``HLD``) and real-time visual perception
  (``OCR``, ``ACR``, ``ATR``, ``STU``, ``FPD``, ``OJR``): one multiple-choice
  question asked at ``realtime`` seconds (``question``, ``options``, ``gt``:
  the right option's 0-based index). One sample each, id ``"<id>"``.
- forward active responding (``REC``, ``SSR``, ``CRR``): a list of check points
  (``test_info``: ``realtime`` and the expected response) at which the model is
  asked again. One sample per check point, id ``"<id>/<j>"``: ``REC``
  (repetition counting; ``activity``; answer the ``count`` as text), ``SSR``
  (sequential steps; is the ``step`` being performed now? ``type`` 1: "Yes",
  0: "No"), ``CRR`` (clues; can the ``question`` be answered yet? "Yes"/"No").

Layout of the repository: ``data/ovo_bench_new.json`` (a list of records with
``id``, ``task``, ``video``), the videos under ``data/src_videos/<video>``.
Every sample carries ``asked_at`` (the record's or check point's
``realtime``) and ``metadata``: ``task``, ``category`` (``backward``,
``realtime``, ``forward``), ``ovo_id`` and, for check points, ``check``
(its index), ``type`` (SSR, CRR) or ``count`` (REC). The question texts of
the forward tasks are ours (the repository puts them in prompt templates).

**Scoring** (evaluator ``ovo_bench``, :mod:`frameselect.evaluators.ovo_bench`) follows the repository's ``utils/OVOBenchScore.py``
(``OVOBenchOfflineScore``) exactly, quirks included:
multiple-choice responses score 1 when the right letter occurs *anywhere* in
the response (``gt in response``: "B. a tire" counts for A and for B); REC
joins every digit of the response and compares with the count ("2 or 1"
reads as 21); SSR and CRR accept "Y"/"N" exactly, else a substring test of
"Yes"/"No" ("Not sure" counts as No). Per task, the accuracy is the mean over
its questions (forward: over its check points); a category's score is the
mean of its tasks' accuracies, the total the mean of the categories'. The
script stops when a category has no results; ours averages the categories
present.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frameselect.datasets._loading import (
    MissingVideos,
    TaskFilteredDataset,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    integer,
    number,
    option_texts,
    read_json_records,
    require,
    text,
)
from frameselect.evaluators.ovo_bench import BACKWARD_TASKS, FORWARD_TASKS, REALTIME_TASKS, category_of
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["OVOBench"]


def _asked_at(value: Any, where: Where, name: str) -> float:
    t = number(value, where, name)
    if t < 0:
        raise annotation_error(where, name, f"a question's time must be ≥ 0 seconds, got {t}")
    return t


@datasets.register("ovo_bench")
class OVOBench(TaskFilteredDataset):
    """OVO-Bench: questions asked at moments of a video (backward, real-time, forward); ``asked_at`` on every sample."""

    default_split = "test"
    splits = ("test",)
    annotation_candidates = {"test": ("data/ovo_bench_new.json", "ovo_bench_new.json")}
    video_candidates = ("data/src_videos", "src_videos", ".")

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out: list[Sample] = []
        for where, rec in read_json_records(self.annotation_file()):
            task = text(rec, where, "task")
            category = category_of(task)
            if not category:
                raise annotation_error(where, "task", f"unknown OVO-Bench task {task!r}; known: {', '.join(BACKWARD_TASKS + REALTIME_TASKS + FORWARD_TASKS)}")
            if self.tasks is not None and task not in self.tasks:
                continue
            ovo_id = integer(require(rec, where, "id"), where, "id")
            name = text(rec, where, "video")
            video = self.locate(str(ovo_id), VideoRef(name, where, "video"), missing)
            if video is None:
                continue
            base = {"task": task, "category": category, "ovo_id": ovo_id}
            if category != "forward":
                options = option_texts(require(rec, where, "options"), where, "options")
                answer = answer_letter(require(rec, where, "gt"), len(options), where, "gt")
                query = Query(text(rec, where, "question"), options)
                out.append(Sample(str(ovo_id), video, query, answer, (), base, asked_at=_asked_at(require(rec, where, "realtime"), where, "realtime")))
                continue
            checks = require(rec, where, "test_info")
            if not isinstance(checks, list) or not checks:
                raise annotation_error(where, "test_info", "expected a non-empty list of check points")
            for j, check in enumerate(checks):
                cw = Where(where.path, where.line, where.index, f"test_info[{j}]")
                if not isinstance(check, Mapping):
                    raise annotation_error(cw, None, f"a check point must be an object, got {type(check).__name__}")
                query, answer, extra = self._forward(task, rec, check, where, cw)
                asked = _asked_at(require(check, cw, "realtime"), cw, "realtime")
                out.append(Sample(f"{ovo_id}/{j}", video, query, answer, (), {**base, "check": j, **extra}, asked_at=asked))
        return out

    @staticmethod
    def _forward(task: str, rec: Mapping[str, Any], check: Mapping[str, Any], where: Where, cw: Where) -> tuple[Query, str, dict[str, Any]]:
        if task == "REC":
            count = integer(require(check, cw, "count"), cw, "count")
            return Query(f"How many times did they {text(rec, where, 'activity')}?"), str(count), {"count": count}
        kind = integer(require(check, cw, "type"), cw, "type")
        if kind not in (0, 1):
            raise annotation_error(cw, "type", f"expected 0 (No) or 1 (Yes), got {kind}")
        answer = "Yes" if kind == 1 else "No"
        if task == "SSR":
            step = text(check, cw, "step")
            return Query(f"Is the person performing this step now: {step}?", ("Yes", "No")), answer, {"type": kind, "step": step}
        question = text(rec, where, "question")
        return Query(f"Can this be answered from what has been shown so far: {question}", ("Yes", "No")), answer, {"type": kind}
