"""Small parts for the learned-selector tests: a cheap text-capable encoder and a tiny random Qwen2-VL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.encoders.base import Encoder, l2_normalize

COLOURS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (40, 70, 220), "yellow": (230, 210, 40), "white": (255, 255, 255), "black": (0, 0, 0)}


class ColourText(Encoder):
    """Frames: mean colour of the centre and of the whole frame; text: the colours it names."""

    registered_name = "test_colour_text"
    has_text = True

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        f = frames.astype(np.float32) / 255.0
        h, w = f.shape[1:3]
        centre = f[:, h // 3 : 2 * h // 3, w // 3 : 2 * w // 3].mean(axis=(1, 2))
        return l2_normalize(np.concatenate([centre, f.mean(axis=(1, 2))], axis=1) + 1e-3)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = []
        for t in texts:
            named = [np.array(c, dtype=np.float32) / 255.0 for name, c in COLOURS.items() if name in t.lower()]
            v = np.mean(named, axis=0) if named else np.ones(3, dtype=np.float32)
            out.append(np.concatenate([v, v]))
        return l2_normalize(np.stack(out) + 1e-3)


SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SIDE = 56


def tiny_qwen2_vl(seed: int = 0) -> Any:
    """A randomly initialised Qwen2-VL built from a config, with the torchvision-free input builder."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs
    from frameselect.answerers.transformers_vlm import Qwen2VL

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(
        ["The video lasts for 10.00 seconds and 3 frames are sampled.", "What colour is the car? A. red B. blue", "user assistant"] * 5, trainer
    )
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    processor = QwenVLInputs(tokenizer, QwenVideoConfig(min_pixels=SIDE * SIDE, max_pixels=SIDE * SIDE), chat_template=QWEN_TEMPLATE)
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
    config = transformers.Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    model = transformers.Qwen2VLForConditionalGeneration(config).eval()
    return Qwen2VL(model=model, processor=processor, max_new_tokens=2)
