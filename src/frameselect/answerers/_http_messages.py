"""What the OpenAI-compatible answerer sends (frames as PNG or JPEG data URLs, the chat messages of a question over one video or several) and reads back (a chat completion)."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.windows import WindowRequest
from frameselect.answerers.base import AnswerRequest, option_letters, size_groups
from frameselect.types import Query

if TYPE_CHECKING:
    pass


__all__ = [
    "chat_completion",
    "build_messages",
    "build_messages_across",
    "build_messages_mvu_eval",
    "encode_image",
    "encode_png",
    "fit_side",
    "question_text",
    "video_parts",
]

_MC_INSTRUCTION = "Answer with the option's letter from the given choices directly."
_OPEN_INSTRUCTION = "Answer the question briefly."
_MVU_EVAL_INSTRUCTION = "Please select the correct answer from the options. Answer with the option\u2019s letter directly."


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def encode_png(rgb: NDArray[np.uint8], level: int = 6) -> bytes:
    """An 8-bit RGB PNG of an (H, W, 3) uint8 array, with the standard library only.

    Every scan line uses filter type 0 (none); zlib does the compression.

    >>> data = encode_png(np.zeros((2, 3, 3), dtype=np.uint8))
    >>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n", struct.unpack(">II", data[16:24])
    (True, (3, 2))
    """
    arr = np.ascontiguousarray(rgb, dtype=np.uint8)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"encode_png takes an (H, W, 3) uint8 frame, got shape {arr.shape}")
    height, width = arr.shape[:2]
    scanlines = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # leading 0: filter "none"
    scanlines[:, 1:] = arr.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, no filter/interlace choice
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(scanlines.tobytes(), level)) + _png_chunk(b"IEND", b"")


def _pillow_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def encode_image(rgb: NDArray[np.uint8], image_format: str = "png", jpeg_quality: int = 90) -> str:
    """A ``data:`` URL of one RGB frame, as PNG or JPEG (JPEG needs Pillow)."""
    if image_format == "png":
        return "data:image/png;base64," + base64.b64encode(encode_png(rgb)).decode("ascii")
    if image_format == "jpeg":
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), mode="RGB").save(buf, format="JPEG", quality=jpeg_quality)
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    raise ValueError(f"unknown image_format {image_format!r}; use 'jpeg', 'png' or 'auto'")


def question_text(query: Query, windows: WindowRequest | None = None) -> str:
    """The question, its lettered options and the answering instruction (and the request for time windows, if ``windows``)."""
    lines = [f"Question: {query.text}"]
    if query.options:
        lines.append("Options:")
        lines.extend(f"{letter}. {option}" for letter, option in zip(option_letters(len(query.options)), query.options, strict=True))
        lines.append(_MC_INSTRUCTION)
    elif windows is None:
        lines.append(_OPEN_INSTRUCTION)
    if windows is not None:
        lines.append(windows.instruction(bool(query.options)))
    return "\n".join(lines)


def build_messages(
    query: Query, timestamps: Sequence[float], image_urls: Sequence[str], system_prompt: str | None = None, windows: WindowRequest | None = None
) -> list[dict[str, Any]]:
    """Chat-completions ``messages``: each frame after its time, then the question (asking for ``windows`` if given)."""
    if len(timestamps) != len(image_urls):
        raise ValueError(f"{len(timestamps)} timestamps for {len(image_urls)} frames")
    return _user_turn(_frame_parts(timestamps, image_urls), query, system_prompt, windows)


def build_messages_across(
    query: Query,
    videos: Sequence[tuple[str, Sequence[float], Sequence[str]]],
    system_prompt: str | None = None,
    windows: WindowRequest | None = None,
) -> list[dict[str, Any]]:
    """``messages`` for several videos: ``(label, timestamps, image_urls)`` per video, each a group of its frames, then the question."""
    content: list[dict[str, Any]] = []
    for label, timestamps, urls in videos:
        if len(timestamps) != len(urls):
            raise ValueError(f"{label}: {len(timestamps)} timestamps for {len(urls)} frames")
        content.append({"type": "text", "text": f"{label}:"})
        content += _frame_parts(timestamps, urls)
    return _user_turn(content, query, system_prompt, windows)


def build_messages_mvu_eval(query: Query, videos: Sequence[tuple[str, Sequence[str]]], system_prompt: str | None = None) -> list[dict[str, Any]]:
    """``messages`` in MVU-Eval's layout: ``(file name, image_urls)`` per video, then question, instruction and options.

    As ``build_messages_base`` in NJU-LINK/MVU-Eval@a5937ad ``inference/main.py``:
    a text part ``[Video i] <file name>`` before each video's frames (no times),
    then three text parts: the question, the instruction, the options one a line
    (``"A. text"``; a question without options has neither).
    """
    content: list[dict[str, Any]] = []
    for i, (name, urls) in enumerate(videos):
        content.append({"type": "text", "text": f"[Video {i + 1}] {name}"})
        content += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    content.append({"type": "text", "text": query.text})
    if query.options:
        content.append({"type": "text", "text": _MVU_EVAL_INSTRUCTION})
        lines = [f"{letter}. {option}" for letter, option in zip(option_letters(len(query.options)), query.options, strict=True)]
        content.append({"type": "text", "text": "\n".join(lines)})
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": content})
    return messages


def _video_names(request: AnswerRequest) -> list[str]:
    """The names MVU-Eval's prompt shows: the sample's ``metadata["video_paths"]`` (the ``mvu_eval`` loader keeps them), else each file's name."""
    refs = request.sample.video_refs
    given = request.sample.metadata.get("video_paths")
    if isinstance(given, (list, tuple)) and len(given) == len(refs) and all(isinstance(n, str) for n in given):
        return [str(n) for n in given]
    return [os.path.basename(ref.path) for ref in refs]


