"""Candidate pools from real files: timestamps, policies, lazy decoding, errors."""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video import DecodeCounter, FrameMemo, candidates, content_hash, parse_policy, probe, select_pool_indices
from frameselect._core.video.synth import write_frames
from frameselect.errors import NoFramesError, NotAVideoError, TruncatedVideoError, VideoNotFoundError


def test_policy_parsing() -> None:
    assert str(parse_policy("fps=1.0")) == "fps=1"
    assert str(parse_policy("FPS = 0.5")) == "fps=0.5"
    assert str(parse_policy("uniform=64")) == "uniform=64"
    assert str(parse_policy("all")) == "all"
    for bad in ("fps=0", "uniform=2.5", "every=3", "fps=-1"):
        with pytest.raises(ValueError):
            parse_policy(bad)


def test_fps_pool_takes_the_frame_on_screen(counter_video: Path) -> None:
    pool = candidates(counter_video, "fps=1.0")
    # 50 frames at 10 fps: targets 0,1,2,3,4 s are frames 0,10,20,30,40
    np.testing.assert_allclose(pool.timestamps, [0, 1, 2, 3, 4])
    assert list(pool.frame_indices) == [0, 10, 20, 30, 40]
    frames = pool.frames([0, 3])
    assert [int(f[0, 0, 0]) for f in frames] == pytest.approx([0, 150], abs=3)


def test_uniform_and_all_policies(counter_video: Path) -> None:
    pool = candidates(counter_video, "uniform=5")
    # segment centres at 0.5, 1.5, ... 4.5 s -> frames 5, 15, 25, 35, 45
    assert list(pool.frame_indices) == [5, 15, 25, 35, 45]
    full = candidates(counter_video, "all")
    assert len(full) == 50
    np.testing.assert_allclose(full.timestamps, np.arange(50) / 10)


def test_variable_frame_rate_timestamps_are_exact(tmp_path: Path) -> None:
    pts = [0, 100, 150, 400, 1000, 1050, 1500, 2300, 2350, 3000]
    frames = [np.full((48, 64, 3), 20 * i, np.uint8) for i in range(len(pts))]
    path = write_frames(tmp_path / "vfr.mp4", frames, fps=10, pts=pts, time_base=Fraction(1, 1000))
    info = probe(path)
    np.testing.assert_allclose(info.timestamps, np.array(pts) / 1000)
    pool = candidates(path, "fps=1")
    # on screen at t = 0, 1, 2, 3 s: the frames shown from 0.0, 1.0, 1.5 and 3.0 s
    np.testing.assert_allclose(pool.timestamps, [0.0, 1.0, 1.5, 3.0])
    values = [int(f[0, 0, 0]) for f in pool.frames(range(len(pool)))]
    assert values == pytest.approx([0, 80, 120, 180], abs=3)


def test_pool_decodes_in_one_pass_and_only_on_demand(counter_video: Path) -> None:
    decode_counter = DecodeCounter()
    before = decode_counter.frames_decoded
    pool = candidates(counter_video, "all", counter=decode_counter)
    built = decode_counter.frames_decoded - before
    assert built <= 1  # the packet pass decodes nothing but the first frame
    start = decode_counter.frames_decoded
    out = dict(pool.source.iter([10, 11, 12]))  # type: ignore[union-attr]
    assert sorted(out) == [10, 11, 12]
    # one seek to the keyframe at frame 10 (gop 10), then forward: 3 frames
    assert decode_counter.frames_decoded - start <= 4


def test_frames_come_back_in_request_order_and_downscaled(counter_video: Path) -> None:
    pool = candidates(counter_video, "all")
    frames = pool.source.get([30, 2, 30], size=(32, 24))  # type: ignore[union-attr]
    assert [f.shape for f in frames] == [(24, 32, 3)] * 3
    assert int(frames[0][0, 0, 0]) == pytest.approx(150, abs=4) and int(frames[1][0, 0, 0]) == pytest.approx(10, abs=4)


def test_select_pool_indices_dedupes_when_rate_exceeds_frames() -> None:
    times = np.array([0.0, 1.0, 2.0])
    from frameselect._core.video import PoolPolicy

    assert list(select_pool_indices(times, 3.0, PoolPolicy("fps", 4.0))) == [0, 1, 2]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoNotFoundError, match="missing.mp4"):
        candidates(tmp_path / "missing.mp4")


def test_not_a_video(tmp_path: Path) -> None:
    p = tmp_path / "notes.mp4"
    p.write_text("this is plain text, not a video\n" * 50)
    with pytest.raises(NotAVideoError, match="notes.mp4"):
        candidates(p)


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.mp4"
    p.write_bytes(b"")
    with pytest.raises(NoFramesError, match="empty.mp4"):
        candidates(p)


