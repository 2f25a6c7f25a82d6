"""Model inputs for the transformers VLM backends without torchvision.

transformers 5 builds every video processor (``Qwen2VLVideoProcessor``,
``LlavaOnevisionVideoProcessor``, ``InternVLVideoProcessor``) on torchvision,
and a processor that owns a video processor (``Qwen2VLProcessor``,
``Qwen2_5_VLProcessor``, ``LlavaOnevisionProcessor``, ``InternVLProcessor``)
cannot even be constructed without it. This environment has no torchvision
(PyPI's build breaks beside the CPU torch), so the backends in
:mod:`frameselect.answerers.transformers_vlm` use these stand-ins, which do
what the processors do, in numpy and PIL:

* :class:`QwenVLInputs` (Qwen2-VL, Qwen2.5-VL), after transformers'
  ``models/qwen2_vl/video_processing_qwen2_vl.py`` and
  ``processing_qwen2_vl.py`` / ``processing_qwen2_5_vl.py``: every frame is
  resized (bicubic) to the :func:`smart_resize` size, a multiple of
  ``patch_size * merge_size`` within ``[min_pixels, max_pixels]`` (with the
  per-frame cap of qwen-vl-utils, ``cap_pixels_per_frame``), rescaled and
  normalised with the processor's mean and std; the last frame is repeated to
  a multiple of ``temporal_patch_size``; :func:`qwen_patchify` flattens the
  video to ``pixel_values_videos`` of shape ``(t*h*w, C*T*P*P)`` in the
  processor's order; ``<|video_pad|>`` is expanded to ``t*h*w / merge_size**2``
  tokens; ``mm_token_type_ids`` marks them (2 for video, as M-RoPE needs);
  Qwen2.5-VL also gets ``second_per_grid_ts = temporal_patch_size / fps``.
* :class:`LlavaOnevisionInputs`, after ``LlavaOnevisionVideoProcessor`` and
  ``LlavaOnevisionProcessor.replace_video_token``: every frame resized to the
  processor's fixed size, rescaled and normalised, ``pixel_values_videos`` of
  shape ``(1, n, C, H, W)``; ``<video>`` expanded to
  ``n * ceil(sqrt(num_image_tokens) / 2)**2 + 1`` tokens (2x2 pooling, one
  newline).
* :class:`InternVLInputs`, after ``InternVLProcessor``: the frames as images
  through the checkpoint's own image processor (transformers' PIL backend,
  ``GotOcr2ImageProcessorPil``, works without torchvision), every
  ``<IMG_CONTEXT>`` placeholder expanded to
  ``<img>`` + ``image_seq_length * num_patches`` context tokens + ``</img>``.

Pixels follow transformers' PIL backend (``PilBackend``): a PIL resize of the
uint8 frame, ``x * rescale_factor`` in float64 cast to float32, then
``(x - mean) / std`` in float32, so a frame's values equal those of
``Qwen2VLImageProcessorPil`` bit for bit. Deliberate deviation: with
torchvision, transformers' video processors resize uint8 tensors with
torchvision's antialiased bicubic and fuse rescale and normalise; pixels then
differ from these by resampling rounding (about one grey level before
normalisation), never in shape, grid or token count. The backends use the
real processor whenever one is given or torchvision is importable.

Settings are read from the checkpoint the way ``BaseVideoProcessor`` reads
them (:func:`load_video_processor_dict`: the ``video_processor`` entry of
``processor_config.json``, else ``video_preprocessor_config.json``, else
``preprocessor_config.json``) over the video processor class's defaults.
torch, transformers and PIL are imported inside functions only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "OPENAI_CLIP_MEAN",
    "OPENAI_CLIP_STD",
    "smart_resize",
    "normalized_frame",
    "qwen_patchify",
    "QwenVideoConfig",
    "FrameConfig",
    "LlavaVideoConfig",
    "QwenVLInputs",
    "LlavaOnevisionInputs",
    "InternVLInputs",
    "torchvision_available",
    "load_video_processor_dict",
    "load_processor_dict",
]

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_BICUBIC = 3  # PIL.Image.Resampling.BICUBIC


def torchvision_available() -> bool:
    """Whether transformers can use torchvision (then its own video processors work)."""
    from transformers.utils.import_utils import is_torchvision_available

    return bool(is_torchvision_available())


# -- pixels -------------------------------------------------------------------


def smart_resize(height: int, width: int, factor: int = 28, min_pixels: int = 56 * 56, max_pixels: int = 14 * 14 * 4 * 1280) -> tuple[int, int]:
    """Qwen2-VL's frame size: both sides multiples of ``factor``, area within ``[min_pixels, max_pixels]``, aspect kept.

    As ``smart_resize`` in transformers' ``image_processing_qwen2_vl.py``
    (and qwen-vl-utils): round each side to the nearest multiple, then scale
    down (floor) or up (ceil) by the square root of the area ratio if the
    area is out of range.

    >>> smart_resize(48, 64, 28, 56 * 56, 56 * 56)
    (56, 56)
    >>> smart_resize(48, 64, 28, 28 * 28 * 2, int(28 * 28 * 2 * 1.05))
    (28, 28)
    >>> smart_resize(720, 1280, 28, 128 * 28 * 28, 28 * 28 * 768)
    (560, 1008)
    """
    if min(height, width) < 1:
        raise ValueError(f"frame of {height}x{width} pixels has no area")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class FrameConfig:
    """How one frame becomes pixels: resize, rescale and normalise (transformers' processor fields)."""

    image_mean: tuple[float, ...] = OPENAI_CLIP_MEAN
    image_std: tuple[float, ...] = OPENAI_CLIP_STD
    rescale_factor: float = 1 / 255
    resample: int = _BICUBIC
    do_resize: bool = True
    do_rescale: bool = True
    do_normalize: bool = True


def normalized_frame(frame: NDArray[np.uint8], height: int, width: int, config: FrameConfig) -> NDArray[np.float32]:
    """One RGB uint8 frame ``(H, W, 3)`` as float32 ``(3, height, width)``, as transformers' PIL backend makes it.

    PIL resize of the uint8 frame (``config.resample``), ``x * rescale_factor``
    in float64 cast to float32, ``(x - mean) / std`` in float32.

    >>> f = np.full((2, 2, 3), 255, dtype=np.uint8)
    >>> normalized_frame(f, 2, 2, FrameConfig(image_mean=(0.5,) * 3, image_std=(0.5,) * 3))[:, 0, 0].tolist()
    [1.0, 1.0, 1.0]
    """
    image = np.asarray(frame)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 frame of shape (H, W, 3), got {image.dtype} {image.shape}")
    if config.do_resize:
        from PIL import Image

        image = np.asarray(Image.fromarray(image).resize((width, height), resample=Image.Resampling(config.resample)))
    chw = np.moveaxis(image, -1, 0)
    if config.do_rescale:
        pixels = (chw.astype(np.float64) * config.rescale_factor).astype(np.float32)
    else:
        pixels = chw.astype(np.float32)
    if config.do_normalize:
        mean = np.asarray(config.image_mean, dtype=np.float32)[:, None, None]
        std = np.asarray(config.image_std, dtype=np.float32)[:, None, None]
        pixels = (pixels - mean) / std
    return np.ascontiguousarray(pixels, dtype=np.float32)


def qwen_patchify(
    video: NDArray[np.float32], patch_size: int = 14, merge_size: int = 2, temporal_patch_size: int = 2
) -> tuple[NDArray[np.float32], tuple[int, int, int]]:
    """A video ``(T, C, H, W)`` as Qwen2-VL's flat patches ``(t*h*w, C*temporal_patch_size*patch_size**2)`` and its grid ``(t, h, w)``.

    ``T`` not a multiple of ``temporal_patch_size`` is padded with copies of
    the last frame. Rows run over temporal patches, then merge windows
    (``merge_size x merge_size`` patches, row-major), then the patches inside
    a window (row-major); a row holds channel, frame within the temporal
    patch, pixel row, pixel column, in that order: the ``permute(0, 1, 4, 7,
    5, 8, 3, 2, 6, 9)`` of ``Qwen2VLVideoProcessor.patchify``.

    >>> v = np.arange(3 * 1 * 4 * 4, dtype=np.float32).reshape(3, 1, 4, 4)
    >>> rows, grid = qwen_patchify(v, patch_size=2, merge_size=1, temporal_patch_size=2)
    >>> grid, rows.shape
    ((2, 2, 2), (8, 8))
    >>> rows[1].tolist()  # frames 0 and 1, top-right 2x2 patch
    [2.0, 3.0, 6.0, 7.0, 18.0, 19.0, 22.0, 23.0]
    >>> rows[4].tolist()  # frame 2 and its copy
    [32.0, 33.0, 36.0, 37.0, 32.0, 33.0, 36.0, 37.0]
    """
    frames, channels, height, width = video.shape
    if height % (patch_size * merge_size) or width % (patch_size * merge_size):
        raise ValueError(f"frame size {height}x{width} is not a multiple of patch_size * merge_size = {patch_size * merge_size}")
    if pad := -frames % temporal_patch_size:
        video = np.concatenate([video, np.repeat(video[-1:], pad, axis=0)], axis=0)
        frames += pad
    grid_t, grid_h, grid_w = frames // temporal_patch_size, height // patch_size, width // patch_size
    patches = video.reshape(grid_t, temporal_patch_size, channels, grid_h // merge_size, merge_size, patch_size, grid_w // merge_size, merge_size, patch_size)
    # (t, T, C, h/m, m, p, w/m, m, p) -> (t, h/m, w/m, m_h, m_w, C, T, p_h, p_w)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channels * temporal_patch_size * patch_size * patch_size)
    return np.ascontiguousarray(flat), (grid_t, grid_h, grid_w)


@dataclass(frozen=True)
class QwenVideoConfig(FrameConfig):
    """``Qwen2VLVideoProcessor``'s settings; the defaults are its class defaults."""

    min_pixels: int = 128 * 28 * 28
    max_pixels: int = 28 * 28 * 768
    patch_size: int = 14
    temporal_patch_size: int = 2
    merge_size: int = 2
    max_video_tokens: int = 128000

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> QwenVideoConfig:
        """Settings from a checkpoint's processor dict, read as ``Qwen2VLVideoProcessor(**settings)`` reads them.

        ``size`` (``shortest_edge``/``longest_edge``, or the legacy
        ``min_pixels``/``max_pixels`` keys inside it) replaces the class
        default; top-level ``min_pixels``/``max_pixels`` override it.

        >>> QwenVideoConfig.from_dict({"min_pixels": 3136, "max_pixels": 12845056, "image_mean": [0.5, 0.5, 0.5]}).max_pixels
        12845056
        """
        values = _known_fields(cls, settings)
        size = settings.get("size")
        if isinstance(size, Mapping):
            low, high = size.get("shortest_edge", size.get("min_pixels")), size.get("longest_edge", size.get("max_pixels"))
            if low is None or high is None:
                raise ValueError(f"Qwen2-VL video size needs 'shortest_edge' and 'longest_edge' (pixel counts), got {dict(size)}")
            values.setdefault("min_pixels", int(low))
            values.setdefault("max_pixels", int(high))
        return cls(**values)

    def frame_size(self, height: int, width: int, num_frames: int, cap_pixels_per_frame: bool = True, max_pixels: int | None = None) -> tuple[int, int]:
        """The resized frame size for a video of ``num_frames`` frames of ``height x width``.

        ``max_pixels`` lowers the per-frame ceiling (and the floor with it, as
        the backends' ``max_pixels=`` does). ``cap_pixels_per_frame`` bounds a
        frame by an even share of ``max_video_tokens`` tokens' worth of pixels
        (90 %, floored at 1.05 x ``min_pixels``), as qwen-vl-utils and
        ``Qwen2VLVideoProcessor.resize`` do.

        >>> QwenVideoConfig(min_pixels=3136, max_pixels=3136).frame_size(48, 64, 3)
        (56, 56)
        """
        low, high = self.min_pixels, self.max_pixels
        if max_pixels is not None:
            low, high = min(low, max_pixels), max_pixels
        factor = self.patch_size * self.merge_size
        if cap_pixels_per_frame:
            total = int(self.max_video_tokens * factor * factor * 0.9)
            high = max(min(high, total * self.temporal_patch_size // num_frames), int(low * 1.05))
        return smart_resize(height, width, factor=factor, min_pixels=low, max_pixels=high)

    def video(
        self, frames: Sequence[NDArray[np.uint8]], cap_pixels_per_frame: bool = True, max_pixels: int | None = None
    ) -> tuple[NDArray[np.float32], tuple[int, int, int]]:
        """``pixel_values_videos`` (float32, ``(t*h*w, C*T*P*P)``) and ``(t, h, w)`` of one video."""
        if not len(frames):
            raise ValueError("a video needs at least one frame")
        shapes = {np.shape(f) for f in frames}
        if len(shapes) != 1:
            raise ValueError(f"all frames of a video must have one size, got {sorted(shapes)}")
        height, width = np.shape(frames[0])[:2]
        if self.do_resize:
            height, width = self.frame_size(height, width, len(frames), cap_pixels_per_frame, max_pixels)
        video = np.stack([normalized_frame(f, height, width, self) for f in frames])
        return qwen_patchify(video, self.patch_size, self.merge_size, self.temporal_patch_size)


def _known_fields(cls: type, settings: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return _normalised({k: v for k, v in settings.items() if k in names and v is not None})


def _normalised(values: dict[str, Any]) -> dict[str, Any]:
    out = dict(values)
    for key in ("image_mean", "image_std"):
        if key in out:
            value = out[key]
            out[key] = tuple(float(v) for v in value) if isinstance(value, Sequence | np.ndarray) else (float(value),) * 3
    if "resample" in out:
        out["resample"] = int(out["resample"])
    return out


# -- checkpoint settings --------------------------------------------------------


def _hub_file(model_id: str, filename: str, revision: str | None) -> str | None:
    from transformers.utils.hub import cached_file

    path = cached_file(model_id, filename, revision=revision, _raise_exceptions_for_missing_entries=False)
    return None if path is None else str(path)


def _read_json(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return data if isinstance(data, dict) else None


def load_video_processor_dict(model_id: str, revision: str | None = None) -> dict[str, Any]:
    """The video processor settings of a checkpoint, found where ``BaseVideoProcessor.from_pretrained`` looks.

    The ``video_processor`` entry of ``processor_config.json``, else
    ``video_preprocessor_config.json``, else ``preprocessor_config.json``
    (the image processor's, which older checkpoints share with video).
    """
    nested = _read_json(_hub_file(model_id, "processor_config.json", revision)) or {}
    if isinstance(nested.get("video_processor"), dict):
        return dict(nested["video_processor"])
    for filename in ("video_preprocessor_config.json", "preprocessor_config.json"):
        data = _read_json(_hub_file(model_id, filename, revision))
        if data is not None:
            return data
    raise OSError(f"{model_id}: no video processor settings (processor_config.json, video_preprocessor_config.json or preprocessor_config.json)")


def load_processor_dict(model_id: str, revision: str | None = None) -> dict[str, Any]:
    """The processor's own settings (``processor_config.json`` without the sub-processors) and its chat template.

    The chat template is looked up as ``ProcessorMixin.from_pretrained``
    does: the config's ``chat_template``, else ``chat_template.json``, else
    ``chat_template.jinja``; absent when none (the tokenizer's own is used).
    """
    data = _read_json(_hub_file(model_id, "processor_config.json", revision)) or {}
    out = {k: v for k, v in data.items() if not isinstance(v, dict)}
    if out.get("chat_template") is None:
        legacy = _read_json(_hub_file(model_id, "chat_template.json", revision))
        if legacy is not None and legacy.get("chat_template"):
            out["chat_template"] = legacy["chat_template"]
        else:
            jinja = _hub_file(model_id, "chat_template.jinja", revision)
            if jinja is not None:
                with open(jinja, encoding="utf-8") as handle:
                    out["chat_template"] = handle.read()
    return out


# -- processors ---------------------------------------------------------------------


class _TextSide:
    """What the backends need of a processor besides pixels: the chat template, tokenizing and decoding."""

    def __init__(self, tokenizer: Any, chat_template: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.chat_template = chat_template

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        if self.chat_template is not None:
            kwargs.setdefault("chat_template", self.chat_template)
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def decode(self, token_ids: Any, **kwargs: Any) -> str:
        return str(self.tokenizer.decode(token_ids, **kwargs))

    def _token(self, name: str, default: str) -> tuple[str, int]:
        token = getattr(self.tokenizer, name, None) or default
        token_id = getattr(self.tokenizer, f"{name}_id", None)
        if not token_id:
            token_id = self.tokenizer.convert_tokens_to_ids(token)
        return str(token), int(token_id)

    def _encode(self, text: str) -> dict[str, Any]:
        return dict(self.tokenizer([text], return_tensors="pt"))

    @staticmethod
    def _expand_one(text: str, placeholder: str, replacement: str, what: str) -> str:
        found = text.count(placeholder)
        if found != 1:
            raise ValueError(f"the prompt must hold exactly one {placeholder} ({what}), found {found}")
        return text.replace(placeholder, replacement)

    @staticmethod
    def _batch(data: dict[str, Any]) -> Any:
        from transformers import BatchFeature

        return BatchFeature(data=data)


class QwenVLInputs(_TextSide):
    """Qwen2-VL / Qwen2.5-VL model inputs for one video, without torchvision (see the module docstring).

    ``QwenVLInputs(tokenizer, QwenVideoConfig(...), chat_template=...)``;
    :meth:`from_pretrained` reads tokenizer, settings and template from a
    checkpoint. Calling it with the chat-formatted text (one
    ``<|video_pad|>``) and the frames gives what ``Qwen2VLProcessor`` gives:
    ``input_ids``, ``attention_mask``, ``mm_token_type_ids``,
    ``pixel_values_videos``, ``video_grid_thw`` and, with ``fps``,
    ``second_per_grid_ts`` (Qwen2.5-VL).
    """

    def __init__(self, tokenizer: Any, config: QwenVideoConfig | None = None, chat_template: str | None = None) -> None:
        super().__init__(tokenizer, chat_template)
        self.config = config or QwenVideoConfig()
        self.image_token, self.image_token_id = self._token("image_token", "<|image_pad|>")
        self.video_token, self.video_token_id = self._token("video_token", "<|video_pad|>")

    @classmethod
    def from_pretrained(cls, model_id: str, revision: str | None = None) -> QwenVLInputs:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_id, revision=revision)
        config = QwenVideoConfig.from_dict(load_video_processor_dict(model_id, revision))
        return cls(tokenizer, config, load_processor_dict(model_id, revision).get("chat_template"))

    def num_video_tokens(self, grid_thw: tuple[int, int, int]) -> int:
        """Placeholder tokens of one video: one per ``merge_size x merge_size`` patches."""
        return int(np.prod(grid_thw)) // self.config.merge_size**2

    def __call__(
        self,
        text: str,
        frames: Sequence[NDArray[np.uint8]],
        fps: float | None = None,
        cap_pixels_per_frame: bool = True,
        max_pixels: int | None = None,
    ) -> Any:
        self._expand_one(text, self.video_token, self.video_token, "the video")  # exactly one placeholder
        return self.several(text, [frames], None if fps is None else [fps], cap_pixels_per_frame, max_pixels)

    def several(
        self,
        text: str,
        videos: Sequence[Sequence[NDArray[np.uint8]]],
        fps: Sequence[float] | None = None,
        cap_pixels_per_frame: bool = True,
        max_pixels: int | None = None,
    ) -> Any:
        """Inputs for a prompt holding one ``<|video_pad|>`` per video, in order (as the processor does for ``videos=[...]``)."""
        import torch

        pieces = text.split(self.video_token)
        if len(pieces) - 1 != len(videos):
            raise ValueError(f"the prompt holds {len(pieces) - 1} {self.video_token} placeholders for {len(videos)} videos")
        if fps is not None and len(fps) != len(videos):
            raise ValueError(f"{len(fps)} frame rates for {len(videos)} videos")
        made = [self.config.video(frames, cap_pixels_per_frame=cap_pixels_per_frame, max_pixels=max_pixels) for frames in videos]
        expanded = pieces[0]
        for (_, grid), rest in zip(made, pieces[1:]):
            expanded += self.video_token * self.num_video_tokens(grid) + rest
        data = self._encode(expanded)
        ids = data["input_ids"]
        types = torch.zeros_like(ids)
        types[ids == self.image_token_id] = 1
        types[ids == self.video_token_id] = 2
        data["mm_token_type_ids"] = types
        data["pixel_values_videos"] = torch.from_numpy(np.concatenate([pixels for pixels, _ in made], axis=0))
        data["video_grid_thw"] = torch.tensor([list(grid) for _, grid in made], dtype=torch.long)
        if fps is not None:
            data["second_per_grid_ts"] = torch.tensor([self.config.temporal_patch_size / f for f in fps])
        return self._batch(data)


@dataclass(frozen=True)
class LlavaVideoConfig(FrameConfig):
    """``LlavaOnevisionVideoProcessor``'s settings: every frame resized to ``height x width``."""

    height: int = 384
    width: int = 384

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> LlavaVideoConfig:
        values = _known_fields(cls, settings)
        size = settings.get("size")
        if isinstance(size, Mapping):
            if "height" not in size or "width" not in size:
                raise ValueError(f"LLaVA-OneVision video size must give 'height' and 'width', got {dict(size)}")
            values["height"], values["width"] = int(size["height"]), int(size["width"])
        if settings.get("do_center_crop"):
            raise ValueError("LLaVA-OneVision video settings with do_center_crop are not supported without torchvision")
        return cls(**values)


class LlavaOnevisionInputs(_TextSide):
    """LLaVA-OneVision model inputs for one video, without torchvision (see the module docstring)."""

    def __init__(self, tokenizer: Any, num_image_tokens: int, config: LlavaVideoConfig | None = None, chat_template: str | None = None) -> None:
        super().__init__(tokenizer, chat_template)
        self.config = config or LlavaVideoConfig()
        self.num_image_tokens = int(num_image_tokens)
        self.video_token, self.video_token_id = self._token("video_token", "<video>")

    @classmethod
    def from_pretrained(cls, model_id: str, revision: str | None = None) -> LlavaOnevisionInputs:
        from transformers import AutoTokenizer

        processor = load_processor_dict(model_id, revision)
        if processor.get("num_image_tokens") is None:
            raise OSError(f"{model_id}: processor_config.json gives no num_image_tokens")
        config = LlavaVideoConfig.from_dict(load_video_processor_dict(model_id, revision))
        tokenizer = AutoTokenizer.from_pretrained(model_id, revision=revision)
        return cls(tokenizer, processor["num_image_tokens"], config, processor.get("chat_template"))

    def num_video_tokens(self, num_frames: int) -> int:
        """``num_frames`` frames of ``ceil(side / 2)**2`` pooled tokens, ``side = sqrt(num_image_tokens)``, plus one newline."""
        pooled = math.ceil(int(math.sqrt(self.num_image_tokens)) / 2)
        return num_frames * pooled * pooled + 1

    def __call__(self, text: str, frames: Sequence[NDArray[np.uint8]]) -> Any:
        self._expand_one(text, self.video_token, self.video_token, "the video")  # exactly one placeholder
        return self.several(text, [frames])

    def several(self, text: str, videos: Sequence[Sequence[NDArray[np.uint8]]]) -> Any:
        """Inputs for a prompt holding one ``<video>`` per video, in order; the videos must have equal frame counts (one tensor)."""
        import torch

        if any(not len(frames) for frames in videos):
            raise ValueError("a video needs at least one frame")
        if len({len(frames) for frames in videos}) > 1:
            raise ValueError(f"LLaVA-OneVision takes videos of equal frame counts in one prompt, got {[len(f) for f in videos]}")
        pieces = text.split(self.video_token)
        if len(pieces) - 1 != len(videos):
            raise ValueError(f"the prompt holds {len(pieces) - 1} {self.video_token} placeholders for {len(videos)} videos")
        expanded = pieces[0]
        for frames, rest in zip(videos, pieces[1:]):
            expanded += self.video_token * self.num_video_tokens(len(frames)) + rest
        stacked = np.stack([np.stack([normalized_frame(f, self.config.height, self.config.width, self.config) for f in frames]) for frames in videos])
        data = self._encode(expanded)
        data["pixel_values_videos"] = torch.from_numpy(stacked)
        return self._batch(data)


class InternVLInputs(_TextSide):
    """InternVL (transformers-native) model inputs for frames as images, without torchvision (see the module docstring).

    ``image_processor`` is the checkpoint's own (``AutoImageProcessor`` gives
    ``GotOcr2ImageProcessorPil`` when torchvision is missing); the tokenizer
    names ``start_image_token``, ``end_image_token`` and
    ``context_image_token`` as InternVL's does.
    """

    def __init__(self, tokenizer: Any, image_processor: Any, image_seq_length: int = 256, chat_template: str | None = None) -> None:
        super().__init__(tokenizer, chat_template)
        self.image_processor = image_processor
        self.image_seq_length = int(image_seq_length)
        self.start_image_token = str(tokenizer.start_image_token)
        self.end_image_token = str(tokenizer.end_image_token)
        self.image_token = str(tokenizer.context_image_token)

    @classmethod
    def from_pretrained(cls, model_id: str, revision: str | None = None) -> InternVLInputs:
        from transformers import AutoImageProcessor, AutoTokenizer

        processor = load_processor_dict(model_id, revision)
        tokenizer = AutoTokenizer.from_pretrained(model_id, revision=revision)
        image_processor = AutoImageProcessor.from_pretrained(model_id, revision=revision)  # type: ignore[no-untyped-call,unused-ignore]
        return cls(tokenizer, image_processor, int(processor.get("image_seq_length", 256)), processor.get("chat_template"))

    def __call__(self, text: str, images: Sequence[NDArray[np.uint8]], crop_to_patches: bool = False) -> Any:
        processed = self.image_processor(images=list(images), crop_to_patches=crop_to_patches, return_tensors="pt")
        num_patches = [int(n) for n in processed["num_patches"]]
        pieces = text.split(self.image_token)
        if len(pieces) - 1 != len(num_patches):
            raise ValueError(f"the prompt holds {len(pieces) - 1} {self.image_token} placeholders for {len(num_patches)} images")
        expanded = pieces[0]
        for n, rest in zip(num_patches, pieces[1:]):
            expanded += self.start_image_token + self.image_token * (self.image_seq_length * n) + self.end_image_token + rest
        data = self._encode(expanded)
        data["pixel_values"] = processed["pixel_values"]
        return self._batch(data)
