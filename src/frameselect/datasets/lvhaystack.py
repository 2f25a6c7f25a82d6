"""LV-Haystack loader (``lvhaystack``).

LV-Haystack (Ye et al., "Re-thinking Temporal Search for Long-Form Video
Understanding", CVPR 2025, the benchmark of T*; Hugging Face
``LVHaystack/LongVideoHaystack``, ``data/{train,val,test,test_tiny}-00000-of-00001.parquet``):
questions on Ego4D videos, each with the one to five key frames that answer
it. Fields as the dataset card lists them: ``video_id`` (the Ego4D video uid;
the video is ``<video_id>.mp4``), ``vclip_id`` (the clip the question was
written on), ``question``, ``options`` (an object ``{"A": ..., ..., "E": ...}``),
``answer`` (a letter), ``frame_indexes_video`` and ``frame_indexes_vclip``
(key-frame indices in the full video and in the clip; the earlier
``LongVideoHaystack_tiny`` has one ``frame_indexes``) and ``video_metadata``
(``frame_rate``, ``video_duration``, ``vclip_interval_in_video``,
``vclip_duration``, ``video_frame_count``, resolution and codec fields, ...).

Evidence: each key frame i becomes the span of that frame,
``[i / frame_rate, (i + 1) / frame_rate]``, or ``[t - w, t + w]`` around its
time t with ``keyframe_window=w`` seconds (a tolerance, as T*'s temporal
metrics use one). The metadata keep ``keyframe_indexes``, ``keyframe_times`` (s) and ``fps``
(the ``lvh_*`` evaluators measure distances to these times).
``level="vclip"`` loads the clips (``<vclip_id>.mp4``,
clip frame indices) instead of the full videos. Sample ids are
``<vclip_id>/<n>``, n counting that clip's questions in file order.
Parquet needs ``pyarrow``; a JSON Lines export reads without it.

Videos are looked up in ``videos/``, in T*'s documented layout
(``mll-lab-nu/TStar``, README and ``run_TStar_onDataset.py``:
``--video_root ./Datasets/ego4d_data/ego4d_data/v1/256p``, the Ego4D CLI's
download folder) under ``root`` or ``root/Datasets``, and in Ego4D's
``v2/full_scale``; ``videos=`` names any other folder. A key frame before 0
or past the video (``video_frame_count``, else the duration), a negative
duration, or a ``vclip_interval_in_video`` that is not a ``[start, end]``
pair is an error naming the record.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    SPAN_TOLERANCE,
    AnnotationDataset,
    AnnotationWarning,
    MissingVideos,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    duration,
    integer,
    letter,
    nonempty_text,
    number,
    read_records,
    require,
    span,
    text,
)
from frameselect.errors import DatasetConfigError
from frameselect.parts import Range
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span

__all__ = ["LVHaystack"]

_LEVELS = ("video", "vclip")


def _options(value: Any, where: Where) -> tuple[str, ...]:
    if not isinstance(value, Mapping):
        raise annotation_error(where, "options", f"expected an object of lettered options {{'A': ..., ...}}, got {value!r}")
    options = []
    for i in range(len(value)):
        option = value.get(letter(i))
        if option is None or option == "":
            later = [k for k in map(letter, range(i + 1, len(value))) if value.get(k) not in (None, "")]
            if later:
                raise annotation_error(where, f"options.{letter(i)}", f"empty, but options {later} follow it")
            break
        options.append(nonempty_text(option, where, f"options.{letter(i)}"))
    if not options:
        raise annotation_error(where, "options", "no options")
    return tuple(options)


@datasets.register("lvhaystack")
class LVHaystack(AnnotationDataset):
    """LV-Haystack: key-frame search on long Ego4D videos, with five-option questions (T* benchmark)."""

    param_ranges = {"keyframe_window": Range(ge=0)}

    default_split = "test"
    splits = ("train", "val", "test", "test_tiny")
    annotation_candidates = {
        s: (f"data/{s}-00000-of-00001.parquet", f"data/{s}.jsonl", f"data/{s}.json", f"{s}.jsonl", f"{s}.json") for s in ("train", "val", "test", "test_tiny")
    }
    video_candidates = (
        "videos",
        "ego4d_data/ego4d_data/v1/256p",
        "Datasets/ego4d_data/ego4d_data/v1/256p",
        "ego4d_data/v1/256p",
        "v1/256p",
        "v2/full_scale",
        "ego4d_data/v2/full_scale",
        ".",
    )
    clip_candidates = ("vclips", "clips", "videos", ".")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        level: str = "video",
        keyframe_window: float | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        if level not in _LEVELS:
            raise DatasetConfigError(f"lvhaystack: level must be one of {_LEVELS}, got {level!r}")
        if keyframe_window is not None and not keyframe_window >= 0:
            raise DatasetConfigError(f"lvhaystack: keyframe_window must be >= 0 seconds, got {keyframe_window!r}")
        self.level = level
        self.keyframe_window = keyframe_window

    def video_folders(self) -> list[Path]:
        if self.level == "vclip" and self.videos is None:
            return [self.root / c if c != "." else self.root for c in self.clip_candidates]
        return super().video_folders()

    def _keyframes(self, rec: Mapping[str, Any], where: Where) -> tuple[str, list[int]]:
        names = ("frame_indexes_video", "frame_indexes") if self.level == "video" else ("frame_indexes_vclip",)
        for name in names:
            if rec.get(name) is not None:
                value = rec[name]
                if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
                    raise annotation_error(where, name, f"expected a list of frame indices, got {value!r}")
                frames = [integer(v, where, name) for v in value]
                if any(i < 0 for i in frames):
                    raise annotation_error(where, name, f"negative frame index in {frames}")
                return name, frames
        raise annotation_error(where, names[0], "missing")

    def _check_range(self, name: str, frames: list[int], fps: float, meta: Mapping[str, Any], where: Where) -> None:
        """Key frames must lie in the video (frame count where given, else duration)."""
        count = meta.get("video_frame_count") if self.level == "video" else None
        if count is not None:
            n = integer(count, where, "video_metadata.video_frame_count")
            if any(i >= n for i in frames):
                raise annotation_error(where, name, f"frame index past the end of the video ({n} frames): {frames}")
            return
        key = "video_duration" if self.level == "video" else "vclip_duration"
        if meta.get(key) is not None:
            length = duration(meta[key], where, f"video_metadata.{key}")
            if any(i / fps > length + SPAN_TOLERANCE for i in frames):
                raise annotation_error(where, name, f"key frame past the end of the video ({length} s at {fps} fps): {frames}")

    def _span(self, t: float, fps: float) -> Span:
        if self.keyframe_window is None:
            return Span(t, t + 1.0 / fps)
        return Span(max(0.0, t - self.keyframe_window), t + self.keyframe_window)

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        counts: dict[str, int] = {}
        unanswerable: list[str] = []
        out = []
        for where, rec in read_records(path):
            video_id = text(rec, where, "video_id")
            vclip_id = text(rec, where, "vclip_id")
            n = counts.get(vclip_id, 0)
            counts[vclip_id] = n + 1
            sample_id = f"{vclip_id}/{n}"
            raw_options = require(rec, where, "options")
            options = _options(raw_options, where)
            answer = self._answer(rec, raw_options, options, where, unanswerable)
            question = text(rec, where, "question")
            meta = require(rec, where, "video_metadata")
            if not isinstance(meta, Mapping):
                raise annotation_error(where, "video_metadata", f"expected an object, got {type(meta).__name__}")
            if meta.get("frame_rate") is None:
                raise annotation_error(where, "video_metadata.frame_rate", "missing")
            fps = number(meta["frame_rate"], where, "video_metadata.frame_rate")
            if fps <= 0:
                raise annotation_error(where, "video_metadata.frame_rate", f"must be positive, got {fps}")
            frames_field, frames = self._keyframes(rec, where)
            self._check_range(frames_field, frames, fps, meta, where)
            times = [i / fps for i in frames]
            evidence = tuple(sorted((self._span(t, fps) for t in times), key=lambda s: s.start))
            metadata: dict[str, Any] = {
                "video_id": video_id,
                "vclip_id": vclip_id,
                "level": self.level,
                "keyframe_indexes": frames,
                "keyframe_times": times,
                "fps": fps,
            }
            for key in ("video_duration", "vclip_duration"):
                if meta.get(key) is not None:
                    metadata[key] = duration(meta[key], where, f"video_metadata.{key}")
            if meta.get("vclip_interval_in_video") is not None:
                interval = span(meta["vclip_interval_in_video"], where, "video_metadata.vclip_interval_in_video")
                metadata["vclip_interval_in_video"] = [interval.start, interval.end]
            ref = VideoRef(video_id, where, "video_id") if self.level == "video" else VideoRef(vclip_id, where, "vclip_id")
            video = self.locate(sample_id, ref, missing)
            if video is None:
                continue
            out.append(Sample(sample_id, video, Query(question, options), answer, evidence, metadata))
        if unanswerable:
            warnings.warn(
                f"lvhaystack: {len(unanswerable)} question(s) have as answer an option the release leaves empty; kept, and they always "
                f"count as wrong (no answerer can choose an option that is not offered): {'; '.join(unanswerable)}",
                AnnotationWarning,
                stacklevel=3,
            )
        return out

    @staticmethod
    def _answer(rec: Mapping[str, Any], raw_options: Mapping[str, Any], options: tuple[str, ...], where: Where, unanswerable: list[str]) -> str:
        """The answer letter; one naming an option the release left empty is kept (T*'s test set has one) and reported."""
        value = require(rec, where, "answer")
        key = str(value).strip().strip("().").upper()
        if len(key) == 1 and key.isalpha() and key in raw_options and raw_options[key] in (None, "") and ord(key) - ord("A") >= len(options):
            unanswerable.append(f"{where} answer {key!r}")
            return key
        return answer_letter(value, len(options), where, "answer")
