"""The exact pool stays exact while it skips: same frames with and without skipping, as a full decode gives them."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from frameselect.video import candidates, decode_counter, probe
from frameselect.video.decode import VideoFrameSource
from frameselect.video.synth import write_frames


def _moving(n: int, seed: int) -> Iterator[np.ndarray]:
    """Noise that slides and a counter patch: every frame differs, motion makes B-frames worth it."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    for i in range(n):
        frame = np.roll(base, 3 * i, axis=1)
        frame[:8, :8] = (5 * i) % 256
        yield frame


def _packets(path: Path) -> list[tuple[int, bool]]:
    import av

    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        return [(int(p.pts), bool(p.is_keyframe)) for p in c.demux(stream) if p.size]


def _leading_pictures(path: Path) -> int:
    """Frames decoded after a keyframe but shown before it (the mark of an open GOP)."""
    count, last_key = 0, None
    for pts, key in _packets(path):
        if key:
            last_key = pts
        elif last_key is not None and pts < last_key:
            count += 1
    return count


def _b_frames(path: Path) -> int:
    import av

    with av.open(str(path)) as c:
        return sum(1 for f in c.decode(video=0) if f.pict_type == av.video.frame.PictureType.B)


def _by_index(path: Path) -> dict[int, np.ndarray]:
    """Every frame by one plain decoding pass, no seek, no skipping: the reference."""
    import av

    with av.open(str(path)) as c:
        return {int(f.pts): f.to_ndarray(format="rgb24") for f in c.decode(video=0)}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exact")
    out = {
        "bframes": write_frames(root / "b.mp4", _moving(90, 1), fps=25, gop=25, options={"x264-params": "bframes=3:b-adapt=0:b-pyramid=normal:scenecut=0"}),
        "open_gop": write_frames(
            root / "open.mp4", _moving(90, 2), fps=25, gop=20, options={"x264-params": "open-gop=1:bframes=3:b-adapt=0:b-pyramid=normal:scenecut=0"}
        ),
    }
    # variable frame rate: irregular gaps between frames (ms)
    gaps = np.random.default_rng(3).integers(15, 160, 80)
    pts = np.concatenate([[0], np.cumsum(gaps)]).tolist()
    out["vfr"] = write_frames(
        root / "vfr.mp4", _moving(len(pts), 3), fps=25, pts=pts, time_base=Fraction(1, 1000), gop=15, options={"x264-params": "bframes=2:b-adapt=0"}
    )
    return out


def test_the_files_have_what_they_claim(files: dict[str, Path]) -> None:
    assert _b_frames(files["bframes"]) > 10
    assert _leading_pictures(files["open_gop"]) >= 3
    assert _b_frames(files["open_gop"]) > 10
    assert _b_frames(files["vfr"]) > 10
    gaps = np.diff(probe(files["vfr"]).timestamps)
    assert gaps.max() > 3 * gaps.min()


def _source(pool, *, skip: bool) -> VideoFrameSource:  # type: ignore[no-untyped-def]
    src = pool.source
    return VideoFrameSource(
        src.path,
        src.pool_pts,
        src.time_base,
        rotation=src.rotation,
        keyframe_pts=src.keyframe_pts if skip else None,
        skip_nonref=skip,
    )


@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
@pytest.mark.parametrize("policy", ["fps=1", "fps=7", "uniform=5", "all"])
def test_same_frames_with_and_without_skipping(files: dict[str, Path], name: str, policy: str) -> None:
    path = files[name]
    pool = candidates(path, policy)
    reference = _by_index(path)
    every = list(range(len(pool)))
    before = decode_counter.frames_decoded
    skipped = dict(_source(pool, skip=True).iter(every))
    with_skip = decode_counter.frames_decoded - before
    before = decode_counter.frames_decoded
    plain = dict(_source(pool, skip=False).iter(every))
    without_skip = decode_counter.frames_decoded - before
    assert sorted(skipped) == sorted(plain) == every
    for i in every:
        pts = int(pool.source.pool_pts[i])  # type: ignore[union-attr]
        np.testing.assert_array_equal(skipped[i], reference[pts], err_msg=f"{name} {policy}: pool frame {i} (pts {pts}) differs with skipping")
        np.testing.assert_array_equal(plain[i], reference[pts])
    if policy != "all":
        assert with_skip < without_skip  # skipping really skipped something


@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
def test_scattered_requests_including_leading_pictures(files: dict[str, Path], name: str) -> None:
    """Any subset of frames, also those decoded after a keyframe but shown before it."""
    path = files[name]
    pool = candidates(path, "all")
    reference = _by_index(path)
    pts_of = {int(p): i for i, p in enumerate(pool.source.pool_pts)}  # type: ignore[union-attr]
    packets = _packets(path)
    leading = []
    last_key = None
    for pts, key in packets:
        if key:
            last_key = pts
        elif last_key is not None and pts < last_key:
            leading.append(pts_of[pts])
    rng = np.random.default_rng(11)
    for trial in range(4):
        wanted = sorted(set(rng.choice(len(pool), size=6, replace=False).tolist()) | set(leading[trial : trial + 2]))
        got = dict(_source(pool, skip=True).iter(wanted))
        assert sorted(got) == wanted
        for i in wanted:
            np.testing.assert_array_equal(got[i], reference[int(pool.source.pool_pts[i])])  # type: ignore[union-attr]


def test_sparse_pools_skip_whole_groups_of_pictures(files: dict[str, Path]) -> None:
    path = files["bframes"]  # 90 frames, a keyframe every 25
    pool = candidates(path, "all")
    before = decode_counter.frames_decoded
    got = dict(pool.source.iter([2, 80]))  # type: ignore[union-attr]
    decoded = decode_counter.frames_decoded - before
    reference = _by_index(path)
    for i, frame in got.items():
        np.testing.assert_array_equal(frame, reference[int(pool.source.pool_pts[i])])  # type: ignore[union-attr]
    assert decoded < 25  # the two middle groups (frames 25-74) never reach the decoder
