"""The exact pool stays exact while it skips: same frames with and without skipping, as a full decode gives them."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video import DecodeCounter, candidates, probe
from frameselect._core.video.source import VideoFrameSource
from frameselect._core.video.synth import write_frames

pytestmark = pytest.mark.slow  # whole videos decoded, with and without skipping, frame by frame


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
        open_keyframe_pts=src.open_keyframe_pts if skip else None,
        skip_nonref=skip,
        frame_pts=src.frame_pts,
        counter=DecodeCounter(),
    )


@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
@pytest.mark.parametrize("policy", ["fps=1", "fps=7", "uniform=5", "all"])
def test_same_frames_with_and_without_skipping(files: dict[str, Path], name: str, policy: str) -> None:
    path = files[name]
    pool = candidates(path, policy)
    reference = _by_index(path)
    every = list(range(len(pool)))
    fast, slow = _source(pool, skip=True), _source(pool, skip=False)
    skipped = dict(fast.iter(every))
    with_skip = fast.counter.frames_decoded
    plain = dict(slow.iter(every))
    without_skip = slow.counter.frames_decoded
    assert sorted(skipped) == sorted(plain) == every
    for i in every:
        pts = int(pool.source.pool_pts[i])  # type: ignore[union-attr]
        np.testing.assert_array_equal(skipped[i], reference[pts], err_msg=f"{name} {policy}: pool frame {i} (pts {pts}) differs with skipping")
        np.testing.assert_array_equal(plain[i], reference[pts])
    if policy != "all":
        assert with_skip < without_skip  # skipping really skipped something


@pytest.mark.parametrize("thread_type", ["AUTO", "FRAME", "SLICE", "NONE"])
@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
def test_every_decoder_threading_gives_the_same_frames(files: dict[str, Path], name: str, thread_type: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The threading is chosen per codec by speed (H.264: slice threads); any choice returns the exact frames."""
    path = files[name]
    pool = candidates(path, "fps=7")
    reference = _by_index(path)
    monkeypatch.setattr(VideoFrameSource, "thread_type", thread_type)
    source = _source(pool, skip=True)
    got = dict(source.iter(range(len(pool))))
    assert sorted(got) == list(range(len(pool)))
    for i, rgb in got.items():
        np.testing.assert_array_equal(rgb, reference[int(pool.source.pool_pts[i])], err_msg=f"{name} with {thread_type} threads: pool frame {i}")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("codec", "slices", "cpus", "expected"),
    [
        ("h264", 2, 2, "SLICE"),
        ("h264", 3, 2, "SLICE"),
        ("h264", 4, 4, "SLICE"),
        ("h264", 1, 2, "AUTO"),  # one slice: slice threads would run on one core
        ("h264", None, 2, "AUTO"),  # unknown counts as one
        ("h264", 3, 4, "AUTO"),  # fewer slices than cores: frame threads can use them all
        ("h264", 1, 1, "AUTO"),
        ("hevc", 8, 2, "AUTO"),  # only the codecs measured to gain
        ("vp9", 8, 2, "AUTO"),
    ],
)
def test_slice_threads_only_where_every_core_gets_a_slice(codec: str, slices: int | None, cpus: int, expected: str) -> None:
    from frameselect._core.video.slices import dense_thread_type

    assert dense_thread_type(codec, slices, cpus) == expected


def test_the_core_count_defaults_to_the_usable_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect._core.video import slices

    monkeypatch.setattr(slices, "usable_cpus", lambda: 2)
    assert slices.dense_thread_type("h264", 2) == "SLICE"
    monkeypatch.setattr(slices, "usable_cpus", lambda: 8)
    assert slices.dense_thread_type("h264", 2) == "AUTO"


