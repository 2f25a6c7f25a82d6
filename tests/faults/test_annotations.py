"""Malformed annotation files: each gets an ``AnnotationError`` naming the file, the record and the field.

One test per fault. Each writes its own bad file into ``tmp_path`` in the
benchmark's own layout and field names, and checks the error type, the
place (file, line or record, field) and the problem named. The last tests
check that the command line shows these errors as one clean message.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import frameselect.datasets
from annotation_files import touch, write_csv, write_json, write_jsonl  # noqa: E402
from frameselect.datasets._loading import MissingVideoWarning
from frameselect.errors import AnnotationError, DatasetConfigError, DatasetNotFoundError, FrameselectError
from frameselect.types import Span

# -- writing files ---------------------------------------------------------------------------------------


def load(name: str, root: Path, **params: Any) -> list[Any]:
    return list(frameselect.datasets.create(name, root=str(root), **params).samples())


def fails(
    name: str, root: Path, path: Path, field: str | None, *, line: int | None = None, index: int | None = None, key: str | None = None, **params: Any
) -> str:
    """Load, expect an AnnotationError at exactly this place, and return its message."""
    with pytest.raises(AnnotationError) as exc:
        load(name, root, **params)
    err = exc.value
    assert (err.path, err.line, err.index, err.key, err.field) == (str(path), line, index, key, field)  # type: ignore[attr-defined]
    message = str(err)
    assert message.startswith(str(path))
    if line is not None:
        assert f"line {line}" in message
    if index is not None:
        assert f"record {index}" in message
    if key is not None:
        assert f"entry {key!r}" in message
    if field is not None:
        assert f"field {field!r}" in message
    return message


QVH = {"qid": 1, "query": "a dog runs on the beach", "duration": 126, "vid": "clip", "relevant_windows": [[0, 16]]}
NEXTQA_HEADER = ["video", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
NEXTQA_ROW = ["4010069381", 369, 640, 480, "how do the two man play the instrument", 0, 6, "CH", "roll the handle", "tap their feet", "strum", "hit", "pat"]
LVH = {
    "video_id": "38737402-19bd-4689-9e74-3af391b15feb",
    "vclip_id": "6338b73e-393f-4d37-b278-68703b45908c",
    "question": "What nail did I pull out?",
    "options": {"A": "The brown nail.", "B": "The silver nail.", "C": "The bent nail.", "D": "The rusty nail."},
    "answer": "B",
    "frame_indexes_video": [6300],
    "video_metadata": {"frame_rate": 30.0, "video_duration": 480.0, "vclip_interval_in_video": [200.0, 260.0], "video_frame_count": 14400},
}
VMME = {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "History", "url": "u", "videoID": "fFjv93ACGo8",
        "question_id": "001-1", "task_type": "Counting Problem", "question": "Which kind of decoration has the largest number?",
        "options": ["A. Apples.", "B. Candles.", "C. Berries.", "D. Same."], "answer": "C"}  # fmt: skip


# -- encodings and binary files --------------------------------------------------------------------------


def test_non_utf8_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "highlight_val_release.jsonl"
    good = json.dumps(QVH).encode()
    path.write_bytes(good + b"\n" + json.dumps(dict(QVH, qid=2, query="caf\u00e9")).encode().replace(b"\\u00e9", b"\xe9") + b"\n")
    message = fails("qvhighlights", tmp_path, path, None, line=2)
    assert "not UTF-8 text (byte 0xe9" in message


def test_non_utf8_csv_names_the_line(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, [NEXTQA_ROW, NEXTQA_ROW])
    path.write_bytes(path.read_bytes().replace(b"strum", b"str\xfcm", 2))
    assert "not UTF-8 text" in fails("nextqa", tmp_path, path, None, line=2)


def test_binary_file_as_json_annotations(tmp_path: Path) -> None:
    path = tmp_path / "lvb_val.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")
    assert "not UTF-8 text (byte 0x89 at offset 0)" in fails("longvideobench", tmp_path, path, None, line=1)


def test_nul_bytes_in_a_text_file(tmp_path: Path) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_bytes(b"AO8RW 0.0 6.9##a person opens a door.\nAO8RW 1.0\x00\x00 2.0##x\n")
    assert "binary data (a NUL byte)" in fails("charades_sta", tmp_path, path, None, line=2)


def test_nul_bytes_in_a_csv_file(tmp_path: Path) -> None:
    path = tmp_path / "lvb_anno.csv"
    path.write_bytes(b"id,segment_id,scene_id,start,end\nv_0,0,0,0:00:01\x00,0:00:02\n")
    assert "binary data" in fails("kfsbench", tmp_path, path, None, line=2)


def test_corrupt_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "videomme" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PAR1 this is not a parquet table PAR1")
    assert "not a readable Parquet table" in fails("videomme", tmp_path, path, None)


def test_a_folder_given_as_annotation_file(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.mkdir()
    assert "cannot be read: Is a directory" in fails("qvhighlights", tmp_path, path, None, annotations="questions.jsonl")


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, [NEXTQA_ROW])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # as spreadsheet programs export CSV
    touch(tmp_path / "NExTVideo" / "4010069381.mp4")
    [sample] = load("nextqa", tmp_path)
    assert (sample.id, sample.answer) == ("4010069381_6", "A")


# -- empty files: an empty dataset is an error -----------------------------------------------------------


def test_empty_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "highlight_val_release.jsonl"
    path.write_text("", encoding="utf-8")
    assert "holds no records" in fails("qvhighlights", tmp_path, path, None)


def test_blank_lines_only_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "data" / "test.jsonl"
    path.parent.mkdir()
    path.write_text("\n  \n\n", encoding="utf-8")
    assert "holds no records" in fails("lvhaystack", tmp_path, path, None)


def test_empty_txt(tmp_path: Path) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_text("\n", encoding="utf-8")
    assert "holds no records" in fails("charades_sta", tmp_path, path, None)


def test_empty_json_list(tmp_path: Path) -> None:
    path = write_json(tmp_path / "MLVU" / "json" / "2_needle.json", [])
    assert "holds no records" in fails("mlvu", tmp_path, path, None)


def test_header_only_csv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, [])
    assert "holds no records" in fails("nextqa", tmp_path, path, None)


def test_zero_byte_csv(tmp_path: Path) -> None:
    path = tmp_path / "vidmme_anno.csv"
    path.write_bytes(b"")
    assert "holds no records" in fails("kfsbench", tmp_path, path, None, split="videomme")


def test_no_video_for_any_sample(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "highlight_val_release.jsonl", [QVH, dict(QVH, qid=2)])
    with pytest.raises(DatasetNotFoundError) as exc:
        load("qvhighlights", tmp_path)
    message = str(exc.value)
    assert message.startswith("qvhighlights: no video found for any of its 2 sample(s) (looked in ")
    assert "1 (clip); 2 (clip)" in message and message.endswith("Download the videos or pass videos=<folder>.")


# -- evidence spans and durations ------------------------------------------------------------------------


def test_negative_span(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [dict(QVH, relevant_windows=[[-5, 3]])])
    assert "starts before the video" in fails("qvhighlights", tmp_path, path, "relevant_windows", line=1)


def test_inverted_span(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [QVH, dict(QVH, qid=2, relevant_windows=[[10, 4]])])
    assert "span end 4.0 is before its start 10.0" in fails("qvhighlights", tmp_path, path, "relevant_windows", line=2)


def test_non_finite_span(tmp_path: Path) -> None:
    path = tmp_path / "highlight_val_release.jsonl"
    path.write_text(json.dumps(QVH) + '\n{"qid": 2, "query": "q", "duration": 126, "vid": "clip", "relevant_windows": [[0, Infinity]]}\n', encoding="utf-8")
    assert "not a finite number: inf" in fails("qvhighlights", tmp_path, path, "relevant_windows", line=2)


def test_span_past_the_end(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [dict(QVH, relevant_windows=[[120, 140]])])
    assert "runs past the end of the video (126.0 s)" in fails("qvhighlights", tmp_path, path, "relevant_windows", line=1)


def test_span_past_the_end_in_nextgqa_grounding(tmp_path: Path) -> None:
    write_csv(tmp_path / "val.csv", ["video_id", *NEXTQA_HEADER[1:]], [[*NEXTQA_ROW[:5], "roll the handle", *NEXTQA_ROW[6:]]])
    path = write_json(tmp_path / "gsub_val.json", {"4010069381": {"duration": 34, "location": {"6": [[1.2, 5.8], [30.0, 40.0]]}, "fps": 29.97}})
    assert "runs past the end of the video (34.0 s)" in fails("nextgqa", tmp_path, path, "location.6", key="4010069381")


def test_released_rounding_within_a_second_is_kept(tmp_path: Path) -> None:
    """NExT-GQA's gsub_test.json starts 36 spans at -0.1/-0.2 s and gsub_val.json ends three up to 0.5 s past: kept as released."""
    write_csv(tmp_path / "val.csv", ["video_id", *NEXTQA_HEADER[1:]], [[*NEXTQA_ROW[:5], "roll the handle", *NEXTQA_ROW[6:]]])
    write_json(tmp_path / "gsub_val.json", {"4010069381": {"duration": 21, "location": {"6": [[-0.1, 2.0], [9.2, 21.5]]}, "fps": 29.97}})
    touch(tmp_path / "NExTVideo" / "4010069381.mp4")
    [sample] = load("nextgqa", tmp_path)
    assert sample.evidence == (Span(-0.1, 2.0), Span(9.2, 21.5))


