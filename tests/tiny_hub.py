"""Tiny random-weight CLIP and SigLIP models and a byte-level BPE tokenizer, built offline for the hub tests."""

from __future__ import annotations

from typing import Any


def byte_bpe(texts: list[str], special: list[str], pad: str, vocab_size: int = 320, **named: str) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` in milliseconds, wrapped for transformers."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts * 5, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, **named)


def tower_configs(vocab_size: int, layers: int, max_positions: int, **token_ids: Any) -> dict[str, dict[str, Any]]:
    """Text and vision tower configs of width 32 with ``layers`` layers (32x32 images in 8x8 patches)."""
    shape = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": layers, "num_attention_heads": 2}
    return {
        "text_config": {"vocab_size": vocab_size, **shape, "max_position_embeddings": max_positions, **token_ids},
        "vision_config": {"image_size": 32, "patch_size": 8, **shape},
    }


def tiny_clip(vocab_size: int, layers: int, max_positions: int, seed: int, **token_ids: Any) -> Any:
    import torch
    import transformers

    config = transformers.CLIPConfig(**tower_configs(vocab_size, layers, max_positions, **token_ids), projection_dim=16)
    torch.manual_seed(seed)
    return transformers.CLIPModel(config).eval()


def tiny_siglip(tok: Any, layers: int, max_positions: int, seed: int) -> Any:
    """SigLIP reads padded ids without a mask, as SiglipTokenizer gives them."""
    import torch
    import transformers

    tok.model_input_names = ["input_ids"]
    ids = {"pad_token_id": tok.pad_token_id, "bos_token_id": None, "eos_token_id": tok.eos_token_id}
    config = transformers.SiglipConfig(**tower_configs(len(tok), layers, max_positions, **ids))
    torch.manual_seed(seed)
    return transformers.SiglipModel(config).eval()


def tiny_open_clip(name: str, layers: int, seed: int) -> tuple[Any, Any, Any]:
    """A random-weight open_clip model of width 32 registered as ``name`` (32x32 images): (model, preprocess, tokenizer). Needs open_clip."""
    import open_clip
    import torch
    from open_clip.factory import _MODEL_CONFIGS

    _MODEL_CONFIGS[name] = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": layers, "width": 32, "patch_size": 8, "head_width": 16},
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": layers},
    }
    torch.manual_seed(seed)
    model, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=None)
    return model.eval(), preprocess, open_clip.get_tokenizer(name)
