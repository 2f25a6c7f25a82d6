"""Video → :class:`CandidatePool` with PyAV.

Building a pool reads the container's packets once (no pixel decoding) to
learn every frame's exact presentation timestamp, which is correct on
variable-frame-rate files, then decodes the first frame to prove the stream
decodes. Frames are decoded later, on demand, by :class:`VideoFrameSource`
in one forward pass over the stream for any set of pool indices: one seek
to the keyframe before the first wanted frame, never one seek per candidate,
and only wanted frames are converted to RGB. Nothing holds all frames of a
video in memory.

Pool policies (strings, so they are part of cache keys):

``fps=R``
    for targets ``t_j = t_0 + j / R`` (``t_0`` the first frame's time), the
    frame on screen at ``t_j`` (the last frame with pts ≤ ``t_j``); repeats
    are dropped, so a pool never holds a frame twice. Default ``fps=1.0``.
``uniform=N``
    ``N`` targets at the centres of ``N`` equal time segments, the frame on
    screen at each; repeats dropped.
``all``
    every frame.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import NoFramesError, NotAVideoError, TruncatedVideoError, VideoNotFoundError
from frameselect.types import CandidatePool, FrameSource

__all__ = [
    "PoolPolicy",
    "parse_policy",
    "candidates",
    "probe",
    "VideoInfo",
    "VideoFrameSource",
    "content_hash",
    "DecodeCounter",
    "decode_counter",
    "forget_decoded_frames",
]

_CONTAINER_SIGNATURES = (b"ftyp", b"RIFF", b"\x1a\x45\xdf\xa3", b"OggS", b"FLV")


class DecodeCounter:
    """Counts frames decoded by this process (the run reports the difference)."""

    def __init__(self) -> None:
        self.frames_decoded = 0


decode_counter = DecodeCounter()


@dataclass(frozen=True)
class PoolPolicy:
    kind: str  # "fps", "uniform" or "all"
    value: float = 0.0

    def __str__(self) -> str:
        if self.kind == "all":
            return "all"
        if self.kind == "uniform":
            return f"uniform={int(self.value)}"
        return f"fps={self.value:g}"


def parse_policy(policy: str | PoolPolicy) -> PoolPolicy:
    """Parse ``"fps=1.0"``, ``"uniform=64"`` or ``"all"``."""
    if isinstance(policy, PoolPolicy):
        return policy
    text = str(policy).strip().lower()
    if text == "all":
        return PoolPolicy("all")
    m = re.fullmatch(r"(fps|uniform)\s*=\s*([0-9]*\.?[0-9]+)", text)
    if not m:
        raise ValueError(f"unknown pool policy {policy!r}; use 'fps=R' (e.g. fps=1.0), 'uniform=N' or 'all'")
    kind, value = m.group(1), float(m.group(2))
    if value <= 0 or not math.isfinite(value):
        raise ValueError(f"pool policy {policy!r}: the value must be positive")
    if kind == "uniform":
        if value != int(value):
            raise ValueError(f"pool policy {policy!r}: uniform=N takes a whole number of frames")
        return PoolPolicy("uniform", float(int(value)))
    return PoolPolicy("fps", value)


@dataclass(frozen=True)
class VideoInfo:
    """What the packet pass learnt: every frame's pts, in presentation order."""

    path: str
    pts: NDArray[np.int64]
    time_base: Fraction
    duration: float
    width: int
    height: int

    @property
    def timestamps(self) -> NDArray[np.float64]:
        return self.pts.astype(np.float64) * float(self.time_base)


