"""MLVU loader (``mlvu``).

MLVU (Zhou et al., "MLVU: Benchmarking Multi-task Long Video
Understanding", CVPR 2025): the dev set's seven multiple-choice tasks on
videos of 3 minutes to over 2 hours.

Layout and schema of the official release (``MLVU/MVLU`` on Hugging Face;
``JUNJIE99/MLVU``, read the same way by VLMEvalKit's ``MLVU_MCQ``):
``MLVU/json/<n>_<task>.json`` for ``1_plotQA``, ``2_needle``, ``3_ego``,
``4_count``, ``5_order``, ``6_anomaly_reco`` and ``7_topic_reasoning``, each a
list of records with ``video`` (file name under ``MLVU/video/<n>_<task>/``),
``duration`` (s), ``question``, ``candidates`` (option texts), ``answer``
(the correct option's *text*) and ``question_type``. The two open-ended
tasks (``8_sub_scene``, ``9_summary``) have no options and are not loaded.
Sample ids are ``<task>/<index in its file>``.

The copy lmms-eval reads (``sy1998/MLVU_dev``,
``lmms_eval/tasks/mlvu/utils.py``) is one table with ``video_name``,
``duration``, ``question`` (options appended as "(A) ..." lines, dropped
here), ``candidates``, ``answer`` (a letter), ``task_type`` and
``question_id``; pass it as ``annotations=``. MLVU has no evidence spans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Record,
    Where,
    annotation_error,
    answer_letter,
    letter,
    number,
    read_records,
    require,
    text,
)
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["MLVU", "MC_TASK_FILES"]

MC_TASK_FILES = (
    "1_plotQA.json",
    "2_needle.json",
    "3_ego.json",
    "4_count.json",
    "5_order.json",
    "6_anomaly_reco.json",
    "7_topic_reasoning.json",
)
_EMBEDDED_OPTION = re.compile(r"^\s*\(?[A-Z][.)]\s")


def _task_name(stem: str) -> str:
    """``"1_plotQA"`` -> ``"plotQA"``."""
    head, _, tail = stem.partition("_")
    return tail if head.isdigit() and tail else stem


def _question_text(question: str) -> str:
    """The question without option lines appended to it ("(A) ..." in lmms-eval's copy)."""
    lines = question.splitlines()
    for i, line in enumerate(lines[1:], start=1):
        if _EMBEDDED_OPTION.match(line):
            return "\n".join(lines[:i]).strip()
    return question.strip()


def _answer(rec: Mapping[str, Any], options: tuple[str, ...], where: Where) -> str:
    value = require(rec, where, "answer")
    if isinstance(value, str) and value in options:
        return letter(options.index(value))
    if isinstance(value, str) and len(value.strip().strip("().")) == 1:
        return answer_letter(value, len(options), where, "answer")
    raise annotation_error(where, "answer", f"{value!r} is neither one of the candidates {list(options)} nor an option letter")


@datasets.register("mlvu")
class MLVU(AnnotationDataset):
    """MLVU dev: seven multiple-choice long-video tasks (plot QA, needle QA, ego reasoning, counting, order, anomaly, topic)."""

    default_split = "dev"
    splits = ("dev",)
    video_candidates = ("MLVU/video", "video", "videos")

    def _json_dir(self) -> Path:
        for candidate in (self.root / "MLVU" / "json", self.root / "json"):
            if candidate.is_dir():
                return candidate
        raise FileNotFoundError(
            f"mlvu: no annotation folder under {self.root}; tried {self.root / 'MLVU' / 'json'}, {self.root / 'json'}. "
            "Pass root=<folder holding MLVU/json> or annotations=<file>."
        )

    def _sources(self) -> list[tuple[str, list[Record]]]:
        """(file stem, records) per annotation file."""
        if self.annotations is not None:
            path = self.annotation_file()
            return [(path.stem, read_records(path))]
        folder = self._json_dir()
        files = [folder / name for name in MC_TASK_FILES if (folder / name).exists()]
        if not files:
            raise FileNotFoundError(f"mlvu: no multiple-choice task files ({', '.join(MC_TASK_FILES)}) in {folder}")
        return [(p.stem, read_records(p)) for p in files]

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out = []
        roots = self.video_folders()
        for stem, records in self._sources():
            for i, (where, rec) in enumerate(records):
                task = str(rec.get("task_type") or _task_name(stem))
                sample_id = str(rec["question_id"]) if rec.get("question_id") is not None else f"{_task_name(stem)}/{i}"
                candidates = require(rec, where, "candidates")
                if not isinstance(candidates, list) or not candidates or not all(isinstance(c, str) for c in candidates):
                    raise annotation_error(where, "candidates", f"expected a non-empty list of option texts, got {candidates!r}")
                options = tuple(candidates)
                answer = _answer(rec, options, where)
                question = _question_text(text(rec, where, "question"))
                name = text(rec, where, "video") if "video" in rec or "video_name" not in rec else text(rec, where, "video_name")
                folders = [r / stem for r in roots] + [r / task for r in roots if task != stem] + roots
                video = self.locate(sample_id, name, missing, folders)
                if video is None:
                    continue
                metadata: dict[str, Any] = {"task_type": task, "kind": task, "video": name}
                if rec.get("question_type") is not None:
                    metadata["question_type"] = str(rec["question_type"])
                if rec.get("duration") is not None:
                    metadata["duration"] = number(rec["duration"], where, "duration")
                out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        return out
