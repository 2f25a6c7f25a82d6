"""transformers VLM answering backends on tiny random-weight models built offline.

The answers of a random model are noise; what is checked is the contract:
the frames and their timestamps reach the model in the structure it
expects (video placeholder in the chat template, one temporal patch per two
frames, the frame rate, the time instruction), decoding is greedy and
deterministic, token counts add up, and the backend's id names model,
revision and decoding parameters (it keys the answer cache).

No torchvision here (transformers' video processors need it, and so do the
processors that own one): the backends run on the numpy/PIL stand-ins of
frameselect.answerers._vlm_inputs, whose pixels are checked against
transformers' own PIL image processors (Qwen2VLImageProcessorPil,
LlavaOnevisionImageProcessorPil's resize/rescale/normalize) and whose
patch order is checked against a transliteration of
Qwen2VLVideoProcessor.patchify.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Qwen2VLImageProcessorPil"):
    pytest.skip("needs transformers 5 (PIL image processors as references)", allow_module_level=True)

from frameselect._core.cache import RunCounters  # noqa: E402
from frameselect._engine.pipeline import answer_one  # noqa: E402
from frameselect.answerers._vlm_inputs import (  # noqa: E402
    InternVLInputs,
    LlavaOnevisionInputs,
    LlavaVideoConfig,
    QwenVideoConfig,
    QwenVLInputs,
    qwen_patchify,
    torchvision_available,
)
from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.transformers_vlm import Qwen2_5VL, Qwen2VL, build_prompt, selection_fps  # noqa: E402
from frameselect.registry import answerers  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection  # noqa: E402

pytestmark = pytest.mark.slow  # VLM backends built from configs (torch, transformers)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Qwen2-VL's chat template, reduced to what matters here (the video placeholder and the turn markers)
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
SIDE = 56  # frames are resized to 56x56 px: 4x4 patches of 14 px, 2x2 merged tokens per temporal patch


def _qwen_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(
        ["The video lasts for 10.00 seconds and 3 frames are sampled.", "What colour is the car? A. red B. blue", "user assistant"] * 5, trainer
    )
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")


@pytest.fixture(scope="module")
def qwen_processors() -> dict[str, Any]:
    """The torchvision-free stand-in (both models share Qwen2VLVideoProcessor's preprocessing)."""
    stand_in = QwenVLInputs(_qwen_tokenizer(), QwenVideoConfig(min_pixels=SIDE * SIDE, max_pixels=SIDE * SIDE), chat_template=QWEN_TEMPLATE)
    return {"qwen2_vl": stand_in, "qwen2_5_vl": stand_in}


def _qwen_model(name: str, tokenizer: Any, seed: int = 0) -> Any:
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIAL}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 512,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        "bos_token_id": None,
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    if name == "qwen2_5_vl":
        vision = {**vision, "intermediate_size": 64, "out_hidden_size": 32, "fullatt_block_indexes": [0], "window_size": 56}
        config_cls, model_cls = transformers.Qwen2_5_VLConfig, transformers.Qwen2_5_VLForConditionalGeneration
    else:
        config_cls, model_cls = transformers.Qwen2VLConfig, transformers.Qwen2VLForConditionalGeneration
    config = config_cls(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    return model_cls(config).eval()


@pytest.fixture(scope="module")
def qwen2_vl(qwen_processors: dict[str, Any]) -> Qwen2VL:
    processor = qwen_processors["qwen2_vl"]
    return Qwen2VL(model=_qwen_model("qwen2_vl", processor.tokenizer), processor=processor, max_new_tokens=6)


def _request(n_frames: int, options: tuple[str, ...] = ("red", "blue", "green", "yellow"), duration: float | None = 10.0) -> AnswerRequest:
    rng = np.random.default_rng(n_frames)
    frames = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(10)]
    pool = CandidatePool(
        video_id="vid",
        timestamps=np.arange(10) + 0.5,
        frame_indices=np.arange(10) * 25,
        policy="fps=1.0",
        duration=duration,
        source=InMemoryFrames(frames),
    )
    picked = [1, 4, 6, 9][:n_frames]
    sample = Sample(id=f"s{n_frames}", video="v.mp4", query=Query("What colour is the car?", options), answer="B")
    return AnswerRequest(sample, pool, Selection(indices=tuple(picked)))


