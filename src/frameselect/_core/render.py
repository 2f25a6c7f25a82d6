"""The one table renderer: a format-free table model, written as Markdown, CSV, LaTeX or terminal text.

Every printed or exported table (``show``, ``run``, ``replay``, ``table``,
``ranks``, ``route-report``, ``bench``) is a :class:`Table`: typed
:class:`Column` s and rows of raw cell values (text, numbers,
:class:`~frameselect._core.stats.Interval` s, ``None`` for an empty cell), so that
another front end (an HTML report) reads the same values, intervals included,
without parsing text. :func:`render` writes tables in one of :data:`FORMATS`.

Text is escaped for each format (labels and dataset text are user data):
Markdown escapes ``\\``, ``|`` and a leading ``=``, ``+``, ``-``, ``@``
with a backslash; CSV prefixes a cell that starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return with ``'`` (OWASP's advice against
spreadsheet formula injection); LaTeX escapes its special characters; the
terminal drops control characters (no escape sequences reach the terminal).
Newlines inside a cell become spaces everywhere. Numbers are never escaped:
in CSV they are written raw (``%.6g``), intervals as three columns
(``name``, ``name_low``, ``name_high``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from frameselect._core.stats import Interval, format_interval
from frameselect.errors import FrameselectError

__all__ = [
    "FORMATS",
    "Column",
    "Table",
    "render",
    "markdown_table",
    "format_value",
    "escape_markdown",
    "escape_csv",
    "escape_latex",
    "escape_terminal",
]

#: the output formats of :func:`render`
FORMATS = ("markdown", "csv", "latex", "text")

Kind = Literal["text", "int", "number", "interval"]
Value = str | int | float | Interval | None


def format_value(value: float | None) -> str:
    """A plain number: integers as integers, else three decimals; NaN or None as ``–``.

    >>> format_value(3.0), format_value(2 / 3), format_value(float("nan"))
    ('3', '0.667', '–')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.3f}"


@dataclass(frozen=True)
class Column:
    """One column: its header, what its cells hold, and how text formats show a number.

    ``kind``: ``"text"`` (labels, dataset text), ``"int"``, ``"number"`` or
    ``"interval"``. ``fmt`` turns a number into text for the text formats
    (default :func:`format_value`); ``signed`` shows an interval's sign.
    ``higher_is_better`` says which way a metric column points (None: not a
    metric), for front ends that mark the best value.
    """

    name: str
    kind: Kind = "text"
    fmt: Callable[[float], str] | None = None
    signed: bool = False
    higher_is_better: bool | None = None

    def text(self, value: Value) -> str:
        """The cell as unescaped text."""
        if value is None:
            return ""
        if isinstance(value, Interval):
            return format_interval(value, signed=self.signed)
        if isinstance(value, str):
            return value
        if self.fmt is not None:
            return self.fmt(float(value))
        return str(value) if self.kind == "int" else format_value(float(value))


@dataclass
class Table:
    """A titled table of raw values: ``rows[i][j]`` is the cell of column ``j``.

    ``title`` heads the table (``## title`` in Markdown); in CSV, where
    several tables share one file, ``title_key`` names a leading column that
    repeats the title on every row. ``note`` is a line under the title;
    ``empty`` the line shown instead of a table without rows (CSV writes the
    header alone).
    """

    columns: list[Column]
    rows: list[list[Value]] = field(default_factory=list)
    title: str = ""
    title_key: str = ""
    note: str = ""
    empty: str = ""

    def add(self, *cells: Value) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns ({', '.join(c.name for c in self.columns)})")
        self.rows.append(list(cells))


# -- escaping -------------------------------------------------------------------

_NEWLINES = re.compile(r"\r\n|\r|\n|\u2028|\u2029")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@")


def _one_line(text: str) -> str:
    return _NEWLINES.sub(" ", text)


def escape_markdown(text: str) -> str:
    r"""Text for one Markdown table cell.

    >>> escape_markdown("a|b\nc"), escape_markdown("=1+2"), escape_markdown(r"x\|y")
    ('a\\|b c', '\\=1+2', 'x\\\\\\|y')
    """
    text = _one_line(text).replace("\\", "\\\\").replace("|", "\\|")
    return "\\" + text if text.startswith(_FORMULA_START) else text


def escape_csv(text: str) -> str:
    """Text for one CSV cell (the csv module adds the quoting).

    >>> escape_csv("=HYPERLINK(1)"), escape_csv("@SUM(A1)"), escape_csv("a\\nb"), escape_csv("ok")
    ("'=HYPERLINK(1)", "'@SUM(A1)", 'a b', 'ok')
    """
    if text.startswith((*_FORMULA_START, "\t", "\r")):
        text = "'" + text
    return _one_line(text)


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape_latex(text: str) -> str:
    r"""Text for LaTeX.

    >>> escape_latex("50% of a_b")
    '50\\% of a\\_b'
    """
    return "".join(_LATEX.get(ch, ch) for ch in _one_line(text))


