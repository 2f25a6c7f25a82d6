"""Benchmark annotation loaders: fixtures written in each benchmark's exact schema.

Each test writes small annotation files as the benchmark (or lmms-eval's copy)
ships them into tmp_path, plus empty placeholder videos (the loaders only check
that a video exists) and one real tiny video, then checks the exact samples,
the single missing-video warning and the AnnotationError for malformed input.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frameselect.datasets
import frameselect.registry
import frameselect.testing
from annotation_files import touch, write_csv, write_json, write_jsonl  # noqa: E402
from frameselect.datasets._loading import AnnotationDataset, AnnotationWarning, MissingVideoWarning, find_video, split_option_block, strip_option_letters
from frameselect.errors import AnnotationError
from frameselect.parts import part_config
from frameselect.registry import revive
from frameselect.testing import parametrize_with_checks, register_example, registry_cases
from frameselect.types import Query, Sample, Span

#: every registered loader of annotation files (read from the registry: a new loader is tested the day it is registered)
LOADERS = tuple(n for n in frameselect.datasets.names() if issubclass(frameselect.datasets.get(n), AnnotationDataset))  # type: ignore[arg-type]


# -- writing fixtures -------------------------------------------------------------


def load(name: str, **params: Any) -> tuple[list[Sample], list[warnings.WarningMessage]]:
    """Create a registered loader, load it, and return its samples and the warnings raised."""
    ds = frameselect.datasets.create(name, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = list(ds.samples())
    return samples, list(caught)


def by_id(samples: Iterable[Sample]) -> dict[str, Sample]:
    return {s.id: s for s in samples}


def assert_error(exc: pytest.ExceptionInfo[AnnotationError], path: Path, field: str | None, *, line: int | None = None, index: int | None = None) -> None:
    err = exc.value
    assert err.path == str(path)  # type: ignore[attr-defined]
    assert err.field == field  # type: ignore[attr-defined]
    assert err.line == line  # type: ignore[attr-defined]
    assert err.index == index  # type: ignore[attr-defined]
    message = str(err)
    assert str(path) in message
    if line is not None:
        assert f"line {line}" in message
    if index is not None:
        assert f"record {index}" in message
    if field is not None:
        assert repr(field) in message


# -- Video-MME -----------------------------------------------------------------------

VMME_ROWS = [
    {
        "video_id": "001",
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
        "videoID": "fFjv93ACGo8",
        "question_id": "001-1",
        "task_type": "Counting Problem",
        "question": "Which kind of decoration has the largest number?",
        "options": ["A. Apples.", "B. Candles.", "C. Berries.", "D. The three kinds are of the same number."],
        "answer": "C",
    },
    {
        "video_id": "001",
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
        "videoID": "fFjv93ACGo8",
        "question_id": "001-2",
        "task_type": "Information Synopsis",
        "question": "What is the genre of this video?",
        "options": ["A. It is a news report.", "B. It is a documentary.", "C. It is a travel vlog.", "D. It is a science video."],
        "answer": "B",
    },
    {
        "video_id": "601",
        "duration": "long",
        "domain": "Sports Competition",
        "sub_category": "Football",
        "url": "https://www.youtube.com/watch?v=noVideoHere",
        "videoID": "noVideoHere",
        "question_id": "601-1",
        "task_type": "Temporal Reasoning",
        "question": "Who scores first?",
        "options": ["A. Red.", "B. Blue.", "C. Nobody.", "D. Both."],
        "answer": "A",
    },
]


def test_videomme_flat_rows(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "videomme" / "test.jsonl", VMME_ROWS)
    touch(tmp_path / "data" / "fFjv93ACGo8.mp4")
    samples, caught = load("videomme", root=str(tmp_path))
    assert samples == [
        Sample(
            "001-1",
            str(tmp_path / "data" / "fFjv93ACGo8.mp4"),
            Query("Which kind of decoration has the largest number?", ("Apples.", "Candles.", "Berries.", "The three kinds are of the same number.")),
            "C",
            (),
            {
                "video_id": "001",
                "videoID": "fFjv93ACGo8",
                "duration": "short",
                "domain": "Knowledge",
                "sub_category": "Humanity & History",
                "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
                "task_type": "Counting Problem",
                "kind": "Counting Problem",
            },
        ),
        Sample(
            "001-2",
            str(tmp_path / "data" / "fFjv93ACGo8.mp4"),
            Query("What is the genre of this video?", ("It is a news report.", "It is a documentary.", "It is a travel vlog.", "It is a science video.")),
            "B",
            (),
            {
                "video_id": "001",
                "videoID": "fFjv93ACGo8",
                "duration": "short",
                "domain": "Knowledge",
                "sub_category": "Humanity & History",
                "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
                "task_type": "Information Synopsis",
                "kind": "Information Synopsis",
            },
        ),
    ]
    assert len(caught) == 1 and issubclass(caught[0].category, MissingVideoWarning)
    message = str(caught[0].message)
    assert "skipped 1 sample(s)" in message and "601-1 (noVideoHere)" in message
    # the duration filter of lmms-eval's videomme_long and friends
    short, _ = load("videomme", root=str(tmp_path), duration="short")
    assert [s.id for s in short] == ["001-1", "001-2"]


def test_videomme_nested_official_template(tmp_path: Path) -> None:
    write_json(
        tmp_path / "videomme.json",
        [
            {
                "video_id": "003",
                "duration_category": "short",
                "video_category": "Knowledge",
                "video_subcategory": "Humanity & History",
                "questions": [
                    {
                        "question_id": "003-2",
                        "task_type": "Object Reasoning",
                        "question": "Which of the dying cause is not mentioned according to the video?",
                        "choices": ["A. Diseases .", "B. Hunger.", "C. Thirsty.", "D. Exposure."],
                        "answer": "C",
                        "response": "D",
                    }
                ],
            }
        ],
    )
    touch(tmp_path / "data" / "003.mp4")
    samples, caught = load("videomme", root=str(tmp_path), annotations="videomme.json")
    assert caught == []
    assert samples == [
        Sample(
            "003-2",
            str(tmp_path / "data" / "003.mp4"),
            Query("Which of the dying cause is not mentioned according to the video?", ("Diseases .", "Hunger.", "Thirsty.", "Exposure.")),
            "C",
            (),
            {
                "video_id": "003",
                "duration": "short",
                "domain": "Knowledge",
                "sub_category": "Humanity & History",
                "task_type": "Object Reasoning",
                "kind": "Object Reasoning",
            },
        )
    ]


def test_videomme_malformed(tmp_path: Path) -> None:
    bad = dict(VMME_ROWS[0])
    del bad["question_id"]
    path = write_jsonl(tmp_path / "videomme" / "test.jsonl", [VMME_ROWS[1], bad])
    with pytest.raises(AnnotationError) as exc:
        load("videomme", root=str(tmp_path))
    assert_error(exc, path, "question_id", line=2)

    out_of_range = dict(VMME_ROWS[0], answer="E")
    path = write_json(tmp_path / "list.json", [VMME_ROWS[1], out_of_range])
    with pytest.raises(AnnotationError) as exc:
        load("videomme", root=str(tmp_path), annotations="list.json")
    assert_error(exc, path, "answer", index=1)
    assert "outside the 4 options" in str(exc.value)


def test_videomme_v2(tmp_path: Path) -> None:
    options = "A. Malaysian.\nB. British.\nC. Singaporean.\nD. German.\nE. Canadian.\nF. Chinese.\nG. American.\nH. Cannot be determined."
    rows = [
        {"video_id": 1, "question_id": "001-1", "question": "What is the ethnicity of the protagonist's mother?", "options": options, "answer": "F",
         "group_type": "relevance", "group_structure": None, "level": None, "second_head": None, "third_head": None},
        {"video_id": 1, "question_id": "001-4", "question": "Where does the family live?", "options": options.replace("Malaysian", "In Malaysia"), "answer": "A",
         "group_type": "relevance", "group_structure": None, "level": 1, "second_head": "Information Retrieval", "third_head": "Counting"},
    ]  # fmt: skip
    write_jsonl(tmp_path / "test.jsonl", rows)
    touch(tmp_path / "videos" / "001.mp4")  # the table lost the zero padding of video_id
    samples, caught = load("videomme_v2", root=str(tmp_path))
    assert caught == []
    letters = ("Malaysian.", "British.", "Singaporean.", "German.", "Canadian.", "Chinese.", "American.", "Cannot be determined.")
    assert samples[0] == Sample(
        "001-1",
        str(tmp_path / "videos" / "001.mp4"),
        Query("What is the ethnicity of the protagonist's mother?", letters),
        "F",
        (),
        # level and heads are set on the group's last question only; the loader shares them with the group
        {"video_id": "1", "group_id": "1", "group_order": 1, "group_type": "relevance", "kind": "relevance",
         "level": 1, "second_head": "Information Retrieval", "third_head": "Counting"},
    )  # fmt: skip
    assert samples[1].query.options[0] == "In Malaysia."
    assert samples[1].answer == "A"
    assert samples[1].metadata == {
        "video_id": "1",
        "group_id": "1",
        "group_order": 4,
        "group_type": "relevance",
        "kind": "relevance",
        "level": 1,
        "second_head": "Information Retrieval",
        "third_head": "Counting",
    }


# -- LongVideoBench ---------------------------------------------------------------

LVB_CANDIDATES = [
    "promisc has come to an end, in and run away countless times, i was just scared, i still",
    "run away countless times, i was just scared, i still and front of our crown, like a world of souls,",
    "promisc has come to an end, in and front of our crown, like a world of souls,",
    "promisc has come to an end, in and captain of the godson, three three three three three three",
]
LVB_RECORD = {
    "video_id": "86CxyhFV9MI",
    "question": "In the video, which subtitles appear at the same time as the man with black hair, dressed in grey clothes with black sleeves, on stage?",
    "question_wo_referring_query": "Which subtitles appear at the same time?",
    "candidates": LVB_CANDIDATES,
    "correct_choice": 1,
    "position": [854, 948, 1373],
    "topic_category": "NP-News-Programs",
    "question_category": "TOS",
    "level": "L2-Relation",
    "id": "86CxyhFV9MI_0",
    "video_path": "86CxyhFV9MI.mp4",
    "subtitle_path": "86CxyhFV9MI_en.json",
    "duration_group": 600,
    "starting_timestamp_for_subtitles": 0,
    "duration": 190.16,
    "view_count": 259852,
}


def lvb_root(root: Path) -> Path:
    second = dict(
        LVB_RECORD, id="86CxyhFV9MI_1", question="What does the man hold?", candidates=["a cup", "a microphone"], correct_choice=0, question_category="E2O"
    )
    missing = dict(LVB_RECORD, id="zzzzzzzzzzz_0", video_id="zzzzzzzzzzz", video_path="zzzzzzzzzzz.mp4")
    write_json(root / "lvb_val.json", [LVB_RECORD, second, missing])
    touch(root / "videos" / "86CxyhFV9MI.mp4")
    return root


def test_longvideobench_val(tmp_path: Path) -> None:
    lvb_root(tmp_path)
    samples, caught = load("longvideobench", root=str(tmp_path), split="validation")
    video = str(tmp_path / "videos" / "86CxyhFV9MI.mp4")
    assert samples[0] == Sample(
        "86CxyhFV9MI_0",
        video,
        Query(str(LVB_RECORD["question"]), tuple(LVB_CANDIDATES)),
        "B",
        (),
        {
            "video_id": "86CxyhFV9MI",
            "duration_group": 600,
            "question_category": "TOS",
            "kind": "TOS",
            "duration": 190.16,
            "topic_category": "NP-News-Programs",
            "level": "L2-Relation",
            "subtitle_path": "86CxyhFV9MI_en.json",
            "question_wo_referring_query": "Which subtitles appear at the same time?",
            "starting_timestamp_for_subtitles": 0.0,
            "position": [854, 948, 1373],
        },
    )
    assert (samples[1].id, samples[1].answer, samples[1].query.options) == ("86CxyhFV9MI_1", "A", ("a cup", "a microphone"))
    assert len(samples) == 2
    assert len(caught) == 1 and "zzzzzzzzzzz_0 (zzzzzzzzzzz.mp4)" in str(caught[0].message)


def test_longvideobench_test_split_and_option_columns(tmp_path: Path) -> None:
    no_gt = {k: v for k, v in LVB_RECORD.items() if k != "correct_choice"}
    write_json(tmp_path / "lvb_test_wo_gt.json", [no_gt])
    # the Parquet tables (and lmms-eval) give option0..option4 padded with "N/A"
    flat = {k: v for k, v in LVB_RECORD.items() if k != "candidates"}
    flat.update({f"option{i}": c for i, c in enumerate(LVB_CANDIDATES)}, option4="N/A")
    write_jsonl(tmp_path / "validation.jsonl", [flat])
    touch(tmp_path / "videos" / "86CxyhFV9MI.mp4")
    test, _ = load("longvideobench", root=str(tmp_path), split="test")
    assert test[0].answer is None and len(test[0].query.options) == 4
    val, _ = load("longvideobench", root=str(tmp_path), annotations="validation.jsonl")
    assert val[0].query.options == tuple(LVB_CANDIDATES) and val[0].answer == "B"
    assert load("longvideobench", root=str(tmp_path), annotations="validation.jsonl", duration_group=3600)[0] == []


# -- MLVU -------------------------------------------------------------------------------


def test_mlvu_official_layout(tmp_path: Path) -> None:
    mlvu = tmp_path / "MLVU"
    write_json(mlvu / "json" / "1_plotQA.json", [
        {"video": "movie101_66.mp4", "duration": 246, "question": "What color is the main male character in the video?",
         "candidates": ["Yellow", "Red", "Green", "Blue"], "answer": "Yellow", "question_type": "plotQA"},
        {"video": "movie101_67.mp4", "duration": 300, "question": "Where is the party?",
         "candidates": ["Garden", "Roof"], "answer": "Roof", "question_type": "plotQA"},
    ])  # fmt: skip
    write_json(mlvu / "json" / "2_needle.json", [
        {"video": "needle_32.mp4", "duration": 467.97, "question": "What does the hand coming out of the computer do?",
         "candidates": ["Delivers a product", "Shakes the woman's hand", "Takes the woman's credit card", "Points at something"],
         "answer": "Delivers a product", "question_type": "findNeedle"},
    ])  # fmt: skip
    write_json(
        mlvu / "json" / "8_sub_scene.json",
        [{"video": "subPlot_1.mp4", "duration": 500, "question": "Describe the scene.", "answer": "...", "scoring_points": []}],
    )
    touch(mlvu / "video" / "1_plotQA" / "movie101_66.mp4", mlvu / "video" / "1_plotQA" / "movie101_67.mp4")
    samples, caught = load("mlvu", root=str(tmp_path))
    assert samples == [
        Sample(
            "plotQA/0",
            str(mlvu / "video" / "1_plotQA" / "movie101_66.mp4"),
            Query("What color is the main male character in the video?", ("Yellow", "Red", "Green", "Blue")),
            "A",
            (),
            {"task_type": "plotQA", "kind": "plotQA", "video": "movie101_66.mp4", "question_type": "plotQA", "duration": 246.0},
        ),
        Sample(
            "plotQA/1",
            str(mlvu / "video" / "1_plotQA" / "movie101_67.mp4"),
            Query("Where is the party?", ("Garden", "Roof")),
            "B",
            (),
            {"task_type": "plotQA", "kind": "plotQA", "video": "movie101_67.mp4", "question_type": "plotQA", "duration": 300.0},
        ),
    ]
    assert len(caught) == 1 and "needle/0 (needle_32.mp4)" in str(caught[0].message)


def test_mlvu_lmms_eval_copy_and_bad_answer(tmp_path: Path) -> None:
    rows = [{"video_name": "movie101_66.mp4", "duration": 246.0, "question": "What color is the main male character?\n(A) Yellow\n(B) Red",
             "candidates": ["Yellow", "Red"], "answer": "B", "task_type": "PQA", "question_id": "PQA_0"}]  # fmt: skip
    write_jsonl(tmp_path / "mlvu_dev.jsonl", rows)
    touch(tmp_path / "video" / "movie101_66.mp4")
    samples, _ = load("mlvu", root=str(tmp_path), annotations="mlvu_dev.jsonl")
    assert [(s.id, s.query, s.answer, s.metadata["kind"]) for s in samples] == [
        ("PQA_0", Query("What color is the main male character?", ("Yellow", "Red")), "B", "PQA")
    ]

    # lmms-eval's copy gives a letter: anything else is an error (the official files' unmatched answers: tests/datasets/test_official_layouts.py)
    path = write_jsonl(tmp_path / "mlvu_dev.jsonl", [rows[0], dict(rows[0], question_id="PQA_1", answer="zebra")])
    with pytest.raises(AnnotationError) as exc:
        load("mlvu", root=str(tmp_path), annotations="mlvu_dev.jsonl")
    assert_error(exc, path, "answer", line=2)


# -- EgoSchema ---------------------------------------------------------------------------

EGO_UIDS = ("001934bb-81bd-4cd8-a574-0472ef3f6678", "005651d6-f710-4909-b76d-acf7306fb72a", "0089a0d6-fe3f-4db7-8c89-19e9e08e5e7c")


def ego_root(root: Path) -> None:
    questions = [
        {"q_uid": uid, "google_drive_id": f"drive{i}", "question": f"What is c doing in clip {i}?", **{f"option {k}": f"option {k} of {i}" for k in range(5)}}
        for i, uid in enumerate(EGO_UIDS)
    ]
    write_json(root / "questions.json", questions)
    write_json(root / "subset_answers.json", {EGO_UIDS[0]: 3, EGO_UIDS[1]: 0})
    touch(root / "videos" / f"{EGO_UIDS[0]}.mp4", root / "videos" / f"{EGO_UIDS[1]}.mkv", root / "videos" / f"{EGO_UIDS[2]}.mp4")


def test_egoschema_subset_and_full(tmp_path: Path) -> None:
    ego_root(tmp_path)
    subset, caught = load("egoschema", root=str(tmp_path))
    assert caught == []
    assert subset[0] == Sample(
        EGO_UIDS[0],
        str(tmp_path / "videos" / f"{EGO_UIDS[0]}.mp4"),
        Query("What is c doing in clip 0?", tuple(f"option {k} of 0" for k in range(5))),
        "D",
        (),
        {"q_uid": EGO_UIDS[0], "google_drive_id": "drive0"},
    )
    assert (subset[1].video, subset[1].answer) == (str(tmp_path / "videos" / f"{EGO_UIDS[1]}.mkv"), "A")  # found by extension lookup
    assert len(subset) == 2
    full, _ = load("egoschema", root=str(tmp_path), split="full")
    assert [(s.id, s.answer) for s in full] == [(EGO_UIDS[0], "D"), (EGO_UIDS[1], "A"), (EGO_UIDS[2], None)]


def test_egoschema_lmms_eval_copy(tmp_path: Path) -> None:
    rows = [
        {
            "question_idx": "0",
            "question": "What is c doing?",
            "video_idx": EGO_UIDS[0],
            "option": [f"{'ABCDE'[k]}. choice {k}" for k in range(5)],
            "answer": "2",
        }
    ]
    write_jsonl(tmp_path / "subset.jsonl", rows)
    touch(tmp_path / "videos" / f"{EGO_UIDS[0]}.mp4")
    samples, _ = load("egoschema", root=str(tmp_path), annotations="subset.jsonl")
    assert [(s.id, s.query.options, s.answer) for s in samples] == [(EGO_UIDS[0], tuple(f"choice {k}" for k in range(5)), "C")]


# -- NExT-QA / NExT-GQA -----------------------------------------------------------------

NEXTQA_HEADER = ["video", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]
NEXTQA_ROWS = [
    ["4010069381", 369, 640, 480, "how do the two man play the instrument", 0, 6, "CH", "roll the handle", "tap their feet", "strum the string", "hit with sticks", "pat with hand"],
    ["4882821564", 2697, 640, 480, "why did the boy pick up one present from the group of them and move to the sofa", 2, 1, "CW",
     "share with the girl", "approach lady sitting there", "unwrap it", "playing with toy train", "gesture something"],
    ["2435100235", 1906, 640, 480, "how does the man cycling try to sell the watch", 2, 7, "CH", "give him catalogue", "show him a video", "show him the watch", "dismount", "strap"],
]  # fmt: skip


def test_nextqa_with_grounding_and_a_real_video(tmp_path: Path) -> None:
    from frameselect._core.video.synth import write_video

    write_csv(tmp_path / "nextqa" / "val.csv", NEXTQA_HEADER, NEXTQA_ROWS)
    write_json(
        tmp_path / "nextqa" / "map_vid_vidorID.json", {"4010069381": "1025/4010069381", "4882821564": "1025/4882821564", "2435100235": "0101/2435100235"}
    )
    write_json(tmp_path / "nextgqa" / "gsub_val.json", {"4882821564": {"duration": 90, "location": {"1": [[1.2, 5.8], [20.0, 23.5]]}, "fps": 29.97}})
    write_video(tmp_path / "NExTVideo" / "1025" / "4010069381.mp4", 5, lambda i: np.full((32, 48, 3), 40 * i, dtype=np.uint8), fps=5.0)
    touch(tmp_path / "NExTVideo" / "1025" / "4882821564.mp4")
    samples, caught = load("nextqa", root=str(tmp_path))
    assert samples == [
        Sample(
            "4010069381_6",
            str(tmp_path / "NExTVideo" / "1025" / "4010069381.mp4"),
            Query("how do the two man play the instrument", ("roll the handle", "tap their feet", "strum the string", "hit with sticks", "pat with hand")),
            "A",
            (),
            {"video_id": "4010069381", "qid": 6, "type": "CH", "kind": "CH", "frame_count": 369, "width": 640, "height": 480},
        ),
        Sample(
            "4882821564_1",
            str(tmp_path / "NExTVideo" / "1025" / "4882821564.mp4"),
            Query(
                "why did the boy pick up one present from the group of them and move to the sofa",
                ("share with the girl", "approach lady sitting there", "unwrap it", "playing with toy train", "gesture something"),
            ),
            "C",
            (Span(1.2, 5.8), Span(20.0, 23.5)),
            {"video_id": "4882821564", "qid": 1, "type": "CW", "kind": "CW", "frame_count": 2697, "width": 640, "height": 480, "duration": 90.0, "fps": 29.97},
        ),
    ]
    assert len(caught) == 1 and "2435100235_7 (0101/2435100235)" in str(caught[0].message)
    plain, _ = load("nextqa", root=str(tmp_path), grounding=False)
    assert all(s.evidence == () for s in plain)


def test_nextqa_csv_errors(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER[:-1], [row[:-1] for row in NEXTQA_ROWS])
    with pytest.raises(AnnotationError) as exc:
        load("nextqa", root=str(tmp_path))
    assert_error(exc, path, "a4", line=1)
    rows = [list(NEXTQA_ROWS[0]), list(NEXTQA_ROWS[1])]
    rows[1][5] = "two"
    path = write_csv(tmp_path / "val.csv", NEXTQA_HEADER, rows)
    with pytest.raises(AnnotationError) as exc:
        load("nextqa", root=str(tmp_path))
    assert_error(exc, path, "answer", line=3)


NEXTGQA_HEADER = ["video_id", "frame_count", "width", "height", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4"]


def nextgqa_root(root: Path, location: Any) -> Path:
    rows = [
        [
            "4882821564",
            2697,
            640,
            480,
            "why did the boy pick up one present",
            "unwrap it",
            1,
            "CW",
            "share with the girl",
            "approach lady",
            "unwrap it",
            "playing",
            "gesture",
        ],
        ["4882821564", 2697, 640, 480, "what does the boy do after sitting down", "open it", 3, "TN", "cry", "open it", "run", "sleep", "jump"],
    ]
    write_csv(root / "val.csv", NEXTGQA_HEADER, rows)
    write_json(root / "map_vid_vidorID.json", {"4882821564": "1025/4882821564"})
    touch(root / "NExTVideo" / "1025" / "4882821564.mp4")
    return write_json(root / "gsub_val.json", {"4882821564": {"duration": 90, "location": location, "fps": 29.97}})


def test_nextgqa(tmp_path: Path) -> None:
    nextgqa_root(tmp_path, {"1": [[1.2, 5.8]], "3": [[12.1, 17.1], [20.0, 23.5]]})
    samples, caught = load("nextgqa", root=str(tmp_path))
    assert caught == []
    assert samples[0] == Sample(
        "4882821564_1",
        str(tmp_path / "NExTVideo" / "1025" / "4882821564.mp4"),
        Query("why did the boy pick up one present", ("share with the girl", "approach lady", "unwrap it", "playing", "gesture")),
        "C",
        (Span(1.2, 5.8),),
        {
            "video_id": "4882821564",
            "qid": 1,
            "type": "CW",
            "kind": "CW",
            "frame_count": 2697,
            "width": 640,
            "height": 480,
            "duration": 90.0,
            "fps": 29.97,
            "answer_windows": "fraction",
        },
    )
    assert (samples[1].id, samples[1].answer, samples[1].evidence) == ("4882821564_3", "B", (Span(12.1, 17.1), Span(20.0, 23.5)))


def test_nextgqa_non_numeric_span(tmp_path: Path) -> None:
    path = nextgqa_root(tmp_path, {"1": [["1.2s", 5.8]]})
    with pytest.raises(AnnotationError) as exc:
        load("nextgqa", root=str(tmp_path))
    assert_error(exc, path, "location.1")
    assert exc.value.key == "4882821564"  # type: ignore[attr-defined]
    assert "entry '4882821564'" in str(exc.value) and "not a number: '1.2s'" in str(exc.value)


# -- Charades-STA ------------------------------------------------------------------------


def test_charades_sta(tmp_path: Path) -> None:
    (tmp_path / "charades_sta_test.txt").write_text(
        "3MSZA 24.3 30.4##person turn a light on.\n3MSZA 24.3 30.4##person flipped the light switch near the door.\n\nAO8RW 0.0 6.9##a person is putting a book on a shelf.\nZZZZZ 1 2##nobody.\n",
        encoding="utf-8",
    )
    header = ["id", "subject", "scene", "quality", "relevance", "verified", "script", "objects", "descriptions", "actions", "length"]
    write_csv(
        tmp_path / "Charades_v1_test.csv",
        header,
        [
            ["3MSZA", "s1", "Kitchen", 6, 7, "Yes", "...", "light", "...", "c0 24.3 30.4", 31.5],
            ["AO8RW", "s2", "Bedroom", 6, 7, "Yes", "...", "book", "...", "", 5.5],
        ],
    )
    touch(tmp_path / "Charades_v1_480" / "3MSZA.mp4", tmp_path / "Charades_v1_480" / "AO8RW.webm")
    samples, caught = load("charades_sta", root=str(tmp_path))
    v1, v2 = str(tmp_path / "Charades_v1_480" / "3MSZA.mp4"), str(tmp_path / "Charades_v1_480" / "AO8RW.webm")
    assert samples == [
        Sample(
            "3MSZA/0", v1, Query("person turn a light on."), None, (Span(24.3, 30.4),), {"video_id": "3MSZA", "answer_windows": "seconds", "duration": 31.5}
        ),
        Sample(
            "3MSZA/1",
            v1,
            Query("person flipped the light switch near the door."),
            None,
            (Span(24.3, 30.4),),
            {"video_id": "3MSZA", "answer_windows": "seconds", "duration": 31.5},
        ),
        Sample(
            "AO8RW/0",
            v2,
            Query("a person is putting a book on a shelf."),
            None,
            (Span(0.0, 5.5),),
            {"video_id": "AO8RW", "answer_windows": "seconds", "duration": 5.5},
        ),  # clipped at the end
    ]
    assert len(caught) == 1 and "ZZZZZ/0 (ZZZZZ)" in str(caught[0].message)


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ("AO8RW 0.0 6.9 a person is putting a book on a shelf.", "sentence", "no '##'"),
        ("AO8RW 0.0 six##a person is putting a book on a shelf.", "end", "not a number: 'six'"),
        ("AO8RW 0.0##a person is putting a book on a shelf.", "video/start/end", "expected '<video> <start> <end>'"),
        ("AO8RW 7.0 6.9##a person is putting a book on a shelf.", "end", "before start"),
    ],
)
def test_charades_sta_malformed_line(tmp_path: Path, line: str, field: str, problem: str) -> None:
    path = tmp_path / "charades_sta_test.txt"
    path.write_text(f"3MSZA 24.3 30.4##person turn a light on.\n{line}\n", encoding="utf-8")
    with pytest.raises(AnnotationError) as exc:
        load("charades_sta", root=str(tmp_path))
    assert_error(exc, path, field, line=2)
    assert problem in str(exc.value)


# -- QVHighlights ----------------------------------------------------------------------

QVH_RECORD = {
    "qid": 8737,
    "query": "A family is playing basketball together on a green court outside.",
    "duration": 126,
    "vid": "bP5KfdFJzC4_660.0_810.0",
    "relevant_windows": [[0, 16]],
    "relevant_clip_ids": [0, 1, 2, 3, 4, 5, 6, 7],
    "saliency_scores": [[4, 1, 1], [4, 1, 1], [4, 2, 1], [4, 3, 2], [4, 3, 2], [4, 3, 3], [4, 3, 3], [4, 3, 2]],
}


def test_qvhighlights(tmp_path: Path) -> None:
    second = dict(
        QVH_RECORD,
        qid=9000,
        query="A man talks to the camera.",
        relevant_windows=[[2, 6], [100, 104]],
        relevant_clip_ids=[1, 2, 50, 51],
        saliency_scores=[[1, 2, 3]] * 4,
    )
    write_jsonl(tmp_path / "highlight_val_release.jsonl", [QVH_RECORD, second])
    touch(tmp_path / "videos" / "bP5KfdFJzC4_660.0_810.0.mp4")
    samples, caught = load("qvhighlights", root=str(tmp_path))
    assert caught == []
    assert samples[0] == Sample(
        "8737",
        str(tmp_path / "videos" / "bP5KfdFJzC4_660.0_810.0.mp4"),
        Query("A family is playing basketball together on a green court outside."),
        None,
        (Span(0.0, 16.0),),
        {
            "vid": "bP5KfdFJzC4_660.0_810.0",
            "clip_length": 2.0,
            "answer_windows": "seconds",
            "duration": 126.0,
            "relevant_clip_ids": [0, 1, 2, 3, 4, 5, 6, 7],
            "saliency_scores": QVH_RECORD["saliency_scores"],
        },
    )
    assert samples[1].evidence == (Span(2.0, 6.0), Span(100.0, 104.0))
    # the test release has no windows, clip ids or scores
    write_jsonl(tmp_path / "highlight_test_release.jsonl", [{k: QVH_RECORD[k] for k in ("qid", "query", "duration", "vid")}])
    test, _ = load("qvhighlights", root=str(tmp_path), split="test")
    assert (test[0].evidence, test[0].metadata) == ((), {"vid": "bP5KfdFJzC4_660.0_810.0", "clip_length": 2.0, "answer_windows": "seconds", "duration": 126.0})


def test_qvhighlights_malformed(tmp_path: Path) -> None:
    path = tmp_path / "highlight_val_release.jsonl"
    path.write_text(json.dumps(QVH_RECORD) + '\n{"qid": 2, "query": "broken",\n', encoding="utf-8")
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", root=str(tmp_path))
    assert_error(exc, path, None, line=2)
    assert "invalid JSON" in str(exc.value)
    write_jsonl(path, [QVH_RECORD, dict(QVH_RECORD, qid=2, relevant_windows=[[0, "end"]])])
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", root=str(tmp_path))
    assert_error(exc, path, "relevant_windows", line=2)
    write_jsonl(path, [dict(QVH_RECORD, saliency_scores=[[4, 1, 1]])])
    with pytest.raises(AnnotationError) as exc:
        load("qvhighlights", root=str(tmp_path))
    assert_error(exc, path, "saliency_scores", line=1)


# -- KFS-Bench -------------------------------------------------------------------------


def test_kfsbench_over_longvideobench(tmp_path: Path) -> None:
    lvb_root(tmp_path / "LongVideoBench")
    write_csv(
        tmp_path / "lvb_anno.csv",
        ["id", "segment_id", "scene_id", "start", "end"],
        [
            ["86CxyhFV9MI_0", 0, 3, "0:02:49", "0:02:56"],
            ["86CxyhFV9MI_0", 1, 3, "0:02:22", "0:02:29"],
            ["86CxyhFV9MI_0", 2, 4, "0:00:12", "0:00:13"],
            ["zzzzzzzzzzz_0", 0, 0, "0:00:01", "0:00:02"],  # in the base annotations, but its video is missing
            ["notInLVB_0", 0, 0, "0:00:01", "0:00:02"],
        ],
    )
    samples, caught = load("kfsbench", root=str(tmp_path))
    assert len(samples) == 1
    s = samples[0]
    assert (s.id, s.answer, s.query.options[1]) == ("86CxyhFV9MI_0", "B", LVB_CANDIDATES[1])
    assert s.video == str(tmp_path / "LongVideoBench" / "videos" / "86CxyhFV9MI.mp4")
    assert s.evidence == (Span(12.0, 14.0), Span(142.0, 150.0), Span(169.0, 177.0))
    assert s.metadata["scene_ids"] == ["4", "3", "3"]
    assert s.metadata["kfs_scenes"] == {"3": [[169.0, 177.0], [142.0, 150.0]], "4": [[12.0, 14.0]]}
    assert (s.metadata["kfs_source"], s.metadata["kind"], s.metadata["duration_group"]) == ("longvideobench", "TOS", 600)
    assert sorted(w.category.__name__ for w in caught) == ["AnnotationWarning", "MissingVideoWarning"]
    missing = next(w for w in caught if w.category is MissingVideoWarning)
    assert "skipped 1 sample(s)" in str(missing.message) and "zzzzzzzzzzz_0" in str(missing.message)
    unknown = next(w for w in caught if w.category is AnnotationWarning)
    assert "notInLVB_0" in str(unknown.message)


def test_kfsbench_over_videomme_and_bad_timestamp(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "Video-MME" / "videomme" / "test.jsonl", VMME_ROWS[:2])
    touch(tmp_path / "Video-MME" / "data" / "fFjv93ACGo8.mp4")
    path = write_csv(
        tmp_path / "vidmme_anno.csv", ["id", "segment_id", "scene_id", "start", "end"], [["001-2", 0, 0, "0:49", "0:55"], ["001-2", 1, 1, "1:45", "1:50"]]
    )
    samples, caught = load("kfsbench", root=str(tmp_path), split="vidmme")
    assert caught == []
    assert [(s.id, s.answer, s.evidence) for s in samples] == [("001-2", "B", (Span(49.0, 56.0), Span(105.0, 111.0)))]
    assert samples[0].metadata["kfs_scenes"] == {"0": [[49.0, 56.0]], "1": [[105.0, 111.0]]}
    assert samples[0].metadata["scene_ids"] == ["0", "1"]
    write_csv(path, ["id", "segment_id", "scene_id", "start", "end"], [["001-2", 0, 0, "0:49", "0:55"], ["001-2", 1, 1, "1:4x", "1:50"]])
    with pytest.raises(AnnotationError) as exc:
        load("kfsbench", root=str(tmp_path), split="videomme")
    assert_error(exc, path, "start", line=3)


# -- LV-Haystack -----------------------------------------------------------------------

LVH_RECORD = {
    "video_id": "38737402-19bd-4689-9e74-3af391b15feb",
    "vclip_id": "6338b73e-393f-4d37-b278-68703b45908c",
    "question": "What nail did I pull out?",
    "options": {"A": "The brown nail.", "B": "The silver nail.", "C": "The bent nail.", "D": "The rusty nail.", "E": None},
    "answer": "B",
    "frame_indexes_video": [6300, 6270],
    "frame_indexes_vclip": [300, 270],
    "video_metadata": {
        "frame_rate": 30.0,
        "video_duration": 480.0,
        "vclip_duration": 60.0,
        "vclip_interval_in_video": [200.0, 260.0],
        "video_frame_count": 14400,
    },
}


def test_lvhaystack(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data" / "test.jsonl", [LVH_RECORD, dict(LVH_RECORD, question="Where is the hammer?", answer="A")])
    touch(tmp_path / "videos" / f"{LVH_RECORD['video_id']}.mp4", tmp_path / "vclips" / f"{LVH_RECORD['vclip_id']}.mp4")
    samples, caught = load("lvhaystack", root=str(tmp_path))
    assert caught == []
    vclip = LVH_RECORD["vclip_id"]
    assert samples[0] == Sample(
        f"{vclip}/0",
        str(tmp_path / "videos" / f"{LVH_RECORD['video_id']}.mp4"),
        Query("What nail did I pull out?", ("The brown nail.", "The silver nail.", "The bent nail.", "The rusty nail.")),
        "B",
        (Span(209.0, 209.0 + 1 / 30), Span(210.0, 210.0 + 1 / 30)),
        {
            "video_id": LVH_RECORD["video_id"],
            "vclip_id": vclip,
            "level": "video",
            "keyframe_indexes": [6300, 6270],
            "keyframe_times": [210.0, 209.0],
            "fps": 30.0,
            "video_duration": 480.0,
            "vclip_duration": 60.0,
            "vclip_interval_in_video": [200.0, 260.0],
        },
    )
    assert (samples[1].id, samples[1].answer) == (f"{vclip}/1", "A")
    windowed, _ = load("lvhaystack", root=str(tmp_path), keyframe_window=1.0)
    assert windowed[0].evidence == (Span(208.0, 210.0), Span(209.0, 211.0))
    clips, _ = load("lvhaystack", root=str(tmp_path), level="vclip")
    assert clips[0].video == str(tmp_path / "vclips" / f"{vclip}.mp4")
    assert clips[0].evidence == (Span(9.0, 9.0 + 1 / 30), Span(10.0, 10.0 + 1 / 30))


def test_lvhaystack_malformed(tmp_path: Path) -> None:
    bad = dict(LVH_RECORD, video_metadata={"video_duration": 480.0})
    path = write_json(tmp_path / "haystack.json", [LVH_RECORD, bad])
    touch(tmp_path / "videos" / f"{LVH_RECORD['video_id']}.mp4")
    with pytest.raises(AnnotationError) as exc:
        load("lvhaystack", root=str(tmp_path), annotations=str(path))
    assert_error(exc, path, "video_metadata.frame_rate", index=1)
    write_json(path, [dict(LVH_RECORD, frame_indexes_video=[6300, "x"])])
    with pytest.raises(AnnotationError) as exc:
        load("lvhaystack", root=str(tmp_path), annotations=str(path))
    assert_error(exc, path, "frame_indexes_video", index=0)


# -- what every loader shares ----------------------------------------------------------


def test_every_loader_is_registered_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    assert {
        "videomme",
        "videomme_v2",
        "longvideobench",
        "mlvu",
        "egoschema",
        "nextqa",
        "nextgqa",
        "charades_sta",
        "qvhighlights",
        "kfsbench",
        "lvhaystack",
    } <= set(LOADERS)
    assert main(["list", "datasets"]) == 0
    listed = capsys.readouterr().out.split()
    assert set(LOADERS) <= set(listed)


@pytest.mark.parametrize("name", LOADERS)
def test_loading_is_lazy(tmp_path: Path, name: str) -> None:
    ds = frameselect.datasets.create(name, root=str(tmp_path / "nothing-here"))  # no file is touched yet
    with pytest.raises(FileNotFoundError) as exc:
        ds.samples()
    assert str(tmp_path / "nothing-here") in str(exc.value)


def test_id_fingerprints_content_and_params_recreate(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "highlight_val_release.jsonl", [QVH_RECORD])
    touch(tmp_path / "videos" / "bP5KfdFJzC4_660.0_810.0.mp4")
    ds = frameselect.datasets.create("qvhighlights", root=str(tmp_path))
    first = ds.id
    assert first.startswith("qvhighlights:")
    again = revive(part_config(ds))  # what replay does
    assert again.id == first and list(again) == list(ds)
    write_jsonl(path, [dict(QVH_RECORD, relevant_windows=[[0, 18]])])
    assert frameselect.datasets.create("qvhighlights", root=str(tmp_path)).id != first


def test_duplicate_ids_and_unknown_split(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "highlight_val_release.jsonl", [QVH_RECORD, QVH_RECORD])
    touch(tmp_path / "videos" / "bP5KfdFJzC4_660.0_810.0.mp4")
    with pytest.raises(AnnotationError, match="duplicate sample ids"):
        load("qvhighlights", root=str(tmp_path))
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        frameselect.datasets.create("qvhighlights", root=str(tmp_path), split="dev")


def test_parquet_needs_pyarrow_or_reads(tmp_path: Path) -> None:
    path = tmp_path / "videomme" / "test-00000-of-00001.parquet"
    touch(tmp_path / "data" / "fFjv93ACGo8.mp4")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        touch(path)
        with pytest.raises(ImportError, match="pyarrow"):
            load("videomme", root=str(tmp_path))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(VMME_ROWS[:2]), path)
    samples, _ = load("videomme", root=str(tmp_path))
    assert [(s.id, s.answer) for s in samples] == [("001-1", "C"), ("001-2", "B")]


def test_helpers() -> None:
    assert strip_option_letters(["A. Apples.", "(B) Candles.", "C) Berries", "A. not D"]) == ("Apples.", "Candles.", "Berries", "A. not D")
    assert split_option_block("A. x\nB. y\ncontinued\n") == ("x", "y continued")


def test_find_video_tries_extensions(tmp_path: Path) -> None:
    touch(tmp_path / "a.webm", tmp_path / "b.MP4", tmp_path / "c.avi")
    assert find_video([tmp_path], "a") == tmp_path / "a.webm"
    assert find_video([tmp_path], "b") == tmp_path / "b.MP4"
    assert find_video([tmp_path], "c.mp4") == tmp_path / "c.avi"  # the named extension first, then the others
    assert find_video([tmp_path / "x", tmp_path], "a.webm") == tmp_path / "a.webm"
    assert find_video([tmp_path], "d") is None


def test_a_loaded_benchmark_runs_through_evaluate_and_replay(tmp_path: Path) -> None:
    from frameselect._core.video.synth import write_video
    from frameselect._engine.pipeline import evaluate
    from frameselect._engine.replay import dataset_from_config

    (tmp_path / "charades_sta_test.txt").write_text(
        "AO8RW 2.0 4.0##a person is putting a book on a shelf.\nAO8RW 0.0 1.0##a person opens a door.\n", encoding="utf-8"
    )
    write_video(tmp_path / "Charades_v1_480" / "AO8RW.mp4", 60, lambda i: np.full((32, 48, 3), 4 * i, dtype=np.uint8), fps=10.0)
    ds = frameselect.datasets.create("charades_sta", root=str(tmp_path))
    result = evaluate("uniform", dataset=ds, k=4, store=str(tmp_path / "runs.sqlite"), progress=False)
    assert [r.sample_id for r in result.records] == ["AO8RW/0", "AO8RW/1"] and result.failed == []
    assert result.table["evidence_recall"] == 1.0  # 4 uniform frames of a 6-s video hit both moments
    assert dataset_from_config(result.config).id == ds.id


def test_lvhaystack_answer_naming_an_empty_option_is_kept_as_always_wrong(tmp_path: Path) -> None:
    """T*'s LVHaystack_test.json has a record whose answer is option E, which it leaves empty."""
    empty_e = dict(LVH_RECORD, question="Which tool did I use?", answer="E")
    write_jsonl(tmp_path / "data" / "test.jsonl", [LVH_RECORD, empty_e])
    touch(tmp_path / "videos" / f"{LVH_RECORD['video_id']}.mp4")
    with pytest.warns(AnnotationWarning, match=r"1 question\(s\) have as answer an option the release leaves empty.*line 2.*'E'"):
        samples = frameselect.datasets.create("lvhaystack", root=str(tmp_path)).samples()
    assert [s.answer for s in samples] == ["B", "E"]
    assert len(samples[1].query.options) == 4  # E is not offered, so no answer can match it
    # an answer past the options that the record does not even list stays an error
    write_jsonl(tmp_path / "data" / "test.jsonl", [dict(LVH_RECORD, answer="F")])
    with pytest.raises(AnnotationError, match="outside the 4 options"):
        frameselect.datasets.create("lvhaystack", root=str(tmp_path)).samples()