@pytest.mark.parametrize("n_frames", [2, 3, 4])
def test_qwen2_vl_gets_the_frames_as_one_video_with_their_timestamps(qwen2_vl: Qwen2VL, n_frames: int) -> None:
    request = _request(n_frames)
    times = ",".join(f"{t:.2f}s" for t in request.timestamps)
    text, inputs = qwen2_vl.prepare(request)
    expected_prompt = (
        f"The video lasts for 10.00 seconds, and {n_frames} frames are sampled from it. These frames are located at {times}. "
        "Please answer the following questions related to this video.\n"
        "What colour is the car?\nA. red\nB. blue\nC. green\nD. yellow\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert text == f"<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>{expected_prompt}<|im_end|>\n<|im_start|>assistant\n"
    grid_t = (n_frames + 1) // 2  # two frames per temporal patch; an odd count repeats the last frame
    assert inputs["video_grid_thw"].tolist() == [[grid_t, 4, 4]]
    assert inputs["pixel_values_videos"].shape == (grid_t * 16, 3 * 2 * 14 * 14)
    tokenizer = qwen2_vl._processor.tokenizer
    video_pad = tokenizer.convert_tokens_to_ids("<|video_pad|>")
    assert int((inputs["input_ids"] == video_pad).sum()) == grid_t * 4  # 4x4 patches merged 2x2 per temporal patch
    decoded = tokenizer.decode(inputs["input_ids"][0])
    assert decoded.startswith("<|im_start|>user\n<|vision_start|>" + "<|video_pad|>" * (grid_t * 4) + "<|vision_end|>The video lasts")


def test_qwen2_vl_answer_is_greedy_and_counts_tokens(qwen2_vl: Qwen2VL) -> None:
    request = _request(3)
    (answer,) = qwen2_vl.answer([request])
    assert answer.error is None, answer.error
    _, inputs = qwen2_vl.prepare(request)
    assert answer.prompt_tokens == inputs["input_ids"].shape[1] > 50
    assert 1 <= answer.completion_tokens <= 6 and answer.latency_s > 0
    assert answer.model == f"{qwen2_vl.model_id}@{qwen2_vl.resolved_revision()}" and "@local-" in answer.model
    with torch.no_grad():
        reference = qwen2_vl._model.generate(**inputs, max_new_tokens=6, do_sample=False)
    new = reference[0, inputs["input_ids"].shape[1] :]
    assert answer.completion_tokens == new.shape[0]
    assert answer.text == qwen2_vl._processor.decode(new, skip_special_tokens=True).strip()
    again = qwen2_vl.answer([request, _request(2)])
    assert again[0].text == answer.text and len(again) == 2 and again[1].error is None


def test_qwen2_vl_id_names_model_revision_and_decoding(qwen2_vl: Qwen2VL, qwen_processors: dict[str, Any]) -> None:
    ident = qwen2_vl.id
    assert ident.startswith("qwen2_vl(") and f"model={qwen2_vl.model_id}" in ident
    for part in ("revision=local-", "max_new_tokens=6", "do_sample=False", "num_beams=1", "time_instruction=True", "dtype=float32"):
        assert part in ident
    same = Qwen2VL(model=qwen2_vl._model, processor=qwen2_vl._processor, max_new_tokens=6)
    assert same.id == ident
    assert Qwen2VL(model=qwen2_vl._model, processor=qwen2_vl._processor, max_new_tokens=7).id != ident
    assert Qwen2VL(model=qwen2_vl._model, processor=qwen2_vl._processor, max_new_tokens=6, time_instruction=False).id != ident
    assert "revision=abc123" in Qwen2VL(model=qwen2_vl._model, processor=qwen2_vl._processor, revision="abc123").id
    other = _qwen_model("qwen2_vl", qwen_processors["qwen2_vl"].tokenizer, seed=1)
    assert Qwen2VL(model=other, processor=qwen2_vl._processor, max_new_tokens=6).id != ident  # other weights


def test_answer_cache_keys_on_the_backend_id(qwen2_vl: Qwen2VL) -> None:
    store, counters = Store(":memory:"), RunCounters()
    request = _request(4)
    first = answer_one(qwen2_vl, request, store, counters)
    second = answer_one(qwen2_vl, _request(4), store, counters)
    assert counters.answerer_calls == 1 and second == first
    longer = Qwen2VL(model=qwen2_vl._model, processor=qwen2_vl._processor, max_new_tokens=3)
    answer_one(longer, _request(4), store, counters)
    assert counters.answerer_calls == 2  # other decoding parameters: not served from the cache
    store.close()


def test_a_failing_request_returns_an_error_not_an_exception(qwen2_vl: Qwen2VL) -> None:
    request = _request(2)
    broken = AnswerRequest(request.sample, CandidatePool(video_id="x", timestamps=np.arange(3.0), frame_indices=np.arange(3)), Selection(indices=(0, 1)))
    answers = qwen2_vl.answer([broken, request])
    assert answers[0].error is not None and "frame source" in answers[0].error and answers[0].text == ""
    assert answers[1].error is None


def test_qwen2_5_vl_gets_absolute_time_from_the_selection_frame_rate(qwen_processors: dict[str, Any]) -> None:
    processor = qwen_processors["qwen2_5_vl"]
    vlm = Qwen2_5VL(model=_qwen_model("qwen2_5_vl", processor.tokenizer), processor=processor, max_new_tokens=4, time_instruction=False)
    request = _request(4)  # frames at 1.5, 4.5, 6.5, 9.5 s: 3 intervals over 8 s
    text, inputs = vlm.prepare(request)
    assert "The video lasts" not in text and text.count("<|video_pad|>") == 1
    assert selection_fps(request.timestamps) == pytest.approx(3 / 8)
    np.testing.assert_allclose(inputs["second_per_grid_ts"].numpy(), [2 / (3 / 8)])  # two frames per temporal patch
    (answer,) = vlm.answer([request])
    assert answer.error is None, answer.error
    assert answer.prompt_tokens == inputs["input_ids"].shape[1] and 1 <= answer.completion_tokens <= 4
    assert inputs["video_grid_thw"].tolist() == [[2, 4, 4]]
    small = Qwen2_5VL(model=vlm._model, processor=processor, max_pixels=28 * 28 * 2)  # 48x64 frames -> 28x28
    _, fewer = small.prepare(request)
    assert fewer["video_grid_thw"].tolist() == [[2, 2, 2]] and "max_pixels=1568" in small.id


# -- Qwen2-VL preprocessing without torchvision, against transformers' references ------------


def _torch_patchify(video: Any, patch: int, merge: int, temporal: int) -> Any:
    """Qwen2VLVideoProcessor.patchify (transformers 5), transliterated for one video ``(T, C, H, W)``."""
    videos = video[None]
    batch, frames, channel, height, width = videos.shape
    if pad := -frames % temporal:
        videos = torch.cat((videos, videos[:, -1:].expand(-1, pad, -1, -1, -1)), dim=1)
        frames += pad
    grid_t, grid_h, grid_w = frames // temporal, height // patch, width // patch
    patches = videos.view(batch, grid_t, temporal, channel, grid_h // merge, merge, patch, grid_w // merge, merge, patch)
    patches = patches.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    return patches.reshape(batch, grid_t * grid_h * grid_w, channel * temporal * patch * patch)[0]


@pytest.mark.parametrize("frames", [1, 2, 3, 4])
def test_qwen_patch_order_is_the_video_processors(frames: int) -> None:
    rng = np.random.default_rng(frames)
    video = rng.standard_normal((frames, 3, 56, 84)).astype(np.float32)  # 4x6 patches of 14 px: a non-square grid
    rows, grid = qwen_patchify(video, patch_size=14, merge_size=2, temporal_patch_size=2)
    assert grid == ((frames + 1) // 2, 4, 6)
    np.testing.assert_array_equal(rows, _torch_patchify(torch.from_numpy(video), 14, 2, 2).numpy())


def _pil_reference_video(frames: list[Any], size: dict[str, int]) -> tuple[Any, list[int]]:
    """The frames through Qwen2VLImageProcessorPil one by one, regrouped two per temporal patch.

    The image processor repeats each frame over the temporal axis of a row
    (channel, frame, row, column); a video row takes frame 2t for the first
    slot and frame 2t + 1 (or the repeated last frame) for the second.
    """
    reference = transformers.Qwen2VLImageProcessorPil(size=size)
    out = reference(images=frames, return_tensors="np")
    (_, grid_h, grid_w) = out["image_grid_thw"][0].tolist()
    per_frame = out["pixel_values"].reshape(len(frames), grid_h * grid_w, 3, 2, 14 * 14)[:, :, :, 0]  # the first copy
    if len(frames) % 2:
        per_frame = np.concatenate([per_frame, per_frame[-1:]])
    pairs = per_frame.reshape(-1, 2, grid_h * grid_w, 3, 14 * 14).transpose(0, 2, 3, 1, 4)  # (t, h*w, C, T, P*P)
    return pairs.reshape(-1, 3 * 2 * 14 * 14), [len(pairs), grid_h, grid_w]


@pytest.mark.parametrize("n_frames", [2, 3, 4])
def test_qwen_pixels_equal_transformers_pil_image_processor(qwen2_vl: Qwen2VL, n_frames: int) -> None:
    request = _request(n_frames)
    _, inputs = qwen2_vl.prepare(request)
    expected, grid = _pil_reference_video(request.frames(), {"shortest_edge": SIDE * SIDE, "longest_edge": SIDE * SIDE})
    assert inputs["video_grid_thw"].tolist() == [grid]
    assert inputs["pixel_values_videos"].dtype == torch.float32
    np.testing.assert_array_equal(inputs["pixel_values_videos"].numpy(), expected)
    merge = qwen2_vl._processor.config.merge_size
    assert int((inputs["mm_token_type_ids"] == 2).sum()) == int((inputs["input_ids"] == qwen2_vl._processor.video_token_id).sum()) == np.prod(grid) // merge**2
    assert int(inputs["mm_token_type_ids"].sum()) == 2 * np.prod(grid) // merge**2  # nothing else is marked
    assert inputs["attention_mask"].tolist() == [[1] * inputs["input_ids"].shape[1]]


def test_qwen_frames_keep_their_aspect_and_follow_the_pixel_bounds() -> None:
    frames = [np.full((90, 160, 3), v, dtype=np.uint8) for v in (0, 255, 128)]
    config = QwenVideoConfig(min_pixels=28 * 28, max_pixels=84 * 168)
    pixels, grid = config.video(frames)
    assert grid == (2, 6, 12)  # 90x160 -> 84x168 (nearest multiples of 28, area within bounds); 3 frames padded to 4
    assert QwenVideoConfig(min_pixels=28 * 28, max_pixels=28 * 28 * 6).video(frames)[1] == (2, 2, 6)  # scaled down: 28x84
    rows = pixels.reshape(2, 6 * 12, 3, 2, 14 * 14)  # (temporal patch, patch, channel, frame, pixels)
    mean, std = np.float32(OPENAI_MEAN), np.float32(OPENAI_STD)
    for c in range(3):
        assert (rows[0, :, c, 0] == (np.float32(0.0) - mean[c]) / std[c]).all()  # frame 0: black
        assert (rows[0, :, c, 1] == (np.float32(1.0) - mean[c]) / std[c]).all()  # frame 1: white
    assert (rows[1, :, :, 0] == rows[1, :, :, 1]).all() and not (rows[1] == rows[0]).all()  # frame 2 and its copy
    # the per-frame cap of qwen-vl-utils: an even share of max_video_tokens' pixels, floored at 1.05 x min_pixels
    capped = QwenVideoConfig(min_pixels=784, max_pixels=280 * 280, max_video_tokens=100)
    assert capped.frame_size(280, 280, 4, cap_pixels_per_frame=False) == (280, 280)
    assert capped.frame_size(280, 280, 4) == (168, 168)  # share int(100 * 784 * 0.9) * 2 // 4 = 35280 px
    assert capped.frame_size(280, 280, 400) == (28, 28)  # share 352 px < floor 823 px
    assert capped.frame_size(280, 280, 4, max_pixels=784 * 4) == (56, 56)
    with pytest.raises(ValueError, match="one size"):
        config.video([frames[0], frames[0][:, :100]])


def test_smart_resize_is_transformers_own() -> None:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as reference

    from frameselect.answerers._vlm_inputs import smart_resize

    sizes = [(48, 64), (90, 160), (720, 1280), (1080, 1920), (17, 3000), (300, 7), (2160, 3840), (28, 28)]
    bounds = [(56 * 56, 28 * 28 * 1280), (128 * 28 * 28, 28 * 28 * 768), (784, 3136), (3136, 12845056)]
    for (h, w), (low, high) in ((s, b) for s in sizes for b in bounds):
        assert smart_resize(h, w, 28, low, high) == reference(h, w, 28, low, high), (h, w, low, high)


def test_qwen_stand_in_refuses_a_prompt_without_one_video_placeholder(qwen_processors: dict[str, Any]) -> None:
    stand_in = qwen_processors["qwen2_vl"]
    frame = np.zeros((56, 56, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="exactly one"):
        stand_in("no video here", [frame, frame])
    with pytest.raises(ValueError, match="exactly one"):
        stand_in("<|video_pad|><|video_pad|>", [frame, frame])


def test_qwen2_vl_loads_a_checkpoint_folder_without_torchvision(tmp_path: Any, qwen_processors: dict[str, Any]) -> None:
    import json

    tokenizer = qwen_processors["qwen2_vl"].tokenizer
    _qwen_model("qwen2_vl", tokenizer).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    settings = {
        "min_pixels": 28 * 28,
        "max_pixels": 28 * 28 * 4,
        "patch_size": 14,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "image_processor_type": "Qwen2VLImageProcessor",
        "processor_class": "Qwen2VLProcessor",
    }
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(settings))  # the legacy layout of Qwen/Qwen2-VL-7B-Instruct
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": QWEN_TEMPLATE}))
    loaded = QwenVLInputs.from_pretrained(str(tmp_path))
    assert loaded.config == QwenVideoConfig(min_pixels=784, max_pixels=3136, image_mean=(0.5,) * 3, image_std=(0.5,) * 3)
    assert loaded.chat_template == QWEN_TEMPLATE and loaded.video_token_id == tokenizer.convert_tokens_to_ids("<|video_pad|>")
    vlm = Qwen2VL(model=str(tmp_path), max_new_tokens=3, device="cpu")
    text, inputs = vlm.prepare(_request(3))
    assert vlm.uses_stand_in == (not torchvision_available())
    if vlm.uses_stand_in:
        assert inputs["video_grid_thw"].tolist() == [[2, 4, 4]]  # 48x64 -> 56x56 within 4 x 784 px
        assert "preprocessing=pil" in vlm.id and "revision=local" in vlm.id
    (answer,) = vlm.answer([_request(3)])
    assert answer.error is None, answer.error
    assert answer.prompt_tokens == inputs["input_ids"].shape[1] and text.startswith("<|im_start|>user\n<|vision_start|><|video_pad|>")


def test_the_id_says_when_the_stand_in_builds_the_inputs(qwen2_vl: Qwen2VL) -> None:
    assert qwen2_vl.uses_stand_in and "preprocessing=pil" in qwen2_vl.id
    assert Qwen2VL().uses_stand_in == (not torchvision_available())  # a hub model: decided before loading, nothing loads
    assert Qwen2VL()._model is None


@pytest.mark.skipif(not torchvision_available(), reason="the transformers video processors need torchvision, absent here")
@pytest.mark.parametrize("name", ["qwen2_vl", "qwen2_5_vl"])
def test_qwen_stand_in_matches_the_transformers_processor(qwen_processors: dict[str, Any], name: str) -> None:
    """Where torchvision is installed: same text, tokens and grid; pixels up to resampling rounding."""
    stand_in = qwen_processors[name]
    size = {"shortest_edge": SIDE * SIDE, "longest_edge": SIDE * SIDE}
    cls = transformers.Qwen2VLProcessor if name == "qwen2_vl" else transformers.Qwen2_5_VLProcessor
    real = cls(
        image_processor=transformers.Qwen2VLImageProcessor(size=size),
        video_processor=transformers.Qwen2VLVideoProcessor(size=size),
        tokenizer=stand_in.tokenizer,
        chat_template=QWEN_TEMPLATE,
    )
    backend = Qwen2VL if name == "qwen2_vl" else Qwen2_5VL
    model = _qwen_model(name, stand_in.tokenizer)
    request = _request(3)
    text, ours = backend(model=model, processor=stand_in).prepare(request)
    real_text, theirs = backend(model=model, processor=real).prepare(request)
    assert text == real_text
    for key in ("input_ids", "attention_mask", "mm_token_type_ids", "video_grid_thw"):
        assert ours[key].tolist() == theirs[key].tolist(), key
    torch.testing.assert_close(ours["pixel_values_videos"], theirs["pixel_values_videos"].float(), rtol=0, atol=0.1)
    if name == "qwen2_5_vl":
        torch.testing.assert_close(ours["second_per_grid_ts"].float(), theirs["second_per_grid_ts"].float())


def test_backends_are_registered_lazily_with_published_defaults() -> None:
    assert {"qwen2_vl", "qwen2_5_vl", "llava_onevision", "internvl"} <= set(answerers.names())
    defaults = {name: answerers.create(name) for name in ("qwen2_vl", "qwen2_5_vl", "llava_onevision", "internvl")}
    assert defaults["qwen2_vl"].model_id == "Qwen/Qwen2-VL-7B-Instruct"
    assert defaults["qwen2_5_vl"].model_id == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert defaults["llava_onevision"].model_id == "llava-hf/llava-onevision-qwen2-7b-ov-hf"
    assert defaults["internvl"].model_id == "OpenGVLab/InternVL3-8B-hf"
    assert all(v._model is None for v in defaults.values())  # nothing loads before first use
    with pytest.raises(ValueError, match="processor"):
        Qwen2VL(model=object())
    with pytest.raises(ValueError, match="max_new_tokens"):
        Qwen2VL(max_new_tokens=0)


def test_prompt_for_open_ended_questions_and_lettered_options() -> None:
    assert build_prompt(Query("How many dogs?"), time_instruction=False) == "How many dogs?\nAnswer the question using a single word or phrase."
    prompt = build_prompt(Query("Pick one.", ("A. cat", "(B) dog", "C: bird", "D. E. coli")), [0.0], duration=None)
    assert prompt.splitlines()[0].startswith("The video lasts for 0.00 seconds, and 1 frames are sampled from it. These frames are located at 0.00s.")
    assert prompt.splitlines()[2:6] == ["A. cat", "B. dog", "C. bird", "D. E. coli"]


# -- LLaVA-OneVision and InternVL: the same request, each model's own structure -------------

OTHER_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>", "<img>", "</img>", "<IMG_CONTEXT>"]
PLAIN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{% for c in message['content'] %}"
    "{% if c['type'] == 'video' %}<video>{% elif c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _plain_tokenizer(**extra: Any) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=OTHER_SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["Frame1: What colour is the car? The video lasts for 10.00 seconds"] * 5, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", **extra)


def _tiny_qwen2_text(tokenizer: Any) -> dict[str, Any]:
    return {
        "model_type": "qwen2",
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": 0,
        "bos_token_id": None,
    }


def test_llava_onevision_gets_the_frames_as_one_pooled_video() -> None:
    from frameselect.answerers.transformers_vlm import LlavaOneVision

    tok = _plain_tokenizer()
    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "image_size": 28,
        "patch_size": 14,
    }
    config = transformers.LlavaOnevisionConfig(
        vision_config=vision,
        text_config=_tiny_qwen2_text(tok),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=[[28, 28]],
    )
    torch.manual_seed(0)
    model = transformers.LlavaOnevisionForConditionalGeneration(config).eval()
    processor = LlavaOnevisionInputs(tok, num_image_tokens=4, config=LlavaVideoConfig(height=28, width=28), chat_template=PLAIN_TEMPLATE)
    vlm = LlavaOneVision(model=model, processor=processor, max_new_tokens=3)
    request = _request(3)
    text, inputs = vlm.prepare(request)
    assert text.startswith(
        "<|im_start|>user\n<video>The video lasts for 10.00 seconds, and 3 frames are sampled from it. These frames are located at 1.50s,4.50s,6.50s."
    )
    assert inputs["pixel_values_videos"].shape == (1, 3, 3, 28, 28)  # one video of the three selected frames
    # every frame as transformers' PIL backend resizes (bicubic), rescales and normalises it
    from transformers.image_utils import PILImageResampling, SizeDict

    reference = transformers.LlavaOnevisionImageProcessorPil()
    for frame, pixels in zip(request.frames(), inputs["pixel_values_videos"][0].numpy()):
        chw = reference.resize(np.moveaxis(frame, -1, 0), SizeDict(height=28, width=28), resample=PILImageResampling.BICUBIC)
        np.testing.assert_array_equal(pixels, reference.normalize(reference.rescale(chw, 1 / 255), list(OPENAI_MEAN), list(OPENAI_STD)))
    # 2x2 patches per frame pooled to 1 token, 3 frames, plus one newline token
    assert int((inputs["input_ids"] == tok.convert_tokens_to_ids("<video>")).sum()) == 3 + 1
    (answer,) = vlm.answer([request])
    assert answer.error is None and answer.prompt_tokens == inputs["input_ids"].shape[1] and 1 <= answer.completion_tokens <= 3
    assert vlm.id.startswith("llava_onevision(") and "max_new_tokens=3" in vlm.id and "preprocessing=pil" in vlm.id


def test_internvl_announces_every_frame_on_its_own_line() -> None:
    from frameselect.answerers.transformers_vlm import InternVL

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    tok = _plain_tokenizer(extra_special_tokens=named)
    config = transformers.InternVLConfig(
        vision_config={
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "image_size": [28, 28],
            "patch_size": [14, 14],
        },
        text_config=_tiny_qwen2_text(tok),
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        downsample_ratio=0.5,
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    model = transformers.InternVLForConditionalGeneration(config).eval()
    image_processor = transformers.GotOcr2ImageProcessorPil(size={"height": 28, "width": 28})
    processor = InternVLInputs(tok, image_processor, image_seq_length=1, chat_template=PLAIN_TEMPLATE)
    vlm = InternVL(model=model, processor=processor, max_new_tokens=3, time_instruction=False)
    request = _request(4)
    text, inputs = vlm.prepare(request)
    frame_lines = "".join(f"Frame{i}: <IMG_CONTEXT>\n" for i in range(1, 5))
    assert text.startswith(f"<|im_start|>user\n{frame_lines}What colour is the car?\nA. red\n")
    assert inputs["pixel_values"].shape == (4, 3, 28, 28)  # one tile per frame, no dynamic tiling
    expected = image_processor(images=request.frames(), crop_to_patches=False, return_tensors="pt")["pixel_values"]
    torch.testing.assert_close(inputs["pixel_values"], expected, rtol=0, atol=0)
    decoded = tok.decode(inputs["input_ids"][0])
    assert decoded.startswith("<|im_start|>user\n" + "".join(f"Frame{i}: <img><IMG_CONTEXT></img>\n" for i in range(1, 5)))
    (answer,) = vlm.answer([request])
    assert answer.error is None and answer.prompt_tokens == inputs["input_ids"].shape[1] and 1 <= answer.completion_tokens <= 3


def test_llava_and_internvl_stand_ins_read_a_checkpoint_folder(tmp_path: Any) -> None:
    import json

    llava, intern = tmp_path / "llava", tmp_path / "internvl"
    _plain_tokenizer().save_pretrained(llava)
    (llava / "processor_config.json").write_text(json.dumps({"num_image_tokens": 729, "processor_class": "LlavaOnevisionProcessor"}))
    video = {"size": {"height": 28, "width": 28}, "image_mean": [0.5] * 3, "image_std": [0.5] * 3, "video_processor_type": "LlavaOnevisionVideoProcessor"}
    (llava / "video_preprocessor_config.json").write_text(json.dumps(video))
    (llava / "chat_template.jinja").write_text(PLAIN_TEMPLATE)
    inputs = LlavaOnevisionInputs.from_pretrained(str(llava))
    assert inputs.config == LlavaVideoConfig(height=28, width=28, image_mean=(0.5,) * 3, image_std=(0.5,) * 3)
    assert inputs.chat_template == PLAIN_TEMPLATE and inputs.num_video_tokens(3) == 3 * 14 * 14 + 1  # 27x27 patches pooled to 14x14
    batch = inputs("<video>x", [np.full((48, 64, 3), 255, dtype=np.uint8)] * 3)
    assert batch["pixel_values_videos"].shape == (1, 3, 3, 28, 28) and bool((batch["pixel_values_videos"] == 1.0).all())

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    _plain_tokenizer(extra_special_tokens=named).save_pretrained(intern)
    (intern / "processor_config.json").write_text(json.dumps({"image_seq_length": 2, "processor_class": "InternVLProcessor"}))
    image = {"size": {"height": 28, "width": 28}, "image_processor_type": "GotOcr2ImageProcessor", "crop_to_patches": False}
    (intern / "preprocessor_config.json").write_text(json.dumps(image))
    loaded = InternVLInputs.from_pretrained(str(intern))
    assert loaded.image_seq_length == 2 and loaded.image_token == "<IMG_CONTEXT>" and loaded.chat_template is None
    batch = loaded("Frame1: <IMG_CONTEXT>\nFrame2: <IMG_CONTEXT>\n?", [np.zeros((48, 64, 3), dtype=np.uint8)] * 2)
    assert batch["pixel_values"].shape == (2, 3, 28, 28)
    text = loaded.tokenizer.decode(batch["input_ids"][0])
    assert text == "Frame1: <img><IMG_CONTEXT><IMG_CONTEXT></img>\nFrame2: <img><IMG_CONTEXT><IMG_CONTEXT></img>\n?"


def test_docstring_examples() -> None:
    """tests/test_doctests.py skips this module (heavy); its examples need no model."""
    import doctest

    from frameselect.answerers import _vlm_prompts, transformers_vlm  # the prompt builders' examples live beside them

    results = [doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE) for m in (transformers_vlm, _vlm_prompts)]
    assert sum(r.attempted for r in results) >= 3 and sum(r.failed for r in results) == 0


def test_qwen2_vl_asks_a_grounding_question_for_its_window_and_reads_it(qwen2_vl: Qwen2VL, monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect._core.windows import WINDOW_MAX_TOKENS, parse_windows, window_instruction

    plain = _request(3)
    grounded = AnswerRequest(dataclasses.replace(plain.sample, metadata={"answer_windows": "fraction"}), plain.pool, plain.selection)
    prompt = qwen2_vl.prompt(grounded)
    assert prompt == qwen2_vl.prompt(plain) + "\n" + window_instruction("fraction", has_options=True)
    asked: list[int] = []
    generate = qwen2_vl._model.generate

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["max_new_tokens"])
        return generate(*args, **kwargs)

    monkeypatch.setattr(qwen2_vl._model, "generate", spy)
    (answer,) = qwen2_vl.answer([grounded])
    (plain_answer,) = qwen2_vl.answer([plain])
    assert asked == [WINDOW_MAX_TOKENS, 6]  # room for the window; a plain question keeps the backend's limit
    assert answer.error is None and answer.windows == parse_windows(answer.text, "fraction", 10.0)  # the pool's 10 s
    assert plain_answer.windows is None
    # the reply is read as NExT-GQA reads fractions: 0.2 and 0.45 of the 10 s pool
    monkeypatch.setattr(qwen2_vl._processor, "decode", lambda *a, **k: "B [0.2, 0.45]")
    assert qwen2_vl.answer([grounded])[0].windows == ((2.0, 4.5),)
    # a fraction without a known duration fails this request only
    unknown = AnswerRequest(grounded.sample, dataclasses.replace(plain.pool, duration=None), plain.selection)
    failed, ok = qwen2_vl.answer([unknown, plain])
    assert failed.error is not None and "duration is unknown" in failed.error and ok.error is None


# -- several videos in one question --------------------------------------------------------


def _request_across(counts: tuple[int, ...], options: tuple[str, ...] = ("Video 1", "Video 2")) -> AnswerRequest:
    from frameselect.types import VideoRef

    pools, selections, refs = {}, {}, []
    for v, n in enumerate(counts):
        rng = np.random.default_rng(100 + v)
        frames = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(10)]
        vid = f"video_{v + 1}"
        pools[vid] = CandidatePool(
            video_id=f"hash{v}",
            timestamps=np.arange(10) * (v + 1.0),
            frame_indices=np.arange(10),
            policy="fps=1.0",
            duration=10.0 * (v + 1),
            source=InMemoryFrames(frames),
        )
        selections[vid] = Selection(indices=tuple(range(1, 1 + 2 * n, 2)))
        refs.append(VideoRef(vid, f"v{v}.mp4"))
    sample = Sample.across("multi", refs, Query("Which video shows the car first?", options), answer="A")
    return AnswerRequest.across(sample, pools, selections)


