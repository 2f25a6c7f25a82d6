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

import csv
import io
import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any, ClassVar

from frameselect.cache import default_cache_dir
from frameselect.datasets.base import Dataset
from frameselect.errors import AnnotationError, DatasetConfigError, DatasetNotFoundError, MissingDependencyError
from frameselect.parts import part_params
from frameselect.types import Sample, Span, option_letter

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
]

#: extensions tried, in order, when an annotation names a video by id only
VIDEO_EXTENSIONS: tuple[str, ...] = (".mp4", ".mkv", ".webm", ".avi")

_MAX_LISTED = 5


class MissingVideoWarning(UserWarning):
    """Samples were skipped because their video file is not on disk."""


class AnnotationWarning(UserWarning):
    """Annotations that do not fit together (e.g. ids absent from the benchmark they extend); the rest loads."""


# ---------------------------------------------------------------------------
# where a record came from, and the error that names it


@dataclass(frozen=True)
class Where:
    """The place of one record: file plus line (1-based), record index (0-based) or entry key."""

    path: Path
    line: int | None = None
    index: int | None = None
    key: str | None = None

    def __str__(self) -> str:
        parts = [str(self.path)]
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.index is not None:
            parts.append(f"record {self.index}")
        if self.key is not None:
            parts.append(f"entry {self.key!r}")
        return ", ".join(parts)


Record = tuple[Where, Mapping[str, Any]]


def annotation_error(where: Where, field: str | None, problem: str) -> AnnotationError:
    """An :class:`AnnotationError` naming file, line/record and field."""
    place = f"{where}: field {field!r}" if field else str(where)
    err = AnnotationError(f"{place}: {problem} (fix the annotation file, or pass annotations= pointing to an intact copy)")
    err.path = str(where.path)
    err.line = where.line
    err.index = where.index
    err.key = where.key
    err.field = field
    return err


# ---------------------------------------------------------------------------
# reading files


def read_text(path: Path) -> str:
    """A file's text; a file that is not UTF-8 text (binary, another encoding) is an error naming the line.

    A UTF-8 byte-order mark is dropped (spreadsheet exports write one).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:  # a folder, no permission, ...
        raise annotation_error(Where(path), None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise annotation_error(
            Where(path, line=line), None, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); is it a binary file or another encoding?"
        ) from None
    nul = content.find("\x00")
    if nul >= 0:
        raise annotation_error(Where(path, line=content.count("\n", 0, nul) + 1), None, "binary data (a NUL byte) in a text annotation file")
    return content


def _lines(content: str) -> list[str]:
    """Lines as ``open()`` splits them (\\n, \\r\\n or \\r; not the other separators ``str.splitlines`` knows)."""
    return content.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _no_records(path: Path) -> AnnotationError:
    return annotation_error(Where(path), None, "holds no records (an empty annotation file makes an empty dataset)")


#: what a JSON text nested deeper than the reader follows is told
_TOO_DEEP = "JSON nested too deeply to read (lists or objects inside each other thousands of levels down); no annotation file is shaped so"


def load_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error names its line."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise annotation_error(Where(path, line=exc.lineno), None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise annotation_error(Where(path), None, _TOO_DEEP) from None


def read_json_records(path: Path) -> list[Record]:
    """A JSON file holding a non-empty list of objects; records are numbered from 0."""
    data = load_json(path)
    if not isinstance(data, list):
        raise annotation_error(Where(path), None, f"expected a JSON list of records, got {type(data).__name__}")
    if not data:
        raise _no_records(path)
    out: list[Record] = []
    for i, row in enumerate(data):
        where = Where(path, index=i)
        if not isinstance(row, Mapping):
            raise annotation_error(where, None, f"expected an object, got {type(row).__name__}")
        out.append((where, row))
    return out


def read_jsonl(path: Path) -> list[Record]:
    """A JSON Lines file; records are named by line number, blank lines skipped; no record at all is an error."""
    out: list[Record] = []
    for lineno, line in enumerate(_lines(read_text(path)), start=1):
        if not line.strip():
            continue
        where = Where(path, line=lineno)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise annotation_error(where, None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise annotation_error(where, None, _TOO_DEEP) from None
        if not isinstance(row, Mapping):
            raise annotation_error(where, None, f"expected a JSON object, got {type(row).__name__}")
        out.append((where, row))
    if not out:
        raise _no_records(path)
    return out


def read_csv(path: Path, required: Sequence[str] = ()) -> list[Record]:
    """A CSV file with a header and at least one row; records are named by the line they end on."""
    out: list[Record] = []
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    try:
        header = reader.fieldnames or []
        if not header:
            raise _no_records(path)
        for name in required:
            if name not in header:
                raise annotation_error(Where(path, line=1), name, f"column missing from the header {header}")
        for row in reader:
            where = Where(path, line=reader.line_num)
            if None in row:  # more cells than header columns
                raise annotation_error(where, None, f"{len(header) + len(row[None])} cells for {len(header)} columns")
            out.append((where, row))
    except csv.Error as exc:
        raise annotation_error(Where(path, line=reader.line_num), None, f"unreadable CSV: {exc}") from None
    if not out:
        raise _no_records(path)
    return out


def read_parquet(path: Path) -> list[Record]:
    """A Parquet table (the Hugging Face releases); needs ``pyarrow``."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            f"{path}: reading .parquet annotations needs pyarrow (pip install pyarrow); or export the table to JSON Lines and pass annotations=<file>.jsonl"
        ) from None
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid / ArrowIOError derive from these
        raise annotation_error(Where(path), None, f"not a readable Parquet table: {exc}") from None
    if not rows:
        raise _no_records(path)
    return [(Where(path, index=i), row) for i, row in enumerate(rows)]


