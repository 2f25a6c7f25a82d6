"""LongVideoBench loader (``longvideobench``).

LongVideoBench (Wu et al., "LongVideoBench: A Benchmark for Long-context
Interleaved Video-Language Understanding", NeurIPS 2024 D&B): 6,678
referring-reasoning questions (1,337 validation, 5,341 test) on videos of
four duration groups (8-15 s, 15-60 s, 3-10 min, 15-60 min).

Schema of the official release (``longvideobench/LongVideoBench`` on Hugging
Face, read by ``longvideobench/longvideobench_dataset.py`` of the official
repo): ``lvb_val.json`` / ``lvb_test_wo_gt.json`` hold a list of records with
``video_id``, ``question``, ``question_wo_referring_query``, ``candidates``
(option texts), ``correct_choice`` (0-based index; absent in the test file),
``position``, ``topic_category``, ``question_category``, ``level``, ``id``
("86CxyhFV9MI_0"), ``video_path`` ("86CxyhFV9MI.mp4", under ``videos/``),
``subtitle_path``, ``duration_group`` (15, 60, 600, 3600),
``starting_timestamp_for_subtitles``, ``duration`` (s) and ``view_count``.
The Parquet tables of the same release, which lmms-eval reads
(``lmms_eval/tasks/longvideobench/utils.py``), give the options as
``option0`` .. ``option4`` padded with "N/A"; both forms are read.

LongVideoBench gives no evidence spans (``position`` is kept in the metadata
as is); KFS-Bench adds key-frame spans for part of it (see ``kfsbench``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    duration,
    integer,
    nonempty_text,
    number,
    option_texts,
    read_records,
    require,
    text,
)
from frameselect.errors import DatasetConfigError
from frameselect.parts import Range
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["LongVideoBench", "DURATION_GROUPS"]

DURATION_GROUPS = (15, 60, 600, 3600)
_MAX_OPTIONS = 5


def _options(rec: Mapping[str, Any], where: Where) -> tuple[str, ...]:
    if "candidates" in rec:
        return option_texts(rec["candidates"], where, "candidates")
    options = []
    for i in range(_MAX_OPTIONS):
        value = rec.get(f"option{i}")
        if value is None or value == "N/A":
            break
        options.append(nonempty_text(value, where, f"option{i}"))
    if not options:
        raise annotation_error(where, "candidates", "missing (neither 'candidates' nor 'option0'..'option4' given)")
    return tuple(options)


@datasets.register("longvideobench")
class LongVideoBench(AnnotationDataset):
    """LongVideoBench: referring-reasoning questions on web videos up to an hour long (val: 1,337, test: 5,341)."""

    param_ranges = {"duration_group": Range(ge=1, integer=True)}

    default_split = "val"
    splits = ("val", "test")
    split_aliases = {"validation": "val"}
    annotation_candidates = {
        "val": ("lvb_val.json", "lvb_val.jsonl", "validation-00000-of-00001.parquet"),
        "test": ("lvb_test_wo_gt.json", "lvb_test_wo_gt.jsonl", "test-00000-of-00001.parquet"),
    }
    video_candidates = ("videos",)

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        duration_group: int | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        if duration_group is not None and duration_group not in DURATION_GROUPS:
            raise DatasetConfigError(f"longvideobench: duration_group must be one of {DURATION_GROUPS}, got {duration_group!r}")
        self.duration_group = duration_group

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        out = []
        for where, rec in read_records(path):
            group = integer(require(rec, where, "duration_group"), where, "duration_group")
            if self.duration_group is not None and group != self.duration_group:
                continue
            sample_id = text(rec, where, "id")
            options = _options(rec, where)
            answer = None
            if rec.get("correct_choice") is not None:
                answer = answer_letter(integer(rec["correct_choice"], where, "correct_choice"), len(options), where, "correct_choice")
            question = text(rec, where, "question")
            video_id = text(rec, where, "video_id")
            video_path = text(rec, where, "video_path")
            category = text(rec, where, "question_category")
            metadata: dict[str, Any] = {"video_id": video_id, "duration_group": group, "question_category": category, "kind": category}
            if rec.get("duration") is not None:
                metadata["duration"] = duration(rec["duration"], where, "duration")
            for key in ("topic_category", "level", "subtitle_path", "question_wo_referring_query"):
                if rec.get(key) is not None:
                    metadata[key] = str(rec[key])
            if rec.get("starting_timestamp_for_subtitles") is not None:
                metadata["starting_timestamp_for_subtitles"] = number(rec["starting_timestamp_for_subtitles"], where, "starting_timestamp_for_subtitles")
            if rec.get("position") is not None:
                metadata["position"] = list(rec["position"]) if isinstance(rec["position"], (list, tuple)) else rec["position"]
            video = self.locate(sample_id, VideoRef(video_path, where, "video_path"), missing)
            if video is None:
                continue
            out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        return out