def test_truncated_file(tmp_path: Path, counter_video: Path) -> None:
    data = counter_video.read_bytes()
    p = tmp_path / "cut.mp4"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedVideoError, match="cut.mp4"):
        pool = candidates(p, "all")
        pool.frames(range(len(pool)))


def test_zero_decodable_frames(tmp_path: Path, counter_video: Path) -> None:
    # keep the container intact but destroy every byte of coded picture data
    data = bytearray(counter_video.read_bytes())
    i = data.find(b"mdat")
    assert i > 0
    size = int.from_bytes(data[i - 4 : i], "big")
    for j in range(i + 4, i - 4 + size):
        data[j] = 0
    p = tmp_path / "zeroed.mp4"
    p.write_bytes(bytes(data))
    with pytest.raises(NoFramesError, match="zeroed.mp4"):
        candidates(p)


def test_content_hash_follows_bytes_not_names(tmp_path: Path, counter_video: Path) -> None:
    copy = tmp_path / "copy.mp4"
    shutil.copy(counter_video, copy)
    assert content_hash(copy) == content_hash(counter_video)
    other = tmp_path / "other.mp4"
    other.write_bytes(counter_video.read_bytes() + b"\0")
    assert content_hash(other) != content_hash(counter_video)


def test_written_videos_are_byte_identical(tmp_path: Path) -> None:
    from frameselect.datasets.tiny import TinyDataset

    a = [Path(s.video).read_bytes() for s in TinyDataset(tmp_path / "a")]
    b = [Path(s.video).read_bytes() for s in TinyDataset(tmp_path / "b")]
    assert a == b


def test_repeated_requests_for_the_same_frames_decode_once(counter_video: Path) -> None:
    decode_counter, memo = DecodeCounter(), FrameMemo()  # a run's own
    pool = candidates(counter_video, "fps=1.0", counter=decode_counter, memo=memo)
    start = decode_counter.frames_decoded
    first = pool.frames([1, 3])
    after_first = decode_counter.frames_decoded
    other = candidates(counter_video, "fps=1.0", counter=decode_counter, memo=memo)  # another pool of the same file (its probe decodes one frame)
    before_again = decode_counter.frames_decoded
    again = other.frames([3, 1])
    assert after_first > start and decode_counter.frames_decoded == before_again
    np.testing.assert_array_equal(again[0], first[1])
    again[0][:] = 0  # callers get copies
    assert pool.frames([3])[0].max() > 0


def test_a_shared_memo_serves_pools_of_different_policies(counter_video: Path) -> None:
    decode_counter, memo = DecodeCounter(), FrameMemo()
    every = candidates(counter_video, "all", counter=decode_counter, memo=memo)
    per_second = candidates(counter_video, "fps=1.0", counter=decode_counter, memo=memo)
    first = per_second.frames([1])  # frame 10 of the 10 fps video, pool index 1 here ...
    before = decode_counter.frames_decoded
    again = every.frames([10])  # ... and pool index 10 there: the same frame, from the memo
    assert decode_counter.frames_decoded == before
    np.testing.assert_array_equal(again[0], first[0])
    assert int(again[0][0, 0, 0]) == pytest.approx(50, abs=3)  # red channel 5 * 10


def test_memo_never_holds_more_than_its_byte_limit(counter_video: Path) -> None:
    decode_counter, memo = DecodeCounter(), FrameMemo(max_bytes=3 * 48 * 64 * 3)  # room for three full-size frames
    pool = candidates(counter_video, "all", counter=decode_counter, memo=memo)
    pool.frames([0, 1, 2, 3])  # four frames: too large to remember
    before = decode_counter.frames_decoded
    pool.frames([0, 1, 2, 3])
    assert decode_counter.frames_decoded > before
    pool.frames([5, 6])
    before = decode_counter.frames_decoded
    pool.frames([6, 5])  # two frames fit: remembered
    assert decode_counter.frames_decoded == before
    pool.frames([8, 9])  # two more: the oldest set goes, so the byte limit holds
    held = sum(f.nbytes for fs in memo._frames.values() for f in fs.values())
    assert held <= memo.max_bytes and len(memo._frames) == 1