# -- the conformance suite, on an example of every registered dataset ----------------------
# Each builder writes a small copy of the benchmark's layout (the records above) and returns the
# loader on it. A dataset registered without a builder fails its checks with a message saying so.


@register_example("datasets", "videomme")
def _videomme_example(root: Path) -> Any:
    write_jsonl(root / "videomme" / "test.jsonl", VMME_ROWS[:2])
    touch(root / "data" / "fFjv93ACGo8.mp4")
    return frameselect.datasets.create("videomme", root=str(root))


@register_example("datasets", "videomme_v2")
def _videomme_v2_example(root: Path) -> Any:
    options = "A. Malaysian.\nB. British.\nC. Singaporean.\nD. German."
    rows = [
        {"video_id": 1, "question_id": f"001-{i}", "question": f"Question {i}?", "options": options, "answer": "ABCD"[i - 1], "group_type": "relevance",
         "group_structure": None, "level": 1 if i == 4 else None, "second_head": None, "third_head": None}
        for i in range(1, 5)
    ]  # fmt: skip
    write_jsonl(root / "test.jsonl", rows)
    touch(root / "videos" / "001.mp4")
    return frameselect.datasets.create("videomme_v2", root=str(root))


@register_example("datasets", "longvideobench")
def _longvideobench_example(root: Path) -> Any:
    write_json(
        root / "lvb_val.json",
        [LVB_RECORD, dict(LVB_RECORD, id="86CxyhFV9MI_1", question="What does the man hold?", candidates=["a cup", "a mic"], correct_choice=0)],
    )
    touch(root / "videos" / "86CxyhFV9MI.mp4")
    return frameselect.datasets.create("longvideobench", root=str(root))


