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
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frameselect._token_base import TokenCostError, TokenModel, _check_aspect, _choice, _frames, _not_above, _one_size, _positive_int, _size_dict  # noqa: F401
from frameselect._token_per_frame import InternVL, LlavaOnevision, PerFrameTokenModel, SmolVLM, SmolVLM2Medium, SmolVLM2Small, _smol_size, _square  # noqa: F401
from frameselect.errors import ConfigError, PartConfigError
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


#: every visual-token cost model by family name; ``token_models.names()`` lists them
token_models: Registry[TokenModel] = Registry("token_models")


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
