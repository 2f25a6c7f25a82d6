"""Cost models that price each frame as a fixed grid of tiles: LLaVA-OneVision, InternVL and SmolVLM (:mod:`frameselect.tokens` registers them)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frameselect._token_base import TokenModel, _choice, _frames, _positive_int, _size_dict
from frameselect.errors import ConfigError

__all__ = ["InternVL", "LlavaOnevision", "PerFrameTokenModel", "SmolVLM", "SmolVLM2Medium", "SmolVLM2Small"]


@dataclasses.dataclass(frozen=True)
class PerFrameTokenModel(TokenModel):
    """A model whose every frame is resized to one fixed size and costs a fixed count.

    Frames may differ in size (each is resized on its own). Subclasses give
    :meth:`tokens_per_frame`, :meth:`fixed_size` and, if any, :attr:`tokens_per_video`.
    """

    #: placeholders added once per video, whatever its length
    tokens_per_video: ClassVar[int] = 0

    def tokens_per_frame(self) -> int:
        raise NotImplementedError

    def fixed_size(self) -> tuple[int, int]:
        raise NotImplementedError

    def frame_size(self, height: int, width: int, num_frames: int | None = None) -> tuple[int, int]:
        _frames(self.family, [(height, width)])
        return self.fixed_size()

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        checked = _frames(self.family, frames)
        return len(checked) * self.tokens_per_frame() + self.tokens_per_video if checked else 0

    def selection_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        """Each frame priced as it is (its size does not change its cost), all in one video."""
        return self.visual_tokens(frames)


def _square(side: int) -> dict[str, int]:
    return {"height": side, "width": side}


@dataclasses.dataclass(frozen=True)
class LlavaOnevision(PerFrameTokenModel):
    """LLaVA-OneVision (transformers ``LlavaOnevisionVideoProcessor`` + ``LlavaOnevisionProcessor``).

    Every frame is resized to ``size`` (384 x 384): 27 x 27 patches (``num_image_tokens=729``)
    pooled 2 x 2 to ``ceil(27/2)**2 = 196`` tokens; one newline token per video:
    ``196 * T + 1`` ``<video>`` placeholders.

    Defaults from ``llava-hf/llava-onevision-qwen2-7b-ov-hf`` (``num_image_tokens`` in its
    ``processor_config.json``, ``size`` in its video processor configuration).
    """

    family: ClassVar[str] = "llava_onevision"
    placeholder: ClassVar[str] = "<video>"
    processor: ClassVar[str] = "LlavaOnevisionVideoProcessor, LlavaOnevisionProcessor"
    checkpoint: ClassVar[str] = "llava-hf/llava-onevision-qwen2-7b-ov-hf"
    tokens_per_video: ClassVar[int] = 1

    num_image_tokens: int = 729
    size: dict[str, int] = dataclasses.field(default_factory=lambda: _square(384))

    processor_kwargs: ClassVar[tuple[str, ...]] = ("vision_feature_select_strategy", "vision_aspect_ratio")

    def __post_init__(self) -> None:
        _positive_int(self.family, "num_image_tokens", self.num_image_tokens)
        object.__setattr__(self, "size", _size_dict(self.family, "size", self.size, ("height", "width")))

    @classmethod
    def from_processor_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``vision_feature_select_strategy`` (``"default"``/``"full"``) and ``vision_aspect_ratio`` (a string) are checked:
        ``LlavaOnevisionProcessor`` applies them to images only (a video costs ``196 * T + 1`` either way)."""
        out = dict(params)
        if "vision_feature_select_strategy" in out:
            _choice(cls.family, "vision_feature_select_strategy", out.pop("vision_feature_select_strategy"), ("default", "full"))
        if "vision_aspect_ratio" in out:
            ratio = out.pop("vision_aspect_ratio")
            if not isinstance(ratio, str):
                raise ConfigError(f"token model {cls.family!r}: vision_aspect_ratio must be a string such as 'anyres_max_9', got {ratio!r}")
        return out

    def tokens_per_frame(self) -> int:
        pooled = math.ceil(int(math.sqrt(self.num_image_tokens)) / 2)
        return pooled * pooled

    def fixed_size(self) -> tuple[int, int]:
        return self.size["height"], self.size["width"]


@dataclasses.dataclass(frozen=True)
class InternVL(PerFrameTokenModel):
    """InternVL3 (transformers ``InternVLVideoProcessor`` + ``InternVLProcessor``).

    The video processor does not tile: every frame is resized to one ``size`` tile (448 x 448)
    and costs ``image_seq_length`` (256) ``<IMG_CONTEXT>`` tokens (each frame is written as
    ``FrameN: <img>...</img>``; the markers and labels are not counted).

    Defaults from ``OpenGVLab/InternVL3-1B-hf`` (``image_seq_length`` in its
    ``processor_config.json``, ``size`` in its video processor configuration); the
    transformers class default size is 384 x 384.
    """

    family: ClassVar[str] = "internvl"
    placeholder: ClassVar[str] = "<IMG_CONTEXT>"
    processor: ClassVar[str] = "InternVLVideoProcessor, InternVLProcessor"
    checkpoint: ClassVar[str] = "OpenGVLab/InternVL3-1B-hf"

    image_seq_length: int = 256
    size: dict[str, int] = dataclasses.field(default_factory=lambda: _square(448))

    def __post_init__(self) -> None:
        _positive_int(self.family, "image_seq_length", self.image_seq_length)
        object.__setattr__(self, "size", _size_dict(self.family, "size", self.size, ("height", "width")))

    def tokens_per_frame(self) -> int:
        return self.image_seq_length

    def fixed_size(self) -> tuple[int, int]:
        return self.size["height"], self.size["width"]


