"""OVO-Bench: the loader on its repository's layout, and its official scoring.

Expected values of the release-file test are the outputs of the repository's
own scorer (repository JoeLeelyf/OVO-Bench, commit c34093f,
``utils/OVOBenchScore.py`` ``OVOBenchOfflineScore.calculate_score_backward_realtime``
and ``calculate_score_forward``, driven as ``score.py --mode offline`` does)
on ``data/ovo_bench_new.json`` (sha256 dc4a90da...) with the fixed
predictions of :func:`fixed_response`, written in its results layout.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

import frameselect.datasets._loading as loading
from annotation_files import touch, write_json
from frameselect.datasets.ovo_bench import OVOBench
from frameselect.errors import AnnotationError
from frameselect.evaluators.ovo_bench import ovo_correct, ovo_scores
from frameselect.registry import datasets, evaluators
from frameselect.types import SampleRecord

RECORDS = [
    {"id": 0, "task": "EPM", "video": "Ego4D/clips/a.mp4", "realtime": 215, "question": "Who?", "answer": "b", "options": ["a", "b", "c", "d"], "gt": 1},
    {"id": 1, "task": "OCR", "video": "AutoEvalMetaData/1.mp4", "realtime": 54.2, "question": "What?", "answer": "x", "options": ["x", "y"], "gt": 0},
    {
        "id": 2,
        "task": "REC",
        "video": "pt/v.mp4",
        "activity": "jump",
        "start_times": [6],
        "end_times": [17],
        "test_info": [{"realtime": 17, "count": 1}, {"realtime": 32.0, "count": 2}],
    },
    {"id": 3, "task": "SSR", "video": "COIN/s.mp4", "test_info": [{"realtime": 27, "step": "cut", "type": 1}, {"realtime": 40, "step": "cut", "type": 0}]},
    {
        "id": 4,
        "task": "CRR",
        "video": "MovieNet/m.mp4",
        "question": "What does she do?",
        "test_info": [{"realtime": 297, "type": 0}, {"realtime": 310, "type": 1}],
    },
]


def layout(root: Path, records: Sequence[object] = RECORDS) -> Path:
    write_json(root / "data" / "ovo_bench_new.json", records)
    touch(*(root / "data" / "src_videos" / r["video"] for r in RECORDS))  # type: ignore[index]
    return root


def test_one_sample_per_question_and_per_forward_check_point(tmp_path: Path) -> None:
    ds = datasets.create("ovo_bench", root=str(layout(tmp_path)))
    samples = {s.id: s for s in ds}
    assert list(samples) == ["0", "1", "2/0", "2/1", "3/0", "3/1", "4/0", "4/1"]
    epm = samples["0"]
    assert epm.asked_at == 215.0 and epm.answer == "B" and epm.query.options == ("a", "b", "c", "d")
    assert epm.metadata == {"task": "EPM", "category": "backward", "ovo_id": 0}
    assert epm.video == str(tmp_path / "data" / "src_videos" / "Ego4D/clips/a.mp4")
    assert samples["1"].asked_at == 54.2 and samples["1"].metadata["category"] == "realtime"
    rec = samples["2/1"]
    assert rec.asked_at == 32.0 and rec.answer == "2" and rec.metadata["count"] == 2 and rec.metadata["category"] == "forward"
    assert rec.query.text == "How many times did they jump?"
    assert samples["3/0"].answer == "Yes" and samples["3/1"].answer == "No" and samples["3/1"].metadata["step"] == "cut"
    assert samples["4/0"].answer == "No" and samples["4/1"].asked_at == 310.0
    only = datasets.create("ovo_bench", root=str(tmp_path), tasks=["SSR"])
    assert [s.id for s in only] == ["3/0", "3/1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "XYZ"}, "unknown OVO-Bench task"),
        ({"realtime": -1}, "≥ 0"),
        ({"gt": 7}, "gt"),
        ({"video": "../../etc/passwd"}, "outside"),
    ],
)
def test_bad_records_name_the_file_record_and_field(tmp_path: Path, change: dict[str, object], message: str) -> None:
    layout(tmp_path, [{**RECORDS[0], **change}])
    with pytest.raises(AnnotationError, match=message) as info:
        list(OVOBench(root=tmp_path))
    assert "record 0" in str(info.value)


def test_official_scoring_by_hand(tmp_path: Path) -> None:
    samples = {s.id: s for s in OVOBench(root=layout(tmp_path))}
    # multiple choice: the right letter anywhere in the response (the scorer's substring test)
    assert [ovo_correct(samples["0"], r) for r in ("B", "b", "A. B", "", None)] == [1.0, 0.0, 1.0, 0.0, 0.0]
    # REC: every digit of the response joined, compared with the count
    assert [ovo_correct(samples["2/1"], r) for r in ("2", "2 times", "1 or 2", "two")] == [1.0, 1.0, 0.0, 0.0]
    # SSR/CRR: "Y"/"N" exactly, else a substring test of "Yes"/"No"
    assert [ovo_correct(samples["3/0"], r) for r in ("Y", "Yes.", "N", "yes")] == [1.0, 1.0, 0.0, 0.0]
    assert [ovo_correct(samples["3/1"], r) for r in ("N", "Not sure", "Y")] == [1.0, 1.0, 0.0]
    records = [
        SampleRecord("0", {"ovo_correct": 1.0}, metadata=samples["0"].metadata),
        SampleRecord("1", {"ovo_correct": 0.0}, metadata=samples["1"].metadata),
        SampleRecord("2/0", {"ovo_correct": 1.0}, metadata=samples["2/0"].metadata),
        SampleRecord("2/1", {"ovo_correct": 0.0}, metadata=samples["2/1"].metadata),
        SampleRecord("3/0", {"ovo_correct": 1.0}, metadata=samples["3/0"].metadata),
        SampleRecord("3/1", {"ovo_correct": 1.0}, metadata=samples["3/1"].metadata),
        SampleRecord("4/0", {}, status="failed", metadata=samples["4/0"].metadata),
    ]
    scores = ovo_scores(records)
    # forward: REC 1/2, SSR 2/2 -> (0.5 + 1) / 2; total: mean of the three categories
    assert scores["ovo_backward"] == 1.0 and scores["ovo_realtime"] == 0.0 and scores["ovo_forward"] == 0.75
    assert scores["ovo_total"] == pytest.approx((1.0 + 0.0 + 0.75) / 3)
    assert evaluators.create("ovo_bench").aggregate(records) == {k: scores[k] for k in ("ovo_backward", "ovo_realtime", "ovo_forward", "ovo_total")}


MC = ["A", "B", "C", "D", "", None, "The answer is B."]
REC = ["1", "2", "3", "x 2 y 1", None, "0"]
YN = ["Y", "N", "Yes", "No.", "Not sure", None]


def fixed_response(ovo_id: int, check: int | None, task: str) -> str | None:
    """The fixed predictions both scorers were given: a choice by CRC-32 of the question (and check point)."""
    if check is None:
        return MC[zlib.crc32(f"ovo/{ovo_id}".encode()) % len(MC)]
    options = REC if task == "REC" else YN
    return options[zlib.crc32(f"ovo/{ovo_id}/{check}".encode()) % len(options)]


#: JoeLeelyf/OVO-Bench c34093f, OVOBenchOfflineScore on data/ovo_bench_new.json with fixed_response (fractions, unrounded)
OFFICIAL = {
    "backward": {"ASI": 0.16216216216216217, "EPM": 0.15151515151515152, "HLD": 0.22580645161290322},
    "realtime": {
        "ACR": 0.1926605504587156,
        "ATR": 0.16379310344827586,
        "FPD": 0.1188118811881188,
        "OCR": 0.16778523489932887,
        "OJR": 0.15760869565217392,
        "STU": 0.14606741573033707,
    },
    "forward": {"CRR": 0.3541666666666667, "REC": 0.10028653295128939, "SSR": 0.39109697933227344},
}
#: what score.py printed for them: category averages and the total (percent, 2 decimals)
PRINTED = {"ovo_backward": 17.98, "ovo_realtime": 15.78, "ovo_forward": 28.19, "ovo_total": 20.65}


def test_scoring_reproduces_the_official_script_on_the_release_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = os.environ.get("FRAMESELECT_RELEASE_FILES")
    path = Path(base).expanduser() / "ovo_bench" / "ovo_bench_new.json" if base else None
    if path is None or not path.is_file():
        pytest.skip("FRAMESELECT_RELEASE_FILES/ovo_bench/ovo_bench_new.json is not there (docs/streaming.md says where it comes from)")
    monkeypatch.setattr(loading, "find_video", lambda folders, name, extensions=loading.VIDEO_EXTENSIONS: Path(folders[0]) / name)
    samples = list(OVOBench(root=tmp_path, annotations=path))
    assert len(samples) == 1640 - 82 - 42 - 48 + 698 + 629 + 240
    records = []
    for s in samples:
        check = s.metadata.get("check")
        response = fixed_response(int(s.metadata["ovo_id"]), None if check is None else int(check), str(s.metadata["task"]))
        records.append(SampleRecord(s.id, {"ovo_correct": ovo_correct(s, response)}, metadata=s.metadata))
    scores = ovo_scores(records)
    for tasks in OFFICIAL.values():
        for task, value in tasks.items():
            assert scores[f"ovo/{task}"] == pytest.approx(value, abs=1e-12), task
    for key, printed in PRINTED.items():
        assert round(100 * scores[key], 2) == printed, key
