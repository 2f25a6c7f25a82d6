"""flexselect needs the answerer's attention: refused at plan time without it, skipped with its reason by the benchmark (no model needed)."""

from __future__ import annotations

import pytest

from frameselect._engine.plan import plan_run
from frameselect._studies.bench.runner import _selectors
from frameselect.errors import ConfigError
from frameselect.registry import answerers, selectors
from frameselect.types import Query, Sample

SAMPLES = [Sample(id="s", video="v.mp4", query=Query("What colour is the car?", ("red", "blue")), answer="A")]


def test_refused_without_an_answerer_and_with_one_that_gives_no_attention() -> None:
    with pytest.raises(ConfigError, match="selector 'flexselect' ranks frames by the answering model's own attention.*pass an answerer"):
        plan_run("flexselect", ["evidence_recall"], SAMPLES, 4)
    for name in ("oracle", "label_ocr_reader", "openai_http"):
        with pytest.raises(ConfigError, match=f"needs \\['answerer_attention'\\] of the answerer, and answerer '{name}' does not give it"):
            plan_run("flexselect", ["mc_accuracy"], SAMPLES, 4, answerer=name)
    # a bank member that needs the answerer is checked too
    with pytest.raises(ConfigError, match="selector 'flexselect'"):
        plan_run("uniform", ["mc_accuracy"], SAMPLES, 4, answerer="oracle", router="text_cue", bank=["uniform", "flexselect"])


def test_the_qwen_backends_declare_the_capability_and_the_others_do_not() -> None:
    assert "answerer_attention" in answerers.get("qwen2_vl").capabilities  # type: ignore[attr-defined]
    assert "answerer_attention" in answerers.get("qwen2_5_vl").capabilities  # type: ignore[attr-defined]
    for name in ("oracle", "label_ocr_reader", "llava_onevision", "internvl", "openai_http"):
        assert "answerer_attention" not in answerers.get(name).capabilities  # type: ignore[attr-defined]
    assert selectors.get("flexselect").needs_answerer == {"answerer_attention"}  # type: ignore[attr-defined]


def test_the_benchmark_skips_it_with_the_reason() -> None:
    notes: list[str] = []
    assert _selectors(["flexselect", "uniform"], None, notes) == [("uniform", selectors.create("uniform"))]
    assert notes == [
        "skipped flexselect: ranks frames by the answering model's own attention (answerer_attention), which the benchmark's offline answerers "
        "do not give: run it with a transformers Qwen backend (frameselect run -s flexselect -a qwen2_5_vl)"
    ]
