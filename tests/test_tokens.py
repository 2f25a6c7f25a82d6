"""Visual-token cost models against the real transformers processors.

Every expected count in ``PROCESSOR_COUNTS`` is the number of placeholder tokens (``<|video_pad|>``,
``<video>``, ``<IMG_CONTEXT>``, ``<image>``) in the ``input_ids`` that transformers 5.25.0's
processors wrote for one video of ``frames`` all-black ``height`` x ``width`` frames, and the
resized size is the processor's output shape (``video_grid_thw`` x patch size for the Qwen
models, the pixel tensor's height and width otherwise). The processors were built from the
checkpoints' configuration values (the defaults of each model here) with frame sampling off:

- qwen2_vl: ``Qwen2VLVideoProcessor`` + ``Qwen2VLProcessor``
- qwen2_5_vl: ``Qwen2VLVideoProcessor`` + ``Qwen2_5_VLProcessor``
- qwen3_vl: ``Qwen3VLVideoProcessor`` + ``Qwen3VLProcessor``
- llava_onevision: ``LlavaOnevisionVideoProcessor`` + ``LlavaOnevisionProcessor``
- internvl: ``InternVLVideoProcessor`` + ``InternVLProcessor``
- smolvlm: ``SmolVLMVideoProcessor`` + ``SmolVLMProcessor``

A row whose count is ``None`` is a video the processor refused (the ``ValueError`` it raised is
noted beside it); the model must refuse it too. ``docs/tokens.md`` describes how the values were
produced.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from frameselect.errors import ConfigError, PartConfigError, UnknownNameError
from frameselect.tokens import (
    PerFrameTokenModel,
    TokenCostError,
    frame_size,
    token_model,
    token_models,
    visual_tokens,
)

# (family, frames, height, width, params, tokens, resized (height, width)); transformers 5.25.0
PROCESSOR_COUNTS: list[tuple[str, int, int, int, dict[str, Any], int | None, tuple[int, int] | None]] = [
    ("qwen2_vl", 1, 720, 1280, {}, 1196, (728, 1288)),
    ("qwen2_vl", 3, 720, 1280, {}, 2392, (728, 1288)),
    ("qwen2_vl", 32, 720, 1280, {}, 19136, (728, 1288)),
    ("qwen2_vl", 64, 360, 640, {}, 9568, (364, 644)),
    ("qwen2_vl", 7, 480, 854, {}, 2040, (476, 840)),
    ("qwen2_vl", 2, 4320, 7680, {}, 16320, (2688, 4760)),
    ("qwen2_vl", 5, 10, 10, {}, 12, (56, 56)),
    ("qwen2_vl", 3, 1, 1, {}, 8, (56, 56)),
    ("qwen2_vl", 3, 2, 1, {}, 12, (84, 56)),
    ("qwen2_vl", 3, 28, 5000, {}, 358, (28, 5012)),
    ("qwen2_vl", 2, 20, 4100, {}, None, None),  # ValueError: absolute aspect ratio must be smaller than 200, got 205.0
    ("qwen2_vl", 11, 999, 333, {}, 2592, (1008, 336)),
    ("qwen2_vl", 6, 42, 42, {}, 12, (56, 56)),
    ("qwen2_5_vl", 1, 720, 1280, {}, 1196, (728, 1288)),
    ("qwen2_5_vl", 3, 720, 1280, {}, 2392, (728, 1288)),
    ("qwen2_5_vl", 32, 720, 1280, {}, 19136, (728, 1288)),
    ("qwen2_5_vl", 64, 360, 640, {}, 9568, (364, 644)),
    ("qwen2_5_vl", 7, 480, 854, {}, 2040, (476, 840)),
    ("qwen2_5_vl", 2, 4320, 7680, {}, 16320, (2688, 4760)),
    ("qwen2_5_vl", 5, 10, 10, {}, 12, (56, 56)),
    ("qwen2_5_vl", 3, 1, 1, {}, 8, (56, 56)),
    ("qwen2_5_vl", 3, 2, 1, {}, 12, (84, 56)),
    ("qwen2_5_vl", 3, 28, 5000, {}, 358, (28, 5012)),
    ("qwen2_5_vl", 2, 20, 4100, {}, None, None),  # ValueError: absolute aspect ratio must be smaller than 200, got 205.0
    ("qwen2_5_vl", 11, 999, 333, {}, 2592, (1008, 336)),
    ("qwen2_5_vl", 6, 42, 42, {}, 12, (56, 56)),
    ("qwen2_5_vl", 32, 720, 1280, {"min_pixels": 100352, "max_pixels": 602112}, 11520, (560, 1008)),
    ("qwen2_5_vl", 64, 360, 640, {"min_pixels": 100352, "max_pixels": 602112}, 9568, (364, 644)),
    ("qwen2_5_vl", 9, 1080, 1920, {"min_pixels": 100352, "max_pixels": 602112}, 3600, (560, 1008)),
    ("qwen2_5_vl", 3, 50, 50, {"min_pixels": 100352, "max_pixels": 602112}, 288, (336, 336)),
    ("qwen2_5_vl", 768, 720, 1280, {"cap_pixels_per_frame": True}, 105984, (336, 644)),
    ("qwen2_5_vl", 33, 720, 1280, {"cap_pixels_per_frame": True, "max_video_tokens": 8000}, 6885, (420, 756)),
    ("qwen2_5_vl", 5, 720, 1280, {"temporal_patch_size": 3}, 2392, (728, 1288)),
    ("qwen2_5_vl", 4, 720, 1280, {"patch_size": 16, "merge_size": 2}, 1760, (704, 1280)),
    ("qwen2_vl", 3, 720, 1280, {"merge_size": 1}, 9282, (714, 1274)),
    ("qwen3_vl", 1, 720, 1280, {}, None, None),  # ValueError: t:1 must be larger than temporal_factor:2
    ("qwen3_vl", 2, 720, 1280, {}, 880, (704, 1280)),
    ("qwen3_vl", 5, 360, 640, {}, 660, (352, 640)),
    ("qwen3_vl", 32, 720, 1280, {}, 11520, (640, 1152)),
    ("qwen3_vl", 64, 1080, 1920, {}, 11648, (448, 832)),
    ("qwen3_vl", 3, 10, 20, {}, 4, (32, 64)),
    ("qwen3_vl", 768, 360, 640, {}, 10752, (128, 224)),
    ("qwen3_vl", 7, 200, 9000, {}, 6744, (192, 8992)),
    ("qwen3_vl", 4, 16, 4000, {}, None, None),  # ValueError: absolute aspect ratio must be smaller than 200, got 250.0
    ("qwen3_vl", 9, 333, 777, {}, 1200, (320, 768)),
    ("qwen3_vl", 3, 8, 8, {}, 2, (32, 32)),
    ("qwen3_vl", 2, 5, 5, {}, 4, (64, 64)),
    ("qwen3_vl", 3, 1, 1, {}, 2, (32, 32)),
    ("qwen3_vl", 4, 3, 700, {}, None, None),  # ValueError: absolute aspect ratio must be smaller than 200, got 233.3125
    ("qwen3_vl", 32, 720, 1280, {"cap_pixels_per_frame": True}, 11520, (640, 1152)),
    ("qwen3_vl", 16, 1080, 1920, {"cap_pixels_per_frame": True, "max_video_tokens": 256}, 2016, (384, 672)),
    ("qwen3_vl", 32, 720, 1280, {"size": {"shortest_edge": 131072, "longest_edge": 786432}}, 288, (96, 192)),
    ("qwen3_vl", 3, 60, 60, {"size": {"shortest_edge": 100000, "longest_edge": 25165824}}, 72, (192, 192)),
    ("llava_onevision", 1, 720, 1280, {}, 197, (384, 384)),
    ("llava_onevision", 7, 360, 640, {}, 1373, (384, 384)),
    ("llava_onevision", 32, 1080, 1920, {}, 6273, (384, 384)),
    ("llava_onevision", 3, 10, 4000, {}, 589, (384, 384)),
    ("llava_onevision", 5, 480, 640, {"num_image_tokens": 576}, 721, (384, 384)),
    ("llava_onevision", 4, 480, 640, {"size": {"height": 336, "width": 336}}, 785, (336, 336)),
    ("internvl", 1, 720, 1280, {}, 256, (448, 448)),
    ("internvl", 7, 360, 640, {}, 1792, (448, 448)),
    ("internvl", 32, 1080, 1920, {}, 8192, (448, 448)),
    ("internvl", 3, 10, 4000, {}, 768, (448, 448)),
    ("internvl", 5, 480, 640, {"image_seq_length": 64}, 320, (448, 448)),
    ("internvl", 2, 480, 640, {"size": {"height": 224, "width": 224}}, 512, (224, 224)),
    ("smolvlm", 1, 720, 1280, {}, 81, (384, 384)),
    ("smolvlm", 7, 360, 640, {}, 567, (384, 384)),
    ("smolvlm", 64, 1080, 1920, {}, 5184, (384, 384)),
    ("smolvlm", 3, 10, 4000, {}, 243, (384, 384)),
    ("smolvlm", 3, 4000, 10, {}, 243, (384, 384)),
    ("smolvlm", 5, 480, 640, {"image_seq_len": 64, "max_image_size": {"longest_edge": 512}}, 320, (512, 512)),
]


def _id(case: tuple[Any, ...]) -> str:
    family, t, h, w, params, _, _ = case
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{family}-{t}x{h}x{w}" + (f"-{extra}" if extra else "")


@pytest.mark.parametrize("case", PROCESSOR_COUNTS, ids=[_id(c) for c in PROCESSOR_COUNTS])
def test_counts_equal_the_transformers_processors(case: tuple[Any, ...]) -> None:
    family, t, h, w, params, tokens, size = case
    frames = [(h, w)] * t
    if tokens is None:
        with pytest.raises(TokenCostError):
            visual_tokens(family, frames, **params)
        return
    assert visual_tokens(family, frames, **params) == tokens
    assert frame_size(family, h, w, num_frames=t, **params) == size


def test_the_issue_examples() -> None:
    # the checkpoints' own limits (max_pixels=12845056) keep 1280x720 near its size: 52x92 patches per pair
    assert visual_tokens("qwen2_5_vl", [(720, 1280)] * 32) == 19136
    # "about 11.5 k": the transformers class / qwen-vl-utils per-frame limit of 768*28*28 pixels
    assert visual_tokens("qwen2_5_vl", [(720, 1280)] * 32, min_pixels=128 * 28 * 28, max_pixels=768 * 28 * 28) == 11520
    # "about 9.6 k": 640x360 stays under either limit
    assert visual_tokens("qwen2_5_vl", [(360, 640)] * 64) == 9568
    # without the 28-pixel rounding and the temporal merge: 64 * (360*640)/(28*28) is about 2x the real count
    assert round(64 * 360 * 640 / (28 * 28)) == 18808


def test_no_frames_cost_nothing() -> None:
    for family in token_models.names():
        assert visual_tokens(family, []) == 0


def test_odd_frame_counts_pay_for_the_repeated_last_frame() -> None:
    one = visual_tokens("qwen2_vl", [(720, 1280)])
    assert visual_tokens("qwen2_vl", [(720, 1280)] * 2) == one
    assert visual_tokens("qwen2_vl", [(720, 1280)] * 3) == 2 * one


def test_per_frame_models_take_frames_of_different_sizes() -> None:
    assert visual_tokens("llava_onevision", [(720, 1280), (10, 4000), (360, 640)]) == 3 * 196 + 1
    assert visual_tokens("internvl", [(720, 1280), (480, 640)]) == 512


def test_a_stacked_video_needs_one_frame_size() -> None:
    with pytest.raises(TokenCostError, match=r"frame 1 is 360x640 but frame 0 is 720x1280"):
        visual_tokens("qwen2_5_vl", [(720, 1280), (360, 640)])


def test_qwen3_refuses_a_single_frame_and_needs_the_frame_count_for_a_size() -> None:
    with pytest.raises(TokenCostError, match="at least temporal_patch_size=2 frames"):
        visual_tokens("qwen3_vl", [(720, 1280)])
    with pytest.raises(TokenCostError, match="pass num_frames="):
        frame_size("qwen3_vl", 720, 1280)
    # the cap is on the whole video: more frames, smaller frames
    assert frame_size("qwen3_vl", 1080, 1920, num_frames=2) == (1088, 1920)
    assert frame_size("qwen3_vl", 1080, 1920, num_frames=64) == (448, 832)
    # Qwen2-VL's size does not depend on the count unless its per-frame cap is on
    assert frame_size("qwen2_vl", 720, 1280) == (728, 1288)
    with pytest.raises(TokenCostError, match="pass num_frames="):
        frame_size("qwen2_vl", 720, 1280, cap_pixels_per_frame=True)


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ([(0, 10)], r"frame 0 has size 0x10"),
        ([(10, 10), (10,)], r"frame 1 must be a \(height, width\) pair"),
        ([(10.5, 10)], r"frame 0 must be a \(height, width\) pair of integers"),
        ([(True, 10)], r"frame 0 must be"),
        ("720x1280", "must be a sequence of"),
    ],
)
def test_bad_frames_name_the_frame(frames: Any, message: str) -> None:
    with pytest.raises(TokenCostError, match=message):
        visual_tokens("internvl", frames)


def test_an_unknown_family_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError) as info:
        visual_tokens("qwen9_vl", [(10, 10)])
    for family in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_onevision", "internvl", "smolvlm"):
        assert family in str(info.value)


def test_an_unknown_parameter_lists_the_family_s_parameters() -> None:
    with pytest.raises(PartConfigError, match=r"no parameter 'max_pixel'.*max_pixels"):
        visual_tokens("qwen2_5_vl", [(10, 10)] * 2, max_pixel=100)
    with pytest.raises(PartConfigError, match=r"no parameter 'min_pixels'.*size"):
        visual_tokens("qwen3_vl", [(10, 10)] * 2, min_pixels=100)


@pytest.mark.parametrize(
    ("family", "params", "message"),
    [
        ("qwen2_vl", {"patch_size": 0}, "patch_size must be a positive integer"),
        ("qwen2_vl", {"max_pixels": 1.5e6}, "max_pixels must be a positive integer"),
        ("qwen2_vl", {"cap_pixels_per_frame": "yes"}, "cap_pixels_per_frame must be true or false"),
        ("qwen3_vl", {"size": {"longest_edge": 100}}, "size must be a mapping with exactly the keys shortest_edge, longest_edge"),
        ("llava_onevision", {"size": {"shortest_edge": 384}}, "size must be a mapping with exactly the keys height, width"),
        ("smolvlm", {"max_image_size": {"longest_edge": -1}}, r"max_image_size\['longest_edge'\] must be a positive integer"),
    ],
)
def test_bad_parameter_values_are_configuration_errors(family: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        token_model(family, **params)


def test_a_configured_model_is_used_as_given() -> None:
    model = token_model("smolvlm", image_seq_len=64, max_image_size={"longest_edge": 512})
    assert visual_tokens(model, [(480, 640)] * 5) == 320
    assert frame_size(model, 480, 640) == (512, 512)
    with pytest.raises(ConfigError, match="already configured"):
        visual_tokens(model, [(480, 640)], image_seq_len=81)


def test_a_new_model_is_one_registered_class() -> None:
    import dataclasses
    from typing import ClassVar

    @dataclasses.dataclass(frozen=True)
    class Fixed(PerFrameTokenModel):
        family: ClassVar[str] = "fixed_test"
        per_frame: int = 10

        def tokens_per_frame(self) -> int:
            return self.per_frame

        def fixed_size(self) -> tuple[int, int]:
            return (224, 224)

    token_models.add("fixed_test", Fixed)
    try:
        assert visual_tokens("fixed_test", [(1, 1)] * 3, per_frame=7) == 21
        assert frame_size("fixed_test", 5, 5) == (224, 224)
        assert "fixed_test" in token_models.names()
    finally:
        del token_models._entries["fixed_test"]


def test_importing_the_module_loads_no_heavy_module() -> None:
    code = "import sys, frameselect.tokens as t; t.visual_tokens('qwen3_vl', [(720, 1280)] * 4); print(sorted({'numpy', 'torch'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


# Frames sent as separate images (openai_http's default): (height, width, params, image_grid_thw, tokens) per image from
# transformers 5.25.0's Qwen2VLImageProcessor (PIL backend, channels_last, the checkpoints' min_pixels=3136 and
# max_pixels=12845056 unless given), tokens = the grid's product // merge_size**2, the count Qwen2VLProcessor and
# Qwen2_5_VLProcessor expand one <|image_pad|> to. Each image is padded to a temporal pair on its own (grid t = 1).
IMAGE_PROCESSOR_GRIDS: list[tuple[int, int, dict[str, int], tuple[int, int, int], int]] = [
    (180, 320, {}, (1, 12, 22), 66),
    (720, 1280, {}, (1, 52, 92), 1196),
    (1, 1, {}, (1, 4, 4), 4),
    (3, 3, {}, (1, 4, 4), 4),
    (28, 28, {}, (1, 4, 4), 4),
    (27, 5000, {}, (1, 2, 358), 179),
    (15, 2900, {}, (1, 2, 208), 104),
    (4000, 3000, {}, (1, 286, 214), 15301),
    (2160, 3840, {}, (1, 154, 274), 10549),
    (360, 640, {"max_pixels": 200704}, (1, 24, 42), 252),
    (100, 50, {"min_pixels": 100352}, (1, 32, 16), 128),
    (50, 100, {"max_pixels": 3136}, (1, 2, 4), 2),
]


@pytest.mark.parametrize("family", ["qwen2_vl_images", "qwen2_5_vl_images"])
@pytest.mark.parametrize(("height", "width", "params", "grid", "tokens"), IMAGE_PROCESSOR_GRIDS)
def test_qwen_frames_sent_as_images_cost_what_the_image_processor_gives(
    family: str, height: int, width: int, params: dict[str, int], grid: tuple[int, int, int], tokens: int
) -> None:
    model = token_model(family, **params)
    assert model.visual_tokens([(height, width)]) == tokens
    assert model.frame_size(height, width) == (grid[1] * 14, grid[2] * 14)
    # n images are n times one: no two share a temporal patch, as two frames of a video do
    assert model.visual_tokens([(height, width)] * 3) == 3 * tokens
    video = token_model(family.removesuffix("_images"), **params)
    assert video.visual_tokens([(height, width)] * 4) == 2 * tokens


def test_images_of_several_sizes_are_each_priced_and_images_take_no_video_cap() -> None:
    model = token_model("qwen2_5_vl_images")
    sizes = [(180, 320), (720, 1280), (180, 320), (28, 28)]
    assert model.visual_tokens(sizes) == model.selection_tokens(sizes) == 66 + 1196 + 66 + 4  # one processor call, four grids
    assert model.placeholder == "<|image_pad|>"
    with pytest.raises(ConfigError, match="images have no per-video pixel cap"):
        token_model("qwen2_vl_images", cap_pixels_per_frame=True)
