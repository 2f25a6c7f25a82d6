"""Examples of the streaming benchmarks' loaders (OVO-Bench, StreamingBench; small files of their released shape, written here), for the loader conformance suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import frameselect.datasets
from annotation_files import touch, write_json
from frameselect.testing import register_example

#: one multiple-choice question and one forward-responding record with two check points
OVO_RECORDS = [
    {"id": 0, "task": "EPM", "video": "Ego4D/clips/a.mp4", "realtime": 215, "question": "Who?", "answer": "b", "options": ["a", "b", "c", "d"], "gt": 1},
    {"id": 3, "task": "SSR", "video": "COIN/s.mp4", "test_info": [{"realtime": 27, "step": "cut", "type": 1}, {"realtime": 40, "step": "cut", "type": 0}]},
]


@register_example("datasets", "ovo_bench")
def _ovo_bench_example(root: Path) -> Any:
    write_json(root / "data" / "ovo_bench_new.json", OVO_RECORDS)
    touch(*(root / "data" / "src_videos" / str(r["video"]) for r in OVO_RECORDS))
    return frameselect.datasets.create("ovo_bench", root=str(root))


@register_example("datasets", "streamingbench")
def _streamingbench_example(root: Path) -> Any:
    entries = [
        {
            "time": "[0:00:00 - 0:00:10]",
            "questions": [{"task_type": "Counting", "question": "How many cups now?", "time_stamp": "00:00:12", "answer": "B", "options": ["A. 1", "B. 2"]}],
            "video_categories": "kitchen",
            "video_path": "./videos/sample_1_real.mp4",
        }
    ]
    write_json(root / "src" / "data" / "questions_real.json", entries)
    touch(root / "src" / "data" / "videos" / "sample_1_real.mp4")
    return frameselect.datasets.create("streamingbench", root=str(root))
