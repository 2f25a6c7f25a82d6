"""``frameselect table`` on runs over several videos: videos per question, the frames' sharing, accuracy by number of videos, ``--per-video``.

The store is built by real runs (the cross-video suite's videos, 2 and 3 per question); every printed
value is checked against what the store holds, computed here from its records and rows.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import pytest

import frameselect
from colour_encoder import MeanColour
from frameselect._engine.evaluate_across import evaluate_across
from frameselect.cli import main
from frameselect.registry import datasets
from frameselect.store import Store
from frameselect.types import SampleRecord

pytestmark = pytest.mark.slow  # the suite's videos are written, and three runs made


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, tiny_root: Path) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("table-across")
    root, db = tmp / "suite", tmp / "runs.sqlite"
    kw: dict[str, Any] = {"dataset_params": {"n_videos": 3, "minutes": 0.5, "root": root}, "store": db, "cache_dir": tmp / "cache"}
    ids = {
        "uniform": evaluate_across("haystack_cross", "uniform", 12, budget_policy="equal", answerer="oracle", **kw).run_id,
        "union": evaluate_across("haystack_cross", "topk_union", 12, encoder=MeanColour(), answerer="oracle", **kw).run_id,
    }
    one = frameselect.evaluate("uniform", ["evidence_recall"], list(datasets.create("tiny", root=str(tiny_root))), 2, store=db)
    ids["one video"] = one.run_id
    return db, ids


def _blocks(text: str) -> list[list[dict[str, str]]]:
    """The CSV tables of one output, each as its rows."""
    return [list(csv.DictReader(io.StringIO(block))) for block in text.strip().split("\n\n")]


def _label(db: Path, run_id: str) -> str:
    with Store(db) as st:
        return st.run(run_id).label


def _records(db: Path, run_id: str) -> list[SampleRecord]:
    with Store(db) as st:
        return st.records(run_id, status="ok")


def test_table_shows_videos_per_question_the_frames_sharing_and_accuracy_by_videos(
    store: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = store
    assert main(["table", "--store", str(db), "--boot", "20", "-f", "csv"]) == 0
    blocks = _blocks(capsys.readouterr().out)
    sharing = [b for b in blocks if b and "frames v1" in b[0]]
    assert len(sharing) == 1
    rows = {row["selector"]: row for row in sharing[0]}
    assert _label(db, ids["one video"]) not in rows  # a one-video run has no line here
    assert set(rows) == {_label(db, ids["uniform"]), _label(db, ids["union"])}
    # the suite over 3 videos: one pair and one triple of videos, 6 questions each
    uniform = rows[_label(db, ids["uniform"])]
    assert (uniform["questions"], uniform["videos"], uniform["videos_min"], uniform["videos_max"]) == ("12", "2.5", "2", "3")
    # equal shares of 12: 6 + 6 over two videos, 4 + 4 + 4 over three
    assert (uniform["frames"], uniform["frames v1"], uniform["frames v2"], uniform["frames v3"], uniform["policy"]) == ("12", "5", "5", "4", "equal")
    for name in ("uniform", "union"):
        records = _records(db, ids[name])
        row = rows[_label(db, ids[name])]
        assert row["questions"] == str(len(records)) and all(len(r.videos) > 1 for r in records)
        for position in range(3):
            counts = [len(r.videos[position].indices) for r in records if len(r.videos) > position]
            assert float(row[f"frames v{position + 1}"]) == pytest.approx(sum(counts) / len(counts), abs=1e-6)
        # evidence share: over the questions whose evidence (stored recall not NaN) lies in some of their videos, not all
        shares, even = [], []
        for r in records:
            recall = r.metadata["per_video_recall"]
            held = [v for v in r.videos if not math.isnan(recall[v.video])]
            if 0 < len(held) < len(r.videos):
                shares.append(sum(len(v.indices) for v in held) / sum(len(v.indices) for v in r.videos))
                even.append(len(held) / len(r.videos))
        assert shares and row["evidence q"] == str(len(shares))
        assert float(row["evidence share"]) == pytest.approx(sum(shares) / len(shares), abs=1e-5)
        assert float(row["even share"]) == pytest.approx(sum(even) / len(even), abs=1e-5)
    assert rows[_label(db, ids["union"])]["policy"] == "joint"
    # accuracy by number of videos: mc_accuracy over each run's questions of 2 and of 3 videos
    by = [b for b in blocks if b and "mc_accuracy" in b[0] and "videos" in b[0] and "frames v1" not in b[0]]
    assert len(by) == 1
    got = {(row["selector"], row["videos"]): (row["n"], float(row["mc_accuracy"])) for row in by[0]}
    expected = {}
    for name in ("uniform", "union"):
        records = _records(db, ids[name])
        for n in (2, 3):
            group = [r.metrics["mc_accuracy"] for r in records if len(r.videos) == n]
            expected[(_label(db, ids[name]), str(n))] = (str(len(group)), pytest.approx(sum(group) / len(group), abs=1e-6))
    assert got == expected


def test_per_video_lists_each_questions_frames_in_each_video(store: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = store
    assert main(["table", ids["union"][:10], "--store", str(db), "--boot", "20", "-f", "csv", "--per-video"]) == 0
    listing = [b for b in _blocks(capsys.readouterr().out) if b and "indices" in b[0]]
    assert len(listing) == 1
    rows = listing[0]
    with Store(db) as st:
        records = st.records(ids["union"], status="ok")
        expected = []
        for r in records:
            for v in st.video_selections(ids["union"], r.sample_id):
                expected.append(
                    [
                        r.sample_id,
                        v.video,
                        v.video_id[:12],
                        str(len(v.selection.indices)),
                        ", ".join(map(str, v.selection.indices)),
                        ", ".join(f"{t:.2f}" for t in v.timestamps),
                    ]
                )
    assert [[row[c] for c in ("sample", "video", "content", "frames", "indices", "times (s)")] for row in rows] == expected
    assert len(expected) == sum(len(r.videos) for r in records) and {row["video"] for row in rows} == {"video_1", "video_2", "video_3"}


def test_one_video_runs_get_no_section_and_per_video_says_so(store: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = store
    assert main(["table", ids["one video"][:10], "--store", str(db), "--boot", "20", "--per-video"]) == 0
    out = capsys.readouterr().out
    assert "questions over several videos" not in out.replace("no questions over several videos", "")
    assert "frames v1" not in out and "no questions over several videos in these runs" in out
