"""Frames of a live stream as they arrive, and files replayed at the speed they play.

:class:`LiveSource` opens anything FFmpeg opens (``udp://``, ``http://``,
``rtsp://``, ``srt://``, a file) with PyAV and yields each frame as soon as it
is decoded, with the stream's own clock: its presentation timestamp in
seconds (``pts_time``) and the time since the stream's first frame (``time``).
With ``fps=R`` it samples the stream as pools of files are sampled (the frame
on screen at each target ``t0 + j/R``, ``t0`` the first frame's time; repeated
frames dropped), deciding each target as soon as the next frame shows that
no later frame can be on screen at it. With ``realtime=True`` it paces the
frames by their timestamps (a file replayed as if it were live):
:func:`replay_file`.

PyAV is imported when a stream is opened, never on import.
"""

from __future__ import annotations

import math
import os
import re
import time as _time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import VideoError

__all__ = ["LOW_LATENCY", "NETWORK_PROTOCOLS", "LiveSource", "StreamFrame", "is_address", "replay_file"]

#: FFmpeg options a live source opens with unless told otherwise: probe half a second of the
#: stream (FFmpeg's default may wait seconds before handing out the first frame)
LOW_LATENCY: dict[str, str] = {"probesize": "32768", "analyzeduration": "500000"}

#: the FFmpeg protocols a stream address may use unless ``options`` names its own ``protocol_whitelist``:
#: network protocols only, so a stream (or a playlist it serves) never reads a local file
NETWORK_PROTOCOLS = "http,https,httpproxy,tls,tcp,udp,rtp,srtp,rtsp,rtmp,rtmps,rtmpt,rtmpts,srt,crypto"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def is_address(url: str) -> bool:
    """Whether ``url`` names a protocol (``udp://...``, ``http://...``); a plain path (or ``C:\\...``) does not."""
    return bool(_SCHEME.match(url)) and not url.lower().startswith("file:")


@dataclass(frozen=True)
class StreamFrame:
    """One frame of a stream: RGB pixels, its stream time (seconds since the first frame) and its presentation time."""

    image: NDArray[np.uint8] = field(repr=False)
    time: float
    pts_time: float
    #: when the frame was handed out (``time.monotonic()``), to measure how far behind the stream a reader runs
    arrived: float = 0.0