def test_slices_are_counted_in_length_prefixed_and_start_code_packets() -> None:
    """Hand-made access units: the fewest slices of any picture; other NAL units are not slices."""
    from frameselect._core.video.slices import h264_slices_per_picture as count

    avcc4 = bytes([1, 0x64, 0, 0x1F, 0xFF, 0xE0, 0])  # an avcC record (no SPS or PPS kept): 4-byte lengths
    avcc2 = bytes([1, 0x64, 0, 0x1F, 0xFD, 0xE0, 0])  # 2-byte lengths

    def prefixed(nals: list[bytes], width: int) -> bytes:
        return b"".join(len(n).to_bytes(width, "big") + n for n in nals)

    sei, idr_first, idr_next, p_first, p_next = b"\x06\x05\x00", b"\x65\x88\x80", b"\x65\x40", b"\x41\x9a", b"\x41\x20"
    assert count(prefixed([sei, idr_first, idr_next, idr_next], 4), avcc4) == 3
    assert count(prefixed([idr_first, idr_next], 2), avcc2) == 2
    assert count(prefixed([sei], 4), avcc4) is None
    assert count(prefixed([p_first, p_next, p_first], 4), avcc4) == 1  # two fields: 2 slices, then 1
    annex_b = b"\x00\x00\x00\x01" + sei + b"\x00\x00\x01" + idr_first + b"\x00\x00\x01" + idr_next
    assert count(annex_b) == 2 and count(annex_b, b"") == 2
    assert count(b"") is None