def test_negative_duration(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [dict(QVH, duration=-126, relevant_windows=[[0, 2]])])
    assert "a duration cannot be negative, got -126" in fails("qvhighlights", tmp_path, path, "duration", line=1)


def test_negative_duration_in_longvideobench(tmp_path: Path) -> None:
    row = {"video_id": "v", "question": "q?", "candidates": ["a", "b"], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
           "video_path": "v.mp4", "duration_group": 600, "duration": -190.16}  # fmt: skip
    path = write_json(tmp_path / "lvb_val.json", [row])
    touch(tmp_path / "videos" / "v.mp4")
    assert "cannot be negative" in fails("longvideobench", tmp_path, path, "duration", index=0)


def test_charades_negative_start(tmp_path: Path) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_text("AO8RW -3.0 6.9##a person is putting a book on a shelf.\n", encoding="utf-8")
    assert "starts before the video" in fails("charades_sta", tmp_path, path, "start", line=1)


def test_charades_moment_after_the_end_of_its_video(tmp_path: Path) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_text("AO8RW 40.0 46.9##a person is putting a book on a shelf.\n", encoding="utf-8")
    write_csv(tmp_path / "Charades_v1_test.csv", ["id", "length"], [["AO8RW", 30.5]])
    touch(tmp_path / "Charades_v1_480" / "AO8RW.mp4")
    assert "starts after the end of the video (30.5 s)" in fails("charades_sta", tmp_path, path, "start", line=1)


