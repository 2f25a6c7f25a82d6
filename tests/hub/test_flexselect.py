"""FlexSelect on a tiny random-weight Qwen2.5-VL: its attention scores against the model's own attention and a direct computation.

The answers of a random model are noise; what is checked is the arithmetic:
the question's attention to each visual token at the reference layer, as
``frame_attention`` computes it (only the layers below it run), equals (1) the
attention probabilities the model itself returns (eager attention,
``output_attentions``) and (2) a computation from the layer's weights
(RMSNorm, q/k projections with their biases, M-RoPE as the model's rotary
embedding lays it out, causal softmax), both reduced as the reference
``token_selection`` does (max over heads and text tokens).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Qwen2VLImageProcessorPil"):
    pytest.skip("needs transformers 5", allow_module_level=True)

from tests.hub.test_vlm import QWEN_TEMPLATE, SIDE, SPECIAL, _qwen_tokenizer  # noqa: E402

from frameselect._engine.plan import plan_run  # noqa: E402
from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs  # noqa: E402
from frameselect.answerers.transformers_vlm import Qwen2_5VL, build_prompt  # noqa: E402
from frameselect.errors import ConfigError  # noqa: E402
from frameselect.registry import selectors  # noqa: E402
from frameselect.selectors.flexselect import FlexSelect, group_frames, group_shares  # noqa: E402
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample  # noqa: E402

pytestmark = pytest.mark.slow  # a VLM built from a config (torch, transformers)

LAYERS = 3


def _model(tokenizer: Any, seed: int = 0) -> Any:
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIAL}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,  # 4 heads of 16: M-RoPE sections 2 + 3 + 3 = 16 / 2
        "intermediate_size": 64,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        "bos_token_id": None,
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    vision = {**vision, "intermediate_size": 64, "out_hidden_size": 64, "fullatt_block_indexes": [0], "window_size": 56}
    config = transformers.Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    config._attn_implementation = "eager"  # so the model returns its attention probabilities
    config.text_config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config).eval()
    with torch.no_grad():  # random q/k biases too, so the projections' biases are exercised
        for layer in model.model.language_model.layers:
            layer.self_attn.q_proj.bias.normal_(0, 0.5)
            layer.self_attn.k_proj.bias.normal_(0, 0.5)
    return model


@pytest.fixture(scope="module")
def vlm() -> Qwen2_5VL:
    tok = _qwen_tokenizer()
    processor = QwenVLInputs(tok, QwenVideoConfig(min_pixels=SIDE * SIDE, max_pixels=SIDE * SIDE), chat_template=QWEN_TEMPLATE)
    return Qwen2_5VL(model=_model(tok), processor=processor, max_new_tokens=2, time_instruction=False)


def _frames(n: int, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(n)]


def _token_scores_from_model_attention(vlm: Qwen2_5VL, prompt: str, frames: list[np.ndarray], times: list[float], layer: int) -> tuple[Any, Any]:
    _, inputs = vlm._inputs(prompt, frames, times)
    with torch.inference_mode():
        out = vlm._model(**inputs, output_attentions=True, output_hidden_states=True, use_cache=False)
    return inputs, out


def _direct(vlm: Qwen2_5VL, inputs: Any, out: Any, layer: int) -> np.ndarray:
    """The question's attention to the visual tokens from layer ``layer``'s weights, by hand (float64)."""
    model = vlm._model
    lm = model.model.language_model
    lay = lm.layers[layer]
    h = out.hidden_states[layer][0].double()  # the layer's input (hidden_states[0]: the embeddings)
    eps = lay.input_layernorm.variance_epsilon
    hn = h / torch.sqrt((h * h).mean(-1, keepdim=True) + eps) * lay.input_layernorm.weight.double()
    att = lay.self_attn
    heads, kv, d = model.config.text_config.num_attention_heads, model.config.text_config.num_key_value_heads, att.head_dim
    q = (hn @ att.q_proj.weight.double().T + att.q_proj.bias.double()).view(-1, heads, d).transpose(0, 1)
    k = (hn @ att.k_proj.weight.double().T + att.k_proj.bias.double()).view(-1, kv, d).transpose(0, 1)
    # M-RoPE: 3-D positions (time, height, width) from the model's rope index; frequency j of head_dim/2 uses the axis of its section
    position_ids, _ = model.model.get_rope_index(
        inputs["input_ids"],
        inputs["mm_token_type_ids"],
        video_grid_thw=inputs["video_grid_thw"],
        second_per_grid_ts=inputs.get("second_per_grid_ts"),
        attention_mask=inputs.get("attention_mask"),
    )
    inv_freq = lm.rotary_emb.inv_freq.double()
    sections = [2, 3, 3]
    axis = torch.cat([torch.full((n,), a) for a, n in enumerate(sections)])
    pos = position_ids[:, 0, :].double()  # (3, L)
    angles = pos[axis, :].T * inv_freq[None, :]  # (L, d/2)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rot(x: Any) -> Any:
        return x * cos + torch.cat((-x[..., d // 2 :], x[..., : d // 2]), -1) * sin

    q, k = rot(q), rot(k).repeat_interleave(heads // kv, dim=0)
    ids = inputs["input_ids"][0]
    visual = ids == model.config.video_token_id
    end = int(torch.nonzero(visual)[-1]) + 1
    n = ids.shape[0]
    s = q[:, end:, :] @ k.transpose(-1, -2) / np.sqrt(d)
    mask = torch.arange(n)[None, :] > torch.arange(end, n)[:, None]
    p = torch.softmax(s.masked_fill(mask, float("-inf")), -1)[..., visual]
    return p.reshape(-1, p.shape[-1]).max(0).values.detach().numpy()


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_token_scores_equal_the_models_attention_and_a_direct_computation(vlm: Qwen2_5VL, layer: int) -> None:
    from frameselect.answerers.transformers_vlm import text_to_visual_attention

    frames, times = _frames(4), [0.5, 1.5, 2.5, 3.5]
    prompt = build_prompt(Query("What colour is the car?", ("red", "blue")), times, 4.0, False)
    inputs, out = _token_scores_from_model_attention(vlm, prompt, frames, times, layer)
    ids = inputs["input_ids"][0]
    visual = ids == vlm._model.config.video_token_id
    end = int(torch.nonzero(visual)[-1]) + 1
    assert end < ids.shape[0] - 5  # the question follows the video
    attn = out.attentions[layer][0].float()  # (heads, L, L): the model's own softmaxed attention
    expected = attn[:, end:, :][..., visual].reshape(-1, int(visual.sum())).max(0).values.numpy()
    # frame_attention's path: the layer's input captured by a hook, the rotary tables the model hands its layers
    vlm.frame_attention(prompt, frames, times, layer=layer)  # loads; checks the hook runs
    captured: dict[str, Any] = {}

    def grab(module: Any, args: Any, kwargs: Any) -> None:
        captured.update(hidden=args[0] if args else kwargs["hidden_states"], rope=kwargs["position_embeddings"])

    handle = vlm.decoder_layers()[layer].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.inference_mode():
            vlm._model(**inputs, use_cache=False)
    finally:
        handle.remove()
    ours = text_to_visual_attention(vlm.decoder_layers()[layer], captured["hidden"], *captured["rope"], visual).numpy()
    assert ours.shape == expected.shape == (int(visual.sum()),)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours, _direct(vlm, inputs, out, layer), rtol=1e-4, atol=1e-7)
    assert np.ptp(ours) > 0  # the scores tell tokens apart


def test_frame_scores_reduce_each_temporal_patch(vlm: Qwen2_5VL) -> None:
    frames, times = _frames(5), [0.5, 1.5, 2.5, 3.5, 4.5]
    prompt = build_prompt(Query("Where is the dog?", ()), times, 5.0, False)
    inputs, out = _token_scores_from_model_attention(vlm, prompt, frames, times, LAYERS - 1)
    visual = inputs["input_ids"][0] == vlm._model.config.video_token_id
    tokens = _direct(vlm, inputs, out, LAYERS - 1).reshape(3, -1)  # 5 frames -> 3 temporal patches (the last frame repeated)
    for reduce, fn in (("mean", np.mean), ("max", np.max)):
        got = vlm.frame_attention(prompt, frames, times, layer=-1, frame_reduce=reduce)
        want = [fn(tokens[i // 2]) for i in range(5)]
        np.testing.assert_allclose(got, want, rtol=1e-4)
    assert int(visual.sum()) == 3 * 4  # 56 x 56 px: 2 x 2 merged tokens per temporal patch


def test_group_helpers_by_hand() -> None:
    assert group_frames(7, 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert group_frames(4, 64) == [[0, 1, 2, 3]]
    assert group_shares(4, [3, 2, 2]) == [2, 1, 1]
    assert group_shares(10, [3, 2, 2]) == [3, 2, 2]


def _pool(n: int) -> CandidatePool:
    return CandidatePool(
        video_id="vid",
        timestamps=np.arange(n) + 0.5,
        frame_indices=np.arange(n) * 25,
        policy="fps=1.0",
        duration=float(n),
        source=InMemoryFrames(_frames(n)),
    )


def test_flexselect_takes_each_groups_best_frames(vlm: Qwen2_5VL) -> None:
    pool, query = _pool(8), Query("What colour is the car?", ("red", "blue"))
    frames = _frames(8)
    sel = FlexSelect(group=4).select_through(vlm, pool, query, 4)
    # two strided groups: [0, 2, 4, 6] and [1, 3, 5, 7], two frames each
    expected = []
    for members in ([0, 2, 4, 6], [1, 3, 5, 7]):
        ts = [m + 0.5 for m in members]
        s = vlm.frame_attention(build_prompt(query, ts, 8.0, False), [frames[m] for m in members], ts, layer=-1)
        expected += [members[j] for j in sorted(range(4), key=lambda j: (-s[j], j))[:2]]
    assert list(sel.indices) == sorted(expected)
    one = FlexSelect(group=64).select_through(vlm, pool, query, 3)
    s = vlm.frame_attention(build_prompt(query, list(pool.timestamps), 8.0, False), frames, list(pool.timestamps), layer=-1)
    assert list(one.indices) == sorted(sorted(range(8), key=lambda j: (-s[j], j))[:3])


def test_flexselect_is_refused_at_plan_time_without_an_answerer_that_gives_attention(vlm: Qwen2_5VL) -> None:
    samples = [Sample(id="s", video="v.mp4", query=Query("What colour is the car?", ("red", "blue")), answer="A")]
    with pytest.raises(ConfigError, match="selector 'flexselect' ranks frames by the answering model's own attention"):
        plan_run("flexselect", ["evidence_recall"], samples, 4)
    with pytest.raises(ConfigError, match="answerer 'oracle' does not give it"):
        plan_run("flexselect", ["mc_accuracy"], samples, 4, answerer="oracle")
    plan = plan_run("flexselect", ["mc_accuracy"], samples, 4, answerer=vlm)
    assert plan.selector is not None and plan.selector.needs_answerer == {"answerer_attention"}
    assert "answerer_attention" in Qwen2_5VL.capabilities
    assert selectors.get("flexselect") is FlexSelect
    with pytest.raises(ConfigError, match="reduce"):
        plan_run("flexselect", ["mc_accuracy"], samples, 4, answerer=vlm, selector_params={"reduce": "sum"})


def test_a_run_selects_through_its_answerer(vlm: Qwen2_5VL, tiny, tmp_path: Any) -> None:  # type: ignore[no-untyped-def]
    import frameselect

    result = frameselect.evaluate(selector="flexselect", dataset=tiny, k=3, answerer=vlm, evaluators=["frames"], limit=2, cache_dir=tmp_path / "c")
    ok = [r for r in result.records if r.status == "ok"]
    assert len(ok) == 2, [r.error for r in result.records]
    assert all(len(r.selection) == 3 for r in ok)


@pytest.mark.parametrize("k", [1, 3, 8, 20])
def test_flexselect_keeps_the_selection_contract(vlm: Qwen2_5VL, k: int) -> None:
    """What the conformance suite checks of every selector, on real frames: min(k, N) unique ascending indices, the same on a rerun."""
    pool = _pool(8)
    for group in (3, 64):
        sel = FlexSelect(group=group).select_through(vlm, pool, Query("Is there a cat?", ()), k)
        idx = list(sel.indices)
        assert idx == sorted(set(idx)) and len(idx) == min(k, 8) and all(0 <= i < 8 for i in idx)
        assert sel.filled == 0
        assert list(FlexSelect(group=group).select_through(vlm, pool, Query("Is there a cat?", ()), k).indices) == idx
    with pytest.raises(Exception, match="answering model's attention"):
        FlexSelect().select(pool, Query("Is there a cat?", ()), k)


#: yunzhuzhang0918/flexselect at a1d1f5aa6d388c44ae6ea4b618b785be617f71ad, eval/qwen2_5_vl/token_selector.py
#: ``token_selection`` and ``token_selection_mean``, run unchanged on CPU (torch 2.13) as a method of this module's tiny
#: model's decoder layer ``L`` (``num_heads``, ``head_dim``, ``num_key_value_heads``, ``num_key_value_groups`` and
#: ``mrope_section = [2, 3, 3]`` set on it), with the layer's input from ``output_hidden_states``, ``vision_embedding_pos``
#: of the video tokens and the raw M-RoPE tables ``cos``/``sin`` of the model's 3-D positions (``get_rope_index``):
#: the frames ``_frames(4)`` at 0.5-3.5 s and the question "What colour is the car?" (red, blue), no time instruction.
REFERENCE = {
    (0, "max"): [0.080268979, 0.083331563, 0.085987248, 0.080584928, 0.082623072, 0.071866877, 0.0775562, 0.07487642],
    (0, "mean"): [0.022818295, 0.023845926, 0.02451909, 0.023638794, 0.023982042, 0.02298563, 0.023387186, 0.02265499],
    (1, "max"): [0.091249011, 0.086742364, 0.086355157, 0.086302541, 0.079390518, 0.075463586, 0.077760808, 0.086590797],
    (1, "mean"): [0.024747733, 0.023361243, 0.023030719, 0.022567475, 0.022772145, 0.022732941, 0.023155257, 0.023309637],
    (2, "max"): [0.09322615, 0.08099331, 0.079556435, 0.076279178, 0.073241845, 0.077068955, 0.076827861, 0.07167992],
    (2, "mean"): [0.024960773, 0.023753278, 0.024404278, 0.02352882, 0.023361776, 0.022436168, 0.023093591, 0.022690788],
}


@pytest.mark.parametrize(("layer", "reduce"), sorted(REFERENCE))
def test_token_scores_equal_the_reference_code(vlm: Qwen2_5VL, layer: int, reduce: str) -> None:
    from frameselect.answerers.transformers_vlm import text_to_visual_attention

    frames, times = _frames(4), [0.5, 1.5, 2.5, 3.5]
    prompt = build_prompt(Query("What colour is the car?", ("red", "blue")), times, 4.0, False)
    _, inputs = vlm._inputs(prompt, frames, times)
    captured: dict[str, Any] = {}

    def grab(module: Any, args: Any, kwargs: Any) -> None:
        captured.update(hidden=args[0] if args else kwargs["hidden_states"], rope=kwargs["position_embeddings"])

    handle = vlm.decoder_layers()[layer].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.inference_mode():
            vlm._model(**inputs, use_cache=False)
    finally:
        handle.remove()
    visual = inputs["input_ids"][0] == vlm._model.config.video_token_id
    ours = text_to_visual_attention(vlm.decoder_layers()[layer], captured["hidden"], *captured["rope"], visual, reduce).numpy()
    np.testing.assert_allclose(ours, REFERENCE[(layer, reduce)], rtol=1e-5, atol=2e-9)


def test_qwen2_vl_frame_scores_equal_its_own_attention() -> None:
    """The Qwen2-VL backend reads the same scores from its model (one layer, grouped-query attention)."""
    from tests.hub.test_vlm import _qwen_model

    from frameselect.answerers.transformers_vlm import Qwen2VL

    tok = _qwen_tokenizer()
    processor = QwenVLInputs(tok, QwenVideoConfig(min_pixels=SIDE * SIDE, max_pixels=SIDE * SIDE), chat_template=QWEN_TEMPLATE)
    model = _qwen_model("qwen2_vl", tok, seed=5)
    model.set_attn_implementation("eager")
    vlm = Qwen2VL(model=model, processor=processor, max_new_tokens=2, time_instruction=False)
    frames, times = _frames(6, seed=9), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    prompt = build_prompt(Query("Which colour comes first?", ("red", "blue")), times, 6.0, False)
    _, inputs = vlm._inputs(prompt, frames, times)
    with torch.inference_mode():
        attn = model(**inputs, output_attentions=True, use_cache=False).attentions[0][0].float()
    visual = inputs["input_ids"][0] == model.config.video_token_id
    end = int(torch.nonzero(visual)[-1]) + 1
    tokens = attn[:, end:, :][..., visual].reshape(-1, int(visual.sum())).max(0).values.numpy().reshape(3, -1)
    got = vlm.frame_attention(prompt, frames, times, layer=0)
    np.testing.assert_allclose(got, [tokens[i // 2].mean() for i in range(6)], rtol=1e-5)
    assert "answerer_attention" in Qwen2VL.capabilities