def _expected_pixels(pool, width: int, height: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.stack([f for _, f in pool.source.iter(range(len(pool)), size=(width, height))])


@pytest.mark.parametrize("on_disk", [True, False])
def test_pixel_stacks_are_memory_mapped_not_held(counter_video: Path, tmp_path: Path, on_disk: bool) -> None:
    from frameselect._core.cache import Cache, RunCounters
    from frameselect._engine.pipeline import _Context, build_pool, featurize
    from frameselect.types import Query, Sample, Span

    cache = Cache(tmp_path / "c" if on_disk else None)
    ctx = _Context(cache=cache, counters=RunCounters())
    sample = Sample("c/q", str(counter_video), Query("q"), "A", (Span(0.0, 1.0),))
    pool = build_pool(sample, "all", ctx)
    pixels = featurize(pool, sample, {"pixels"}, None, ctx).pixels
    assert isinstance(pixels, np.memmap) and not pixels.flags.writeable
    np.testing.assert_array_equal(np.asarray(pixels), _expected_pixels(pool, 128, 96))
    misses = ctx.counters.cache_misses
    again = featurize(pool, sample, {"pixels"}, None, ctx).pixels
    assert ctx.counters.cache_misses == misses and ctx.counters.cache_hits >= 1
    np.testing.assert_array_equal(np.asarray(again), np.asarray(pixels))
    if on_disk:
        assert len(list((tmp_path / "c" / "pixels").rglob("*.npy"))) == 1
    else:
        path = pixels.filename
        del pixels, again
        cache._memory.clear()
        import gc

        gc.collect()
        assert path is not None and not Path(path).exists()  # the temporary file goes with the last reference


def test_read_frames_reads_the_file_not_the_map(tmp_path: Path) -> None:
    from frameselect._core.video.pixels import open_stack, read_frames, write_stack

    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, (10, 4, 6, 3), dtype=np.uint8)
    write_stack(tmp_path / "s.npy", data.shape, ((i, data[i]) for i in reversed(range(10))))
    stack = open_stack(tmp_path / "s.npy")
    view = np.asarray(stack)[2:]  # what a selector holds after np.asarray and slicing
    for a, b in [(0, 3), (3, 8), (6, 99), (5, 5)]:
        np.testing.assert_array_equal(read_frames(view, a, b), data[2:][a:b])
    np.testing.assert_array_equal(read_frames(data, 1, 4), data[1:4])  # plain arrays: the slice itself
    with pytest.raises(ValueError, match="never came"):
        write_stack(tmp_path / "t.npy", data.shape, ((i, data[i]) for i in range(9)))
    assert not (tmp_path / "t.npy").exists()


def test_probe_round_trips_through_the_cache(tmp_path: Path) -> None:
    from frameselect._core.cache import Cache

    frames = [np.full((32, 64, 3), 8 * i, np.uint8) for i in range(30)]
    path = write_frames(tmp_path / "r.mp4", frames, fps=10, gop=10, rotation=90)
    info = probe(path)
    cache = Cache(tmp_path / "c")
    cache.save_probe("h", info)
    back = cache.load_probe("h")
    assert back is not None
    assert (back.rotation, back.width, back.height) == (90, 32, 64)
    assert back.declared_duration == pytest.approx(info.declared_duration)
    np.testing.assert_array_equal(back.decode_cost, info.decode_cost)  # type: ignore[arg-type]
    assert list(back.keyframe_pts) == list(info.keyframe_pts)  # type: ignore[arg-type]
    assert back.open_keyframe_pts is not None and info.open_keyframe_pts is not None
    assert list(back.open_keyframe_pts) == list(info.open_keyframe_pts) == []  # x264 closes its groups by default
    # an entry written before rotation and keyframes were recorded is a miss (probed again)
    meta = next((tmp_path / "c" / "probe").rglob("h.json"))
    meta.write_text(meta.read_text().replace('"version": 2', '"version": 1'))
    assert cache.load_probe("h") is None


def test_approximate_pools_run_through_evaluate(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import frameselect

    result = frameselect.evaluate(selector="uniform", dataset=tiny, k=2, pool="fps=1,approx", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    assert not result.failed and len(result.records) == len(tiny)
    assert {r.policy for r in result.records} == {"fps=1,approx"}


def test_read_frames_survives_the_cache_file_going_away(tmp_path: Path) -> None:
    from frameselect._core.video.pixels import open_stack, read_frames, write_stack

    data = np.arange(6 * 2 * 2 * 3, dtype=np.uint8).reshape(6, 2, 2, 3)
    write_stack(tmp_path / "s.npy", data.shape, enumerate(data))
    stack = open_stack(tmp_path / "s.npy")
    (tmp_path / "s.npy").unlink()  # e.g. the cache folder was cleared while a selector runs
    np.testing.assert_array_equal(read_frames(stack, 1, 4), data[1:4])
