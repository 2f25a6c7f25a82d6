"""The lmms-eval bridge's own time against the model's generation, measured in the same run.

    bash scripts/setup-lmms-eval.sh
    .venv-lmms-eval/bin/python benchmarks/lmms_eval_overhead.py [--docs 8] [--k 8] [--selector kcenter] [--encoder color_histogram]
                                                               [--seconds 60] [--pretrained DIR] [--base qwen2_vl]

Runs ``python -m lmms_eval --model frameselect`` twice on a local task over generated videos
(``--docs`` videos of ``--seconds`` seconds, 64x48 px, 10 fps): the first run fills the feature
cache, the second (a fresh store, the same cache) is timed. Printed, summed over the documents
of the timed run:

- ``bridge``: the wrapper's time outside the base model (candidate pool, features read from the
  cache, selection, the store), i.e. ``FrameselectLMM.generate_until`` minus the base model's calls;
- ``frames``: frameselect's ``process_vision_info`` inside the base model (decoding and resizing
  the selected frames; it stands in for the base model's own decoding);
- ``generate``: the model's ``generate`` (the generation itself);
- ``base``: the base model's ``generate_until`` calls (prompting, processor, generation);

and the ratios of ``bridge`` and ``frames`` to ``generate``. Without ``--pretrained`` the model is
a tiny random-weight Qwen2-VL (tests/integrations/_tiny_hf_vlms.py) whose generation is far
cheaper than a real model's, so its ratios are an upper bound of the bridge's share; give a real
checkpoint folder for the real ratio.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors`` module, which
# subprocess imports: keep this folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import runpy  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _inner(timings_path: str, argv: list[str]) -> None:
    """Inside the lmms-eval run: time the wrapper, the base model's calls, the drop-in and generate."""
    import transformers

    from frameselect.integrations import lmms_eval_model, qwen_vl_utils

    totals: dict[str, float] = {"wrapper": 0.0, "base": 0.0, "frames": 0.0, "generate": 0.0, "docs": 0.0}

    def timed(owner: Any, name: str, key: str, count: bool = False) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                totals[key] += time.perf_counter() - start
                if count:
                    totals["docs"] += 1

        setattr(owner, name, wrapper)

    timed(lmms_eval_model.FrameselectLMM, "generate_until", "wrapper")
    timed(lmms_eval_model.FrameselectLMM, "_generate", "base", count=True)
    timed(qwen_vl_utils, "process_vision_info", "frames")
    for cls in (transformers.Qwen2VLForConditionalGeneration, transformers.Qwen2_5_VLForConditionalGeneration):
        timed(cls, "generate", "generate")
    sys.argv = ["lmms_eval", *argv]
    try:
        runpy.run_module("lmms_eval", run_name="__main__")
    finally:
        Path(timings_path).write_text(json.dumps(totals), encoding="utf-8")


def _task(folder: Path, docs: int, seconds: float) -> Path:
    import numpy as np

    from frameselect._core.video.synth import write_video

    rng = np.random.default_rng(0)
    items = []
    for i in range(docs):
        levels = rng.integers(0, 256, size=(int(seconds * 10), 3))
        path = write_video(folder / f"v{i}.mp4", len(levels), lambda j, lv=levels: np.broadcast_to(lv[j].astype(np.uint8), (48, 64, 3)).copy(), fps=10.0)
        items.append({"video": path.name, "question": f"What colour is video {i}?", "answer": "grey"})
    (folder / "docs.json").write_text(json.dumps(items), encoding="utf-8")
    (folder / "bench_utils.py").write_text(
        "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
        "def doc_to_visual(doc):\n    return [os.path.join(HERE, doc['video'])]\n"
        "def doc_to_text(doc, lmms_eval_specific_kwargs=None):\n    return doc['question']\n"
        "def process_results(doc, results):\n    return {'exact': float(results[0].strip() == doc['answer'])}\n",
        encoding="utf-8",
    )
    (folder / "bench_video.yaml").write_text(
        f"task: bench_video\ndataset_path: json\ndataset_kwargs:\n  data_files: {folder / 'docs.json'}\ntest_split: train\n"
        "output_type: generate_until\ndoc_to_visual: !function bench_utils.doc_to_visual\ndoc_to_text: !function bench_utils.doc_to_text\n"
        "doc_to_target: answer\ngeneration_kwargs:\n  max_new_tokens: 8\n  temperature: 0\n  do_sample: false\n"
        "process_results: !function bench_utils.process_results\n"
        "metric_list:\n  - metric: exact\n    aggregation: mean\n    higher_is_better: true\n",
        encoding="utf-8",
    )
    return folder


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--inner":
        _inner(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--selector", default="kcenter")
    parser.add_argument("--encoder", default="color_histogram")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--base", default="qwen2_vl")
    parser.add_argument("--pretrained", default=None, help="a checkpoint folder (default: a tiny random-weight Qwen2-VL)")
    parser.add_argument("--max-pixels", type=int, default=None, help="the base model's max_pixels (default: 3136 for the tiny model)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="frameselect-lmms-bench-") as scratch:
        work = Path(scratch)
        task = _task(work / "task", args.docs, args.seconds)
        pretrained = args.pretrained
        pixels = args.max_pixels
        if pretrained is None:
            pretrained = str(work / "tiny")
            subprocess.run([sys.executable, str(ROOT / "tests" / "integrations" / "_tiny_hf_vlms.py"), "qwen2_vl", pretrained], check=True, capture_output=True)
            pixels = pixels or 3136
        model_args = f"base={args.base},pretrained={pretrained},device_map=cpu,selector={args.selector},k={args.k},cache_dir={work / 'features'}"
        if args.encoder:
            model_args += f",encoder={args.encoder}"
        if pixels:
            model_args += f",max_pixels={pixels},min_pixels={min(pixels, 3136)}"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT / "src")}
        results = []
        for name in ("warm", "timed"):
            timings = work / f"{name}.json"
            argv = [
                "--model", "frameselect", "--model_args", f"{model_args},store={work / name}.sqlite",
                "--tasks", "bench_video", "--include_path", str(task), "--device", "cpu", "--batch_size", "1",
                "--output_path", str(work / f"{name}.out"),
            ]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--inner", str(timings), *argv], capture_output=True, text=True, env=env)
            wall = time.perf_counter() - start
            if done.returncode != 0 or not list((work / f"{name}.out").glob("*/*_results.json")):
                print(done.stderr[-4000:], file=sys.stderr)
                print(f"lmms-eval did not finish the {name} run", file=sys.stderr)
                return 1
            results.append((name, wall, json.loads(timings.read_text(encoding="utf-8"))))

    _, wall, t = results[-1]
    docs = int(t["docs"])
    bridge = t["wrapper"] - t["base"]
    print(f"lmms-eval bridge overhead: base={args.base} selector={args.selector} encoder={args.encoder or 'none'} k={args.k}, {docs} documents")
    print(
        f"  model: {pretrained if args.pretrained else 'tiny random-weight Qwen2-VL (56x56 px frames)'}; timed run {wall:.1f} s wall (lmms-eval start included)"
    )
    print(f"  {'part':<10} {'total s':>9} {'per doc ms':>11} {'/ generate':>11}")
    for label, value in (("bridge", bridge), ("frames", t["frames"]), ("generate", t["generate"]), ("base", t["base"])):
        print(f"  {label:<10} {value:9.3f} {1000 * value / max(docs, 1):11.1f} {value / t['generate'] if t['generate'] else float('nan'):11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
