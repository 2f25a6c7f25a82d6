"""Every way a live stream can end, over a real HTTP server on 127.0.0.1 and PyAV reading it.

The end of a stream is its end: the server closing the connection (with or
without ``Content-Length``), the stream stalling, its clock restarting, a
Ctrl-C or a ``SIGTERM``. The questions due are answered, what was answered
is kept (returned, and in the ``answers_to`` file), and the result says how
the stream ended. Signals are sent to a real child process, which must end
within two seconds of them.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect._core.video.stream import LiveSource
from frameselect._core.video.synth import write_frames
from frameselect.errors import ConfigError
from frameselect.streaming.drive import iter_stream, run_stream

pytestmark = pytest.mark.slow  # streams served and read in real time

FPS, SECONDS = 10, 3.0
PACKET = 188 * 7
SRC = str(Path(frameselect.__file__).resolve().parents[1])


def _clip(path: Path, seconds: float = SECONDS) -> Path:
    frames = []
    for i in range(int(FPS * seconds)):
        f = np.zeros((48, 64, 3), dtype=np.uint8)
        f[:] = ((i * 37) % 256, (i * 11) % 256, 255 - (i * 23) % 256)
        frames.append(f)
    return write_frames(path, frames, fps=FPS)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _clip(tmp_path_factory.mktemp("ends") / "clip.ts")


class Server:
    """Serves ``data`` over HTTP on 127.0.0.1: spread over ``seconds``, the first ``share`` of it, then closes or stalls."""

    def __init__(self, data: bytes, *, seconds: float = 0.0, share: float = 1.0, length: bool = False, stall: bool = False, silent: bool = False) -> None:
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                if silent:  # accepts, says nothing: the reader is still opening the stream
                    outer.release.wait(60)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "video/mp2t")
                if length:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                sent = data[: int(len(data) * share)]
                chunks = [sent[i : i + PACKET] for i in range(0, len(sent), PACKET)]
                start = time.monotonic()
                try:
                    for n, chunk in enumerate(chunks):
                        wait = start + seconds * share * n / max(1, len(chunks)) - time.monotonic()
                        if wait > 0:
                            time.sleep(wait)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    if stall:
                        outer.release.wait(60)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/live.ts"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


QUESTIONS = [(0.9, "what is on screen?", 2), (2.0, "what is on screen?", 3), (10.0, "what is on screen?", 2)]


@pytest.mark.parametrize("length", [False, True])
def test_a_stream_the_server_ends_gives_every_answer(clip: Path, tmp_path: Path, length: bool) -> None:
    out = tmp_path / "answers.jsonl"
    with Server(clip.read_bytes(), length=length) as server:
        source = LiveSource(server.url, timeout=5)
        answers = run_stream(source, "sliding_window", "color_histogram", QUESTIONS, answers_to=out)
    assert [a.asked_at for a in answers] == [0.9, 2.0, 10.0]
    assert answers.frames == 30 and answers.interrupted is None and answers.unanswered == []
    assert answers.ended == source.ended and "after 30 decoded frames" in answers.ended and "ended" in answers.ended
    assert max(answers[1].selection.timestamps) <= 2.0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line.get("asked_at") for line in lines[:3]] == [0.9, 2.0, 10.0]
    assert lines[1]["indices"] == list(answers[1].selection.indices) and lines[-1]["ended"] == answers.ended


def test_a_stream_cut_short_keeps_the_answers_due_and_says_so(clip: Path) -> None:
    with Server(clip.read_bytes(), share=0.5) as server:
        answers = run_stream(LiveSource(server.url, timeout=5), "sliding_window", "color_histogram", QUESTIONS)
    assert [a.asked_at for a in answers] == [0.9, 2.0, 10.0]  # those after the end: from the memory at the end
    assert 5 <= answers.frames < 30 and "connection closed" in answers.ended
    assert max(answers[2].selection.timestamps) < 2.0


def test_a_stream_that_stalls_ends_after_its_timeout_with_the_answers_due(clip: Path) -> None:
    with Server(clip.read_bytes(), share=0.8, stall=True) as server:
        start = time.monotonic()
        answers = run_stream(LiveSource(server.url, timeout=1.5), "sliding_window", "color_histogram", QUESTIONS)
        took = time.monotonic() - start
    assert [a.asked_at for a in answers] == [0.9, 2.0, 10.0] and answers.interrupted is None
    assert "no data for 1.5 s" in answers.ended and took < 10
    assert 10 < answers.frames < 30


def test_a_stream_whose_clock_restarts_keeps_every_frame_in_order(tmp_path: Path) -> None:
    segment = _clip(tmp_path / "seg.ts").read_bytes()
    with Server(segment + segment) as server:
        source = LiveSource(server.url, timeout=5)
        frames = list(source)
    times = [f.time for f in frames]
    assert len(frames) == 60 and all(b > a for a, b in zip(times, times[1:], strict=False))
    assert times[30] - times[29] == pytest.approx(0.1, abs=1e-6) and times[-1] == pytest.approx(5.9, abs=1e-6)
    assert "restarted 1 time" in (source.ended or "")
    np.testing.assert_array_equal(frames[0].image, frames[30].image)  # the second segment's first frame, not dropped


def test_names_of_parts_and_bad_questions(clip: Path) -> None:
    frames = [(np.full((8, 8, 3), 10 * i, np.uint8), 0.5 * i) for i in range(6)]
    by_name = run_stream(frames, "sliding_window", "color_histogram", [(1.2, "q", 2)])
    assert [a.selection.indices for a in by_name] == [(0, 2)]
    with pytest.raises(ConfigError, match="no_such_encoder"):
        run_stream(frames, "sliding_window", "no_such_encoder", [(1.0, "q", 2)])
    with pytest.raises(ConfigError, match="question 0: its time"):
        run_stream(frames, "sliding_window", "color_histogram", [(float("nan"), "q", 2)])
    with pytest.raises(ConfigError, match="question 0: k"):
        iter_stream(frames, "sliding_window", "color_histogram", [(1.0, "q", 0)])


def test_answers_come_while_the_stream_plays(clip: Path) -> None:
    given: list[tuple[float, float]] = []
    with Server(clip.read_bytes(), seconds=SECONDS, length=True) as server:
        start = time.monotonic()
        for answer in iter_stream(LiveSource(server.url, fps=2, timeout=5), "sliding_window", "color_histogram", QUESTIONS):
            given.append((answer.asked_at, time.monotonic() - start))
    assert [t for t, _ in given] == [0.9, 2.0, 10.0]
    assert given[0][1] < SECONDS - 0.8  # the question at 0.9 s was answered long before the 3-s stream ended
    assert given[1][1] < given[2][1]


CHILD = """
import sys
from frameselect.streaming.drive import run_stream
from frameselect._core.video.stream import LiveSource
print("reading", flush=True)
answers = run_stream(LiveSource(sys.argv[1], fps=2, timeout=30), "sliding_window", "color_histogram",
                     [(0.5, "q", 2), (100.0, "q", 2)], answers_to=sys.argv[2],
                     on_answer=lambda a: print("answer", a.asked_at, flush=True))
