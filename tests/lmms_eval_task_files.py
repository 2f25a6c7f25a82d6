"""A small local lmms-eval task (YAML, !function module, documents, videos) and the ``lmms_eval`` dataset's example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frameselect.testing import register_example

UTILS = (
    "import os\n"
    "HERE = os.path.dirname(os.path.abspath(__file__))\n"
    "def doc_to_visual(doc):\n"
    "    return [os.path.join(HERE, 'videos', doc['video'])]\n"
    "def doc_to_text(doc, lmms_eval_specific_kwargs=None):\n"
    "    kw = lmms_eval_specific_kwargs or {}\n"
    "    return kw.get('pre_prompt', '') + doc['question'] + kw.get('post_prompt', '')\n"
)
BASE_YAML = "output_type: generate_until\ngeneration_kwargs:\n  max_new_tokens: 4\nlmms_eval_specific_kwargs:\n  default:\n    pre_prompt: 'Q: '\n    post_prompt: ' A:'\n"
TASK_YAML = (
    "include: _default.yaml\n"
    "task: tiny_local\n"
    "dataset_path: json\n"
    "dataset_kwargs:\n  data_files:\n    test: docs.jsonl\n"
    "test_split: test\n"
    "doc_to_visual: !function tiny_utils.doc_to_visual\n"
    "doc_to_text: !function tiny_utils.doc_to_text\n"
    "doc_to_target: '{{answer}}!'\n"
)
DOCS = [
    {"video": "a.mp4", "question": "What is red?", "answer": "A"},
    {"video": "b.mp4", "question": "What is blue?", "answer": "B"},
    {"video": "a.mp4", "question": "What moves?", "answer": "C"},
]


def write_task(root: Path, docs: list[dict[str, Any]] = DOCS, yaml: str = TASK_YAML, videos: dict[str, Path] | None = None) -> Path:
    """The task's files under ``root``; videos are empty files unless ``videos`` maps names to real ones."""
    (root / "videos").mkdir(parents=True, exist_ok=True)
    for name in {d["video"] for d in docs}:
        target = root / "videos" / name
        if videos and name in videos:
            target.write_bytes(videos[name].read_bytes())
        else:
            target.write_bytes(b"")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (root / "tiny_utils.py").write_text(UTILS, encoding="utf-8")
    (root / "_default.yaml").write_text(BASE_YAML, encoding="utf-8")
    (root / "tiny_local.yaml").write_text(yaml, encoding="utf-8")
    return root / "tiny_local.yaml"


@register_example("datasets", "lmms_eval")
def _lmms_eval_example(root: Path) -> Any:
    import frameselect

    return frameselect.datasets.create("lmms_eval", task=str(write_task(root)))
