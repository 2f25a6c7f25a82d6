"""Video decoding: candidate pools and lazy frame sources (PyAV)."""

from frameselect.video.decode import (
    DecodeCounter,
    FrameMemo,
    PoolPolicy,
    VideoFrameSource,
    VideoInfo,
    candidates,
    content_hash,
    parse_policy,
    probe,
    select_pool,
    select_pool_indices,
    time_error_summary,
    time_errors,
)

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