print("ended:", answers.ended, "|", answers.interrupted, "|", len(answers), flush=True)
"""


def _child(url: str, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-c", CHILD, url, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(proc: subprocess.Popen[str], prefix: str, seen: list[str]) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.strip())
        if line.startswith(prefix):
            return
    raise AssertionError(f"no {prefix!r} line from the child: {seen}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_stalled_stream_ends_it_at_once_with_the_answer_kept(clip: Path, tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "answers.jsonl"
    with Server(clip.read_bytes(), seconds=SECONDS, share=0.8, stall=True) as server:  # 2.4 s of stream, then nothing
        proc = _child(server.url, out)
        seen: list[str] = []
        _wait_for(proc, "answer 0.5", seen)
        time.sleep(1.5)  # the stream has stalled by now
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert took < 2.0, (took, stdout, stderr)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    assert f"| {sig.name} | 1" in stdout and f"interrupted by {sig.name}" in stdout
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["asked_at"] == 0.5 and lines[0]["indices"] and lines[-1]["interrupted"] == sig.name and lines[-1]["unanswered"] == 1


@pytest.mark.parametrize("after", [0.1, 0.3, 0.6, 1.5])
def test_a_ctrl_c_while_the_stream_opens_ends_at_once(tmp_path: Path, after: float) -> None:
    # At several moments of the open: a reader thread left inside FFmpeg at exit once crashed
    # the process (SIGSEGV, about 1 run in 25) while PyAV's timeout callback took the GIL.
    out = tmp_path / "answers.jsonl"
    with Server(b"", silent=True) as server:
        proc = _child(server.url, out)
        _wait_for(proc, "reading", [])
        time.sleep(after)  # inside the open, which would wait 30 s
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=40)
        took = time.monotonic() - sent
    assert took < 2.0, (took, stdout, stderr)
    assert proc.returncode == 0 and "Traceback" not in stderr and "Immediate exit" not in stdout + stderr, stderr
    assert "| SIGINT | 0" in stdout
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[-1])["interrupted"] == "SIGINT"


def _listening(port: int) -> bool:
    """Whether a socket listens on 127.0.0.1:``port`` (read from /proc: a probe connection would take the server's one client)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if int(local.rsplit(":", 1)[1], 16) == port and state == "0A":
                return True
    return False


@pytest.mark.skipif(
    shutil.which("ffmpeg") is None or not Path("/proc/net/tcp").exists(), reason="needs the ffmpeg command line (scripts/setup.sh installs it) and Linux"
)
def test_the_docs_example_from_an_ffmpeg_server_to_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "streaming.md").read_text(encoding="utf-8")
    section = docs.split("### From an FFmpeg server to answers", 1)[1]
    command = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1).strip()  # type: ignore[union-attr]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)  # type: ignore[union-attr]
    clip = write_frames(tmp_path / "clip.mp4", [np.full((48, 64, 3), (25 * i) % 256, np.uint8) for i in range(30)], fps=FPS)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = shlex.split(command.replace("clip.mp4", str(clip)).replace("8090", str(port)))
    server = subprocess.Popen([*argv[:1], "-loglevel", "error", "-nostdin", *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _listening(port) and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.05)
        assert _listening(port), server.stderr.read() if server.stderr else ""
        monkeypatch.chdir(tmp_path)
        exec(compile(code.replace("8090", str(port)), "docs/streaming.md", "exec"), {})
    finally:
        server.wait(timeout=30)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["1.0 s: frames at [0.0, 1.0] s", "2.5 s: frames at [0.0, 1.5, 2.5] s"]
    assert "ended" in printed[2] and "after 30 decoded frames" in printed[2]
    lines = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line.get("asked_at") for line in lines] == [1.0, 2.5, None] and lines[-1]["frames"] == 6
    assert max(lines[0]["timestamps"]) <= 1.0 and len(lines[1]["timestamps"]) == 3
