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
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Where,
    annotation_error,
    answer_letter,
    integer,
    letter,
    number,
    read_records,
    require,
    text,
)
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
            break
        options.append(str(option))
    if not options:
        raise annotation_error(where, "options", "no options")
    return tuple(options)


@datasets.register("lvhaystack")
class LVHaystack(AnnotationDataset):
    """LV-Haystack: key-frame search on long Ego4D videos, with five-option questions (T* benchmark)."""

    default_split = "test"
    splits = ("train", "val", "test", "test_tiny")
    annotation_candidates = {
        s: (f"data/{s}-00000-of-00001.parquet", f"data/{s}.jsonl", f"data/{s}.json", f"{s}.jsonl", f"{s}.json") for s in ("train", "val", "test", "test_tiny")
    }
    video_candidates = ("videos", "v2/full_scale", "ego4d_data/v2/full_scale", ".")
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
            raise ValueError(f"lvhaystack: level must be one of {_LEVELS}, got {level!r}")
        if keyframe_window is not None and not keyframe_window >= 0:
            raise ValueError(f"lvhaystack: keyframe_window must be >= 0 seconds, got {keyframe_window!r}")
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
                return name, [integer(v, where, name) for v in value]
        raise annotation_error(where, names[0], "missing")

    def _span(self, t: float, fps: float) -> Span:
        if self.keyframe_window is None:
            return Span(t, t + 1.0 / fps)
        return Span(max(0.0, t - self.keyframe_window), t + self.keyframe_window)

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        counts: dict[str, int] = {}
        out = []
        for where, rec in read_records(path):
            video_id = text(rec, where, "video_id")
            vclip_id = text(rec, where, "vclip_id")
            n = counts.get(vclip_id, 0)
            counts[vclip_id] = n + 1
            sample_id = f"{vclip_id}/{n}"
            options = _options(require(rec, where, "options"), where)
            answer = answer_letter(require(rec, where, "answer"), len(options), where, "answer")
            question = text(rec, where, "question")
            meta = require(rec, where, "video_metadata")
            if not isinstance(meta, Mapping):
                raise annotation_error(where, "video_metadata", f"expected an object, got {type(meta).__name__}")
            if meta.get("frame_rate") is None:
                raise annotation_error(where, "video_metadata.frame_rate", "missing")
            fps = number(meta["frame_rate"], where, "video_metadata.frame_rate")
            if fps <= 0:
                raise annotation_error(where, "video_metadata.frame_rate", f"must be positive, got {fps}")
            _, frames = self._keyframes(rec, where)
            times = [i / fps for i in frames]
            evidence = tuple(sorted((self._span(t, fps) for t in times), key=lambda s: s.start))
            video = self.locate(sample_id, video_id if self.level == "video" else vclip_id, missing)
            if video is None:
                continue
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
                    metadata[key] = number(meta[key], where, f"video_metadata.{key}")
            if meta.get("vclip_interval_in_video") is not None:
                metadata["vclip_interval_in_video"] = [number(v, where, "video_metadata.vclip_interval_in_video") for v in meta["vclip_interval_in_video"]]
            out.append(Sample(sample_id, video, Query(question, options), answer, evidence, metadata))
        return out
