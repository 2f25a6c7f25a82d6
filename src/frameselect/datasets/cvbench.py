"""CVBench and CrossVid loaders (``cvbench``, ``crossvid``): questions over several videos.

**CVBench** (Hokhim2/CVBench): 1,000 questions over two to four videos each,
15 task types. Its complete annotation file is in the repository,
``Video-R1/src/r1-v/Evaluation/CVBench.json`` (checked at commit ``f8dc8f7``):
a list of records with ``id``, ``task_type``, ``video_1`` .. ``video_4``
(paths ``<group>/<id>.mp4`` under the folder ``CVBench/`` beside the file,
filled in order, ``null`` after the last), ``question``, ``options`` and
``answer``. Multiple-choice options carry their letters (``"A. White."``) and
the answer is the letter; yes/no questions have options ``["Yes.", "No."]``
and the answer is the word. Quirks of the release kept as written: one record
(id 996) holds its four options in one string (split here on the letters);
two records mislabel option letters (431: ``"B. Both of them."`` third); one
video name carries a URL fragment (``61/gKYZrI-6TvMfeature=share.mp4``).

Each sample is a :meth:`~frameselect.types.Sample.across` question over its
videos (ids ``video_1`` ..), ``answer`` the option letter (a yes/no answer
becomes the letter of its option), and in ``metadata``: ``task_type``,
``official_answer`` (the ``answer`` field as written, which the official
scorers compare with) and ``n_videos``. A sample with a missing video is
skipped and reported. Scoring: ``cvbench_acc`` (:mod:`frameselect.evaluators.crossvideo`).

**CrossVid** (chuntianli666/CrossVid): its question files (``QA/<TASK>.json``)
are published only on a model hub (``Chuntianli/CrossVid``), so this loader
reads what the official scripts at commit ``5b44760`` read, and was checked on
files of that shape only: ``eval/BU.py``, ``CC.py`` and ``NC.py`` read
``id``, ``videos`` (paths under the video root ``videos/``), ``question``,
``options`` and ``answer`` (BU: a list of letters, joined; 1–3 correct);
``PEA.py`` also ``begin``/``end`` (per video: the official script samples
only inside that segment; kept in ``metadata["segments"]``, not applied
here). FSA (temporal IoU on two videos), MOC/MSR (drone frames, not videos),
PI/PSS (one video) and CCQA (scored by an LLM judge, ``score_CCQA.py``) are
left out. Scoring: ``crossvid_acc`` compares the raw reply with the answer,
as the scripts do; their frame sampling is the ``crossvid`` budget policy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Where,
    annotation_error,
    checked_span,
    number,
    option_texts,
    read_json_records,
    require,
    text,
)
from frameselect.datasets._loading import VideoRef as NameRef
from frameselect.errors import DatasetConfigError
from frameselect.registry import datasets
from frameselect.types import Query, Sample, VideoRef, option_letters

__all__ = ["CVBench", "CrossVid", "CROSSVID_TASKS"]

_LETTER = re.compile(r"^\s*([A-D])\s*\.\s*")
_PACKED = re.compile(r"(?:^|,\s*)([A-D])\.\s*")


def _options(raw: tuple[str, ...]) -> tuple[str, ...]:
    """Option texts without their letters; one string holding ``A. .., B. ..`` is split on the letters (CVBench id 996)."""
    if len(raw) == 1 and len(_PACKED.findall(raw[0])) > 1:
        pieces = _PACKED.split(raw[0])[1:]
        return tuple(pieces[i + 1].strip() for i in range(0, len(pieces), 2))
    return tuple(_LETTER.sub("", o, count=1).strip() for o in raw)


def _word(option: str) -> str:
    return option.strip().strip(".").strip().lower()


def _videos(
    self: AnnotationDataset, rec: Mapping[str, Any], where: Where, sample_id: str, fields: Sequence[str], missing: MissingVideos
) -> list[VideoRef] | None:
    refs = []
    for i, field in enumerate(fields):
        name = text(rec, where, field) if isinstance(rec.get(field), str) else None
        if name is None:
            raise annotation_error(where, field, f"expected a video path, got {rec.get(field)!r}")
        path = self.locate(sample_id, NameRef(name, where, field), missing, expected=name)
        if path is None:
            return None
        refs.append(VideoRef(f"video_{i + 1}", path))
    return refs


def _segments(begin: Any, end: Any, where: Where) -> list[list[float]]:
    """CrossVid's ``begin`` and ``end``: two lists of the same length of times in seconds, each end not before its start."""
    for name, value in (("begin", begin), ("end", end)):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise annotation_error(where, name, f"expected a list of times in seconds, got {value!r}")
    if len(begin) != len(end):
        raise annotation_error(where, "end", f"{len(end)} end time(s) for {len(begin)} begin time(s); give one end per begin")
    out = []
    for i, (b, e) in enumerate(zip(begin, end, strict=True)):
        span = checked_span(number(b, where, f"begin[{i}]"), number(e, where, f"end[{i}]"), where, f"begin[{i}]/end[{i}]")
        out.append([span.start, span.end])
    return out


