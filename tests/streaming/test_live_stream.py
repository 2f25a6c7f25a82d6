"""Selecting from a real stream while it plays: MPEG-TS served over HTTP on the loopback address, in real time.

A server thread sends a generated clip's MPEG-TS bytes at the pace the clip
plays; :class:`~frameselect._core.video.stream.LiveSource` reads it with PyAV as it
arrives; ``run_stream`` selects from it with a streaming selector over the
``color_histogram`` encoder. The frames, their times and the selections must
equal those of the same clip read as a file.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from frameselect._core.video.pool import candidates
from frameselect._core.video.stream import LiveSource, StreamFrame, replay_file
from frameselect._core.video.synth import write_frames
from frameselect.errors import ConfigError, VideoError
from frameselect.registry import encoders, streaming
from frameselect.streaming.drive import run_stream

pytestmark = pytest.mark.slow  # a stream served and read in real time

FPS, SECONDS = 10, 3.0
PACKET = 188 * 7


def _clip(folder: Path) -> Path:
    """A 3 s, 10 fps MPEG-TS clip whose frames all differ (a bar sweeping over changing colours)."""
    frames = []
    for i in range(int(FPS * SECONDS)):
        f = np.zeros((48, 64, 3), dtype=np.uint8)
        f[:] = ((i * 37) % 256, (i * 11) % 256, 255 - (i * 23) % 256)
        f[:, (2 * i) % 64 :] = (40, 200, 90)
        frames.append(f)
    return write_frames(folder / "clip.ts", frames, fps=FPS)


class _Server:
    """Serves one file over HTTP on 127.0.0.1, its bytes spread evenly over ``seconds``."""

    def __init__(self, path: Path, seconds: float) -> None:
        data = path.read_bytes()
        self.finished = 0.0

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                self.send_response(200)
                self.send_header("Content-Type", "video/mp2t")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                chunks = [data[i : i + PACKET] for i in range(0, len(data), PACKET)]
                start = time.monotonic()
                try:
                    for n, chunk in enumerate(chunks):
                        wait = start + seconds * n / len(chunks) - time.monotonic()
                        if wait > 0:
                            time.sleep(wait)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                outer.finished = time.monotonic()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/clip.ts"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _file_frames(path: Path, policy: str) -> Iterator[tuple[NDArray[np.uint8], float]]:
    pool = candidates(path, policy)
    assert pool.source is not None
    t0 = float(pool.timestamps[0])
    for i, frame in pool.source.iter(range(len(pool))):
        yield frame, float(pool.timestamps[i]) - t0


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _clip(tmp_path_factory.mktemp("live"))


def test_a_live_http_stream_gives_the_files_frames_times_and_selections(clip: Path) -> None:
    questions = [(0.9, "what is on screen?", 2), (2.0, "what is on screen?", 3), (10.0, "what is on screen?", 4)]
    encoder = encoders.create("color_histogram")
    seen: list[StreamFrame] = []

    def live() -> Iterator[StreamFrame]:
        for frame in LiveSource(server.url, fps=2.0, timeout=5.0):
            seen.append(frame)
            yield frame

    with _Server(clip, SECONDS) as server:
        started = time.monotonic()
        answers = run_stream(live(), streaming.create("sliding_window", memory=3), encoder, questions)
    file_frames = list(_file_frames(clip, "fps=2"))
    # the same frames at the same times: within a frame (1/10 s), here exactly, and the same pixels
    assert [round(f.time, 6) for f in seen] == [round(t, 6) for _, t in file_frames]
    assert len(seen) == 6
    for got, (want, _) in zip(seen, file_frames, strict=True):
        assert np.abs(got.image.astype(int) - want.astype(int)).max() <= 1
    # frames were handed out while the stream played, not after it had all arrived
    assert seen[0].arrived < server.finished - 0.5
    assert seen[-1].arrived - started >= SECONDS - 0.8
    # the same selections as the file's frames replayed through the same selector
    offline = run_stream(file_frames, streaming.create("sliding_window", memory=3), encoder, questions)
    assert [a.selection.indices for a in answers] == [a.selection.indices for a in offline]
    for got_answer, want_answer in zip(answers, offline, strict=True):
        assert got_answer.selection.timestamps == pytest.approx(want_answer.selection.timestamps, abs=1e-6)
    # a question at t uses nothing later than t
    assert answers[0].selection.indices == (0, 1) and max(answers[0].selection.timestamps) <= 0.9
    assert answers[1].selection.indices == (2, 3, 4)


def test_a_replayed_file_is_paced_by_its_timestamps(clip: Path) -> None:
    start = time.monotonic()
    frames = list(replay_file(clip, fps=5.0, speed=2.0))
    assert [round(f.time, 6) for f in frames] == [round(t, 6) for _, t in _file_frames(clip, "fps=5")]
    for f in frames:  # never handed out before its time (at twice real time)
        assert f.arrived - start >= f.time / 2.0 - 0.02
    assert frames[-1].arrived - start >= (frames[-1].time) / 2.0


def test_every_frame_without_fps_and_the_streams_own_clock(clip: Path) -> None:
    frames = list(LiveSource(clip))
    pool = candidates(clip, "all")
    assert len(frames) == len(pool) == 30
    assert [f.pts_time for f in frames] == pytest.approx(pool.timestamps.tolist())
    assert frames[0].time == 0.0


def test_a_stream_that_cannot_be_opened_is_a_video_error() -> None:
    with pytest.raises(VideoError, match="cannot open the stream"):
        list(LiveSource("http://127.0.0.1:9/nothing.ts", timeout=1.0))
    with pytest.raises(ValueError, match="fps=0"):
        LiveSource("udp://127.0.0.1:5000", fps=0)


def test_run_stream_refuses_a_setting_before_reading_any_frame() -> None:
    def never() -> Iterator[tuple[NDArray[np.uint8], float]]:
        raise AssertionError("a frame was read")
        yield  # pragma: no cover

    with pytest.raises(ConfigError, match="cannot embed text"):
        run_stream(never(), streaming.create("threshold_keeper"), encoders.create("color_histogram"), [(1.0, "q", 2)], monitoring=True)
    with pytest.raises(ConfigError, match="supports monitoring only"):
        run_stream(never(), streaming.create("threshold_keeper"), encoders.create("color_histogram"), [(1.0, "q", 2)])


def test_run_stream_answers_each_question_from_the_memory_at_its_time() -> None:
    rng = np.random.default_rng(5)
    frames = [(rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8), 0.5 * i) for i in range(20)]
    encoder = encoders.create("color_histogram")
    answers = run_stream(frames, streaming.create("reservoir", memory=4), encoder, [(7.2, "a", 3), (2.0, "b", 2)], seed=9)
    assert [a.asked_at for a in answers] == [2.0, 7.2]
    manual = streaming.create("reservoir", memory=4)
    manual.start(seed=9)
    expected = {}
    for img, t in frames:
        if t > 2.0 and 2.0 not in expected:
            expected[2.0] = manual.select(None, 2, 2.0).indices
        if t > 7.2 and 7.2 not in expected:
            expected[7.2] = manual.select(None, 3, 7.2).indices
        emb = encoder.encode_frames(img[None])[0]
        manual.observe(emb / np.linalg.norm(emb), t)
    assert [a.selection.indices for a in answers] == [expected[2.0], expected[7.2]]
    assert all(t <= a.asked_at for a in answers for t in a.selection.timestamps)
