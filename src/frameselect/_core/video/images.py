"""Frames written as image files (PNG or JPEG) with PyAV's encoders: no imaging library needed."""

from __future__ import annotations

import fractions
import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["IMAGE_FORMATS", "encode_image", "write_image"]

#: image formats and the PyAV codec and pixel format that write them
IMAGE_FORMATS: dict[str, tuple[str, str]] = {"png": ("png", "rgb24"), "jpg": ("mjpeg", "yuvj444p"), "jpeg": ("mjpeg", "yuvj444p")}


def encode_image(frame: NDArray[np.uint8], fmt: str = "png", quality: int = 90) -> bytes:
    """One RGB frame (H, W, 3 uint8) as the bytes of a PNG or JPEG file (``quality`` 1-100, JPEG only)."""
    import av

    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"image format {fmt!r}: known formats are {', '.join(IMAGE_FORMATS)}")
    array = np.ascontiguousarray(frame)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(f"a frame is an (H, W, 3) uint8 RGB array, got shape {array.shape} and dtype {array.dtype}")
    codec_name, pix_fmt = IMAGE_FORMATS[fmt]
    from av.video.codeccontext import VideoCodecContext

    codec = av.CodecContext.create(codec_name, "w")
    assert isinstance(codec, VideoCodecContext)
    codec.width, codec.height, codec.pix_fmt = array.shape[1], array.shape[0], pix_fmt
    codec.time_base = fractions.Fraction(1, 1)
    if codec_name == "mjpeg":  # the JPEG quantiser: 2 (best) to 31, from a 1-100 quality
        scale = int(round(2 + (100 - min(max(quality, 1), 100)) * 29 / 99))
        codec.options = {"qmin": str(scale), "qmax": str(scale)}
    image = av.VideoFrame.from_ndarray(array, format="rgb24").reformat(format=pix_fmt)
    packets = [*codec.encode(image), *codec.encode(None)]
    return b"".join(bytes(p) for p in packets)


def write_image(path: str | os.PathLike[str], frame: NDArray[np.uint8], quality: int = 90) -> Path:
    """``frame`` written to ``path`` as PNG or JPEG (by its extension: .png, .jpg, .jpeg); returns the path."""
    out = Path(path)
    fmt = out.suffix.lower().lstrip(".")
    out.write_bytes(encode_image(frame, fmt, quality))
    return out
