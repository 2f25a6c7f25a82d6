"""Save a tiny random-weight LLaVA-OneVision, InternVL, Qwen2-VL or Qwen2.5-VL checkpoint to a folder.

Run with the lmms-eval environment's python: ``python _tiny_hf_vlms.py KIND OUT_DIR`` with KIND
``llava_onevision``, ``internvl``, ``qwen2_vl`` or ``qwen2_5_vl``. Every frame is processed at
56x56 pixels: LLaVA-OneVision 4x4 patches pooled to 2x2 (4 ``<video>`` tokens a frame, one
newline token a video), InternVL 4x4 patches pixel-shuffled to 4 ``<IMG_CONTEXT>`` tokens a
frame, Qwen2-VL and Qwen2.5-VL (min_pixels = max_pixels = 56*56) 4 ``<|video_pad|>`` tokens per
two frames. The processor settings are written as JSON, so the
checkpoint is made without torchvision.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]
SIDE = 56
# a chat template reduced to the turn markers and the media placeholders of each family
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'video' %}VIDEO{% elif c['type'] == 'image' %}IMAGE"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MEDIA = {
    "llava_onevision": ("<video>", "<image>"),
    "internvl": ("<video>", "<image>"),
    "qwen2_vl": ("<|vision_start|><|video_pad|><|vision_end|>", "<|vision_start|><|image_pad|><|vision_end|>"),
}
MEDIA["qwen2_5_vl"] = MEDIA["qwen2_vl"]
SPECIAL = {
    "llava_onevision": ["<image>", "<video>"],
    "internvl": ["<img>", "</img>", "<IMG_CONTEXT>", "<video>", "<image>"],
    "qwen2_vl": ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"],
}
SPECIAL["qwen2_5_vl"] = SPECIAL["qwen2_vl"]


def _tokenizer(kind: str, **named: str) -> Any:
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *SPECIAL[kind]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["what colour is the video? answer with one word: red green blue grey"] * 5, trainer)
    video, image = MEDIA[kind]
    template = TEMPLATE.replace("VIDEO", video).replace("IMAGE", image)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=template, **named
    ), template


def _text(tokenizer: Any) -> dict[str, Any]:
    return {
        "model_type": "qwen2",
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "bos_token_id": None,
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    }


def _settings(**extra: Any) -> dict[str, Any]:
    return {
        "do_resize": True,
        "size": {"height": SIDE, "width": SIDE},
        "resample": 3,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": MEAN,
        "image_std": STD,
        "do_convert_rgb": True,
        **extra,
    }


def llava_onevision(out: Path) -> tuple[Any, str, dict[str, Any]]:
    tokenizer, template = _tokenizer("llava_onevision")
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIAL["llava_onevision"]}
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    vision |= {"image_size": SIDE, "patch_size": 14}
    config = transformers.LlavaOnevisionConfig(
        text_config=_text(tokenizer),
        vision_config=vision,
        image_token_index=ids["<image>"],
        video_token_index=ids["<video>"],
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=[[SIDE, SIDE]],
    )
    model = transformers.LlavaOnevisionForConditionalGeneration(config)
    image = _settings(image_processor_type="LlavaOnevisionImageProcessor", image_grid_pinpoints=[[SIDE, SIDE]], do_pad=True)
    video = _settings(video_processor_type="LlavaOnevisionVideoProcessor")
    processor = {"processor_class": "LlavaOnevisionProcessor", "num_image_tokens": 16, "vision_feature_select_strategy": "full"}
    processor |= {"vision_aspect_ratio": "anyres_max_9"}
    _save(out, model, tokenizer, template, image, video, processor)
    return model, template, processor


def internvl(out: Path) -> tuple[Any, str, dict[str, Any]]:
    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    tokenizer, template = _tokenizer("internvl", extra_special_tokens=named)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    vision |= {"image_size": [SIDE, SIDE], "patch_size": [14, 14]}
    config = transformers.InternVLConfig(
        text_config=_text(tokenizer),
        vision_config=vision,
        image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"),
        downsample_ratio=0.5,
        projector_hidden_act="gelu",
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    model = transformers.InternVLForConditionalGeneration(config)
    image = _settings(image_processor_type="GotOcr2ImageProcessor", crop_to_patches=False, min_patches=1, max_patches=1)
    video = _settings(video_processor_type="InternVLVideoProcessor")
    processor = {"processor_class": "InternVLProcessor", "image_seq_length": 4}
    _save(out, model, tokenizer, template, image, video, processor)
    return model, template, processor


def _qwen(kind: str, out: Path, vision: dict[str, Any], config_cls: Any, model_cls: Any, processor_class: str) -> tuple[Any, str, dict[str, Any]]:
    tokenizer, template = _tokenizer(kind)
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIAL[kind]}
    text = _text(tokenizer) | {"rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]}}
    text.pop("model_type")
    config = config_cls(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = model_cls(config)
    settings = {"min_pixels": SIDE * SIDE, "max_pixels": SIDE * SIDE, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
    settings |= {"image_mean": MEAN, "image_std": STD}
    image = {**settings, "image_processor_type": "Qwen2VLImageProcessor", "processor_class": processor_class}
    video = {**settings, "video_processor_type": "Qwen2VLVideoProcessor", "processor_class": processor_class}
    _save(out, model, tokenizer, template, image, video, None)
    return model, template, {}


def qwen2_vl(out: Path) -> tuple[Any, str, dict[str, Any]]:
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    return _qwen("qwen2_vl", out, vision, transformers.Qwen2VLConfig, transformers.Qwen2VLForConditionalGeneration, "Qwen2VLProcessor")


def qwen2_5_vl(out: Path) -> tuple[Any, str, dict[str, Any]]:
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32, "patch_size": 14}
    vision |= {"spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56, "fullatt_block_indexes": [0]}
    return _qwen("qwen2_5_vl", out, vision, transformers.Qwen2_5_VLConfig, transformers.Qwen2_5_VLForConditionalGeneration, "Qwen2_5_VLProcessor")


def _save(out: Path, model: Any, tokenizer: Any, template: str, image: dict[str, Any], video: dict[str, Any], processor: dict[str, Any] | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "preprocessor_config.json").write_text(json.dumps(image), encoding="utf-8")
    (out / "video_preprocessor_config.json").write_text(json.dumps(video), encoding="utf-8")
    if processor is not None:
        (out / "processor_config.json").write_text(json.dumps(processor), encoding="utf-8")
    (out / "chat_template.jinja").write_text(template, encoding="utf-8")


BUILDERS = {"llava_onevision": llava_onevision, "internvl": internvl, "qwen2_vl": qwen2_vl, "qwen2_5_vl": qwen2_5_vl}


def build(kind: str, out: Path) -> tuple[Any, str, dict[str, Any]]:
    """The checkpoint of ``kind`` saved to ``out``, its weights drawn after ``torch.manual_seed(0)``."""
    torch.manual_seed(0)
    return BUILDERS[kind](out)


if __name__ == "__main__":
    build(sys.argv[1], Path(sys.argv[2]))
