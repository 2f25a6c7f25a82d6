"""Which sections ``frameselect bench`` runs: the full default run ends with the cross-video section; a subset does not.

The sections themselves are tested end to end elsewhere (tests/bench/test_bench_command.py, the cross-video
bench tests in tests/crossvideo); here the runners are replaced by recorders, so only the wiring is checked.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from frameselect.cli import main


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    from frameselect._studies.bench import cross_runner, runner

    seen: list[tuple[str, Any]] = []

    def run_bench(config: Any, progress: bool = False) -> Any:
        seen.append(("main", config))
        return SimpleNamespace(timings={})

    def run_cross_bench(config: Any, say: Any = None) -> list[Any]:
        seen.append(("cross", config))
        return []

    monkeypatch.setattr(runner, "run_bench", run_bench)
    monkeypatch.setattr(runner, "format_report", lambda result: "MAIN TABLES")
    monkeypatch.setattr(cross_runner, "run_cross_bench", run_cross_bench)
    monkeypatch.setattr(cross_runner, "format_cross_report", lambda rows, answerer: f"CROSS TABLES by {answerer}")
    return seen


def _bench(tmp_path: Path, *extra: str) -> list[str]:
    return ["bench", "--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report", *extra]


def test_the_full_default_run_ends_with_the_cross_video_section(calls: list[tuple[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect._studies.bench.cross_runner import ARMS

    assert main(_bench(tmp_path, "-k", "8", "-a", "label_reader", "-a", "oracle")) == 0
    out = capsys.readouterr().out
    assert [kind for kind, _ in calls] == ["main", "cross"]
    cross = calls[1][1]
    # every arm, the run's budgets, suite, store and cache, answered by the run's first answerer
    assert cross.arms == tuple(ARMS) and cross.budgets == (8,) and cross.answerer == "label_reader"
    assert (cross.n_videos, cross.minutes, cross.store, cross.cache_dir) == (
        calls[0][1].n_videos,
        calls[0][1].minutes,
        str(tmp_path / "b.sqlite"),
        str(tmp_path / "c"),
    )
    assert out.index("MAIN TABLES") < out.index("## Questions across several videos") < out.index("CROSS TABLES by label_reader")
    assert "cross-video section:" in out


@pytest.mark.parametrize(
    "extra",
    [["--no-cross-video"], ["-s", "uniform,topk"], ["--tokens"], ["--encoder", "none"]],
)
def test_a_narrowed_run_leaves_the_cross_video_section_out(
    calls: list[tuple[str, Any]], tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, *extra)) == 0
    assert [kind for kind, _ in calls] == ["main"] and "Questions across several videos" not in capsys.readouterr().out


def test_the_cross_video_section_alone_keeps_its_arms(calls: list[tuple[str, Any]], tmp_path: Path) -> None:
    assert main(_bench(tmp_path, "--cross-video", "-s", "uniform/equal,holmes")) == 0
    assert [kind for kind, _ in calls] == ["cross"] and calls[0][1].arms == ("uniform/equal", "holmes")


def test_cross_video_and_no_cross_video_together_are_refused(calls: list[tuple[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_bench(tmp_path, "--no-cross-video", "--cross-video")) == 2
    err = capsys.readouterr().err
    assert calls == [] and err.startswith("frameselect: error: --cross-video runs the cross-video section alone") and "Traceback" not in err