def read_records(path: Path, required: Sequence[str] = ()) -> list[Record]:
    """Records of a .json, .jsonl, .csv or .parquet file, by extension."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        return read_json_records(path)
    if suffix == ".csv":
        return read_csv(path, required)
    if suffix == ".parquet":
        return read_parquet(path)
    raise annotation_error(Where(path), None, f"unsupported annotation file type {suffix!r} (expected .json, .jsonl, .csv or .parquet)")


def read_text_lines(path: Path) -> list[tuple[Where, str]]:
    """Non-blank lines of a text file with their line numbers; no line at all is an error."""
    out = []
    for lineno, line in enumerate(_lines(read_text(path)), start=1):
        if line.strip():
            out.append((Where(path, line=lineno), line))
    if not out:
        raise _no_records(path)
    return out


# ---------------------------------------------------------------------------
# fields


def require(rec: Mapping[str, Any], where: Where, name: str) -> Any:
    """The value of a field that must be present and not null."""
    value = rec.get(name)
    if value is None:
        raise annotation_error(where, name, "missing")
    return value


def text(rec: Mapping[str, Any], where: Where, name: str, *, allow_empty: bool = False) -> str:
    """A required text field (numbers are accepted and turned into text: ids are sometimes stored as ints).

    Empty or blank text is an error unless ``allow_empty``: a loader passes
    that for the fields an official release leaves empty and its official
    scorer reads as they are (MLVU's questions and answers).
    """
    return nonempty_text(require(rec, where, name), where, name, allow_empty=allow_empty)


def nonempty_text(value: Any, where: Where, name: str, *, allow_empty: bool = False) -> str:
    """``value`` as text; anything but text or an integer is an error, and so is empty or blank text unless ``allow_empty``."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise annotation_error(where, name, f"expected text, got {type(value).__name__} {value!r}")
    out = str(value)
    if not allow_empty and not out.strip():
        raise annotation_error(where, name, "empty")
    return out


def optional_text(rec: Mapping[str, Any], name: str) -> str | None:
    value = rec.get(name)
    return None if value is None else str(value)


def number(value: Any, where: Where, name: str) -> float:
    """A finite number (int, float or numeric text)."""
    if isinstance(value, bool):
        raise annotation_error(where, name, f"not a number: {value!r}")
    try:
        out = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise annotation_error(where, name, f"not a number: {value!r}") from None
    if not math.isfinite(out):
        raise annotation_error(where, name, f"not a finite number: {value!r}")
    return out


def integer(value: Any, where: Where, name: str) -> int:
    """A whole number (int, integral float, or digits as text)."""
    out = number(value, where, name)
    if out != int(out):
        raise annotation_error(where, name, f"not a whole number: {value!r}")
    return int(out)


def duration(value: Any, where: Where, name: str) -> float:
    """A video length in seconds: finite and not negative."""
    out = number(value, where, name)
    if out < 0:
        raise annotation_error(where, name, f"a duration cannot be negative, got {value!r}")
    return out


#: how far (seconds) an evidence span may reach before 0 or past the video's
#: end and still load as released: the official files round times to 0.1 s
#: (NExT-GQA's gsub_test.json has 36 starts at -0.1 or -0.2 s, gsub_val.json
#: three ends up to 0.5 s past the duration). Such spans are kept as released,
#: since the official scorers use them so; anything further out is an error.
SPAN_TOLERANCE = 1.0


def span(value: Any, where: Where, name: str) -> Span:
    """A ``[start, end]`` pair of seconds: finite, ordered, not before 0 (beyond :data:`SPAN_TOLERANCE`)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or len(value) != 2:
        raise annotation_error(where, name, f"expected a [start, end] pair, got {value!r}")
    start, end = number(value[0], where, name), number(value[1], where, name)
    return checked_span(start, end, where, name)


def checked_span(start: float, end: float, where: Where, name: str) -> Span:
    """``Span(start, end)`` after the checks of :func:`span`."""
    if end < start:
        raise annotation_error(where, name, f"span end {end} is before its start {start}")
    if start < -SPAN_TOLERANCE:
        raise annotation_error(where, name, f"span [{start}, {end}] starts before the video (negative time)")
    return Span(start, end)


def spans(value: Any, where: Where, name: str) -> tuple[Span, ...]:
    """A list of ``[start, end]`` pairs."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise annotation_error(where, name, f"expected a list of [start, end] pairs, got {value!r}")
    return tuple(span(v, where, name) for v in value)


def within(items: Sequence[Span], length: float | None, where: Where, name: str) -> tuple[Span, ...]:
    """``items`` unchanged, checked to end no later than ``length`` seconds (the video's duration) plus :data:`SPAN_TOLERANCE`."""
    if length is None:
        return tuple(items)
    for s in items:
        if s.end > length + SPAN_TOLERANCE:
            raise annotation_error(where, name, f"span [{s.start}, {s.end}] runs past the end of the video ({length} s)")
    return tuple(items)


def option_texts(values: Any, where: Where, name: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    """A non-empty list of option texts; an empty text is an error unless ``allow_empty``.

    With ``allow_empty`` an empty option is kept at its place, so the letters
    of the options after it do not move (MLVU's release has such options and
    its official scorer lists them as options, see :mod:`~frameselect.datasets.mlvu`).
    """
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence) or not values:
        raise annotation_error(where, name, f"expected a non-empty list of option texts, got {values!r}")
    return tuple(
        nonempty_text(v, where, f"{name}[{i}]", allow_empty=allow_empty) if isinstance(v, str) else _not_text(v, where, f"{name}[{i}]")
        for i, v in enumerate(values)
    )


def _not_text(value: Any, where: Where, name: str) -> str:
    raise annotation_error(where, name, f"expected option text, got {type(value).__name__} {value!r}")


# ---------------------------------------------------------------------------
# options and answers

_LETTER_PREFIX = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])\s*[.):：])\s*")


