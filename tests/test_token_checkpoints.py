"""Token cost models configured as transformers configures its processors: its keyword names and a checkpoint's files.

Expected values: transformers 5.25.0 (torch 2.14.1, torchvision 0.29.1, in a separate virtual
environment), all-black ``channels_last`` frames:

- ``SmolVLMVideoProcessor(size={"longest_edge": 2048}, max_image_size={"longest_edge": 512},
  video_sampling={"fps": 1, "max_frames": 64, "video_size": {"longest_edge": 512}})`` gave
  512 x 512 frames for 5 frames of 480 x 640, and ``SmolVLMProcessor._get_num_multimodal_tokens``
  with ``image_seq_len=64`` counted 320 video tokens for them;
- ``LlavaOnevisionProcessor._get_num_multimodal_tokens(video_sizes=[(7, 360, 640)])`` with
  ``num_image_tokens=729`` counted 1373 under ``vision_feature_select_strategy`` "full" and
  "default" alike, and ``LlavaOnevisionVideoProcessor(size={"height": 384, "width": 384})`` gave
  384 x 384 frames;
- ``Qwen2VLVideoProcessor(size={"shortest_edge": 100352, "longest_edge": 602112})`` gave
  ``video_grid_thw`` (16, 40, 72) for 32 frames of 720 x 1280 (11520 tokens), and with
  ``min_pixels=3136, max_pixels=31360`` beside that ``size`` (16, 8, 16) (512 tokens): they win.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frameselect.errors import ConfigError, PartConfigError
from frameselect.tokens import frame_size, token_model, token_model_from_pretrained, visual_tokens

SMOL_256M = {"image_seq_len": 64, "size": {"longest_edge": 2048}, "max_image_size": {"longest_edge": 512}}
SMOL_256M_SAMPLING = {"fps": 1, "max_frames": 64, "video_size": {"longest_edge": 512}}


def test_smolvlm_takes_the_processor_s_own_keyword_names() -> None:
    model = token_model("smolvlm", **SMOL_256M, video_sampling=SMOL_256M_SAMPLING)
    assert visual_tokens(model, [(480, 640)] * 5) == 320
    assert frame_size(model, 480, 640) == (512, 512)


def test_the_smolvlm2_variants_are_named() -> None:
    assert visual_tokens("smolvlm", [(480, 640)] * 5) == 405  # SmolVLM2-2.2B: 81 a frame
    for family in ("smolvlm2_256m", "smolvlm2_500m"):
        assert visual_tokens(family, [(480, 640)] * 5) == 320
        assert frame_size(family, 480, 640) == (512, 512)


def test_llava_onevision_takes_vision_feature_select_strategy() -> None:
    for strategy in ("full", "default"):
        assert visual_tokens("llava_onevision", [(360, 640)] * 7, vision_feature_select_strategy=strategy) == 1373
    assert frame_size("llava_onevision", 360, 640, vision_aspect_ratio="anyres_max_9") == (384, 384)
    with pytest.raises(ConfigError, match="vision_feature_select_strategy must be one of 'default', 'full'"):
        token_model("llava_onevision", vision_feature_select_strategy="cls")


def test_qwen_takes_size_and_min_max_pixels_win_as_in_transformers() -> None:
    size = {"shortest_edge": 100352, "longest_edge": 602112}
    assert visual_tokens("qwen2_vl", [(720, 1280)] * 32, size=size) == 11520
    assert visual_tokens("qwen2_vl", [(720, 1280)] * 32, size=size, min_pixels=3136, max_pixels=31360) == 512


@pytest.mark.parametrize(
    ("family", "params", "message"),
    [
        ("smolvlm", {"video_sampling": {"fps": 0}}, r'video_sampling\["fps"\] must be a positive number'),
        ("smolvlm", {"video_sampling": {"frames": 3}}, "video_sampling must be a mapping of fps, max_frames and video_size"),
        ("smolvlm", {"size": {"longest_edge": 0}}, r"size\['longest_edge'\] must be a positive integer"),
        ("qwen2_5_vl", {"size": {"shortest_edge": 10}}, "size must be a mapping with exactly the keys shortest_edge, longest_edge"),
        ("internvl", {"vision_feature_select_strategy": "full"}, "has no parameter 'vision_feature_select_strategy'"),
    ],
)
def test_bad_processor_keywords_are_refused(family: str, params: dict[str, object], message: str) -> None:
    with pytest.raises((ConfigError, PartConfigError), match=message):
        token_model(family, **params)


def _files(folder: Path, **files: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_a_cost_model_from_a_smolvlm_checkpoint_s_files(tmp_path: Path) -> None:
    folder = _files(
        tmp_path / "smol",
        config={"model_type": "smolvlm"},
        processor_config={"image_seq_len": 64, "processor_class": "SmolVLMProcessor"},
        preprocessor_config={**{k: v for k, v in SMOL_256M.items() if k != "image_seq_len"}, "video_sampling": SMOL_256M_SAMPLING, "image_mean": [0.5] * 3},
    )
    model = token_model_from_pretrained(folder)
    assert model.family == "smolvlm" and visual_tokens(model, [(480, 640)] * 5) == 320


def test_a_cost_model_from_qwen_and_llava_files(tmp_path: Path) -> None:
    qwen = _files(
        tmp_path / "qwen",
        preprocessor_config={
            "min_pixels": 100352,
            "max_pixels": 602112,
            "patch_size": 14,
            "merge_size": 2,
            "temporal_patch_size": 2,
            "processor_class": "Qwen2_5_VLProcessor",
        },
    )
    assert token_model_from_pretrained(qwen).family == "qwen2_5_vl"
    assert visual_tokens(token_model_from_pretrained(qwen), [(720, 1280)] * 32) == 11520
    # a video processor file is read before the image one, as transformers does
    _files(qwen, video_preprocessor_config={"size": {"shortest_edge": 3136, "longest_edge": 3136}})
    assert visual_tokens(token_model_from_pretrained(qwen), [(48, 64)] * 4) == 8
    llava = _files(
        tmp_path / "llava",
        config={"model_type": "llava_onevision"},
        processor_config={"num_image_tokens": 729, "vision_feature_select_strategy": "full"},
        video_preprocessor_config={"size": {"height": 384, "width": 384}, "do_resize": True},
    )
    assert visual_tokens(token_model_from_pretrained(llava), [(360, 640)] * 7) == 1373


def test_files_that_cannot_be_priced_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a local folder"):
        token_model_from_pretrained(tmp_path / "none")
    with pytest.raises(ConfigError, match="none of video_preprocessor_config.json"):
        token_model_from_pretrained(_files(tmp_path / "empty", config={"model_type": "qwen2_vl"}))
    with pytest.raises(ConfigError, match="cannot be told"):
        token_model_from_pretrained(_files(tmp_path / "unknown", preprocessor_config={"size": {"height": 1, "width": 1}}))
    with pytest.raises(ConfigError, match="do_resize is false"):
        token_model_from_pretrained(_files(tmp_path / "noresize", config={"model_type": "internvl"}, preprocessor_config={"do_resize": False}))
    with pytest.raises(ConfigError, match="min_pixels=1000000 is above max_pixels=1000"):
        token_model_from_pretrained(_files(tmp_path / "bad", config={"model_type": "qwen2_vl"}, preprocessor_config={"min_pixels": 10**6, "max_pixels": 1000}))
