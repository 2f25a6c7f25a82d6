"""Hostile labels and dataset text in exported tables: no broken Markdown rows, no spreadsheet formulas, no terminal escapes.

Each case stores runs whose label and question metadata carry the hostile
text, then exports them through ``frameselect table`` / ``ranks`` / ``show``
(the one table renderer) and checks the bytes that come out.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from frameselect._core.render import Column, Table, render
from frameselect._core.stats import Interval
from frameselect.cli import main
from frameselect.store import Store
from frameselect.types import SampleRecord, Selection

FORMULAS = ['=HYPERLINK("http://evil.test","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)"]


def _store(path: Path, label: str, kind: str = "plain") -> None:
    """One run labelled ``label`` over four questions whose ``kind`` metadata is ``kind``."""
    with Store(path) as st:
        config = {
            "selector": {"kind": "selectors", "name": "uniform", "params": {}},
            "evaluators": [{"name": "evidence_recall", "params": {}}],
            "dataset": "hostile",
        }
        st.open_run("run1", config, label=label)
        for i in range(4):
            record = SampleRecord(f"q{i}", {"evidence_recall": 0.25 * i}, selection=(0,), timestamps=(0.0,), k=1, metadata={"kind": kind})
            st.write_sample("run1", record, Selection((0,)), video_id=f"v{i}")


def _markdown_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _unescaped_pipes(line: str) -> int:
    """Cell separators of a Markdown table row: ``|`` not preceded by an odd number of backslashes."""
    count, backslashes = 0, 0
    for ch in line:
        if ch == "|" and backslashes % 2 == 0:
            count += 1
        backslashes = backslashes + 1 if ch == "\\" else 0
    return count


def test_a_pipe_in_a_label_does_not_add_a_markdown_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "s.sqlite", "a | b | c", kind="x|y")
    assert main(["table", "--store", str(tmp_path / "s.sqlite"), "--by", "kind", "--boot", "50"]) == 0
    rows = _markdown_rows(capsys.readouterr().out)
    assert [_unescaped_pipes(r) for r in rows] == [5, 5, 5, 5]  # selector, kind, n, evidence_recall: every row has the header's 4 columns
    assert rows[2].startswith("| a \\| b \\| c | all | 4 | ") and rows[3].startswith("| a \\| b \\| c | x\\|y | 4 | ")


def test_a_newline_in_a_label_does_not_break_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "s.sqlite", "first line\nsecond line\r\n| injected | row |", kind="k\nk")
    assert main(["table", "--store", str(tmp_path / "s.sqlite"), "--by", "kind", "--boot", "50"]) == 0
    out = capsys.readouterr().out
    rows = _markdown_rows(out)
    assert len(rows) == 4 and "| first line second line \\| injected \\| row \\| | all | 4 |" in out
    assert main(["table", "--store", str(tmp_path / "s.sqlite"), "--by", "kind", "--boot", "50", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 3  # header and two rows: no line break inside a cell
    assert [r["selector"] for r in csv.DictReader(io.StringIO(out))] == ["first line second line | injected | row |"] * 2


@pytest.mark.parametrize("label", FORMULAS)
def test_a_formula_in_a_label_is_inert_in_csv(label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "s.sqlite", label, kind=label)
    assert main(["table", "--store", str(tmp_path / "s.sqlite"), "--by", "kind", "--boot", "50", "--format", "csv"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0][:4] == ["dataset", "selector", "kind", "n"]
    assert table[1][1] == table[2][1] == "'" + label and table[2][2] == "'" + label  # the label and the dataset text
    assert table[1][4:7] == ["0.375", table[1][5], table[1][6]] and float(table[1][5]) <= 0.375 <= float(table[1][6])
    for row in table:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row)


@pytest.mark.parametrize("label", FORMULAS)
def test_a_formula_in_a_label_is_escaped_in_markdown(label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "s.sqlite", label)
    assert main(["ranks", "--store", str(tmp_path / "s.sqlite"), "--by", "none", "--boot", "50"]) == 0
    out = capsys.readouterr().out
    ranking = next(r for r in _markdown_rows(out) if r.startswith("| hostile | evidence_recall | all |"))
    expected = label.replace("|", "\\|")
    assert ranking.endswith(f"| \\{expected} (0.375) |")


def test_negative_numbers_stay_numbers() -> None:
    """Escaping is for text: a negative value or interval is written as the number it is."""
    table = Table([Column("label"), Column("delta", "number"), Column("diff", "interval", signed=True)], title="t", title_key="dataset")
    table.add("-neg", -0.5, Interval(-0.25, -0.5, 0.125))
    rows = list(csv.reader(io.StringIO(render(table, "csv"))))
    assert rows == [["dataset", "label", "delta", "diff", "diff_low", "diff_high"], ["t", "'-neg", "-0.5", "-0.25", "-0.5", "0.125"]]
    assert _markdown_rows(render(table))[-1] == "| \\-neg | -0.500 | -0.250 [-0.50, 0.12] |"


def test_terminal_output_drops_control_sequences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "s.sqlite", "ok\x1b[2J\x1b]0;pwned\x07 label")
    assert main(["show", "--store", str(tmp_path / "s.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "ok[2J]0;pwned label" in out
