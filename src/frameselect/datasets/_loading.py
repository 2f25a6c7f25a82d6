"""Shared machinery of the benchmark annotation loaders (not a registered part).

Every loader reads annotation files as the benchmark distributes them
(JSON, JSON Lines, CSV, plain text, or Parquet where ``pyarrow`` is
installed), keeps the official field names, and builds
:class:`~frameselect.types.Sample` objects. What they share lives here:

- :class:`Where` and :func:`annotation_error`: a malformed file raises
  :class:`~frameselect.errors.AnnotationError` naming the file, the line
  (JSON Lines, CSV, text) or the record index (JSON, Parquet) and the field.
  The exception also carries ``path``, ``line``, ``index`` and ``field``.
  Files that are not UTF-8 text, hold binary data or hold no record at all
  (an empty dataset is an error) get the same error.
- field readers (:func:`require`, :func:`text`, :func:`number`,
  :func:`duration`, :func:`span`, :func:`within`, ...) that turn a wrong
  value into that error: empty text (unless the loader allows it for a field
  its official release leaves empty), non-finite numbers, negative durations,
  negative, inverted or past-the-end spans;
- option and answer normalisation (``"A. text"`` -> ``"text"``, index -> letter);
- :func:`inside` and :class:`VideoRef`: a video path built from annotation
  text must stay inside the folder it is looked up in, after resolving
  ``..`` and symbolic links (videos kept elsewhere are named with ``videos=``);
- :func:`find_video` (tries .mp4, .mkv, .webm, .avi when only an id is given;
  checks existence only, never decodes) and :class:`MissingVideos`, which
  reports every sample skipped for a missing video in one warning;
- :class:`AnnotationDataset`, the lazy base class of the loaders.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import ClassVar

from frameselect._core.cache import default_cache_dir
from frameselect.datasets._annotations import (  # noqa: F401
    _LETTER_PREFIX,
    _TOO_DEEP,
    SPAN_TOLERANCE,
    AnnotationWarning,
    MissingVideoWarning,
    Record,
    Where,
    _lines,
    _no_records,
    _not_text,
    annotation_error,
    answer_letter,
    checked_span,
    duration,
    integer,
    letter,
    load_json,
    nonempty_text,
    number,
    option_texts,
    optional_text,
    read_csv,
    read_json_records,
    read_jsonl,
    read_parquet,
    read_records,
    read_text,
    read_text_lines,
    require,
    span,
    spans,
    split_option_block,
    strip_option_letters,
    text,
    within,
)
from frameselect.datasets.base import Dataset
from frameselect.errors import AnnotationError, DatasetConfigError, DatasetNotFoundError
from frameselect.parts import part_params
from frameselect.types import Sample

__all__ = [
    "VIDEO_EXTENSIONS",
    "MissingVideoWarning",
    "AnnotationWarning",
    "Where",
    "Record",
    "annotation_error",
    "load_json",
    "read_records",
    "read_json_records",
    "read_jsonl",
    "read_csv",
    "read_parquet",
    "read_text_lines",
    "require",
    "text",
    "optional_text",
    "number",
    "integer",
    "duration",
    "span",
    "spans",
    "within",
    "SPAN_TOLERANCE",
    "option_texts",
    "letter",
    "strip_option_letters",
    "split_option_block",
    "answer_letter",
    "VideoRef",
    "relative_name",
    "inside",
    "find_video",
    "MissingVideos",
    "default_data_root",
    "AnnotationDataset",
    "TaskFilteredDataset",
    "read_text",
    "nonempty_text",
    "checked_span",
]

#: extensions tried, in order, when an annotation names a video by id only
VIDEO_EXTENSIONS: tuple[str, ...] = (".mp4", ".mkv", ".webm", ".avi")

_MAX_LISTED = 5


# ---------------------------------------------------------------------------
# where a record came from, and the error that names it


# ---------------------------------------------------------------------------
# reading files


# ---------------------------------------------------------------------------
# fields


# ---------------------------------------------------------------------------
# options and answers


# ---------------------------------------------------------------------------
# videos


@dataclass(frozen=True)
class VideoRef:
    """A video name taken from annotation data, with where it was read (for the error if it escapes)."""

    name: str
    where: Where
    field: str


_FIX = "video paths in annotations must be relative to the dataset's video folder; keep videos elsewhere with videos=<folder>"


def relative_name(relative: str, where: Where, field: str) -> str:
    """``relative`` if it is a relative path that does not climb out with ``..`` (checked on the text alone).

    An empty name, a NUL byte, an absolute path (POSIX, or Windows with a
    drive or UNC prefix) or a ``..`` that leaves the folder raises
    :class:`~frameselect.errors.AnnotationError` naming the file, record
    and field, whether or not such a file exists.
    """
    if not relative or "\x00" in relative:
        raise annotation_error(where, field, f"not a usable video name: {relative!r}")
    windows = PureWindowsPath(relative)
    if relative.startswith("/") or windows.is_absolute() or windows.drive or windows.root:
        raise annotation_error(where, field, f"video path {relative!r} is absolute; {_FIX}")
    normal = os.path.normpath(relative.replace("\\", "/"))
    if normal == ".." or normal.startswith("../"):
        raise annotation_error(where, field, f"video path {relative!r} leads outside the video folder; {_FIX}")
    return relative


def _contained(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def inside(folder: Path, relative: str, where: Where, field: str) -> Path:
    """``folder / relative``, refused unless it stays inside ``folder`` after resolving ``..`` and symbolic links.

    ``relative`` comes from annotation text, so it is untrusted: besides the
    checks of :func:`relative_name`, the path with every symbolic link (of
    the parts that exist) resolved must lie inside ``folder``, itself
    resolved. ``folder`` is chosen by the user or the loader, never by
    annotation text, so it may be a link.
    """
    relative_name(relative, where, field)
    base = os.path.realpath(folder)
    target = os.path.realpath(folder / relative)
    if not _contained(target, base):
        raise annotation_error(where, field, f"video path {relative!r} resolves to {target}, outside {base}; {_FIX}")
    return folder / relative


def find_video(folders: Sequence[Path], name: str, extensions: Sequence[str] = VIDEO_EXTENSIONS) -> Path | None:
    """The first existing file for ``name`` under ``folders`` (existence only; nothing is decoded).

    ``name`` may be a file name ("abc.mp4": tried as is, then with the other
    extensions) or an id ("abc": tried with each extension, lower then upper case).
    """
    suffix = Path(name).suffix
    if suffix.lower() in extensions:
        stem = name[: -len(suffix)]
        names = [name] + [stem + e for e in extensions if e != suffix.lower()]
    else:
        names = [name + e for e in extensions] + [name + e.upper() for e in extensions]
    for folder in folders:
        for candidate in names:
            path = folder / candidate
            if path.is_file():
                return path
    return None


class MissingVideos:
    """Collects the samples skipped for a missing video; :meth:`report` warns once."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, sample_id: str, expected: str) -> None:
        self.items.append((sample_id, expected))

    def __len__(self) -> int:
        return len(self.items)

    def summary(self, dataset: str, folders: Sequence[Path], head: str | None = None) -> str:
        """One text naming the samples, where their videos were looked for and what to do."""
        n = len(self.items)
        head = f"skipped {n} sample(s) whose video is missing" if head is None else head
        shown = "; ".join(f"{sid} ({expected})" for sid, expected in self.items[:_MAX_LISTED])
        more = f"; and {n - _MAX_LISTED} more" if n > _MAX_LISTED else ""
        where = ", ".join(str(f) for f in folders) or "(no video folder)"
        return f"{dataset}: {head} (looked in {where}; extensions {', '.join(VIDEO_EXTENSIONS)}): {shown}{more}. Download the videos or pass videos=<folder>."

    def report(self, dataset: str, folders: Sequence[Path]) -> None:
        """One warning for the skipped samples, if any."""
        if self.items:
            warnings.warn(self.summary(dataset, folders), MissingVideoWarning, stacklevel=3)


