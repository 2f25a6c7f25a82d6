"""Hostile video paths in annotation files: they never leave the folder they are looked up in.

Every loader builds a video path from annotation text (``videoID``,
``video_path``, ``video``, ``q_uid``, ``vid``, ...). An absolute path, a
``..`` that climbs out, or a symbolic link that leads out is an
``AnnotationError`` naming the file, the record and the field, whether or
not the target exists. Videos kept elsewhere are named with ``videos=``.
Each test writes its own files into ``tmp_path``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import frameselect.datasets
from annotation_files import touch, write_csv, write_json, write_jsonl  # noqa: E402
from frameselect.errors import AnnotationError

# -- fixtures: one small annotation file per loader, with the video name as a parameter -------------


def videomme(root: Path, name: str) -> Path:
    row = {"video_id": "001", "duration": "short", "domain": "d", "sub_category": "s", "url": "u", "videoID": name, "question_id": "001-1",
           "task_type": "Counting Problem", "question": "How many?", "options": ["A. 1.", "B. 2.", "C. 3.", "D. 4."], "answer": "C"}  # fmt: skip
    return write_jsonl(root / "videomme" / "test.jsonl", [row])


def videomme_v2(root: Path, name: str) -> Path:
    row = {"video_id": name, "question_id": "001-1", "question": "Who?", "options": "A. x\nB. y", "answer": "A", "group_type": "relevance"}
    return write_jsonl(root / "test.jsonl", [row])


def longvideobench(root: Path, name: str) -> Path:
    row = {"video_id": "v", "question": "What?", "candidates": ["a", "b"], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
           "video_path": name, "duration_group": 600, "duration": 100.0}  # fmt: skip
    return write_json(root / "lvb_val.json", [row])


def mlvu(root: Path, name: str) -> Path:
    row = {"video": name, "duration": 100, "question": "What?", "candidates": ["a", "b"], "answer": "a", "question_type": "plotQA"}
    return write_json(root / "MLVU" / "json" / "1_plotQA.json", [row])


def egoschema(root: Path, name: str) -> Path:
    row = {"q_uid": name, "google_drive_id": "g", "question": "What?", **{f"option {i}": f"o{i}" for i in range(5)}}
    write_json(root / "subset_answers.json", {name: 1})
    return write_json(root / "questions.json", [row])


def nextqa(root: Path, name: str) -> Path:
    header = ["video", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
    return write_csv(root / "val.csv", header, [[name, 10, 64, 48, "why?", 0, 1, "CW", "a", "b", "c", "d", "e"]])


def nextgqa(root: Path, name: str) -> Path:
    header = ["video_id", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
    write_json(root / "gsub_val.json", {})
    return write_csv(root / "val.csv", header, [[name, 10, 64, 48, "why?", "a", 1, "CW", "a", "b", "c", "d", "e"]])


def charades_sta(root: Path, name: str) -> Path:
    path = root / "charades_sta_test.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{name} 0.0 2.0##a person opens a door.\n", encoding="utf-8")
    return path


def qvhighlights(root: Path, name: str) -> Path:
    return write_jsonl(root / "highlight_val_release.jsonl", [{"qid": 1, "query": "a dog runs", "duration": 150, "vid": name, "relevant_windows": [[0, 2]]}])


def lvhaystack(root: Path, name: str) -> Path:
    row = {"video_id": name, "vclip_id": "c", "question": "What?", "options": {"A": "x", "B": "y"}, "answer": "A", "frame_indexes_video": [3],
           "video_metadata": {"frame_rate": 30.0}}  # fmt: skip
    return write_jsonl(root / "data" / "test.jsonl", [row])


# loader -> (writer, field holding the video name, where the record is: ("line", n) or ("index", n))
LOADERS: dict[str, tuple[Callable[[Path, str], Path], str, tuple[str, int]]] = {
    "videomme": (videomme, "videoID", ("line", 1)),
    "videomme_v2": (videomme_v2, "video_id", ("line", 1)),
    "longvideobench": (longvideobench, "video_path", ("index", 0)),
    "mlvu": (mlvu, "video", ("index", 0)),
    "egoschema": (egoschema, "q_uid", ("index", 0)),
    "nextqa": (nextqa, "video", ("line", 2)),
    "nextgqa": (nextgqa, "video_id", ("line", 2)),
    "charades_sta": (charades_sta, "video", ("line", 1)),
    "qvhighlights": (qvhighlights, "vid", ("line", 1)),
    "lvhaystack": (lvhaystack, "video_id", ("line", 1)),
}


def load(name: str, root: Path, **params: Any) -> list[Any]:
    return list(frameselect.datasets.create(name, root=str(root), **params).samples())


def assert_names(err: AnnotationError, path: Path, field: str, place: tuple[str, int]) -> None:
    """The error names the file, the record and the field, as message and as attributes."""
    kind, number = place
    message = str(err)
    assert str(path) in message and repr(field) in message
    assert (err.path, err.field) == (str(path), field)  # type: ignore[attr-defined]
    if kind == "line":
        assert err.line == number and f"line {number}" in message  # type: ignore[attr-defined]
    else:
        assert err.index == number and f"record {number}" in message  # type: ignore[attr-defined]


# -- the cases ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_absolute_video_path_is_refused(tmp_path: Path, loader: str) -> None:
    secret = tmp_path / "outside" / "secret.mp4"
    touch(secret)  # it exists: the loader must not reach it anyway
    root = tmp_path / "root"
    writer, field, place = LOADERS[loader]
    path = writer(root, str(secret.with_suffix("")))
    with pytest.raises(AnnotationError) as exc:
        load(loader, root)
    assert_names(exc.value, path, field, place)
    assert "is absolute" in str(exc.value) and "videos=<folder>" in str(exc.value)


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_dotdot_escape_is_refused(tmp_path: Path, loader: str) -> None:
    root = tmp_path / "root"
    touch(tmp_path / "secret.mp4")
    writer, field, place = LOADERS[loader]
    path = writer(root, "../../../secret")
    with pytest.raises(AnnotationError) as exc:
        load(loader, root)
    assert_names(exc.value, path, field, place)
    assert "outside" in str(exc.value)


def test_escape_is_refused_even_when_the_target_does_not_exist(tmp_path: Path) -> None:
    path = qvhighlights(tmp_path, "../../nowhere/at/all")
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", tmp_path)
    assert_names(exc.value, path, "vid", ("line", 1))


def test_windows_drive_and_unc_paths_are_absolute(tmp_path: Path) -> None:
    for name in ("C:\\Windows\\secret", "C:secret", "\\\\server\\share\\secret"):
        path = qvhighlights(tmp_path, name)
        with pytest.raises(AnnotationError) as exc:
            load("qvhighlights", tmp_path)
        assert_names(exc.value, path, "vid", ("line", 1))
        assert "is absolute" in str(exc.value)


def test_backslash_dotdot_is_an_escape_too(tmp_path: Path) -> None:
    path = qvhighlights(tmp_path, "..\\..\\secret")
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", tmp_path)
    assert_names(exc.value, path, "vid", ("line", 1))
    assert "leads outside the video folder" in str(exc.value)


def test_symlinked_directory_that_leads_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside / "secret.mp4")
    root = tmp_path / "root"
    (root / "videos").mkdir(parents=True)
    os.symlink(outside, root / "videos" / "link")
    path = qvhighlights(root, "link/secret")
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", root)
    assert_names(exc.value, path, "vid", ("line", 1))
    assert str(outside / "secret") in str(exc.value)


def test_symlinked_video_file_that_leads_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside / "secret.bin")
    root = tmp_path / "root"
    (root / "videos").mkdir(parents=True)
    os.symlink(outside / "secret.bin", root / "videos" / "clip.mp4")
    path = qvhighlights(root, "clip")
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", root)
    assert_names(exc.value, path, "vid", ("line", 1))


def test_dotdot_that_stays_inside_is_allowed(tmp_path: Path) -> None:
    touch(tmp_path / "videos" / "clip.mp4")
    (tmp_path / "videos" / "sub").mkdir()
    qvhighlights(tmp_path, "sub/../clip")
    [sample] = load("qvhighlights", tmp_path)
    assert os.path.realpath(sample.video) == os.path.realpath(tmp_path / "videos" / "clip.mp4")


def test_videos_kept_elsewhere_are_named_with_the_videos_parameter(tmp_path: Path) -> None:
    elsewhere = tmp_path / "disk2" / "qvh"
    touch(elsewhere / "clip.mp4")
    root = tmp_path / "root"
    qvhighlights(root, "clip")
    [sample] = load("qvhighlights", root, videos=str(elsewhere))
    assert sample.video == str(elsewhere / "clip.mp4")
    # a linked video folder chosen by the user is fine: only the annotation's part is checked
    (root / "videos").parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, root / "videos")
    [sample] = load("qvhighlights", root)
    assert sample.video == str(root / "videos" / "clip.mp4")
    # but the annotation cannot climb out of the folder given with videos=
    qvhighlights(root, "../secret")
    touch(tmp_path / "disk2" / "secret.mp4")
    with pytest.raises(AnnotationError, match="outside"):
        load("qvhighlights", root, videos=str(elsewhere))


def test_nextqa_video_map_entries_are_checked(tmp_path: Path) -> None:
    nextqa(tmp_path, "4010069381")
    touch(tmp_path / "secret.mp4")
    vmap = write_json(tmp_path / "map_vid_vidorID.json", {"4010069381": "../secret"})
    with pytest.raises(AnnotationError) as exc:
        load("nextqa", tmp_path)
    err = exc.value
    assert (err.path, err.key, err.field) == (str(vmap), "4010069381", "path")  # type: ignore[attr-defined]
    assert f"{vmap}, entry '4010069381': field 'path'" in str(err)


def test_mlvu_task_folder_from_annotation_is_checked(tmp_path: Path) -> None:
    rows = [{"video_name": "clip.mp4", "duration": 10.0, "question": "What?", "candidates": ["a", "b"], "answer": "A",
             "task_type": "../../outside", "question_id": "q0"}]  # fmt: skip
    path = write_jsonl(tmp_path / "mlvu_dev.jsonl", rows)
    with pytest.raises(AnnotationError) as exc:
        load("mlvu", tmp_path, annotations="mlvu_dev.jsonl")
    assert_names(exc.value, path, "task_type", ("line", 1))


def test_kfsbench_checks_the_paths_of_its_base_benchmark(tmp_path: Path) -> None:
    base = longvideobench(tmp_path / "LongVideoBench", "/etc/passwd")
    write_csv(tmp_path / "lvb_anno.csv", ["id", "segment_id", "scene_id", "start", "end"], [["v_0", 0, 0, "0:00:01", "0:00:02"]])
    with pytest.raises(AnnotationError) as exc:
        load("kfsbench", tmp_path)
    assert_names(exc.value, base, "video_path", ("index", 0))


def test_cli_reports_an_escaping_path_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    path = qvhighlights(tmp_path, "/etc/passwd")
    rc = main(["run", "-s", "uniform", "-d", "qvhighlights", "-D", f"root={tmp_path}", "--store", str(tmp_path / "runs.sqlite")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("frameselect: error: ") and "Traceback" not in err
    assert f"{path}, line 1: field 'vid'" in err and "is absolute" in err