def _open(path: str) -> Any:
    import av

    if not os.path.exists(path):
        raise VideoNotFoundError(path, "no such file")
    if os.path.isdir(path):
        raise NotAVideoError(path, "is a directory, not a video file")
    size = os.path.getsize(path)
    if size == 0:
        raise NoFramesError(path, "the file is empty (0 bytes)")
    try:
        container = av.open(path, metadata_errors="ignore")
    except (av.error.FFmpegError, OSError) as exc:
        with open(path, "rb") as fh:
            head = fh.read(16)
        if any(sig in head for sig in _CONTAINER_SIGNATURES):
            raise TruncatedVideoError(path, f"container header found but the file cannot be opened ({exc}); is it cut short?") from exc
        raise NotAVideoError(path, f"not a video file PyAV can open ({exc})") from exc
    if not container.streams.video:
        container.close()
        raise NotAVideoError(path, "the file has no video stream")
    return container


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    """Read every video packet's timestamp (no decoding) and check the first frame decodes."""
    import av

    path = os.fspath(path)
    container = _open(path)
    try:
        stream = container.streams.video[0]
        time_base = stream.time_base or Fraction(1, 1000)
        pts_list: list[int] = []
        durations: list[int] = []
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
        except av.error.FFmpegError as exc:
            raise TruncatedVideoError(path, f"reading packets failed after {len(pts_list)} frames ({exc})") from exc
        width, height = stream.codec_context.width, stream.codec_context.height
    finally:
        container.close()
    if missing_pts or not pts_list:
        # Containers without packet timestamps (some AVI): decode to learn them.
        pts_arr, last_duration = _decode_pts(path)
    else:
        order = np.argsort(np.asarray(pts_list, dtype=np.int64), kind="stable")
        pts_arr = np.asarray(pts_list, dtype=np.int64)[order]
        last_duration = int(np.asarray(durations)[order][-1])
        _check_first_frame(path)
    if pts_arr.size == 0:
        raise NoFramesError(path, "the video stream holds no decodable frame")
    pts_arr = np.unique(pts_arr)
    if last_duration <= 0 and pts_arr.size > 1:
        last_duration = int(np.median(np.diff(pts_arr)))
    duration = float((pts_arr[-1] + max(last_duration, 0)) * time_base) - float(pts_arr[0] * time_base)
    return VideoInfo(path=path, pts=pts_arr, time_base=Fraction(time_base), duration=max(duration, 0.0), width=width, height=height)


def _check_first_frame(path: str) -> None:
    import av

    container = _open(path)
    try:
        stream = container.streams.video[0]
        try:
            for _frame in container.decode(stream):
                decode_counter.frames_decoded += 1
                return
        except av.error.FFmpegError as exc:
            raise NoFramesError(path, f"the first frame does not decode ({exc})") from exc
    finally:
        container.close()
    raise NoFramesError(path, "the video stream holds no decodable frame")


def _decode_pts(path: str) -> tuple[NDArray[np.int64], int]:
    import av

    container = _open(path)
    pts: list[int] = []
    last_duration = 0
    try:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        try:
            for i, frame in enumerate(container.decode(stream)):
                decode_counter.frames_decoded += 1
                pts.append(int(frame.pts) if frame.pts is not None else i)
                last_duration = int(getattr(frame, "duration", 0) or 0)
        except av.error.FFmpegError as exc:
            if not pts:
                raise NoFramesError(path, f"no frame decodes ({exc})") from exc
            raise TruncatedVideoError(path, f"decoding failed after {len(pts)} frames ({exc})") from exc
    finally:
        container.close()
    return np.asarray(sorted(pts), dtype=np.int64), last_duration