# -- KFS-Bench times -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "field"), [("-0:00:05", "start"), ("0:00:nan", "start"), ("0:00:75", "start"), ("+0:01:00", "start"), ("0:1e1", "start")])
def test_kfsbench_bad_time(tmp_path: Path, value: str, field: str) -> None:
    path = write_csv(
        tmp_path / "lvb_anno.csv", ["id", "segment_id", "scene_id", "start", "end"], [["v_0", 0, 0, "0:00:01", "0:00:02"], ["v_0", 1, 0, value, "0:00:09"]]
    )
    message = fails("kfsbench", tmp_path, path, field, line=3)
    assert repr(value) in message


def test_kfsbench_segment_past_the_end_of_its_video(tmp_path: Path) -> None:
    row = {"video_id": "v", "question": "q?", "candidates": ["a", "b"], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
           "video_path": "v.mp4", "duration_group": 15, "duration": 12.0}  # fmt: skip
    write_json(tmp_path / "LongVideoBench" / "lvb_val.json", [row])
    touch(tmp_path / "LongVideoBench" / "videos" / "v.mp4")
    path = write_csv(
        tmp_path / "lvb_anno.csv", ["id", "segment_id", "scene_id", "start", "end"], [["v_0", 0, 0, "0:00:01", "0:00:02"], ["v_0", 1, 1, "0:00:20", "0:00:25"]]
    )
    assert "runs past the end of the video (12.0 s)" in fails("kfsbench", tmp_path, path, "end", line=3)


