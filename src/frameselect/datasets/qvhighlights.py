"""QVHighlights loader (``qvhighlights``).

QVHighlights (Lei et al., "QVHighlights: Detecting Moments and Highlights in
Videos via Natural Language Queries", NeurIPS 2021; ``jayleicn/moment_detr``,
``data/highlight_{train,val,test}_release.jsonl``): one query per line with
``qid``, ``query``, ``duration`` (s), ``vid`` ("<youtube id>_<start>_<end>",
the video is ``videos/<vid>.mp4``), ``relevant_windows`` (``[[start, end],
...]`` in seconds), ``relevant_clip_ids`` (indices of the 2-second clips
inside those windows) and ``saliency_scores`` (three annotators' 0-4 scores
per relevant clip). The test release has no windows, clip ids or scores.

A sample is a grounding query: ``query`` as text, no options, no answer,
``relevant_windows`` as evidence spans. ``saliency_scores``,
``relevant_clip_ids`` and ``clip_length`` (2.0 s) go into the metadata, so
highlight-detection metrics can be computed from them; answering models are
asked for the moments' windows in seconds (``metadata["answer_windows"]``). Sample ids are the
``qid`` as text. A window before 0 or past ``duration`` (beyond a second),
or a negative ``duration``, is an error naming the line.
"""

from __future__ import annotations

from typing import Any

from frameselect._core.windows import ANSWER_WINDOWS
from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    VideoRef,
    annotation_error,
    duration,
    integer,
    read_records,
    spans,
    text,
    within,
)
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["QVHighlights", "CLIP_LENGTH"]

#: QVHighlights segments every video into clips of this many seconds
CLIP_LENGTH = 2.0


@datasets.register("qvhighlights")
class QVHighlights(AnnotationDataset):
    """QVHighlights: natural-language moment retrieval and highlight detection on 150-s YouTube clips."""

    default_split = "val"
    splits = ("train", "val", "test")
    annotation_candidates = {
        s: (f"highlight_{s}_release.jsonl", f"data/highlight_{s}_release.jsonl", f"annotations/highlight_{s}_release.jsonl") for s in ("train", "val", "test")
    }
    video_candidates = ("videos", "qvhilights_videos", ".")

    def _load(self, missing: MissingVideos) -> list[Sample]:
        path = self.annotation_file()
        out = []
        for where, rec in read_records(path):
            sample_id = text(rec, where, "qid")
            query = text(rec, where, "query")
            vid = text(rec, where, "vid")
            evidence = spans(rec["relevant_windows"], where, "relevant_windows") if rec.get("relevant_windows") is not None else ()
            metadata: dict[str, Any] = {"vid": vid, "clip_length": CLIP_LENGTH, ANSWER_WINDOWS: "seconds"}
            if rec.get("duration") is not None:
                metadata["duration"] = duration(rec["duration"], where, "duration")
                evidence = within(evidence, metadata["duration"], where, "relevant_windows")
            clip_ids = rec.get("relevant_clip_ids")
            if clip_ids is not None:
                if not isinstance(clip_ids, list):
                    raise annotation_error(where, "relevant_clip_ids", f"expected a list of clip indices, got {clip_ids!r}")
                metadata["relevant_clip_ids"] = [integer(c, where, "relevant_clip_ids") for c in clip_ids]
            scores = rec.get("saliency_scores")
            if scores is not None:
                if not isinstance(scores, list) or not all(isinstance(s, list) for s in scores):
                    raise annotation_error(where, "saliency_scores", f"expected a list of per-clip score lists, got {scores!r}")
                metadata["saliency_scores"] = [[integer(v, where, "saliency_scores") for v in s] for s in scores]
                if clip_ids is not None and len(scores) != len(clip_ids):
                    raise annotation_error(where, "saliency_scores", f"{len(scores)} score lists for {len(clip_ids)} relevant_clip_ids")
            video = self.locate(sample_id, VideoRef(vid, where, "vid"), missing)
            if video is None:
                continue
            out.append(Sample(sample_id, video, Query(query), None, evidence, metadata))
        return out
