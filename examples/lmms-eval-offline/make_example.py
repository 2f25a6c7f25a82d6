"""Make the offline lmms-eval example of docs/lmms-eval.md in a folder: videos, a local task, a tiny model.

    .venv-lmms-eval/bin/python examples/lmms-eval-offline/make_example.py OUT

writes ``OUT/task/`` (four 12-s videos whose frames are plain grey levels, ``docs.json``, the task
YAML ``tiny_video.yaml`` and its ``!function`` module) and ``OUT/tiny-qwen2-vl/``, a Qwen2-VL
checkpoint built from a config with random weights (its answers are noise: the example shows the
plumbing, not a score). Nothing is downloaded. Run it with the lmms-eval environment's python
(``bash scripts/setup-lmms-eval.sh``), from the repository's root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from frameselect._core.video.synth import write_video

ROOT = Path(__file__).resolve().parents[2]

UTILS = """import os
HERE = os.path.dirname(os.path.abspath(__file__))


def doc_to_visual(doc):
    return [os.path.join(HERE, doc["video"])]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["question"]


def process_results(doc, results):
    return {"exact": float(results[0].strip() == doc["answer"])}
"""

TASK = """task: tiny_video
dataset_path: json
dataset_kwargs:
  data_files: {docs}
test_split: train
output_type: generate_until
doc_to_visual: !function tiny_video_utils.doc_to_visual
doc_to_text: !function tiny_video_utils.doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 4
  temperature: 0
  do_sample: false
process_results: !function tiny_video_utils.process_results
metric_list:
  - metric: exact
    aggregation: mean
    higher_is_better: true
metadata:
  - version: 0.0
"""


def main(out: Path) -> None:
    task = out / "task"
    task.mkdir(parents=True, exist_ok=True)
    docs = []
    for i in range(4):  # 12 s at 10 fps, frame j of video i at grey level 2j + 5i
        path = write_video(task / f"v{i}.mp4", 120, lambda j, i=i: np.full((48, 64, 3), 2 * j + 5 * i, np.uint8), fps=10.0)
        docs.append({"video": path.name, "question": f"What colour is video {i}?", "answer": "grey"})
    (task / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
    (task / "tiny_video_utils.py").write_text(UTILS, encoding="utf-8")
    (task / "tiny_video.yaml").write_text(TASK.format(docs=task / "docs.json"), encoding="utf-8")
    model = out / "tiny-qwen2-vl"
    subprocess.run([sys.executable, str(ROOT / "tests" / "integrations" / "_tiny_hf_vlms.py"), "qwen2_vl", str(model)], check=True)
    print(f"task: {task / 'tiny_video.yaml'}\nmodel: {model}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_example.py OUT")
    main(Path(sys.argv[1]).resolve())
