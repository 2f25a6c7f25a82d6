"""Examples of the streaming benchmarks' loaders (small files of their released shape), for the loader conformance suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import frameselect.datasets
from annotation_files import touch, write_json
from frameselect.testing import register_example


@register_example("datasets", "ovo_bench")
def _ovo_bench_example(root: Path) -> Any:
    records = [
        {"id": 0, "task": "EPM", "video": "Ego4D/a.mp4", "realtime": 21, "question": "Who?", "options": ["a", "b"], "gt": 1},
        {"id": 1, "task": "SSR", "video": "COIN/s.mp4", "test_info": [{"realtime": 27, "step": "cut", "type": 1}]},
    ]
    write_json(root / "data" / "ovo_bench_new.json", records)
    touch(root / "data" / "src_videos" / "Ego4D" / "a.mp4", root / "data" / "src_videos" / "COIN" / "s.mp4")
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
