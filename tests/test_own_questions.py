"""One's own questions, visible: runs over lists of samples get a name and keep their samples in the store, questions over
several videos show each video's frames (records, ``show --samples``, ``export-selections``, the report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import frameselect
from frameselect.cli import main
from frameselect.errors import ConfigError
from frameselect.store import Store, sample_from_json, sample_to_json
from frameselect.types import Query, Sample, Span, VideoFrames, VideoRef


def _samples(tiny_root: Path) -> list[Sample]:
    a, b = str(tiny_root / "tiny_a.mp4"), str(tiny_root / "tiny_b.mp4")
    both = Sample.across(
        "both", [VideoRef("video_1", a, (Span(4.0, 4.6),)), VideoRef("video_2", b)], Query("Which shows a square first?", ("the first", "the second")), "B"
    )
    one = Sample("one", a, Query("What colour?", ("red", "green")), "B", (Span(4.0, 4.6),), {"kind": "needle"})
    return [both, one]


def test_video_ref_and_video_frames_are_exported_beside_sample() -> None:
    assert frameselect.VideoRef is frameselect.types.VideoRef
    assert frameselect.VideoFrames is frameselect.types.VideoFrames
    assert {"VideoRef", "VideoFrames"} <= set(frameselect.__all__)


def test_a_question_over_several_videos_keeps_each_videos_frames(tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    result = frameselect.evaluate("uniform", dataset=_samples(tiny_root), k=4, store=store, dataset_name="mine")
    both, one = result.records
    # uniform over equal shares: 2 frames of each video, at the ends of its 1 fps pool (12 s and 9 s long)
    assert both.videos == (VideoFrames("video_1", (0, 11), (0.0, 11.0)), VideoFrames("video_2", (0, 8), (0.0, 8.0)))
    assert both.selection == (0, 11) and both.timestamps == (0.0, 11.0)  # the first video's, as a one-video reader expects
    assert one.videos == () and len(one.selection) == 4
    assert result.config["dataset"].startswith("mine:")
    assert main(["show", result.run_id[:10], "--store", str(store), "--samples"]) == 0
    out = capsys.readouterr().out
    assert "video_1: [0, 11]; video_2: [0, 8]" in out


def test_a_run_over_a_list_exports_from_its_store_alone(tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    result = frameselect.evaluate("uniform", dataset=_samples(tiny_root), k=4, store=store)
    out = tmp_path / "sel.json"
    assert main(["export-selections", result.run_id[:10], "--store", str(store), "-o", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in doc["samples"]}
    assert rows["one"]["times"] == [0.0, 3.0, 7.0, 11.0] and rows["one"]["frame_indices"] == [0, 30, 70, 110]  # uniform on 12 pool frames; a 10 fps video
    assert [v["id"] for v in rows["both"]["videos"]] == ["video_1", "video_2"]
    assert rows["both"]["videos"][1]["frame_indices"] == [0, 80] and rows["both"]["videos"][1]["video"].endswith("tiny_b.mp4")
    # the importer refuses a question over several videos rather than import its first video alone
    with pytest.raises(frameselect.FrameselectError, match="several videos"):
        from frameselect._engine.selections import read_published

        read_published("plain", out)


def test_lists_of_samples_get_distinct_names_and_dataset_name_names_one(tiny_root: Path) -> None:
    from frameselect.datasets.base import InMemoryDataset

    first, second = InMemoryDataset(_samples(tiny_root)[:1]), InMemoryDataset(_samples(tiny_root)[1:])
    assert first.name.startswith("samples_") and second.name.startswith("samples_") and first.name != second.name
    assert InMemoryDataset(_samples(tiny_root)[:1]).name == first.name  # the same samples, the same name
    assert InMemoryDataset(_samples(tiny_root), name="mine").id.startswith("mine:")
    with pytest.raises(ConfigError, match="dataset_name= names a list"):
        frameselect.evaluate("uniform", dataset="tiny", dataset_name="mine")
    with pytest.raises(ConfigError, match="without ':'"):
        frameselect.evaluate("uniform", dataset=_samples(tiny_root), dataset_name="a:b")


def test_samples_round_trip_through_the_store(tiny_root: Path, tmp_path: Path) -> None:
    samples = _samples(tiny_root) + [Sample("later", "x.mp4", Query("when?"), None, (), {"kind": "stream"}, asked_at=3.5)]
    assert [sample_from_json(sample_to_json(s)) for s in samples] == samples
    with Store(tmp_path / "s.sqlite") as st:
        st.put_samples("d:1", samples[:2])
        st.put_samples("d:1", samples)  # a longer run of the same dataset adds what is new
        assert st.samples("d:1") == samples and st.samples("other") is None


@pytest.mark.slow
def test_a_jsonl_of_three_questions_runs_and_reports_its_questions(tiny_root: Path, tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    (tmp_path / "clips").mkdir()
    for name in ("tiny_a.mp4", "tiny_b.mp4"):
        shutil.copy(tiny_root / name, tmp_path / "clips" / name)
    lines = [
        {
            "id": "sq",
            "video": "clips/tiny_a.mp4",
            "question": "What colour is the background when the square appears?",
            "options": ["red", "green"],
            "answer": "B",
            "evidence": [[4.0, 4.6]],
            "kind": "needle",
        },
        {
            "id": "count",
            "video": "clips/tiny_b.mp4",
            "question": "How many times does a white square appear?",
            "options": ["1", "2"],
            "answer": "2",
            "evidence": [[1.0, 1.5], [7.0, 7.5]],
            "kind": "counting",
        },
        {
            "id": "both",
            "videos": [{"path": "clips/tiny_a.mp4", "evidence": [[4.0, 4.6]]}, "clips/tiny_b.mp4"],
            "question": "Which video starts with a purple scene?",
            "options": ["the first", "the second"],
            "answer": "B",
            "kind": "cross",
        },
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store, page = str(tmp_path / "l.sqlite"), tmp_path / "report.html"
    assert main(["run", "-d", "local", "-D", f"file={questions}", "-s", "uniform", "-k", "4", "--store", store, "--no-progress"]) == 0
    assert main(["report", "--store", store, "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    for line in lines:
        assert str(line["question"]) in html
    assert html.count("data:image/jpeg;base64,") >= 3 * 4  # each question's 4 chosen frames as thumbnails
    assert "no question text" not in html


def test_a_question_over_several_videos_resamples_with_its_videos(tiny_root: Path, tmp_path: Path) -> None:
    from frameselect._core.video import content_hash
    from frameselect._studies.analysis import load_runs

    result = frameselect.evaluate("uniform", dataset=_samples(tiny_root), k=4, store=tmp_path / "s.sqlite")
    with Store(tmp_path / "s.sqlite") as st:
        (run,) = load_runs(st, [result.run_id])
    clusters = dict(zip((r.sample_id for r in run.records), run.clusters, strict=True))
    a, b = content_hash(str(tiny_root / "tiny_a.mp4")), content_hash(str(tiny_root / "tiny_b.mp4"))
    assert clusters == {"both": f"{a}+{b}", "one": a}  # "one" is on tiny_a too: the question over both is not the same cluster


def test_a_run_over_a_list_replays_from_its_store_alone(tiny_root: Path, tmp_path: Path) -> None:
    from frameselect._engine.replay import replay

    store = tmp_path / "s.sqlite"
    samples = _samples(tiny_root)
    first = frameselect.evaluate("uniform", ["evidence_recall"], dataset=samples, k=4, store=store)
    again = replay(first.run_id, "oracle", store=store, evaluators=["mc_accuracy"])
    assert [r.sample_id for r in again.records] == ["both", "one"] and all(r.status == "ok" for r in again.records)
    # "one": uniform's frames at 0, 3, 7, 11 s miss the evidence at 4.0-4.6 s, so the oracle (right iff covered) is wrong
    assert {r.sample_id: r.metrics["mc_accuracy"] for r in again.records}["one"] == 0.0
