"""Published selections in and out: export a run, import it back, replay both: identical answers and metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import frameselect
from frameselect._engine.replay import replay
from frameselect._engine.selections import Published, SelectionImportError, export_selections, import_selections, map_to_pool, read_published
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.cli import main
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool


class ByFrames(Answerer):
    """Answers an option letter computed from the video frames it was given (so other frames give other answers)."""

    needs_frames: ClassVar[bool] = False

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        out = []
        for r in requests:
            frames = [int(r.pool.frame_indices[i]) for i in r.selection.indices]
            out.append(Answer(text="ABCD"[sum(frames) % 4]))
        return out


@pytest.fixture()
def exported(tiny, tmp_path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    run = frameselect.evaluate(selector="uniform", dataset=tiny, k=3, store=store, cache_dir=cache)
    doc = export_selections(run.run_id, store=store, dataset=tiny, cache_dir=cache)
    path = tmp_path / "uniform.json"
    path.write_text(json.dumps(doc))
    return {"run": run, "store": store, "cache": cache, "doc": doc, "path": path, "tiny": tiny}


def test_export_lists_frames_and_times(exported: dict[str, Any]) -> None:
    doc, run = exported["doc"], exported["run"]
    assert doc["format"] == "frameselect-selections" and doc["run"] == run.run_id and doc["selector"] == "uniform"
    by_id = {r.sample_id: r for r in run.records}
    assert sorted(row["id"] for row in doc["samples"]) == sorted(by_id)
    for row in doc["samples"]:
        assert row["pool_indices"] == list(by_id[row["id"]].selection)
        assert row["times"] == pytest.approx(list(by_id[row["id"]].timestamps))
        assert len(row["frame_indices"]) == 3 and row["frame_indices"] == sorted(row["frame_indices"])


@pytest.mark.parametrize("pool", ["all", "fps=1.0"])
def test_round_trip_replays_identically(exported: dict[str, Any], pool: str, capsys: pytest.CaptureFixture[str]) -> None:
    kw = {"store": exported["store"], "cache_dir": exported["cache"]}
    imported = import_selections("plain", exported["path"], exported["tiny"], name="uniform-again", pool=pool, **kw)
    assert imported.run_id != exported["run"].run_id and imported.config["selector"]["name"] == "uniform-again"
    with Store(exported["store"]) as st:
        assert st.run(imported.run_id).kind == "import"
    a = replay(exported["run"].run_id, ByFrames(), dataset=exported["tiny"], progress=False, **kw)
    b = replay(imported.run_id, ByFrames(), dataset=exported["tiny"], progress=False, **kw)
    ra, rb = ({r.sample_id: r for r in x.records} for x in (a, b))
    assert sorted(ra) == sorted(rb) and len(ra) == 6
    for sid in ra:
        assert ra[sid].answer == rb[sid].answer
        assert ra[sid].timestamps == pytest.approx(rb[sid].timestamps)
        assert ra[sid].metrics.keys() == rb[sid].metrics.keys()
        for key, value in ra[sid].metrics.items():
            if "latency" not in key and not key.startswith("answer_"):
                assert rb[sid].metrics[key] == pytest.approx(value, nan_ok=True), (sid, key)
    for key in ("mc_accuracy", "evidence_recall", "frame_precision"):
        assert a.table[key] == pytest.approx(b.table[key])
    if pool == "fps=1.0":
        assert all(ra[s].selection == rb[s].selection for s in ra)
        # the imported run and its replay sit beside the original in tables
        assert main(["table", "--store", str(exported["store"]), "--boot", "50"]) == 0
        out = capsys.readouterr().out
        assert "uniform-again" in out and "uniform@k=3" in out
    again = export_selections(imported.run_id, **kw, dataset=exported["tiny"])
    assert [(r["id"], r["frame_indices"]) for r in again["samples"]] == [(r["id"], r["frame_indices"]) for r in exported["doc"]["samples"]]


def test_import_is_keyed_by_the_file(exported: dict[str, Any], tmp_path: Path) -> None:
    kw = {"store": exported["store"], "cache_dir": exported["cache"]}
    first = import_selections("plain", exported["path"], exported["tiny"], **kw)
    assert import_selections("plain", exported["path"], exported["tiny"], **kw).run_id == first.run_id
    doc = exported["doc"]
    doc["samples"][0]["frame_indices"][0] += 1
    other = tmp_path / "changed.json"
    other.write_text(json.dumps(doc))
    assert import_selections("plain", other, exported["tiny"], **kw).run_id != first.run_id


def test_bad_records_are_named(exported: dict[str, Any], tmp_path: Path) -> None:
    kw = {"store": exported["store"], "cache_dir": exported["cache"]}
    sid = exported["doc"]["samples"][0]["id"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"no-such-sample": [0, 1]}))
    with pytest.raises(SelectionImportError, match="'no-such-sample'.*matches no sample"):
        import_selections("plain", bad, exported["tiny"], **kw)
    bad.write_text(json.dumps({sid: [0, 10**6]}))
    with pytest.raises(SelectionImportError, match=rf"{sid}.*frame 1000000 is not a frame of the video"):
        import_selections("plain", bad, exported["tiny"], **kw)
    bad.write_text(json.dumps({sid: [1]}))
    with pytest.raises(SelectionImportError, match="frame 1 is not in the candidate pool 'fps=1"):
        import_selections("plain", bad, exported["tiny"], pool="fps=1.0", **kw)
    bad.write_text(json.dumps({sid: [999.0]}))
    with pytest.raises(SelectionImportError, match="time 999 s is outside the video"):
        import_selections("plain", bad, exported["tiny"], unit="seconds", **kw)
    with Store(exported["store"]) as st:
        assert [r.kind for r in st.runs()] == ["run"]  # nothing stored by a failed import
    assert main(["import-selections", "plain", str(bad), "-d", "tiny", "--store", str(exported["store"])]) == 2


def test_published_formats(tmp_path: Path) -> None:
    tspo = tmp_path / "tspo.json"
    tspo.write_text(json.dumps([{"question_id": "Q0", "video_name": "needle_32.mp4", "question": "What?\n(A) x", "frame_idx": [0.0, 30.0, 90.0]}]))
    assert read_published("tspo", tspo) == [Published("tspo.json record 0 (Q0)", (0.0, 30.0, 90.0), "frames", "Q0", "needle_32.mp4", "What?\n(A) x")]
    aks = tmp_path / "selected_frames.json"
    aks.write_text(json.dumps([[0, 30], [60]]))
    assert [(p.position, p.values) for p in read_published("aks", aks)] == [(0, (0.0, 30.0)), (1, (60.0,))]
    bolt = tmp_path / "bolt.json"
    bolt.write_text(json.dumps({"vid": [{"question_id": "001-1", "question": "q", "frames": [1.25, 7.5]}]}))
    (pub,) = read_published("bolt", bolt)
    assert (pub.unit, pub.values, pub.sample_id, pub.video) == ("seconds", (1.25, 7.5), "001-1", "vid")
    itg = tmp_path / "results.jsonl"
    itg.write_text(json.dumps({"doc_id": 3, "index": [40, 10, 20, 0], "logits": [0.9, 0.8, 0.7, 0.1], "video_path": "a.mp4"}) + "\n")
    assert read_published("videoitg", itg, k=2)[0].values == (40.0, 10.0)
    with pytest.raises(SelectionImportError, match="give k"):
        read_published("videoitg", itg)
    tspo.write_text(json.dumps([{"question_id": "Q0", "frame_idx": [0, "x"]}]))
    with pytest.raises(SelectionImportError, match=r"record 0 \(Q0\): frame_idx holds 'x'"):
        read_published("tspo", tspo)


def test_time_mapping_by_hand() -> None:
    pool = CandidatePool(video_id="v", timestamps=np.array([0.0, 0.04, 0.08, 0.12]), frame_indices=np.arange(4), duration=0.16)
    # 0.039 is within 5 ms of 0.04; 0.07 shows the frame that started at 0.04; 0.15 the last one
    assert map_to_pool(Published("r", (0.039, 0.07, 0.15), "seconds"), pool, 4, 0.16) == [1, 3]
    assert map_to_pool(Published("r", (0.0, 0.121), "seconds"), pool, 4, 0.16) == [0, 3]


def test_cli_export_then_import_tspo_records_matched_by_video_and_question(
    exported: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, cache, tiny = str(exported["store"]), str(exported["cache"]), exported["tiny"]
    out = tmp_path / "cli.json"
    assert main(["export-selections", exported["run"].run_id[:10], "-o", str(out), "--store", store, "--cache-dir", cache]) == 0
    doc = json.loads(out.read_text())
    assert doc["samples"] == exported["doc"]["samples"]
    questions = {s.id: s.query.text for s in tiny}
    # TSPO's layout: benchmark records with frame_idx as floats, ids the dataset does not know
    records = [
        {
            "question_id": f"Q{i}",
            "video_name": Path(row["video"]).name,
            "question": questions[row["id"]] + "\n(A) ...",
            "frame_idx": [float(f) for f in row["frame_indices"]],
        }
        for i, row in enumerate(doc["samples"])
    ]
    tspo = tmp_path / "TSPO_tiny_frameIdx.json"
    tspo.write_text(json.dumps(records))
    capsys.readouterr()
    assert main(["import-selections", "tspo", str(tspo), "-d", "tiny", "-D", f"root={tiny.root}", "--store", store, "--cache-dir", cache]) == 0
    assert "imported 6 selections" in capsys.readouterr().out
    with Store(store) as st:
        (info,) = [r for r in st.runs() if r.kind == "import"]
        got = {r.sample_id: r.timestamps for r in st.records(info.run_id)}
    assert got == {r.sample_id: pytest.approx(r.timestamps) for r in exported["run"].records}
    assert info.selector == "tspo-published" and info.config["selector"]["params"]["file"] == tspo.name


def test_the_command_lists_the_importers_formats() -> None:
    from frameselect._engine.selections import FORMATS
    from frameselect.cli.commands.import_selections import FORMATS as CLI_FORMATS

    assert CLI_FORMATS == FORMATS
