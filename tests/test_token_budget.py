"""Token budgets: plans of frames x resolution checked against hand-computed costs, runs that never exceed them.

Costs by hand (docs/tokens.md): Qwen2/2.5-VL resize a frame to multiples of
28 pixels and pay ``(H'/14) * (W'/14) / 4`` tokens per pair of frames (an odd
count pays a whole last pair); InternVL 256 a frame; LLaVA-OneVision
``196 * T + 1``; SmolVLM 81 a frame.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect._engine.pipeline import answer_cache_key, evaluate
from frameselect._engine.plan import plan_run
from frameselect._engine.token_budget import FramePlan, TokenBudgetError, check_token_budget, min_frame_tokens, plan_frames, split_mean_budget
from frameselect._studies.analysis import at_tokens, build_tables, load_runs, render_tables
from frameselect.answerers.base import AnswerRequest
from frameselect.errors import ConfigError
from frameselect.store import Store
from frameselect.tokens import token_model
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection

QWEN = token_model("qwen2_5_vl")


# -- plans --------------------------------------------------------------------------------


def test_fixed_res_keeps_the_models_size_and_fits_as_many_frames_as_it_can() -> None:
    # 360 x 640 -> 364 x 644: 26 x 46 patches, 299 tokens a pair; 6000 // 299 = 20 pairs
    assert plan_frames(6000, QWEN, (360, 640), "fixed_res") == FramePlan(40, (360, 640), 5980, False, 6000)
    # 39 candidates: 20 pairs all the same (the last frame repeated)
    assert plan_frames(6000, QWEN, (360, 640), "fixed_res", max_frames=39).k == 39
    assert plan_frames(6000, QWEN, (360, 640), "fixed_res", max_frames=39).tokens == 5980
    # per-frame models: InternVL 3 x 256 = 768 <= 1000; LLaVA-OneVision 196 * 5 + 1 = 981; SmolVLM 12 x 81 = 972
    assert plan_frames(1000, token_model("internvl"), (480, 854)).k == 3
    assert plan_frames(1000, token_model("llava_onevision"), (480, 854)).tokens == 981
    assert plan_frames(1000, token_model("smolvlm"), (480, 854)) == FramePlan(12, (480, 854), 972, False, 1000)


def test_fixed_k_shrinks_the_frames_to_the_largest_size_that_fits() -> None:
    # 16 frames of 720 x 1280 in 6000 tokens: 8 pairs of at most 750. Along the aspect-keeping scale, 560 x 1008
    # (40 x 72 patches, 720 a pair) fits and the next size, 588 x 1008 (756 a pair), does not
    plan = plan_frames(6000, QWEN, (720, 1280), "fixed_k", k=16)
    assert plan == FramePlan(16, (560, 1008), 5760, True, 6000)
    assert QWEN.frame_size(560, 1008) == (560, 1008)  # a fixed point: the model receives this size
    # at its decoded size when it fits: 8 frames of 364 x 644 cost 4 x 299
    assert plan_frames(6000, QWEN, (360, 640), "fixed_k", k=8) == FramePlan(8, (360, 640), 1196, False, 6000)


def test_search_takes_the_most_frames_that_stay_legible() -> None:
    # scales 1, .75, .5, .375, .25 of 720 x 1280: at .375 the frames are 280 x 476 (20 x 34 patches, 170 a pair),
    # 35 pairs = 70 frames in 5950; at .25 (168 x 308) the shorter side drops under 224
    assert plan_frames(6000, QWEN, (720, 1280), "search") == FramePlan(70, (280, 476), 5950, True, 6000)
    # nothing reaches 224 px: the largest size wins
    assert plan_frames(600, QWEN, (120, 160), "search").size == (120, 160)


def test_a_budget_below_one_frame_is_refused() -> None:
    assert min_frame_tokens(QWEN) == 4  # anything is resized up to 56 x 56 at least: 4 x 4 patches, one pair
    assert min_frame_tokens(token_model("qwen3_vl")) == 4  # two frames at least (one is refused), 64 x 64
    with pytest.raises(ConfigError, match="token budget 3 is below one frame of model 'qwen2_5_vl'.*costs 4 tokens"):
        check_token_budget(3, QWEN, "fixed_res")
    with pytest.raises(ConfigError, match="below 4 frames of model 'internvl'.*costs 1024 tokens"):
        check_token_budget(1000, token_model("internvl"), "fixed_k", 4)
    with pytest.raises(ConfigError, match="needs the frame count k"):
        check_token_budget(1000, QWEN, "fixed_k", None)
    with pytest.raises(ConfigError, match="unknown token policy 'widest'"):
        check_token_budget(1000, QWEN, "widest")
    # one 720p frame costs a whole pair at the model's size: 52 x 92 patches, 1196 tokens
    with pytest.raises(TokenBudgetError, match=r"below one frame of this 1280x720 video at qwen2_5_vl's default size \(1196 tokens\)"):
        plan_frames(1000, QWEN, (720, 1280), "fixed_res")


@pytest.mark.parametrize("budget", [4, 37, 299, 1000, 6000, 50000])
@pytest.mark.parametrize("policy", ["fixed_res", "fixed_k", "search"])
@pytest.mark.parametrize("family", ["qwen2_vl", "qwen3_vl", "llava_onevision", "internvl", "smolvlm"])
def test_no_plan_costs_more_than_its_budget(family: str, policy: str, budget: int) -> None:
    model = token_model(family)
    for size in [(96, 160), (360, 640), (1080, 1920), (1920, 1080)]:
        try:
            plan = plan_frames(budget, model, size, policy, k=4, max_frames=300)
        except TokenBudgetError:
            continue
        assert plan.tokens == model.visual_tokens([plan.size] * plan.k) <= budget
        assert 1 <= plan.k <= 300 and (policy != "fixed_k" or plan.k == 4)


def test_a_mean_token_budget_is_split_exactly_by_the_routers_frame_budgets() -> None:
    assert split_mean_budget(1000, [4, 8, 12]) == [500, 1000, 1500]
    # 20 tokens for weights 1 : 2 -> 6.67 and 13.33: floored 6 and 13, the leftover token to the larger remainder
    assert split_mean_budget(10, [1, 2]) == [7, 13]
    # 42000 tokens over weights summing to 132: 318.18 a frame; floors 1272, 2545, 5090, 20363, 1272, 10181, 1272 leave 5,
    # which go to the largest remainders (16: .91, 32: .82, each 4: .73)
    assert split_mean_budget(6000, [4, 8, 16, 64, 4, 32, 4]) == [1273, 2545, 5091, 20363, 1273, 10182, 1273]


# -- sizes on a selection -----------------------------------------------------------------


def test_a_selection_carries_a_size_per_frame_and_the_request_sends_them() -> None:
    frames = [np.full((48, 64, 3), i, dtype=np.uint8) for i in range(4)]
    pool = CandidatePool("v", np.arange(4.0), np.arange(4), policy="fps=1", source=InMemoryFrames(frames))
    sample = Sample("s", "v.mp4", Query("q?"))
    sized = Selection((0, 2, 3), sizes=((24, 32), (48, 64), (24, 32)))
    got = AnswerRequest(sample, pool, sized).frames()
    assert [f.shape for f in got] == [(24, 32, 3), (48, 64, 3), (24, 32, 3)] and [int(f[0, 0, 0]) for f in got] == [0, 2, 3]
    with pytest.raises(ValueError, match="needs as many"):
        Selection((0, 1), sizes=((24, 32),))
    # the answer cache key follows the sizes (and is unchanged where there are none)
    from frameselect.registry import answerers

    oracle = answerers.create("oracle")
    plain = answer_cache_key(oracle, AnswerRequest(sample, pool, Selection((0, 2, 3))))
    assert plain != answer_cache_key(oracle, AnswerRequest(sample, pool, sized))
    assert plain == answer_cache_key(oracle, AnswerRequest(sample, pool, Selection((0, 2, 3), tokens=12)))


# -- runs -------------------------------------------------------------------------------------


def test_a_run_needs_a_cost_model_and_a_budget_of_one_frame(tiny: Any) -> None:
    with pytest.raises(ConfigError, match="needs the answering model's cost model, and no answerer is given"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, tokens=100)
    with pytest.raises(ConfigError, match="answerer 'oracle' declares no cost model"):
        plan_run("uniform", ["mc_accuracy"], tiny, 8, answerer="oracle", tokens=100)
    with pytest.raises(ConfigError, match="unknown token cost model 'gpt'"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, tokens=100, token_model="gpt")
    plan = plan_run("uniform", ["evidence_recall"], tiny, 8, tokens=100, token_model="qwen2_5_vl")
    assert plan.config["tokens"] == 100 and "k" not in plan.config and plan.config["label"] == "uniform@tokens=100"
    assert plan.run_id != plan_run("uniform", ["evidence_recall"], tiny, 8, tokens=100, token_model="qwen2_vl").run_id
    # a frame-count run keeps its fingerprint: the cost model only prices its frames
    assert plan_run("uniform", ["evidence_recall"], tiny, 8, token_model="qwen2_5_vl").run_id == plan_run("uniform", ["evidence_recall"], tiny, 8).run_id


def test_a_run_at_a_token_budget_never_exceeds_it_and_records_what_it_used(tiny: Any, tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(dataset=tiny, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False, token_model="qwen2_5_vl")
    # 160 x 96 frames -> 168 x 84 at the model's size: 3 x 6 patches... 6 x 12 / 4 = 18 tokens a pair
    result = evaluate("uniform", k=8, tokens=40, **kw)
    assert not result.failed
    assert [(r.metrics["tokens"], len(r.selection)) for r in result.records] == [(36.0, 4)] * 6
    # fixed_k: 8 frames in 40 tokens -> 4 pairs of at most 10: 56 x 112 (4 x 8 patches, 8 a pair), 32 tokens
    sized = evaluate("uniform", k=8, tokens=40, token_policy="fixed_k", **kw)
    assert {(r.metrics["tokens"], len(r.selection), tuple(r.metadata["frame_size"])) for r in sized.records} == {(32.0, 8, (56, 112))}
    # a frame-count run with a cost model records its tokens too: 8 frames at 84 x 168
    counted = evaluate("uniform", k=8, **kw)
    assert counted.table["tokens"] == 72.0 and counted.config["token_model"]["family"] == "qwen2_5_vl"


def test_a_routed_run_spends_the_mean_token_budget_exactly(tiny: Any, tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(dataset=tiny, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False, token_model="qwen2_5_vl")
    result = evaluate("uniform", k=8, tokens=60, router="text_cue", **kw)
    assert not result.failed
    budgets = [r.metadata["token_budget"] for r in result.records]
    assert sum(budgets) == 60 * 6 and len(set(budgets)) > 1  # shared unevenly, at the mean exactly
    for record in result.records:
        assert record.metrics["tokens"] <= record.metadata["token_budget"]
        assert record.k == min(12 if record.sample_id.startswith("tiny_a") else 9, record.metadata["token_budget"] // 18 * 2)
    assert result.table["tokens"] <= 60


def test_tables_show_tokens_and_compare_runs_at_equal_cost(tiny: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    kw: dict[str, Any] = dict(dataset=tiny, store=store, cache_dir=tmp_path / "c", progress=False, token_model="qwen2_5_vl")
    for k in (2, 4, 8):
        evaluate("uniform", k=k, **kw)  # 18, 36, 72 tokens
    evaluate("uniform", k=2)  # no cost model: no tokens
    with Store(store) as st:
        runs = load_runs(st)
    kept, left = at_tokens(runs, 40)
    assert [r.label for r in kept] == ["uniform@k=4"] and sorted(left) == ["uniform@k=2", "uniform@k=8"]
    text = render_tables(build_tables(runs, ["evidence_recall"], n_boot=50))
    assert "| selector | n | tokens | fill_share | evidence_recall |" in text and "| uniform@k=8 | 6 | 72.0 |" in text


def _decoded_sizes(body: dict[str, Any]) -> list[tuple[int, int]]:
    """The (height, width) of every frame a chat-completions body carries, as image_url or as vLLM's frame-list video_url."""
    import base64
    import io

    from PIL import Image

    blobs: list[str] = []
    for part in body["messages"][-1]["content"]:
        if part["type"] == "image_url":
            blobs.append(part["image_url"]["url"].split(",", 1)[1])
        elif part["type"] == "video_url":
            head, data = part["video_url"]["url"].split(",", 1)
            assert head == "data:video/jpeg;base64"
            blobs += data.split(",")
    images = [Image.open(io.BytesIO(base64.b64decode(b))) for b in blobs]
    return [(image.height, image.width) for image in images]


