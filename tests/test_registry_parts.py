"""One identity for every part (frameselect.parts) and plug-in name collisions (frameselect.registry)."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frameselect
import frameselect.registry as registry_module
from frameselect._core.fingerprint import fingerprint
from frameselect.errors import DuplicateNameError, PartConfigError, UnknownNameError
from frameselect.parts import is_revivable, parameter_names, part_config, part_fingerprint, part_id, part_params
from frameselect.registry import Registry, answerers, encoders, evaluators, revive, routers, selectors
from frameselect.types import FrameSource, InMemoryFrames

# -- configuration: mechanical, real JSON values -------------------------------------------------


def test_configuration_holds_real_json_values() -> None:
    config = part_config(selectors.create("mmr", lam=0.7))
    assert config == {"kind": "selectors", "name": "mmr", "params": {"lam": 0.7, "normalize": False}}
    assert json.loads(json.dumps(config)) == config  # numbers stay numbers: 0.7, not "0.7"
    assert part_config(evaluators.create("recall_at_iou", thresholds=(0.3, 0.5)))["params"] == {"thresholds": [0.3, 0.5]}
    assert part_config(routers.create("hybrid", budgets=[16, 4, 8]))["params"] == {
        "budgets": [4, 8, 16],
        "split": 0.5,
        "floor": 0.1,
        "weights": [1.0, 1.0, 0.5],
    }


def test_paths_become_strings_and_dataset_configs_revive(tmp_path: Path) -> None:
    ds = frameselect.datasets.create("charades_sta", root=tmp_path)
    config = part_config(ds)
    assert config["params"]["root"] == str(tmp_path) and config["params"]["metadata"] is None
    again = revive(config)
    assert type(again) is type(ds) and part_params(again) == config["params"]


@pytest.mark.parametrize(
    ("kind", "name", "params"),
    [
        ("selectors", "mdp3", {"lam": 0.3, "reference_exact": True}),
        ("selectors", "videotree", {}),
        ("evaluators", "lvh_f1", {"threshold": 2.5, "fallback": None}),
        ("routers", "text_cue", {"split": 0.25}),
        ("encoders", "thumbnail", {"size": 8}),
        ("answerers", "label_reader", {"min_score": 0.3}),
    ],
)
def test_revive_gives_the_same_fingerprint(kind: str, name: str, params: dict[str, Any]) -> None:
    part = frameselect.get_registry(kind).create(name, **params)
    config = part_config(part)
    revived = revive(json.loads(json.dumps(config)))  # what the store gives back
    assert part_fingerprint(revived) == part_fingerprint(part)
    assert part_config(revived) == config


def test_parameters_follow_kwargs_up_the_class_hierarchy() -> None:
    clip = parameter_names(encoders.get("clip"))
    assert clip[0] == "model" and {"revision", "tokenizer", "image_processor", "max_text_length", "batch_size", "device", "dtype"} <= set(clip)
    assert parameter_names(answerers.get("qwen2_vl"))[:2] == ["model", "max_pixels"]
    assert parameter_names(selectors.create("mmr")) == ["lam", "normalize"]


def test_a_parameter_not_kept_as_an_attribute_is_an_error() -> None:
    class Forgetful(frameselect.evaluators.Evaluator):
        def __init__(self, window: float = 1.0) -> None:
            self.w = window

    with pytest.raises(
        PartConfigError, match=r"Forgetful: constructor argument 'window' is not kept as an attribute of the same name; store it as self.window"
    ):
        part_params(Forgetful())


def test_secrets_never_enter_the_configuration_the_id_or_the_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    ans = answerers.create("openai_http", model="qwen-vl", api_key="sk-secret", image_format="png")
    shown = json.dumps(part_config(ans)) + ans.id + repr(ans)
    assert "sk-secret" not in shown and "sk-from-env" not in shown
    assert "api_key" not in part_config(ans)["params"]  # the parameter itself is never stored (api_key_env, a variable's name, is)
    assert ans.id == "openai_http(image_format=png,jpeg_quality=90,max_tokens=16,model=qwen-vl,temperature=0.0)"  # None values are left out
    revived = revive(part_config(ans))  # the key comes back from the environment
    assert revived._api_key == "sk-from-env" and revived.id == ans.id


def test_the_id_leaves_out_what_does_not_change_outputs_and_adds_what_was_resolved() -> None:
    assert encoders.create("color_histogram", bins=4).id == "color_histogram(bins=4)"
    reader = answerers.create("label_reader", cache_dir="/somewhere")
    assert "cache_dir" not in reader.id and "cache_dir" in part_params(reader)
    label = encoders.create("imagenet_label")
    from frameselect.encoders._minilm import MODEL_ID
    from frameselect.encoders._mobilenet_v2 import WEIGHTS_FILE

    assert part_config(label)["resolved"] == {"weights": WEIGHTS_FILE, "text": MODEL_ID}
    assert label.id == part_id(label) and "weights=mobilenet_v2-b0353104.pth" in label.id


def test_live_objects_are_marked_and_refuse_revival() -> None:
    ds = frameselect.datasets.InMemoryDataset([], name="mine")
    config = part_config(ds)
    assert config["params"]["samples"] == {"__object__": "InMemoryDataset.samples"} and not is_revivable(config)
    with pytest.raises(PartConfigError, match=r"was given live objects \(params.samples \(InMemoryDataset.samples\)\)"):
        revive(config)


def test_revive_errors_name_the_part() -> None:
    with pytest.raises(UnknownNameError, match="unknown selector 'nope'"):
        revive({"kind": "selectors", "name": "nope", "params": {}})
    with pytest.raises(PartConfigError, match=r"selector 'mmr' has no parameter 'lamb' \(did you mean 'lam'\?\); its parameters: lam, normalize"):
        revive({"kind": "selectors", "name": "mmr", "params": {"lamb": 0.1}})
    assert part_config(revive({"name": "uniform"}, kind="selectors"))["name"] == "uniform"  # configurations stored without a kind


def test_fingerprint_sees_numbers_not_their_text() -> None:
    assert fingerprint({"lam": 0.7}) == fingerprint(json.loads('{"lam": 0.7}'))
    assert fingerprint({"lam": 0.7}) != fingerprint({"lam": "0.7"})
    assert fingerprint({"k": 1}) != fingerprint({"k": 1.0})


def test_capabilities_are_declared_on_the_base_classes() -> None:
    assert selectors.get("aks").supports_reference_exact and not selectors.get("uniform").supports_reference_exact  # type: ignore[attr-defined]
    assert selectors.create("uniform").reference_exact is False and selectors.create("aks", reference_exact=True).reference_exact is True
    assert encoders.get("blip_itm").pairwise_relevance and not encoders.get("clip").pairwise_relevance  # type: ignore[attr-defined]
    assert answerers.create("oracle").concurrency == 1 and answerers.create("openai_http", concurrency=6).concurrency == 6
    assert routers.get("hybrid").needs == frozenset({"relevance"})  # type: ignore[attr-defined]


def test_frame_sources_keep_one_protocol() -> None:
    from frameselect._core.video.source import VideoFrameSource

    frames = [np.full((4, 6, 3), i, dtype=np.uint8) for i in range(3)]
    source = InMemoryFrames(frames)
    assert isinstance(source, FrameSource) and issubclass(VideoFrameSource, FrameSource)
    assert [int(f[0, 0, 0]) for f in source.get([2, 0])] == [2, 0]
    assert [(i, f.shape) for i, f in source.iter([2, 0], size=(3, 2))] == [(0, (2, 3, 3)), (2, (2, 3, 3))]
    with pytest.raises(LookupError, match="no frame source"):
        InMemoryFrames(None).get([0])


def test_evaluate_stores_parameters_as_numbers(tiny_root: Path, tmp_path: Path) -> None:
    from frameselect._engine.pipeline import evaluate
    from frameselect.store import Store

    tiny = frameselect.datasets.create("tiny", root=tiny_root)
    result = evaluate(
        "fixed_fps", dataset=tiny, k=2, encoder="color_histogram", selector_params={"fps": 0.25}, store=tmp_path / "s.sqlite", limit=1, progress=False
    )
    with Store(tmp_path / "s.sqlite") as store:
        stored = store.run(result.run_id).config
    assert stored["selector"]["params"]["fps"] == 0.25 and isinstance(stored["selector"]["params"]["fps"], float)
    assert stored["encoder"] == {"kind": "encoders", "name": "color_histogram", "params": {"bins": 8}}
    assert revive(stored["dataset_spec"]).id == tiny.id


# -- plug-in collisions ----------------------------------------------------------------------------


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [ep for ep in eps if ep.group == group])


class Widget:
    pass


class OtherWidget:
    pass


def test_a_plugin_named_like_a_builtin_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, EntryPoint("alpha", "thirdparty.widgets:Alpha", "frameselect.widgets"))
    reg: Registry[object] = Registry("widgets")
    reg.add("alpha", Widget)
    with pytest.raises(DuplicateNameError) as exc:
        reg.names()
    message = str(exc.value)
    assert "plug-in alpha = 'thirdparty.widgets:Alpha'" in message and f"already {__name__}.Widget" in message
    with pytest.raises(DuplicateNameError):
        reg.get("alpha")  # also when asked for the name directly: never silently the built-in


def test_two_plugins_with_one_name_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(
        monkeypatch,
        EntryPoint("beta", "pkg_one:Beta", "frameselect.widgets"),
        EntryPoint("beta", "pkg_two:Beta", "frameselect.widgets"),
    )
    with pytest.raises(DuplicateNameError, match=r"widget 'beta' is provided by two plug-ins: beta = 'pkg_one:Beta' and beta = 'pkg_two:Beta'"):
        Registry("widgets").names()


def test_a_part_registered_under_a_plugin_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, EntryPoint("gamma", "pkg:Gamma", "frameselect.widgets"))
    reg: Registry[object] = Registry("widgets")
    reg.names()
    with pytest.raises(DuplicateNameError, match=rf"widget 'gamma' of {__name__}.OtherWidget collides with the plug-in gamma = 'pkg:Gamma'"):
        reg.add("gamma", OtherWidget)


def test_the_same_object_twice_is_not_a_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    target = f"{__name__}:Widget"
    _fake_entry_points(monkeypatch, EntryPoint("delta", target, "frameselect.widgets"), EntryPoint("delta", target, "frameselect.widgets"))
    reg: Registry[object] = Registry("widgets")
    reg.add("delta", Widget)  # e.g. the plug-in's module registered itself on import
    assert reg.names() == ["delta"] and reg.get("delta") is Widget


def test_a_plugin_colliding_with_a_builtin_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, EntryPoint("uniform", "frameselect_demo_plugin:EveryOther", "frameselect.selectors"))
    monkeypatch.setattr(selectors, "_plugins", None)
    monkeypatch.setattr(selectors, "_plugins_loaded", False)
    monkeypatch.setattr(selectors, "_builtins_loaded", False)
    with pytest.raises(DuplicateNameError, match=r"plug-in uniform = 'frameselect_demo_plugin:EveryOther'.*already frameselect\.selectors\.basic\.Uniform"):
        selectors.get("uniform")


def test_a_plugin_that_fails_to_import_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, EntryPoint("broken", "no_such_module_anywhere:Thing", "frameselect.widgets"))
    reg: Registry[object] = Registry("widgets")
    assert reg.names() == []
    with pytest.raises(UnknownNameError, match=r"unknown widget 'broken' \(plug-in failed to load: ModuleNotFoundError"):
        reg.get("broken")


def test_create_names_the_parameters_a_part_has() -> None:
    with pytest.raises(PartConfigError, match=r"selector 'mmr' has no parameter 'alpha'; its parameters: lam, normalize"):
        selectors.create("mmr", alpha=0.3)
    with pytest.raises(TypeError):  # PartConfigError is a TypeError, as a bad keyword always was
        evaluators.create("mc_accuracy", threshold=1)


def test_registries_are_typed_by_kind() -> None:
    import typing

    hints = typing.get_type_hints(registry_module, localns={n: frameselect.selectors.Selector for n in ("Selector",)} | _bases())
    assert hints["selectors"] == Registry[frameselect.selectors.Selector]
    assert hints["encoders"] == Registry[frameselect.encoders.Encoder]
    assert hints["streaming"] == Registry[frameselect.streaming.StreamingSelector]


def _bases() -> dict[str, Any]:
    return {
        "Encoder": frameselect.encoders.Encoder,
        "Evaluator": frameselect.evaluators.Evaluator,
        "Dataset": frameselect.datasets.Dataset,
        "Answerer": frameselect.answerers.Answerer,
        "Router": frameselect.routing.Router,
        "StreamingSelector": frameselect.streaming.StreamingSelector,
    }


def test_evaluate_shows_its_real_signature() -> None:
    import inspect

    params = inspect.signature(frameselect.evaluate).parameters
    assert list(params)[:4] == ["selector", "evaluators", "dataset", "k"]
    assert frameselect.evaluate is __import__("frameselect._engine.pipeline", fromlist=["evaluate"]).evaluate


def test_a_plugin_naming_a_re_exported_object_is_not_a_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect.selectors.base import fill_to_k

    _fake_entry_points(monkeypatch, EntryPoint("fill", "frameselect.selectors:fill_to_k", "frameselect.widgets"))  # defined in .base
    reg: Registry[object] = Registry("widgets")
    reg.add("fill", fill_to_k)  # the same object, reached through another path
    assert reg.names() == ["fill"] and reg.get("fill") is fill_to_k


def test_an_unregistered_subclass_does_not_take_its_parent_s_name() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class MyMMR(type(selectors.create("mmr"))):  # type: ignore[misc]
        pass

    assert MyMMR().name == "MyMMR" and selectors.create("mmr").name == "mmr"


def test_show_aggregates_with_the_run_s_revived_evaluators(tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect._engine.pipeline import evaluate
    from frameselect.cli import main

    tiny = frameselect.datasets.create("tiny", root=tiny_root)
    store = str(tmp_path / "s.sqlite")
    result = evaluate("uniform", evaluators=["mlvu_m_avg"], answerer="oracle", dataset=tiny, k=4, store=store, progress=False)
    assert main(["show", result.run_id[:12], "--store", store]) == 0
    table = capsys.readouterr().out.split("configuration:")[1]
    header = [c.strip() for c in table.splitlines()[-3].split("|")]
    row = [c.strip() for c in table.splitlines()[-1].split("|")]
    assert "mlvu_m_avg" in header and "mlvu_correct" not in header  # the evaluator's own aggregate, not the per-record key
    assert row[header.index("mlvu_m_avg")] == f"{result.table['mlvu_m_avg']:.3f}"  # the same value the run reported