def _on_screen(times: NDArray[np.float64], targets: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the frame on screen at each target time (last frame with t ≤ target)."""
    idx = np.searchsorted(times, targets + 1e-9, side="right") - 1
    return np.clip(idx, 0, len(times) - 1).astype(np.int64)


def select_pool_indices(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> NDArray[np.int64]:
    """Indices (presentation order) of the frames a policy puts in the pool."""
    n = len(times)
    if policy.kind == "all" or n == 0:
        return np.arange(n, dtype=np.int64)
    t0 = float(times[0])
    span = max(duration, float(times[-1] - t0))
    if policy.kind == "fps":
        count = max(1, int(math.ceil(span * policy.value - 1e-9)))
        targets = t0 + np.arange(count, dtype=np.float64) / policy.value
    else:
        m = int(policy.value)
        targets = t0 + (np.arange(m, dtype=np.float64) + 0.5) * span / m
    return np.unique(_on_screen(times, targets))


def candidates(
    path: str | os.PathLike[str], policy: str | PoolPolicy = "fps=1.0", *, video_id: str | None = None, info: VideoInfo | None = None
) -> CandidatePool:
    """Build the candidate pool of a video under a pool policy."""
    path = os.fspath(path)
    pol = parse_policy(policy)
    info = info if info is not None else probe(path)
    times = info.timestamps
    chosen = select_pool_indices(times, info.duration, pol)
    source = VideoFrameSource(path, info.pts[chosen], info.time_base)
    return CandidatePool(
        video_id=video_id if video_id is not None else content_hash(path),
        timestamps=times[chosen],
        frame_indices=chosen,
        policy=str(pol),
        duration=info.duration,
        source=source,
    )


#: recently decoded frame sets: (path with size and mtime, frame pts, size) -> {pool index: frame}
_RECENT_FRAMES: OrderedDict[tuple[str, tuple[int, ...], tuple[int, int] | None], dict[int, NDArray[np.uint8]]] = OrderedDict()
_RECENT_LIMIT = 4
_RECENT_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str, tuple[int, ...], tuple[int, int] | None], threading.Lock] = {}


def forget_decoded_frames() -> None:
    """Drop the remembered frame sets (the next request decodes again)."""
    with _RECENT_LOCK:
        _RECENT_FRAMES.clear()
        _KEY_LOCKS.clear()


class VideoFrameSource(FrameSource):
    """Decodes pool frames by pool index in one forward pass.

    ``size=(w, h)`` asks the decoder's scaler for downscaled frames.
    """

    def __init__(self, path: str, pool_pts: NDArray[np.int64], time_base: Fraction) -> None:
        self.path = path
        self.pool_pts = np.asarray(pool_pts, dtype=np.int64)
        self.time_base = time_base

    def __len__(self) -> int:
        return int(self.pool_pts.shape[0])

    def get(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> list[NDArray[np.uint8]]:
        """The frames at these pool indices, in the order asked.

        The last few decoded sets are remembered (keyed by file, frame
        timestamps and size), so questions that share a video and a
        selection — common in replay — decode it once. Callers get copies.
        """
        wanted = [int(i) for i in indices]
        unique = sorted(set(wanted))
        st = os.stat(self.path)
        key = (f"{self.path}:{st.st_size}:{st.st_mtime_ns}", tuple(int(self.pool_pts[i]) for i in unique), size)
        with _RECENT_LOCK:
            key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
        with key_lock:  # concurrent requests for the same frames (an answerer's threads) decode once
            with _RECENT_LOCK:
                frames = _RECENT_FRAMES.get(key)
                if frames is not None:
                    _RECENT_FRAMES.move_to_end(key)
            if frames is None:
                try:
                    frames = dict(self.iter(unique, size=size))
                except BaseException:
                    with _RECENT_LOCK:
                        _KEY_LOCKS.pop(key, None)
                    raise
                with _RECENT_LOCK:
                    _RECENT_FRAMES[key] = frames
                    while len(_RECENT_FRAMES) > _RECENT_LIMIT:
                        old, _ = _RECENT_FRAMES.popitem(last=False)
                        _KEY_LOCKS.pop(old, None)
        return [frames[i].copy() for i in wanted]

    def iter(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Yield ``(pool_index, rgb_frame)`` in stream order for the given indices."""
        import av

        idx = sorted({int(i) for i in indices})
        if not idx:
            return
        if idx[0] < 0 or idx[-1] >= len(self.pool_pts):
            raise IndexError(f"pool index out of range for {self.path} (pool of {len(self.pool_pts)})")
        by_pts = {int(self.pool_pts[i]): i for i in idx}
        remaining = set(by_pts)
        last_pts = int(self.pool_pts[idx[-1]])
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            first_pts = int(self.pool_pts[idx[0]])
            if first_pts > int(self.pool_pts[0]):
                container.seek(first_pts, stream=stream, backward=True, any_frame=False)
            try:
                for frame in container.decode(stream):
                    decode_counter.frames_decoded += 1
                    pts = frame.pts
                    if pts is None:
                        continue
                    pts = int(pts)
                    if pts in remaining:
                        remaining.discard(pts)
                        if size is not None:
                            arr = frame.to_ndarray(format="rgb24", width=size[0], height=size[1])
                        else:
                            arr = frame.to_ndarray(format="rgb24")
                        yield by_pts[pts], arr
                        if not remaining:
                            break
                    elif pts > last_pts and not remaining:
                        break
            except av.error.FFmpegError as exc:
                raise TruncatedVideoError(self.path, f"decoding failed with {len(remaining)} wanted frame(s) left ({exc})") from exc
        finally:
            container.close()
        if remaining:
            raise TruncatedVideoError(
                self.path,
                f"{len(remaining)} pool frame(s) never decoded (first missing at {min(remaining) * float(self.time_base):.3f}s); the file may be cut short",
            )


_HASH_MEMO: dict[tuple[str, int, int], str] = {}


def content_hash(path: str | os.PathLike[str]) -> str:
    """BLAKE2b of the file's bytes (memoised per path, size and mtime)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise VideoNotFoundError(path, "no such file") from None
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    cached = _HASH_MEMO.get(key)
    if cached is not None:
        return cached
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    _HASH_MEMO[key] = digest
    return digest