# -- wrong types -----------------------------------------------------------------------------------------


def test_lvhaystack_integer_where_an_interval_is_expected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data" / "test.jsonl", [dict(LVH, video_metadata={**LVH["video_metadata"], "vclip_interval_in_video": 200})])  # type: ignore[dict-item]
    assert "expected a [start, end] pair, got 200" in fails("lvhaystack", tmp_path, path, "video_metadata.vclip_interval_in_video", line=1)


def test_lvhaystack_keyframe_past_the_end(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data" / "test.jsonl", [dict(LVH, frame_indexes_video=[6300, 14400])])
    assert "past the end of the video (14400 frames)" in fails("lvhaystack", tmp_path, path, "frame_indexes_video", line=1)


def test_lvhaystack_negative_keyframe(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data" / "test.jsonl", [dict(LVH, frame_indexes_video=[-30])])
    assert "negative frame index" in fails("lvhaystack", tmp_path, path, "frame_indexes_video", line=1)


def test_string_where_a_list_of_spans_is_expected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [dict(QVH, relevant_windows="0-16")])
    assert "expected a list of [start, end] pairs" in fails("qvhighlights", tmp_path, path, "relevant_windows", line=1)


def test_object_where_options_are_expected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "videomme" / "test.jsonl", [dict(VMME, options={"A": "Apples."})])
    assert "expected a list of option texts" in fails("videomme", tmp_path, path, "options", line=1)


# -- EgoSchema: the error names the file that is wrong ----------------------------------------------------

EGO_UID = "001934bb-81bd-4cd8-a574-0472ef3f6678"


def ego(root: Path, answers: Any) -> Path:
    write_json(
        root / "questions.json", [{"q_uid": EGO_UID, "google_drive_id": "d", "question": "What is c doing?", **{f"option {i}": f"o{i}" for i in range(5)}}]
    )
    touch(root / "videos" / f"{EGO_UID}.mp4")
    return write_json(root / "subset_answers.json", answers)


def test_egoschema_answer_not_a_number_names_subset_answers(tmp_path: Path) -> None:
    path = ego(tmp_path, {EGO_UID: "three"})
    assert "not a number: 'three'" in fails("egoschema", tmp_path, path, "answer", key=EGO_UID)


def test_egoschema_answer_out_of_range_names_subset_answers(tmp_path: Path) -> None:
    path = ego(tmp_path, {EGO_UID: 7})
    assert "outside the 5 options" in fails("egoschema", tmp_path, path, "answer", key=EGO_UID)


def test_egoschema_answers_not_an_object(tmp_path: Path) -> None:
    path = ego(tmp_path, [3])
    assert "expected a JSON object" in fails("egoschema", tmp_path, path, None)


def test_egoschema_empty_option_cell_names_questions(tmp_path: Path) -> None:
    ego(tmp_path, {EGO_UID: 1})
    path = write_json(
        tmp_path / "questions.json", [{"q_uid": EGO_UID, "question": "What is c doing?", **{f"option {i}": f"o{i}" for i in range(4)}, "option 4": " "}]
    )
    assert "empty" in fails("egoschema", tmp_path, path, "option 4", index=0)


