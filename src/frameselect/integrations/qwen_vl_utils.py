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
import functools
import io
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["process_vision_info", "extract_vision_info", "video_tensor", "smart_nframes", "frame_range", "smart_resize", "VIDEO_KEYS", "IMAGE_KEYS"]

# the constants of qwen-vl-utils 0.0.14 (vision_process.py)
SPATIAL_MERGE_SIZE = 2
VIDEO_MIN_TOKEN_NUM = 128
VIDEO_MAX_TOKEN_NUM = 768
IMAGE_MIN_TOKEN_NUM = 4
IMAGE_MAX_TOKEN_NUM = 16384
FRAME_FACTOR = 2
MODEL_SEQ_LEN = 128000
DEFAULT_FPS = 2.0
FPS_MIN_FRAMES = 4
FPS_MAX_FRAMES = 768
MAX_RATIO = 200

#: the keys of a video element honoured here (qwen-vl-utils 0.0.14's); any other key is refused
VIDEO_KEYS = frozenset(
    {"type", "video", "nframes", "fps", "min_frames", "max_frames", "video_start", "video_end", "min_pixels", "max_pixels", "total_pixels"}
    | {"resized_height", "resized_width", "sample_fps", "raw_fps"}
)
#: the keys of an image element honoured here
IMAGE_KEYS = frozenset({"type", "image", "image_url", "min_pixels", "max_pixels", "resized_height", "resized_width"})
#: keys that set how many frames are taken from a video file (a budget for the selector here)
_COUNT_KEYS = ("nframes", "fps", "min_frames", "max_frames")
_WINDOW_KEYS = ("video_start", "video_end")
_POSITIVE_INT_KEYS = ("nframes", "min_frames", "max_frames", "resized_height", "resized_width")
_POSITIVE_NUMBER_KEYS = ("fps", "min_pixels", "max_pixels", "total_pixels", "sample_fps", "raw_fps")