def _recording_transport(sizes: list[tuple[int, int]], kinds: list[str]) -> Any:
    import json

    import httpx

    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        sizes.extend(_decoded_sizes(body))
        kinds.extend(p["type"] for p in body["messages"][-1]["content"] if p["type"] != "text")
        reply = {"object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}}]}
        return httpx.Response(200, json=reply)

    return httpx.MockTransport(handle)


def test_openai_http_prices_frames_sent_as_images_as_images_and_resizes_before_encoding(tiny: Any, tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    pytest.importorskip("PIL")
    from frameselect._engine.plan import resolve

    with pytest.raises(ConfigError, match="unknown token cost model 'qwen9'"):
        resolve("answerers", "openai_http", tokens="qwen9")
    with pytest.raises(ConfigError, match="prices a video; send them as a video"):
        resolve("answerers", "openai_http", tokens="llava_onevision")  # no image rule here: LLaVA-OneVision tiles an image (anyres)
    sizes: list[tuple[int, int]] = []
    kinds: list[str] = []
    answerer = resolve("answerers", "openai_http", tokens="qwen2_5_vl", image_format="png", transport=_recording_transport(sizes, kinds))
    # each image is padded to a temporal pair on its own: priced as a one-frame video each
    assert answerer.token_model() == token_model("qwen2_5_vl_images") and "qwen" not in answerer.id and "frames_as" not in answerer.id
    result = evaluate(
        "uniform", ["mc_accuracy"], tiny, 8, answerer=answerer, tokens=40, token_policy="fixed_k", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c"
    )
    assert not result.failed and result.config["token_model"]["family"] == "qwen2_5_vl_images"
    assert set(kinds) == {"image_url"} and len(sizes) == 8 * 6 and len(set(sizes)) == 1
    (size,) = set(sizes)
    per_image = token_model("qwen2_5_vl_images").visual_tokens([size])
    assert 8 * per_image <= 40 and [r.metrics["tokens"] for r in result.records] == [8.0 * per_image] * 6
    # as a video the same 8 frames would fit at twice the size: 4 temporal pairs of 2 x 4 merged patches
    assert token_model("qwen2_5_vl").visual_tokens([(56, 112)] * 8) == 32 and token_model("qwen2_5_vl_images").visual_tokens([(56, 112)] * 8) == 64


def test_openai_http_sends_a_video_as_a_vllm_frame_list_priced_as_a_video(tiny: Any, tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    pytest.importorskip("PIL")
    from frameselect._engine.plan import resolve

    with pytest.raises(ConfigError, match="frames_as='video' sends JPEG frames"):
        resolve("answerers", "openai_http", frames_as="video", image_format="png")
    with pytest.raises(ConfigError, match="prices frames sent as images"):
        resolve("answerers", "openai_http", frames_as="video", image_format="jpeg", tokens="qwen2_5_vl_images")
    sizes: list[tuple[int, int]] = []
    kinds: list[str] = []
    answerer = resolve("answerers", "openai_http", tokens="qwen2_5_vl", frames_as="video", image_format="jpeg", transport=_recording_transport(sizes, kinds))
    assert answerer.token_model() == token_model("qwen2_5_vl") and "frames_as=video" in answerer.id
    result = evaluate(
        "uniform", ["mc_accuracy"], tiny, 8, answerer=answerer, tokens=40, token_policy="fixed_k", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c"
    )
    assert not result.failed and result.config["token_model"]["family"] == "qwen2_5_vl"
    assert kinds == ["video_url"] * 6 and sizes == [(56, 112)] * 8 * 6  # one video a question, every frame at the planned size
    assert [r.metrics["tokens"] for r in result.records] == [32.0] * 6
