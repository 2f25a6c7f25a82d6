"""Video-MME and Video-MME-v2 loaders (``videomme``, ``videomme_v2``).

Video-MME (Fu et al., "Video-MME: The First-Ever Comprehensive Evaluation
Benchmark of Multi-modal LLMs in Video Analysis", CVPR 2025): 2,700
four-option questions on 900 videos of three duration groups.

Schema, as the Hugging Face release ``lmms-lab/Video-MME`` ships it
(``videomme/test-00000-of-00001.parquet``) and lmms-eval reads it
(``lmms_eval/tasks/videomme/utils.py``): one row per question with
``video_id`` ("001"), ``duration`` ("short" | "medium" | "long"), ``domain``,
``sub_category``, ``url``, ``videoID`` (the YouTube id; the video is
``data/<videoID>.mp4``), ``question_id`` ("001-1"), ``task_type``,
``question``, ``options`` (``["A. ...", "B. ...", ...]``) and ``answer``
("A".."D"). The nested layout of the official evaluation template
(``BradyFU/Video-MME evaluation/output_test_template.json``: per video
``video_id``, ``duration_category``, ``video_category``,
``video_subcategory`` and ``questions`` with ``question_id``, ``task_type``,
``question``, ``choices``, ``answer``) is read too and mapped to the same
metadata names.

Video-MME-v2 (Fu et al., 2026; ``MME-Benchmarks/Video-MME-v2``): 3,200
eight-option questions (A-H), four per video, in groups scored together.
Schema of ``test.parquet`` as the official script
(``evaluation/test_video_mme_v2.py``) and lmms-eval
(``lmms_eval/tasks/videomme_v2/utils.py``) read it: ``video_id`` (the video is
``<video_id>.mp4``), ``question_id`` ("001-1"), ``question``, ``options`` (one
text, "A. ...\\nB. ..."), ``answer`` (a letter), ``group_type``
("relevance" | "logic"), ``group_structure``, ``level``, ``second_head``,
``third_head`` (the last three set on the last question of a group only).
A video's four questions form one group (as lmms-eval aggregates them): the
metadata add ``group_id`` (the video id) and ``group_order`` (the question_id
suffix, 1-4) for the ``videomme_v2_group`` evaluator.

Parquet needs ``pyarrow``; a JSON/JSON Lines export of the same table
(``datasets``' ``to_json``) is read without it. Neither benchmark annotates
evidence spans (KFS-Bench adds them to Video-MME: see ``kfsbench``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Record,
    Where,
    annotation_error,
    answer_letter,
    read_records,
    require,
    split_option_block,
    strip_option_letters,
    text,
)
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["VideoMME", "VideoMMEv2", "DURATION_GROUPS"]

DURATION_GROUPS = ("short", "medium", "long")

# nested official-template names -> the flat (Hugging Face / lmms-eval) names
_NESTED_NAMES = {"duration_category": "duration", "video_category": "domain", "video_subcategory": "sub_category"}


def _option_list(value: Any, where: Where, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        options = split_option_block(value)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        options = strip_option_letters(value)
    else:
        raise annotation_error(where, name, f"expected a list of option texts, got {value!r}")
    if not options:
        raise annotation_error(where, name, "no options")
    return options


def _flatten(records: list[Record]) -> Iterator[Record]:
    """Rows of the flat table, or the questions of the nested official template."""
    for where, rec in records:
        if "questions" not in rec:
            yield where, rec
            continue
        questions = rec["questions"]
        if not isinstance(questions, list):
            raise annotation_error(where, "questions", f"expected a list, got {type(questions).__name__}")
        video = {_NESTED_NAMES.get(k, k): v for k, v in rec.items() if k != "questions"}
        for j, q in enumerate(questions):
            qwhere = Where(where.path, where.line, where.index, f"questions[{j}]")
            if not isinstance(q, Mapping):
                raise annotation_error(qwhere, None, f"expected an object, got {type(q).__name__}")
            row = {**video, **q}
            if "options" not in row and "choices" in row:
                row["options"] = row["choices"]
            yield qwhere, row


@datasets.register("videomme")
class VideoMME(AnnotationDataset):
    """Video-MME: 2,700 four-option questions on 900 short/medium/long videos (lmms-lab/Video-MME)."""

    default_split = "test"
    splits = ("test",)
    annotation_candidates = {
        "test": (
            "videomme/test-00000-of-00001.parquet",
            "videomme/test.jsonl",
            "videomme/test.json",
            "test.jsonl",
            "test.json",
        )
    }
    video_candidates = ("data", "videos", "video")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        duration: str | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        if duration is not None and duration not in DURATION_GROUPS:
            raise ValueError(f"videomme: duration must be one of {DURATION_GROUPS}, got {duration!r}")
        self.duration = duration

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        out = []
        for where, rec in _flatten(read_records(path)):
            group = text(rec, where, "duration")
            if self.duration is not None and group != self.duration:
                continue
            sample_id = text(rec, where, "question_id")
            options = _option_list(require(rec, where, "options"), where, "options")
            answer = answer_letter(require(rec, where, "answer"), len(options), where, "answer")
            question = text(rec, where, "question")
            video_id = text(rec, where, "video_id")
            youtube_id = rec.get("videoID")
            video = self.locate(sample_id, [str(youtube_id), video_id] if youtube_id else [video_id], missing)
            if video is None:
                continue
            task_type = text(rec, where, "task_type")
            metadata: dict[str, Any] = {"video_id": video_id, "duration": group, "task_type": task_type, "kind": task_type}
            for key in ("videoID", "domain", "sub_category", "url"):
                if rec.get(key) is not None:
                    metadata[key] = str(rec[key])
            out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        return out


@datasets.register("videomme_v2")
class VideoMMEv2(AnnotationDataset):
    """Video-MME-v2: 3,200 eight-option questions on 800 videos, in groups of four (MME-Benchmarks/Video-MME-v2)."""

    default_split = "test"
    splits = ("test",)
    annotation_candidates = {"test": ("test.parquet", "test.jsonl", "test.json")}
    video_candidates = ("videos", "data", "video")

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        out = []
        for where, rec in read_records(path):
            sample_id = text(rec, where, "question_id")
            options = _option_list(require(rec, where, "options"), where, "options")
            answer = answer_letter(require(rec, where, "answer"), len(options), where, "answer")
            question = text(rec, where, "question")
            video_id = text(rec, where, "video_id")
            # the files are 001.mp4 ... 800.mp4; a table that stored the id as a number lost the padding
            names = [video_id] + ([f"{int(video_id):03d}"] if video_id.isdigit() and len(video_id) < 3 else [])
            video = self.locate(sample_id, names, missing)
            if video is None:
                continue
            metadata: dict[str, Any] = {"video_id": video_id, "group_id": video_id}
            order = sample_id.rpartition("-")[2]
            if order.isdigit():
                metadata["group_order"] = int(order)
            for key in ("group_type", "group_structure", "level", "second_head", "third_head"):
                value = rec.get(key)
                if value is not None and str(value) not in ("None", "nan"):
                    metadata[key] = value if isinstance(value, (int, float, str)) else str(value)
            if "group_type" in metadata:
                metadata["kind"] = metadata["group_type"]
            out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        return out
