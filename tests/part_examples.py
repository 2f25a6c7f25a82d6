"""Examples of the registered parts that need a model or a server, for the conformance suites.

Hub encoders and transformers VLMs get tiny random-weight models built from
configs (no download); a test that builds one skips when torch, transformers
or open_clip is absent. ``openai_http`` talks to a local chat server. Parts
not listed here are created with their defaults.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from frameselect.registry import answerers, encoders
from frameselect.testing import register_example

sys.path.append(str(Path(__file__).parent))  # for chat_server.py and tiny_hub.py (tests have no __init__.py)
from tiny_hub import byte_bpe, tiny_clip, tiny_open_clip, tiny_siglip, tower_configs  # noqa: E402

TEXTS = ["a red car on a road", "two dogs", "what is the man holding in his left hand?", "a red cup on a table"]


def _transformers() -> Any:
    pytest.importorskip("torch")
    return pytest.importorskip("transformers")


def _byte_bpe(special: list[str], pad: str, **named: str) -> Any:
    _transformers()
    return byte_bpe(TEXTS, special, pad, **named)


@register_example("encoders", "open_clip")
def _open_clip(_: Path) -> Any:
    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    model, preprocess, tokenizer = tiny_open_clip("frameselect-conformance-tiny", layers=1, seed=0)
    return encoders.create("open_clip", model=model, preprocess=preprocess, tokenizer=tokenizer, model_id="frameselect-conformance-tiny")


@register_example("encoders", "clip")
def _clip(_: Path) -> Any:
    tok = _byte_bpe(["<pad>", "<s>", "</s>"], pad="<pad>", bos_token="<s>", eos_token="</s>")
    model = tiny_clip(len(tok), layers=1, max_positions=24, seed=0, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return encoders.create("clip", model=model, tokenizer=tok)


@register_example("encoders", "siglip")
def _siglip(_: Path) -> Any:
    tok = _byte_bpe(["<pad>", "</s>"], pad="<pad>", eos_token="</s>")
    return encoders.create("siglip", model=tiny_siglip(tok, layers=1, max_positions=16, seed=0), tokenizer=tok)


@register_example("encoders", "blip_itm")
def _blip_itm(_: Path) -> Any:
    transformers = _transformers()
    import tokenizers
    import torch

    tok = _byte_bpe(["[PAD]", "[CLS]", "[SEP]"], pad="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    tok._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    text = {"vocab_size": len(tok), "hidden_size": 32, "encoder_hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = transformers.BlipConfig(
        text_config={**text, "max_position_embeddings": 40, "pad_token_id": 0, "bos_token_id": 1, "sep_token_id": 2},
        vision_config={**tower_configs(len(tok), 1, 40)["vision_config"], "initializer_range": 0.02},
        image_text_hidden_size=16,
    )
    torch.manual_seed(0)
    return encoders.create("blip_itm", model=transformers.BlipForImageTextRetrieval(config).eval(), tokenizer=tok)


# -- VLM answerers: the tiny models of tests/hub/test_vlm.py ---------------------------------------


def _vlm_helpers() -> Any:
    """tests/hub/test_vlm.py as a module (it skips itself where torch or transformers 5 is missing)."""
    _transformers()
    name = "frameselect_conformance_vlm_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "hub" / "test_vlm.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except pytest.skip.Exception:
            raise
        sys.modules[name] = module
    return sys.modules[name]


def _qwen(name: str) -> Any:
    from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs

    h = _vlm_helpers()
    processor = QwenVLInputs(h._qwen_tokenizer(), QwenVideoConfig(min_pixels=h.SIDE * h.SIDE, max_pixels=h.SIDE * h.SIDE), chat_template=h.QWEN_TEMPLATE)
    return answerers.create(name, model=h._qwen_model(name, processor.tokenizer), processor=processor, max_new_tokens=3)


@register_example("answerers", "qwen2_vl")
def _qwen2_vl(_: Path) -> Any:
    return _qwen("qwen2_vl")


@register_example("answerers", "qwen2_5_vl")
def _qwen2_5_vl(_: Path) -> Any:
    return _qwen("qwen2_5_vl")


@register_example("answerers", "llava_onevision")
def _llava_onevision(_: Path) -> Any:
    from frameselect.answerers._vlm_inputs import LlavaOnevisionInputs, LlavaVideoConfig

    h = _vlm_helpers()
    transformers, tok = h.transformers, h._plain_tokenizer()
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    config = transformers.LlavaOnevisionConfig(
        vision_config={**vision, "image_size": 28, "patch_size": 14},
        text_config=h._tiny_qwen2_text(tok),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=[[28, 28]],
    )
    h.torch.manual_seed(0)
    model = transformers.LlavaOnevisionForConditionalGeneration(config).eval()
    processor = LlavaOnevisionInputs(tok, num_image_tokens=4, config=LlavaVideoConfig(height=28, width=28), chat_template=h.PLAIN_TEMPLATE)
    return answerers.create("llava_onevision", model=model, processor=processor, max_new_tokens=3)


@register_example("answerers", "internvl")
def _internvl(_: Path) -> Any:
    from frameselect.answerers._vlm_inputs import InternVLInputs

    h = _vlm_helpers()
    transformers = h.transformers
    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}
    tok = h._plain_tokenizer(extra_special_tokens=named)
    vision = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64, "image_size": [28, 28], "patch_size": [14, 14]}
    config = transformers.InternVLConfig(
        vision_config=vision,
        text_config=h._tiny_qwen2_text(tok),
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        downsample_ratio=0.5,
        vision_feature_layer=-1,
    )
    h.torch.manual_seed(0)
    model = transformers.InternVLForConditionalGeneration(config).eval()
    processor = InternVLInputs(tok, transformers.GotOcr2ImageProcessorPil(size={"height": 28, "width": 28}), image_seq_length=1, chat_template=h.PLAIN_TEMPLATE)
    return answerers.create("internvl", model=model, processor=processor, max_new_tokens=3)


# -- an OpenAI-compatible server on 127.0.0.1 ------------------------------------------------------

_SERVERS: list[Any] = []


@register_example("answerers", "openai_http")
def _openai_http(_: Path) -> Any:
    from chat_server import ChatServer

    if not _SERVERS:  # one server for the session (a daemon thread)
        _SERVERS.append(ChatServer(lambda n, body, prompt: {"text": "B" if "scene" in prompt else "The answer is (C)."}).__enter__())
    return answerers.create("openai_http", base_url=_SERVERS[0].base_url, model="conformance", max_retries=0, timeout_s=10.0)
