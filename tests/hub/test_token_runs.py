"""Runs at a token budget end to end: a tiny random-weight Qwen2-VL receives exactly the planned visual tokens.

The model's input ids are captured at ``generate`` and their ``<|video_pad|>``
tokens counted; that count must equal the record's ``tokens`` metric (the
cost model's price of the frames sent), never exceed the budget, and the
frames must reach the model at the planned size (``video_grid_thw`` times
the patch size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Qwen2VLImageProcessorPil"):
    pytest.skip("needs transformers 5", allow_module_level=True)

from colour_encoder import MeanColour  # noqa: E402
from frameselect._engine.pipeline import evaluate  # noqa: E402
from frameselect._engine.token_budget import plan_frames  # noqa: E402
from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs  # noqa: E402
from frameselect.answerers.transformers_vlm import Qwen2VL  # noqa: E402
from frameselect.errors import ConfigError  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.tokens import Qwen2VL as Qwen2VLCost  # noqa: E402

from .test_vlm import QWEN_TEMPLATE, _qwen_model, _qwen_tokenizer  # noqa: E402

pytestmark = pytest.mark.slow  # a transformers model (tiny, random weights) per case

# the tiny dataset's frames are 96 x 160: Qwen2-VL resizes them to 84 x 168 (3 x 6 merged tokens a pair) within these bounds
MIN_PIXELS, MAX_PIXELS = 28 * 28 * 4, 28 * 28 * 30


class _Spy:
    """Wraps the model's ``generate``: keeps each call's input ids and video grid."""

    def __init__(self, model: Any) -> None:
        self.calls: list[dict[str, Any]] = []
        self._generate = model.generate
        model.generate = self

    def __call__(self, **inputs: Any) -> Any:
        self.calls.append({"input_ids": inputs["input_ids"].clone(), "grid": inputs["video_grid_thw"].tolist()})
        return self._generate(**inputs)


@pytest.fixture()
def qwen() -> tuple[Qwen2VL, _Spy, int]:
    processor = QwenVLInputs(_qwen_tokenizer(), QwenVideoConfig(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS), chat_template=QWEN_TEMPLATE)
    model = _qwen_model("qwen2_vl", processor.tokenizer)
    spy = _Spy(model)
    return Qwen2VL(model=model, processor=processor, max_new_tokens=2), spy, processor.video_token_id


def test_the_answerer_declares_its_processors_cost_model(qwen: tuple[Qwen2VL, _Spy, int]) -> None:
    answerer, _, _ = qwen
    model = answerer.token_model()
    assert model == Qwen2VLCost(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, cap_pixels_per_frame=True)
    assert model.frame_size(96, 160, 4) == (84, 168)
    assert Qwen2VL(model=_qwen_model("qwen2_vl", _qwen_tokenizer()), processor=answerer.processor, max_pixels=3136).token_model().max_pixels == 3136


@pytest.mark.parametrize(
    ("policy", "tokens", "k", "frames", "sent", "size"),
    [
        # sent as decoded (96 x 160), resized by the model to 84 x 168: 18 tokens a pair, 5 pairs in 95 -> 10 frames
        # (tiny_b's pool holds 9: 5 pairs all the same, the last frame repeated), 90 tokens
        ("fixed_res", 95, 8, {"tiny_a": 10, "tiny_b": 9}, (96, 160), (84, 168)),
        # 4 frames (2 pairs) in 20 tokens: 84 x 168 costs 36, so the frames are sent at 56 x 112 (8 a pair, 16)
        ("fixed_k", 20, 4, {"tiny_a": 4, "tiny_b": 4}, (56, 112), (56, 112)),
    ],
)
def test_the_model_receives_exactly_the_planned_visual_tokens(
    qwen: tuple[Qwen2VL, _Spy, int],
    tiny: Any,
    tmp_path: Path,
    policy: str,
    tokens: int,
    k: int,
    frames: dict[str, int],
    sent: tuple[int, int],
    size: tuple[int, int],
) -> None:
    answerer, spy, video_pad = qwen
    result = evaluate(
        "uniform",
        ["mc_accuracy"],
        tiny,
        k,
        answerer=answerer,
        tokens=tokens,
        token_policy=policy,
        store=tmp_path / "s.sqlite",
        cache_dir=tmp_path / "c",
        progress=False,
    )
    assert not result.failed and len(spy.calls) == len(result.records) == 6
    for record, call in zip(result.records, spy.calls, strict=True):
        pads = int((call["input_ids"] == video_pad).sum())
        assert pads == record.metrics["tokens"] <= tokens
        n = frames[record.sample_id.split("/")[0]]
        assert len(record.selection) == n and record.k == min(n, 10)
        grid_t, grid_h, grid_w = call["grid"][0]
        assert (grid_t, grid_h * 14, grid_w * 14) == (-(-n // 2), *size)
        assert record.metadata["frame_size"] == list(sent) and record.metadata["token_budget"] == tokens
    assert result.config["tokens"] == tokens and result.config["token_model"]["family"] == "qwen2_vl"
    assert result.table["tokens"] == sum(r.metrics["tokens"] for r in result.records) / 6


def test_the_cost_model_agrees_with_the_planner_on_the_tiny_videos(qwen: tuple[Qwen2VL, _Spy, int]) -> None:
    model = qwen[0].token_model()
    assert plan_frames(95, model, (96, 160), "fixed_res", max_frames=12).tokens == 90
    assert plan_frames(20, model, (96, 160), "fixed_k", k=4, max_frames=12).tokens == 16


def test_a_budget_below_one_frame_of_the_video_is_refused_before_any_sample(qwen: tuple[Qwen2VL, _Spy, int], tiny: Any, tmp_path: Path) -> None:
    answerer, spy, _ = qwen
    store = tmp_path / "s.sqlite"
    with pytest.raises(ConfigError, match=r"token budget 10 cannot be spent: .*below one frame of this 160x96 video at qwen2_vl's default size \(18 tokens\)"):
        evaluate("uniform", ["mc_accuracy"], tiny, 4, answerer=answerer, tokens=10, store=store, cache_dir=tmp_path / "c", progress=False)
    assert spy.calls == []
    from frameselect.store import Store

    with Store(store) as st:
        assert st.runs() == []


def test_a_mixed_resolution_selection_reaches_the_model_as_one_video_per_size(qwen: tuple[Qwen2VL, _Spy, int], tiny: Any, tmp_path: Path) -> None:
    answerer, spy, video_pad = qwen
    result = evaluate(
        "multires",
        ["mc_accuracy"],
        tiny,
        8,
        answerer=answerer,
        encoder=MeanColour(),
        selector_params={"high": 2, "high_scale": 1.0, "low_scale": 0.5},
        tokens=95,
        store=tmp_path / "s.sqlite",
        cache_dir=tmp_path / "c",
        progress=False,
    )
    assert not result.failed and len(spy.calls) == len(result.records) == 6
    model = answerer.token_model()
    for record, call in zip(result.records, spy.calls, strict=True):
        pads = int((call["input_ids"] == video_pad).sum())
        assert pads == record.metrics["tokens"] <= 95
        # two sizes, two videos: the sharp frames' and the small ones', each priced on its own
        assert len(call["grid"]) == 2
        assert pads == sum(t_ * h_ * w_ // 4 for t_, h_, w_ in call["grid"])
        with Store(tmp_path / "s.sqlite") as st:
            stored = st.selection(result.run_id, record.sample_id)
        assert stored is not None and stored[0].sizes is not None and len(set(stored[0].sizes)) == 2
        assert model.selection_tokens(list(stored[0].sizes)) == pads