@register_example("datasets", "mlvu")
def _mlvu_example(root: Path) -> Any:
    write_json(root / "MLVU" / "json" / "1_plotQA.json", [
        {"video": "movie101_66.mp4", "duration": 246, "question": "What color is the main male character in the video?",
         "candidates": ["Yellow", "Red", "Green", "Blue"], "answer": "Yellow", "question_type": "plotQA"},
    ])  # fmt: skip
    touch(root / "MLVU" / "video" / "1_plotQA" / "movie101_66.mp4")
    return frameselect.datasets.create("mlvu", root=str(root))


@register_example("datasets", "egoschema")
def _egoschema_example(root: Path) -> Any:
    ego_root(root)
    return frameselect.datasets.create("egoschema", root=str(root))


@register_example("datasets", "nextqa")
def _nextqa_example(root: Path) -> Any:
    write_csv(root / "nextqa" / "val.csv", NEXTQA_HEADER, NEXTQA_ROWS)
    write_json(root / "nextqa" / "map_vid_vidorID.json", {"4010069381": "1025/4010069381", "4882821564": "1025/4882821564", "2435100235": "0101/2435100235"})
    touch(*(root / "NExTVideo" / f"{v}.mp4" for v in ("1025/4010069381", "1025/4882821564", "0101/2435100235")))
    return frameselect.datasets.create("nextqa", root=str(root), grounding=False)