def _check_element(ele: Mapping[str, Any], kind: str) -> None:
    """A clear ``ValueError`` naming the key for a key not honoured or a value out of range."""
    known = VIDEO_KEYS if kind == "video" else IMAGE_KEYS
    unknown = sorted(str(key) for key in ele if key not in known and key != "text")
    if unknown:
        raise ValueError(f"{kind} element: {', '.join(map(repr, unknown))} is not honoured here; the keys taken are {', '.join(sorted(known))}")
    for key in _POSITIVE_INT_KEYS:
        if key in ele:
            value = ele[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{kind} element: {key} must be a whole number of at least 1, got {value!r}")
    for key in _POSITIVE_NUMBER_KEYS:
        if key in ele:
            value = ele[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{kind} element: {key} must be a number above 0, got {value!r}")
    for key in _WINDOW_KEYS:
        if key in ele and ele[key] is not None:
            value = ele[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{kind} element: {key} must be a number of seconds of at least 0, got {value!r}")
    if "nframes" in ele and "fps" in ele:
        raise ValueError(f"{kind} element: give either nframes or fps, not both (as qwen-vl-utils)")
    if ("resized_height" in ele) != ("resized_width" in ele):
        raise ValueError(f"{kind} element: resized_height and resized_width go together; give both or neither")


def _round_by(number: float, factor: int) -> int:
    return round(number / factor) * factor


def _ceil_by(number: float, factor: int) -> int:
    return math.ceil(number / factor) * factor


def _floor_by(number: float, factor: int) -> int:
    return math.floor(number / factor) * factor


def smart_resize(height: int, width: int, factor: int, min_pixels: float | None = None, max_pixels: float | None = None) -> tuple[int, int]:
    """qwen-vl-utils 0.0.14's frame size: sides multiples of ``factor`` (at least ``factor``), area in ``[min_pixels, max_pixels]``.

    >>> smart_resize(48, 64, 28, 128 * 28 * 28, 768 * 28 * 28)
    (280, 392)
    >>> smart_resize(100, 60, 28)
    (112, 56)
    """
    lo = IMAGE_MIN_TOKEN_NUM * factor**2 if min_pixels is None else min_pixels
    hi = IMAGE_MAX_TOKEN_NUM * factor**2 if max_pixels is None else max_pixels
    if hi < lo:
        raise ValueError(f"max_pixels ({hi}) is below min_pixels ({lo}): give a max_pixels of at least min_pixels")
    if min(height, width) < 1:
        raise ValueError(f"a frame of {height}x{width} pixels has no area")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"absolute aspect ratio must be smaller than {MAX_RATIO}, got {max(height, width) / min(height, width)}")
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > hi:
        beta = math.sqrt(height * width / hi)
        h_bar = max(factor, _floor_by(height / beta, factor))
        w_bar = max(factor, _floor_by(width / beta, factor))
    elif h_bar * w_bar < lo:
        beta = math.sqrt(lo / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return h_bar, w_bar


def smart_nframes(ele: Mapping[str, Any], total_frames: int, video_fps: float) -> int:
    """How many frames qwen-vl-utils 0.0.14 takes from ``total_frames`` frames at ``video_fps`` (``nframes``, or ``fps``
    clamped to ``[min_frames, max_frames]``), an even number; a ``ValueError`` where that is not in ``[2, total_frames]``.

    >>> smart_nframes({"fps": 0.5}, 300, 10.0), smart_nframes({"nframes": 5}, 300, 10.0), smart_nframes({}, 21, 10.0)
    (14, 4, 4)
    """
    if "nframes" in ele and "fps" in ele:
        raise ValueError("video element: give either nframes or fps, not both (as qwen-vl-utils)")
    if "nframes" in ele:
        nframes = _round_by(ele["nframes"], FRAME_FACTOR)
    else:
        fps = ele.get("fps", DEFAULT_FPS)
        min_frames = _ceil_by(ele.get("min_frames", FPS_MIN_FRAMES), FRAME_FACTOR)
        max_frames = _floor_by(ele.get("max_frames", min(FPS_MAX_FRAMES, total_frames)), FRAME_FACTOR)
        wanted = min(min(max(total_frames / video_fps * fps, min_frames), max_frames), total_frames)
        nframes = _floor_by(wanted, FRAME_FACTOR)
    if not FRAME_FACTOR <= nframes <= total_frames:
        raise ValueError(f"video element: the frame count must lie in [{FRAME_FACTOR}, {total_frames}] (the frames in range), got {nframes} from {dict(ele)!r}")
    return nframes


def frame_range(ele: Mapping[str, Any], total_frames: int, video_fps: float) -> tuple[int, int]:
    """The first and last source frame (presentation order) of ``video_start``..``video_end`` seconds, as qwen-vl-utils 0.0.14 computes them.

    >>> frame_range({"video_start": 10, "video_end": 12}, 300, 10.0), frame_range({"video_start": 25}, 300, 10.0)
    ((100, 120), (250, 299))
    """
    start, end = ele.get("video_start"), ele.get("video_end")
    if start is None and end is None:
        return 0, total_frames - 1
    longest = total_frames / video_fps
    first = math.ceil(max(0.0, min(start, longest)) * video_fps) if start is not None else 0
    last = min(math.floor(max(0.0, min(end, longest)) * video_fps), total_frames - 1) if end is not None else total_frames - 1
    if first >= last:
        raise ValueError(
            f"video element: video_start={start!r} s to video_end={end!r} s holds no frames of this {longest:.2f}-s video ({total_frames} frames at {video_fps:g} fps)"
        )
    return first, last


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

    _check_element(ele, "image")
    factor = image_patch_size * SPATIAL_MERGE_SIZE
    image = _load_image(ele.get("image", ele.get("image_url")))
    if isinstance(image, dict):  # pragma: no cover - {"url": ...} elements
        image = _load_image(image.get("url"))
    image = image.convert("RGB")
    if "resized_height" in ele and "resized_width" in ele:
        h, w = smart_resize(int(ele["resized_height"]), int(ele["resized_width"]), factor)
    else:
        lo = ele.get("min_pixels", IMAGE_MIN_TOKEN_NUM * factor * factor)
        hi = ele.get("max_pixels", IMAGE_MAX_TOKEN_NUM * factor * factor)
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
    min_pixels = ele.get("min_pixels", VIDEO_MIN_TOKEN_NUM * factor * factor)
    total_pixels = ele.get("total_pixels", MODEL_SEQ_LEN * factor * factor * 0.9)
    max_pixels = max(min(VIDEO_MAX_TOKEN_NUM * factor * factor, total_pixels / n * FRAME_FACTOR), int(min_pixels * 1.05))
    max_pixels = min(ele.get("max_pixels", max_pixels), max_pixels)
    if "resized_height" in ele and "resized_width" in ele:
        h, w = smart_resize(int(ele["resized_height"]), int(ele["resized_width"]), factor)
    else:
        try:
            h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
        except ValueError as exc:
            raise ValueError(f"video element (min_pixels, max_pixels, total_pixels): {exc}") from None
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
    from frameselect._engine.plan import resolve
    from frameselect.errors import ConfigError
    from frameselect.integrations.bridge import select_frames
    from frameselect.parts import check_budget
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
        _check_element(ele, "video")
        video = ele["video"]
        if isinstance(video, str):
            path = _local_video(video)
            request = (chosen or {}).get(path)
            if request is None:
                if sel is None:
                    sel = resolve("selectors", selector, **dict(selector_params or {}))
                    enc = resolve("encoders", encoder, **dict(encoder_params or {})) if encoder is not None else None
                sample = Sample(id=path, video=path, query=Query(text=texts.get(id(ele), "")))
                restrict = (
                    functools.partial(_restrict, ele, pool, check_budget(k, error=ConfigError, hint="k="))
                    if any(key in ele for key in (*_COUNT_KEYS, *_WINDOW_KEYS))
                    else None
                )
                request = select_frames(
                    sample, sel, check_budget(k, error=ConfigError, hint="k="), encoder=enc, pool=pool, seed=seed, cache_dir=cache_dir, restrict=restrict
                )
            elif any(ele.get(key) is not None for key in _WINDOW_KEYS):
                raise ValueError(f"video element of {path}: video_start/video_end cannot apply to frames already selected over the whole video")
            frames = request.frames()
            stamps = request.timestamps
            tensor = video_tensor(frames, ele, image_patch_size)
            rate = mean_rate(stamps)
            meta = _metadata(request, len(tensor))
        elif isinstance(video, list | tuple) and video:  # a list of frames, used as given
            frames = [np.asarray(_load_image(f).convert("RGB")) for f in video]
            tensor = video_tensor(frames, ele, image_patch_size)
            rate = float(ele.get("sample_fps", DEFAULT_FPS))
            meta = {"fps": rate, "frames_indices": list(range(len(tensor))), "total_num_frames": len(tensor)}
        else:
            raise ValueError(f"video element: video must be a local path or a non-empty list of frames, got {video!r:.80}")
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


def _local_video(video: str) -> str:
    """The local file a video element names (``file://`` removed); any other address is refused, never opened."""
    path = video.removeprefix("file://")
    if "://" in path or path.startswith("data:"):
        raise ValueError(f"video element: {video!r:.80} is not a local file; frameselect's process_vision_info reads local videos only (download it first)")
    if not os.path.isfile(path):
        raise ValueError(f"video element: {path!r} is not a file")
    return path


def _restrict(ele: Mapping[str, Any], policy: str, k: int, pool: Any, info: Any) -> tuple[Any, int]:
    """The candidates within ``video_start``..``video_end`` and the frame count qwen-vl-utils would take there (the budget)."""
    from frameselect.types import CandidatePool

    total = len(info.pts)
    video_fps = total / info.duration if info.duration > 0 else DEFAULT_FPS
    first, last = frame_range(ele, total, video_fps)
    budget = smart_nframes(ele, last - first + 1, video_fps) if any(key in ele for key in _COUNT_KEYS) else None
    if (first, last) != (0, total - 1):
        index = np.round(np.asarray(pool.timestamps) * video_fps)
        keep = (index >= first) & (index <= last)
        pool = CandidatePool(
            video_id=pool.video_id,
            timestamps=np.asarray(pool.timestamps)[keep],
            frame_indices=np.asarray(pool.frame_indices)[keep],
            policy=f"{pool.policy}|frames={first}-{last}",
            duration=pool.duration,
            source=pool.source,
        )
        if len(pool) == 0:
            raise ValueError(f"video element: no candidate of pool={policy!r} lies in video_start..video_end (frames {first}-{last}); use a denser pool")
    if budget is not None and budget > len(pool):
        raise ValueError(
            f"video element: {budget} frames asked for (nframes/fps/min_frames/max_frames) but the candidate pool ({policy!r}) holds {len(pool)} "
            "in range; pass a denser pool (e.g. pool='all') or ask for fewer frames"
        )
    return pool, budget if budget is not None else k


def _metadata(request: Any, n: int) -> dict[str, Any]:
    """Source frame rate and source indices of the frames chosen (the last repeated where padded)."""
    pool = request.pool
    idx = [int(pool.frame_indices[i]) for i in request.selection.indices]
    idx += [idx[-1]] * (n - len(idx))
    stamps = request.timestamps
    src_fps = (idx[-1] - idx[0]) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] and idx[-1] > idx[0] else DEFAULT_FPS
    total = round(pool.duration * src_fps) if pool.duration else int(pool.frame_indices[-1]) + 1
    return {"fps": float(src_fps), "frames_indices": idx, "total_num_frames": total, "video_backend": "pyav"}
