"""``local``: your own annotated questions, one JSON object a line (``-D file=questions.jsonl``).

Each non-blank line of the file is one question::

    {"id": "q1", "video": "clips/kitchen.mp4", "question": "What is poured into the cup?",
     "options": ["milk", "coffee", "water"], "answer": "B", "evidence": [[12.0, 15.5]], "kind": "action"}

    {"videos": ["clips/a.mp4", {"path": "clips/b.mp4", "evidence": [[3, 4]]}],
     "question": "Which clip shows the red car?", "options": ["the first", "the second"], "answer": "B"}

Fields:

``video`` or ``videos`` (one of them)
    the video file, or the ordered list of videos of a question over several
    videos; each a path relative to the folder of the file, which it must
    stay inside (no absolute paths, no ``..`` out of it, no symbolic link
    that leads out). An entry of ``videos`` is a path or an object
    ``{"path", "evidence"}``.
``question``
    the question text (not empty).
``options`` (optional)
    the answer options, a list of texts; ``answer`` is then an option letter
    (``"B"``), the text of one option (``"coffee"``) or a 0-based index
    (the number ``1``; text that is an option's, such as ``"2"``, is that option).
``answer`` (optional)
    the ground truth; without ``options``, free text.
``evidence`` (optional)
    where the answer can be seen: a list of ``[start, end]`` seconds. With
    ``videos``, each video's evidence sits in its own entry instead.
``id`` (optional)
    the question's id, unique in the file; default ``line<N>``.
``kind`` (optional)
    the question's kind (tables and reports break results down by it);
    ``metadata`` (optional): an object of further fields, kept as they are.

Any other field is an error (a misspelt name is caught, not ignored). Every
malformed line raises :class:`~frameselect.errors.AnnotationError` naming the
file, the line and the field; a video that is not there is such an error too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import Where, annotation_error, answer_letter, inside, nonempty_text, option_texts, read_jsonl, spans
from frameselect.datasets.base import Dataset
from frameselect.errors import AnnotationError, DatasetNotFoundError
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span, VideoRef

__all__ = ["LocalDataset", "FIELDS"]

#: the fields a line may have
FIELDS = ("id", "video", "videos", "question", "options", "answer", "evidence", "kind", "metadata")


@datasets.register("local")
class LocalDataset(Dataset):
    """Your own questions: a JSON Lines file of ``video``/``videos``, ``question``, ``options``, ``answer``, ``evidence`` (see the module docstring)."""

    def __init__(self, file: str | os.PathLike[str]) -> None:
        self.file = str(Path(file).expanduser().absolute())
        self._samples: list[Sample] | None = None

    @property
    def folder(self) -> Path:
        """The folder the videos are named relative to: the file's."""
        return Path(self.file).parent

    def samples(self) -> list[Sample]:
        if self._samples is None:
            path = Path(self.file)
            if not path.is_file():
                raise DatasetNotFoundError(f"local: no questions file at {path} (-D file=<questions.jsonl>, one JSON object a line; docs/datasets.md)")
            out: list[Sample] = []
            first_line: dict[str, int] = {}
            try:
                for where, rec in read_jsonl(path):
                    sample = self._sample(where, rec)
                    if sample.id in first_line:
                        raise annotation_error(where, "id", f"{sample.id!r} is already the id of line {first_line[sample.id]}; ids must be unique in the file")
                    first_line[sample.id] = where.line or 0
                    out.append(sample)
            except AnnotationError as exc:
                raise _own_words(exc) from None
            self._samples = out
        return self._samples

    # -- one line ---------------------------------------------------------------
    def _sample(self, where: Where, rec: Mapping[str, Any]) -> Sample:
        unknown = sorted(set(rec) - set(FIELDS))
        if unknown:
            raise annotation_error(where, unknown[0], f"not a field of this format (its fields: {', '.join(FIELDS)})")
        sample_id = nonempty_text(rec["id"], where, "id").strip() if rec.get("id") is not None else f"line{where.line}"
        question = nonempty_text(rec.get("question"), where, "question") if rec.get("question") is not None else None
        if question is None:
            raise annotation_error(where, "question", "missing")
        options = option_texts(rec["options"], where, "options") if rec.get("options") is not None else ()
        answer = self._answer(rec.get("answer"), options, where)
        metadata: dict[str, Any] = {}
        if rec.get("metadata") is not None:
            if not isinstance(rec["metadata"], Mapping):
                raise annotation_error(where, "metadata", f"expected an object, got {type(rec['metadata']).__name__}")
            metadata.update(rec["metadata"])
        if rec.get("kind") is not None:
            metadata["kind"] = nonempty_text(rec["kind"], where, "kind")
        query = Query(question, options)
        has_video, has_videos = rec.get("video") is not None, rec.get("videos") is not None
        if has_video == has_videos:
            raise annotation_error(
                where, "video", "give either 'video' (one file) or 'videos' (a list of files), not both" if has_video else "missing (or 'videos')"
            )
        if has_video:
            evidence = spans(rec["evidence"], where, "evidence") if rec.get("evidence") is not None else ()
            return Sample(sample_id, self._video(rec["video"], where, "video"), query, answer, evidence, metadata)
        if rec.get("evidence") is not None:
            raise annotation_error(
                where,
                "evidence",
                'a question over several videos gives each video\'s evidence in its entry of \'videos\': {"path": ..., "evidence": [[start, end]]}',
            )
        return Sample.across(sample_id, self._refs(rec["videos"], where), query, answer, metadata)

    def _answer(self, value: Any, options: Sequence[str], where: Where) -> str | None:
        if value is None:
            return None
        if not options:
            return nonempty_text(value, where, "answer")
        if (
            isinstance(value, str) and value.strip() in options and not re.fullmatch(r"\(?[A-Za-z]\)?\.?", value.strip())
        ):  # an option's text; a letter is a letter
            return answer_letter(list(options).index(value.strip()), len(options), where, "answer")
        return answer_letter(value, len(options), where, "answer")

    def _refs(self, value: Any, where: Where) -> list[VideoRef]:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
            raise annotation_error(where, "videos", f'expected a non-empty list of video paths or {{"path", "evidence"}} objects, got {value!r}')
        refs = []
        for i, entry in enumerate(value):
            name = f"videos[{i}]"
            evidence: tuple[Span, ...] = ()
            if isinstance(entry, Mapping):
                extra = sorted(set(entry) - {"path", "evidence"})
                if extra:
                    raise annotation_error(where, f"{name}.{extra[0]}", "not a field of a video entry (its fields: path, evidence)")
                if entry.get("evidence") is not None:
                    evidence = spans(entry["evidence"], where, f"{name}.evidence")
                entry = entry.get("path")
                name = f"{name}.path"
            refs.append(VideoRef(f"video_{i + 1}", self._video(entry, where, name), evidence))
        return refs

    def _video(self, value: Any, where: Where, field: str) -> str:
        relative = nonempty_text(value, where, field).strip() if not isinstance(value, int) else None
        if relative is None:
            raise annotation_error(where, field, f"expected a video path, got {value!r}")
        path = inside(self.folder, relative, where, field)
        if not path.is_file():
            raise annotation_error(where, field, f"no video file {relative!r} in {self.folder}")
        return str(path)

    def __repr__(self) -> str:
        return f"LocalDataset(file={self.file!r})"


#: the loaders' advice, and what it means for a file of one's own questions
_ADVICE = (
    (
        "video paths in annotations must be relative to the dataset's video folder; keep videos elsewhere with videos=<folder>",
        "name each video relative to the folder of the questions file, inside it",
    ),
    ("fix the annotation file, or pass annotations= pointing to an intact copy", "fix that line of the file; docs/datasets.md describes the format"),
)


def _own_words(exc: AnnotationError) -> AnnotationError:
    """The loaders' error with advice that fits ``local`` (its parameter is ``file``), keeping where it is."""
    text = str(exc)
    for theirs, ours in _ADVICE:
        text = text.replace(theirs, ours)
    out = AnnotationError(text)
    for name in ("path", "line", "index", "key", "field"):
        setattr(out, name, getattr(exc, name, None))
    return out