@pytest.fixture(scope="module")
def sliced(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The same frames in files of 1, 2 and 4 slices a picture."""
    root = tmp_path_factory.mktemp("sliced")
    return {n: write_frames(root / f"slices{n}.mp4", _moving(12, 4), fps=25, gop=6, options={"x264-params": f"sliced-threads=0:slices={n}"}) for n in (1, 2, 4)}


def _remux(path: Path, out: Path) -> Path:
    """The same packets in another container (MPEG-TS stores H.264 with start codes)."""
    import av

    with av.open(str(path)) as src, av.open(str(out), mode="w") as dst:
        stream = dst.add_stream_from_template(src.streams.video[0])
        for packet in src.demux(src.streams.video[0]):
            if packet.size:
                packet.stream = stream
                dst.mux(packet)
    return out


def test_slices_per_picture_of_real_files(sliced: dict[int, Path], tmp_path: Path) -> None:
    from frameselect._core.video.slices import picture_slices

    assert {n: picture_slices(p) for n, p in sliced.items()} == {1: 1, 2: 2, 4: 4}
    assert picture_slices(_remux(sliced[4], tmp_path / "four.ts")) == 4  # start codes
    assert picture_slices(_remux(sliced[2], tmp_path / "two.mkv")) == 2  # avcC again
    vp9 = write_frames(tmp_path / "v.webm", _moving(4, 5), fps=25, codec="libvpx-vp9")
    assert picture_slices(vp9) is None


def test_dense_requests_take_the_threading_for_their_codec_and_slices(sliced: dict[int, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """One decoder for a request asks for its file's codec and slice count and applies the answer (a
    setting PyAV refuses shows it is applied); a forced setting wins; every answer gives the exact frames."""
    from frameselect._core.video import source

    asked: list[tuple[str, int | None]] = []
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", 1)

    def refused(codec: str, slices: int | None = None, cpus: int | None = None) -> str:
        asked.append((codec, slices))
        return "NOT-A-SETTING"

    for n, path in sliced.items():
        pool = candidates(path, "all")
        every = list(range(len(pool)))
        monkeypatch.setattr(source, "dense_thread_type", refused)
        with pytest.raises(KeyError, match="NOT-A-SETTING"):
            dict(_source(pool, skip=True).iter(every))
        assert asked[-1] == ("h264", n)
        monkeypatch.setattr(VideoFrameSource, "thread_type", "NONE")
        assert sorted(dict(_source(pool, skip=True).iter(every))) == every
        monkeypatch.undo()
        monkeypatch.setattr(VideoFrameSource, "parallel_decoders", 1)
        reference = _by_index(path)
        got = dict(_source(pool, skip=True).iter(every))
        for i, rgb in got.items():
            np.testing.assert_array_equal(rgb, reference[int(pool.source.pool_pts[i])], err_msg=f"{n} slices: pool frame {i}")  # type: ignore[union-attr]


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


def test_open_keyframes_are_found(files: dict[str, Path]) -> None:
    """The open-GOP file's keyframes after the first are open (leading pictures); the closed files' are not."""
    for name in ("bframes", "vfr"):
        info = probe(files[name])
        assert info.open_keyframe_pts is not None and info.open_keyframe_pts.size == 0
    info = probe(files["open_gop"])
    keys = info.keyframe_pts
    assert keys is not None and info.open_keyframe_pts is not None
    leading_after = {key for key in keys.tolist() if key != keys[0]}
    assert set(info.open_keyframe_pts.tolist()) == leading_after and len(leading_after) >= 3


@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
@pytest.mark.parametrize("policy", ["keyframes", "fps=1,approx"])
def test_keyframe_pools_are_exact(files: dict[str, Path], name: str, policy: str) -> None:
    """Keyframes decoded back to back (closed groups) or by seeks (open ones) are the frames a full decode gives."""
    path = files[name]
    pool = candidates(path, policy)
    reference = _by_index(path)
    got = dict(pool.source.iter(range(len(pool))))  # type: ignore[union-attr]
    assert sorted(got) == list(range(len(pool))) and len(pool) >= 3
    for i, frame in got.items():
        np.testing.assert_array_equal(frame, reference[int(pool.source.pool_pts[i])])  # type: ignore[union-attr]


def test_the_rest_of_a_group_before_a_closed_one_is_not_decoded(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """One decoder decodes on into the next group (no seek) when the rest is short, and skips the rest when the next group is closed."""
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", 1)
    path = files["bframes"]  # 90 frames, a keyframe every 25, closed groups
    pool = candidates(path, "all")
    src = pool.source
    wanted = [19, 44, 69]  # one frame 6 before the end of each group: short rests, which are decoded on unless known closed
    counts = {}
    for closed in (True, False):
        source = VideoFrameSource(
            src.path,  # type: ignore[union-attr]
            src.pool_pts,  # type: ignore[union-attr]
            src.time_base,  # type: ignore[union-attr]
            keyframe_pts=src.keyframe_pts,  # type: ignore[union-attr]
            open_keyframe_pts=src.open_keyframe_pts if closed else None,  # type: ignore[union-attr]
            frame_pts=src.frame_pts,  # type: ignore[union-attr]
        )
        got = dict(source.iter(wanted))
        reference = _by_index(path)
        for i in wanted:
            np.testing.assert_array_equal(got[i], reference[int(src.pool_pts[i])])  # type: ignore[union-attr]
        counts[closed] = source.counter.frames_decoded
    assert counts[True] < counts[False]


def test_sparse_pools_skip_whole_groups_of_pictures(files: dict[str, Path]) -> None:
    path = files["bframes"]  # 90 frames, a keyframe every 25
    counter = DecodeCounter()
    pool = candidates(path, "all", info=probe(path), counter=counter)
    got = dict(pool.source.iter([2, 80]))  # type: ignore[union-attr]
    decoded = counter.frames_decoded
    reference = _by_index(path)
    for i, frame in got.items():
        np.testing.assert_array_equal(frame, reference[int(pool.source.pool_pts[i])])  # type: ignore[union-attr]
    assert decoded < 25  # the two middle groups (frames 25-74) never reach the decoder


# --------------------------------------------------------------------------- approximate pools

APPROX_FPS, APPROX_GOP, APPROX_N = 10, 25, 300  # 30 s, a keyframe every 2.5 s


def _numbered(n: int) -> Iterator[np.ndarray]:
    """Frame i shows i in binary in nine 8-px bars (black / white), readable after compression."""
    for i in range(n):
        frame = np.full((32, 72, 3), 128, np.uint8)
        for bit in range(9):
            frame[:, 8 * bit : 8 * bit + 8] = 255 if (i >> bit) & 1 else 0
        yield frame


def _frame_number(rgb: np.ndarray) -> int:
    return sum(1 << bit for bit in range(9) if rgb[8:24, 8 * bit + 2 : 8 * bit + 6].mean() > 128)


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("approx") / "numbered.mp4"
    # no B-frames, fixed GOP: a frame's decoding cost is its distance from its keyframe, plus one
    return write_frames(path, _numbered(APPROX_N), fps=APPROX_FPS, gop=APPROX_GOP, options={"bf": "0", "x264-params": "scenecut=0"})


def _true_errors(pool, targets: np.ndarray, chosen_for: dict[int, list[float]]) -> list[float]:  # type: ignore[no-untyped-def]
    """Decode every candidate, read its number from the picture: actual time minus the nearest target that chose it."""
    out = []
    for frame in pool.frames(range(len(pool))):
        actual = _frame_number(frame) / APPROX_FPS
        errs = [actual - t for t in chosen_for[_frame_number(frame)]]
        out.append(min(errs, key=abs))
    return out


def test_frame_numbers_read_back(numbered: Path) -> None:
    pool = candidates(numbered, "all")
    assert [_frame_number(f) for f in pool.frames([0, 1, 77, 299])] == [0, 1, 77, 299]


def test_keyframes_pool_is_every_keyframe(numbered: Path) -> None:
    import av

    pool = candidates(numbered, "keyframes")
    with av.open(str(numbered)) as c:
        keys = sorted(int(p.pts) for p in c.demux(video=0) if p.size and p.is_keyframe)
    assert list(pool.source.pool_pts) == keys  # type: ignore[union-attr]
    assert [_frame_number(f) for f in pool.frames(range(len(pool)))] == list(range(0, APPROX_N, APPROX_GOP))
    np.testing.assert_array_equal(pool.source.time_errors, np.zeros(len(pool)))  # type: ignore[union-attr]


def test_approx_pool_takes_the_nearest_keyframe_and_records_true_errors(numbered: Path) -> None:
    pool = candidates(numbered, "fps=1,approx")
    assert pool.policy == "fps=1,approx"
    targets = np.arange(30, dtype=np.float64)
    keys = np.arange(0, APPROX_N, APPROX_GOP)
    # independently: each target's nearest keyframe (ties to the earlier one)
    chosen_for: dict[int, list[float]] = {}
    for t in targets:
        k = int(keys[np.argmin(np.abs(keys / APPROX_FPS - t))])
        chosen_for.setdefault(k, []).append(float(t))
    assert [int(i) for i in pool.frame_indices] == sorted(chosen_for)
    recorded = pool.source.time_errors  # type: ignore[union-attr]
    np.testing.assert_allclose(recorded, _true_errors(pool, targets, chosen_for), atol=1e-9)
    # keyframes at 0, 2.5, 5, ... s: each is the choice of a target at most 0.5 s away
    assert np.abs(recorded).max() == pytest.approx(0.5) and np.abs(recorded).mean() == pytest.approx(0.25)


def test_approx_with_a_tolerance_takes_the_cheapest_frame_near_each_target(numbered: Path) -> None:
    pool = candidates(numbered, "fps=1,approx=0.3")
    # within 0.3 s of target t: a keyframe when one is there (t = 0, 5, 10, ...), else the earliest frame
    # of the window, 3 frames before t (fewest frames to decode from its keyframe, no B-frames here)
    expected = {0 if t == 0 else (10 * t if t % 5 == 0 else 10 * t - 3): float(t) for t in range(30)}
    assert [int(i) for i in pool.frame_indices] == sorted(expected)
    chosen_for = {k: [t] for k, t in expected.items()}
    np.testing.assert_allclose(pool.source.time_errors, _true_errors(pool, np.arange(30.0), chosen_for), atol=1e-9)  # type: ignore[union-attr]


def test_exact_pools_record_their_small_errors(numbered: Path) -> None:
    pool = candidates(numbered, "fps=3")  # targets every 1/3 s, frames every 0.1 s: the frame on screen is up to 1/30 s early
    errors = pool.source.time_errors  # type: ignore[union-attr]
    targets = np.arange(len(pool)) / 3.0
    np.testing.assert_allclose(errors, pool.timestamps - targets, atol=1e-9)
    assert errors.max() <= 1e-9 and errors.min() >= -0.1


def test_approx_decodes_far_less_than_exact(numbered: Path) -> None:
    info = probe(numbered)
    exact_counter, approx_counter = DecodeCounter(), DecodeCounter()
    exact = candidates(numbered, "fps=1", info=info, counter=exact_counter)
    approx = candidates(numbered, "fps=1,approx", info=info, counter=approx_counter)
    list(exact.source.iter(range(len(exact))))  # type: ignore[union-attr]
    exact_cost = exact_counter.frames_decoded
    list(approx.source.iter(range(len(approx))))  # type: ignore[union-attr]
    approx_cost = approx_counter.frames_decoded
    assert approx_cost == len(approx) and exact_cost > 5 * approx_cost


def test_policy_strings() -> None:
    from frameselect._core.video import parse_policy

    assert str(parse_policy("fps=1,approx")) == "fps=1,approx"
    assert str(parse_policy("FPS=0.5, approx=2")) == "fps=0.5,approx=2"
    assert str(parse_policy("keyframes")) == "keyframes"
    for bad in ("uniform=4,approx", "fps=1,approx=-1", "fps=1,aprox"):
        with pytest.raises(ValueError):
            parse_policy(bad)


def test_time_error_summary_for_run_records(numbered: Path) -> None:
    from frameselect._core.video import time_error_summary
    from frameselect.types import CandidatePool

    pool = candidates(numbered, "fps=1,approx")
    errors = np.abs(pool.source.time_errors)  # type: ignore[union-attr]
    assert time_error_summary(pool) == {"pool_time_error_mean": pytest.approx(errors.mean()), "pool_time_error_max": pytest.approx(0.5)}
    assert time_error_summary(CandidatePool.from_timestamps([0.0, 1.0])) == {}


# --------------------------------------------------------------------------- parallel decoders


def _groups(pool) -> int:  # type: ignore[no-untyped-def]
    src = pool.source
    return len(set(np.searchsorted(src.keyframe_pts, src.pool_pts, side="right").tolist()))


@pytest.mark.parametrize("decoders", [1, 2, 3])
@pytest.mark.parametrize("name", ["bframes", "open_gop", "vfr"])
@pytest.mark.parametrize("policy", ["fps=1", "fps=7", "all"])
def test_parallel_decoders_give_the_frames_of_one_pass_in_stream_order(
    files: dict[str, Path], name: str, policy: str, decoders: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = candidates(files[name], policy)
    assert _groups(pool) >= 4  # several groups of pictures to share out
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", decoders)
    rng = np.random.default_rng(len(name) + decoders)
    picks = [list(range(len(pool))), sorted(rng.choice(len(pool), size=max(2, len(pool) // 3), replace=False).tolist())]
    _assert_exact_in_stream_order(pool, files[name], picks, f"{name} {policy}, {decoders} decoders")


def _assert_exact_in_stream_order(pool, path: Path, picks: list[list[int]], label: str) -> None:  # type: ignore[no-untyped-def]
    """Each pick of pool positions comes out once each, in stream order, as one plain decoding pass gives it."""
    reference = _by_index(path)
    for wanted in picks:
        got = list(_source(pool, skip=True).iter(wanted))
        assert [i for i, _ in got] == sorted(set(wanted))
        for i, rgb in got:
            np.testing.assert_array_equal(rgb, reference[int(pool.source.pool_pts[i])], err_msg=f"{label}: pool frame {i}")


def test_parallel_decoders_wait_for_a_slow_consumer_and_stop_when_it_leaves(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for two frames ahead per decoder, a consumer that takes its time still gets every
    frame; one that leaves after three frames leaves no decoder thread behind."""
    import threading
    import time

    from frameselect._core.video import source

    pool = candidates(files["open_gop"], "all")
    reference = _by_index(files["open_gop"])
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", 2)
    monkeypatch.setattr(source, "DECODED_AHEAD_BYTES", 1)  # the queues' floor: 2 frames each
    got = []
    for i, rgb in _source(pool, skip=True).iter(range(len(pool))):
        if i % 10 == 0:
            time.sleep(0.01)
        got.append(i)
        np.testing.assert_array_equal(rgb, reference[int(pool.source.pool_pts[i])])  # type: ignore[union-attr]
    assert got == list(range(len(pool)))
    frames = _source(pool, skip=True).iter(range(len(pool)))
    assert [next(frames)[0] for _ in range(3)] == [0, 1, 2]
    frames.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("frameselect-decode-")]


