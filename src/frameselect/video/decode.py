"""Video → :class:`CandidatePool` with PyAV.

Building a pool reads the container's packets once (no pixel decoding) to
learn every frame's exact presentation timestamp, which is correct on
variable-frame-rate files, then decodes the first frame to prove the stream
decodes. Frames are decoded later, on demand, by :class:`VideoFrameSource`
in one forward pass over the stream for any set of pool indices: seeks
only to leave out groups of pictures (or their rests) holding no wanted
frame, never one seek per candidate (keyframe-only requests: one decoder
fed the keyframes back to back), and only wanted frames are converted to
RGB, straight to the size asked for. A request spanning several groups of
pictures is shared out among decoders running side by side, one a CPU,
each on its own groups (frames still come out in stream order).
Frames are shown upright, as a player shows them: a display matrix
(rotation side data, as phones write) is applied. Nothing holds all frames of
a video in memory.

A file whose packets end well before the duration its container declares
(a cut-short file) fails with :class:`TruncatedVideoError`; data that fails
to decode while more data follows fails with :class:`CorruptVideoError`.

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
``fps=R,approx`` / ``fps=R,approx=E``
    for each target, the cheapest frame to decode within ``E`` seconds of
    it (default: any distance): a keyframe first, else the frame needing the
    fewest frames decoded from its keyframe; ties go to the nearest in time.
    Repeats dropped. Far cheaper than ``fps=R`` on long GOPs; the pool
    records every candidate's time error (see :func:`time_errors`).
``keyframes``
    every keyframe.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import queue
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._cpus import usable_cpus
from frameselect._memo import BoundedMemo, memoized
from frameselect._queues import put_unless_stopped
from frameselect.errors import CorruptVideoError, NoFramesError, NotAVideoError, TruncatedVideoError, VideoError, VideoNotFoundError
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
    "FrameMemo",
    "select_pool",
    "time_errors",
    "time_error_summary",
    "TRUNCATION_TOLERANCE",
]

_CONTAINER_SIGNATURES = (b"ftyp", b"RIFF", b"\x1a\x45\xdf\xa3", b"OggS", b"FLV")


class DecodeCounter:
    """Counts decoded frames. A run owns one and hands it to its pools' frame sources."""

    def __init__(self) -> None:
        self.frames_decoded = 0
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        with self._lock:  # an answerer's threads may decode at once
            self.frames_decoded += n

    def __reduce__(self) -> tuple[type[DecodeCounter], tuple[()]]:
        """Pickled (sent to or from a worker), a counter arrives empty: the receiving side counts its own frames."""
        return DecodeCounter, ()


#: the largest value a policy takes (fps=R frames a second, uniform=N frames): far past any video, and pools stay exact in float64
POLICY_VALUE_MAX = 1e9

_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?"
_POLICY = re.compile(rf"(fps|uniform)\s*=\s*({_NUMBER})(\s*,\s*approx(?:\s*=\s*({_NUMBER}))?)?")


def _number_text(value: float) -> str:
    """Shortest text of ``value`` that reads back as the same number (``1``, ``0.5``, ``1e-09``)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


@dataclass(frozen=True)
class PoolPolicy:
    kind: str  # "fps", "uniform", "all" or "keyframes"
    value: float = 0.0
    approx: bool = False  # fps=R,approx: cheapest frame near each target
    tolerance: float = math.inf  # approx: how far from its target a frame may be (seconds)

    def __str__(self) -> str:
        """The canonical form, which :func:`parse_policy` reads back as this policy."""
        if self.kind in ("all", "keyframes"):
            return self.kind
        if self.kind == "uniform":
            return f"uniform={int(self.value)}"
        if self.approx:
            return f"fps={_number_text(self.value)},approx" + ("" if math.isinf(self.tolerance) else f"={_number_text(self.tolerance)}")
        return f"fps={_number_text(self.value)}"


def parse_policy(policy: str | PoolPolicy) -> PoolPolicy:
    """Parse ``"fps=1.0"``, ``"fps=1,approx"``, ``"fps=1,approx=2"``, ``"uniform=64"``, ``"keyframes"`` or ``"all"``.

    The one parser of pool policies: every part of the library reads a policy
    through it, and ``str()`` of its result (the canonical form stored with a
    run) parses back to the same policy.

    >>> str(parse_policy("fps=0.000000001"))
    'fps=1e-09'
    >>> parse_policy(str(parse_policy("fps=1e-09"))).value
    1e-09
    """
    if isinstance(policy, PoolPolicy):
        return policy
    text = str(policy).strip().lower()
    if text in ("all", "keyframes"):
        return PoolPolicy(text)
    m = _POLICY.fullmatch(text)
    if not m:
        raise ValueError(f"unknown pool policy {policy!r}; use 'fps=R' (e.g. fps=1.0), 'fps=R,approx', 'uniform=N', 'keyframes' or 'all'")
    kind, value = m.group(1), float(m.group(2))
    if not 0 < value <= POLICY_VALUE_MAX:
        raise ValueError(f"pool policy {policy!r}: the value must be positive and at most {POLICY_VALUE_MAX:g}")
    if kind == "uniform":
        if m.group(3):
            raise ValueError(f"pool policy {policy!r}: approx goes with fps=R only")
        if value != int(value):
            raise ValueError(f"pool policy {policy!r}: uniform=N takes a whole number of frames")
        return PoolPolicy("uniform", float(int(value)))
    if m.group(3):
        tolerance = float(m.group(4)) if m.group(4) else math.inf
        if m.group(4) and not math.isfinite(tolerance):
            raise ValueError(f"pool policy {policy!r}: approx=E takes a finite number of seconds (leave out =E for no limit)")
        return PoolPolicy("fps", value, approx=True, tolerance=tolerance)
    return PoolPolicy("fps", value)


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
    container = _open(path)
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

    container = _open(path)
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

    container = _open(path)
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


def _on_screen(times: NDArray[np.float64], targets: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the frame on screen at each target time (last frame with t ≤ target)."""
    idx = np.searchsorted(times, targets + 1e-9, side="right") - 1
    return np.clip(idx, 0, len(times) - 1).astype(np.int64)


