"""Progress bars: counts, rate and ETA where asked or on a terminal; silent otherwise."""

from __future__ import annotations

import pytest

import frameselect
from frameselect._core.progress import Progress, track


def test_bar_shows_count_rate_and_eta_when_enabled(capsys: pytest.CaptureFixture[str]) -> None:
    bar = Progress(4, "uniform@k=4", enabled=True)
    bar.update(1)
    bar.update(3)
    bar.close()
    err = capsys.readouterr().err
    assert "uniform@k=4" in err and "4/4" in err and "sample/s" in err
    assert "<" in err  # elapsed<remaining


def test_bar_is_silent_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(track(range(5), 5, "quiet")) == [0, 1, 2, 3, 4]  # capsys: stderr is no terminal
    bar = Progress(2, "quiet")
    bar.update(2)
    bar.close()
    assert not bar.enabled
    assert capsys.readouterr().err == ""


def test_run_progress(tiny_root: object, capsys: pytest.CaptureFixture[str]) -> None:
    frameselect.evaluate(selector="uniform", dataset=frameselect.datasets.create("tiny", root=str(tiny_root)), k=2, progress=True)
    err = capsys.readouterr().err
    assert "uniform@k=2" in err and "6/6" in err
    frameselect.evaluate(selector="random", dataset=frameselect.datasets.create("tiny", root=str(tiny_root)), k=2)
    assert capsys.readouterr().err == ""
