"""Modules named for what they hold, and the old import paths that keep working.

``frameselect.video.decode`` stays the facade of the video modules (no
warning); modules renamed for what they hold leave a shim at the old path that
gives the same objects with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

#: every public name ``frameselect.video.decode`` held before it was split, and the module that holds it now
DECODE_NAMES = {
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


def test_the_decode_facade_gives_every_name_it_had_from_its_new_module_without_a_warning() -> None:
    decode = importlib.import_module("frameselect.video.decode")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode = importlib.reload(decode)
    for name, home in DECODE_NAMES.items():
        assert getattr(decode, name) is getattr(importlib.import_module(f"frameselect.video.{home}"), name), name
    assert set(DECODE_NAMES) == set(decode.__all__)


def test_the_decode_facade_defines_nothing_of_its_own() -> None:
    decode = importlib.import_module("frameselect.video.decode")
    defined = [n for n, v in vars(decode).items() if getattr(v, "__module__", None) == decode.__name__]
    assert defined == []


def test_the_run_counters_live_in_their_own_module_and_the_cache_still_gives_them() -> None:
    from frameselect.cache import RunCounters as from_cache
    from frameselect.counters import RunCounters

    assert from_cache is RunCounters
    counters = RunCounters(frames_decoded=2)
    counters.add(RunCounters(frames_decoded=3, samples_done=1))
    assert counters.as_dict()["frames_decoded"] == 5 and counters.as_dict()["samples_done"] == 1