@register_example("datasets", "nextgqa")
def _nextgqa_example(root: Path) -> Any:
    nextgqa_root(root, {"1": [[1.2, 5.8]], "3": [[12.1, 17.1]]})
    return frameselect.datasets.create("nextgqa", root=str(root))


@register_example("datasets", "charades_sta")
def _charades_example(root: Path) -> Any:
    (root / "charades_sta_test.txt").write_text(
        "AO8RW 2.0 4.0##a person is putting a book on a shelf.\nAO8RW 0.0 1.0##a person opens a door.\n", encoding="utf-8"
    )
    touch(root / "Charades_v1_480" / "AO8RW.mp4")
    return frameselect.datasets.create("charades_sta", root=str(root))


@register_example("datasets", "qvhighlights")
def _qvhighlights_example(root: Path) -> Any:
    write_jsonl(root / "highlight_val_release.jsonl", [QVH_RECORD])
    touch(root / "videos" / "bP5KfdFJzC4_660.0_810.0.mp4")
    return frameselect.datasets.create("qvhighlights", root=str(root))


@register_example("datasets", "kfsbench")
def _kfsbench_example(root: Path) -> Any:
    _longvideobench_example(root / "LongVideoBench")
    write_csv(root / "lvb_anno.csv", ["id", "segment_id", "scene_id", "start", "end"], [["86CxyhFV9MI_0", 0, 3, "0:02:49", "0:02:56"]])
    return frameselect.datasets.create("kfsbench", root=str(root))