# -- empty question and option cells ---------------------------------------------------------------------


def test_empty_question_cell_in_csv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, [NEXTQA_ROW, [*NEXTQA_ROW[:4], "", *NEXTQA_ROW[5:]]])
    touch(tmp_path / "NExTVideo" / "4010069381.mp4")
    assert fails("nextqa", tmp_path, path, "question", line=3).endswith("empty (fix the annotation file, or pass annotations= pointing to an intact copy)")


def test_empty_option_cell_in_csv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, [[*NEXTQA_ROW[:11], "", NEXTQA_ROW[12]]])
    touch(tmp_path / "NExTVideo" / "4010069381.mp4")
    assert "empty" in fails("nextqa", tmp_path, path, "a3", line=2)


def test_empty_option_in_a_list(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "videomme" / "test.jsonl", [dict(VMME, options=["A. Apples.", "B. ", "C. Berries.", "D. Same."])])
    assert "empty" in fails("videomme", tmp_path, path, "options[1]", line=1)


# MLVU's release leaves candidates, answers and a question empty, and its scorer reads them as they are:
# those load (tests/datasets/test_official_layouts.py); a candidate that is not text still fails.


def test_non_text_candidate_in_mlvu(tmp_path: Path) -> None:
    row = {"video": "m.mp4", "duration": 100, "question": "What?", "candidates": ["Yellow", None], "answer": "Yellow", "question_type": "plotQA"}
    path = write_json(tmp_path / "MLVU" / "json" / "1_plotQA.json", [row])
    assert "expected option text, got NoneType None" in fails("mlvu", tmp_path, path, "candidates[1]", index=0)


def test_no_candidates_in_mlvu(tmp_path: Path) -> None:
    row = {"video": "m.mp4", "duration": 100, "question": "What?", "candidates": [], "answer": "", "question_type": "plotQA"}
    path = write_json(tmp_path / "MLVU" / "json" / "1_plotQA.json", [row])
    assert "expected a non-empty list of option texts" in fails("mlvu", tmp_path, path, "candidates", index=0)


def test_non_text_answer_in_mlvu(tmp_path: Path) -> None:
    row = {"video": "m.mp4", "duration": 100, "question": "What?", "candidates": ["a", ""], "answer": ["a"], "question_type": "plotQA"}
    path = write_json(tmp_path / "MLVU" / "json" / "1_plotQA.json", [row])
    assert "expected text, got list" in fails("mlvu", tmp_path, path, "answer", index=0)


def test_empty_question_in_json(tmp_path: Path) -> None:
    row = {"video_id": "v", "question": "  ", "candidates": ["a", "b"], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
           "video_path": "v.mp4", "duration_group": 600, "duration": 190.16}  # fmt: skip
    path = write_json(tmp_path / "lvb_val.json", [row])
    assert "empty" in fails("longvideobench", tmp_path, path, "question", index=0)


def test_empty_candidate_in_longvideobench(tmp_path: Path) -> None:
    row = {"video_id": "v", "question": "q?", "candidates": ["a", ""], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
           "video_path": "v.mp4", "duration_group": 600, "duration": 190.16}  # fmt: skip
    path = write_json(tmp_path / "lvb_val.json", [row])
    assert "empty" in fails("longvideobench", tmp_path, path, "candidates[1]", index=0)


