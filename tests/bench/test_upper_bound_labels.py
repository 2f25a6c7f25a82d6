"""No column of the bench is called an upper bound unless no reader beats it in any row."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from frameselect.answerers.oracle import ORACLE_LABEL, answerer_label


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def upper_bound_violations(report: str, readers: tuple[str, ...]) -> list[str]:
    """Rows of the report's Markdown tables where a reader's cell is above a column whose header says "upper bound"."""
    out: list[str] = []
    header: list[str] | None = None
    for line in report.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set(line.replace("|", "").strip()) <= set("-: "):
            continue
        bounds = [j for j, h in enumerate(header) if "upper bound" in h.lower()]
        reads = [j for j, h in enumerate(header) if h in readers]
        for b in bounds:
            for r in reads:
                try:
                    bound, value = float(cells[b]), float(cells[r])
                except (ValueError, IndexError):
                    continue
                if math.isfinite(bound) and value > bound:
                    out.append(f"{cells[0]}: {header[r]} {value} > {header[b]} {bound}")
    return out


def test_the_check_finds_a_beaten_upper_bound() -> None:
    report = "| selector | label_reader | oracle (upper bound) |\n|---|---|---|\n| uniform | 0.500 | 0.400 |\n| topk | 0.300 | 0.400 |\n"
    assert upper_bound_violations(report, ("label_reader",)) == ["uniform: label_reader 0.5 > oracle (upper bound) 0.4"]
    assert upper_bound_violations(report.replace("0.500", "0.400"), ("label_reader",)) == []


def test_the_oracle_is_labelled_by_what_it_measures() -> None:
    assert answerer_label("oracle") == "oracle (coverage, strict)" and "upper" not in ORACLE_LABEL
    assert answerer_label("label_ocr_reader") == "label_ocr_reader"


@pytest.mark.slow
def test_no_reader_beats_a_column_called_an_upper_bound_on_the_bench(tmp_path: Path) -> None:
    """The bench on a small suite with the readers and the oracle: its tables call no beaten column an upper bound."""
    pytest.importorskip("torch")
    pytest.importorskip("rapidocr")
    from frameselect._studies.bench.runner import BenchConfig, format_report, run_bench

    readers = ("label_ocr_reader", "label_reader", "ocr_reader")
    config = BenchConfig(
        selectors=("uniform", "topk", "multires"),
        budgets=(8,),
        answerers=(*readers, "oracle"),
        store=str(tmp_path / "b.sqlite"),
        cache_dir=str(tmp_path / "c"),
        n_videos=2,
        minutes=1.0,
    )
    result = run_bench(config, log=lambda _: None)
    report = format_report(result)
    assert "| selector | label_ocr_reader | label_reader | ocr_reader | oracle (coverage, strict) |" in report
    assert upper_bound_violations(report, readers) == []
    assert "upper bound" not in report.replace("not an upper bound", "")