@dataclasses.dataclass(frozen=True)
class SmolVLM(PerFrameTokenModel):
    """SmolVLM2 (transformers ``SmolVLMVideoProcessor`` + ``SmolVLMProcessor``).

    Video frames are not split into crops: each is resized to ``max_image_size`` squared
    (384 x 384) and costs ``image_seq_len`` (81) ``<image>`` tokens; the per-frame
    timestamp text and the ``<fake_token_around_image>``/``<global-img>`` markers are not counted.

    Defaults from ``HuggingFaceTB/SmolVLM2-2.2B-Instruct`` (``image_seq_len`` in its
    ``processor_config.json``, ``max_image_size`` in its preprocessor configuration); the
    256M and 500M checkpoints (``image_seq_len=64``, ``max_image_size={"longest_edge": 512}``)
    are the families ``smolvlm2_256m`` and ``smolvlm2_500m``.
    """

    family: ClassVar[str] = "smolvlm"
    placeholder: ClassVar[str] = "<image>"
    processor: ClassVar[str] = "SmolVLMVideoProcessor, SmolVLMProcessor"
    checkpoint: ClassVar[str] = "HuggingFaceTB/SmolVLM2-2.2B-Instruct"

    image_seq_len: int = 81
    max_image_size: dict[str, int] = dataclasses.field(default_factory=lambda: {"longest_edge": 384})

    processor_kwargs: ClassVar[tuple[str, ...]] = ("size", "video_sampling")

    def __post_init__(self) -> None:
        _positive_int(self.family, "image_seq_len", self.image_seq_len)
        object.__setattr__(self, "max_image_size", _size_dict(self.family, "max_image_size", self.max_image_size, ("longest_edge",)))

    @classmethod
    def from_processor_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``size`` (``{"longest_edge": n}`` or ``{"height": h, "width": w}``) and ``video_sampling``
        (``fps``, ``max_frames``, ``video_size``) are checked: ``SmolVLMVideoProcessor`` resizes each frame to
        ``size`` (``video_sampling["video_size"]`` where given) and then to ``max_image_size`` squared, and
        samples no frames here (frames are priced as sent), so neither changes a count."""
        out = dict(params)
        if "size" in out:
            _smol_size(cls.family, "size", out.pop("size"))
        if "video_sampling" in out:
            sampling = out.pop("video_sampling")
            if not isinstance(sampling, Mapping) or not set(sampling) <= {"fps", "max_frames", "video_size"}:
                raise ConfigError(f"token model {cls.family!r}: video_sampling must be a mapping of fps, max_frames and video_size, got {sampling!r}")
            if "max_frames" in sampling:
                _positive_int(cls.family, 'video_sampling["max_frames"]', sampling["max_frames"])
            if "fps" in sampling:
                fps = sampling["fps"]
                if isinstance(fps, bool) or not isinstance(fps, int | float) or not math.isfinite(fps) or fps <= 0:
                    raise ConfigError(f'token model {cls.family!r}: video_sampling["fps"] must be a positive number, got {fps!r}')
            if "video_size" in sampling:
                _smol_size(cls.family, 'video_sampling["video_size"]', sampling["video_size"])
        return out

    def tokens_per_frame(self) -> int:
        return self.image_seq_len

    def fixed_size(self) -> tuple[int, int]:
        side = self.max_image_size["longest_edge"]
        return side, side


def _smol_size(family: str, name: str, value: object) -> None:
    keys = ("longest_edge",) if isinstance(value, Mapping) and "longest_edge" in value else ("height", "width")
    _size_dict(family, name, value, keys)


@dataclasses.dataclass(frozen=True)
class SmolVLM2Small(SmolVLM):
    """SmolVLM2-256M-Video-Instruct: SmolVLM2's rule with 512 x 512 frames of 64 ``<image>`` tokens.

    Defaults from the 256M and 500M video checkpoints' ``processor_config.json`` (``image_seq_len`` 64)
    and preprocessor configuration (``max_image_size={"longest_edge": 512}``).
    """

    family: ClassVar[str] = "smolvlm2_256m"
    checkpoint: ClassVar[str] = "HuggingFaceTB/SmolVLM2-256M-Video-Instruct"

    image_seq_len: int = 64
    max_image_size: dict[str, int] = dataclasses.field(default_factory=lambda: {"longest_edge": 512})


@dataclasses.dataclass(frozen=True)
class SmolVLM2Medium(SmolVLM2Small):
    """SmolVLM2-500M-Video-Instruct: the 256M variant's rule and defaults (64 tokens a 512 x 512 frame)."""

    family: ClassVar[str] = "smolvlm2_500m"
    checkpoint: ClassVar[str] = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
