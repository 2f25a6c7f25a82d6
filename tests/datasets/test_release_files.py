"""The loaders on the benchmarks' real release files, read from ``$FRAMESELECT_RELEASE_FILES``.

The release files belong to their projects and are not part of this
repository, and the test suite runs without the network, so these tests read
them from a folder named by the environment variable
``FRAMESELECT_RELEASE_FILES``, laid out as ``<dir>/<benchmark>/<file>``
(docs/datasets.md lists the files, where each comes from, and the commit they
were checked at). A test skips, saying which file it lacks, when the variable
is unset or the benchmark's files are not there.

Videos are not needed: ``find_video`` is replaced by one that finds every
video, so every record loads and its fields are checked (a video name that
leaves its folder is still refused, before any look-up).

The quirks asserted here are reproduced in small files written by the test
suite itself (``test_official_layouts.py``, ``tests/faults/test_annotations.py``),
so CI guards the same behaviour without the release files.
"""

from __future__ import annotations

import os
import random
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import frameselect.datasets
import frameselect.datasets._loading as loading
from frameselect.datasets.kfsbench import KFSBench
from frameselect.datasets.mlvu import MC_TASK_FILES, UNMATCHED_ANSWER
from frameselect.evaluators.answer import mc_accuracy
from frameselect.types import Sample

ENV = "FRAMESELECT_RELEASE_FILES"


def release(benchmark: str, *files: str) -> Path:
    """``$FRAMESELECT_RELEASE_FILES/<benchmark>``, or skip naming what is missing."""
    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set: set it to a folder holding <benchmark>/<file> release files (docs/datasets.md)")
    folder = Path(base).expanduser() / benchmark
    absent = [name for name in files if not (folder / name).is_file()]
    if absent:
        pytest.skip(f"{ENV}: {', '.join(str(folder / name) for name in absent)} not there (docs/datasets.md says where each file comes from)")
    return folder