def _frame_parts(timestamps: Sequence[float], image_urls: Sequence[str]) -> list[dict[str, Any]]:
    """Each frame after its time, as ``content`` parts."""
    content: list[dict[str, Any]] = []
    for t, url in zip(timestamps, image_urls, strict=True):
        content.append({"type": "text", "text": f"Frame at {t:.1f}s:"})
        content.append({"type": "image_url", "image_url": {"url": url}})
    return content


def fit_side(rgb: NDArray[np.uint8], max_side: int) -> NDArray[np.uint8]:
    """``rgb`` shrunk so its longer side is at most ``max_side`` (aspect ratio kept, sides truncated), else as it is.

    The rule of MVU-Eval's ``encode_video`` (NJU-LINK/MVU-Eval a5937ad, ``inference/main.py``,
    its ``--max_pixels`` 720): ``int(max_side * side / longer side)`` for each side. The
    resampling is Pillow's bicubic (the script has decord resize as it decodes).

    >>> fit_side(np.zeros((1080, 1920, 3), np.uint8), 720).shape
    (405, 720, 3)
    """
    height, width = int(rgb.shape[0]), int(rgb.shape[1])
    longer = max(height, width)
    if longer <= max_side:
        return rgb
    from PIL import Image

    size = (max(1, int(max_side * width / longer)), max(1, int(max_side * height / longer)))
    return np.asarray(Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), mode="RGB").resize(size, Image.Resampling.BICUBIC))


def video_parts(timestamps: Sequence[float], frames: Sequence[NDArray[np.uint8]], jpeg_quality: int = 90) -> list[dict[str, Any]]:
    """One video's frames as ``video_url`` parts: vLLM's frame-list form, ``data:video/jpeg;base64,<frame>,<frame>,...``.

    Frames of several sizes (a mixed-resolution selection) go as one video per size
    (:func:`~frameselect.answerers.base.size_groups`), each after a line naming its
    frames' times.
    """
    if len(timestamps) != len(frames):
        raise ValueError(f"{len(timestamps)} timestamps for {len(frames)} frames")
    content: list[dict[str, Any]] = []
    for members in size_groups(frames):
        data = ",".join(encode_image(frames[i], "jpeg", jpeg_quality).split(",", 1)[1] for i in members)
        times = ", ".join(f"{timestamps[i]:.1f}s" for i in members)
        content.append({"type": "text", "text": f"Video of {len(members)} frames at {times}:"})
        content.append({"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + data}})
    return content


def _user_turn(content: list[dict[str, Any]], query: Query, system_prompt: str | None, windows: WindowRequest | None) -> list[dict[str, Any]]:
    """``messages``: the system prompt if any, then one user turn of ``content`` followed by the question."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": [*content, {"type": "text", "text": question_text(query, windows)}]})
    return messages


def chat_completion(reply: Any, url: str) -> tuple[str, int, int, str | None]:
    """Text, prompt tokens, completion tokens and model of a chat-completions reply.

    Raises :class:`ValueError` naming what is missing when ``reply`` is not one.
    """
    if not isinstance(reply, dict):
        raise ValueError(f"reply from {url} is not a JSON object")
    if reply.get("object", "chat.completion") != "chat.completion":
        raise ValueError(f"reply from {url} is a {str(reply.get('object'))[:40]!r}, not a chat.completion")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        raise ValueError(f"reply from {url} has no choices[0].message")
    message = choices[0]["message"]
    if message.get("role", "assistant") != "assistant":
        raise ValueError(f"reply from {url} is not an assistant message")
    content = message.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    elif content is not None and not isinstance(content, str):
        raise ValueError(f"reply from {url} has a message content of type {type(content).__name__}")
    usage = reply.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError(f"reply from {url} has a malformed usage field")
    try:
        prompt_tokens, completion_tokens = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        raise ValueError(f"reply from {url} has non-integer token counts") from None
    model = reply.get("model")
    return (content or "").strip(), prompt_tokens, completion_tokens, str(model) if model else None
