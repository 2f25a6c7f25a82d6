"""Modules named for what they hold; the old import paths kept for one release are gone since 0.2.0."""

from __future__ import annotations

import importlib
import sys

import pytest

#: the video modules' public names, each from the module that holds it (``frameselect._core.video.decode`` re-exported them until 0.2.0)
VIDEO_NAMES = {
    "PoolPolicy": "policy",
    "parse_policy": "policy",
    "select_pool": "policy",
    "select_pool_indices": "policy",
    "POLICY_VALUE_MAX": "policy",
    "probe": "probing",
    "VideoInfo": "probing",
    "TRUNCATION_TOLERANCE": "probing",
    "TRUNCATION_SECONDS": "probing",
    "candidates": "pool",
    "time_errors": "pool",
    "time_error_summary": "pool",
    "VideoFrameSource": "source",
    "SEEK_MIN_TAIL": "source",
    "SPARSE_FRAMES_PER_RUN": "source",
    "SEEK_BACK_GROUPS": "source",
    "PARALLEL_DECODERS_MAX": "source",
    "DECODED_AHEAD_BYTES": "source",
    "SLICE_THREADED_CODECS": "slices",
    "dense_thread_type": "slices",
    "h264_slices_per_picture": "slices",
    "SLICE_PROBE_PACKETS": "slices",
    "picture_slices": "slices",
    "DecodeCounter": "counter",
    "FrameMemo": "memo",
    "content_hash": "hashing",
}


def test_the_video_package_gives_its_modules_names() -> None:
    video = importlib.import_module("frameselect._core.video")
    for name, home in VIDEO_NAMES.items():
        holder = importlib.import_module(f"frameselect._core.video.{home}")
        assert name in vars(holder), name
        if name in video.__all__:
            assert getattr(video, name) is getattr(holder, name), name


def test_the_run_counters_live_in_their_own_module_and_the_cache_still_gives_them() -> None:
    from frameselect._core.cache import RunCounters as from_cache
    from frameselect._core.counters import RunCounters

    assert from_cache is RunCounters
    counters = RunCounters(frames_decoded=2)
    counters.add(RunCounters(frames_decoded=3, samples_done=1))
    assert counters.as_dict()["frames_decoded"] == 5 and counters.as_dict()["samples_done"] == 1


#: the old paths removed in 0.2.0, with the module that holds their names
REMOVED = {
    "frameselect.byof": "frameselect.arrays",
    "frameselect.tables": "frameselect._studies.analysis",
    "frameselect.report": "frameselect._core.render",
    "frameselect.routing.report": "frameselect._studies.routing_study",
    "frameselect.learned.report": "frameselect._studies.learned.study",
    "frameselect.selectors.shot": "frameselect.selectors.scenedetect_content",
    "frameselect.selectors.motion": "frameselect.selectors.mgsampler",
    "frameselect._core.video.decode": "frameselect._core.video",
    "frameselect._studies.bench.haystack": "frameselect.datasets._haystack_suite",
    "frameselect._studies.bench.questions": "frameselect.datasets._haystack_questions",
    "frameselect._studies.bench.cross": "frameselect.datasets._cross_suite",
}


@pytest.mark.parametrize(("old", "home"), REMOVED.items(), ids=list(REMOVED))
def test_an_old_module_path_no_longer_imports_and_its_home_does(old: str, home: str) -> None:
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=old.replace(".", r"\.")):
        importlib.import_module(old)
    assert importlib.import_module(home).__name__ == home


def test_revive_lives_only_in_the_registry() -> None:
    from frameselect import parts
    from frameselect.registry import revive

    assert callable(revive)
    with pytest.raises(AttributeError, match="revive"):
        parts.revive  # noqa: B018


def test_no_part_package_declares_deprecated_modules() -> None:
    from frameselect import routing, selectors

    assert not hasattr(selectors, "DEPRECATED_MODULES") and not hasattr(routing, "DEPRECATED_MODULES")
