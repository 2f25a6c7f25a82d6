"""Save a tiny random-weight Qwen2-VL checkpoint (model, tokenizer, processor settings) to a folder.

Run with the lmms-eval environment's python: ``python _tiny_qwen2_vl.py OUT_DIR``. Frames are
processed at 56x56 pixels (min_pixels = max_pixels = 56*56): 4 merged tokens per two frames.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Qwen2-VL's chat template reduced to the turn markers and the vision placeholders
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]
SIDE = 56


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["what colour is the video? answer with one word: red green blue grey"] * 5, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=TEMPLATE)
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIAL}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
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
    torch.manual_seed(0)
    transformers.Qwen2VLForConditionalGeneration(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    settings = {
        "min_pixels": SIDE * SIDE,
        "max_pixels": SIDE * SIDE,
        "patch_size": 14,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": MEAN,
        "image_std": STD,
    }
    image = {**settings, "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor"}
    video = {**settings, "video_processor_type": "Qwen2VLVideoProcessor", "processor_class": "Qwen2VLProcessor"}
    (out / "preprocessor_config.json").write_text(json.dumps(image), encoding="utf-8")
    (out / "video_preprocessor_config.json").write_text(json.dumps(video), encoding="utf-8")
    (out / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
