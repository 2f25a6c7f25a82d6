"""Reading annotation files and checking their fields: each problem an :class:`~frameselect.errors.AnnotationError` naming the file, the record and the field."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frameselect.errors import AnnotationError, MissingDependencyError
from frameselect.types import Span, option_letter

__all__ = [
    "AnnotationWarning",
    "MissingVideoWarning",
    "Record",
    "SPAN_TOLERANCE",
    "Where",
    "annotation_error",
    "answer_letter",
    "checked_span",
    "duration",
    "integer",
    "letter",
    "load_json",
    "nonempty_text",
    "number",
    "option_texts",
    "optional_text",
    "read_csv",
    "read_json_records",
    "read_jsonl",
    "read_parquet",
    "read_records",
    "read_text",
    "read_text_lines",
    "require",
    "span",
    "spans",
    "split_option_block",
    "strip_option_letters",
    "text",
    "within",
]


class MissingVideoWarning(UserWarning):
    """Samples were skipped because their video file is not on disk."""


class AnnotationWarning(UserWarning):
    """Annotations that do not fit together (e.g. ids absent from the benchmark they extend); the rest loads."""


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
