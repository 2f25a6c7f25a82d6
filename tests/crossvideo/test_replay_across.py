"""Replay of runs over questions across several videos: each video's stored selection, answered over all the videos by another backend."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

import frameselect
from colour_encoder import MeanColour
from frameselect._engine.replay import replay
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.cli import main
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError
from frameselect.registry import datasets
from frameselect.store import Store
from frameselect.types import Answer


class SaysA(Answerer):
    """Answers "A" to everything and notes what it was shown: each video's id and selected pool indices."""

    needs_frames: ClassVar[bool] = False

    def __init__(self) -> None:
        self.shown: dict[str, list[tuple[str, tuple[int, ...]]]] = {}

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        for r in requests:
            self.shown[r.sample.id] = [(v.id, tuple(v.selection.indices)) for v in r.inputs]
        return [Answer(text="A") for _ in requests]


def _copied(samples: Sequence[Any], dest: Path) -> list[Any]:
    """The samples with their videos copied into ``dest`` (there a test may change or remove them)."""
    paths: dict[str, str] = {}
    out = []
    for s in samples:
        videos = []
        for v in s.videos:
            if v.path not in paths:
                paths[v.path] = str(shutil.copy(v.path, dest / Path(v.path).name))
            videos.append(dataclasses.replace(v, path=paths[v.path]))
        out.append(dataclasses.replace(s, video=videos[0].path, videos=tuple(videos)))
    return out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cross-video suite on 2 videos of 0.5 min (5 questions over one pair), its videos copied where a test may change them."""
    root = tmp_path_factory.mktemp("suite")
    ds = datasets.create("haystack_cross", n_videos=2, minutes=0.5, events_per_minute=3.0, root=root)
    samples = list(ds.samples())
    own = _copied(samples, tmp_path_factory.mktemp("videos"))
    return {"root": root, "dataset": ds, "samples": samples, "own": own, "cache": tmp_path_factory.mktemp("cache")}


def _parent(suite: dict[str, Any], store: Path, selector: str = "uniform", **kw: Any) -> Any:
    kw = {"budget_policy": "equal", **kw} if selector == "uniform" else {"encoder": MeanColour(), **kw}
    return frameselect.evaluate(
        selector=selector,
        dataset=suite["dataset"],
        k=6,
        evaluators=("evidence_recall", "mc_accuracy"),
        answerer="oracle",
        store=store,
        cache_dir=suite["cache"],
        **kw,
    )


def test_replay_answers_each_videos_stored_frames_and_scores_like_the_run(suite: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    parent = _parent(suite, db)
    ans = SaysA()
    rep = replay(parent.run_id, ans, store=db, cache_dir=suite["cache"])
    samples = suite["samples"]
    assert rep.config["replay_of"] == parent.run_id and [r.status for r in rep.records] == ["ok"] * len(samples)
    # uniform, 3 of each 30-frame pool (equal shares of 6): what the answerer saw, per video
    assert ans.shown == {s.id: [("video_1", (0, 14, 29)), ("video_2", (0, 14, 29))] for s in samples}
    assert [r.metrics["mc_accuracy"] for r in rep.records] == [float(s.answer == "A") for s in samples]
    assert [r.answer for r in rep.records] == ["A"] * len(samples)
    for mine, theirs in zip(rep.records, parent.records, strict=True):
        assert mine.metrics["evidence_recall"] == theirs.metrics["evidence_recall"] and mine.metrics["frames"] == 6.0
        assert mine.metadata["per_video_recall"] == theirs.metadata["per_video_recall"] and mine.k == 6 and mine.policy == "equal"
    with Store(db) as st:
        for s in samples:  # the replay keeps the frames it answered over, per video, as the run did
            assert [(r.video, r.video_id, r.selection.indices, r.timestamps) for r in st.video_selections(rep.run_id, s.id)] == [
                (r.video, r.video_id, r.selection.indices, r.timestamps) for r in st.video_selections(parent.run_id, s.id)
            ]
    assert rep.counters.selector_calls == 0 and rep.counters.frames_encoded == 0 and rep.counters.frames_decoded == 0
    again = replay(parent.run_id, SaysA(), store=db, cache_dir=suite["cache"])
    assert again.run_id == rep.run_id and again.counters.samples_skipped == len(samples)


def test_replay_keeps_a_joint_selections_bindings(suite: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    parent = _parent(suite, db, "binding")
    rep = replay(parent.run_id, SaysA(), store=db, cache_dir=suite["cache"])
    assert [r.metadata["bindings"] for r in rep.records] == [r.metadata["bindings"] for r in parent.records]
    # every question of the pair: 5 bindings, all between frames of the same card (the former serial loop's values, test_run_across.py)
    assert [r.metrics["binding_accuracy"] for r in rep.records] == [1.0] * 5 and [len(r.metadata["bindings"]) for r in rep.records] == [5] * 5
    assert [r.policy for r in rep.records] == ["joint"] * 5


def test_a_changed_video_is_stale_and_a_missing_row_is_missing_each_naming_the_video(suite: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    own = _copied(suite["samples"], tmp_path)
    parent = frameselect.evaluate(
        selector="uniform", dataset=InMemoryDataset(own), k=6, evaluators=("evidence_recall",), store=db, cache_dir=tmp_path / "cache"
    )
    assert not parent.failed
    shutil.copy(own[0].videos[0].path, own[0].videos[1].path)  # video_2 now holds video_1's content
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM video_selections WHERE run_id = ? AND sample_id = ? AND video = 'video_1'", (parent.run_id, own[0].id))
    rep = replay(parent.run_id, SaysA(), store=db, dataset=own, cache_dir=tmp_path / "cache")
    first, *rest = rep.records
    assert first.status == "failed" and first.error is not None and first.error.startswith("MissingSelectionError: run ")
    assert f"no selection for video 'video_1' of sample {own[0].id!r}" in first.error
    assert all(r.status == "failed" for r in rest)
    assert all(r.error is not None and r.error.startswith("StaleSelectionError: video 'video_2' of sample") for r in rest)
    assert all("changed since the selection was stored" in (r.error or "") for r in rest)


def test_a_sample_that_failed_in_the_run_is_missing_in_the_replay(suite: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    broken = dataclasses.replace(
        suite["own"][0], id="broken", videos=(suite["own"][0].videos[0], dataclasses.replace(suite["own"][0].videos[1], path=str(tmp_path / "gone.mp4")))
    )
    ds = [broken, suite["own"][1]]
    parent = frameselect.evaluate(selector="uniform", dataset=InMemoryDataset(ds), k=4, evaluators=("evidence_recall",), store=db, cache_dir=suite["cache"])
    assert [r.status for r in parent.records] == ["failed", "ok"]
    ans = SaysA()
    rep = replay(parent.run_id, ans, store=db, dataset=ds, cache_dir=suite["cache"])
    assert [r.status for r in rep.records] == ["failed", "ok"] and list(ans.shown) == [suite["own"][1].id]
    assert "no stored selections for sample 'broken', a question over several videos" in (rep.records[0].error or "")


def test_a_holmes_run_is_refused_before_any_record(suite: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    parent = _parent(suite, db, "holmes")
    assert not parent.failed
    with pytest.raises(ConfigError, match="'holmes', whose answer is its read-out"):
        replay(parent.run_id, SaysA(), store=db, cache_dir=suite["cache"])
    assert main(["replay", parent.run_id[:12], "--answerer", "oracle", "--store", str(db), "--cache-dir", str(suite["cache"]), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "the store keeps neither" in err and "Traceback" not in err
    with Store(db) as st:
        assert [r.run_id for r in st.runs()] == [parent.run_id]  # no replay run was opened


def test_cli_replays_a_run_over_several_videos(suite: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "c.db"
    parent = _parent(suite, db)
    argv = ["replay", parent.run_id[:12], "--answerer", "label_reader", "--store", str(db), "--cache-dir", str(suite["cache"]), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"of run {parent.run_id[:12]}" in out and "failed:" not in out
    with Store(db) as st:
        (rep,) = [r for r in st.runs() if r.parent_run == parent.run_id]
        assert st.count(rep.run_id) == {"ok": len(suite["samples"])}


class PaysQwen(SaysA):
    """SaysA, declaring Qwen2.5-VL's cost model: a replay prices each video's stored frames for it."""

    def token_model(self) -> Any:
        from frameselect.tokens import token_model

        return token_model("qwen2_5_vl")


def test_replay_prices_each_videos_stored_frames_for_the_new_answerer(suite: dict[str, Any], tmp_path: Path) -> None:
    from frameselect._core.video.probing import probe
    from frameselect.tokens import token_model

    db = tmp_path / "t.db"
    parent = _parent(suite, db)
    assert "tokens" not in parent.records[0].metrics  # the oracle declares no cost model
    rep = replay(parent.run_id, PaysQwen(), store=db, cache_dir=suite["cache"])
    qwen = token_model("qwen2_5_vl")
    for sample, record in zip(suite["samples"], rep.records, strict=True):
        sizes = [(probe(v.path).height, probe(v.path).width) for v in sample.videos]
        # 3 frames a video (equal shares of 6), each video priced on its own (3 frames pad to 2 temporal pairs), summed
        assert record.metrics["tokens"] == float(sum(qwen.visual_tokens([size] * 3) for size in sizes))
    assert rep.table["tokens"] == rep.records[0].metrics["tokens"]
