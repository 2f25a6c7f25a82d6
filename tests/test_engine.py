"""The engine's shape: a short ``evaluate``, budgets and scopes as strategy objects, old keywords mapped with a warning, no concrete part named."""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import frameselect
from frameselect._engine.budgets import Frames, Routed, Tokens, budget_of
from frameselect._engine.plan import Mode, RunOptions, plan_run
from frameselect._engine.scopes import AcrossVideos, OneVideo, Stream
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError

PACKAGE = Path(frameselect.__file__).resolve().parent

#: the engine's modules and packages (the planner, the budgets and scopes, the prepare stage, the run and its executors)
ENGINE_MODULES = (
    "frameselect._engine.checks",
    "frameselect._engine.budgets",
    "frameselect._engine.prepare",
    "frameselect._engine.plan",
    "frameselect._engine.work",
    "frameselect._engine.answering",
    "frameselect._engine.run",
    "frameselect._engine.pipeline",
    "frameselect._engine.scopes",
    "frameselect._engine.executors",
)


def test_evaluate_has_a_short_signature() -> None:
    params = inspect.signature(frameselect.evaluate).parameters
    assert len(params) <= 12
    assert list(params)[:4] == ["selector", "evaluators", "dataset", "k"]
    assert {"scope", "encoder", "answerer", "store", "options"} <= set(params)


def _engine_sources() -> dict[str, str]:
    out = {}
    for name in ENGINE_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        path = Path(spec.origin)
        for file in sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]:
            out[file.relative_to(PACKAGE).as_posix()] = file.read_text(encoding="utf-8")
    return out


def test_no_engine_module_names_a_concrete_selector_class() -> None:
    from frameselect.crossvideo._registry import joint_selectors
    from frameselect.registry import selectors, streaming

    classes = set()
    for registry in (selectors, joint_selectors, streaming):
        for name in registry.names():
            factory = registry.get(name)
            if isinstance(factory, type):
                classes.add(factory.__name__)
    assert {"Holmes", "TopK", "Uniform"} & classes  # the registries were read
    sources = _engine_sources()
    assert any(f.endswith("scopes/across.py") for f in sources) and any(f.endswith("budgets.py") for f in sources)
    found = sorted((file, cls) for file, text in sources.items() for cls in classes if re.search(rf"\b{cls}\b", text))
    assert found == []


def test_old_keywords_warn_and_give_the_same_run(tmp_path: Path) -> None:
    new = frameselect.evaluate("uniform", ["evidence_recall"], "tiny", Frames(4), options=RunOptions(pool="fps=0.5", seed=3, cache_dir=tmp_path / "c"))
    with pytest.warns(DeprecationWarning, match=r"\['cache_dir', 'pool', 'seed'\] are deprecated"):
        old = frameselect.evaluate("uniform", ["evidence_recall"], "tiny", 4, pool="fps=0.5", seed=3, cache_dir=tmp_path / "c")
    assert old.run_id == new.run_id
    assert [r.selection for r in old.records] == [r.selection for r in new.records] and len(new.records) > 0
    assert old.table["evidence_recall"] == new.table["evidence_recall"]


def test_a_misspelt_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="toknes"):
        frameselect.evaluate("uniform", k=4, toknes=100)


def test_budget_keywords_map_onto_budget_objects() -> None:
    assert budget_of(8) == Frames(8)
    assert budget_of(8, tokens=900, token_policy="fixed_k", token_model="qwen2_5_vl") == Tokens(900, "fixed_k", 8, "qwen2_5_vl")
    routed = budget_of(6, router="text_cue", bank=["uniform", "topk"])
    assert isinstance(routed, Routed) and routed.k == 6 and routed.bank == ("uniform", "topk") and routed.tokens is None
    with pytest.raises(ConfigError, match="router"):
        budget_of(6, bank=["uniform"])
    with pytest.raises(ConfigError, match="holds its own"):
        budget_of(Frames(4), tokens=100)


def test_token_and_routed_plans_keep_the_ids_of_their_keywords() -> None:
    with pytest.warns(DeprecationWarning):
        old = plan_run("uniform", ["evidence_recall"], "tiny", 8, tokens=2000, token_model="qwen2_5_vl")
    new = plan_run("uniform", ["evidence_recall"], "tiny", Tokens(2000, model="qwen2_5_vl"))
    assert new.run_id == old.run_id and new.mode is Mode.RUN and new.tokens == 2000 and new.token_model is not None
    with pytest.warns(DeprecationWarning):
        old_routed = plan_run("uniform", ["evidence_recall"], "tiny", 6, router="constant", bank=["uniform", "random"])
    routed = plan_run("uniform", ["evidence_recall"], "tiny", Routed("constant", ("uniform", "random"), Frames(6)))
    assert routed.run_id == old_routed.run_id and routed.mode is Mode.ROUTED and routed.kind == "routed"
    assert [b.name for b in routed.bank] == ["uniform", "random"] and routed.config["label"] == "constant[uniform,random]@B=6"


class _TextEncoder(Encoder):
    """Frames and texts as constant vectors: enough for a plan's checks (nothing is encoded here)."""

    name = "text_stand_in"
    has_text = True

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        return np.ones((len(frames), 2), dtype=np.float32)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 2), dtype=np.float32)


def test_the_default_scope_follows_the_samples_and_the_selector() -> None:
    assert plan_run("uniform", ["evidence_recall"], "tiny", 4).scope == OneVideo()
    joint = plan_run("topk_union", ["evidence_recall"], "tiny", 4, encoder=_TextEncoder())
    assert isinstance(joint.scope, AcrossVideos) and joint.budget_policy is None
    shared = plan_run("uniform", ["evidence_recall"], "tiny", 4, scope=AcrossVideos("duration"))
    assert shared.budget_policy is not None and shared.budget_policy.name == "duration" and shared.config["budget_policy"]["name"] == "duration"
    with pytest.raises(ConfigError, match="scope=AcrossVideos"):
        plan_run("topk_union", ["evidence_recall"], "tiny", 4, scope=OneVideo(), encoder=_TextEncoder())


def test_a_streaming_plan_comes_from_the_same_planner() -> None:
    from frameselect._engine.evaluate_stream import plan_stream

    via_stream = plan_stream("sliding_window", ["evidence_recall"], "tiny", 4, memory=8, encoder="color_histogram")
    via_run = plan_run("sliding_window", ["evidence_recall"], "tiny", 4, scope=Stream(memory=8), encoder="color_histogram")
    assert via_run.run_id == via_stream.run_id and via_run.mode is Mode.STREAM and via_run.config["setting"] == "later"
    assert via_run.config["label"] == "sliding_window[M=8]@k=4" and via_run.selector.memory == 8
    with pytest.raises(ConfigError, match="observes frame embeddings"):
        plan_run("sliding_window", ["evidence_recall"], "tiny", 4, scope=Stream())
    with pytest.raises(ConfigError, match="frame budget"):
        plan_run("sliding_window", ["evidence_recall"], "tiny", Tokens(900, model="qwen2_5_vl"), scope=Stream(), encoder="color_histogram")
