"""Questions over several videos, as their files and budgets can go wrong.

A budget policy that would give every video no frame, segment times that are
not numbers, and JSON nested thousands of levels deep: each is an error
naming the sample, or the file, record and field, and never a record ``ok``
with nothing in it or a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import frameselect
from annotation_files import touch, write_json, write_jsonl
from frameselect._core.video.synth import write_frames
from frameselect._engine.selections import SelectionImportError
from frameselect.crossvideo.budget import largest_remainder
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import AnnotationError
from frameselect.types import Query, Sample, VideoRef

DEEP = 100_000  # far past Python's recursion limit (1000 by default)


@pytest.fixture(scope="module")
def three_videos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("three")
    return [write_frames(root / f"v{i}.mp4", [np.full((32, 32, 3), 40 * i + 10 * j, np.uint8) for j in range(10)], fps=5) for i in range(3)]


def test_crossvid_with_fewer_frames_than_videos_fails_that_question(three_videos: list[Path], tmp_path: Path) -> None:
    sample = Sample.across("q3", [VideoRef(f"video_{i + 1}", str(p)) for i, p in enumerate(three_videos)], Query("which?", ("a", "b")), "A")
    two = Sample.across("q2", [VideoRef(f"video_{i + 1}", str(p)) for i, p in enumerate(three_videos[:2])], Query("which?", ("a", "b")), "A")
    result = frameselect.evaluate(selector="uniform", dataset=InMemoryDataset([sample, two]), k=2, budget_policy="crossvid", cache_dir=tmp_path / "c")
    by_id = {r.sample_id: r for r in result.records}
    assert by_id["q3"].status != "ok"
    assert "sample 'q3'" in (by_id["q3"].error or "") and "2 // 3 = 0 frames" in (by_id["q3"].error or "")
    assert "at least 3 frames" in (by_id["q3"].error or "") and "'equal'" in (by_id["q3"].error or "")
    # two videos at k=2: one frame each, as CrossVid's scripts give
    assert by_id["q2"].status == "ok" and by_id["q2"].metrics["frames"] == 2


def _crossvid(root: Path, **fields: object) -> Path:
    record = {"id": 7, "videos": ["cook/p.mp4", "cook/q.mp4"], "question": "Which?", "options": ["A. x", "B. y"], "answer": "A", **fields}
    path = write_json(root / "QA" / "CC.json", [record])
    touch(root / "videos" / "cook" / "p.mp4", root / "videos" / "cook" / "q.mp4")
    return path


@pytest.mark.parametrize(
    ("begin", "end", "field", "problem"),
    [
        (1, 2, "begin", "expected a list of times"),
        ("0,1", [1, 2], "begin", "expected a list of times"),
        ([0, "soon"], [1, 2], "begin[1]", "not a number"),
        ([0, 1], [1, None], "end[1]", "not a number"),
        ([0, 1], [1], "end", "1 end time(s) for 2 begin time(s)"),
        ([0, 5], [1, 2], "begin[1]/end[1]", "before its start"),
        ([0, float("nan")], [1, 2], "begin[1]", "not a finite number"),
    ],
)
def test_crossvid_begin_and_end_that_are_not_times_name_file_record_and_field(tmp_path: Path, begin: object, end: object, field: str, problem: str) -> None:
    path = _crossvid(tmp_path, begin=begin, end=end)
    with pytest.raises(AnnotationError) as info:
        frameselect.datasets.create("crossvid", root=str(tmp_path)).samples()
    err = info.value
    assert err.path == str(path) and err.index == 0 and err.field == field
    assert problem in str(err)


def test_crossvid_begin_and_end_that_are_times_are_kept(tmp_path: Path) -> None:
    _crossvid(tmp_path, begin=[0, "1.5"], end=[1, 2.5])
    (sample,) = frameselect.datasets.create("crossvid", root=str(tmp_path)).samples()
    assert sample.metadata["segments"] == [[0.0, 1.0], [1.5, 2.5]]


def _deep() -> str:
    return "[" * DEEP + "]" * DEEP


def _mvu_file(root: Path) -> Path:
    path = root / "QA_json_file.json"
    path.write_text(_deep(), encoding="utf-8")
    return path


def _cvbench_file(root: Path) -> Path:
    path = root / "CVBench.json"
    path.write_text('[{"id": 1, "nest": ' + _deep() + "}]", encoding="utf-8")
    return path


def _crossvid_file(root: Path) -> Path:
    path = root / "QA" / "CC.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"a": ' * DEEP + "1" + "}" * DEEP, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "write"), [("mvu_eval", _mvu_file), ("cvbench", _cvbench_file), ("crossvid", _crossvid_file)])
def test_deeply_nested_json_is_an_annotation_error(tmp_path: Path, name: str, write: object) -> None:
    path = write(tmp_path)  # type: ignore[operator]
    with pytest.raises(AnnotationError, match="nested too deeply") as info:
        frameselect.datasets.create(name, root=str(tmp_path)).samples()
    assert info.value.path == str(path)


def test_deeply_nested_json_lines_name_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [{"qid": 1, "query": "a", "duration": 10, "vid": "v", "relevant_windows": [[0, 2]]}])
    path.write_text(path.read_text(encoding="utf-8") + _deep() + "\n", encoding="utf-8")
    with pytest.raises(AnnotationError, match="nested too deeply") as info:
        frameselect.datasets.create("qvhighlights", root=str(tmp_path)).samples()
    assert info.value.line == 2


def test_deeply_nested_selections_file_is_an_import_error(tmp_path: Path) -> None:
    from frameselect._engine.selections import read_published

    path = tmp_path / "sel.json"
    path.write_text(_deep(), encoding="utf-8")
    with pytest.raises(SelectionImportError, match="nested too deeply"):
        read_published("plain", path)


def test_deeply_nested_json_on_the_command_line_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    _mvu_file(tmp_path)
    code = main(["run", "-d", "mvu_eval", "-D", f"root={tmp_path}", "-s", "uniform", "--store", str(tmp_path / "s.db"), "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "nested too deeply" in err and "QA_json_file.json" in err
    assert sys.getrecursionlimit() < DEEP


def test_largest_remainder_refuses_a_total_it_cannot_share_exactly() -> None:
    assert largest_remainder([1, 1, 1], 2**53) == [3002399751580331, 3002399751580331, 3002399751580330]
    for total in (2**62, 10**30):
        with pytest.raises(ValueError, match="too large to share exactly"):
            largest_remainder([1, 1, 1], total)
    assert json.loads("[1]") == [1]


def test_deeply_nested_yaml_of_an_lmms_eval_task_is_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from frameselect.datasets.lmms_eval_task import load_task_config
    from frameselect.errors import DatasetConfigError

    path = tmp_path / "task.yaml"
    path.write_text("task: t\nnest: " + "[" * DEEP + "]" * DEEP + "\n", encoding="utf-8")
    with pytest.raises(DatasetConfigError, match="nested too deeply") as info:
        load_task_config(path)
    assert str(path) in str(info.value)


def test_a_deeply_nested_cli_parameter_is_text_not_a_traceback() -> None:
    from frameselect.cli.commands._common import parse_value

    deep = "[" * DEEP + "]" * DEEP
    assert parse_value(deep) == deep and parse_value("[1, 2]") == [1, 2]