def _target_count(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> tuple[float, float, int]:
    """The first target time, the span the targets cover and how many there are."""
    t0 = float(times[0])
    span = max(duration, float(times[-1] - t0))
    if policy.kind == "fps":
        return t0, span, max(1, int(math.ceil(span * policy.value - 1e-9)))
    return t0, span, int(policy.value)


def _target_times(j: NDArray[np.float64], t0: float, span: float, policy: PoolPolicy) -> NDArray[np.float64]:
    """Target times of target numbers ``j`` (floats holding whole numbers), rounded as the full list of them is."""
    if policy.kind == "fps":
        return t0 + j / policy.value
    return t0 + (j + 0.5) * span / int(policy.value)


def _targets(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> NDArray[np.float64]:
    t0, span, count = _target_count(times, duration, policy)
    return _target_times(np.arange(count, dtype=np.float64), t0, span, policy)


def _exact_pool(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Pool indices and time errors of an exact ``fps=R`` or ``uniform=N`` policy (the frame on screen at each target).

    With no more targets than frames, each target is looked up. With more, the
    work is bounded by the frames instead: for each frame, the first target it
    is on screen for (if any) is found by arithmetic, so ``uniform=10000000``
    costs what ``all`` costs. Both give the same pool and errors.
    """
    t0, span, count = _target_count(times, duration, policy)
    if count <= len(times):
        targets = _target_times(np.arange(count, dtype=np.float64), t0, span, policy)
        return _errors_per_candidate(times, targets, _on_screen(times, targets))
    # first target j with times[i] <= T_j + 1e-9 (what _on_screen tests), estimated then made exact
    if policy.kind == "fps":
        estimate = np.ceil((times - 1e-9 - t0) * policy.value)
    else:
        estimate = np.ceil((times - 1e-9 - t0) * int(policy.value) / span - 0.5)
    j = np.clip(estimate, 0, count).astype(np.float64)
    for _ in range(64):  # the estimate is off by a rounding step at most; a few passes settle it
        back = (j > 0) & (_target_times(np.maximum(j - 1, 0), t0, span, policy) + 1e-9 >= times)
        ahead = (j < count) & (_target_times(j, t0, span, policy) + 1e-9 < times)
        if not (back.any() or ahead.any()):
            break
        j = j - back + ahead
    first = _target_times(j, t0, span, policy)
    nxt = np.append(times[1:], np.inf)
    # frame i is on screen for target j_i when that target exists and comes before frame i + 1 (frame 0 also takes earlier targets)
    on = (j < count) & (first + 1e-9 < nxt)
    chosen = np.flatnonzero(on).astype(np.int64)
    errors = times[chosen] - first[chosen]
    # the target after j_i, when it is on screen for the same frame, may sit closer (ties: the first)
    j2 = j[chosen] + 1
    second = _target_times(j2, t0, span, policy)
    closer = (j2 < count) & (second + 1e-9 < nxt[chosen]) & (np.abs(times[chosen] - second) < np.abs(errors))
    errors = np.where(closer, times[chosen] - second, errors)
    return chosen, errors.astype(np.float64)


def _errors_per_candidate(
    times: NDArray[np.float64], targets: NDArray[np.float64], per_target: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The distinct frames chosen for ``targets`` and each one's smallest time error (ties: the earlier target)."""
    chosen = np.unique(per_target)
    errors = np.full(chosen.size, np.inf)
    slot = np.searchsorted(chosen, per_target)
    err = times[per_target] - targets
    for j, e in zip(slot, err):  # keep the smallest |error| per candidate
        if abs(e) < abs(errors[j]):
            errors[j] = e
    return chosen, errors


def select_pool_indices(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> NDArray[np.int64]:
    """Indices (presentation order) of the frames an exact policy puts in the pool."""
    n = len(times)
    if policy.kind == "all" or n == 0:
        return np.arange(n, dtype=np.int64)
    if policy.kind == "keyframes" or policy.approx:
        raise ValueError(f"pool policy {policy} needs the video's keyframes: use select_pool(info, policy)")
    return _exact_pool(times, duration, policy)[0]


def _cheapest_near(times: NDArray[np.float64], cost: NDArray[np.int64], targets: NDArray[np.float64], tolerance: float) -> NDArray[np.int64]:
    """Per target: the nearest keyframe within ``tolerance``, else the cheapest frame within it (ties: nearest)."""
    keys = np.flatnonzero(cost == 1)
    out = _on_screen(times, targets)
    if keys.size:
        pos = np.clip(np.searchsorted(times[keys], targets), 1, max(keys.size - 1, 1))
        before, after = keys[pos - 1], keys[np.minimum(pos, keys.size - 1)]
        nearest = np.where(np.abs(times[after] - targets) < np.abs(times[before] - targets), after, before)
        ok = np.abs(times[nearest] - targets) <= tolerance + 1e-9
        out = np.where(ok, nearest, out)
    else:
        ok = np.zeros(targets.shape, dtype=bool)
    lo = np.searchsorted(times, targets - tolerance - 1e-9, side="left")
    hi = np.searchsorted(times, targets + tolerance + 1e-9, side="right")
    for j in np.flatnonzero(~ok):
        if hi[j] <= lo[j]:
            continue  # no frame that close: the frame on screen
        window = np.arange(lo[j], hi[j])
        order = np.lexsort((np.abs(times[window] - targets[j]), cost[window]))
        out[j] = window[order[0]]
    return out.astype(np.int64)


def select_pool(info: VideoInfo, policy: str | PoolPolicy) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Pool indices (presentation order) and each candidate's time error in seconds (actual - target).

    A candidate chosen for several targets records the error to the nearest
    of them; ``all`` and ``keyframes`` have no targets (errors 0).
    """
    pol = parse_policy(policy)
    times = info.timestamps
    n = len(times)
    if n == 0 or pol.kind == "all":
        return np.arange(n, dtype=np.int64), np.zeros(n)
    if pol.kind == "keyframes" or pol.approx:
        if info.decode_cost is None:
            raise ValueError(f"{info.path}: pool policy {pol} needs keyframe flags, which this file's packets do not carry; use an exact policy (fps=R)")
    if pol.kind == "keyframes":
        keys = np.flatnonzero(info.decode_cost == 1).astype(np.int64)
        return keys, np.zeros(keys.size)
    if not pol.approx:
        return _exact_pool(times, info.duration, pol)
    assert info.decode_cost is not None
    targets = _targets(times, info.duration, pol)
    return _errors_per_candidate(times, targets, _cheapest_near(times, info.decode_cost, targets, pol.tolerance))


def time_errors(pool: CandidatePool) -> NDArray[np.float64] | None:
    """Each candidate's time error in seconds (actual - target) as recorded by its source, if any."""
    errors = None if pool.source is None else pool.source.candidate_time_errors()
    return None if errors is None else np.asarray(errors, dtype=np.float64)


def time_error_summary(pool: CandidatePool) -> dict[str, float]:
    """Mean and maximum absolute time error of a pool's candidates (seconds), for a run's records.

    Empty when the pool records no errors (pools not built from a video file).
    """
    errors = time_errors(pool)
    if errors is None or errors.size == 0:
        return {}
    magnitude = np.abs(errors)
    return {"pool_time_error_mean": float(magnitude.mean()), "pool_time_error_max": float(magnitude.max())}


def candidates(
    path: str | os.PathLike[str],
    policy: str | PoolPolicy = "fps=1.0",
    *,
    video_id: str | None = None,
    info: VideoInfo | None = None,
    counter: DecodeCounter | None = None,
    memo: FrameMemo | None = None,
) -> CandidatePool:
    """Build the candidate pool of a video under a pool policy.

    The pool's source records the video's display ``rotation`` and each
    candidate's ``time_errors`` (see :func:`select_pool`). ``counter`` counts
    every frame decoded for the pool (probe included); ``memo`` is shared by
    the pools of one run, so equal frame requests decode once.
    """
    path = os.fspath(path)
    pol = parse_policy(policy)
    counter = counter if counter is not None else DecodeCounter()
    info = info if info is not None else probe(path, counter=counter)
    times = info.timestamps
    chosen, errors = select_pool(info, pol)
    source = VideoFrameSource(
        path,
        info.pts[chosen],
        info.time_base,
        rotation=info.rotation,
        keyframe_pts=info.keyframe_pts,
        open_keyframe_pts=info.open_keyframe_pts,
        time_errors=errors,
        frame_pts=info.pts,
        counter=counter,
        memo=memo,
    )
    return CandidatePool(
        video_id=video_id if video_id is not None else content_hash(path),
        timestamps=times[chosen],
        frame_indices=chosen,
        policy=str(pol),
        duration=info.duration,
        source=source,
    )


#: a group of pictures whose remaining frames (after its last wanted one) are at most this many is
#: decoded on into the next group rather than left by a seek (a seek restarts the decoder's pipeline)
SEEK_MIN_TAIL = 8

#: requests with fewer wanted frames than this per run (on average) decode with ``sparse_thread_type``
SPARSE_FRAMES_PER_RUN = 3

#: where a seek lands past the keyframe asked for, it is made again this many groups further back (None: from the start)
SEEK_BACK_GROUPS: tuple[int | None, ...] = (0, 1, 4, None)

#: at most this many decoders share one request (``VideoFrameSource.parallel_decoders``)
PARALLEL_DECODERS_MAX = 8

#: decoded frames waiting for the consumer of a parallel decode, at most (bytes, all decoders together)
DECODED_AHEAD_BYTES = 128 * 1024 * 1024

_GROUP_DONE = object()  # a parallel decoder's mark: every frame of its group was handed over


#: codecs whose decoder runs a dense request faster with slice threads than with frame threads when
#: every picture is cut into at least as many slices as there are CPUs to run them. Measured on 2 cores
#: with the FFmpeg that PyAV ships (docs/performance.md): on H.264 files of 2 slices a picture, slice
#: threads took 0.68-0.87 of frame threads' wall time on an exact 1-fps pool and 0.73-0.88 on a full
#: pass; on files of one slice a picture, slice threads run on one core and frame threads were faster
#: (exact pool 0.88-0.98 of slice threads' wall time, full pass 0.61-0.83). HEVC was even, VP9 13 %
#: slower with slice threads.
SLICE_THREADED_CODECS: frozenset[str] = frozenset({"h264"})


def dense_thread_type(codec: str, slices: int | None = None, cpus: int | None = None) -> str:
    """The decoder threading for a dense request: ``"SLICE"`` or ``"AUTO"`` (FFmpeg's frame threads).

    Slice threads when ``codec`` (FFmpeg's decoder name) is one of
    :data:`SLICE_THREADED_CODECS` and each picture has at least ``max(2,
    cpus)`` slices (``slices``: see :func:`picture_slices`; ``None``,
    unknown, counts as one); ``cpus`` defaults to :func:`usable_cpus`.
    Slice threads can keep at most as many cores busy as a picture has
    slices, so with fewer slices than cores frame threads are left to FFmpeg.

    >>> dense_thread_type("h264", slices=2, cpus=2), dense_thread_type("h264", slices=1, cpus=2)
    ('SLICE', 'AUTO')
    >>> dense_thread_type("h264", slices=2, cpus=16), dense_thread_type("vp9", slices=8, cpus=2)
    ('AUTO', 'AUTO')
    """
    cores = usable_cpus() if cpus is None else cpus
    if codec in SLICE_THREADED_CODECS and slices is not None and slices >= max(2, cores):
        return "SLICE"
    return "AUTO"


_H264_SLICE_NALS = (1, 2, 5)  # coded slice, slice data partition A (holds the header), IDR slice


def h264_slices_per_picture(data: bytes, extradata: bytes | None = None) -> int | None:
    """The fewest slices of any picture in one H.264 access unit (a packet); ``None`` when none is found.

    NAL units are length-prefixed when ``extradata`` is an ``avcC`` record
    (MP4, Matroska: its first byte is 1, its fifth gives the prefix length),
    else delimited by start codes (Annex B: MPEG-TS, raw ``.h264``). A slice
    whose ``first_mb_in_slice`` is 0 (its first coded bit is 1) starts a
    picture; a packet of two fields holds two pictures.

    Two IDR slices of one picture (the second starts at macroblock 1), then
    a picture of one slice, in Annex B:

    >>> two = bytes([0, 0, 0, 1, 0x65, 0x88, 0, 0, 1, 0x65, 0x40])
    >>> h264_slices_per_picture(two), h264_slices_per_picture(two + bytes([0, 0, 1, 0x41, 0x9A]))
    (2, 1)
    """
    nals: list[bytes] = []
    if extradata and extradata[0] == 1 and len(extradata) >= 7:
        width = (extradata[4] & 3) + 1
        i = 0
        while i + width <= len(data):
            size = int.from_bytes(data[i : i + width], "big")
            nals.append(data[i + width : i + width + size])
            i += width + size
    else:
        nals = data.split(b"\x00\x00\x01")[1:]
    counts: list[int] = []
    for nal in nals:
        if len(nal) < 2 or nal[0] & 0x1F not in _H264_SLICE_NALS:
            continue
        if nal[1] & 0x80 or not counts:  # first_mb_in_slice == 0: a new picture
            counts.append(0)
        counts[-1] += 1
    return min(counts) if counts else None


#: packets read, at most, to find a keyframe whose slices :func:`picture_slices` counts
SLICE_PROBE_PACKETS = 64


@memoized(maxsize=256)
def _picture_slices(path: str, size: int, mtime_ns: int) -> int | None:
    import av

    try:
        container = _open(path)
    except VideoError:
        return None  # the decoder that follows reports it
    try:
        stream = container.streams.video[0]
        if stream.codec_context.name != "h264":
            return None
        extradata = stream.codec_context.extradata
        for n, packet in enumerate(container.demux(stream)):
            if n >= SLICE_PROBE_PACKETS:
                break
            if packet.size and packet.is_keyframe:
                return h264_slices_per_picture(bytes(packet), extradata)
    except (av.error.FFmpegError, OSError):
        return None  # unreadable packets: the decoder that follows reports them
    finally:
        container.close()
    return None


def picture_slices(path: str | os.PathLike[str]) -> int | None:
    """Slices a picture of this video is cut into (H.264, from its first keyframe); ``None`` when unknown.

    Remembered per file (path, size and modification time).
    """
    path = os.fspath(path)
    st = os.stat(path)
    return _picture_slices(path, st.st_size, st.st_mtime_ns)


_MemoKey = tuple[str, tuple[int, ...], tuple[int, int] | None]


class FrameMemo:
    """The last few decoded frame sets: (file with size and mtime, frame pts, size) -> {pts: frame}.

    Owned by a run (or by one frame source when none is given): concurrent
    requests for the same frames (an answerer's threads) decode once. At most
    ``limit`` sets and ``max_bytes`` bytes are kept; a larger set is not kept,
    so memory never grows with a request.
    """

    def __init__(self, limit: int = 4, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self._frames: OrderedDict[_MemoKey, dict[int, NDArray[np.uint8]]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[_MemoKey, threading.Lock] = {}

    def __reduce__(self) -> tuple[type[FrameMemo], tuple[int, int]]:
        """Pickled (sent to or from a worker), a memo arrives empty, with its settings: frames and locks stay here."""
        return FrameMemo, (self.limit, self.max_bytes)

    def get(self, key: _MemoKey, decode: Callable[[], dict[int, NDArray[np.uint8]]]) -> dict[int, NDArray[np.uint8]]:
        """The frames under ``key``, decoded by ``decode()`` on a miss."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                frames = self._frames.get(key)
                if frames is not None:
                    self._frames.move_to_end(key)
                    return frames
            try:
                frames = decode()
            except BaseException:
                with self._lock:
                    self._key_locks.pop(key, None)
                raise
            with self._lock:
                self._remember(key, frames)
            return frames

    def _remember(self, key: _MemoKey, frames: dict[int, NDArray[np.uint8]]) -> None:
        """Keep a decoded set, dropping the oldest beyond the count and byte limits (lock held)."""
        if sum(f.nbytes for f in frames.values()) > self.max_bytes:
            self._key_locks.pop(key, None)
            return
        self._frames[key] = frames
        total = sum(f.nbytes for fs in self._frames.values() for f in fs.values())
        while len(self._frames) > self.limit or total > self.max_bytes:
            old, dropped = self._frames.popitem(last=False)
            self._key_locks.pop(old, None)
            total -= sum(f.nbytes for f in dropped.values())


class VideoFrameSource(FrameSource):
    """Decodes pool frames by pool index in one forward pass.

    ``size=(w, h)`` asks the decoder's scaler for frames of that displayed
    size. Frames come out upright: ``rotation`` (counter-clockwise degrees,
    from the display matrix) is applied. With ``keyframe_pts`` known, groups
    of pictures holding no wanted frame are not sent to the decoder; with
    ``skip_nonref`` the decoder skips non-reference frames that are not
    wanted (``skip_frame`` switched per packet). Both keep the output exact.
    A request spanning several groups is split by group among parallel
    decoders (see :meth:`_decode_parallel`); frames still come out in stream
    order.
    """

    #: decoder threading for runs of many wanted frames and for keyframes: None takes what suits the codec and its slices
    #: (:func:`dense_thread_type`); a value ("AUTO", "FRAME", "SLICE", "NONE") forces it
    thread_type: str | None = None
    #: for sparse requests (a frame or two per group of pictures): frame threads delay every frame's
    #: output by a few packets after each seek, so slice threads only (measured 3x faster on keyframes)
    sparse_thread_type = "SLICE"
    #: decoders run side by side on a request spanning several groups of pictures, each on its own
    #: groups with its own container (None: one per usable CPU, at most ``PARALLEL_DECODERS_MAX``;
    #: 1: one decoder for the whole request)
    parallel_decoders: int | None = None

    def __init__(
        self,
        path: str,
        pool_pts: NDArray[np.int64],
        time_base: Fraction,
        *,
        rotation: int = 0,
        keyframe_pts: NDArray[np.int64] | None = None,
        open_keyframe_pts: NDArray[np.int64] | None = None,
        time_errors: NDArray[np.float64] | None = None,
        skip_nonref: bool = True,
        frame_pts: NDArray[np.int64] | None = None,
        counter: DecodeCounter | None = None,
        memo: FrameMemo | None = None,
    ) -> None:
        self.path = path
        self.pool_pts = np.asarray(pool_pts, dtype=np.int64)
        self.time_base = time_base
        self.rotation = int(rotation) % 360
        self.keyframe_pts = None if keyframe_pts is None else np.asarray(keyframe_pts, dtype=np.int64)
        self.open_keyframe_pts = None if open_keyframe_pts is None else np.asarray(open_keyframe_pts, dtype=np.int64)
        self.time_errors = None if time_errors is None else np.asarray(time_errors, dtype=np.float64)
        self.skip_nonref = skip_nonref
        self.frame_pts = None if frame_pts is None else np.asarray(frame_pts, dtype=np.int64)
        self.counter = counter if counter is not None else DecodeCounter()
        self.memo = memo if memo is not None else FrameMemo()

    def candidate_time_errors(self) -> NDArray[np.float64] | None:
        """The time errors recorded when the pool was built (:func:`select_pool`), if any."""
        return self.time_errors

    def __len__(self) -> int:
        return int(self.pool_pts.shape[0])

    def get(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> list[NDArray[np.uint8]]:
        """The frames at these pool indices, in the order asked.

        The last few decoded sets are remembered (keyed by file, frame
        timestamps and size), so questions that share a video and a
        selection — common in replay — decode it once. Callers get copies.
        At most 4 sets and 256 MiB are remembered: a larger request is not.
        """
        wanted = [int(i) for i in indices]
        unique = sorted(set(wanted))
        st = os.stat(self.path)
        key = (f"{self.path}:{st.st_size}:{st.st_mtime_ns}", tuple(int(self.pool_pts[i]) for i in unique), size)
        frames = self.memo.get(key, lambda: {int(self.pool_pts[i]): frame for i, frame in self.iter(unique, size=size)})
        return [frames[int(self.pool_pts[i])].copy() for i in wanted]

    def iter(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Yield ``(pool_index, rgb_frame)`` in stream order for the given indices."""
        idx = sorted({int(i) for i in indices})
        if not idx:
            return
        if idx[0] < 0 or idx[-1] >= len(self.pool_pts):
            raise IndexError(f"pool index out of range for {self.path} (pool of {len(self.pool_pts)})")
        by_pts = {int(self.pool_pts[i]): i for i in idx}
        for pts, arr in self._decode(by_pts, size):
            yield by_pts[pts], arr

    def _coded_size(self, size: tuple[int, int] | None) -> tuple[int, int] | None:
        if size is None or self.rotation not in (90, 270):
            return size
        return size[1], size[0]

    def _upright(self, frame: Any, size: tuple[int, int] | None) -> NDArray[np.uint8]:
        coded = self._coded_size(size)
        if coded is not None:
            arr: NDArray[np.uint8] = frame.to_ndarray(format="rgb24", width=coded[0], height=coded[1])
        else:
            arr = frame.to_ndarray(format="rgb24")
        if self.rotation:
            arr = np.ascontiguousarray(np.rot90(arr, k=self.rotation // 90))
        return arr

    def _runs(self, wanted: Sequence[int], merge: bool = True) -> list[tuple[int | None, set[int]]]:
        """Wanted pts split by group of pictures, each with where to seek (``None``: the start).

        A group is the frames from a keyframe's pts to the next keyframe's
        (presentation order), so the leading pictures of an open GOP (decoded
        after their keyframe, shown before it) count in the group before, and
        seeking to its keyframe decodes them correctly. Once a group's wanted
        frames are out, a seek (which resets the decoder) jumps to the next
        group holding a wanted frame: the rest of the group and the groups
        between never reach the decoder. The next group, when it holds a
        wanted frame too, is decoded on without a seek when it is closed (the
        rest of the group is not sent, see :meth:`_decode_run`) or the rest
        is short. Without known keyframes: one pass from the start (exact,
        not fast). ``merge=False`` keeps one run a group (the frames before
        the first keyframe go with its group): the units of parallel decoding.
        """
        if self.keyframe_pts is None or self.keyframe_pts.size == 0:
            return [(None, set(wanted))]
        groups = np.searchsorted(self.keyframe_pts, np.asarray(wanted, dtype=np.int64), side="right") - 1
        by_group: dict[int, set[int]] = {}
        for pts, g in zip(wanted, groups.tolist()):
            by_group.setdefault(int(g), set()).add(int(pts))
        runs: list[tuple[int | None, set[int]]] = []
        previous = -2
        for g, pts_set in sorted(by_group.items()):
            key = int(self.keyframe_pts[g])
            if runs and runs[-1][0] is None and g <= 0:
                runs[-1][1].update(pts_set)  # before the first keyframe and its group: both from the start
            elif runs and merge and g == previous + 1 and (self._closed(key) or self._tail(max(runs[-1][1]), key) <= SEEK_MIN_TAIL):
                runs[-1][1].update(pts_set)  # the rest of the group is not sent (closed next group) or short: beats a seek
            else:
                runs.append((int(self.keyframe_pts[g]) if g > 0 else None, set(pts_set)))
            previous = g
        return runs

    def _closed(self, key: int) -> bool:
        """Whether the group of this keyframe refers to nothing decoded before it (no leading pictures)."""
        if self.open_keyframe_pts is None:
            return False
        i = int(np.searchsorted(self.open_keyframe_pts, key))
        return not (i < self.open_keyframe_pts.size and int(self.open_keyframe_pts[i]) == key)

    def _tail(self, last_wanted: int, next_key: int) -> int:
        """Frames shown after ``last_wanted`` and before ``next_key`` (a large number when unknown)."""
        if self.frame_pts is None:
            return SEEK_MIN_TAIL + 1
        return int(np.searchsorted(self.frame_pts, next_key, side="left") - np.searchsorted(self.frame_pts, last_wanted, side="right"))

    def _decode(self, by_pts: dict[int, int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Yield ``(pts, upright rgb frame)`` for every wanted pts: one forward pass per run of groups."""
        import av

        remaining = set(by_pts)
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            codec = stream.codec_context
            dense = self.thread_type or dense_thread_type(codec.name, picture_slices(self.path))
            if self._keyframes_only(remaining):
                stream.thread_type = dense
                yield from self._decode_keyframes(container, stream, remaining, size)
            elif (workers := self._decoders(groups := self._runs(sorted(remaining), merge=False))) > 1:
                coded = (str(codec.name), int(codec.width or 1) * int(codec.height or 1))
                container.close()  # each decoder opens its own
                yield from self._decode_parallel(groups, workers, remaining, size, coded)
            else:
                runs = self._runs(sorted(remaining))
                sparse = len(runs) > 1 and len(remaining) < SPARSE_FRAMES_PER_RUN * len(runs)
                stream.thread_type = self.sparse_thread_type if sparse else dense
                for target, run in runs:
                    packets = None if target is None else self._sought(container, stream, target)
                    yield from self._decode_run(container, stream, run, remaining, size, packets)
        except av.error.FFmpegError as exc:  # demuxing failed: the data ends early
            raise TruncatedVideoError(self.path, f"reading failed with {len(remaining)} wanted frame(s) left ({exc})") from exc
        finally:
            container.close()
        if remaining:
            raise TruncatedVideoError(
                self.path,
                f"{len(remaining)} pool frame(s) never decoded (first missing at {min(remaining) * float(self.time_base):.3f}s); the file may be cut short",
            )

    def _decoders(self, groups: list[tuple[int | None, set[int]]]) -> int:
        """How many decoders share a request of these groups (1: decode it in one pass)."""
        if self.parallel_decoders is not None:
            return max(1, min(self.parallel_decoders, len(groups)))
        return max(1, min(usable_cpus(), PARALLEL_DECODERS_MAX, len(groups)))

    def _decode_parallel(
        self,
        groups: list[tuple[int | None, set[int]]],
        workers: int,
        remaining: set[int],
        size: tuple[int, int] | None,
        coded: tuple[str, int],
    ) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Decode group ``i`` on decoder ``i % workers``, each in its own thread and container; yield in stream order.

        Groups are independent once their keyframe is sought (a group's
        leading pictures of an open next group belong to it, see
        :meth:`_runs`), so the frames are those of one pass. FFmpeg decodes
        without the GIL, so the decoders share the cores that one decoder's
        threads would: frame threads gain little on a chain of reference
        frames once the others are skipped, and slice threads none on
        pictures of one slice. Each decoder gets ``usable_cpus() //
        workers`` threads of the codec's kind (none when that is one). A
        decoder stops while ``DECODED_AHEAD_BYTES / workers`` of its frames
        wait for the consumer, so memory does not grow with the request; an
        error reaches the consumer at the group it happened in, after every
        frame before it. Leaving early stops the decoders. ``coded``: the
        stream's codec name and pixels a frame.
        """
        threads = max(1, usable_cpus() // workers)
        codec_threads = self.thread_type or ("NONE" if threads == 1 else dense_thread_type(coded[0], picture_slices(self.path), cpus=threads))
        frame_bytes = 3 * (size[0] * size[1] if size else coded[1])
        outs: list[queue.Queue[Any]] = [queue.Queue(maxsize=max(2, DECODED_AHEAD_BYTES // (workers * frame_bytes))) for _ in range(workers)]
        stop = threading.Event()
        decoders = [
            threading.Thread(
                target=self._decoder, args=(groups[w::workers], outs[w], stop, size, codec_threads, threads), name=f"frameselect-decode-{w}", daemon=True
            )
            for w in range(workers)
        ]
        for thread in decoders:
            thread.start()
        try:
            for i in range(len(groups)):
                out = outs[i % workers]
                while (item := out.get()) is not _GROUP_DONE:
                    if isinstance(item, BaseException):
                        raise item
                    remaining.discard(item[0])
                    yield item
        finally:
            stop.set()
            for out in outs:  # wake decoders waiting to hand over a frame
                while not out.empty():
                    out.get_nowait()
            for thread in decoders:
                thread.join()

    def _decoder(
        self,
        groups: list[tuple[int | None, set[int]]],
        out: queue.Queue[Any],
        stop: threading.Event,
        size: tuple[int, int] | None,
        thread_type: str,
        threads: int,
    ) -> None:
        """One parallel decoder: its groups in order, each followed by ``_GROUP_DONE``, or the error that ended it."""
        import av

        def put(item: Any) -> bool:
            return put_unless_stopped(out, item, stop)

        container = None
        try:
            container = _open(self.path)
            stream = container.streams.video[0]
            stream.thread_type = thread_type
            stream.codec_context.thread_count = threads if thread_type != "NONE" else 1
            for target, run in groups:  # this decoder's own sets: struck off as their frames come out
                try:
                    packets = None if target is None else self._sought(container, stream, target)
                    for item in self._decode_run(container, stream, run, set(run), size, packets):
                        if not put(item):
                            return
                except av.error.FFmpegError as exc:  # demuxing failed: the data ends early
                    put(TruncatedVideoError(self.path, f"reading failed with {len(run)} wanted frame(s) of a group left ({exc})"))
                    return
                if not put(_GROUP_DONE):
                    return
        except BaseException as exc:  # handed to the consumer, raised there in stream order
            put(exc)
        finally:
            if container is not None:
                container.close()

    def _keyframes_only(self, wanted: set[int]) -> bool:
        """Whether every wanted frame is a keyframe of a closed group (then they decode back to back)."""
        if self.keyframe_pts is None or self.open_keyframe_pts is None or len(wanted) < 2:
            return False
        keys = set(self.keyframe_pts.tolist())
        return all(pts in keys and self._closed(pts) for pts in wanted)

    def _decode_keyframes(self, container: Any, stream: Any, remaining: set[int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Send the wanted keyframes' packets one after another to a decoder that is never reset.

        A seek resets the decoder, so a decoder with frame threads would hand
        out each keyframe only when drained; here the packets are read by a
        second, seeking demuxer, and the decoder (threaded as
        :func:`dense_thread_type` says) decodes the next keyframes while the
        first come out. Each keyframe of a closed
        group decodes alone, so the frames are exact.
        """
        import av

        reader = _open(self.path)
        try:
            rstream = reader.streams.video[0]
            codec = stream.codec_context
            for pts in sorted(remaining):
                packet = next(self._sought(reader, rstream, pts), None)
                if packet is None:
                    continue  # not found: reported as missing
                try:
                    frames = codec.decode(packet)
                except av.error.FFmpegError as exc:
                    raise CorruptVideoError(self.path, f"the keyframe at {pts * float(self.time_base):.3f}s does not decode ({exc})") from exc
                yield from self._wanted(frames, remaining, remaining, size)
            yield from self._wanted(codec.decode(None), remaining, remaining, size)
        finally:
            reader.close()

    def _wanted(self, frames: Any, run: set[int], remaining: set[int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Count decoded frames; convert and yield those of ``run`` (and strike them off ``run`` and ``remaining``)."""
        for frame in frames:
            self.counter.add()
            if frame.pts is None or int(frame.pts) not in run:
                continue
            run.discard(int(frame.pts))
            remaining.discard(int(frame.pts))
            yield int(frame.pts), self._upright(frame, size)

    def _sought(self, container: Any, stream: Any, key: int) -> Iterator[Any]:
        """The packets from the keyframe at pts ``key`` on, after a seek (which also resets the decoder).

        Most containers' seeks land on the keyframe. Where one lands past it
        (MPEG-TS seeks by the timestamps it meets in the stream, and lands a
        few frames late), the seek goes to keyframes further back (one group,
        then four, then the start) and the packets before ``key`` are dropped
        undecoded; meeting a later keyframe, or the end, first means the seek
        went past. Empty when ``key`` is not found even from the start.
        """
        keys = self.keyframe_pts if self.keyframe_pts is not None else np.asarray([key], dtype=np.int64)
        i = int(np.searchsorted(keys, key))
        for back in SEEK_BACK_GROUPS:
            if back is None:
                container.seek(0)  # the start of the file
            else:
                container.seek(key if back == 0 else int(keys[max(i - back, 0)]), stream=stream, backward=True, any_frame=False)
            packets = container.demux(stream)
            for packet in packets:
                if not packet.size or packet.pts is None:
                    continue
                if int(packet.pts) == key and packet.is_keyframe:
                    return itertools.chain([packet], packets)
                if packet.is_keyframe and int(packet.pts) > key:
                    break  # a later group's keyframe: the seek landed past it
            # past it, or the data ended without it (landed past the last keyframe): further back
        return iter(())

    def _decode_run(
        self,
        container: Any,
        stream: Any,
        run: set[int],
        remaining: set[int],
        size: tuple[int, int] | None,
        packets: Iterator[Any] | None = None,
    ) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Decode forward from the current position until every pts of ``run`` came out.

        With ``skip_nonref``, the decoder skips non-reference frames whose
        packet (pts) is not wanted: ``skip_frame`` is switched per packet.
        Once every wanted frame before the next keyframe was sent and that
        keyframe's group is closed, the packets up to it are not sent at all.
        Once the packets of every wanted frame are in, the decoder is drained
        rather than fed more packets (its reordering and threads would hold
        the last frames back for a few packets more); the next run's seek
        resets it.
        """
        import av

        codec = stream.codec_context
        skipping = False
        codec.skip_frame = "DEFAULT"
        unsent = set(run)
        pending = sorted(run)  # unsent pts, ascending, struck off lazily
        first = 0
        holding, next_key = False, None
        packets = container.demux(stream) if packets is None else packets  # None: from where the demuxer is
        for packet in packets:
            if packet.size and packet.pts is not None:
                pts = int(packet.pts)
                if packet.is_keyframe:
                    holding, next_key = False, self._next_key(pts)
                elif holding:
                    continue  # the rest of a group before a closed one: nothing wanted needs it
                unsent.discard(pts)
            if self.skip_nonref and packet.size:
                want = packet.pts is None or int(packet.pts) in run
                if want == skipping:
                    codec.skip_frame = "DEFAULT" if want else "NONREF"
                    skipping = not want
            drain = packet.size and not unsent
            try:
                frames = codec.decode(packet if packet.size else None)
                if drain:
                    frames = [*frames, *codec.decode(None)]
            except av.error.FFmpegError as exc:
                raise self._decode_failure(packet, packets, remaining, exc) from exc
            yield from self._wanted(frames, run, remaining, size)
            if not run or drain:
                return
            while first < len(pending) and pending[first] not in unsent:
                first += 1
            if next_key is not None and pending[first] >= next_key:
                holding = True  # everything wanted lies past the next (closed) keyframe

    def _next_key(self, key: int | None) -> int | None:
        """The keyframe after ``key`` (``None``: the first one), when its group is closed; else ``None``."""
        if self.keyframe_pts is None or self.open_keyframe_pts is None:
            return None
        i = 0 if key is None else int(np.searchsorted(self.keyframe_pts, key, side="right"))
        if i >= self.keyframe_pts.size:
            return None
        nxt = int(self.keyframe_pts[i])
        return nxt if self._closed(nxt) else None

    def _decode_failure(self, packet: Any, rest: Iterator[Any], remaining: set[int], exc: Exception) -> VideoError:
        """Corruption when more data follows the packet that failed, truncation when it was the last."""
        import av

        at = f"{float(packet.pts * self.time_base):.3f}s" if packet.pts is not None else "an unknown time"
        try:
            more = any(p.size for p in rest)
        except av.error.FFmpegError:
            more = False
        if more:
            return CorruptVideoError(
                self.path, f"the video data is damaged at {at} (decoding failed: {exc}) and {len(remaining)} wanted frame(s) cannot be decoded"
            )
        return TruncatedVideoError(self.path, f"the last packet (at {at}) does not decode ({exc}); the file is cut short")


#: content hashes by (path, size, mtime): the most recent files a process hashed
_HASH_MEMO: BoundedMemo[tuple[str, int, int], str] = BoundedMemo(4096)


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
    _HASH_MEMO.put(key, digest)
    return digest
