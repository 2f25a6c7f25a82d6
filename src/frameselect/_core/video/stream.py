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
import queue
import re
import signal
import threading
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

#: a step back of the stream's clock larger than this (seconds) is a restart (two MPEG-TS segments joined), not a late frame
CLOCK_RESTART = 1.0

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


@dataclass
class _ReadState:
    """What one reading of a stream learns as it goes: how it ended, clock restarts, damaged packets."""

    end: str = ""
    restarts: int = 0
    damaged: int = 0
    #: when the last packet came (``time.monotonic()``): an error ``timeout`` seconds after it is a stall, whatever FFmpeg calls it
    last_data: float = field(default_factory=_time.monotonic)


class LiveSource:
    """Frames of ``url`` as they arrive: ``for frame in LiveSource("udp://127.0.0.1:5000", fps=2): ...``.

    An address (``scheme:...``) is opened with the network protocols of
    :data:`NETWORK_PROTOCOLS` only (``options={"protocol_whitelist": ...}``
    names others); anything else, and a ``file:`` address, is a local file,
    opened as that one file (:func:`~frameselect._core.video.container.open_local`).

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
        #: how the last reading ended (e.g. ``"the stream ended after 60 frames"``), set when it ends; None before
        self.ended: str | None = None

    def _open(self) -> Any:
        import av

        from frameselect._core.video.container import open_local

        # The timeout is FFmpeg's own ``rw_timeout`` (microseconds, for the open and for every
        # read), not PyAV's ``timeout=``: PyAV's interrupt callback takes the GIL every few
        # milliseconds from inside FFmpeg, and a reader thread still blocked in an open or a
        # stalled read when the interpreter exits (after a Ctrl-C) then crashes the process.
        timed = {"rw_timeout": str(round(self.timeout * 1e6)), **self.options}
        try:
            if is_address(self.url):
                container = av.open(self.url, options={"protocol_whitelist": NETWORK_PROTOCOLS, **timed})
            else:
                local = self.url.removeprefix("file://") if self.url.startswith("file://") else self.url.removeprefix("file:")
                container = open_local(local, options=timed)
        except (av.error.FFmpegError, OSError) as exc:
            raise VideoError(self.url, f"cannot open the stream ({exc}); check the address and that it is playing") from exc
        if not container.streams.video:
            container.close()
            raise VideoError(self.url, "the stream carries no video")
        return container

    def _read(self, stop: threading.Event, state: _ReadState) -> Iterator[tuple[Any, float, float, float]]:
        """``(av frame, stream clock seconds, pts seconds, duration seconds)`` of every decoded frame (run by the reader thread).

        The stream clock is the frames' presentation time, carried on across a
        restart (a step back of more than :data:`CLOCK_RESTART` seconds, as
        where two MPEG-TS segments meet): the frames after it follow the frame
        before it by one frame step. How the stream ended is left in
        ``state.end`` (a read error after frames had come is the stream's end,
        not a failure: a server that closes the connection ends it so).
        """
        import av

        container = self._open()
        count = 0
        try:
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"  # frame threading would hold frames back
            start_wall: float | None = None
            first: float | None = None
            offset = 0.0
            last: float | None = None  # the last frame's stream clock
            gap = 0.0  # the last step between frames

            def frames_of(packet: Any) -> list[Any]:
                try:
                    return list(stream.decode(packet))
                except av.error.FFmpegError:
                    state.damaged += 1  # a damaged packet of a live stream: its frames are lost, the stream goes on
                    return []

            def timed(frames: list[Any]) -> Iterator[tuple[Any, float, float, float]]:
                nonlocal start_wall, first, offset, last, gap, count
                for frame in frames:
                    if frame.pts is None:
                        continue
                    base = frame.time_base or stream.time_base
                    raw = float(frame.pts * base)
                    duration = float(frame.duration * base) if getattr(frame, "duration", None) else 0.0
                    t = raw + offset
                    if last is not None and t < last - CLOCK_RESTART:
                        offset += last + (gap or duration or 0.0) - t
                        t = raw + offset
                        state.restarts += 1
                    if last is not None and t > last:
                        gap = t - last
                    last = t if last is None else max(last, t)
                    if self.realtime:
                        if start_wall is None or first is None:
                            start_wall, first = _time.monotonic(), t
                        wait = start_wall + (t - first) / self.speed - _time.monotonic()
                        if wait > 0 and stop.wait(wait):
                            return
                    count += 1
                    yield frame, t, raw, duration

            try:
                for packet in container.demux(stream):
                    state.last_data = _time.monotonic()
                    if stop.is_set():
                        state.end = "stopped by its reader"
                        return
                    yield from timed(frames_of(packet))  # the last, empty packet flushes the decoder
                state.end = "the stream ended"
            except av.error.FFmpegError as exc:
                if count == 0:
                    raise VideoError(self.url, f"the stream gave no frame before it failed ({exc}); check the address and that it is playing") from exc
                if isinstance(exc, (av.error.ExitError, TimeoutError)) or _time.monotonic() - state.last_data >= self.timeout:
                    state.end = f"no data for {self.timeout:g} s: the stream is taken to have ended"
                else:
                    state.end = f"the stream ended when its connection closed ({exc.strerror or exc})"
                if not stop.is_set():
                    try:
                        yield from timed(list(stream.decode(None)))  # the frames the decoder still holds
                    except av.error.FFmpegError:
                        pass
        finally:
            container.close()

    def _decoded(self) -> Iterator[tuple[Any, float, float, float]]:
        """What :meth:`_read` gives, read by a thread of its own, so that a signal reaches the caller at once.

        The caller waits on a queue in short steps: a Ctrl-C while the stream
        opens or stalls raises ``KeyboardInterrupt`` here within a tenth of a
        second (FFmpeg's blocking reads would hold it for the whole timeout).
        Leaving the loop asks the reader to stop; a reader blocked in a read
        ends by itself at its next frame or after ``timeout``.
        """
        state = _ReadState()
        self.ended = None
        items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=64)
        stop = threading.Event()

        def put(item: tuple[str, Any]) -> bool:
            while not stop.is_set():
                try:
                    items.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def reader() -> None:
            if hasattr(signal, "pthread_sigmask"):  # signals go to the caller's thread, never into FFmpeg's reads here
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            try:
                for item in self._read(stop, state):
                    if not put(("frame", item)):
                        return
                put(("end", None))
            except BaseException as exc:  # handed to the caller's thread, which raises it
                put(("error", exc))

        thread = threading.Thread(target=reader, name="frameselect-live-reader", daemon=True)
        thread.start()
        count = 0
        how = "stopped by its reader"
        try:
            while True:
                try:
                    kind, item = items.get(timeout=0.1)
                except queue.Empty:
                    continue
                if kind == "error":
                    how = f"failed: {item}"
                    raise item
                if kind == "end":
                    how = state.end or "the stream ended"
                    return
                count += 1
                yield item
        except KeyboardInterrupt:
            how = "interrupted"
            raise
        finally:
            stop.set()
            thread.join(timeout=0.05)
            notes = [f"{how} after {count} decoded frame{'s' if count != 1 else ''}"]
            if state.restarts:
                notes.append(f"its clock restarted {state.restarts} time{'s' if state.restarts != 1 else ''} (the times after a restart go on from before it)")
            if state.damaged:
                notes.append(f"{state.damaged} damaged packet{'s' if state.damaged != 1 else ''} skipped")
            self.ended = "; ".join(notes)

    def __iter__(self) -> Iterator[StreamFrame]:
        if self.fps is None:
            t0: float | None = None
            last: float | None = None
            for frame, t, raw, _ in self._decoded():
                if last is not None and t <= last:
                    continue  # a repeated or out-of-order timestamp: the stream clock must increase
                t0 = t if t0 is None else t0
                last = t
                yield StreamFrame(frame.to_ndarray(format="rgb24"), t - t0, raw, _time.monotonic())
            return
        yield from self._sampled(float(self.fps))

    def _sampled(self, rate: float) -> Iterator[StreamFrame]:
        t0: float | None = None
        prev: tuple[Any, float, float, float] | None = None
        emitted: float | None = None  # pts of the last frame handed out
        gap = 0.0  # the last step between frames: a frame's duration when the stream does not say it
        j = 0
        for frame, t, raw, duration in self._decoded():
            if prev is not None and t <= prev[1]:
                continue
            if prev is not None:
                gap = t - prev[1]
            if t0 is None:
                t0 = t
            while prev is not None and t > t0 + j / rate + 1e-9:  # prev is the frame on screen at target j
                if emitted != prev[1]:
                    emitted = prev[1]
                    yield StreamFrame(prev[0].to_ndarray(format="rgb24"), prev[1] - t0, prev[2], _time.monotonic())
                j += 1
            prev = (frame, t, raw, duration)
        if prev is None or t0 is None:
            return
        # after the last frame: the targets before the stream's end show it (the end: its time plus its duration)
        end = prev[1] + (prev[3] or gap)
        if emitted != prev[1] and t0 + j / rate < end - 1e-9:
            yield StreamFrame(prev[0].to_ndarray(format="rgb24"), prev[1] - t0, prev[2], _time.monotonic())


def replay_file(path: str | os.PathLike[str], *, fps: float | None = None, speed: float = 1.0) -> LiveSource:
    """A file played as a live stream: frames handed out no sooner than their timestamps, at ``speed`` times real time."""
    if not os.path.exists(os.fspath(path)):
        from frameselect.errors import VideoNotFoundError

        raise VideoNotFoundError(os.fspath(path), "no such file")
    return LiveSource(path, fps=fps, realtime=True, speed=speed)
