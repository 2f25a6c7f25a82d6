"""Hostile and broken chat-completions servers on 127.0.0.1: nothing leaks, nothing false is cached, nothing hangs.

Each test starts its own small server (bounded loops; every server stops by
itself) and drives ``openai_http`` through ``evaluate`` or ``answer``.
"""

from __future__ import annotations

import logging
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.append(str(Path(__file__).parents[1]))  # for chat_server.py (tests have no __init__.py)
import frameselect  # noqa: E402
from chat_server import ChatServer  # noqa: E402
from frameselect._engine.pipeline import answer_cache_key  # noqa: E402
from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.http import OpenAIHTTPAnswerer  # noqa: E402
from frameselect.datasets.tiny import TinyDataset  # noqa: E402
from frameselect.parts import part_config  # noqa: E402
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection  # noqa: E402

KEY = "sk-test-7f3a9c1d5e"
FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


def _request(sample_id: str = "s") -> AnswerRequest:
    frames = [np.full((6, 8, 3), 60, dtype=np.uint8)]
    pool = CandidatePool(video_id="v", timestamps=np.array([0.0]), frame_indices=np.array([0]), policy="fps=1", source=InMemoryFrames(frames))
    return AnswerRequest(Sample(sample_id, "/nowhere.mp4", Query("What colour?", ("red", "green")), "A"), pool, Selection((0,)))


Reply = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serve(reply: Reply) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A one-route server on 127.0.0.1 whose every POST is answered by ``reply``; yields its base URL and the headers seen."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(dict(self.headers.items()))
            reply(self)

        do_GET = do_POST

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def _cached_answers(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_server_is_not_followed(status: int, tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "runs.sqlite"
    with ChatServer() as other:  # would answer anything: it must never be asked
        target = other.base_url + "/chat/completions"
        with serve(lambda h: _send(h, status, b"", Location=target)) as (url, seen):
            ans = OpenAIHTTPAnswerer(base_url=url, model="m", max_retries=2, **FAST)
            result = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=store, limit=3)
        assert other.n_requests == 0 and other.headers == []  # the key and the frames went nowhere else
    assert len(seen) == 3 and all(h["Authorization"] == f"Bearer {KEY}" for h in seen)  # one try per sample: not retried
    assert [r.status for r in result.records] == ["failed"] * 3
    error = result.records[0].error or ""
    assert f"HTTP {status} from {url}/chat/completions redirects to {target}; redirects are not followed" in error
    assert _cached_answers(store) == 0


@pytest.mark.parametrize(
    ("content_type", "body", "message"),
    [
        ("text/html", b"<html><body>Welcome to nginx!</body></html>", "is not JSON"),
        ("application/json", b'{"status": "ok"}', "has no choices[0].message"),
        ("application/json", b'{"object": "text_completion", "choices": [{"text": "A"}]}', "not a chat.completion"),
        ("application/json", b'{"choices": [{"message": {"role": "user", "content": "A"}}]}', "is not an assistant message"),
    ],
)
def test_a_reply_that_is_not_a_chat_completion_fails_and_is_never_cached(
    content_type: str, body: bytes, message: str, tiny: TinyDataset, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    with serve(lambda h: _send(h, 200, body, content_type)) as (url, seen):
        ans = OpenAIHTTPAnswerer(base_url=url, model="m", max_retries=2, **FAST)
        bad = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=store, limit=2)
    assert len(seen) == 2 and [r.status for r in bad.records] == ["failed", "failed"]
    assert message in (bad.records[0].error or "")
    assert _cached_answers(store) == 0
    # the same run against a real server asks it again (nothing false was cached) and keeps nothing failed
    with ChatServer(lambda n, b, p: {"text": "B"}) as good:
        healthy = OpenAIHTTPAnswerer(base_url=good.base_url, model="m", **FAST)
        again = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=healthy, store=store, limit=2)
        assert good.n_requests == 2 and again.counters.answerer_calls == 2
    assert [r.status for r in again.records] == ["ok", "ok"] and _cached_answers(store) == 2


