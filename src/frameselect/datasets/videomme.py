"""Video-MME and Video-MME-v2 loaders (``videomme``, ``videomme_v2``).

Video-MME (Fu et al., "Video-MME: The First-Ever Comprehensive Evaluation
Benchmark of Multi-modal LLMs in Video Analysis", CVPR 2025): 2,700
four-option questions on 900 videos of three duration groups.

The official repository (``BradyFU/Video-MME``) publishes no annotation
file, only templates for submitting results. The annotations are the
Hugging Face release ``lmms-lab/Video-MME``
(``videomme/test-00000-of-00001.parquet``, as lmms-eval reads it in
``lmms_eval/tasks/videomme/utils.py``), and that is what this loader reads:
one row per question with ``video_id`` ("001"), ``duration`` ("short" |
"medium" | "long"), ``domain``, ``sub_category``, ``url``, ``videoID`` (the
YouTube id; the video is ``data/<videoID>.mp4``), ``question_id``
("001-1"), ``task_type``, ``question``, ``options`` (``["A. ...", "B.
...", ...]``) and ``answer`` ("A".."D").

A file in the nested layout of the official *results* template
(``evaluation/output_test_template.json``: per video ``video_id``,
``duration_category``, ``video_category``, ``video_subcategory`` and
``questions`` with ``question_id``, ``task_type``, ``question``,
``choices``, ``answer`` and the model's ``response``) is read too, with
its names mapped to the ones above and ``response`` ignored; it has no
``videoID``, so its videos are looked up as ``<video_id>.mp4``.

Video-MME-v2 (Fu et al., 2026; ``MME-Benchmarks/Video-MME-v2``): 3,200
eight-option questions (A-H), four per video, in groups scored together.
Schema of ``test.parquet`` as the official script
(``evaluation/test_video_mme_v2.py``) and lmms-eval
(``lmms_eval/tasks/videomme_v2/utils.py``) read it: ``video_id`` (the video is
``<video_id>.mp4``), ``question_id`` ("001-1"), ``question``, ``options`` (one
text, "A. ...\\nB. ..."), ``answer`` (a letter), ``group_type``
("relevance" | "logic"), ``group_structure``, ``level``, ``second_head``,
``third_head`` (the last three set on the last question of a group only;
the loader copies them onto the group's other questions, so breakdowns by
level or head score whole groups).
A video's four questions form one group (as lmms-eval aggregates them): the
metadata add ``group_id`` (the video id) and ``group_order`` (the question_id
suffix, 1-4) for the ``videomme_v2_group`` evaluator.

Parquet needs ``pyarrow``; a JSON/JSON Lines export of the same table
(``datasets``' ``to_json``) is read without it. Neither benchmark annotates
evidence spans (KFS-Bench adds them to Video-MME: see ``kfsbench``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Record,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    nonempty_text,
    read_records,
    require,
    split_option_block,
    strip_option_letters,
    text,
)
from frameselect.errors import DatasetConfigError
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
    for i, option in enumerate(options):
        nonempty_text(option, where, f"{name}[{i}]")
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
            raise DatasetConfigError(f"videomme: duration must be one of {DURATION_GROUPS}, got {duration!r}")
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
            task_type = text(rec, where, "task_type")
            metadata: dict[str, Any] = {"video_id": video_id, "duration": group, "task_type": task_type, "kind": task_type}
            for key in ("videoID", "domain", "sub_category", "url"):
                if rec.get(key) is not None:
                    metadata[key] = str(rec[key])
            own = VideoRef(video_id, where, "video_id")
            refs = [VideoRef(text(rec, where, "videoID"), where, "videoID"), own] if rec.get("videoID") else [own]
            video = self.locate(sample_id, refs, missing)
            if video is None:
                continue
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
            video = self.locate(sample_id, [VideoRef(n, where, "video_id") for n in names], missing)
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
        return _share_group_fields(out)


#: fields the release sets on a group's last question only; every member of the group carries them here
GROUP_FIELDS = ("level", "second_head", "third_head")


def _share_group_fields(samples: list[Sample]) -> list[Sample]:
    """Copy ``level``/``second_head``/``third_head`` from the question of a group that has them onto its others.

    The official rating reads them from a group's last question; copying them
    makes breakdowns by level or head (``table --by level``) score whole groups.
    """
    shared: dict[str, dict[str, Any]] = {}
    for s in samples:
        found = {k: s.metadata[k] for k in GROUP_FIELDS if k in s.metadata}
        if found:
            shared.setdefault(str(s.metadata["group_id"]), {}).update(found)
    return [
        dataclasses.replace(s, metadata={**shared.get(str(s.metadata["group_id"]), {}), **s.metadata}) if str(s.metadata["group_id"]) in shared else s
        for s in samples
    ]
