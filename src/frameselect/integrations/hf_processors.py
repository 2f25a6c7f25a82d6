"""LLaVA-OneVision and InternVL processors for lmms-eval's ``llava_hf`` / ``internvl_hf`` where torchvision is missing.

transformers 5 builds ``LlavaOnevisionVideoProcessor`` and ``InternVLVideoProcessor`` on
torchvision (their image processors fall back to a PIL backend, the video processors have
none), so ``AutoProcessor.from_pretrained`` of those checkpoints fails beside a CPU torch that
PyPI's torchvision does not match. :func:`load_processor` builds the model's own
``LlavaOnevisionProcessor`` / ``InternVLProcessor`` (prompt expansion, chat template, token
counts unchanged) from the checkpoint's tokenizer, its image processor (transformers' PIL
backend) and :class:`FrameVideoProcessor`, which processes frames already chosen (an array or a
list of frames, no decoding, no resampling) with transformers' PIL-backend resize, rescale and
normalise, as the video processor's settings say. The ``frameselect`` model of lmms-eval uses it
only where torchvision cannot be imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FrameVideoProcessor", "load_processor", "PROCESSOR_FAMILIES"]

#: model_type of a checkpoint -> the transformers processor class that serves it
PROCESSOR_FAMILIES = {"llava_onevision": "LlavaOnevisionProcessor", "internvl": "InternVLProcessor"}
#: the transformers video processors' class defaults (transformers 5.25), beneath the checkpoint's own settings
_VIDEO_DEFAULTS: dict[str, Any] = {
    "do_resize": True,
    "size": {"height": 384, "width": 384},
    "resample": 3,  # bicubic
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "do_convert_rgb": True,
}
_PIL_KEYS = ("do_resize", "size", "resample", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std", "do_convert_rgb")


def _video_processor_base() -> type:
    from transformers.video_processing_utils import VideoProcessorMixin

    return VideoProcessorMixin


class FrameVideoProcessor(_video_processor_base()):  # type: ignore[misc]
    """A video processor for frames already chosen: ``pixel_values_videos`` of shape ``(videos, T, 3, H, W)``.

    Each frame is resized, rescaled and normalised by transformers' PIL image backend with the
    video processor's settings; frames are neither decoded nor sampled (a path, a
    ``do_sample_frames``, ``num_frames`` or ``fps`` is refused: lmms-eval's wrappers must be
    handed the frames).
    """

    model_input_names = ["pixel_values_videos"]

    def __init__(self, **settings: Any) -> None:
        from transformers.image_processing_backends import PilBackend

        merged = {**_VIDEO_DEFAULTS, **{k: v for k, v in settings.items() if k in _PIL_KEYS}}
        super().__init__()
        self.settings = merged
        self._images = PilBackend(**merged)

    def __call__(self, videos: Any, **kwargs: Any) -> Any:
        return self.preprocess(videos, **kwargs)

    def preprocess(self, videos: Any, return_tensors: Any = "pt", **kwargs: Any) -> Any:
        from transformers import BatchFeature

        if kwargs.get("do_sample_frames") or kwargs.get("num_frames") is not None or kwargs.get("fps") is not None:
            raise ValueError("frameselect's video processor takes the frames to use; it does not sample (do_sample_frames, num_frames, fps)")
        batch = [videos] if isinstance(videos, np.ndarray) and videos.ndim == 4 else list(videos)
        out = []
        for video in batch:
            if isinstance(video, str | Path):
                raise ValueError(f"frameselect's video processor takes frames, not a path ({video})")
            frames = [np.asarray(f) for f in video]
            if not frames:
                raise ValueError("a video needs at least one frame")
            pixels = self._images.preprocess(frames, return_tensors="np")["pixel_values"]
            out.append(np.stack(pixels))
        return BatchFeature(data={"pixel_values_videos": np.stack(out)}, tensor_type=return_tensors)

    def to_dict(self) -> dict[str, Any]:
        return {"video_processor_type": type(self).__name__, **self.settings}


def _read(pretrained: str, name: str) -> dict[str, Any]:
    from transformers.utils.hub import cached_file

    path = cached_file(pretrained, name, _raise_exceptions_for_missing_entries=False)
    if path is None:
        return {}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def load_processor(pretrained: str, **kwargs: Any) -> Any:
    """The checkpoint's LLaVA-OneVision or InternVL processor, its video processor :class:`FrameVideoProcessor`."""
    import transformers

    model_type = str(transformers.AutoConfig.from_pretrained(pretrained, **_hub(kwargs)).model_type)
    if model_type not in PROCESSOR_FAMILIES:
        raise ValueError(f"{pretrained}: model_type {model_type!r} has no torchvision-free processor here (only {', '.join(PROCESSOR_FAMILIES)})")
    processor_cls = _accepting_frames(getattr(transformers, PROCESSOR_FAMILIES[model_type]))
    image_processor = transformers.AutoImageProcessor.from_pretrained(pretrained, backend="pil", **_hub(kwargs))
    tokenizer = transformers.AutoTokenizer.from_pretrained(pretrained, **_hub(kwargs))
    video = _read(pretrained, "video_preprocessor_config.json") or _read(pretrained, "preprocessor_config.json")
    settings = {k: v for k, v in _read(pretrained, "processor_config.json").items() if k not in ("processor_class", "auto_map")}
    template = _read_text(pretrained, "chat_template.jinja") or settings.pop("chat_template", None) or getattr(tokenizer, "chat_template", None)
    settings.pop("chat_template", None)
    return processor_cls(image_processor=image_processor, tokenizer=tokenizer, video_processor=FrameVideoProcessor(**video), chat_template=template, **settings)


def _accepting_frames(processor_cls: Any) -> type:
    """``processor_cls`` taking :class:`FrameVideoProcessor` as its video processor.

    transformers checks each sub-processor against a class it looks up by name, and without
    torchvision that lookup fails for video processors; every other check is unchanged.
    """

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        if isinstance(argument, FrameVideoProcessor):
            return FrameVideoProcessor
        return processor_cls.check_argument_for_proper_class(self, argument_name, argument)

    return type(processor_cls.__name__, (processor_cls,), {"check_argument_for_proper_class": check_argument_for_proper_class})


def _hub(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: kwargs[k] for k in ("revision", "trust_remote_code") if kwargs.get(k) is not None}


def _read_text(pretrained: str, name: str) -> str | None:
    from transformers.utils.hub import cached_file

    path = cached_file(pretrained, name, _raise_exceptions_for_missing_entries=False)
    return Path(path).read_text(encoding="utf-8") if path else None
