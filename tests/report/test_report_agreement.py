"""The report on a store of several datasets: rankings across them, "invert" only for a significant flip, identical selections said."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_claims_table import _store  # noqa: E402


@pytest.mark.slow  # builds the whole page twice
@pytest.mark.parametrize("flip", [True, False])
def test_report_ranks_across_datasets(tmp_path: Path, flip: bool) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from frameselect._studies.htmlreport import ReportOptions, build_report

    path = tmp_path / "s.sqlite"
    _store(path, flip)
    html = build_report(path, options=ReportOptions(n_boot=200, samples=0))
    assert "<h2>Rankings across datasets</h2>" in html and "dataset: mlvu vs videomme: τ_b = " in html
    assert ("invert:" in html) == flip
    assert "Significant inversions" not in html