@register_example("datasets", "lvhaystack")
def _lvhaystack_example(root: Path) -> Any:
    write_jsonl(root / "data" / "test.jsonl", [LVH_RECORD, dict(LVH_RECORD, question="Where is the hammer?", answer="A")])
    touch(root / "videos" / f"{LVH_RECORD['video_id']}.mp4")
    return frameselect.datasets.create("lvhaystack", root=str(root))


_GENERATED: dict[str, Path] = {}  # generated datasets are written once per session


@register_example("datasets", "tiny")
def _tiny_example(root: Path) -> Any:
    return frameselect.datasets.create("tiny", root=str(_GENERATED.setdefault("tiny", root)))


@register_example("datasets", "local")
def _local_example(root: Path) -> Any:
    from frameselect.datasets.tiny import ensure_videos

    videos = ensure_videos(root)
    line = {"video": videos["tiny_a"].name, "question": "What colour?", "options": ["red", "green"], "answer": "B", "evidence": [[4.0, 4.6]]}
    (root / "questions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return frameselect.datasets.create("local", file=str(root / "questions.jsonl"))


@register_example("datasets", "haystack")
def _haystack_example(root: Path) -> Any:
    return frameselect.datasets.create("haystack", n_videos=1, minutes=0.25, root=str(_GENERATED.setdefault("haystack", root)))


@parametrize_with_checks(registry_cases("datasets"))
def test_dataset_conforms(part: Any, check: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingVideoWarning)
        check(part)


def test_a_dataset_without_an_example_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect.datasets.base import InMemoryDataset
    from frameselect.registry import datasets

    monkeypatch.setitem(datasets._entries, "unexampled", InMemoryDataset)
    (case,) = registry_cases("datasets", ["unexampled"])
    with pytest.raises(AssertionError, match=r"dataset 'unexampled' has no example.*register_example\('datasets', 'unexampled'\)"):
        frameselect.testing.dataset_checks()[0](case)


@pytest.mark.parametrize(("name", "task"), [("ovo_bench", "SSR"), ("streamingbench", "Object Recognition")])
def test_the_task_filtered_loaders_declare_tasks_and_revive_with_it(name: str, task: str) -> None:
    dataset = frameselect.registry.datasets.create(name, root="data", tasks=[task])
    config = part_config(dataset)
    assert list(config["params"]) == ["root", "annotations", "split", "videos", "tasks"]
    assert config["params"]["tasks"] == [task]
    again = revive(config)
    assert again.tasks == (task,) and part_config(again) == config
    assert frameselect.registry.datasets.create(name, root="data").tasks is None
