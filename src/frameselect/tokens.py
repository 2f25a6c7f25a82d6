"""Visual-token cost models: how many visual tokens a video of given frames costs a VLM.

An answering VLM does not pay per frame but per visual placeholder token in its
prompt (``<|video_pad|>`` for the Qwen models, ``<video>`` for LLaVA-OneVision,
``<IMG_CONTEXT>`` for InternVL, ``<image>`` for SmolVLM), and how many a frame
becomes depends on the model and on the frame's size. Each model's rule is a
small registered :class:`TokenModel` whose parameters are the processor's own
parameter names, with the released checkpoints' processor-config values as
defaults::

    >>> from frameselect.tokens import visual_tokens, frame_size
    >>> visual_tokens("qwen2_5_vl", [(720, 1280)] * 32)
    19136
    >>> visual_tokens("qwen2_5_vl", [(720, 1280)] * 32, max_pixels=768 * 28 * 28)
    11520
    >>> frame_size("qwen2_5_vl", 720, 1280)
    (728, 1288)
    >>> visual_tokens("llava_onevision", [(360, 640)] * 8)
    1569

Counted are the placeholder tokens only: not the start/end markers around a
video or a frame, nor timestamp text. Frames are costed as sent, in order, with
no resampling (the processors' own frame sampling is off). The counts equal
those of the transformers 5.25.0 processors (``tests/test_tokens.py`` holds
their outputs; ``docs/tokens.md`` says how they were produced and where each
default comes from).

A new model is one class registered in :data:`token_models`: a frozen
dataclass deriving from :class:`TokenModel` whose fields are its parameters,
implementing :meth:`TokenModel.visual_tokens` and :meth:`TokenModel.frame_size`
(or :class:`PerFrameTokenModel` for models that pay a fixed count per frame).
Packages can add models through the entry-point group ``frameselect.token_models``.

Nothing here imports numpy or torch.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frameselect.errors import ConfigError, FrameselectError, PartConfigError
from frameselect.registry import Registry, did_you_mean

__all__ = [
    "TokenCostError",
    "TokenModel",
    "PerFrameTokenModel",
    "Qwen2VL",
    "Qwen25VL",
    "Qwen3VL",
    "Qwen2VLImages",
    "Qwen25VLImages",
    "IMAGE_FAMILIES",
    "LlavaOnevision",
    "InternVL",
    "SmolVLM",
    "SmolVLM2Small",
    "SmolVLM2Medium",
    "token_models",
    "token_model",
    "token_model_from_pretrained",
    "MODEL_TYPES",
    "visual_tokens",
    "frame_size",
]


class TokenCostError(FrameselectError, ValueError):
    """Frames that a model's processor cannot take (a bad size, mixed sizes in one video, too few
    frames, an aspect ratio the processor refuses); the message names the frame and the model."""


#: every visual-token cost model by family name; ``token_models.names()`` lists them
token_models: Registry[TokenModel] = Registry("token_models")


def _positive_int(family: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"token model {family!r}: {name} must be a positive integer, got {value!r}")
    return value


def _size_dict(family: str, name: str, value: object, keys: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(value, Mapping) or set(value) != set(keys):
        raise ConfigError(f"token model {family!r}: {name} must be a mapping with exactly the keys {', '.join(keys)}, got {value!r}")
    return {key: _positive_int(family, f"{name}[{key!r}]", value[key]) for key in keys}


def _choice(family: str, name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"token model {family!r}: {name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _not_above(family: str, low_name: str, low: int, high_name: str, high: int) -> None:
    if low > high:
        raise ConfigError(
            f"token model {family!r}: {low_name}={low} is above {high_name}={high}; no frame size satisfies both (the processor would give "
            f"sizes outside the range it was given): make {low_name} at most {high_name}"
        )


def _frames(family: str, frames: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``frames`` as a list of ``(height, width)`` pairs of positive integers, or a :class:`TokenCostError` naming the bad one."""
    if isinstance(frames, (str, bytes)) or not isinstance(frames, Sequence):
        raise TokenCostError(f"{family}: frames must be a sequence of (height, width) pairs, got {type(frames).__name__}")
    out = []
    for i, frame in enumerate(frames):
        try:
            height, width = frame
            if isinstance(height, bool) or isinstance(width, bool):
                raise TypeError
            h, w = operator.index(height), operator.index(width)
        except (TypeError, ValueError):
            raise TokenCostError(f"{family}: frame {i} must be a (height, width) pair of integers, got {frame!r}") from None
        if h < 1 or w < 1:
            raise TokenCostError(f"{family}: frame {i} has size {h}x{w}; height and width must be at least 1 pixel")
        out.append((h, w))
    return out


