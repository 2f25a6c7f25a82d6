"""NExT-QA and NExT-GQA loaders (``nextqa``, ``nextgqa``).

NExT-QA (Xiao et al., "NExT-QA: Next Phase of Question-Answering to
Explaining Temporal Actions", CVPR 2021), multiple-choice version: five
options per causal (C*), temporal (T*) or descriptive (D*) question on
VidOR videos. Schema of the official repository (``doc-doc/NExT-QA``,
``dataset/nextqa/{train,val,test}.csv``; the same columns lmms-eval reads in
``lmms_eval/tasks/nextqa/utils.py``): ``video``, ``frame_count``, ``width``,
``height``, ``question``, ``answer`` (0-based index), ``qid``, ``type``,
``a0`` .. ``a4``. ``map_vid_vidorID.json`` maps a video id to its path under
``NExTVideo/`` ("0101/2909445186" -> ``NExTVideo/0101/2909445186.mp4``).
Sample ids are ``<video>_<qid>``, as in the official result files.

NExT-GQA (Xiao et al., "Can I Trust Your Answer? Visually Grounded Video
Question Answering", CVPR 2024; ``doc-doc/NExT-GQA``,
``datasets/nextgqa/``): the causal and temporal questions of NExT-QA val/test
with evidence spans. ``{val,test}.csv`` has ``video_id``, ``frame_count``,
``width``, ``height``, ``question``, ``answer`` (the correct option's
*text*), ``qid``, ``type``, ``a0`` .. ``a4``; ``gsub_{val,test}.json`` maps
``video_id`` to ``{"duration": s, "location": {qid: [[start, end], ...]},
"fps": r}`` (seconds). ``nextqa`` also attaches these spans to the questions
they cover when it finds ``gsub_<split>.json`` (or ``grounding=`` names it).
A ``nextgqa`` question is grounded QA: answering models are asked for the
letter and the evidence window as fractions of the video
(``metadata["answer_windows"] = "fraction"``, the convention of NExT-GQA's
``eval_ground`` with ``gs=True``).
Spans are kept as released, a start up to a second before 0 or an end up to
a second past ``duration`` included (the release rounds to 0.1 s); further
out is an error.

Question types: ``metadata["type"]`` keeps the released type; the breakdown
key ``metadata["kind"]`` merges ``TP`` (temporal, previous) into ``TN``
(temporal, next), as both official scorers do (``doc-doc/NExT-QA``
``eval_mc.py`` and ``doc-doc/NExT-GQA`` ``code/TempCLIP/eval_next.py``,
``accuracy_metric``: "combine temporal qns of previous and next as 'TN'").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect._core.windows import ANSWER_WINDOWS
from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    duration,
    integer,
    letter,
    load_json,
    nonempty_text,
    optional_path,
    read_csv,
    spans,
    text,
    within,
)
from frameselect.errors import DatasetNotFoundError
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span

__all__ = ["NExTQA", "NExTGQA", "load_grounding", "scored_type", "TYPE_MERGES"]

_OPTION_COLUMNS = tuple(f"a{i}" for i in range(5))

#: the official scorers count these question types under another one
TYPE_MERGES = {"TP": "TN"}


def scored_type(qtype: str) -> str:
    """The question type as the official scorers group it (``TP`` -> ``TN``)."""
    return TYPE_MERGES.get(qtype, qtype)


class _Grounding:
    """The contents of a ``gsub_<split>.json``."""

    def __init__(self, path: Path) -> None:
        data = load_json(path)
        if not isinstance(data, Mapping):
            raise annotation_error(Where(path), None, f"expected a JSON object keyed by video_id, got {type(data).__name__}")
        self.path = path
        self.videos: dict[str, dict[str, Any]] = {}
        for video_id, entry in data.items():
            where = Where(path, key=str(video_id))
            if not isinstance(entry, Mapping):
                raise annotation_error(where, None, f"expected an object, got {type(entry).__name__}")
            location = entry.get("location")
            if not isinstance(location, Mapping):
                raise annotation_error(where, "location", f"expected an object mapping qid to spans, got {location!r}")
            info: dict[str, Any] = {}
            for key in ("duration", "fps"):
                if entry.get(key) is not None:
                    info[key] = duration(entry[key], where, key)
            length = info.get("duration")
            info["location"] = {str(q): within(spans(v, where, f"location.{q}"), length, where, f"location.{q}") for q, v in location.items()}
            self.videos[str(video_id)] = info

    def spans(self, video_id: str, qid: str) -> tuple[Span, ...] | None:
        info = self.videos.get(video_id)
        return None if info is None else info["location"].get(qid)

    def info(self, video_id: str) -> dict[str, Any]:
        info = self.videos.get(video_id, {})
        return {k: v for k, v in info.items() if k != "location"}


def load_grounding(path: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[Span, ...]]:
    """``(video_id, qid) -> spans`` from a NExT-GQA ``gsub_<split>.json``."""
    g = _Grounding(Path(path))
    return {(v, q): s for v, info in g.videos.items() for q, s in info["location"].items()}


class _NExTBase(AnnotationDataset):
    video_column = "video"
    video_candidates = ("NExTVideo", "videos")
    csv_folders: tuple[str, ...] = ()

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        video_map: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        self.video_map = optional_path(video_map)

    def _csv(self) -> Path:
        return self.annotation_file(candidates=[f"{folder}/{self.split}.csv" if folder else f"{self.split}.csv" for folder in self.csv_folders])

    def _map(self, csv_path: Path) -> dict[str, VideoRef]:
        if self.video_map is not None:
            path: Path | None = self.annotation_file(self.video_map, what="video map")
        else:
            path = next((p for p in (csv_path.parent / "map_vid_vidorID.json", self.root / "map_vid_vidorID.json") if p.exists()), None)
        if path is None:
            return {}
        data = load_json(path)
        if not isinstance(data, Mapping):
            raise annotation_error(Where(path), None, f"expected a JSON object mapping video id to path, got {type(data).__name__}")
        return {str(k): VideoRef(nonempty_text(v, Where(path, key=str(k)), "path"), Where(path, key=str(k)), "path") for k, v in data.items()}

    def _rows(self) -> tuple[Path, list[tuple[Where, Mapping[str, Any]]]]:
        path = self._csv()
        required = (self.video_column, "question", "answer", "qid", "type", *_OPTION_COLUMNS)
        return path, read_csv(path, required)

    def _sample(
        self,
        where: Where,
        rec: Mapping[str, Any],
        answer: str,
        evidence: tuple[Span, ...],
        extra: dict[str, Any],
        vmap: Mapping[str, VideoRef],
        missing: MissingVideos,
    ) -> Sample | None:
        video_id = text(rec, where, self.video_column)
        qid = integer(text(rec, where, "qid"), where, "qid")
        sample_id = f"{video_id}_{qid}"
        options = tuple(text(rec, where, c) for c in _OPTION_COLUMNS)
        question = text(rec, where, "question")
        qtype = text(rec, where, "type")
        metadata: dict[str, Any] = {"video_id": video_id, "qid": qid, "type": qtype, "kind": scored_type(qtype)}
        for key in ("frame_count", "width", "height"):
            if rec.get(key) not in (None, ""):
                metadata[key] = integer(rec[key], where, key)
        metadata.update(extra)
        own = VideoRef(video_id, where, self.video_column)
        video = self.locate(sample_id, [vmap[video_id], own] if video_id in vmap else [own], missing)
        if video is None:
            return None
        return Sample(sample_id, video, Query(question, options), answer, evidence, metadata)


@datasets.register("nextqa")
class NExTQA(_NExTBase):
    """NExT-QA multiple choice (five options; causal, temporal, descriptive), with NExT-GQA spans where available."""

    default_split = "val"
    splits = ("train", "val", "test")
    csv_folders = ("", "nextqa", "dataset/nextqa")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        video_map: str | os.PathLike[str] | None = None,
        grounding: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos, video_map)
        self.grounding = grounding if isinstance(grounding, bool) or grounding is None else Path(grounding).expanduser()

    def _grounding(self, csv_path: Path) -> _Grounding | None:
        if self.grounding is False:
            return None
        if isinstance(self.grounding, Path):
            return _Grounding(self.annotation_file(self.grounding, what="grounding file"))
        name = f"gsub_{self.split}.json"
        for path in (csv_path.parent / name, self.root / "nextgqa" / name, self.root / "datasets" / "nextgqa" / name, self.root / name):
            if path.exists():
                return _Grounding(path)
        if self.grounding is True:
            raise DatasetNotFoundError(f"nextqa: grounding=True but no {name} found next to {csv_path} or under {self.root}")
        return None

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path, rows = self._rows()
        vmap = self._map(path)
        grounding = self._grounding(path)
        out = []
        for where, rec in rows:
            answer = answer_letter(integer(text(rec, where, "answer"), where, "answer"), len(_OPTION_COLUMNS), where, "answer")
            evidence: tuple[Span, ...] = ()
            extra: dict[str, Any] = {}
            if grounding is not None:
                video_id, qid = text(rec, where, "video"), str(integer(text(rec, where, "qid"), where, "qid"))
                found = grounding.spans(video_id, qid)
                if found is not None:
                    evidence = found
                    extra = grounding.info(video_id)
            sample = self._sample(where, rec, answer, evidence, extra, vmap, missing)
            if sample is not None:
                out.append(sample)
        return out


@datasets.register("nextgqa")
class NExTGQA(_NExTBase):
    """NExT-GQA: NExT-QA causal/temporal questions with evidence spans (val: 3,358, test: 5,553)."""

    default_split = "val"
    splits = ("val", "test", "train")
    video_column = "video_id"
    csv_folders = ("", "nextgqa", "datasets/nextgqa")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        video_map: str | os.PathLike[str] | None = None,
        grounding: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos, video_map)
        self.grounding = optional_path(grounding)

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path, rows = self._rows()
        vmap = self._map(path)
        grounding: _Grounding | None = None
        if self.grounding is not None:
            grounding = _Grounding(self.annotation_file(self.grounding, what="grounding file"))
        elif self.split != "train":
            gpath = next((p for p in (path.parent / f"gsub_{self.split}.json", self.root / f"gsub_{self.split}.json") if p.exists()), None)
            if gpath is None:
                raise DatasetNotFoundError(f"nextgqa: no gsub_{self.split}.json next to {path}; pass grounding=<file>")
            grounding = _Grounding(gpath)
        out = []
        for where, rec in rows:
            options = tuple(text(rec, where, c) for c in _OPTION_COLUMNS)
            answer_text = text(rec, where, "answer")
            if answer_text not in options:
                raise annotation_error(where, "answer", f"{answer_text!r} is not one of the options a0..a4 {list(options)}")
            answer = letter(options.index(answer_text))
            evidence: tuple[Span, ...] = ()
            extra: dict[str, Any] = {ANSWER_WINDOWS: "fraction"}  # grounded QA: the answer and its window, as fractions of the video
            if grounding is not None:
                video_id, qid = text(rec, where, "video_id"), str(integer(text(rec, where, "qid"), where, "qid"))
                evidence = grounding.spans(video_id, qid) or ()
                extra.update(grounding.info(video_id))
            sample = self._sample(where, rec, answer, evidence, extra, vmap, missing)
            if sample is not None:
                out.append(sample)
        return out
