"""Hostile video files: a cut-short file is named as truncated, damaged data as corrupt; a run goes on."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect._core.video import candidates, probe
from frameselect._core.video.synth import write_frames
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import CorruptVideoError, TruncatedVideoError
from frameselect.types import Query, Sample, Span

N_FRAMES, FPS = 100, 10  # a 10 s video


def _noise_frames(n: int) -> list[np.ndarray]:
    """Incompressible frames, so the bytes are spread evenly over the 10 seconds."""
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(n)]


@pytest.fixture(scope="module")
def faststart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 10 s faststart mp4 (the index, with the full length, comes before the data)."""
    path = tmp_path_factory.mktemp("faults") / "full.mp4"
    write_frames(path, _noise_frames(N_FRAMES), fps=FPS, gop=12, container_options={"movflags": "faststart"})
    data = path.read_bytes()
    assert data.find(b"moov") < data.find(b"mdat"), "the index must come first for this test"
    return path


def _declared_and_readable(message: str) -> tuple[float, float]:
    m = re.search(r"declares ([0-9.]+) s of video but only ([0-9.]+) s can be read", message)
    assert m, message
    return float(m.group(1)), float(m.group(2))


def test_faststart_mp4_cut_at_half_is_truncated(faststart: Path, tmp_path: Path) -> None:
    data = faststart.read_bytes()
    cut = tmp_path / "cut_half.mp4"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedVideoError) as info:
        candidates(cut, "fps=1")
    message = str(info.value)
    assert str(cut) in message
    declared, readable = _declared_and_readable(message)
    assert declared == pytest.approx(10.0, abs=1e-3)
    # the data section is ~all of the file and the frames are equal-sized noise: about half remains
    assert 3.5 < readable < 6.0


def test_shortfall_within_tolerance_is_accepted(faststart: Path, tmp_path: Path) -> None:
    # dropping the last ~0.5 s of data: shortfall below max(2 %, 1 s) -> a pool, no error
    data = faststart.read_bytes()
    cut = tmp_path / "cut_tail.mp4"
    cut.write_bytes(data[: len(data) - len(data) * 4 // 100])
    info = probe(cut)
    assert info.declared_duration == pytest.approx(10.0, abs=1e-3)
    assert 9.0 <= info.duration < 10.0
    pool = candidates(cut, "fps=1", info=info)
    assert len(pool) == 10


def test_full_file_is_not_truncated(faststart: Path) -> None:
    info = probe(faststart)
    assert info.duration == pytest.approx(10.0, abs=1e-6) and info.declared_duration == pytest.approx(10.0, abs=1e-3)


@pytest.mark.parametrize("decoders", [1, 2, 3])
def test_damage_in_the_middle_is_corruption_not_truncation(faststart: Path, tmp_path: Path, decoders: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same error with one decoder or several side by side, and every frame before the damage first."""
    from frameselect._core.video.source import VideoFrameSource

    monkeypatch.setattr(VideoFrameSource, "parallel_decoders", decoders)
    data = bytearray(faststart.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 3000] = bytes(np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8))
    bad = tmp_path / "damaged.mp4"
    bad.write_bytes(bytes(data))
    pool = candidates(bad, "all")  # the index is intact: the packet pass sees every frame
    assert len(pool) == N_FRAMES
    got: list[int] = []
    with pytest.raises(CorruptVideoError) as info:
        for i, _ in pool.source.iter(range(len(pool))):  # type: ignore[union-attr]
            got.append(i)
    assert not isinstance(info.value, TruncatedVideoError)
    assert got == list(range(len(got))) and 20 < len(got) < 80  # in order, up to the damage
    message = str(info.value)
    assert str(bad) in message and "damaged at" in message
    t = float(re.search(r"damaged at ([0-9.]+)s", message).group(1))  # type: ignore[union-attr]
    assert 2.0 < t < 8.0  # the damaged bytes sit in the middle of the 10 s


def test_a_run_records_truncation_and_corruption_per_sample_and_goes_on(tiny, faststart: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = faststart.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    damaged = bytearray(data)
    damaged[len(data) // 2 : len(data) // 2 + 3000] = b"\x00" * 3000
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(damaged))
    extra = [
        Sample("cut/q", str(cut), Query("what happens at the end?"), "A", (Span(8.0, 9.0),)),
        Sample("bad/q", str(bad), Query("what?"), "A", (Span(4.0, 6.0),)),
    ]
    store = tmp_path / "s.sqlite"
    # a pixel-based selector decodes every pool frame, so damage anywhere is seen
    result = frameselect.evaluate(selector="scenedetect_content", dataset=InMemoryDataset(list(tiny) + extra), k=2, store=store, cache_dir=tmp_path / "c")
    failed = {r.sample_id: r.error or "" for r in result.failed}
    assert set(failed) == {"cut/q", "bad/q"}
    assert failed["cut/q"].startswith("TruncatedVideoError") and "declares 10.000 s" in failed["cut/q"]
    assert failed["bad/q"].startswith("CorruptVideoError") and "bad.mp4" in failed["bad/q"]
    assert sum(r.status == "ok" for r in result.records) == len(tiny)
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == len(tiny) + 2


def test_a_longer_audio_track_is_not_taken_for_missing_video(tmp_path: Path) -> None:
    """Matroska declares no per-stream duration; the container's covers the 3 s of audio, the video is 1 s."""
    import av

    path = tmp_path / "av.mkv"
    with av.open(str(path), "w") as c:
        v = c.add_stream("libx264", rate=10)
        v.width, v.height, v.pix_fmt = 64, 48, "yuv420p"
        a = c.add_stream("aac", rate=16000)
        for i in range(10):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 20 * i, np.uint8), format="rgb24")
            frame.pts = i
            for p in v.encode(frame):
                c.mux(p)
        for p in v.encode():
            c.mux(p)
        samples = np.zeros((1, 1024), np.float32)
        for j in range(48):  # ~3 s of silence
            af = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono")
            af.sample_rate, af.pts = 16000, j * 1024
            for p in a.encode(af):
                c.mux(p)
        for p in a.encode():
            c.mux(p)
    with av.open(str(path)) as c:
        assert c.duration / 1e6 > 2.5  # the container's duration is the audio's
    info = probe(path)
    assert info.duration == pytest.approx(1.0, abs=0.01)
    assert len(candidates(path, "fps=1", info=info)) == 1
