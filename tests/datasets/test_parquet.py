"""The official .parquet release path (Video-MME ships test-00000-of-00001.parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def test_videomme_reads_the_official_parquet(tmp_path: Path) -> None:
    import frameselect

    rows = [
        {"video_id": "001", "duration": "short", "domain": "Knowledge", "sub_category": "Humanity & History", "url": "https://www.youtube.com/watch?v=fFjv93ACGo8", "videoID": "fFjv93ACGo8", "question_id": "001-1", "task_type": "Counting Problem", "question": "How many candles are there?", "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."], "answer": "C"},
    ]
    table = pa.Table.from_pylist(rows)
    folder = tmp_path / "videomme"
    folder.mkdir()
    pq.write_table(table, folder / "test-00000-of-00001.parquet")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fFjv93ACGo8.mp4").write_bytes(b"")
    samples = list(frameselect.datasets.create("videomme", root=str(tmp_path)))
    assert [s.id for s in samples] == ["001-1"]
    assert samples[0].query.options == ("One.", "Two.", "Three.", "Four.") and samples[0].answer == "C"
    assert samples[0].metadata["task_type"] == "Counting Problem"
    json.dumps(dict(samples[0].metadata))