def test_answer_request_across_keeps_the_one_video_request() -> None:
    request = _request_across((3, 2))
    assert request.is_multi_video and [v.id for v in request.inputs] == ["video_1", "video_2"]
    assert request.pool is request.inputs[0].pool and request.selection.indices == (1, 3, 5)
    assert request.inputs[1].timestamps == [2.0, 6.0]  # indices 1, 3 of a pool at 0, 2, 4, ... s
    one = _request(3)
    assert not one.is_multi_video and one.videos == () and [v.id for v in one.inputs] == ["video_1"]
    assert one.inputs[0].timestamps == one.timestamps
    ident = request.frame_identity()["videos"]
    assert ident == [["video_1", "hash0", "fps=1.0", [1, 3, 5], [1.0, 3.0, 5.0]], ["video_2", "hash1", "fps=1.0", [1, 3], [2.0, 6.0]]]


def test_qwen2_vl_gets_one_labelled_video_entry_per_video(qwen2_vl: Qwen2VL, qwen_processors: dict[str, Any]) -> None:
    request = _request_across((3, 2))
    text, inputs = qwen2_vl.prepare(request)
    video = "<|vision_start|><|video_pad|><|vision_end|>"
    prompt = (
        "Video 1 lasts for 10.00 seconds, and 3 frames are sampled from it. These frames are located at 1.00s,3.00s,5.00s.\n"
        "Video 2 lasts for 20.00 seconds, and 2 frames are sampled from it. These frames are located at 2.00s,6.00s.\n"
        "Please answer the following questions related to these videos.\n"
        "Which video shows the car first?\nA. Video 1\nB. Video 2\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert text == f"<|im_start|>user\nVideo 1:{video}Video 2:{video}{prompt}<|im_end|>\n<|im_start|>assistant\n"
    # three frames pad to two temporal patches, two frames make one; 4x4 patches each
    assert inputs["video_grid_thw"].tolist() == [[2, 4, 4], [1, 4, 4]]
    assert inputs["pixel_values_videos"].shape == (3 * 16, 3 * 2 * 14 * 14)
    # each video's pixels are what the one-video input gives for its frames alone, in order
    stand_in = qwen_processors["qwen2_vl"]
    first = stand_in("<|video_pad|>", request.inputs[0].frames())["pixel_values_videos"]
    second = stand_in("<|video_pad|>", request.inputs[1].frames())["pixel_values_videos"]
    torch.testing.assert_close(inputs["pixel_values_videos"], torch.cat([first, second]), rtol=0, atol=0)
    tokenizer = stand_in.tokenizer
    decoded = tokenizer.decode(inputs["input_ids"][0])
    pads = "<|video_pad|>"
    assert decoded.startswith(f"<|im_start|>user\nVideo 1:<|vision_start|>{pads * 8}<|vision_end|>Video 2:<|vision_start|>{pads * 4}<|vision_end|>")
    (answer,) = qwen2_vl.answer([request])
    assert answer.error is None, answer.error
    with torch.no_grad():
        reference = qwen2_vl._model.generate(**inputs, max_new_tokens=6, do_sample=False)
    assert answer.text == tokenizer.decode(reference[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True).strip()


def test_qwen2_5_vl_takes_each_videos_frame_rate(qwen_processors: dict[str, Any]) -> None:
    processor = qwen_processors["qwen2_5_vl"]
    vlm = Qwen2_5VL(model=_qwen_model("qwen2_5_vl", processor.tokenizer), processor=processor, max_new_tokens=3, time_instruction=False)
    request = _request_across((2, 2))  # video 1: frames 2 s apart (0.5 fps); video 2: 4 s apart (0.25 fps)
    text, inputs = vlm.prepare(request)
    assert "lasts for" not in text and text.count("<|video_pad|>") == 2
    np.testing.assert_allclose(inputs["second_per_grid_ts"].numpy(), [2 / 0.5, 2 / 0.25])
    (answer,) = vlm.answer([request])
    assert answer.error is None, answer.error


def test_a_video_without_frames_fails_that_request_only(qwen2_vl: Qwen2VL) -> None:
    request = _request_across((2, 2))
    empty = AnswerRequest.across(request.sample, {v.id: v.pool for v in request.inputs}, {"video_1": request.selection, "video_2": Selection(indices=())})
    failed, ok = qwen2_vl.answer([empty, request])
    assert failed.error is not None and "no frames selected in Video 2" in failed.error and ok.error is None


def test_internvl_names_each_video_before_its_frames() -> None:
    from frameselect.answerers.transformers_vlm import InternVL

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    tok = _plain_tokenizer(extra_special_tokens=named)
    image_processor = transformers.GotOcr2ImageProcessorPil(size={"height": 28, "width": 28})
    processor = InternVLInputs(tok, image_processor, image_seq_length=1, chat_template=PLAIN_TEMPLATE)
    vlm = InternVL(model=object(), processor=processor, time_instruction=False)
    vlm._ensure_loaded = lambda: None  # type: ignore[method-assign]  # inputs only: no model is run
    vlm._processor = processor
    request = _request_across((2, 1))
    text, inputs = vlm.prepare(request)
    assert text.startswith("<|im_start|>user\nVideo 1:\nFrame1: <IMG_CONTEXT>\nFrame2: <IMG_CONTEXT>\nVideo 2:\nFrame1: <IMG_CONTEXT>\nWhich video")
    expected = image_processor(images=request.inputs[0].frames() + request.inputs[1].frames(), crop_to_patches=False, return_tensors="pt")["pixel_values"]
    torch.testing.assert_close(inputs["pixel_values"], expected, rtol=0, atol=0)


def test_llava_onevision_stand_in_takes_several_videos_of_equal_length() -> None:
    processor = LlavaOnevisionInputs(_plain_tokenizer(), num_image_tokens=4, config=LlavaVideoConfig(height=28, width=28), chat_template=PLAIN_TEMPLATE)
    frames = [np.full((48, 64, 3), v * 60, dtype=np.uint8) for v in range(4)]
    batch = processor.several("<video>a<video>b", [frames[:2], frames[2:]])
    assert batch["pixel_values_videos"].shape == (2, 2, 3, 28, 28)
    assert int((batch["input_ids"] == processor.video_token_id).sum()) == 2 * (2 + 1)  # 2 pooled frames and a newline each
    with pytest.raises(ValueError, match="equal frame counts"):
        processor.several("<video>a<video>b", [frames[:3], frames[3:]])
