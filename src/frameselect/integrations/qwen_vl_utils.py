"""``process_vision_info`` for Qwen-VL users, with a frame selector choosing each video's frames.

A drop-in for ``qwen_vl_utils.process_vision_info`` (qwen-vl-utils 0.0.14): same arguments,
same return structures (a list of images or None, a list of ``(T, 3, H, W)`` float tensors or
None, and with ``return_video_kwargs`` the ``{"do_sample_frames": False, "fps": [...]}`` the
processor expects), but the frames of each video message given by path are those the selector
chooses from the video's candidate pool, not frames at a fixed rate::

    from frameselect.integrations.qwen_vl_utils import process_vision_info
    images, videos, video_kwargs = process_vision_info(messages, return_video_kwargs=True,
                                                       selector="aks", k=16, encoder="siglip")
    inputs = processor(text=text, images=images, videos=videos, **video_kwargs, return_tensors="pt")

The query of a video's selection is the text of the message holding it. Videos given as
lists of frames are used as given. Timestamps: with ``return_video_metadata`` each video comes
with the source video's frame rate and the source indices of the frames chosen, so the
processor's timestamps (Qwen3-VL) are the frames' true ones; the ``fps`` of
``video_kwargs`` (Qwen2.5-VL's ``second_per_grid_ts``) is the mean rate of the frames chosen,
``(n - 1) / (t_last - t_first)``. As in qwen-vl-utils an odd number of frames is padded with
the last frame to an even one (Qwen's temporal patch is two frames).

It needs torch and pillow, not torchvision nor qwen-vl-utils: frames are resized with PIL's
bicubic filter (qwen-vl-utils uses torchvision's), so pixel values differ slightly while the
shapes are the same.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from frameselect.answerers._vlm_inputs import smart_resize

__all__ = ["process_vision_info", "extract_vision_info", "video_tensor"]

# the constants of qwen-vl-utils 0.0.14 (vision_process.py)
SPATIAL_MERGE_SIZE = 2
VIDEO_MIN_TOKEN_NUM = 128
VIDEO_MAX_TOKEN_NUM = 768
IMAGE_MIN_TOKEN_NUM = 4
IMAGE_MAX_TOKEN_NUM = 16384
FRAME_FACTOR = 2
MODEL_SEQ_LEN = 128000
DEFAULT_FPS = 2.0


def extract_vision_info(conversations: Sequence[Any]) -> list[dict[str, Any]]:
    """The image and video elements of one conversation or a batch of them, in order."""
    out: list[dict[str, Any]] = []
    convs = [conversations] if conversations and isinstance(conversations[0], dict) else conversations
    for conversation in convs:
        for message in conversation:
            content = message.get("content")
            if isinstance(content, list):
                for ele in content:
                    if "image" in ele or "image_url" in ele or "video" in ele or ele.get("type", "text") in ("image", "image_url", "video"):
                        out.append(ele)
    return out


def _message_texts(conversations: Sequence[Any]) -> dict[int, str]:
    """id(element) -> the text of the message holding it (the query of its selection)."""
    texts: dict[int, str] = {}
    convs = [conversations] if conversations and isinstance(conversations[0], dict) else conversations
    for conversation in convs:
        for message in conversation:
            content = message.get("content")
            if isinstance(content, list):
                text = " ".join(str(e.get("text", "")) for e in content if e.get("type") == "text" or ("text" in e and "video" not in e and "image" not in e))
                for ele in content:
                    texts[id(ele)] = text.strip()
    return texts


def _load_image(image: Any) -> Any:
    from PIL import Image

    if isinstance(image, Image.Image):
        return image
    if isinstance(image, np.ndarray):
        return Image.fromarray(image)
    if isinstance(image, str):
        if image.startswith("data:image"):
            _, _, data = image.partition("base64,")
            return Image.open(io.BytesIO(base64.b64decode(data)))
        if image.startswith(("http://", "https://")):
            raise ValueError("frameselect's process_vision_info reads local images only; download the image first")
        return Image.open(image.removeprefix("file://"))
    raise ValueError(f"unrecognised image input {type(image).__name__}: give a PIL image, an array, a path or a data URL")


def fetch_image(ele: Mapping[str, Any], image_patch_size: int = 14) -> Any:
    """An image element as qwen-vl-utils gives it: RGB, resized to a multiple of the patch factor."""
    from PIL import Image

    factor = image_patch_size * SPATIAL_MERGE_SIZE
    image = _load_image(ele.get("image", ele.get("image_url")))
    if isinstance(image, dict):  # pragma: no cover - {"url": ...} elements
        image = _load_image(image.get("url"))
    image = image.convert("RGB")
    if "resized_height" in ele and "resized_width" in ele:
        h, w = smart_resize(int(ele["resized_height"]), int(ele["resized_width"]), factor, factor * factor, 10**12)
    else:
        lo = int(ele.get("min_pixels", IMAGE_MIN_TOKEN_NUM * factor * factor))
        hi = int(ele.get("max_pixels", IMAGE_MAX_TOKEN_NUM * factor * factor))
        h, w = smart_resize(image.height, image.width, factor, lo, hi)
    return image.resize((w, h), resample=Image.Resampling.BICUBIC)


def video_tensor(frames: Sequence[np.ndarray], ele: Mapping[str, Any], image_patch_size: int = 14) -> Any:
    """Frames ``(H, W, 3)`` uint8 as qwen-vl-utils' video tensor: padded to an even count, resized, ``(T, 3, H', W')`` float."""
    import torch
    from PIL import Image

    if not frames:
        raise ValueError("a video with no frames")
    frames = list(frames)
    n = math.ceil(len(frames) / FRAME_FACTOR) * FRAME_FACTOR
    frames += [frames[-1]] * (n - len(frames))
    factor = image_patch_size * SPATIAL_MERGE_SIZE
    height, width = frames[0].shape[:2]
    min_pixels = int(ele.get("min_pixels", VIDEO_MIN_TOKEN_NUM * factor * factor))
    total_pixels = float(ele.get("total_pixels", MODEL_SEQ_LEN * factor * factor * 0.9))
    max_pixels = max(min(VIDEO_MAX_TOKEN_NUM * factor * factor, total_pixels / n * FRAME_FACTOR), int(min_pixels * 1.05))
    max_pixels = min(float(ele.get("max_pixels", max_pixels)), max_pixels)
    if "resized_height" in ele and "resized_width" in ele:
        h, w = smart_resize(int(ele["resized_height"]), int(ele["resized_width"]), factor, factor * factor, 10**12)
    else:
        h, w = smart_resize(height, width, factor, min_pixels, int(max_pixels))
    resized = [np.asarray(Image.fromarray(np.ascontiguousarray(f)).resize((w, h), resample=Image.Resampling.BICUBIC)) for f in frames]
    return torch.from_numpy(np.stack(resized).transpose(0, 3, 1, 2).copy()).float()


