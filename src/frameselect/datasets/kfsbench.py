"""KFS-Bench loader (``kfsbench``): key-frame scenes over LongVideoBench and Video-MME.

KFS-Bench (Li et al., "KFS-Bench: Direct and Comprehensive Evaluation of Key
Frame Sampling in Long Video Understanding", WACV 2026; ``NEC-VID/KFS-Bench``)
annotates, for questions of LongVideoBench (validation) and Video-MME, the
disjoint scenes a question needs. ``lvb_anno.csv`` and ``vidmme_anno.csv``
have the columns ``id`` (LongVideoBench ``id`` such as "VLInjyogciw_0", or
Video-MME ``question_id`` such as "003-2"), ``segment_id``, ``scene_id``
(segments of one scene share it), ``start`` and ``end`` ("H:MM:SS" or
"M:SS", whole seconds). A time with a sign, a non-number (``0:00:nan``), an
end before its start or, where the base benchmark gives the video's
``duration``, a segment past the end of the video is an error naming the
line.

The questions, options, answers and videos come from the underlying
benchmark (``longvideobench`` or ``videomme`` loader, read from
``base_root``, by default ``root/LongVideoBench`` or ``root/Video-MME`` when
that folder exists, else ``root``). Each KFS-Bench question becomes that
benchmark's sample with the segments as evidence spans, sorted by start.
As in the official ``eval.py``, an annotated ``end`` is inclusive of its last
second, so the span is ``[start, end + 1]``. The scenes are kept in the
metadata twice: ``scene_ids`` (the scene of each evidence span, in order: what
the ``kfs_*`` evaluators group spans by) and ``kfs_scenes`` (scene id -> list
of ``[start, end + 1]``). The spans already carry the extra second, so the
evaluators' ``end_pad`` stays 0.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

from frameselect.datasets._loading import (
    AnnotationDataset,
    AnnotationWarning,
    MissingVideos,
    Where,
    annotation_error,
    checked_span,
    optional_path,
    read_csv,
    text,
    within,
)
from frameselect.datasets.longvideobench import LongVideoBench
from frameselect.datasets.videomme import VideoMME
from frameselect.registry import datasets
from frameselect.types import Sample, Span

__all__ = ["KFSBench", "parse_timestamp"]

_BASE_FOLDERS = {"longvideobench": "LongVideoBench", "videomme": "Video-MME"}


_TIMESTAMP = re.compile(r"(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")


def parse_timestamp(value: str, where: Where, field: str) -> float:
    """``"0:01:05"`` or ``"1:05"`` -> 65.0 seconds; digits only (no sign, no ``nan``), seconds below 60.

    >>> parse_timestamp("0:01:05", Where(Path("a.csv")), "start"), parse_timestamp("1:05.5", Where(Path("a.csv")), "end")
    (65.0, 65.5)
    """
    m = _TIMESTAMP.fullmatch(value.strip())
    if m is None:
        raise annotation_error(where, field, f"not a timestamp of the form H:MM:SS or M:SS (digits only, no sign): {value!r}")
    hours, minutes, seconds = int(m.group(1) or 0), int(m.group(2)), float(m.group(3))
    if seconds >= 60 or (m.group(1) is not None and minutes >= 60):
        raise annotation_error(where, field, f"minutes and seconds of a timestamp must be below 60: {value!r}")
    return hours * 3600 + minutes * 60 + seconds


@datasets.register("kfsbench")
class KFSBench(AnnotationDataset):
    """KFS-Bench: multi-scene key-frame annotations for LongVideoBench (val) and Video-MME questions."""

    default_split = "longvideobench"
    splits = ("longvideobench", "videomme")
    split_aliases = {"lvb": "longvideobench", "vidmme": "videomme"}
    annotation_candidates = {"longvideobench": ("lvb_anno.csv",), "videomme": ("vidmme_anno.csv",)}

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        base_root: str | os.PathLike[str] | None = None,
        base_annotations: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        if base_root is not None:
            self.base_root = Path(base_root).expanduser()
        else:
            folder = self.root / _BASE_FOLDERS[self.split]
            self.base_root = folder if folder.is_dir() else self.root
        self.base_annotations = optional_path(base_annotations)

    def base(self) -> AnnotationDataset:
        """The loader of the underlying benchmark."""
        if self.split == "longvideobench":
            return LongVideoBench(root=self.base_root, annotations=self.base_annotations, split="val", videos=self.videos)
        return VideoMME(root=self.base_root, annotations=self.base_annotations, split="test", videos=self.videos)

    def video_folders(self) -> list[Path]:
        return self.base().video_folders()

    def _scenes(self) -> dict[str, dict[str, list[list[float]]]]:
        """question id -> scene id -> [[start, end + 1], ...] in file order (where each was read: :attr:`_rows`)."""
        path = self.annotation_file()
        self._rows: dict[str, list[tuple[Where, float]]] = {}
        out: dict[str, dict[str, list[list[float]]]] = {}
        for where, rec in read_csv(path, ("id", "scene_id", "start", "end")):
            qid = text(rec, where, "id")
            scene = text(rec, where, "scene_id")
            start = parse_timestamp(text(rec, where, "start"), where, "start")
            end = parse_timestamp(text(rec, where, "end"), where, "end") + 1.0
            if end - 1.0 < start:
                raise annotation_error(where, "end", f"end {rec['end']} is before start {rec['start']}")
            out.setdefault(qid, {}).setdefault(scene, []).append([start, end])
            self._rows.setdefault(qid, []).append((where, end - 1.0))
        return out

    def _load(self, missing: MissingVideos) -> list[Sample]:
        scenes = self._scenes()
        base = self.base()
        base_missing = MissingVideos()
        base_samples = {s.id: s for s in base._load(base_missing)}
        for sample_id, expected in base_missing.items:
            if sample_id in scenes:
                missing.add(sample_id, expected)
        skipped = {sid for sid, _ in base_missing.items}
        unknown = [qid for qid in scenes if qid not in base_samples and qid not in skipped]
        if unknown:
            warnings.warn(
                f"kfsbench: {len(unknown)} annotated question(s) are not in the {base.name} annotations ({base.annotation_file()}): "
                f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}",
                AnnotationWarning,
                stacklevel=3,
            )
        out = []
        for qid, by_scene in scenes.items():
            sample = base_samples.get(qid)
            if sample is None:
                continue
            length = sample.metadata.get("duration")
            if isinstance(length, (int, float)):
                for where, last in self._rows[qid]:
                    within((checked_span(last, last, where, "end"),), float(length), where, "end")
            tagged = sorted(((s, e, scene) for scene, segs in by_scene.items() for s, e in segs), key=lambda t: (t[0], t[1], _scene_key(t[2])))
            evidence = tuple(Span(s, e) for s, e, _ in tagged)
            metadata = {
                **sample.metadata,
                "kfs_scenes": {k: [list(v) for v in segs] for k, segs in sorted(by_scene.items(), key=lambda kv: _scene_key(kv[0]))},
                "scene_ids": [scene for _, _, scene in tagged],
                "kfs_source": base.name,
            }
            out.append(Sample(sample.id, sample.video, sample.query, sample.answer, evidence, metadata))
        return out


def _scene_key(scene_id: str) -> tuple[int, str]:
    return (int(scene_id), "") if scene_id.isdigit() else (1 << 30, scene_id)
