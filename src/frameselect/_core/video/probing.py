"""The packet pass over a video: every frame's timestamp, its keyframes, rotation and declared duration.

:func:`probe` reads the container's packets once (no pixel decoding) to learn
every frame's exact presentation timestamp, which is correct on
variable-frame-rate files, then decodes the first frame to prove the stream
decodes. A file whose packets end well before the duration its container
declares (a cut-short file) fails with :class:`TruncatedVideoError`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.video.container import open_container
from frameselect._core.video.counter import DecodeCounter
from frameselect._core.video.slices import dense_thread_type, picture_slices
from frameselect.errors import NoFramesError, TruncatedVideoError

__all__ = ["VideoInfo", "probe", "TRUNCATION_TOLERANCE", "TRUNCATION_SECONDS"]


@dataclass(frozen=True)
class VideoInfo:
    """What the packet pass learnt: every frame's pts, in presentation order.

    ``width`` and ``height`` are the displayed size (after ``rotation``, the
    counter-clockwise angle in degrees, 0/90/180/270, a player turns the
    coded frames by). ``decode_cost[i]``: how many frames must be decoded,
    from the keyframe before it in decoding order, to get frame ``i`` (1 for
    a keyframe; ``None`` when unknown). ``declared_duration``: what the
    container says, ``None`` when it says nothing. ``open_keyframe_pts``:
    the keyframes that open a group of pictures (frames decoded after them
    are shown before them, and may refer to the frames decoded before them);
    ``None`` when unknown.
    """

    path: str
    pts: NDArray[np.int64]
    time_base: Fraction
    duration: float
    width: int
    height: int
    rotation: int = 0
    decode_cost: NDArray[np.int64] | None = None
    declared_duration: float | None = None
    open_keyframe_pts: NDArray[np.int64] | None = None

    @property
    def timestamps(self) -> NDArray[np.float64]:
        return self.pts.astype(np.float64) * float(self.time_base)

    @property
    def keyframe_pts(self) -> NDArray[np.int64] | None:
        """Presentation timestamps of the keyframes, ascending (``None`` when unknown)."""
        if self.decode_cost is None:
            return None
        keys: NDArray[np.int64] = self.pts[self.decode_cost == 1]
        return keys


#: a file is cut short when its packets end this much before the declared duration:
#: the larger of this fraction of the declared duration and ``TRUNCATION_SECONDS``
TRUNCATION_TOLERANCE = 0.02
TRUNCATION_SECONDS = 1.0


def probe(path: str | os.PathLike[str], *, counter: DecodeCounter | None = None) -> VideoInfo:
    """Read every video packet's timestamp (no decoding) and check the first frame decodes.

    Decoded frames are counted in ``counter`` when one is given.

    Raises :class:`TruncatedVideoError` when the packets end more than the
    tolerance (2 % of the declared duration or 1 s, whichever is larger)
    before the duration the container declares.
    """
    import av

    path = os.fspath(path)
    container = open_container(path)
    try:
        stream = container.streams.video[0]
        time_base = stream.time_base or Fraction(1, 1000)
        declared = _declared_duration(container, stream, time_base)
        pts_list: list[int] = []
        durations: list[int] = []
        keys: list[bool] = []
        missing_pts = False
        try:
            for packet in container.demux(stream):
                if packet.size == 0:
                    continue
                if packet.pts is None:
                    missing_pts = True
                    break
                pts_list.append(int(packet.pts))
                durations.append(int(packet.duration or 0))
                keys.append(bool(packet.is_keyframe))
        except av.error.FFmpegError as exc:
            raise TruncatedVideoError(path, f"reading packets failed after {len(pts_list)} frames ({exc})") from exc
        width, height = stream.codec_context.width, stream.codec_context.height
    finally:
        container.close()
    cost: NDArray[np.int64] | None = None
    open_keys: NDArray[np.int64] | None = None
    if missing_pts or not pts_list:
        # Containers without packet timestamps (some AVI): decode to learn them.
        pts_arr, last_duration, rotation = _decode_pts(path, counter or DecodeCounter())
    else:
        order = np.argsort(np.asarray(pts_list, dtype=np.int64), kind="stable")
        pts_arr = np.asarray(pts_list, dtype=np.int64)[order]
        last_duration = int(np.asarray(durations)[order][-1])
        cost = _decode_costs(keys)[order]
        open_keys = _open_keyframes(pts_list, keys)
        rotation = _check_first_frame(path, counter or DecodeCounter())
    if pts_arr.size == 0:
        raise NoFramesError(path, "the video stream holds no decodable frame")
    pts_arr, first = np.unique(pts_arr, return_index=True)
    if cost is not None:
        cost = cost[first] if bool(np.any(cost == 1)) else None
    if last_duration <= 0 and pts_arr.size > 1:
        last_duration = int(np.median(np.diff(pts_arr)))
    duration = float((pts_arr[-1] + max(last_duration, 0)) * time_base) - float(pts_arr[0] * time_base)
    duration = max(duration, 0.0)
    _check_not_cut_short(path, duration, declared)
    if rotation in (90, 270):
        width, height = height, width
    return VideoInfo(
        path=path,
        pts=pts_arr,
        time_base=Fraction(time_base),
        duration=duration,
        width=width,
        height=height,
        rotation=rotation,
        decode_cost=cost,
        declared_duration=declared,
        open_keyframe_pts=open_keys,
    )


def _declared_duration(container: Any, stream: Any, time_base: Fraction) -> float | None:
    """The video stream's duration as the container declares it (seconds).

    Without a stream duration, the container's, but only when the video is
    its only stream (an audio track may run longer than the video).
    """
    if stream.duration is not None and stream.duration > 0:
        return float(stream.duration * time_base)
    if len(container.streams) == 1 and container.duration is not None and container.duration > 0:
        return float(container.duration) / 1_000_000.0
    return None


def _check_not_cut_short(path: str, duration: float, declared: float | None) -> None:
    if declared is None:
        return
    tolerance = max(TRUNCATION_TOLERANCE * declared, TRUNCATION_SECONDS)
    if declared - duration > tolerance:
        raise TruncatedVideoError(
            path,
            f"the container declares {declared:.3f} s of video but only {duration:.3f} s can be read "
            f"({declared - duration:.3f} s missing); the file is cut short",
        )


def _decode_costs(keys: Sequence[bool]) -> NDArray[np.int64]:
    """Per packet (decoding order): frames to decode from the last keyframe up to and including it."""
    out = np.empty(len(keys), dtype=np.int64)
    run = 1  # a stream that does not start on a keyframe: its first frame is not free
    for i, key in enumerate(keys):
        run = 1 if key else run + 1
        out[i] = run
    return out


def _open_keyframes(pts: Sequence[int], keys: Sequence[bool]) -> NDArray[np.int64]:
    """Pts of the keyframes whose group is open: a frame decoded after one is shown before it, or the reverse.

    ``pts`` and ``keys`` are in decoding order. A closed keyframe's group
    refers to nothing decoded before it, and nothing decoded before it is
    shown after it: the frames before it need not be sent to decode the group.
    """
    pts_arr = np.asarray(pts, dtype=np.int64)
    key_arr = np.asarray(keys, dtype=bool)
    key_pts = pts_arr[key_arr]
    group = np.cumsum(key_arr) - 1  # decoding-order group of each packet (-1: before the first keyframe)
    opened = np.zeros(key_pts.size, dtype=bool)
    after = (group >= 0) & ~key_arr
    np.logical_or.at(opened, group[after], pts_arr[after] < key_pts[group[after]])
    shown_later = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(pts_arr)[:-1]])
    opened |= shown_later[key_arr] > key_pts
    result: NDArray[np.int64] = np.unique(key_pts[opened])
    return result


def _rotation(frame: Any) -> int:
    """The display matrix's counter-clockwise rotation, snapped to 0/90/180/270."""
    try:
        degrees = float(frame.rotation or 0)
    except (AttributeError, TypeError, ValueError):
        return 0
    if not math.isfinite(degrees):
        return 0
    return int(round(degrees / 90.0)) % 4 * 90