def test_parallel_decoders_take_the_codecs_threading_on_the_cores_each_gets(sliced: dict[int, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two decoders on 2 CPUs run one thread each; on 8 CPUs, 4 threads each, of the kind the codec and
    its slices call for with 4 cores (so 4 slices a picture: slice threads)."""
    from frameselect._core.video import source

    chosen: list[tuple[str, int]] = []
    real_decoder = VideoFrameSource._decoder

    def spy(self, groups, out, stop, size, thread_type, threads):  # type: ignore[no-untyped-def]
        chosen.append((thread_type, threads))
        return real_decoder(self, groups, out, stop, size, thread_type, threads)

    monkeypatch.setattr(VideoFrameSource, "_decoder", spy)
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", 2)
    pool = candidates(sliced[4], "all")
    for cpus, expected in ((2, ("NONE", 1)), (8, ("SLICE", 4))):
        monkeypatch.setattr(source, "usable_cpus", lambda cpus=cpus: cpus)
        chosen.clear()
        assert [i for i, _ in _source(pool, skip=True).iter(range(len(pool)))] == list(range(len(pool)))
        assert chosen == [expected, expected]
    pool = candidates(sliced[2], "all")
    chosen.clear()
    list(_source(pool, skip=True).iter(range(len(pool))))
    assert chosen == [("AUTO", 4), ("AUTO", 4)]  # 2 slices for 4 cores: frame threads


# --------------------------------------------------------------------------- seeks that land late


@pytest.fixture(scope="module")
def transport(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The B-frame and open-GOP files in MPEG-TS, whose seeks land past the keyframe asked for."""
    root = tmp_path_factory.mktemp("ts")
    return {name: _remux(files[name], root / f"{name}.ts") for name in ("bframes", "open_gop")}


def _landings(path: Path) -> list[tuple[int, int, bool]]:
    """(keyframe pts, pts of the first packet after seeking to it, whether that packet is a keyframe)."""
    import av

    keys = probe(path).keyframe_pts
    assert keys is not None
    out = []
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        for key in keys[1:].tolist():
            c.seek(key, stream=stream, backward=True, any_frame=False)
            first = next(p for p in c.demux(stream) if p.size)
            out.append((key, int(first.pts), bool(first.is_keyframe)))
    return out


def test_mpeg_ts_seeks_land_late(transport: dict[str, Path]) -> None:
    """What the next test guards against: a plain seek to a keyframe of these files does not start at it."""
    for path in transport.values():
        assert any(not (pts == key and is_key) for key, pts, is_key in _landings(path))


@pytest.mark.parametrize("decoders", [1, 2])
@pytest.mark.parametrize("name", ["bframes", "open_gop"])
@pytest.mark.parametrize("policy", ["fps=7", "keyframes", "all"])
def test_late_landing_seeks_still_give_the_exact_frames(
    transport: dict[str, Path], name: str, policy: str, decoders: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = candidates(transport[name], policy)
    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", decoders)
    every = list(range(len(pool)))
    picks = [every, every[1::5], every[len(every) // 2 :: 7]]  # whole pools, and sparse picks that seek
    _assert_exact_in_stream_order(pool, transport[name], picks, f"{name}.ts {policy}, {decoders} decoders")
