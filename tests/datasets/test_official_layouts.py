"""Loaders against the official releases: layouts, field names and the official scorers' rules.

The files are small ones written here in the official layout and field
names (no official data is copied). Expected values marked "reference" were
produced by running the official code itself on these same inputs:

- NExT-QA ``eval_mc.py`` ``accuracy_metric`` (doc-doc/NExT-QA @ 6b92588ab4496268fa1caab9414a8b998ee063c5) and
  NExT-GQA ``code/TempGQA/eval_next.py`` ``accuracy_metric`` (doc-doc/NExT-GQA @ 63772e0256ad9e34b83d6a108f1ba2041b924607),
  on the ten questions of :data:`NEXT_ROWS` with the correctness of :data:`NEXT_CORRECT`; both printed
  ``Why 100.00  How 0.00  Bef&Aft 75.00  When 100.00  Cnt 0.00  Loc 100.00  Other 100.00``.
- MLVU ``evaluation/multiple_choice_evaluation/choice_bench.py`` ``MVBench_dataset.qa_template`` and
  ``check_ans`` (JUNJIE99/MLVU @ fd060c10a43ea48a35100a22688a927b8e531199) on the four records of
  :data:`NEEDLE`: answers ``(C) 3``, ``(@) green``, ``(D) y``, ``(A) a``, ``(@) Garden``; ``check_ans``
  is False for every reply ``(A)``..``(D)`` against the two ``(@)`` answers. The same functions on the five
  records of :data:`EMPTY_TEXTS` (empty candidates, answers and a question, as the release has them) give the
  answers ``(B) There is a boat``, ``(C) ``, ``(D) ``, ``(D) ``, ``(@) `` and the ``check_ans`` results of
  :data:`EMPTY_TEXTS_CHECKS`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import frameselect.datasets
from annotation_files import touch, write_csv, write_json  # noqa: E402
from frameselect.datasets._loading import AnnotationWarning
from frameselect.datasets.mlvu import MC_TASK_FILES, UNMATCHED_ANSWER
from frameselect.evaluators.answer import accuracy_by, mc_accuracy
from frameselect.types import Sample, SampleRecord


def load(name: str, **params: Any) -> tuple[list[Sample], list[warnings.WarningMessage]]:
    ds = frameselect.datasets.create(name, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = list(ds.samples())
    return samples, list(caught)


# -- MLVU ------------------------------------------------------------------------------------------------

NEEDLE = [
    {"question": "How many cups are on the table?", "candidates": ["3", "5", "3", "7"], "answer": "3"},  # candidates repeat
    {"question": "What colour is the car?", "candidates": ["red", "blue"], "answer": "green"},  # answer not among them
    {"question": "Which letter is shown?", "candidates": ["x", "y", "z", "y"], "answer": "y"},
    {"question": "What does the man hold?", "candidates": ["a", "b", "c", "d"], "answer": "a"},
    {"question": "Where is the dog?", "candidates": ["garden", "roof"], "answer": "Garden"},  # case differs: not equal, as in the reference
]
#: reference: the letters qa_template gives for NEEDLE (the last record: '@', its comparison is exact)
NEEDLE_LETTERS = ["C", "@", "D", "A", "@"]


def mlvu_dev(root: Path) -> Path:
    """The dev set as released: MLVU/json/<n>_<task>.json for all nine tasks, videos under MLVU/video/<n>_<task>/."""
    folder = root / "MLVU" / "json"
    for name in MC_TASK_FILES:
        stem = name[: -len(".json")]
        if stem == "2_needle":
            rows = [{"video": f"needle_{i}.mp4", "duration": 400 + i, **r, "question_type": "findNeedle"} for i, r in enumerate(NEEDLE)]
        else:
            rows = [
                {"video": f"{stem}_{i}.mp4", "duration": 300, "question": f"q{i}?", "candidates": ["a", "b"], "answer": "b", "question_type": stem}
                for i in range(2)
            ]
        write_json(folder / name, rows)
        touch(*(root / "MLVU" / "video" / stem / str(r["video"]) for r in rows))
    write_json(folder / "8_sub_scene.json", [{"video": "subPlot_1.mp4", "duration": 500, "question": "Describe.", "answer": "...", "scoring_points": []}])
    write_json(folder / "9_summary.json", [{"video": "summary_1.mp4", "duration": 500, "question": "Summarise.", "answer": "..."}])
    return folder


def test_mlvu_dev_loads_whole(tmp_path: Path) -> None:
    mlvu_dev(tmp_path)
    samples, caught = load("mlvu", root=str(tmp_path))
    assert len(samples) == 6 * 2 + len(NEEDLE)  # every multiple-choice record, none of the open-ended ones
    needle = [s for s in samples if s.metadata["task_type"] == "needle"]
    assert [s.id for s in needle] == [f"needle/{i}" for i in range(len(NEEDLE))]  # index-based ids, none skipped
    assert [s.answer for s in needle] == NEEDLE_LETTERS
    assert [s.id for s in samples if s.metadata["task_type"] == "plotQA"] == ["plotQA/0", "plotQA/1"]
    assert needle[1].metadata["answer_text"] == "green" and "answer_text" not in needle[0].metadata
    assert needle[0].video == str(tmp_path / "MLVU" / "video" / "2_needle" / "needle_0.mp4")
    assert len(caught) == 1 and issubclass(caught[0].category, AnnotationWarning)
    message = str(caught[0].message)
    assert "2 question(s)" in message and "needle/1" in message and "needle/4" in message and "2_needle.json, record 1" in message


def test_mlvu_unmatched_answer_always_scores_wrong(tmp_path: Path) -> None:
    mlvu_dev(tmp_path)
    samples, _ = load("mlvu", root=str(tmp_path))
    unmatched = next(s for s in samples if s.id == "needle/1")
    assert unmatched.answer == UNMATCHED_ANSWER == "@"
    # reference: check_ans is False for every reply against "(@) green"
    replies = ["(A) red", "(B) blue", "A", "B", "C", "@", "(@)", "green"]
    assert [mc_accuracy(r, unmatched.answer, len(unmatched.query.options)) for r in replies] == [0.0] * len(replies)
    # the others score as usual
    first = next(s for s in samples if s.id == "needle/0")
    assert [mc_accuracy(r, first.answer, 4) for r in ("(A) 3", "(C) 3", "C")] == [0.0, 1.0, 1.0]


def test_mlvu_ids_stay_put_when_an_answer_is_fixed(tmp_path: Path) -> None:
    folder = mlvu_dev(tmp_path)
    before, _ = load("mlvu", root=str(tmp_path))
    fixed = [dict(r) for r in json.loads((folder / "2_needle.json").read_text())]
    fixed[1]["answer"] = "blue"
    write_json(folder / "2_needle.json", fixed)
    after, caught = load("mlvu", root=str(tmp_path))
    assert [s.id for s in after] == [s.id for s in before]
    assert next(s for s in after if s.id == "needle/1").answer == "B"
    assert len(caught) == 1 and "1 question(s)" in str(caught[0].message)


#: the release's empty texts, reproduced in records written here: an empty candidate beside the answer
#: (1_plotQA.json record 23), an empty answer naming an empty candidate in the middle or at the end (3_ego.json
#: records 119 and 313), an empty question with four empty candidates and an empty answer (7_topic_reasoning.json
#: record 26); the last record has an empty answer and no empty candidate
EMPTY_TEXTS = [
    {"question": "Is there a boat in the video?", "candidates": ["", "There is a boat", "There is no boat", ""], "answer": "There is a boat"},
    {"question": "Where was the cup before I took it?", "candidates": ["On the table", "In the sink", "", "On the floor"], "answer": ""},
    {"question": "How many chairs did I see?", "candidates": ["1", "4", "6", ""], "answer": ""},
    {"question": "", "candidates": ["", "", "", ""], "answer": ""},
    {"question": "What colour is the door?", "candidates": ["red", "blue"], "answer": ""},
]
EMPTY_TEXTS_REPLIES = ["(A)", "(B)", "(C)", "(D)", "B", "D"]
#: reference: check_ans(reply, gt) for each record of EMPTY_TEXTS (rows) and each of EMPTY_TEXTS_REPLIES (columns)
EMPTY_TEXTS_CHECKS = [
    [0, 1, 0, 0, 1, 0],
    [0, 0, 1, 0, 0, 0],
    [0, 0, 0, 1, 0, 1],
    [0, 0, 0, 1, 0, 1],
    [0, 0, 0, 0, 0, 0],
]


def test_mlvu_empty_texts_load_and_score_as_choice_bench(tmp_path: Path) -> None:
    rows = [{"video": f"ego_{i}.mp4", "duration": 375.5, **r, "question_type": "ego"} for i, r in enumerate(EMPTY_TEXTS)]
    write_json(tmp_path / "MLVU" / "json" / "3_ego.json", rows)
    touch(*(tmp_path / "MLVU" / "video" / "3_ego" / f"ego_{i}.mp4" for i in range(len(rows))))
    samples, caught = load("mlvu", root=str(tmp_path))
    assert [s.id for s in samples] == [f"ego/{i}" for i in range(len(EMPTY_TEXTS))]  # every record, in file order
    assert [s.query.options for s in samples] == [tuple(r["candidates"]) for r in EMPTY_TEXTS]  # empty options kept at their index
    assert [s.query.text for s in samples] == [r["question"] for r in EMPTY_TEXTS]
    assert [s.answer for s in samples] == ["B", "C", "D", "D", UNMATCHED_ANSWER]
    # the reference's verdicts, through our scorer with the reference's extraction (the letter before the first ")")
    got = [[int(mc_accuracy(r, s.answer, len(s.query.options), extraction="lmms_eval_paren")) for r in EMPTY_TEXTS_REPLIES] for s in samples]
    assert got == EMPTY_TEXTS_CHECKS
    assert len(caught) == 1 and "1 question(s)" in str(caught[0].message) and "ego/4" in str(caught[0].message)  # only the unmatched one


def test_mlvu_empty_texts_in_lmms_eval_copy(tmp_path: Path) -> None:
    """The copy lmms-eval reads keeps the release's empty candidates too; its answer is a letter."""
    row = {"video_name": "movie_1.mp4", "duration": 795, "question": "Is there a boat in the video?", "candidates": EMPTY_TEXTS[0]["candidates"],
           "answer": "(B)", "task_type": "plotQA", "question_id": "PQA_23"}  # fmt: skip
    write_json(tmp_path / "mlvu_dev.json", [row])
    touch(tmp_path / "video" / "plotQA" / "movie_1.mp4")
    [sample], _ = load("mlvu", root=str(tmp_path), annotations="mlvu_dev.json")
    assert (sample.id, sample.answer, sample.query.options) == ("PQA_23", "B", ("", "There is a boat", "There is no boat", ""))


