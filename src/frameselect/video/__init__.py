"""Video decoding: candidate pools and lazy frame sources (PyAV)."""

from frameselect.video.counter import DecodeCounter
from frameselect.video.hashing import content_hash
from frameselect.video.memo import FrameMemo
from frameselect.video.policy import PoolPolicy, parse_policy, select_pool, select_pool_indices
from frameselect.video.pool import candidates, time_error_summary, time_errors
from frameselect.video.probing import VideoInfo, probe
from frameselect.video.source import VideoFrameSource

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