def test_gap_in_lettered_options(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data" / "test.jsonl", [dict(LVH, options={"A": "x", "B": "", "C": "z"})])
    assert "empty, but options ['C'] follow it" in fails("lvhaystack", tmp_path, path, "options.B", line=1)


def test_empty_sentence_in_txt(tmp_path: Path) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_text("AO8RW 0.0 6.9##   \n", encoding="utf-8")
    fails("charades_sta", tmp_path, path, "sentence", line=1)


# -- the command line shows these as one clean message ----------------------------------------------------


def test_every_dataset_error_is_a_frameselect_error() -> None:
    for kind in (AnnotationError, DatasetNotFoundError, DatasetConfigError):
        assert issubclass(kind, FrameselectError)
    assert issubclass(DatasetNotFoundError, FileNotFoundError) and issubclass(DatasetConfigError, ValueError)


@pytest.mark.parametrize("case", ["non_utf8", "empty", "missing_file", "unknown_split", "no_videos"])
def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    from frameselect.cli import main

    path = tmp_path / "highlight_val_release.jsonl"
    params = [f"root={tmp_path}"]
    expected = str(path)
    if case == "non_utf8":
        path.write_bytes(b'{"qid": 1, "query": "caf\xe9"}\n')
        expected = f"{path}, line 1: not UTF-8 text"
    elif case == "empty":
        path.write_bytes(b"")
        expected = f"{path}: holds no records"
    elif case == "no_videos":
        path.write_text(json.dumps(QVH) + "\n", encoding="utf-8")
        expected = "qvhighlights: no video found for any of its 1 sample(s)"
    elif case == "missing_file":
        expected = f"qvhighlights: no annotation file for split 'val' under {tmp_path}"
    else:
        params.append("split=dev")
        expected = "qvhighlights: unknown split 'dev'"
    argv = ["run", "-s", "uniform", "-d", "qvhighlights", "--store", str(tmp_path / "runs.sqlite")]
    for p in params:
        argv += ["-D", p]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("frameselect: error: ") and expected in err and err.count("\n") == 1, err
    assert "Traceback" not in err


# -- any malformed value: an AnnotationError or a clean load, never another exception ---------------------

LVB = {"video_id": "v", "question": "q?", "candidates": ["a", "b"], "correct_choice": 0, "question_category": "TOS", "id": "v_0",
       "video_path": "v.mp4", "duration_group": 600, "duration": 100.0, "position": [1, 2]}  # fmt: skip
MLVU = {"video": "m.mp4", "duration": 100, "question": "What?", "candidates": ["a", "b"], "answer": "a", "question_type": "plotQA"}
FUZZED: dict[str, tuple[dict[str, Any], str]] = {
    "qvhighlights": (dict(QVH, relevant_clip_ids=[0, 1], saliency_scores=[[1, 2, 3], [0, 1, 2]]), "highlight_val_release.jsonl"),
    "lvhaystack": (LVH, "data/test.jsonl"),
    "videomme": (VMME, "videomme/test.jsonl"),
    "longvideobench": (LVB, "lvb_val.jsonl"),
    "mlvu": (MLVU, "mlvu.jsonl"),
}


def _json_values() -> Any:
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ABCDE"), inner, max_size=3), max_leaves=6)


@pytest.mark.parametrize("loader", sorted(FUZZED))
def test_fuzzed_field_values_raise_only_annotation_errors(tmp_path_factory: pytest.TempPathFactory, loader: str) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    record, relative = FUZZED[loader]

    def nested(rec: dict[str, Any]) -> list[str]:
        return [k for k, v in rec.items() if isinstance(v, dict)]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True)
    @given(field=st.sampled_from(sorted(record) + [f"{k}.{j}" for k in nested(record) for j in record[k]]), value=_json_values())
    def check(field: str, value: Any) -> None:
        root = tmp_path_factory.mktemp("fuzz")
        bad = json.loads(json.dumps(record))
        head, _, tail = field.partition(".")
        if tail:
            bad[head][tail] = value
        else:
            bad[head] = value
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(bad, allow_nan=True) + "\n", encoding="utf-8")
        try:
            load(loader, root, **({"annotations": relative} if loader == "mlvu" else {}))
        except AnnotationError as exc:
            assert str(exc).startswith(str(path))
        except DatasetNotFoundError as exc:  # a valid record whose video is not there
            assert "no video found for any of its 1 sample(s)" in str(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingVideoWarning)
        check()