def mean_rate(timestamps: Sequence[float]) -> float:
    """The mean frame rate of ``timestamps``: ``(n - 1) / span`` (2.0, qwen-vl-utils' default, for one frame)."""
    if len(timestamps) < 2 or timestamps[-1] <= timestamps[0]:
        return DEFAULT_FPS
    return (len(timestamps) - 1) / (float(timestamps[-1]) - float(timestamps[0]))


def process_vision_info(
    conversations: Sequence[Any],
    return_video_kwargs: bool = False,
    return_video_metadata: bool = False,
    image_patch_size: int = 14,
    *,
    selector: Any = "uniform",
    k: int = 8,
    encoder: Any = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    cache_dir: str | None = None,
    selector_params: Mapping[str, Any] | None = None,
    encoder_params: Mapping[str, Any] | None = None,
    chosen: Mapping[str, Any] | None = None,
) -> Any:
    """``qwen_vl_utils.process_vision_info`` with the frames of each video path chosen by ``selector``.

    ``selector``/``encoder`` are registered names (with ``selector_params``/``encoder_params``)
    or instances; ``k`` the budget; ``pool`` the candidate pool policy. ``chosen`` maps a video
    path to an :class:`~frameselect.answerers.base.AnswerRequest` already selected (the lmms-eval
    wrapper's way in); such videos are not selected again.
    """
    from frameselect.errors import ConfigError
    from frameselect.integrations.bridge import select_frames
    from frameselect.parts import check_budget
    from frameselect.plan import resolve
    from frameselect.types import Query, Sample

    infos = extract_vision_info(conversations)
    texts = _message_texts(conversations)
    sel = enc = None
    images: list[Any] = []
    videos: list[Any] = []
    rates: list[float] = []
    for ele in infos:
        if "image" in ele or "image_url" in ele:
            images.append(fetch_image(ele, image_patch_size))
            continue
        if "video" not in ele:
            raise ValueError("image, image_url or video should be in content")
        video = ele["video"]
        if isinstance(video, str):
            path = video.removeprefix("file://")
            request = (chosen or {}).get(path)
            if request is None:
                if sel is None:
                    sel = resolve("selectors", selector, **dict(selector_params or {}))
                    enc = resolve("encoders", encoder, **dict(encoder_params or {})) if encoder is not None else None
                sample = Sample(id=path, video=path, query=Query(text=texts.get(id(ele), "")))
                request = select_frames(sample, sel, check_budget(k, error=ConfigError, hint="k="), encoder=enc, pool=pool, seed=seed, cache_dir=cache_dir)
            frames = request.frames()
            stamps = request.timestamps
            tensor = video_tensor(frames, ele, image_patch_size)
            rate = mean_rate(stamps)
            meta = _metadata(request, len(tensor))
        else:  # a list of frames, used as given
            frames = [np.asarray(_load_image(f).convert("RGB")) for f in video]
            tensor = video_tensor(frames, ele, image_patch_size)
            rate = float(ele.get("sample_fps", DEFAULT_FPS))
            meta = {"fps": rate, "frames_indices": list(range(len(tensor))), "total_num_frames": len(tensor)}
        rates.append(rate)
        videos.append((tensor, meta) if return_video_metadata else tensor)
    video_kwargs: dict[str, Any] = {"do_sample_frames": False}
    if not return_video_metadata:
        video_kwargs["fps"] = rates
    out_images = images or None
    out_videos = videos or None
    if return_video_kwargs:
        return out_images, out_videos, video_kwargs
    return out_images, out_videos


def _metadata(request: Any, n: int) -> dict[str, Any]:
    """Source frame rate and source indices of the frames chosen (the last repeated where padded)."""
    pool = request.pool
    idx = [int(pool.frame_indices[i]) for i in request.selection.indices]
    idx += [idx[-1]] * (n - len(idx))
    stamps = request.timestamps
    src_fps = (idx[-1] - idx[0]) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] and idx[-1] > idx[0] else DEFAULT_FPS
    total = round(pool.duration * src_fps) if pool.duration else int(pool.frame_indices[-1]) + 1
    return {"fps": float(src_fps), "frames_indices": idx, "total_num_frames": total, "video_backend": "pyav"}
