"""transformers VLM answering backends on tiny random-weight models built offline.

The answers of a random model are noise; what is checked is the contract:
the frames and their timestamps reach the model in the structure it
expects (video placeholder in the chat template, one temporal patch per two
frames, the frame rate, the time instruction), decoding is greedy and
deterministic, token counts add up, and the backend's id names model,
revision and decoding parameters (it keys the answer cache).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("torchvision", reason="transformers video processors need torchvision")

from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.transformers_vlm import Qwen2_5VL, Qwen2VL, build_prompt, selection_fps  # noqa: E402
from frameselect.cache import RunCounters  # noqa: E402
from frameselect.pipeline import answer_one  # noqa: E402
from frameselect.registry import answerers  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.types import CandidatePool, FrameSource, Query, Sample, Selection  # noqa: E402

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
SIDE = 56  # frames are resized to 56x56 px: 4x4 patches of 14 px, 2x2 merged tokens per temporal patch


@pytest.fixture(scope="module")
def qwen_processors() -> dict[str, Any]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(
        ["The video lasts for 10.00 seconds and 3 frames are sampled.", "What colour is the car? A. red B. blue", "user assistant"] * 5, trainer
    )
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    size = {"shortest_edge": SIDE * SIDE, "longest_edge": SIDE * SIDE}
    out = {}
    for name, cls in (("qwen2_vl", transformers.Qwen2VLProcessor), ("qwen2_5_vl", transformers.Qwen2_5_VLProcessor)):
        out[name] = cls(
            image_processor=transformers.Qwen2VLImageProcessor(size=size),
            video_processor=transformers.Qwen2VLVideoProcessor(size=size),
            tokenizer=tokenizer,
            chat_template=QWEN_TEMPLATE,
        )
    return out


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
        source=FrameSource(frames),
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
    processor = transformers.LlavaOnevisionProcessor(
        image_processor=transformers.LlavaOnevisionImageProcessor(size={"height": 28, "width": 28}, image_grid_pinpoints=[[28, 28]]),
        video_processor=transformers.LlavaOnevisionVideoProcessor(size={"height": 28, "width": 28}),
        tokenizer=tok,
        num_image_tokens=4,
        vision_feature_select_strategy="full",
        chat_template=PLAIN_TEMPLATE,
    )
    vlm = LlavaOneVision(model=model, processor=processor, max_new_tokens=3)
    request = _request(3)
    text, inputs = vlm.prepare(request)
    assert text.startswith(
        "<|im_start|>user\n<video>The video lasts for 10.00 seconds, and 3 frames are sampled from it. These frames are located at 1.50s,4.50s,6.50s."
    )
    assert inputs["pixel_values_videos"].shape == (1, 3, 3, 28, 28)  # one video of the three selected frames
    # 2x2 patches per frame pooled to 1 token, 3 frames, plus one newline token
    assert int((inputs["input_ids"] == tok.convert_tokens_to_ids("<video>")).sum()) == 3 + 1
    (answer,) = vlm.answer([request])
    assert answer.error is None and answer.prompt_tokens == inputs["input_ids"].shape[1] and 1 <= answer.completion_tokens <= 3
    assert vlm.id.startswith("llava_onevision(") and "max_new_tokens=3" in vlm.id


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
    processor = transformers.InternVLProcessor(
        image_processor=transformers.GotOcr2ImageProcessor(size={"height": 28, "width": 28}),
        video_processor=transformers.InternVLVideoProcessor(size={"height": 28, "width": 28}),
        tokenizer=tok,
        image_seq_length=1,
        chat_template=PLAIN_TEMPLATE,
    )
    vlm = InternVL(model=model, processor=processor, max_new_tokens=3, time_instruction=False)
    request = _request(4)
    text, inputs = vlm.prepare(request)
    frame_lines = "".join(f"Frame{i}: <IMG_CONTEXT>\n" for i in range(1, 5))
    assert text.startswith(f"<|im_start|>user\n{frame_lines}What colour is the car?\nA. red\n")
    assert inputs["pixel_values"].shape == (4, 3, 28, 28)  # one tile per frame, no dynamic tiling
    decoded = tok.decode(inputs["input_ids"][0])
    assert decoded.startswith("<|im_start|>user\n" + "".join(f"Frame{i}: <img><IMG_CONTEXT></img>\n" for i in range(1, 5)))
    (answer,) = vlm.answer([request])
    assert answer.error is None and answer.prompt_tokens == inputs["input_ids"].shape[1] and 1 <= answer.completion_tokens <= 3


def test_docstring_examples() -> None:
    """tests/test_doctests.py skips this module (heavy); its examples need no model."""
    import doctest

    from frameselect.answerers import transformers_vlm

    result = doctest.testmod(transformers_vlm, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0
