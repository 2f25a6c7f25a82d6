"""Plan, then execute: a wrong configuration fails before any frame is decoded, naming the part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import frameselect
from frameselect.errors import ConfigError, FrameselectError
from frameselect.store import Store


def _refused(tiny: Any, tmp_path: Path, decoded: list[int], **kw: Any) -> str:
    """The ConfigError message of an evaluate() call; asserts no frame was decoded and no run was stored."""
    store = tmp_path / "s.sqlite"
    kw.setdefault("dataset", tiny)
    with pytest.raises(ConfigError) as info:
        frameselect.evaluate(store=store, cache_dir=tmp_path / "c", **kw)
    assert sum(decoded) == 0
    with Store(store) as st:
        assert st.runs() == []
    return str(info.value)


def test_the_watch_sees_decoding(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    result = frameselect.evaluate(selector="uniform", dataset=tiny, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    assert sum(decoded) == result.counters.frames_decoded > 0


def test_query_aware_selector_with_an_encoder_without_text(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="topk", encoder="color_histogram")
    assert "selector 'topk' needs query relevance" in message and "color_histogram" in message
    assert "imagenet_label" in message  # what to do: a text-capable encoder


def test_query_aware_router_with_an_encoder_without_text(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", router="relevance_shape", bank=["uniform"], encoder="color_histogram")
    assert "router 'relevance_shape' needs query relevance" in message


def test_query_aware_evaluator_with_an_encoder_without_text(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", evaluators=["query_relevance"], encoder="color_histogram")
    assert "evaluator 'query_relevance' needs query relevance" in message


def test_embedding_selector_without_an_encoder(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="kcenter", encoder=None)
    assert "selector 'kcenter' needs ['embeddings']" in message and "encoder" in message


def test_routed_bank_member_is_checked(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", router="text_cue", bank=["uniform", "kcenter"], encoder=None)
    assert "selector 'kcenter'" in message


def test_parameter_the_selector_does_not_have(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="kcenter", selector_params={"lamb": 0.1}, encoder="color_histogram")
    assert message.startswith("selector 'kcenter' has no parameter 'lamb'; its parameters: ")
    assert "start" in message.split("its parameters: ")[1]


def test_parameter_value_outside_its_declared_range(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="mmr", selector_params={"lam": 7.0}, encoder="imagenet_label")
    assert message == "selector 'mmr': parameter lam=7.0 must be <= 1; give a value in range (CLI -p NAME=VALUE)"


def test_parameter_value_the_selector_refuses(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="bayes_grpo", selector_params={"stage": "sideways"}, encoder="imagenet_label")
    assert message.startswith("selector 'bayes_grpo' cannot be created with stage='sideways': ")


def test_answer_level_evaluator_without_an_answerer(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", evaluators=["evidence_recall", "mc_accuracy"])
    assert "['mc_accuracy'] score answers" in message and "answerer" in message


@pytest.mark.parametrize("k", [0, -3, 2.5, True])
def test_budget_below_one_or_not_whole(tiny, tmp_path: Path, decoded: list[int], k: Any) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", k=k)
    assert message.startswith(f"frame budget k must be an integer of at least 1, got {k!r}")


@pytest.mark.parametrize("pool", ["fps=abc", "uniform=2.5", "fps=0", "every"])
def test_bad_pool_policy(tiny, tmp_path: Path, decoded: list[int], pool: str) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", pool=pool)
    assert message.startswith("bad pool policy (pool=, CLI --pool): ") and repr(pool) in message


def test_negative_limit(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", limit=-1)
    assert message.startswith("limit must be a whole number of samples (0 or more), got -1")


def test_bank_without_a_router(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector="uniform", bank=["uniform", "kcenter"])
    assert message.startswith("bank= names the selectors a router may assign: pass router= too")


def test_parameters_for_a_selector_instance(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    message = _refused(tiny, tmp_path, decoded, selector=frameselect.selectors.create("uniform"), selector_params={"k": 3})
    assert "given for a selector instance" in message


def test_limit_zero_and_limit_n(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kw: dict[str, Any] = dict(selector="uniform", dataset=tiny, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    assert frameselect.evaluate(limit=0, **kw).records == []
    assert [r.sample_id for r in frameselect.evaluate(limit=2, **kw).records] == [s.id for s in list(tiny)[:2]]


def test_config_errors_are_frameselect_errors_and_value_errors() -> None:
    assert issubclass(ConfigError, FrameselectError) and issubclass(ConfigError, ValueError)


def test_samples_with_duplicate_ids(tiny, tmp_path: Path, decoded: list[int]) -> None:  # type: ignore[no-untyped-def]
    samples = list(tiny)[:1] * 2
    message = _refused(tiny, tmp_path, decoded, selector="uniform", dataset=samples)
    assert "duplicate sample ids" in message