@pytest.fixture
def videos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A video folder in which every video is found (nothing is decoded by a loader)."""

    def every_video_found(folders: Sequence[Path], name: str, extensions: Sequence[str] = loading.VIDEO_EXTENSIONS) -> Path:
        return Path(folders[0]) / name

    monkeypatch.setattr(loading, "find_video", every_video_found)
    folder = tmp_path / "videos"
    folder.mkdir()
    return str(folder)


def load(name: str, **params: Any) -> tuple[list[Sample], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = list(frameselect.datasets.create(name, **params).samples())
    return samples, [str(w.message) for w in caught]


# -- MLVU (JUNJIE99/MLVU, data/) ---------------------------------------------------------------------------

#: records per multiple-choice file: what the official choice_bench.py counts (it scores every record)
MLVU_COUNTS = {"plotQA": 539, "needle": 355, "ego": 352, "count": 206, "order": 259, "anomaly_reco": 200, "topic_reasoning": 264}
#: reference: correct answers per task of choice_bench.py's MLVU.qa_template + check_ans (JUNJIE99/MLVU @
#: fd060c10a43ea48a35100a22688a927b8e531199, evaluation/multiple_choice_evaluation/choice_bench.py) on the release
#: files, with the replies of mlvu_replies() (random.Random(0), one "(X)" per record in file order, 1_plotQA first)
MLVU_OFFICIAL_CORRECT = {"plotQA": 161, "needle": 89, "ego": 93, "count": 48, "order": 70, "anomaly_reco": 36, "topic_reasoning": 52}


def mlvu_replies(samples: Sequence[Sample]) -> list[str]:
    rng = random.Random(0)
    return ["(" + "ABCDEFGH"[rng.randrange(len(s.query.options))] + ")" for s in samples]


def test_mlvu_seven_multiple_choice_files(tmp_path: Path, videos: str) -> None:
    folder = release("mlvu", *MC_TASK_FILES)
    (tmp_path / "MLVU").mkdir()
    (tmp_path / "MLVU" / "json").symlink_to(folder.resolve(), target_is_directory=True)
    samples, messages = load("mlvu", root=str(tmp_path), videos=videos)
    assert Counter(s.metadata["task_type"] for s in samples) == MLVU_COUNTS
    assert len(samples) == 2175
    by_id = {s.id: s for s in samples}
    # the empty texts of the release, kept at their index; empty answers take the last empty candidate's letter
    plot = by_id["plotQA/23"]
    assert (plot.query.options[0], plot.query.options[3], plot.answer) == ("", "", "B")
    assert [(by_id[i].query.options.index(""), by_id[i].answer) for i in ("ego/119", "ego/313")] == [(2, "C"), (3, "D")]
    topic = by_id["topic_reasoning/26"]
    assert (topic.query.text, topic.query.options, topic.answer) == ("", ("", "", "", ""), "D")
    empty = sorted(s.id for s in samples if "" in s.query.options)
    assert empty == ["ego/119", "ego/313", "plotQA/23", "topic_reasoning/26"]
    # the two answers that are none of their candidates
    assert sorted(s.id for s in samples if s.answer == UNMATCHED_ANSWER) == ["needle/338", "needle/34"]
    assert len(messages) == 1 and "2 question(s)" in messages[0]
    # scored as choice_bench.py scores them
    correct: Counter[str] = Counter()
    for s, reply in zip(samples, mlvu_replies(samples), strict=True):
        correct[s.metadata["task_type"]] += int(mc_accuracy(reply, s.answer, len(s.query.options), extraction="lmms_eval_paren"))
    assert dict(correct) == MLVU_OFFICIAL_CORRECT


# -- NExT-QA (doc-doc/NExT-QA, dataset/nextqa/) and NExT-GQA (doc-doc/NExT-GQA, datasets/nextgqa/) ----------


@pytest.mark.parametrize(("split", "count"), [("val", 4996), ("test", 8564)])
def test_nextqa(videos: str, split: str, count: int) -> None:
    folder = release("nextqa", f"{split}.csv", "map_vid_vidorID.json")
    samples, messages = load("nextqa", root=str(folder), split=split, videos=videos)
    assert len(samples) == count and messages == []
    assert all(len(s.query.options) == 5 and s.answer in "ABCDE" for s in samples)


@pytest.mark.parametrize(("split", "count", "spans", "before_zero", "past_end"), [("val", 3358, 3931, 0, 3), ("test", 5553, 6600, 36, 0)])
def test_nextgqa(videos: str, split: str, count: int, spans: int, before_zero: int, past_end: int) -> None:
    folder = release("nextgqa", f"{split}.csv", f"gsub_{split}.json", "map_vid_vidorID.json")
    samples, messages = load("nextgqa", root=str(folder), split=split, videos=videos)
    assert len(samples) == count and messages == []
    assert all(s.evidence for s in samples)
    assert sum(len(s.evidence) for s in samples) == spans
    # the release rounds to 0.1 s: spans a little before 0 or past the duration are kept as released
    assert sum(1 for s in samples for e in s.evidence if e.start < 0) == before_zero
    assert sum(1 for s in samples for e in s.evidence if e.end > s.metadata["duration"]) == past_end


# -- QVHighlights (jayleicn/moment_detr, data/) --------------------------------------------------------------


@pytest.mark.parametrize(("split", "count", "windows"), [("train", 7218, 12803), ("val", 1550, 2803), ("test", 1542, 0)])
def test_qvhighlights(videos: str, split: str, count: int, windows: int) -> None:
    folder = release("qvhighlights", f"highlight_{split}_release.jsonl")
    samples, messages = load("qvhighlights", root=str(folder), split=split, videos=videos)
    assert len(samples) == count and messages == []
    assert sum(len(s.evidence) for s in samples) == windows  # the test release has no windows


# -- KFS-Bench (NEC-VID/KFS-Bench): the scene table; its questions come from LongVideoBench / Video-MME -------


@pytest.mark.parametrize(("split", "file", "questions", "rows"), [("longvideobench", "lvb_anno.csv", 1291, 2297), ("videomme", "vidmme_anno.csv", 888, 2731)])
def test_kfsbench_scene_tables(split: str, file: str, questions: int, rows: int) -> None:
    folder = release("kfsbench", file)
    scenes = KFSBench(root=folder, split=split)._scenes()
    assert len(scenes) == questions
    assert sum(len(segments) for by_scene in scenes.values() for segments in by_scene.values()) == rows


# -- EgoSchema (egoschema/EgoSchema) -------------------------------------------------------------------------


def test_egoschema(videos: str) -> None:
    folder = release("egoschema", "questions.json", "subset_answers.json")
    full, _ = load("egoschema", root=str(folder), split="full", videos=videos)
    subset, _ = load("egoschema", root=str(folder), split="subset", videos=videos)
    assert (len(full), len(subset)) == (5031, 500)
    assert all(len(s.query.options) == 5 for s in full) and all(s.answer in "ABCDE" for s in subset)