def escape_terminal(text: str) -> str:
    """Text for a terminal: one line, no control characters (no escape sequences)."""
    return _CONTROL.sub("", _one_line(text))


# -- rendering --------------------------------------------------------------------


def _number(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.6g}"


def _markdown(table: Table) -> str:
    lines = [f"## {escape_markdown(table.title)}", ""] if table.title else []
    if table.note:
        lines += [escape_markdown(table.note), ""]
    if not table.rows and table.empty:
        return "\n".join([*lines, escape_markdown(table.empty)])
    lines.append("| " + " | ".join(escape_markdown(c.name) for c in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for row in table.rows:
        cells = [escape_markdown(c.text(v)) if c.kind == "text" else c.text(v) for c, v in zip(table.columns, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _latex(table: Table) -> str:
    head = f"% {escape_latex(table.title)}" + (f": {escape_latex(table.note)}" if table.note else "")
    lines = [head] if table.title or table.note else []
    if not table.rows and table.empty:
        return "\n".join([*lines, f"% {escape_latex(table.empty)}"])
    lines.append(r"\begin{tabular}{" + "".join("c" if c.kind == "interval" else "l" for c in table.columns) + "}")
    lines += [r"\hline", " & ".join(escape_latex(c.name) for c in table.columns) + r" \\", r"\hline"]
    lines += [" & ".join(escape_latex(c.text(v)) for c, v in zip(table.columns, row, strict=True)) + r" \\" for row in table.rows]
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines)


def _csv_head(table: Table) -> list[str]:
    head = [table.title_key] if table.title_key else []
    for c in table.columns:
        head += [c.name, f"{c.name}_low", f"{c.name}_high"] if c.kind == "interval" else [c.name]
    return [escape_csv(h) for h in head]


def _csv_cells(table: Table, row: Sequence[Value]) -> list[str]:
    cells = [escape_csv(table.title)] if table.title_key else []
    for c, v in zip(table.columns, row, strict=True):
        if c.kind == "interval":
            iv = v if isinstance(v, Interval) else Interval(math.nan, math.nan, math.nan)
            cells += [_number(iv.estimate), _number(iv.low), _number(iv.high)]
        elif v is None:
            cells.append("")
        elif isinstance(v, str):
            cells.append(escape_csv(v))
        elif c.kind == "int":
            cells.append(str(int(v)) if not isinstance(v, Interval) else "")
        else:
            cells.append(_number(float(v)) if not isinstance(v, Interval) else "")
    return cells


def _csv(tables: Sequence[Table]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for i, table in enumerate(tables):
        if i:
            out.write("\n")
        writer.writerow(_csv_head(table))
        writer.writerows(_csv_cells(table, row) for row in table.rows)
    return out.getvalue().rstrip("\n")


def _text(table: Table) -> str:
    """Left-aligned columns separated by two spaces, for a terminal."""
    if not table.rows and table.empty:
        return "\n".join(escape_terminal(t) for t in (table.title, table.note, table.empty) if t)
    grid = [[escape_terminal(c.name) for c in table.columns]]
    grid += [[escape_terminal(c.text(v)) for c, v in zip(table.columns, row, strict=True)] for row in table.rows]
    widths = [max(len(r[j]) for r in grid) for j in range(len(table.columns))]
    lines = [escape_terminal(table.title)] if table.title else []
    if table.note:
        lines.append(escape_terminal(table.note))
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in grid]
    return "\n".join(lines)


def render(tables: Table | Sequence[Table], fmt: str = "markdown") -> str:
    """One or more tables in ``fmt`` (one of :data:`FORMATS`), separated by a blank line."""
    if fmt not in FORMATS:
        raise FrameselectError(f"unknown table format {fmt!r}; use one of {', '.join(FORMATS)}")
    items = [tables] if isinstance(tables, Table) else list(tables)
    if fmt == "csv":
        return _csv(items)
    one = {"markdown": _markdown, "latex": _latex, "text": _text}[fmt]
    return "\n\n".join(one(t) for t in items)


def markdown_table(rows: Sequence[tuple[str, Mapping[str, float]]], columns: Sequence[str] | None = None, first: str = "run") -> str:
    """Rows of (label, {metric: value}) as a Markdown table (columns: every key, in order of first appearance)."""
    if columns is None:
        columns = list(dict.fromkeys(key for _, values in rows for key in values))
    table = Table([Column(first), *(Column(c, "number") for c in columns)])
    for label, values in rows:
        table.add(label, *(values.get(c) for c in columns))
    return render(table)
