"""A video's candidate pool under a pool policy, and the time errors its candidates carry."""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import NDArray

from frameselect._core.video.counter import DecodeCounter
from frameselect._core.video.hashing import content_hash
from frameselect._core.video.memo import FrameMemo
from frameselect._core.video.policy import PoolPolicy, parse_policy, select_pool
from frameselect._core.video.probing import VideoInfo, probe
from frameselect._core.video.source import VideoFrameSource
from frameselect.types import CandidatePool

__all__ = ["candidates", "time_errors", "time_error_summary"]


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