class LiveSource:
    """Frames of ``url`` as they arrive: ``for frame in LiveSource("udp://127.0.0.1:5000", fps=2): ...``.

    An address (``scheme:...``) is opened with the network protocols of
    :data:`NETWORK_PROTOCOLS` only (``options={"protocol_whitelist": ...}``
    names others); anything else, and a ``file:`` address, is a local file,
    opened as that one file (:func:`~frameselect.video.container.open_local`).

    ``fps``: sample at this rate (``None``: every frame); ``realtime``: pace
    frames by their timestamps at ``speed`` times real time (for files; a
    live stream paces itself); ``options``: FFmpeg demuxer/protocol options
    (e.g. ``{"fifo_size": "100000"}`` for UDP), added to :data:`LOW_LATENCY`; ``timeout``: seconds to wait
    for the stream to open and for each read. Iterating opens the stream
    anew, so a source can be read more than once (a live stream then gives
    what it plays at that moment).
    """

    def __init__(
        self,
        url: str | os.PathLike[str],
        *,
        fps: float | None = None,
        realtime: bool = False,
        speed: float = 1.0,
        options: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        if fps is not None and not (isinstance(fps, (int, float)) and math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps={fps!r}: give a positive number of frames per second, or None for every frame")
        if not (isinstance(speed, (int, float)) and math.isfinite(speed) and speed > 0):
            raise ValueError(f"speed={speed!r}: give a positive factor (1 = real time)")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout={timeout!r}: give a positive number of seconds")
        self.url = os.fspath(url)
        self.fps = fps
        self.realtime = realtime
        self.speed = speed
        self.options = {**LOW_LATENCY, **dict(options or {})}
        self.timeout = float(timeout)

    def _open(self) -> Any:
        import av

        from frameselect.video.container import open_local

        try:
            if is_address(self.url):
                options = {"protocol_whitelist": NETWORK_PROTOCOLS, **self.options}
                container = av.open(self.url, options=options, timeout=self.timeout)
            else:
                local = self.url.removeprefix("file://") if self.url.startswith("file://") else self.url.removeprefix("file:")
                container = open_local(local, options=self.options, timeout=self.timeout)
        except (av.error.FFmpegError, OSError) as exc:
            raise VideoError(self.url, f"cannot open the stream ({exc}); check the address and that it is playing") from exc
        if not container.streams.video:
            container.close()
            raise VideoError(self.url, "the stream carries no video")
        return container

    def _decoded(self) -> Iterator[tuple[Any, float, float]]:
        """``(av frame, pts seconds, duration seconds)`` of every decoded frame, paced when ``realtime``."""
        import av

        container = self._open()
        try:
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"  # frame threading would hold frames back
            start_wall: float | None = None
            first: float | None = None
            count = 0
            try:
                for frame in container.decode(stream):
                    if frame.pts is None:
                        continue
                    t = float(frame.pts * frame.time_base)
                    duration = float(frame.duration * frame.time_base) if getattr(frame, "duration", None) else 0.0
                    if self.realtime:
                        if start_wall is None or first is None:
                            start_wall, first = _time.monotonic(), t
                        wait = start_wall + (t - first) / self.speed - _time.monotonic()
                        if wait > 0:
                            _time.sleep(wait)
                    count += 1
                    yield frame, t, duration
            except av.error.FFmpegError as exc:
                raise VideoError(self.url, f"the stream broke after {count} frames ({exc})") from exc
        finally:
            container.close()

    def __iter__(self) -> Iterator[StreamFrame]:
        if self.fps is None:
            t0: float | None = None
            last: float | None = None
            for frame, t, _ in self._decoded():
                if last is not None and t <= last:
                    continue  # a repeated or out-of-order timestamp: the stream clock must increase
                t0 = t if t0 is None else t0
                last = t
                yield StreamFrame(frame.to_ndarray(format="rgb24"), t - t0, t, _time.monotonic())
            return
        yield from self._sampled(float(self.fps))

    def _sampled(self, rate: float) -> Iterator[StreamFrame]:
        t0: float | None = None
        prev: tuple[Any, float, float] | None = None
        emitted: float | None = None  # pts of the last frame handed out
        gap = 0.0  # the last step between frames: a frame's duration when the stream does not say it
        j = 0
        for frame, t, duration in self._decoded():
            if prev is not None and t <= prev[1]:
                continue
            if prev is not None:
                gap = t - prev[1]
            if t0 is None:
                t0 = t
            while prev is not None and t > t0 + j / rate + 1e-9:  # prev is the frame on screen at target j
                if emitted != prev[1]:
                    emitted = prev[1]
                    yield StreamFrame(prev[0].to_ndarray(format="rgb24"), prev[1] - t0, prev[1], _time.monotonic())
                j += 1
            prev = (frame, t, duration)
        if prev is None or t0 is None:
            return
        # after the last frame: the targets before the stream's end show it (the end: its time plus its duration)
        end = prev[1] + (prev[2] or gap)
        if emitted != prev[1] and t0 + j / rate < end - 1e-9:
            yield StreamFrame(prev[0].to_ndarray(format="rgb24"), prev[1] - t0, prev[1], _time.monotonic())


def replay_file(path: str | os.PathLike[str], *, fps: float | None = None, speed: float = 1.0) -> LiveSource:
    """A file played as a live stream: frames handed out no sooner than their timestamps, at ``speed`` times real time."""
    if not os.path.exists(os.fspath(path)):
        from frameselect.errors import VideoNotFoundError

        raise VideoNotFoundError(os.fspath(path), "no such file")
    return LiveSource(path, fps=fps, realtime=True, speed=speed)
