"""Video decoding: candidate pools and lazy frame sources (PyAV)."""

from frameselect._core.video.counter import DecodeCounter
from frameselect._core.video.hashing import content_hash
from frameselect._core.video.memo import FrameMemo
from frameselect._core.video.policy import PoolPolicy, parse_policy, select_pool, select_pool_indices
from frameselect._core.video.pool import candidates, time_error_summary, time_errors
from frameselect._core.video.probing import VideoInfo, probe
from frameselect._core.video.source import VideoFrameSource

__all__ = [
    "DecodeCounter",
    "FrameMemo",
    "PoolPolicy",
    "VideoFrameSource",
    "VideoInfo",
    "candidates",
    "content_hash",
    "parse_policy",
    "probe",
    "select_pool",
    "select_pool_indices",
    "time_error_summary",
    "time_errors",
]
