"""The lmms-eval integration's harness-independent half: model_args, cache keys, the run it stores, the entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect._core.video.synth import write_video
from frameselect.errors import ConfigError
from frameselect.integrations import bridge
from frameselect.integrations.bridge import HarnessAnswerer, parse_model_args, run_selection
from frameselect.store import Store
from frameselect.types import Query, Sample

QWEN_ARGS = ["pretrained", "device", "batch_size", "max_num_frames", "max_pixels", "min_pixels"]


def test_entry_point_module_imports_nothing_heavy_and_never_raises() -> None:
    code = (
        "import sys, json\n"
        "import frameselect.integrations.lmms_eval_plugin as p\n"
        "m = p.manifests()\n"
        "print(json.dumps({'heavy': sorted(n for n in ('torch', 'transformers', 'lmms_eval', 'numpy') if n in sys.modules), 'n': len(m)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["heavy"] == []
    assert got["n"] == 0  # lmms-eval is not installed here: no manifest, no exception


def test_entry_point_gives_the_manifest_where_lmms_eval_is(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    class ModelManifest:
        def __init__(self, **kw: Any) -> None:
            made.append(kw)

    fake = types.ModuleType("lmms_eval.models.registry_v2")
    fake.ModelManifest = ModelManifest  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lmms_eval", types.ModuleType("lmms_eval"))
    monkeypatch.setitem(sys.modules, "lmms_eval.models", types.ModuleType("lmms_eval.models"))
    monkeypatch.setitem(sys.modules, "lmms_eval.models.registry_v2", fake)
    from frameselect.integrations.lmms_eval_plugin import manifests

    assert len(manifests()) == 1
    assert made == [
        {"model_id": "frameselect", "simple_class_path": "frameselect.integrations.lmms_eval_model.FrameselectLMM", "aliases": ("frameselect_lmm",)}
    ]


def test_model_args_are_split_between_selector_encoder_and_base() -> None:
    cfg = parse_model_args(
        {
            "base": "qwen2_5_vl",
            "pretrained": "some/model",
            "selector": "kcenter",
            "start": "medoid",
            "k": 4,
            "encoder": "color_histogram",
            "bins": 4,
            "max_num_frames": 8,
        },
        QWEN_ARGS,
    )
    assert cfg.selector.name == "kcenter" and cfg.selector.start == "medoid"
    assert cfg.encoder.name == "color_histogram" and cfg.encoder.bins == 4
    assert cfg.base_args == {"pretrained": "some/model", "max_num_frames": 8}
    assert cfg.k == 4 and cfg.pool == "fps=1"  # the canonical form of the default policy


def test_a_wrong_name_is_refused_with_the_close_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown name 'lamb' \(did you mean 'lam'\?\)"):
        parse_model_args({"base": "qwen2_vl", "selector": "mmr", "lamb": 0.3}, QWEN_ARGS)
    with pytest.raises(ConfigError, match=r"unknown selector 'akss' \(did you mean 'aks'"):
        parse_model_args({"base": "qwen2_vl", "selector": "akss"}, QWEN_ARGS)
    with pytest.raises(ConfigError, match="base= is required"):
        parse_model_args({"selector": "uniform"}, QWEN_ARGS)
    with pytest.raises(ConfigError, match="k must be|budget|k="):
        parse_model_args({"base": "qwen2_vl", "k": 0}, QWEN_ARGS)
    with pytest.raises(ConfigError, match="lam"):  # out of its declared range
        parse_model_args({"base": "qwen2_vl", "selector": "mmr", "lam": 7.0}, QWEN_ARGS)
    # what the selector needs, the encoder must give: refused before the model loads
    with pytest.raises(ConfigError, match="selector 'mmr' needs query relevance, but encoder color_histogram\\(bins=8\\) cannot embed text"):
        parse_model_args({"base": "qwen2_vl", "selector": "mmr", "encoder": "color_histogram"}, QWEN_ARGS)
    with pytest.raises(ConfigError, match="selector 'kcenter' needs .*: pass an encoder"):
        parse_model_args({"base": "qwen2_vl", "selector": "kcenter"}, QWEN_ARGS)


def test_a_name_two_parts_take_needs_a_prefix() -> None:
    with pytest.raises(ConfigError, match=r"parameter of the selector and the base; say which with a prefix, e.g. selector.window_len=5"):
        parse_model_args({"base": "qwen2_vl", "selector": "katna", "window_len": 5}, [*QWEN_ARGS, "window_len"])
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "katna", "selector.window_len": 5, "base.window_len": 1}, [*QWEN_ARGS, "window_len"])
    assert cfg.selector.window_len == 5 and cfg.base_args == {"window_len": 1}


def test_the_fingerprint_covers_defaults_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    typed = parse_model_args({"base": "qwen2_vl", "selector": "katna"}, QWEN_ARGS)
    default_spelled = parse_model_args({"base": "qwen2_vl", "selector": "katna", "window_len": typed.selector.window_len}, QWEN_ARGS)
    assert typed.fingerprint == default_spelled.fingerprint  # the same frames, the same key
    other = parse_model_args({"base": "qwen2_vl", "selector": "katna", "window_len": 9}, QWEN_ARGS)
    assert other.fingerprint != typed.fingerprint
    assert typed.resolved()["selector"]["params"]["window_len"] == 20  # the default is spelled out
    before = typed.fingerprint
    monkeypatch.setattr(bridge, "__version__", "0.0.0-other")  # a release whose defaults may differ
    assert parse_model_args({"base": "qwen2_vl", "selector": "katna"}, QWEN_ARGS).fingerprint != before


def _fake_response_cache(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    class ResponseCache:
        @classmethod
        def create(cls, cache_root: str, *, model: str = "", model_args: Any = "", task_dict: Any = None) -> Any:
            seen.append((model, model_args))
            return json.dumps([model, model_args], sort_keys=True)

    def simple_parse_args_string(text: str) -> dict[str, Any]:
        return dict(item.split("=", 1) for item in text.split(",") if item)

    rc = types.ModuleType("lmms_eval.caching.response_cache")
    rc.ResponseCache = ResponseCache  # type: ignore[attr-defined]
    utils = types.ModuleType("lmms_eval.utils")
    utils.simple_parse_args_string = simple_parse_args_string  # type: ignore[attr-defined]
    for name, mod in {
        "lmms_eval": types.ModuleType("lmms_eval"),
        "lmms_eval.caching": types.ModuleType("lmms_eval.caching"),
        "lmms_eval.caching.response_cache": rc,
        "lmms_eval.utils": utils,
    }.items():
        monkeypatch.setitem(sys.modules, name, mod)
    api = types.ModuleType("lmms_eval.api.model")
    api.lmms = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lmms_eval.api", types.ModuleType("lmms_eval.api"))
    monkeypatch.setitem(sys.modules, "lmms_eval.api.model", api)
    return [ResponseCache, seen]


def test_response_cache_keys_differ_when_only_a_default_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    cache_cls, seen = _fake_response_cache(monkeypatch)
    monkeypatch.delitem(sys.modules, "frameselect.integrations.lmms_eval_model", raising=False)
    from frameselect.integrations.lmms_eval_model import key_response_cache_on_config

    typed = "base=qwen2_vl,pretrained=m,selector=katna"
    key_response_cache_on_config(parse_model_args({"base": "qwen2_vl", "pretrained": "m", "selector": "katna"}, QWEN_ARGS))
    first = cache_cls.create("/c", model="frameselect", model_args=typed)
    monkeypatch.setattr(bridge, "__version__", "0.0.0-other")  # a release whose defaults differ
    key_response_cache_on_config(parse_model_args({"base": "qwen2_vl", "pretrained": "m", "selector": "katna"}, QWEN_ARGS))
    second = cache_cls.create("/c", model="frameselect", model_args=typed)
    assert first != second
    assert seen[0][1]["selector"] == "katna" and len(seen[0][1]["frameselect_config"]) == 16
    assert cache_cls.create("/c", model="qwen2_vl", model_args="pretrained=m") == json.dumps(["qwen2_vl", "pretrained=m"], sort_keys=True)


def _videos(tmp_path: Path, n: int) -> list[Sample]:
    out = []
    for i in range(n):
        path = write_video(tmp_path / f"v{i}.mp4", 30, lambda j, i=i: np.full((48, 64, 3), (j * 8 + i * 40) % 256, np.uint8), fps=10.0)
        out.append(Sample(id=str(i), video=str(path), query=Query(text=f"question {i}")))
    return out


def test_a_harness_run_is_stored_and_resumes(tmp_path: Path) -> None:
    samples = _videos(tmp_path, 3)
    cfg = parse_model_args(
        {"base": "qwen2_vl", "selector": "uniform", "k": 2, "store": str(tmp_path / "fs.sqlite"), "cache_dir": str(tmp_path / "cache")}, QWEN_ARGS
    )
    calls: list[tuple[str, list[float]]] = []

    def generate(request: Any) -> str:
        if request.sample.id == "2" and not calls_allowed[0]:
            raise KeyboardInterrupt  # killed halfway
        calls.append((request.sample.id, request.timestamps))
        return f"answer {request.sample.id} with {len(request.frames())} frames"

    calls_allowed = [False]
    with pytest.raises(KeyboardInterrupt):
        run_selection(cfg, samples, HarnessAnswerer("qwen2_vl", "pretrained=m", generate), dataset_name="lmms_eval/tiny_video")
    assert [c[0] for c in calls] == ["0", "1"]
    calls_allowed[0] = True
    records = run_selection(cfg, samples, HarnessAnswerer("qwen2_vl", "pretrained=m", generate), dataset_name="lmms_eval/tiny_video")
    assert [c[0] for c in calls] == ["0", "1", "2"]  # only the sample not stored is redone
    assert [r.answer for r in records] == [f"answer {i} with 2 frames" for i in range(3)]
    assert calls[0][1] == [0.0, 2.0]  # uniform=2 over the 3 candidates at 1 fps: centres of two segments
    with Store(tmp_path / "fs.sqlite") as st:
        rows = st._conn.execute("SELECT run_id, config FROM runs").fetchall()
        assert len(rows) == 1
        assert json.loads(rows[0][1])["dataset_spec"]["name"] == "lmms_eval/tiny_video"
        stored = st.records(rows[0][0])
    assert sorted((r.sample_id, r.status, r.answer) for r in stored) == [(str(i), "ok", f"answer {i} with 2 frames") for i in range(3)]
