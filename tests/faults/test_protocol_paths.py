"""A video named in an annotation is the local file of that name, never an FFmpeg protocol or playlist.

FFmpeg reads text before a colon as a protocol (``concat:a|b``,
``subfile,,start,0,end,0,,:a.mp4``, ``file:a.mp4``), and some demuxers open
files named inside the file they read (an HLS playlist, an ``ffconcat``
list). An annotation file inside a dataset folder must not reach a video
outside it either way: the name is opened as that one local file, and a file
that would refer further is refused. Real files, real decoder.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video.container import open_container, open_local
from frameselect._core.video.synth import write_frames
from frameselect.errors import NotAVideoError, VideoNotFoundError


def _video(path: Path, shade: int = 200) -> Path:
    return write_frames(path, [np.full((32, 32, 3), shade, np.uint8) for _ in range(10)], fps=10)


@pytest.fixture()
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/ds`` (the dataset, the working folder) with a video inside, ``tmp/outside/secret.mp4`` beside it."""
    ds = tmp_path / "ds"
    _video(ds / "inside.mp4", 30)
    _video(tmp_path / "outside" / "secret.mp4", 220)
    monkeypatch.chdir(ds)
    return ds


@pytest.mark.parametrize(
    "name",
    [
        "concat:../ds/../outside/secret.mp4",
        "concat:inside.mp4|../outside/secret.mp4",
        "subfile,,start,0,end,0,,:../outside/secret.mp4",
        "file:../outside/secret.mp4",
    ],
)
def test_a_protocol_name_is_a_file_name(layout: Path, name: str) -> None:
    with pytest.raises(VideoNotFoundError):
        open_container(name)  # no file of that name: FFmpeg is not asked to read the protocol
    # with a stand-in of that name inside the folder (text, as the 25-byte file), that file is what is opened
    stand_in = layout / name
    stand_in.parent.mkdir(parents=True, exist_ok=True)
    stand_in.write_text("not a video, 25 bytes....", encoding="utf-8")
    with pytest.raises(NotAVideoError):
        open_container(name)


def test_a_playlist_inside_the_folder_cannot_reach_a_file_outside(layout: Path) -> None:
    secret = layout.parent / "outside" / "secret.mp4"
    (layout / "evil.m3u8").write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1,\n{secret}\n#EXT-X-ENDLIST\n", encoding="utf-8")
    (layout / "evil.ffconcat").write_text(f"ffconcat version 1.0\nfile {secret}\n", encoding="utf-8")
    for name in ("evil.m3u8", "evil.ffconcat"):
        with pytest.raises(NotAVideoError):
            open_container(name)


def test_open_local_reads_the_file_and_refuses_writing(layout: Path) -> None:
    with open_local("inside.mp4") as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 10 and abs(int(frames[0].mean()) - 30) < 8
    with pytest.raises(ValueError, match="reading only"):
        open_local("x.mp4", mode="w")


def _mvu(ds: Path, name: str) -> None:
    record = {"QA_index": 0, "task": "Counting", "question": "How many?", "options": ["A. 1", "B. 2"], "ground_truth": "A", "video_paths": ["inside.mp4", name]}
    (ds / "QA_json_file.json").write_text(json.dumps([record]), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["concat:../ds/../outside/secret.mp4", "subfile,,start,0,end,0,,:../outside/secret.mp4"])
def test_run_never_decodes_a_video_outside_the_root(layout: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    # the text of the name, normalised, stays inside the folder: a stand-in of that name sits there
    target = Path(os.path.normpath(layout / name))
    target.parent.mkdir(parents=True, exist_ok=True)
    (layout / name).parent.mkdir(parents=True, exist_ok=True)
    target.write_text("not a video, 25 bytes....", encoding="utf-8")
    _mvu(layout, name)
    store = layout.parent / "s.db"
    code = main(["run", "-d", "mvu_eval", "-D", "root=.", "-s", "uniform", "-k", "4", "--store", str(store), "--cache-dir", str(layout.parent / "cache")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT status, error FROM records").fetchall()
    assert code in (0, 1) and rows, err
    # the sample fails on the stand-in (not a video): it is never 'ok' with frames of the outside video
    assert all(status != "ok" for status, _ in rows), rows
    assert any("not a video" in (error or "") for _, error in rows), rows


def test_a_live_source_opens_a_local_name_as_that_file_only(layout: Path) -> None:
    from frameselect._core.video.stream import LiveSource
    from frameselect.errors import VideoError

    with pytest.raises(VideoError, match="cannot open"):
        list(LiveSource("concat:../outside/secret.mp4", timeout=2))
    assert len(list(LiveSource("inside.mp4", timeout=2))) == 10
    assert len(list(LiveSource(f"file://{layout / 'inside.mp4'}", timeout=2))) == 10


def test_a_live_playlist_cannot_send_the_reader_to_a_local_file(layout: Path) -> None:
    import http.server
    import threading

    from frameselect._core.video.stream import LiveSource
    from frameselect.errors import VideoError

    secret = layout.parent / "outside" / "secret.mp4"
    playlist = f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1,\nfile://{secret}\n#EXT-X-ENDLIST\n".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.apple.mpegurl")
            self.send_header("Content-Length", str(len(playlist)))
            self.end_headers()
            self.wfile.write(playlist)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(VideoError):
            list(LiveSource(f"http://127.0.0.1:{httpd.server_address[1]}/live.m3u8", timeout=3))
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("name", ["concat:../outside/secret.mp4", "file:../outside/secret.mp4", "subfile,,start,0,end,0,,:../outside/secret.mp4"])
def test_the_qwen_drop_in_opens_a_protocol_name_as_a_file_name(layout: Path, tmp_path: Path, name: str) -> None:
    pytest.importorskip("torch")
    from frameselect.integrations.qwen_vl_utils import process_vision_info

    messages = [{"role": "user", "content": [{"type": "video", "video": name}, {"type": "text", "text": "What?"}]}]
    # refused before anything is opened (the drop-in's own check names the element), never read from outside
    with pytest.raises((VideoNotFoundError, ValueError), match="not a file|not found|no such"):
        process_vision_info(messages, selector="uniform", k=2, cache_dir=str(tmp_path / "c"))
    # the file it names inside the folder (a real video here) is what is read
    _video(layout / name, 90)
    _, videos, *_ = process_vision_info(messages, return_video_kwargs=True, selector="uniform", k=2, cache_dir=str(tmp_path / "c2"))
    assert len(videos) == 1 and abs(float(videos[0].float().mean()) - 90) < 12


def test_a_live_address_gets_network_protocols_only(layout: Path) -> None:
    import http.server
    import threading

    from frameselect._core.video.stream import LiveSource
    from frameselect.errors import VideoError

    data = (layout / "inside.mp4").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v.mp4"
    try:
        assert len(list(LiveSource(url, timeout=3))) == 10
        for wrapped in (f"concat:{url}|{url}", f"subfile,,start,0,end,0,,:{url}", f"async:{url}"):
            with pytest.raises(VideoError, match="cannot open"):
                list(LiveSource(wrapped, timeout=3))
        # a caller who wants another protocol names it
        assert len(list(LiveSource(f"concat:{url}|{url}", options={"protocol_whitelist": "concat,http,tcp"}, timeout=3))) == 10
    finally:
        httpd.shutdown()
        httpd.server_close()