def _one_size(family: str, frames: list[tuple[int, int]]) -> tuple[int, int]:
    """The size every frame of a video shares (the processor stacks a video into one array)."""
    first = frames[0]
    for i, frame in enumerate(frames):
        if frame != first:
            raise TokenCostError(
                f"{family}: frame {i} is {frame[0]}x{frame[1]} but frame 0 is {first[0]}x{first[1]}; "
                "the processor takes a video as one array, so its frames must share one size (resize them first)"
            )
    return first


def _check_aspect(family: str, height: int | float, width: int | float) -> None:
    ratio = max(height, width) / min(height, width)
    if ratio > 200:
        raise TokenCostError(f"{family}: a {height}x{width} frame has aspect ratio {ratio}; the processor refuses ratios above 200 (crop or pad the frames)")


@dataclasses.dataclass(frozen=True)
class TokenModel:
    """What a video of given frames costs one VLM family, in its visual placeholder tokens.

    Subclasses are frozen dataclasses whose fields are the processor's parameters (by the
    processor's names), with the released checkpoint's values as defaults.
    """

    #: the registered name (set on each class)
    family: ClassVar[str] = ""
    #: the placeholder token counted
    placeholder: ClassVar[str] = ""
    #: the transformers classes whose counts the model reproduces
    processor: ClassVar[str] = ""
    #: the checkpoint whose processor configuration gives the defaults
    checkpoint: ClassVar[str] = ""
    #: whether the size a frame is resized to depends on the number of frames in the video
    size_depends_on_frame_count: ClassVar[bool] = False

    #: transformers keyword names the processor takes that are not fields here (read by :meth:`from_processor_kwargs`)
    processor_kwargs: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_processor_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` in transformers' keyword names as this model's fields (checked; names that change no count dropped)."""
        return dict(params)

    @classmethod
    def accepted_names(cls) -> list[str]:
        """The names :func:`token_model` takes for this family: its fields and the processor's own keyword names."""
        return [f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")] + list(cls.processor_kwargs)

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        """The placeholder tokens a video of ``frames`` (``(height, width)`` each, in order) costs; 0 for no frames."""
        raise NotImplementedError

    def frame_size(self, height: int, width: int, num_frames: int | None = None) -> tuple[int, int]:
        """The ``(height, width)`` a ``height`` x ``width`` frame is resized to in a video of ``num_frames`` frames.

        ``num_frames`` is needed only where :attr:`size_depends_on_frame_count` is true.
        """
        raise NotImplementedError

    def selection_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        """The placeholder tokens a selection of ``frames`` costs when its frames may differ in size (mixed resolution).

        A model whose processor stacks a video into one array (the Qwen
        families) gets one video per distinct size, in the order each size
        first appears, so each group is priced as its own video (its frame
        count padded to the temporal patch on its own); frames of one size
        are one video, priced as :meth:`visual_tokens`. Per-frame models
        (:class:`PerFrameTokenModel`) price each frame as it is.

        >>> qwen = token_model("qwen2_5_vl")
        >>> qwen.selection_tokens([(728, 1288)] * 2 + [(168, 336)] * 3)  # one pair of 26 x 46 patches, two of 6 x 12
        1340
        """
        checked = _frames(self.family, frames)
        groups: dict[tuple[int, int], int] = {}
        for size in checked:
            groups[size] = groups.get(size, 0) + 1
        return sum(self.visual_tokens([size] * n) for size, n in groups.items())

    def _frame_count(self, num_frames: int | None) -> int:
        if num_frames is None:
            raise TokenCostError(f"{self.family}: the size a frame is resized to depends on how many frames the video has here; pass num_frames=")
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise TokenCostError(f"{self.family}: num_frames must be a positive integer, got {num_frames!r}")
        return num_frames


@dataclasses.dataclass(frozen=True)
class Qwen2VL(TokenModel):
    """Qwen2-VL (transformers ``Qwen2VLVideoProcessor`` + ``Qwen2VLProcessor``).

    Each frame is resized by ``smart_resize`` to multiples of ``patch_size * merge_size``
    (28) with its pixels between ``min_pixels`` and ``max_pixels``; the frame count is
    padded (last frame repeated) to a multiple of ``temporal_patch_size`` (2), every
    2 frames are merged in time, and every ``merge_size`` x ``merge_size`` patches are one
    token: ``ceil(T/2) * (H'/14) * (W'/14) // 4`` placeholders.

    Defaults are the checkpoint's ``preprocessor_config.json`` (``min_pixels=3136``,
    ``max_pixels=12845056``), which the video processor loads for want of a
    ``video_preprocessor_config.json``; the transformers class defaults are
    ``128*28*28`` and ``768*28*28`` (what qwen-vl-utils uses for video frames).
    ``cap_pixels_per_frame=True`` also bounds each frame by an even share of
    ``max_video_tokens`` tokens' worth of pixels (the processor's opt-in cap, off by default
    in transformers 5.25).
    """

    family: ClassVar[str] = "qwen2_vl"
    placeholder: ClassVar[str] = "<|video_pad|>"
    processor: ClassVar[str] = "Qwen2VLVideoProcessor, Qwen2VLProcessor"
    checkpoint: ClassVar[str] = "Qwen/Qwen2-VL-7B-Instruct"

    min_pixels: int = 3136
    max_pixels: int = 12845056
    patch_size: int = 14
    merge_size: int = 2
    temporal_patch_size: int = 2
    cap_pixels_per_frame: bool = False
    max_video_tokens: int = 128000

    processor_kwargs: ClassVar[tuple[str, ...]] = ("size",)

    def __post_init__(self) -> None:
        for name in ("min_pixels", "max_pixels", "patch_size", "merge_size", "temporal_patch_size", "max_video_tokens"):
            _positive_int(self.family, name, getattr(self, name))
        _not_above(self.family, "min_pixels", self.min_pixels, "max_pixels", self.max_pixels)
        if not isinstance(self.cap_pixels_per_frame, bool):
            raise ConfigError(f"token model {self.family!r}: cap_pixels_per_frame must be true or false, got {self.cap_pixels_per_frame!r}")

    @classmethod
    def from_processor_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """transformers' ``size={"shortest_edge": ..., "longest_edge": ...}`` is ``min_pixels``/``max_pixels``;
        ``min_pixels``/``max_pixels`` given beside it win, as in ``Qwen2VLVideoProcessor.__init__``."""
        out = dict(params)
        if "size" in out:
            size = _size_dict(cls.family, "size", out.pop("size"), ("shortest_edge", "longest_edge"))
            out.setdefault("min_pixels", size["shortest_edge"])
            out.setdefault("max_pixels", size["longest_edge"])
        return out

    @property
    def size_depends_on_frame_count(self) -> bool:  # type: ignore[override]
        return self.cap_pixels_per_frame

    def _max_pixels(self, num_frames: int | None) -> int:
        if not self.cap_pixels_per_frame:
            return self.max_pixels
        n = self._frame_count(num_frames)
        factor = self.patch_size * self.merge_size
        total_pixels = int(self.max_video_tokens * factor * factor * 0.9)
        return max(min(self.max_pixels, total_pixels * self.temporal_patch_size // n), int(self.min_pixels * 1.05))

    def frame_size(self, height: int, width: int, num_frames: int | None = None) -> tuple[int, int]:
        ((height, width),) = _frames(self.family, [(height, width)])
        max_pixels = self._max_pixels(num_frames)
        factor = self.patch_size * self.merge_size
        _check_aspect(self.family, height, width)
        h_bar = round(height / factor) * factor
        w_bar = round(width / factor) * factor
        if h_bar * w_bar > max_pixels:
            beta = math.sqrt((height * width) / max_pixels)
            h_bar = max(factor, math.floor(height / beta / factor) * factor)
            w_bar = max(factor, math.floor(width / beta / factor) * factor)
        elif h_bar * w_bar < self.min_pixels:
            beta = math.sqrt(self.min_pixels / (height * width))
            h_bar = math.ceil(height * beta / factor) * factor
            w_bar = math.ceil(width * beta / factor) * factor
        return h_bar, w_bar

    def _grid(self, frames: Sequence[tuple[int, int]]) -> tuple[int, int, int] | None:
        checked = _frames(self.family, frames)
        if not checked:
            return None
        height, width = _one_size(self.family, checked)
        h, w = self.frame_size(height, width, len(checked))
        grid_t = -(-len(checked) // self.temporal_patch_size)  # the last frame repeated up to a multiple
        return grid_t, h // self.patch_size, w // self.patch_size

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        grid = self._grid(frames)
        if grid is None:
            return 0
        grid_t, grid_h, grid_w = grid
        return grid_t * grid_h * grid_w // self.merge_size**2


@dataclasses.dataclass(frozen=True)
class Qwen25VL(Qwen2VL):
    """Qwen2.5-VL: the Qwen2-VL video processor and rule (``Qwen2_5_VLProcessor``).

    Defaults from ``Qwen/Qwen2.5-VL-7B-Instruct``'s ``preprocessor_config.json``
    (``min_pixels=3136``, ``max_pixels=12845056``, patch 14, merge 2, temporal patch 2),
    loaded by the video processor for want of a ``video_preprocessor_config.json``.
    """

    family: ClassVar[str] = "qwen2_5_vl"
    processor: ClassVar[str] = "Qwen2VLVideoProcessor, Qwen2_5_VLProcessor"
    checkpoint: ClassVar[str] = "Qwen/Qwen2.5-VL-7B-Instruct"


@dataclasses.dataclass(frozen=True)
class Qwen2VLImages(Qwen2VL):
    """Qwen2-VL priced for frames sent as separate images (``Qwen2VLImageProcessor`` + ``Qwen2VLProcessor``), as an OpenAI-style server given ``image_url`` parts sees them.

    The image processor resizes each image by the same ``smart_resize`` rule and pads it
    to ``temporal_patch_size`` frames on its own, so every frame costs what a one-frame
    video costs, ``(H'/14) * (W'/14) // 4`` ``<|image_pad|>`` tokens: no two frames share a
    temporal patch, which is what sending a video saves (``n`` frames of one size cost
    about twice their video price). Frames may differ in size. The defaults are the
    checkpoint's ``preprocessor_config.json``, the image processor's own configuration.
    """

    family: ClassVar[str] = "qwen2_vl_images"
    placeholder: ClassVar[str] = "<|image_pad|>"
    processor: ClassVar[str] = "Qwen2VLImageProcessor, Qwen2VLProcessor"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cap_pixels_per_frame:
            raise ConfigError(f"token model {self.family!r}: images have no per-video pixel cap; cap_pixels_per_frame applies to videos only")

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        checked = _frames(self.family, frames)
        return sum(Qwen2VL.visual_tokens(self, [frame]) for frame in checked)

    def selection_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        return self.visual_tokens(frames)


@dataclasses.dataclass(frozen=True)
class Qwen25VLImages(Qwen2VLImages):
    """Qwen2.5-VL priced for frames sent as images (``Qwen2VLImageProcessor`` + ``Qwen2_5_VLProcessor``): Qwen2-VL's image rule and defaults."""

    family: ClassVar[str] = "qwen2_5_vl_images"
    processor: ClassVar[str] = "Qwen2VLImageProcessor, Qwen2_5_VLProcessor"
    checkpoint: ClassVar[str] = "Qwen/Qwen2.5-VL-7B-Instruct"


#: a video family's cost model for the same frames sent as separate images, where one is known
IMAGE_FAMILIES: dict[str, str] = {"qwen2_vl": "qwen2_vl_images", "qwen2_5_vl": "qwen2_5_vl_images"}


def _default_qwen3_size() -> dict[str, int]:
    return {"shortest_edge": 4096, "longest_edge": 25165824}


@dataclasses.dataclass(frozen=True)
class Qwen3VL(TokenModel):
    """Qwen3-VL (transformers ``Qwen3VLVideoProcessor`` + ``Qwen3VLProcessor``).

    32-pixel units (``patch_size=16``, ``merge_size=2``) and a pixel budget for the whole
    video: ``size["longest_edge"]`` bounds frames x height x width (``size["shortest_edge"]``
    is the floor), so the size a frame is resized to depends on the frame count. Frames
    smaller than 32 pixels on a side are first scaled up; the count is padded to a multiple of
    ``temporal_patch_size`` (2); each temporal pair costs ``(H'/16) * (W'/16) // 4``
    placeholders (the processor writes one ``<|vision_start|>...<|vision_end|>`` block with a
    timestamp per pair; only the ``<|video_pad|>`` tokens are counted). The processor refuses a
    video of fewer frames than ``temporal_patch_size``, and so does this model.

    Defaults from ``Qwen/Qwen3-VL-2B-Instruct``'s ``video_preprocessor_config.json``
    (``size={"shortest_edge": 4096, "longest_edge": 25165824}``); the transformers class
    default is ``{"shortest_edge": 128*32*32, "longest_edge": 768*32*32}``.
    ``cap_pixels_per_frame=True`` adds the processor's opt-in per-frame cap of
    ``max_video_tokens`` tokens' worth of pixels.
    """

    family: ClassVar[str] = "qwen3_vl"
    placeholder: ClassVar[str] = "<|video_pad|>"
    processor: ClassVar[str] = "Qwen3VLVideoProcessor, Qwen3VLProcessor"
    checkpoint: ClassVar[str] = "Qwen/Qwen3-VL-2B-Instruct"
    size_depends_on_frame_count: ClassVar[bool] = True

    size: dict[str, int] = dataclasses.field(default_factory=_default_qwen3_size)
    patch_size: int = 16
    merge_size: int = 2
    temporal_patch_size: int = 2
    cap_pixels_per_frame: bool = False
    max_video_tokens: int = 768

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", _size_dict(self.family, "size", self.size, ("shortest_edge", "longest_edge")))
        _not_above(self.family, 'size["shortest_edge"]', self.size["shortest_edge"], 'size["longest_edge"]', self.size["longest_edge"])
        for name in ("patch_size", "merge_size", "temporal_patch_size", "max_video_tokens"):
            _positive_int(self.family, name, getattr(self, name))
        if not isinstance(self.cap_pixels_per_frame, bool):
            raise ConfigError(f"token model {self.family!r}: cap_pixels_per_frame must be true or false, got {self.cap_pixels_per_frame!r}")

    def frame_size(self, height: int, width: int, num_frames: int | None = None) -> tuple[int, int]:
        ((height, width),) = _frames(self.family, [(height, width)])
        n = self._frame_count(num_frames)
        if n < self.temporal_patch_size:
            raise TokenCostError(
                f"{self.family}: a video of {n} frame(s) is refused by the processor (at least temporal_patch_size={self.temporal_patch_size} frames); send more frames"
            )
        factor = self.patch_size * self.merge_size
        min_pixels, max_pixels = self.size["shortest_edge"], self.size["longest_edge"]
        if self.cap_pixels_per_frame:
            frame_cap = self.max_video_tokens * factor * factor
            max_pixels = max(min(frame_cap, max_pixels // n), int(min_pixels * 1.05)) * n
        h: int | float = height
        w: int | float = width
        if height < factor or width < factor:
            scale = max(factor / height, factor / width)
            h, w = int(height * scale), int(width * scale)
        _check_aspect(self.family, h, w)
        h_bar = round(h / factor) * factor
        w_bar = round(w / factor) * factor
        t_bar = round(n / self.temporal_patch_size) * self.temporal_patch_size
        if t_bar * h_bar * w_bar > max_pixels:
            beta = math.sqrt((n * h * w) / max_pixels)
            h_bar = max(factor, math.floor(h / beta / factor) * factor)
            w_bar = max(factor, math.floor(w / beta / factor) * factor)
        elif t_bar * h_bar * w_bar < min_pixels:
            beta = math.sqrt(min_pixels / (n * h * w))
            h_bar = math.ceil(h * beta / factor) * factor
            w_bar = math.ceil(w * beta / factor) * factor
        return h_bar, w_bar

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        checked = _frames(self.family, frames)
        if not checked:
            return 0
        height, width = _one_size(self.family, checked)
        h, w = self.frame_size(height, width, len(checked))
        grid_t = -(-len(checked) // self.temporal_patch_size)
        return grid_t * ((h // self.patch_size) * (w // self.patch_size) // self.merge_size**2)


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


for _cls in (Qwen2VL, Qwen25VL, Qwen3VL, LlavaOnevision, InternVL, SmolVLM, SmolVLM2Small, SmolVLM2Medium, Qwen2VLImages, Qwen25VLImages):
    token_models.add(_cls.family, _cls)


def token_model(family: str | TokenModel, **params: Any) -> TokenModel:
    """The cost model of ``family`` configured by ``params`` (the processor's parameter names).

    An unknown family raises :class:`~frameselect.errors.UnknownNameError` listing the known
    ones; an unknown parameter :class:`~frameselect.errors.PartConfigError` listing the
    family's parameters; a bad value :class:`~frameselect.errors.ConfigError`.
    """
    if isinstance(family, TokenModel):
        if params:
            raise ConfigError(f"token model {family.family!r} is already configured; pass its name to set {', '.join(sorted(params))}")
        return family
    if params:
        cls = token_models.get(family)
        if isinstance(cls, type) and issubclass(cls, TokenModel):
            known = cls.accepted_names()
            unknown = sorted(set(params) - set(known))
            if unknown:
                close = "".join(did_you_mean(u, known) for u in unknown)
                raise PartConfigError(f"token model {family!r} has no parameter {', '.join(map(repr, unknown))}{close}; its parameters: {', '.join(known)}")
            params = cls.from_processor_kwargs(params)
    return token_models.create(family, **params)


#: a checkpoint's ``config.json`` ``model_type`` -> the cost model's family
MODEL_TYPES: dict[str, str] = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "llava_onevision": "llava_onevision",
    "internvl": "internvl",
    "smolvlm": "smolvlm",
}
#: a processor class (``processor_class`` in the processor files) -> the family
PROCESSOR_CLASSES: dict[str, str] = {
    "Qwen2VLProcessor": "qwen2_vl",
    "Qwen2_5_VLProcessor": "qwen2_5_vl",
    "Qwen3VLProcessor": "qwen3_vl",
    "LlavaOnevisionProcessor": "llava_onevision",
    "InternVLProcessor": "internvl",
    "SmolVLMProcessor": "smolvlm",
}
_PROCESSOR_FILES = ("video_preprocessor_config.json", "preprocessor_config.json", "processor_config.json")


def token_model_from_pretrained(path: str | os.PathLike[str], family: str | None = None, **params: Any) -> TokenModel:
    """The cost model of a checkpoint, from the processor files in its local folder ``path``.

    Read as transformers loads them: the video processor's settings from
    ``video_preprocessor_config.json`` (else ``preprocessor_config.json``), the processor's own
    (``num_image_tokens``, ``image_seq_len``, ``image_seq_length``, ``vision_feature_select_strategy``)
    from ``processor_config.json``. Of each file only the names the family takes are read
    (:meth:`TokenModel.accepted_names`). ``family`` defaults to the one ``config.json``'s
    ``model_type`` (or the files' ``processor_class``) names; ``params`` override the files.
    A folder without processor files, a family that cannot be told, or ``do_resize: false``
    (frames sent at their own size, which no model here prices) is a :class:`ConfigError`.
    """
    import json
    from pathlib import Path

    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"token model from {str(path)!r}: not a local folder; give the folder holding the checkpoint's processor files")
    files: dict[str, dict[str, Any]] = {}
    for name in (*_PROCESSOR_FILES, "config.json"):
        file = folder / name
        if file.is_file():
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ConfigError(f"token model from {file}: not readable JSON ({exc})") from None
            if not isinstance(data, dict):
                raise ConfigError(f"token model from {file}: expected a JSON object")
            files[name] = data
    if not any(name in files for name in _PROCESSOR_FILES):
        raise ConfigError(f"token model from {folder}: none of {', '.join(_PROCESSOR_FILES)} is there")
    processor = dict(files.get("processor_config.json", {}))
    # transformers may save the sub-processors' settings inside processor_config.json
    nested_video = processor.pop("video_processor", None)
    nested_image = processor.pop("image_processor", None)
    video = files.get("video_preprocessor_config.json") or (nested_video if isinstance(nested_video, dict) else None)
    if video is None:
        video = files.get("preprocessor_config.json") or (nested_image if isinstance(nested_image, dict) else {})
    if family is None:
        model_type = files.get("config.json", {}).get("model_type")
        classes = [d.get("processor_class") for d in (processor, video, files.get("preprocessor_config.json", {}))]
        family = MODEL_TYPES.get(str(model_type)) or next((PROCESSOR_CLASSES[c] for c in classes if isinstance(c, str) and c in PROCESSOR_CLASSES), None)
        if family is None:
            raise ConfigError(
                f"token model from {folder}: which model family these files are for cannot be told (config.json model_type {model_type!r}); "
                f"pass family= (one of {', '.join(token_models.names())})"
            )
    if video.get("do_resize") is False:
        raise ConfigError(f"token model from {folder}: do_resize is false (frames sent at their own size); the {family} cost model prices resized frames only")
    cls = token_models.get(family)
    names = cls.accepted_names() if isinstance(cls, type) and issubclass(cls, TokenModel) else []
    read = {n: processor[n] for n in names if n in processor}
    read.update({n: video[n] for n in names if n in video})
    if "size" in read and "size" in names and family in ("qwen2_vl", "qwen2_5_vl", "qwen2_vl_images", "qwen2_5_vl_images"):
        read["size"] = {k: v for k, v in read["size"].items() if k in ("shortest_edge", "longest_edge")}
    return token_model(family, **{**read, **params})


def visual_tokens(family: str | TokenModel, frames: Sequence[tuple[int, int]], **params: Any) -> int:
    """The visual placeholder tokens a video of ``frames`` (``(height, width)`` each, in the order sent) costs ``family``."""
    return token_model(family, **params).visual_tokens(frames)


def frame_size(family: str | TokenModel, height: int, width: int, *, num_frames: int | None = None, **params: Any) -> tuple[int, int]:
    """The ``(height, width)`` a frame is resized to; ``num_frames`` where it depends on the video's frame count (Qwen3-VL)."""
    return token_model(family, **params).frame_size(height, width, num_frames)