# ---------------------------------------------------------------------------
# the base class


def default_data_root(name: str) -> Path:
    """``$FRAMESELECT_DATA/<name>``, else ``<cache dir>/datasets/<name>``."""
    env = os.environ.get("FRAMESELECT_DATA")
    return (Path(env).expanduser() if env else default_cache_dir() / "datasets") / name


def optional_path(value: str | os.PathLike[str] | None) -> Path | None:
    """A user-given path (``~`` expanded), or None."""
    return None if value is None else Path(value).expanduser()


def path_text(value: Path | None) -> str | None:
    """A path as text (a string, or None)."""
    return None if value is None else str(value)


class AnnotationDataset(Dataset):
    """Base of the benchmark loaders: paths, lazy loading, the missing-video report.

    ``root`` is the folder laid out as the benchmark ships it; ``annotations``
    (a file, absolute or relative to ``root``) and ``videos`` (a folder)
    override the default layout. Nothing is read before the first call to
    :meth:`samples`. Subclasses set ``default_split``, ``splits``,
    ``annotation_candidates`` (per split, relative to ``root``) and
    ``video_candidates``, and implement :meth:`_load`.
    """

    default_split: ClassVar[str] = "test"
    splits: ClassVar[tuple[str, ...]] = ()
    split_aliases: ClassVar[Mapping[str, str]] = {}
    annotation_candidates: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    video_candidates: ClassVar[tuple[str, ...]] = ("videos", ".")

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
    ) -> None:
        self.root = Path(root).expanduser() if root is not None else default_data_root(type(self).registered_name or type(self).__name__)
        self.annotations = optional_path(annotations)
        split = split if split is not None else self.default_split
        split = self.split_aliases.get(split, split)
        if self.splits and split not in self.splits:
            raise DatasetConfigError(f"{self.name}: unknown split {split!r}; known: {', '.join(self.splits)}")
        self.split = split
        self.videos = optional_path(videos)
        self._samples: list[Sample] | None = None
        self._folder_exists: dict[Path, bool] = {}  # per load: video folders that are not there are not searched

    # -- the Dataset interface -------------------------------------------
    def samples(self) -> list[Sample]:
        if self._samples is None:
            self._folder_exists.clear()
            missing = MissingVideos()
            samples = self._load(missing)
            if not samples and missing:
                n = len(missing)
                raise DatasetNotFoundError(missing.summary(self.name, self.video_folders(), f"no video found for any of its {n} sample(s)"))
            missing.report(self.name, self.video_folders())
            self._samples = _check_unique(samples, self.name)
        return self._samples

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in part_params(self).items() if v is not None)
        return f"{type(self).__name__}({args})"

    # -- for subclasses -------------------------------------------------
    def _load(self, missing: MissingVideos) -> list[Sample]:
        raise NotImplementedError

    def _under_root(self, path: Path) -> Path:
        return path if path.is_absolute() else self.root / path

    def annotation_file(self, given: Path | None = None, candidates: Sequence[str] | None = None, what: str = "annotation file") -> Path:
        """``given`` (relative to root), else the first existing default for the split."""
        given = self.annotations if given is None else given
        if given is not None:
            path = self._under_root(given)
            if not path.exists():
                raise DatasetNotFoundError(f"{self.name}: {what} not found: {path}")
            return path
        if candidates is None:
            candidates = self.annotation_candidates.get(self.split, ())
        tried = [self.root / c for c in candidates]
        for path in tried:
            if path.exists():
                return path
        raise DatasetNotFoundError(
            f"{self.name}: no {what} for split {self.split!r} under {self.root}; tried {', '.join(str(t) for t in tried)}. "
            "Pass root=<benchmark folder> or annotations=<file>."
        )

    def video_folders(self) -> list[Path]:
        if self.videos is not None:
            return [self._under_root(self.videos)]
        return [self.root / c if c != "." else self.root for c in self.video_candidates]

    def _exists(self, folder: Path) -> bool:
        known = self._folder_exists.get(folder)
        if known is None:
            known = self._folder_exists[folder] = folder.is_dir()
        return known

    def locate(
        self,
        sample_id: str,
        names: VideoRef | Sequence[VideoRef],
        missing: MissingVideos,
        folders: Sequence[Path] | None = None,
        expected: str | None = None,
    ) -> str | None:
        """The video path for a sample (the first of ``names`` found), or None, recorded as missing (as ``expected``, default the first name).

        Every name must be a relative path that stays inside the folder it is
        looked up in (:func:`relative_name`); a video found through a symbolic
        link (a linked file or sub-folder) must resolve inside that folder
        too (:func:`inside`). Either failure is an ``AnnotationError``.
        """
        folders = self.video_folders() if folders is None else folders
        refs = [names] if isinstance(names, VideoRef) else list(names)
        for ref in refs:
            relative_name(ref.name, ref.where, ref.field)
        present = [f for f in folders if self._exists(f)]
        for ref in refs:
            for folder in present:
                path = find_video([folder], ref.name)
                if path is not None:
                    # the text stays inside; a symbolic link on the way (a linked sub-folder or file) must too
                    target = os.path.realpath(path)
                    if target != os.path.abspath(path):
                        inside(folder, str(path.relative_to(folder)), ref.where, ref.field)
                    return str(path)
        missing.add(sample_id, refs[0].name if expected is None else expected)
        return None


class TaskFilteredDataset(AnnotationDataset):
    """An :class:`AnnotationDataset` whose ``tasks=`` keeps the questions of some tasks only (None or empty: every task)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        split: str | None = None,
        videos: str | os.PathLike[str] | None = None,
        tasks: Sequence[str] | None = None,
    ) -> None:
        super().__init__(root, annotations, split, videos)
        self.tasks = tuple(tasks) if tasks else None


def _check_unique(samples: list[Sample], name: str) -> list[Sample]:
    seen: set[str] = set()
    dupes: list[str] = []
    for s in samples:
        if s.id in seen:
            dupes.append(s.id)
        seen.add(s.id)
    if dupes:
        raise AnnotationError(f"{name}: duplicate sample ids {sorted(set(dupes))[:_MAX_LISTED]}; the annotation file lists a question twice")
    return samples