def _check_first_frame(path: str, counter: DecodeCounter) -> int:
    """Decode the first frame (proves the stream decodes); returns its display rotation."""
    import av

    container = open_container(path)
    try:
        stream = container.streams.video[0]
        try:
            for frame in container.decode(stream):
                counter.add()
                return _rotation(frame)
        except av.error.FFmpegError as exc:
            raise NoFramesError(path, f"the first frame does not decode ({exc})") from exc
    finally:
        container.close()
    raise NoFramesError(path, "the video stream holds no decodable frame")


def _decode_pts(path: str, counter: DecodeCounter) -> tuple[NDArray[np.int64], int, int]:
    import av

    container = open_container(path)
    pts: list[int] = []
    last_duration = 0
    rotation = 0
    try:
        stream = container.streams.video[0]
        stream.thread_type = dense_thread_type(stream.codec_context.name, picture_slices(path))  # a full pass
        try:
            for i, frame in enumerate(container.decode(stream)):
                counter.add()
                if i == 0:
                    rotation = _rotation(frame)
                pts.append(int(frame.pts) if frame.pts is not None else i)
                last_duration = int(getattr(frame, "duration", 0) or 0)
        except av.error.FFmpegError as exc:
            if not pts:
                raise NoFramesError(path, f"no frame decodes ({exc})") from exc
            raise TruncatedVideoError(path, f"decoding failed after {len(pts)} frames ({exc})") from exc
    finally:
        container.close()
    return np.asarray(sorted(pts), dtype=np.int64), last_duration, rotation