letter = option_letter  # 0 -> "A", 1 -> "B", ...


def strip_option_letters(options: Iterable[str]) -> tuple[str, ...]:
    """Drop "A. " / "(A) " / "A) " prefixes, only where the letter matches the option's position.

    >>> strip_option_letters(["A. red", "B. A blue one", "(C) green", "yellow"])
    ('red', 'A blue one', 'green', 'yellow')
    """
    out = []
    for i, option in enumerate(options):
        option = str(option)
        m = _LETTER_PREFIX.match(option)
        if m and (m.group(1) or m.group(2)) == letter(i):
            option = option[m.end() :]
        out.append(option.strip())
    return tuple(out)


def split_option_block(block: str) -> tuple[str, ...]:
    """Options given as one text, one per line ("A. x\\nB. y"), without their letters.

    A line that does not start with the next letter continues the previous option.

    >>> split_option_block("A. Malaysian.\\nB. British.\\nC. Cannot be\\ndetermined.")
    ('Malaysian.', 'British.', 'Cannot be determined.')
    """
    options: list[str] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        m = _LETTER_PREFIX.match(line)
        if m and (m.group(1) or m.group(2)) == letter(len(options)):
            options.append(line[m.end() :].strip())
        elif options:
            options[-1] = f"{options[-1]} {line.strip()}"
        else:
            options.append(line.strip())
    return tuple(options)


def answer_letter(value: Any, n_options: int, where: Where, name: str) -> str:
    """A ground-truth letter from "C", "(C)", "C." or a 0-based index; checked against the number of options."""
    if isinstance(value, bool):
        raise annotation_error(where, name, f"not an option letter or index: {value!r}")
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().isdigit()):
        index = integer(value, where, name)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*\(?([A-Za-z])\)?\.?\s*", value)
        if not m:
            raise annotation_error(where, name, f"not an option letter: {value!r}")
        index = ord(m.group(1).upper()) - ord("A")
    else:
        raise annotation_error(where, name, f"not an option letter or index: {value!r}")
    if not 0 <= index < n_options:
        raise annotation_error(where, name, f"answer {value!r} is outside the {n_options} options")
    return letter(index)


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
