"""Write small synthetic videos with PyAV (tests, the tiny built-in dataset)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["write_video", "write_frames"]


def write_frames(
    path: str | os.PathLike[str],
    frames: Iterable[NDArray[np.uint8]],
    *,
    fps: float = 10.0,
    pts: Iterable[int] | None = None,
    time_base: Fraction | None = None,
    codec: str = "libx264",
    gop: int = 12,
    crf: int = 23,
    options: Mapping[str, str] | None = None,
    container_options: Mapping[str, str] | None = None,
    rotation: int = 0,
) -> Path:
    """Encode RGB frames to ``path`` (written atomically).

    With ``pts`` (in units of ``time_base``) the file gets exactly those
    presentation timestamps, so variable-frame-rate files can be written.
    ``options`` are extra encoder options, added to (or overriding) the
    defaults. libx264 runs without lookahead (``rc-lookahead=0``), which makes
    its output byte-identical from call to call (with the lookahead on, the
    first GOP can vary). ``container_options`` go to the muxer (e.g.
    ``{"movflags": "faststart"}``); ``rotation`` writes a display matrix that
    turns the frames counter-clockwise by that many degrees, as phones do.
    """
    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix or ".mp4")
    os.close(fd)
    pts_iter = iter(pts) if pts is not None else None
    rate = Fraction(fps).limit_denominator(1000)
    try:
        with av.open(tmp, mode="w", options=dict(container_options or {})) as container:
            stream: Any = container.add_stream(codec, rate=rate)
            if rotation:
                stream.set_display_rotation(rotation)
            stream.pix_fmt = "yuv420p"
            stream.codec_context.gop_size = gop
            if codec == "libx264":
                # no lookahead: libx264's output is then byte-identical from call to call
                stream.options = {"crf": str(crf), "preset": "veryfast", "bf": "2", "rc-lookahead": "0", **dict(options or {})}
            elif options:
                stream.options = dict(options)
            if time_base is not None:
                stream.codec_context.time_base = time_base
                stream.time_base = time_base
            first = True
            for i, rgb in enumerate(frames):
                rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
                if first:
                    stream.width, stream.height = rgb.shape[1], rgb.shape[0]
                    first = False
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                if pts_iter is not None:
                    frame.pts = int(next(pts_iter))
                    frame.time_base = time_base or stream.codec_context.time_base
                else:
                    frame.pts = i
                    frame.time_base = Fraction(1, 1) / rate
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_video(
    path: str | os.PathLike[str],
    n_frames: int,
    draw: Callable[[int], NDArray[np.uint8]],
    *,
    fps: float = 10.0,
    codec: str = "libx264",
    gop: int = 12,
) -> Path:
    """Encode ``n_frames`` frames produced by ``draw(i)``; frames are generated lazily."""
    return write_frames(path, (draw(i) for i in range(n_frames)), fps=fps, codec=codec, gop=gop)