@datasets.register("cvbench")
class CVBench(AnnotationDataset):
    """CVBench: 1,000 questions over 2–4 videos each (15 task types), from its released ``CVBench.json``."""

    default_split = "test"
    splits = ("test",)
    annotation_candidates = {"test": ("CVBench.json", "Evaluation/CVBench.json")}
    video_candidates = ("CVBench", "Evaluation/CVBench", "videos", ".")

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out = []
        for where, rec in read_json_records(self.annotation_file()):
            sample_id = str(require(rec, where, "id"))
            fields = []
            for i in range(1, 5):
                value = rec.get(f"video_{i}")
                if value is None:
                    break
                fields.append(f"video_{i}")
            later = [f"video_{i}" for i in range(len(fields) + 2, 5) if rec.get(f"video_{i}") is not None]
            if not fields or later:
                raise annotation_error(where, "video_1", "videos must fill video_1 .. video_4 in order (no gap, at least one)")
            raw = option_texts(require(rec, where, "options"), where, "options")
            options = _options(raw)
            official = text(rec, where, "answer").strip()
            letters = option_letters(len(options))
            if official.upper() in letters:
                answer = official.upper()
            else:
                words = [_word(o) for o in options]
                if _word(official) not in words:
                    raise annotation_error(where, "answer", f"{official!r} is neither an option letter nor one of the options {list(raw)}")
                answer = letters[words.index(_word(official))]
            refs = _videos(self, rec, where, sample_id, fields, missing)
            if refs is None:
                continue
            metadata = {"task_type": text(rec, where, "task_type"), "official_answer": official, "n_videos": len(refs)}
            out.append(Sample.across(sample_id, refs, Query(text(rec, where, "question"), options), answer, metadata))
        return out


#: the CrossVid tasks this loader reads (question files ``QA/<task>.json``) and what each script compares
CROSSVID_TASKS = ("BU", "CC", "NC", "PEA")


@datasets.register("crossvid")
class CrossVid(AnnotationDataset):
    """CrossVid's multiple-choice cross-video tasks BU, CC, NC and PEA (question files as its official scripts read them)."""

    default_split = "test"
    splits = ("test",)
    video_candidates = ("videos", ".")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        tasks: Sequence[str] = CROSSVID_TASKS,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        self.tasks = tuple(tasks)
        unknown = [t for t in self.tasks if t not in CROSSVID_TASKS]
        if unknown or not self.tasks:
            raise DatasetConfigError(
                f"crossvid: tasks {unknown or '(none)'} not readable here; choose among {', '.join(CROSSVID_TASKS)} (FSA, MOC, MSR, PI, PSS, CCQA are left out)"
            )

    def _files(self) -> list[tuple[str, Path]]:
        if self.annotations is not None:
            path = self.annotation_file()
            return [(path.stem, path)]
        found = [(t, self.root / "QA" / f"{t}.json") for t in self.tasks]
        present = [(t, p) for t, p in found if p.exists()]
        if not present:
            self.annotation_file(candidates=[f"QA/{t}.json" for t in self.tasks])  # raises, naming every file tried
        return present

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out = []
        for task, path in self._files():
            for where, rec in read_json_records(path):
                sample_id = f"{task}/{require(rec, where, 'id')}"
                names = require(rec, where, "videos")
                if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
                    raise annotation_error(where, "videos", f"expected a non-empty list of video paths, got {names!r}")
                options = _options(option_texts(require(rec, where, "options"), where, "options"))
                raw_answer = require(rec, where, "answer")
                official = "".join(str(a) for a in raw_answer) if isinstance(raw_answer, list) else str(raw_answer)
                letters = option_letters(len(options))
                if not official or any(c not in letters for c in official):
                    raise annotation_error(where, "answer", f"{raw_answer!r} is not made of the option letters {''.join(letters)}")
                refs = []
                for i, name in enumerate(names):
                    p = self.locate(sample_id, NameRef(name, where, "videos"), missing, expected=name)
                    if p is None:
                        break
                    refs.append(VideoRef(f"video_{i + 1}", p))
                if len(refs) != len(names):
                    continue
                metadata: dict[str, Any] = {"task_type": task, "official_answer": official, "n_videos": len(refs)}
                if "begin" in rec and "end" in rec:
                    metadata["segments"] = _segments(rec["begin"], rec["end"], where)
                answer = official if len(official) == 1 else None  # several correct letters: scored by crossvid_acc only
                out.append(Sample.across(sample_id, refs, Query(text(rec, where, "question"), options), answer, metadata))
        return out