@contextmanager
def drip_server(head: bytes, max_bytes: int = 30) -> Iterator[str]:
    """Reads a request, sends ``head`` at once, then one byte a second (at most ``max_bytes``) and closes; stops by itself."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    stop = threading.Event()

    def run() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                conn.sendall(head)
                for _ in range(max_bytes):
                    if stop.wait(1.0):
                        break
                    conn.sendall(b"x")
            except OSError:
                pass  # the client gave up

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nX-Slow: ",  # the headers never end
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",  # the body never ends
    ],
    ids=["headers", "body"],
)
@pytest.mark.slow  # waits out a real deadline
def test_a_server_dripping_one_byte_a_second_cannot_hold_a_sample_past_its_deadline(head: bytes) -> None:
    with drip_server(head) as url:
        ans = OpenAIHTTPAnswerer(base_url=url, timeout_s=2.0, max_retries=0, **FAST)
        start = time.monotonic()
        (answer,) = ans.answer([_request()])
        elapsed = time.monotonic() - start
    assert answer.error == f"timeout after 1 tries: no reply from {url}/chat/completions within 2s"
    assert 2.0 <= elapsed < 3.5  # each byte arrives well within any per-read timeout; the deadline ends it


def test_the_key_from_the_environment_never_reaches_the_store_or_the_fingerprint(tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_VLM_KEY", KEY)
    store = tmp_path / "runs.sqlite"
    with ChatServer(lambda n, b, p: {"text": "B"}) as server:
        ans = frameselect.answerers.create("openai_http", base_url=server.base_url, model="m", api_key_env="MY_VLM_KEY", **FAST)
        result = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=store, limit=2)
        assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert not result.failed
    keyless = OpenAIHTTPAnswerer(base_url="http://elsewhere:1/v1", model="m", api_key=None, **FAST)
    assert answer_cache_key(ans, _request()) == answer_cache_key(keyless, _request())  # the key is no part of any fingerprint
    assert KEY not in repr(ans) + ans.id + str(part_config(ans)) + result.run_id
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("runs.sqlite"))
    assert b"sk-test" not in raw and len(raw) > 0  # no table, journal or free page of the store holds it


def test_the_key_never_appears_in_logs(
    tiny: TinyDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log every request at DEBUG
    script = [{"status": 503}, {"text": "B"}]
    with ChatServer(lambda n, b, p: script[min(n, 1)]) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", max_retries=1, **FAST)
        frameselect.evaluate(
            selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=tmp_path / "s.sqlite", limit=1, progress=False
        )
        assert server.n_requests == 2
    assert any(r.name.startswith("httpx") or r.name.startswith("httpcore") for r in caplog.records)  # the transport did log
    out, err = capfd.readouterr()
    assert KEY not in caplog.text + out + err


@pytest.mark.parametrize("status", [401, 500])
def test_the_key_never_appears_in_error_messages(status: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that echoes the Authorization header back in its error body does not get the key into the record."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def echo(handler: BaseHTTPRequestHandler) -> None:
        _send(handler, status, f'{{"error": "bad credentials: {handler.headers["Authorization"]}"}}'.encode())

    with serve(echo) as (url, seen):
        (answer,) = OpenAIHTTPAnswerer(base_url=url, max_retries=1, **FAST).answer([_request()])
    assert seen[0]["Authorization"] == f"Bearer {KEY}"
    assert answer.error is not None and f"HTTP {status} from {url}/chat/completions" in answer.error
    assert "bad credentials: Bearer [redacted]" in answer.error and KEY not in answer.error


def test_an_oversized_message_fails_its_sample_and_the_store_stays_small(tiny: TinyDataset, tmp_path: Path) -> None:
    """6 MB of message content for max_tokens=16 (under the 8 MB reply cap): no answer, a reason, nothing of it stored."""
    store = tmp_path / "runs.sqlite"
    huge = "A" * 6_000_000
    with ChatServer(lambda n, b, p: {"text": huge}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", max_tokens=16, **FAST)
        assert ans.max_answer_chars == 1024  # 64 characters a token, at least 1024
        result = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=store, limit=2)
        assert server.n_requests == 2  # not retried
    assert [r.status for r in result.records] == ["failed", "failed"]
    assert result.records[0].error == (
        f"AnswererError: reply from {server.base_url}/chat/completions has 6000000 characters of message content, "
        "more than max_tokens=16 can give (at most 1024); it is not stored (not retried)"
    )
    assert _cached_answers(store) == 0
    with sqlite3.connect(store) as conn:
        longest = conn.execute("SELECT MAX(LENGTH(COALESCE(answer, '')) + LENGTH(COALESCE(error, ''))) FROM records").fetchone()[0]
    assert longest < 1000
    assert sum(p.stat().st_size for p in tmp_path.glob("runs.sqlite*")) < 1_000_000


def test_a_long_answer_within_max_tokens_is_kept(tiny: TinyDataset, tmp_path: Path) -> None:
    text = "B " + "because " * 120  # 962 characters: within max_tokens=16's 1024
    with ChatServer(lambda n, b, p: {"text": text}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", max_tokens=16, **FAST)
        result = frameselect.evaluate(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=tmp_path / "s.sqlite", limit=1)
    assert [(r.status, r.answer) for r in result.records] == [("ok", text.strip())]
