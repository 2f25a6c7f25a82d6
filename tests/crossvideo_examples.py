"""Examples of the cross-video dataset loaders (small files of their released shape), for the loader conformance suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import frameselect.datasets
from frameselect.testing import register_example


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


@register_example("datasets", "cvbench")
def _cvbench_example(root: Path) -> Any:
    records = [
        {"id": 0, "task_type": "Joint-video Counting", "video_1": "1/a.mp4", "video_2": "1/b.mp4", "video_3": None, "video_4": None,
         "question": "How many dogs in total?", "options": ["A. 1.", "B. 2.", "C. 3.", "D. 4."], "answer": "C"},
        {"id": 1, "task_type": "Cross-video Scene Recognition", "video_1": "1/b.mp4", "video_2": "1/a.mp4", "video_3": None, "video_4": None,
         "question": "Is it night in both?", "options": ["Yes.", "No."], "answer": "No"},
    ]  # fmt: skip
    (root / "CVBench.json").write_text(json.dumps(records), encoding="utf-8")
    _touch(root / "CVBench" / "1" / "a.mp4")
    _touch(root / "CVBench" / "1" / "b.mp4")
    return frameselect.datasets.create("cvbench", root=str(root))


@register_example("datasets", "crossvid")
def _crossvid_example(root: Path) -> Any:
    records = [{"id": 3, "videos": ["cook/p.mp4", "cook/q.mp4"], "question": "Who adds salt first?", "options": ["A. Video 1", "B. Video 2"], "answer": "B"}]
    (root / "QA").mkdir(parents=True, exist_ok=True)
    (root / "QA" / "CC.json").write_text(json.dumps(records), encoding="utf-8")
    _touch(root / "videos" / "cook" / "p.mp4")
    _touch(root / "videos" / "cook" / "q.mp4")
    return frameselect.datasets.create("crossvid", root=str(root))


@register_example("datasets", "mvu_eval")
def _mvu_eval_example(root: Path) -> Any:
    records = [
        {"QA_index": 0, "task": "Counting", "question": "How many dogs in total?", "options": ["A. 1", "B. 2", "C. 3"], "ground_truth": "B",
         "video_paths": ["park/a.mp4", "park/b.mp4", "c.mp4"]},
        {"QA_index": 1, "task": "TR", "question": "Which video happens first?", "options": ["A. Video 1", "B. Video 2"], "ground_truth": "A",
         "video_paths": ["c.mp4", "park/a.mp4"]},
    ]  # fmt: skip
    (root / "QA_json_file.json").write_text(json.dumps(records), encoding="utf-8")
    for name in ("park/a.mp4", "park/b.mp4", "c.mp4"):
        _touch(root / "videos" / name)
    return frameselect.datasets.create("mvu_eval", root=str(root))


_GENERATED: dict[str, Path] = {}  # the generated suite is written once per session


@register_example("datasets", "haystack_cross")
def _haystack_cross_example(root: Path) -> Any:
    return frameselect.datasets.create(
        "haystack_cross", n_videos=2, minutes=0.5, events_per_minute=3.0, root=str(_GENERATED.setdefault("haystack_cross", root))
    )