# -- NExT-QA / NExT-GQA ---------------------------------------------------------------------------------

NEXT_HEADER = ["frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
NEXT_ROWS = [("1001", 1, "CW"), ("1001", 2, "CH"), ("1002", 3, "TN"), ("1002", 4, "TP"), ("1003", 5, "TP"),
             ("1003", 6, "TC"), ("1004", 7, "DC"), ("1004", 8, "DL"), ("1005", 9, "DO"), ("1005", 10, "TN")]  # fmt: skip
NEXT_CORRECT = {"1001_1": 1, "1001_2": 0, "1002_3": 0, "1002_4": 1, "1003_5": 1, "1003_6": 1, "1004_7": 0, "1004_8": 1, "1005_9": 1, "1005_10": 1}
#: reference: eval_mc.py / eval_next.py per-type accuracy on these inputs (percent)
OFFICIAL_BY_TYPE = {"CW": 100.0, "CH": 0.0, "TN": 75.0, "TC": 100.0, "DC": 0.0, "DL": 100.0, "DO": 100.0}


def breakdown(samples: Sequence[Sample]) -> dict[str, float]:
    """Per-kind accuracy (percent) of replies right exactly where NEXT_CORRECT says, via mc_accuracy and accuracy_by."""
    records = []
    for s in samples:
        assert s.answer is not None
        reply = s.answer if NEXT_CORRECT[s.id] else ("B" if s.answer == "A" else "A")
        records.append(SampleRecord(s.id, {"mc_accuracy": mc_accuracy(reply, s.answer, 5)}, metadata=s.metadata))
    return {k: round(100 * v, 2) for k, v in accuracy_by(records, "kind").items()}


def test_nextqa_breakdown_counts_tp_as_tn(tmp_path: Path) -> None:
    rows = [[v, 100, 640, 480, f"question {q}", 0, q, t, "a", "b", "c", "d", "e"] for v, q, t in NEXT_ROWS]
    write_csv(tmp_path / "dataset" / "nextqa" / "val.csv", ["video", *NEXT_HEADER], rows)
    write_json(tmp_path / "dataset" / "nextqa" / "map_vid_vidorID.json", {v: f"0000/{v}" for v, _, _ in NEXT_ROWS})
    touch(*(tmp_path / "NExTVideo" / "0000" / f"{v}.mp4" for v, _, _ in NEXT_ROWS))
    samples, caught = load("nextqa", root=str(tmp_path))
    assert caught == []
    assert [(s.metadata["type"], s.metadata["kind"]) for s in samples if s.metadata["type"].startswith("T")] == [
        ("TN", "TN"),
        ("TP", "TN"),
        ("TP", "TN"),
        ("TC", "TC"),
        ("TN", "TN"),
    ]
    assert breakdown(samples) == OFFICIAL_BY_TYPE


def test_nextgqa_breakdown_counts_tp_as_tn(tmp_path: Path) -> None:
    rows = [[v, 100, 640, 480, f"question {q}", "c", q, t, "a", "b", "c", "d", "e"] for v, q, t in NEXT_ROWS]
    write_csv(tmp_path / "datasets" / "nextgqa" / "val.csv", ["video_id", *NEXT_HEADER], rows)
    write_json(tmp_path / "datasets" / "nextgqa" / "gsub_val.json", {"1002": {"duration": 30, "location": {"4": [[1.0, 4.5]]}, "fps": 30}})
    touch(*(tmp_path / "videos" / f"{v}.mp4" for v, _, _ in NEXT_ROWS))
    samples, _ = load("nextgqa", root=str(tmp_path), annotations="datasets/nextgqa/val.csv")
    tp = next(s for s in samples if s.id == "1002_4")
    assert (tp.metadata["type"], tp.metadata["kind"], tp.answer) == ("TP", "TN", "C")
    assert breakdown(samples) == OFFICIAL_BY_TYPE


# -- LV-Haystack: T*'s video layout ------------------------------------------------------------------------

LVH_ROW = {
    "video_id": "38737402-19bd-4689-9e74-3af391b15feb",
    "vclip_id": "6338b73e-393f-4d37-b278-68703b45908c",
    "question": "What nail did I pull out?",
    "options": {"A": "The brown nail.", "B": "The silver nail.", "C": "The bent nail.", "D": "The rusty nail."},
    "answer": "B",
    "frame_indexes_video": [6300],
    "video_metadata": {"frame_rate": 30.0, "video_duration": 480.0},
}


@pytest.mark.parametrize("folder", ["ego4d_data/ego4d_data/v1/256p", "Datasets/ego4d_data/ego4d_data/v1/256p"])
def test_lvhaystack_finds_videos_in_the_tstar_layout(tmp_path: Path, folder: str) -> None:
    path = tmp_path / "data" / "test.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(LVH_ROW) + "\n", encoding="utf-8")
    video = tmp_path / folder / f"{LVH_ROW['video_id']}.mp4"
    touch(video)
    [sample], caught = load("lvhaystack", root=str(tmp_path))
    assert caught == [] and sample.video == str(video)


# -- Video-MME: the docstring says what is read ------------------------------------------------------------


def test_videomme_docstring_names_the_huggingface_table_and_the_results_template() -> None:
    import frameselect.datasets.videomme as videomme

    doc = videomme.__doc__ or ""
    assert "publishes no annotation" in doc and "lmms-lab/Video-MME" in doc and "results template" in doc.replace("*results* template", "results template")
