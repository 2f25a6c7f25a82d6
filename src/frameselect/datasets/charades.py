"""Charades-STA loader (``charades_sta``).

Charades-STA (Gao et al., "TALL: Temporal Activity Localization via
Language Query", ICCV 2017): sentence queries on Charades videos, each with
the one moment it describes. Schema of the released ``charades_sta_train.txt``
/ ``charades_sta_test.txt`` (``jiyanggao/TALL``): one query per line,
``<video id> <start s> <end s>##<sentence>``, e.g.
``AO8RW 0.0 6.9##a person is putting a book on a shelf.``; videos are
``Charades_v1_480/<video id>.mp4``. The Charades metadata table
``Charades_v1_<split>.csv`` (columns ``id`` .. ``length``), where present,
adds each video's duration; a moment that runs past the end of its video is
then clipped to it (as advised in ``gsig/charades-algorithms`` issue 5), and
one that starts more than a second after the end is an error.

A sample is a grounding query: the sentence as query text, no options, no
answer, the moment as its single evidence span; answering models are asked
for the moment's window in seconds (``metadata["answer_windows"]``). Sample ids are
``<video id>/<n>``, n counting that video's queries in file order.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from frameselect._core.windows import ANSWER_WINDOWS
from frameselect.datasets._loading import (
    SPAN_TOLERANCE,
    AnnotationDataset,
    MissingVideos,
    VideoRef,
    Where,
    annotation_error,
    checked_span,
    duration,
    number,
    optional_path,
    read_csv,
    read_text_lines,
)
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span

__all__ = ["CharadesSTA", "parse_sta_line"]


def parse_sta_line(line: str, where: Where) -> tuple[str, float, float, str]:
    """``"AO8RW 0.0 6.9##a person ..."`` -> ``("AO8RW", 0.0, 6.9, "a person ...")``."""
    head, sep, sentence = line.partition("##")
    if not sep:
        raise annotation_error(where, "sentence", "no '##' separating '<video> <start> <end>' from the sentence")
    parts = head.split()
    if len(parts) != 3:
        raise annotation_error(where, "video/start/end", f"expected '<video> <start> <end>' before '##', got {head.strip()!r}")
    video, start_text, end_text = parts
    start, end = number(start_text, where, "start"), number(end_text, where, "end")
    if end < start:
        raise annotation_error(where, "end", f"end {end} is before start {start}")
    checked_span(start, end, where, "start")
    if not sentence.strip():
        raise annotation_error(where, "sentence", "empty")
    return video, start, end, sentence.strip()


@datasets.register("charades_sta")
class CharadesSTA(AnnotationDataset):
    """Charades-STA: sentence-to-moment grounding on indoor Charades videos (train 12,408, test 3,720 queries)."""

    default_split = "test"
    splits = ("train", "test")
    annotation_candidates = {
        "train": ("charades_sta_train.txt", "Charades_STA/charades_sta_train.txt", "annotations/charades_sta_train.txt"),
        "test": ("charades_sta_test.txt", "Charades_STA/charades_sta_test.txt", "annotations/charades_sta_test.txt"),
    }
    video_candidates = ("Charades_v1_480", "Charades_v1", "videos")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        metadata: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        self.metadata = optional_path(metadata)

    def _durations(self) -> dict[str, float]:
        """Video lengths from ``Charades_v1_<split>.csv`` when it is there."""
        if self.metadata is not None:
            path: Path | None = self.annotation_file(self.metadata, what="Charades metadata CSV")
        else:
            name = f"Charades_v1_{self.split}.csv"
            path = next((p for p in (self.root / name, self.root / "Charades" / name) if p.exists()), None)
        if path is None:
            return {}
        return {str(rec["id"]): duration(rec["length"], where, "length") for where, rec in read_csv(path, ("id", "length"))}

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        durations = self._durations()
        counts: dict[str, int] = {}
        out = []
        for where, line in read_text_lines(path):
            video_id, start, end, sentence = parse_sta_line(line, where)
            n = counts.get(video_id, 0)
            counts[video_id] = n + 1
            sample_id = f"{video_id}/{n}"
            metadata: dict[str, Any] = {"video_id": video_id, ANSWER_WINDOWS: "seconds"}
            if video_id in durations:
                length = metadata["duration"] = durations[video_id]
                if start > length + SPAN_TOLERANCE:
                    raise annotation_error(where, "start", f"moment [{start}, {end}] starts after the end of the video ({length} s)")
                if start < length < end:  # a few moments run past the video: clip, as the Charades authors advise
                    end = length
            video = self.locate(sample_id, VideoRef(video_id, where, "video"), missing)
            if video is None:
                continue
            out.append(Sample(sample_id, video, Query(sentence), None, (Span(start, end),), metadata))
        return out
