"""StreamingBench: the loader on its repository's layout, and its official scoring.

Expected values of the release-file test are the outputs of the repository's
own scorer (repository THUNLP-MT/StreamingBench, commit
89299232c4cc1cc3721951173c5f107b48cf6877, ``src/data/count.py`` ``count``, run
as ``python count.py --model fixed --task <real|omni|sqa> --src <file>``) on
``src/data/questions_real.json`` (sha256 64ca1405...), ``questions_omni.json``
(e2a769c2...) and ``questions_sqa.json`` (ea0be61f...), with the fixed
predictions of :func:`fixed_response` written under the key ``fixed`` of each
question (the layout its ``eval.py`` writes; ``None``: no key).
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import frameselect.datasets._loading as loading
from annotation_files import touch, write_json
from frameselect.datasets._loading import AnnotationWarning
from frameselect.datasets.streamingbench import StreamingBench
from frameselect.errors import AnnotationError
from frameselect.evaluators.streamingbench import sb_correct, sb_scores
from frameselect.registry import datasets, evaluators
from frameselect.types import SampleRecord

#: the released layout after scripts/preprocess.sh: video_path made absolute, videos in src/data/videos
REAL = [
    {
        "time": "[0:00:00 - 0:00:10]",
        "questions": [
            {"task_type": "Counting", "question": "How many cups?", "time_stamp": "00:01:02", "answer": "C",
             "options": ["A. 1", "B. 2", "C. 3", "D. 4"], "required_ability": "working memory"},
        ],
        "video_categories": "kitchen",
        "video_path": "/somewhere/else/StreamingBench/src/data/videos/sample_3_real.mp4",
    },
    {
        "time": "[0:01:00 - 0:02:00]",
        "questions": [
            {"task_type": "Object Recognition", "question": "What is on the table?", "time_stamp": "01:00:05", "answer": "A", "options": ["A. a cup", "B. a pan"]},
            {"task_type": "Counting", "question": "And now?", "time_stamp": "5", "answer": "B", "options": ["A. 1", "B. 2"]},
        ],
        "video_path": "./videos/sample_3_real.mp4",
    },
]  # fmt: skip
OMNI = [
    {
        "questions": [
            {"task_type": "Misleading Context Understanding", "question": "What is shown?", "time_stamp": "00:00:50", "answer": "D",
             "options": ["A. one", "", "B. two,", "and more", "C. three", "D. four", "D. four again"]},
            {"task_type": "Emotion Recognition", "question": "How does she feel?", "time_stamp": "00:01:00", "answer": "A", "options": ["A. calm", "B. upset"]},
        ],
        "video_path": "./videos/sample_2_Misleading_Context_Understanding.mp4",
    },
]  # fmt: skip
SQA = [
    [
        {"questions": [{"task_type": "Sequential Question Answering", "question": "Who serves?", "time_stamp": "00:00:36", "answer": "A",
                        "options": ["A.Lebrun.", "Fan Z.D.", "Xu xin.", "Ma Lin."]}], "video_path": "./videos/sample_17_sqa.mp4"},
        {"questions": [{"task_type": "Sequential Question Answering", "question": "His score now?", "time_stamp": "00:03:02", "answer": "C",
                        "options": ["2.", "6.", "7.", "4."]}], "video_path": "./videos/sample_17_sqa.mp4"},
        {"questions": [{"task_type": "Sequential Question Answering", "question": "And the other's?", "time_stamp": "00:04:58", "answer": "B",
                        "options": ["A. 107.", "B. 93.", "B. 91.", "D. 99."]}], "video_path": "./videos/sample_17_sqa.mp4"},
    ],
    [
        {"questions": [{"task_type": "Sequential Question Answering", "question": "Who leads?", "time_stamp": "00:00:10", "answer": "B",
                        "options": ["A. red", "B. blue"]}], "video_path": "./videos/sample_18_sqa.mp4"},
    ],
]  # fmt: skip


def layout(root: Path, real: Sequence[Any] = REAL) -> Path:
    data = root / "src" / "data"
    write_json(data / "questions_real.json", real)
    write_json(data / "questions_omni.json", OMNI)
    write_json(data / "questions_sqa.json", SQA)
    touch(*(data / "videos" / n for n in ("sample_3_real.mp4", "sample_2_Misleading_Context_Understanding.mp4", "sample_17_sqa.mp4", "sample_18_sqa.mp4")))
    return root


def test_real_time_questions_one_sample_each_asked_at_their_time_stamp(tmp_path: Path) -> None:
    ds = datasets.create("streamingbench", root=str(layout(tmp_path)))
    samples = {s.id: s for s in ds}
    assert list(samples) == ["sample_3_real/0", "sample_3_real/1", "sample_3_real/2"]
    first = samples["sample_3_real/0"]
    # the absolute path of the preprocessed file is not followed: the video is looked up by its name in src/data/videos
    assert first.video == str(tmp_path / "src" / "data" / "videos" / "sample_3_real.mp4")
    assert first.asked_at == 62.0 and first.answer == "C" and first.query.options == ("1", "2", "3", "4")
    assert first.metadata == {"task": "Counting", "category": "realtime", "required_ability": "working memory", "video_category": "kitchen"}
    assert samples["sample_3_real/1"].asked_at == 3605.0 and samples["sample_3_real/2"].asked_at == 5.0
    assert samples["sample_3_real/1"].metadata == {"task": "Object Recognition", "category": "realtime"}
    only = datasets.create("streamingbench", root=str(tmp_path), tasks=["Object Recognition"])
    assert [s.id for s in only] == ["sample_3_real/1"]
    # root may be the repository's src/data as well
    assert [s.id for s in StreamingBench(root=tmp_path / "src" / "data")] == list(samples)


def test_omni_file_repairs_split_options_and_says_so(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = list(StreamingBench(root=layout(tmp_path), split="omni"))
    mcu, er = samples
    assert mcu.query.options == ("one", "two, and more", "three", "four", "four again") and mcu.answer == "D"
    assert mcu.metadata["category"] == "contextual" and er.metadata == {"task": "Emotion Recognition", "category": "omni"}
    assert [str(w.message) for w in caught if issubclass(w.category, AnnotationWarning)] == [
        "streamingbench: the options of 1 question(s) were split, held empty entries or repeated a letter; read as one option per lettered "
        "entry (an entry without a letter continues the option before it, empty ones are dropped): sample_2_Misleading_Context_Understanding/0"
    ]


def test_sequential_questions_carry_the_earlier_ones_with_their_answers(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnnotationWarning)
        samples = {s.id: s for s in StreamingBench(root=layout(tmp_path), split="sqa")}
    assert list(samples) == ["sample_17_sqa/0", "sample_17_sqa/1", "sample_17_sqa/2", "sample_18_sqa/0"]
    first, second, third = samples["sample_17_sqa/0"], samples["sample_17_sqa/1"], samples["sample_17_sqa/2"]
    assert first.query.text == "Who serves?" and "context" not in first.metadata
    assert first.query.options == ("A.Lebrun.", "Fan Z.D.", "Xu xin.", "Ma Lin.")  # not a lettered list: kept as written
    assert second.query.options == ("2.", "6.", "7.", "4.") and second.metadata["context"] == ["sample_17_sqa/0"]
    assert third.query.options == ("107.", "93.", "91.", "99.")  # "B." twice: one option per lettered entry
    assert third.query.text == (
        "Asked earlier in this video, with the right answers:\n[00:00:36] Who serves? Answer: A. A.Lebrun.\n"
        "[00:03:02] His score now? Answer: C. 7.\nNow: And the other's?"
    )
    assert samples["sample_18_sqa/0"].query.text == "Who leads?" and third.asked_at == 298.0


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"task_type": "Dancing"}, "questions[0].task_type", "unknown StreamingBench task"),
        ({"task_type": "Proactive Output"}, "questions[0].task_type", "polling protocol"),
        ({"time_stamp": "1:xx"}, "questions[0].time_stamp", "HH:MM:SS"),
        ({"answer": "E"}, "questions[0].answer", "outside the 4 options"),
        ({"question": None}, "questions[0].question", "missing"),
    ],
)
def test_bad_questions_name_the_file_entry_and_field(tmp_path: Path, change: dict[str, Any], field: str, message: str) -> None:
    entry = {**REAL[0], "questions": [{**REAL[0]["questions"][0], **change}]}  # type: ignore[dict-item]
    layout(tmp_path, [entry])
    with pytest.raises(AnnotationError, match=message) as info:
        list(StreamingBench(root=tmp_path))
    assert info.value.field == field and info.value.index == 0


def test_a_video_path_is_reduced_to_its_name_and_never_leaves_the_folder(tmp_path: Path) -> None:
    layout(tmp_path, [{**REAL[0], "video_path": "/etc/.."}])
    with pytest.raises(AnnotationError, match="outside the video folder"):
        list(StreamingBench(root=tmp_path))
    layout(tmp_path, [{**REAL[0], "video_path": "/elsewhere/sample_4_real.mp4"}])
    touch(tmp_path / "elsewhere" / "sample_4_real.mp4")
    with pytest.raises(FileNotFoundError, match="sample_4_real"):  # not found under the video folders, though the named path exists
        list(StreamingBench(root=tmp_path, videos=tmp_path / "src" / "data" / "videos"))


def test_official_scoring_by_hand(tmp_path: Path) -> None:
    samples = {s.id: s for s in StreamingBench(root=layout(tmp_path))}
    c = samples["sample_3_real/0"]  # answer C
    # count.py: the response's first character against the letter
    assert [sb_correct(c, r) for r in ("C", "C. 3", " C", "c", "The answer is C", "", None)] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    records = [
        SampleRecord("sample_3_real/0", {"sb_correct": 1.0}, metadata=c.metadata),
        SampleRecord("sample_3_real/1", {"sb_correct": 0.0}, metadata=samples["sample_3_real/1"].metadata),
        SampleRecord("sample_3_real/2", {"sb_correct": 0.0}, metadata=c.metadata),
        SampleRecord("x/0", {"sb_correct": 1.0}, metadata={"task": "Sequential Question Answering", "category": "contextual"}),
        SampleRecord("x/1", {}, status="failed", metadata={"task": "Sequential Question Answering", "category": "contextual"}),
    ]
    scores = sb_scores(records)
    # per task and per category over questions (the failed sample is left out, as count.py leaves out unanswered ones)
    assert scores["sb/Counting"] == 0.5 and scores["sb/Object Recognition"] == 0.0 and scores["sb/Sequential Question Answering"] == 1.0
    assert scores["sb_realtime"] == pytest.approx(1 / 3) and scores["sb_contextual"] == 1.0 and scores["sb_total"] == 0.5
    assert "sb_omni" not in scores
    assert evaluators.create("streamingbench").aggregate(records) == {k: scores[k] for k in ("sb_realtime", "sb_contextual", "sb_total")}


MC = ["A", "B", "C", "D", "B. x", " A", "a", "The answer is C", None]


def fixed_response(sample_id: str) -> str | None:
    """The fixed predictions both scorers were given: a choice by CRC-32 of the sample id (``None``: no answer)."""
    return MC[zlib.crc32(f"streamingbench/{sample_id}".encode()) % len(MC)]


#: THUNLP-MT/StreamingBench 8929923, count.py on each release file with fixed_response: (answered, correct) per task_type
#: and its "total" row (the sqa branch writes none)
OFFICIAL: dict[str, dict[str, tuple[int, int]]] = {
    "real": {
        "Clips Summarize": (287, 38), "Object Recognition": (331, 58), "Attribute Recognition": (275, 35), "Prospective Reasoning": (96, 15),
        "Action Recognition": (317, 47), "Spatial Understanding": (213, 32), "Event Understanding": (154, 21), "Counting": (168, 23),
        "Text-Rich Understanding": (272, 47), "Causal Reasoning": (118, 21), "total": (2231, 337),
    },
    "omni": {
        "Misleading Context Understanding": (219, 29), "Source Discrimination": (221, 31), "Emotion Recognition": (230, 35),
        "Anomaly Context Understanding": (222, 30), "Scene Understanding": (224, 34), "Multimodal Alignment": (229, 40), "total": (1345, 199),
    },
    "sqa": {"Sequential Question Answering": (216, 40)},
}  # fmt: skip
#: its accuracies as written to fixed_stats.json, for two rows (the others are correct / answered the same way)
OFFICIAL_ACCURACY = {
    ("real", "total"): 0.1510533393097266,
    ("omni", "Multimodal Alignment"): 0.17467248908296942,
    ("sqa", "Sequential Question Answering"): 0.18518518518518517,
}


@pytest.mark.parametrize("split", ["real", "omni", "sqa"])
def test_scoring_reproduces_the_official_script_on_the_release_file(split: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = os.environ.get("FRAMESELECT_RELEASE_FILES")
    path = Path(base).expanduser() / "streamingbench" / f"questions_{split}.json" if base else None
    if path is None or not path.is_file():
        pytest.skip(f"FRAMESELECT_RELEASE_FILES/streamingbench/questions_{split}.json is not there (docs/streaming.md says where it comes from)")
    monkeypatch.setattr(loading, "find_video", lambda folders, name, extensions=loading.VIDEO_EXTENSIONS: Path(folders[0]) / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnnotationWarning)
        samples = list(StreamingBench(root=tmp_path, annotations=path, split=split, videos=tmp_path))
    assert len(samples) == {"real": 2500, "omni": 1500, "sqa": 250}[split]
    records = []
    for s in samples:
        response = fixed_response(s.id)
        if response is None:
            records.append(SampleRecord(s.id, {}, status="failed", metadata=s.metadata))
        else:
            records.append(SampleRecord(s.id, {"sb_correct": sb_correct(s, response)}, metadata=s.metadata))
    scores = sb_scores(records)
    for task, (answered, correct) in OFFICIAL[split].items():
        assert scores["sb_total" if task == "total" else f"sb/{task}"] == pytest.approx(correct / answered, abs=1e-15), task
    for (which, task), value in OFFICIAL_ACCURACY.items():
        if which == split:
            assert scores["sb_total" if task == "total" else f"sb/{task}"] == value
    if split == "real":
        assert scores["sb_realtime"] == scores["sb_total"]
