"""EgoSchema loader (``egoschema``).

EgoSchema (Mangalam et al., "EgoSchema: A Diagnostic Benchmark for Very
Long-form Video Language Understanding", NeurIPS 2023 D&B): 5,031
five-option questions on three-minute egocentric clips from Ego4D; answers
are public for a 500-question subset.

Schema of the official repository (``egoschema/EgoSchema``):
``questions.json`` is a list of records with ``q_uid`` (also the video's file
name: ``videos/<q_uid>.mp4``), ``google_drive_id``, ``question`` and
``option 0`` .. ``option 4``; ``subset_answers.json`` maps ``q_uid`` to the
correct option's 0-based index (an error in it names that file and the
``q_uid``). Split ``"subset"`` loads the 500 answered
questions, ``"full"`` all of them (answers from ``answers=`` if given, else
none).

The copy lmms-eval reads (``lmms-lab/egoschema``,
``lmms_eval/tasks/egoschema/utils.py``) has ``question_idx``, ``question``,
``video_idx`` (the file name), ``option`` (``["A. ...", ...]``) and
``answer`` (the index as text); pass it as ``annotations=``. EgoSchema has
no evidence spans.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    integer,
    load_json,
    option_texts,
    optional_path,
    read_records,
    require,
    strip_option_letters,
    text,
)
from frameselect.errors import DatasetNotFoundError
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["EgoSchema"]

_N_OPTIONS = 5


def _answers(path: Path) -> dict[str, tuple[int, Where]]:
    """``q_uid -> (answer index, where it is written)`` from ``subset_answers.json``."""
    data = load_json(path)
    if not isinstance(data, Mapping):
        raise annotation_error(Where(path), None, f"expected a JSON object mapping q_uid to answer index, got {type(data).__name__}")
    if not data:
        raise annotation_error(Where(path), None, "holds no answers")
    out = {}
    for k, v in data.items():
        where = Where(path, key=str(k))
        out[str(k)] = (integer(v, where, "answer"), where)
    return out


def _official(rec: Mapping[str, Any], where: Where) -> tuple[str, str, tuple[str, ...], str]:
    q_uid = text(rec, where, "q_uid")
    options = tuple(text(rec, where, f"option {i}") for i in range(_N_OPTIONS))
    return q_uid, text(rec, where, "question"), options, "q_uid"


def _lmms_eval(rec: Mapping[str, Any], where: Where) -> tuple[str, str, tuple[str, ...], str]:
    video = text(rec, where, "video_idx")
    raw = option_texts(require(rec, where, "option"), where, "option")
    options = option_texts(strip_option_letters(raw), where, "option")
    return video, text(rec, where, "question"), options, "video_idx"


@datasets.register("egoschema")
class EgoSchema(AnnotationDataset):
    """EgoSchema: five-option questions on three-minute Ego4D clips (subset: 500 with answers; full: 5,031)."""

    default_split = "subset"
    splits = ("subset", "full")
    annotation_candidates = {"subset": ("questions.json",), "full": ("questions.json",)}
    video_candidates = ("videos", "good_clips_git", ".")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        answers: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        self.answers = optional_path(answers)

    def _answer_table(self) -> dict[str, tuple[int, Where]] | None:
        if self.answers is not None:
            return _answers(self.annotation_file(self.answers, what="answers file"))
        default = self.root / "subset_answers.json"
        if default.exists():
            return _answers(default)
        if self.split == "subset" and self.annotations is None:
            raise DatasetNotFoundError(f"egoschema: split 'subset' needs {default} (or answers=<file>)")
        return None

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        records = read_records(path)
        table = self._answer_table()
        out = []
        for where, rec in records:
            official = "q_uid" in rec
            sample_id, question, options, id_field = _official(rec, where) if official else _lmms_eval(rec, where)
            answer: str | None = None
            if table is not None and sample_id in table:
                index, answer_where = table[sample_id]
                answer = answer_letter(index, len(options), answer_where, "answer")
            elif not official and rec.get("answer") not in (None, ""):
                answer = answer_letter(rec["answer"], len(options), where, "answer")
            if self.split == "subset" and answer is None:
                continue
            video = self.locate(sample_id, VideoRef(sample_id, where, id_field), missing)
            if video is None:
                continue
            metadata: dict[str, Any] = {"q_uid": sample_id}
            if rec.get("google_drive_id") is not None:
                metadata["google_drive_id"] = str(rec["google_drive_id"])
            if rec.get("question_idx") is not None:
                metadata["question_idx"] = str(rec["question_idx"])
            out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        return out
