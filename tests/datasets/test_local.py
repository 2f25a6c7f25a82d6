"""``local``: one's own annotated questions as JSON Lines; every malformed line a clear error naming file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from frameselect.datasets.local import LocalDataset
from frameselect.errors import AnnotationError, DatasetNotFoundError
from frameselect.types import Span


@pytest.fixture()
def folder(tiny_root: Path, tmp_path: Path) -> Path:
    """A folder with two videos under clips/ (copies of the tiny dataset's)."""
    (tmp_path / "clips").mkdir()
    for name in ("tiny_a.mp4", "tiny_b.mp4"):
        shutil.copy(tiny_root / name, tmp_path / "clips" / name)
    return tmp_path


def write(folder: Path, *lines: Any) -> Path:
    path = folder / "questions.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


GOOD = {"id": "q1", "video": "clips/tiny_a.mp4", "question": "What colour?", "options": ["red", "green"], "answer": "B", "evidence": [[4.0, 4.6]]}


def test_three_questions_over_two_videos_load(folder: Path) -> None:
    path = write(
        folder,
        {**GOOD, "kind": "needle"},
        "",
        {"video": "clips/tiny_b.mp4", "question": "How many squares?", "options": ["1", "2", "3"], "answer": "2"},
        {"id": "both", "videos": [{"path": "clips/tiny_a.mp4", "evidence": [[1, 2]]}, "clips/tiny_b.mp4"], "question": "Which?", "answer": "the first"},
    )
    samples = LocalDataset(path).samples()
    assert [s.id for s in samples] == ["q1", "line3", "both"]
    one, two, both = samples
    assert one.video == str(folder / "clips" / "tiny_a.mp4")
    assert one.query.options == ("red", "green") and one.answer == "B"
    assert one.evidence == (Span(4.0, 4.6),) and one.metadata == {"kind": "needle"}
    assert two.answer == "B"  # the text "2" is the second option's, not index 2
    assert both.is_multi_video and [v.path for v in both.videos] == [str(folder / "clips" / n) for n in ("tiny_a.mp4", "tiny_b.mp4")]
    assert both.videos[0].evidence == (Span(1.0, 2.0),) and both.videos[1].evidence == ()
    assert both.answer == "the first" and both.query.options == ()


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ({k: v for k, v in GOOD.items() if k != "question"}, "question", "missing"),
        ({**GOOD, "question": ""}, "question", "empty"),
        ({**GOOD, "answr": "B"}, "answr", "not a field"),
        ({**GOOD, "answer": "E"}, "answer", "outside the 2 options"),
        ({**GOOD, "evidence": [[5, 4]]}, "evidence", "before its start"),
        ({**GOOD, "evidence": "4-5"}, "evidence", "list of [start, end]"),
        ({**GOOD, "video": "clips/none.mp4"}, "video", "no video file"),
        ({**GOOD, "video": "../outside.mp4"}, "video", "outside the video folder"),
        ({**GOOD, "video": "/etc/passwd"}, "video", "absolute"),
        ({k: v for k, v in GOOD.items() if k != "video"}, "video", "missing"),
        ({**GOOD, "videos": ["clips/tiny_b.mp4"]}, "video", "not both"),
        ({**{k: v for k, v in GOOD.items() if k != "video"}, "videos": ["clips/tiny_a.mp4"]}, "evidence", "in its entry of 'videos'"),
        ({**{k: v for k, v in GOOD.items() if k not in ("video", "evidence")}, "videos": []}, "videos", "non-empty list"),
        ({**GOOD, "metadata": [1]}, "metadata", "expected an object"),
        ("{not json", None, "invalid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
    ],
)
def test_a_malformed_line_names_file_line_and_field(folder: Path, line: Any, field: str | None, problem: str) -> None:
    path = write(folder, {**GOOD, "id": "first"}, line)
    with pytest.raises(AnnotationError) as err:
        LocalDataset(path).samples()
    assert f"{path}, line 2" in str(err.value) and problem in str(err.value)
    assert "annotations=" not in str(err.value) and "videos=<folder>" not in str(err.value)  # advice that fits this dataset's one parameter
    assert err.value.line == 2 and err.value.field == field


def test_a_symbolic_link_out_of_the_folder_is_refused(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(folder / "clips" / "tiny_a.mp4", elsewhere / "x.mp4")
    (folder / "clips" / "link.mp4").symlink_to(elsewhere / "x.mp4")
    path = write(folder, {**GOOD, "video": "clips/link.mp4"})
    with pytest.raises(AnnotationError, match="line 1.*outside"):
        LocalDataset(path).samples()


def test_duplicate_ids_name_both_lines(folder: Path) -> None:
    path = write(folder, GOOD, GOOD)
    with pytest.raises(AnnotationError, match=r"line 2.*already the id of line 1"):
        LocalDataset(path).samples()


def test_a_missing_or_empty_file_says_so(folder: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no questions file"):
        LocalDataset(folder / "nope.jsonl").samples()
    (folder / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(AnnotationError, match="holds no records"):
        LocalDataset(folder / "empty.jsonl").samples()


def test_registered_and_recreated_from_its_configuration(folder: Path) -> None:
    from frameselect.parts import part_config
    from frameselect.registry import datasets, revive

    path = write(folder, GOOD)
    ds = datasets.create("local", file=str(path))
    again = revive(part_config(ds), kind="datasets")
    assert again.id == ds.id and [s.id for s in again] == ["q1"]
